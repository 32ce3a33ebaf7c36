//! Comment and reply workflows, shared by the API and the app: where a discussion lives (a
//! space, or one of its change requests), and posting, resolving, editing, reacting and
//! deleting, each in one transaction that keeps the open-comment and reply counters exact.

use std::sync::Arc;

use quire_content::model::Revision;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::db::Tx;
use crate::domain::access::{Role, SpaceCtx};
use crate::domain::change_requests as crs;
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::ids::{new_id, UserId};
use crate::state::AppState;
use crate::store;
use crate::store::change_requests::ChangeRequestRow;
use crate::store::comments::{CommentRow, ReplyRow};
use crate::values::{ChangeRequestStatus, CommentStatus};

/// Where a discussion lives: a space, or one of its change requests.
#[derive(Clone)]
pub struct Thread {
    /// The space and the caller's role in it.
    pub ctx: SpaceCtx,
    /// The change request, for a change request's discussion.
    pub cr: Option<ChangeRequestRow>,
}

impl Thread {
    /// The discussion of the space itself.
    pub fn space(ctx: SpaceCtx) -> Self {
        Self { ctx, cr: None }
    }

    /// The discussion of change request `cr` (id or number) of the space.
    pub async fn change_request(state: &AppState, ctx: SpaceCtx, cr: &str) -> ApiResult<Self> {
        let cr = crs::load(state, &ctx, cr).await?;
        Ok(Self { ctx, cr: Some(cr) })
    }

    /// The change request's id, for a change request's discussion.
    pub fn cr_id(&self) -> Option<&str> {
        self.cr.as_ref().map(|c| c.id.as_str())
    }

    /// The revision comments of this discussion are about now.
    pub async fn revision_id(&self, state: &AppState) -> ApiResult<String> {
        match &self.cr {
            Some(cr) => Ok(cr.revision_id.clone()),
            None => crs::current_revision(state, &self.ctx.space.id).await,
        }
    }

    /// The content comments of this discussion are about now.
    pub async fn current_content(&self, state: &AppState) -> ApiResult<Arc<Revision>> {
        let revision = self.revision_id(state).await?;
        let root = store::revisions::get(&state.db, &self.ctx.space.id, &revision)
            .await?
            .map(|r| r.root)
            .unwrap_or_default();
        content::load_in(state, &self.ctx.space.id, &root).await
    }

    /// Whether the discussion takes new words: the space is not deleted and the change
    /// request not merged.
    pub fn live(&self) -> bool {
        self.ctx.space.deleted_at.is_none()
            && self
                .cr
                .as_ref()
                .is_none_or(|c| c.status != ChangeRequestStatus::Merged)
    }

    fn require_live(&self) -> ApiResult<()> {
        self.ctx.require_live()?;
        if self
            .cr
            .as_ref()
            .is_some_and(|c| c.status == ChangeRequestStatus::Merged)
        {
            return Err(ApiError::conflict(
                "The change request is merged: its discussion is closed.",
            ));
        }
        Ok(())
    }

    /// Whether `user` may edit (author) or delete (author or space admin) what `author`
    /// wrote, and reply (comment role) in this discussion.
    pub fn may(&self, user: &str, author: &str) -> Allowed {
        let live = self.live();
        let mine = user == author;
        Allowed {
            edit: live && mine,
            reply: live && self.ctx.role >= Role::Comment,
            delete: live && (mine || self.ctx.role >= Role::Admin),
        }
    }

    fn check_role(&self) -> ApiResult<()> {
        self.ctx.require(Role::Comment, "comment in this space")
    }

    /// Says what a write to the thread changes that the access cache keeps: the space's
    /// count of open comments, for a thread of the space. Everything else a comment changes
    /// shows in the listings, which the listing version it moves in its transaction guards.
    fn touches(&self, tx: &mut crate::db::Tx) {
        match self.cr_id() {
            None => tx.touches(&[crate::cache::Scope::Comments(&self.ctx.space.id)]),
            Some(_) => tx.touches(&[]),
        };
    }

    async fn comment(&self, state: &AppState, id: &str) -> ApiResult<CommentRow> {
        store::comments::get(&state.db, &self.ctx.space.id, self.cr_id(), id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("Comment `{id}` not found.")))
    }
}

/// What a user may do with a comment or reply.
pub struct Allowed {
    /// Change its words.
    pub edit: bool,
    /// Reply to the comment.
    pub reply: bool,
    /// Delete it.
    pub delete: bool,
}

/// A body as sent: markdown, or the official JSON document.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum BodyIn {
    /// Markdown of the dialect.
    Markdown {
        /// The words.
        markdown: String,
    },
    /// The official JSON document.
    Document {
        /// The words.
        document: quire_content::document::Document,
    },
}

/// Largest comment or reply body, as markdown: comments are conversation, and every listing
/// of the space carries them.
const MAX_BODY_BYTES: usize = 64 * 1024;

impl BodyIn {
    /// The body as the dialect's markdown, refused when empty, too long or nested too deep;
    /// errors name `field`.
    pub fn into_markdown(self, field: &str) -> ApiResult<String> {
        let too_long = || {
            ApiError::bad_request(format!(
                "`{field}` must be at most {} KiB of markdown.",
                MAX_BODY_BYTES / 1024
            ))
        };
        // Content nested deeper than the engine's bound is refused here, where it enters.
        let md = match self {
            BodyIn::Markdown { markdown } => {
                if markdown.len() > MAX_BODY_BYTES {
                    return Err(too_long());
                }
                quire_content::markdown::try_normalize_markdown(&markdown)
            }
            BodyIn::Document { document } => {
                quire_content::markdown::try_document_to_markdown(&document)
            }
        }
        .map_err(|e| ApiError::bad_request(format!("`{field}`: {e}")))?;
        if md.len() > MAX_BODY_BYTES {
            return Err(too_long());
        }
        if md.trim().is_empty() {
            return Err(ApiError::bad_request(format!(
                "`{field}` must not be empty."
            )));
        }
        Ok(md)
    }
}

/// A fingerprint of a page's title and words, kept with a comment on it: when it differs
/// from the current page's, the comment is outdated.
pub fn page_fingerprint(rev: &Revision, page_id: &str) -> Option<String> {
    let page = rev.page(page_id)?;
    let mut h = Sha256::new();
    h.update(page.title.as_bytes());
    h.update([0]);
    h.update(page.markdown().unwrap_or("").as_bytes());
    Some(hex::encode(h.finalize()))
}

/// What a new comment is about, besides its discussion: a page, a node of it, a table cell.
#[derive(Default)]
pub struct Anchor {
    /// The page's id.
    pub page: Option<String>,
    /// The node's id.
    pub node: Option<String>,
    /// The table cell: record and definition.
    pub table_cell: Option<(String, String)>,
}

impl Anchor {
    /// Node, page and table identifiers are short keys; anything else is refused rather
    /// than stored and echoed in every listing.
    fn check(&self) -> ApiResult<()> {
        let (record, definition) = match &self.table_cell {
            Some((r, d)) => (Some(r.as_str()), Some(d.as_str())),
            None => (None, None),
        };
        let fields = [
            ("page", self.page.as_deref()),
            ("node", self.node.as_deref()),
            ("tableCell.record", record),
            ("tableCell.definition", definition),
        ];
        for (field, value) in fields {
            if let Some(v) = value {
                let ok = !v.is_empty()
                    && v.len() <= 128
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                if !ok {
                    return Err(ApiError::bad_request(format!(
                        "`{field}` must be an identifier of 1 to 128 letters, digits, `-` or `_`."
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The row of a new comment by `user` in `thread`, not yet stored.
async fn new_comment(
    state: &AppState,
    thread: &Thread,
    user: &UserId,
    markdown: String,
    anchor: Anchor,
) -> ApiResult<CommentRow> {
    anchor.check()?;
    let revision_id = thread.revision_id(state).await?;
    let (page_title, page_hash) = match &anchor.page {
        Some(page) => {
            let rev = thread.current_content(state).await?;
            let p = rev.page(page).ok_or_else(|| {
                ApiError::bad_request(format!("`page`: no page `{page}` in the current content."))
            })?;
            (Some(p.title.clone()), page_fingerprint(&rev, page))
        }
        None => (None, None),
    };
    let (table_record, table_definition) = anchor.table_cell.unzip();
    Ok(CommentRow {
        id: new_id(),
        space_id: thread.ctx.space.id.clone(),
        change_request_id: thread.cr_id().map(str::to_string),
        posted_by: user.to_string(),
        posted_at: state.now(),
        edited_at: None,
        body: markdown,
        status: CommentStatus::Open,
        resolved_at: None,
        resolved_by: None,
        revision_id,
        page_id: anchor.page,
        page_title,
        page_hash,
        node_id: anchor.node,
        table_record,
        table_definition,
        replies: 0,
    })
}

/// Posts a comment by `user` in `thread` (comment role).
pub async fn post(
    state: &AppState,
    thread: &Thread,
    user: &UserId,
    body: BodyIn,
    anchor: Anchor,
) -> ApiResult<CommentRow> {
    thread.check_role()?;
    thread.require_live()?;
    let markdown = body.into_markdown("body")?;
    let c = new_comment(state, thread, user, markdown, anchor).await?;
    let mut tx = state.db.begin().await?;
    store::comments::insert(&mut tx, &c).await?;
    thread.touches(&mut tx);
    tx.commit().await?;
    Ok(c)
}

/// Posts, inside `tx`, a comment that goes with another write (a review's words).
pub async fn post_in(
    state: &AppState,
    tx: &mut Tx,
    thread: &Thread,
    user: &UserId,
    markdown: String,
) -> ApiResult<CommentRow> {
    let c = new_comment(state, thread, user, markdown, Anchor::default()).await?;
    store::comments::insert(tx, &c).await?;
    Ok(c)
}

/// A change to a comment or reply: resolve or reopen (comments only), new words (author
/// only), reactions added and removed (the caller's own).
#[derive(Default)]
pub struct Change {
    /// Resolve (`true`) or reopen (`false`).
    pub resolved: Option<bool>,
    /// New words.
    pub body: Option<BodyIn>,
    /// Emojis the caller adds.
    pub added_reactions: Vec<String>,
    /// Emojis the caller takes back.
    pub removed_reactions: Vec<String>,
}

/// Most reactions one request may add or remove, and most one user may leave on one
/// comment or reply: a reaction list is read by everyone, so one writer must not be able to
/// grow it without bound.
const MAX_REACTIONS: usize = 20;

fn check_emojis(field: &str, list: &[String]) -> ApiResult<()> {
    if list.len() > MAX_REACTIONS {
        return Err(ApiError::bad_request(format!(
            "`{field}` may hold at most {MAX_REACTIONS} reactions."
        )));
    }
    for (i, e) in list.iter().enumerate() {
        if e.trim().is_empty()
            || e.chars().count() > 50
            || e.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(ApiError::bad_request(format!(
                "`{field}[{i}]` must be an emoji of 1 to 50 characters."
            )));
        }
    }
    Ok(())
}

impl Change {
    fn check(&self) -> ApiResult<()> {
        check_emojis("addedReactions", &self.added_reactions)?;
        check_emojis("removedReactions", &self.removed_reactions)
    }

    /// Applies the caller's reactions on `target` inside `tx`, refusing a total past
    /// [`MAX_REACTIONS`].
    async fn react(&self, tx: &mut Tx, target: &str, user: &UserId, now: i64) -> ApiResult<()> {
        let total = store::comments::react(
            tx,
            target,
            user,
            &self.added_reactions,
            &self.removed_reactions,
            now,
        )
        .await?;
        if total > MAX_REACTIONS as i64 {
            return Err(ApiError::bad_request(format!(
                "`addedReactions`: one user may leave at most {MAX_REACTIONS} reactions on a comment."
            )));
        }
        Ok(())
    }
}

/// Changes comment `id` of `thread` on behalf of `user` (comment role).
pub async fn update(
    state: &AppState,
    thread: &Thread,
    user: &UserId,
    id: &str,
    mut change: Change,
) -> ApiResult<CommentRow> {
    thread.check_role()?;
    thread.require_live()?;
    change.check()?;
    let found = thread.comment(state, id).await?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    let mut c = store::comments::get_tx(&mut tx, &found.id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Comment `{id}` not found.")))?;
    if let Some(b) = change.body.take() {
        if c.posted_by != user.as_str() {
            return Err(ApiError::forbidden("Only the author can edit a comment."));
        }
        c.body = b.into_markdown("body")?;
        c.edited_at = Some(now);
    }
    if let Some(resolved) = change.resolved {
        let was_open = c.status == CommentStatus::Open;
        let counted = c.change_request_id.as_deref();
        if resolved && was_open {
            c.status = CommentStatus::Resolved;
            c.resolved_at = Some(now);
            c.resolved_by = Some(user.to_string());
            store::comments::count(&mut tx, &c.space_id, counted, -1, 0).await?;
        } else if !resolved && !was_open {
            c.status = CommentStatus::Open;
            c.resolved_at = None;
            c.resolved_by = None;
            store::comments::count(&mut tx, &c.space_id, counted, 1, 0).await?;
        }
    }
    store::comments::update(&mut tx, &c).await?;
    change.react(&mut tx, &c.id, user, now).await?;
    thread.touches(&mut tx);
    tx.commit().await?;
    Ok(c)
}

/// Deletes comment `id` of `thread` (its author or a space admin); nothing to do when it is
/// already gone.
pub async fn delete(state: &AppState, thread: &Thread, user: &UserId, id: &str) -> ApiResult<()> {
    thread.require_live()?;
    let mut tx = state.db.begin().await?;
    let Some(c) = store::comments::get_tx(&mut tx, id).await? else {
        return Ok(());
    };
    if c.space_id != thread.ctx.space.id || c.change_request_id.as_deref() != thread.cr_id() {
        return Ok(());
    }
    if c.posted_by != user.as_str() && thread.ctx.role < Role::Admin {
        return Err(ApiError::forbidden(
            "Only the author or a space admin can delete a comment.",
        ));
    }
    if store::comments::delete(&mut tx, &c.id).await? {
        let open = -i64::from(c.status == CommentStatus::Open);
        let cr = c.change_request_id.as_deref();
        store::comments::count(&mut tx, &c.space_id, cr, open, -1).await?;
    }
    thread.touches(&mut tx);
    tx.commit().await?;
    Ok(())
}

/// Reply `reply` to comment `comment` of `thread`, with the comment.
pub async fn load_reply(
    state: &AppState,
    thread: &Thread,
    comment: &str,
    reply: &str,
) -> ApiResult<(CommentRow, ReplyRow)> {
    let c = thread.comment(state, comment).await?;
    let r = store::comments::get_reply(&state.db, &c.id, reply)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Reply `{reply}` not found.")))?;
    Ok((c, r))
}

/// Comment `id` of `thread`.
pub async fn load(state: &AppState, thread: &Thread, id: &str) -> ApiResult<CommentRow> {
    thread.comment(state, id).await
}

/// Posts a reply by `user` to comment `comment` of `thread` (comment role).
pub async fn reply(
    state: &AppState,
    thread: &Thread,
    user: &UserId,
    comment: &str,
    body: BodyIn,
) -> ApiResult<ReplyRow> {
    thread.check_role()?;
    thread.require_live()?;
    let c = thread.comment(state, comment).await?;
    let r = ReplyRow {
        id: new_id(),
        comment_id: c.id.clone(),
        posted_by: user.to_string(),
        posted_at: state.now(),
        edited_at: None,
        body: body.into_markdown("body")?,
    };
    let mut tx = state.db.begin().await?;
    store::comments::insert_reply(&mut tx, &r).await?;
    store::comments::count_replies(&mut tx, &c.id, 1).await?;
    thread.touches(&mut tx);
    tx.commit().await?;
    Ok(r)
}

/// Changes reply `reply` to comment `comment` on behalf of `user` (comment role): new
/// words (author only) and reactions; a reply cannot be resolved.
pub async fn update_reply(
    state: &AppState,
    thread: &Thread,
    user: &UserId,
    (comment, reply): (&str, &str),
    mut change: Change,
) -> ApiResult<ReplyRow> {
    thread.check_role()?;
    thread.require_live()?;
    if change.resolved.is_some() {
        return Err(ApiError::bad_request(
            "`resolved` applies to comments, not replies.",
        ));
    }
    change.check()?;
    let (_, mut r) = load_reply(state, thread, comment, reply).await?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    if let Some(b) = change.body.take() {
        if r.posted_by != user.as_str() {
            return Err(ApiError::forbidden("Only the author can edit a reply."));
        }
        r.body = b.into_markdown("body")?;
        r.edited_at = Some(now);
        store::comments::update_reply(&mut tx, &r).await?;
    }
    change.react(&mut tx, &r.id, user, now).await?;
    thread.touches(&mut tx);
    tx.commit().await?;
    Ok(r)
}

/// Deletes reply `reply` to comment `comment` (its author or a space admin); nothing to do
/// when either is already gone.
pub async fn delete_reply(
    state: &AppState,
    thread: &Thread,
    user: &UserId,
    (comment, reply): (&str, &str),
) -> ApiResult<()> {
    thread.require_live()?;
    let Ok(c) = thread.comment(state, comment).await else {
        return Ok(());
    };
    let Some(r) = store::comments::get_reply(&state.db, &c.id, reply).await? else {
        return Ok(());
    };
    if r.posted_by != user.as_str() && thread.ctx.role < Role::Admin {
        return Err(ApiError::forbidden(
            "Only the author or a space admin can delete a reply.",
        ));
    }
    let mut tx = state.db.begin().await?;
    if store::comments::delete_reply(&mut tx, &c.id, &r.id).await? {
        store::comments::count_replies(&mut tx, &c.id, -1).await?;
    }
    thread.touches(&mut tx);
    tx.commit().await?;
    Ok(())
}
