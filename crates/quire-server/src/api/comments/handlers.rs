//! Comments and replies, on a space (`SPACE/comments`) or on a change request
//! (`CR/comments`): listing with filters, posting, resolving and reopening, editing,
//! reactions, deleting; with exact open-comment and reply counters.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{FromRequestParts, OriginalUri, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Extension;

use crate::http::json::{Json, JsonBytes};
use quire_content::model::Revision;
use serde::Deserialize;
use serde_json::json;

use super::types::{
    Body, Comment, Permissions, Reacted, Reaction, Reply, Target, TargetCell, TargetNode,
    TargetPage, Urls,
};
use sha2::{Digest, Sha256};

use crate::api::views;
use crate::clock::iso;
use crate::domain::access::{Role, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::change_requests as crs;
use crate::domain::content;
use crate::domain::listings;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, PathParams, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::change_requests::ChangeRequestRow;
use crate::store::comments::{CommentFilter, CommentRow, ReactionRow, ReplyRow};
use crate::store::users::UserRow;
use crate::values::{ChangeRequestStatus, CommentStatus};

/// Where comments live: a space, or one of its change requests (with the path's other
/// parameters).
pub struct Scope {
    ctx: SpaceCtx,
    cr: Option<ChangeRequestRow>,
    params: PathParams,
}

impl Scope {
    fn space(ctx: SpaceCtx) -> Self {
        Self {
            ctx,
            cr: None,
            params: PathParams::default(),
        }
    }

    async fn change_request(state: &AppState, ctx: SpaceCtx, cr: &str) -> ApiResult<Self> {
        let cr = crs::load(state, &ctx, cr).await?;
        Ok(Self {
            ctx,
            cr: Some(cr),
            params: PathParams::default(),
        })
    }

    /// A path parameter (`commentId`, `commentReplyId`).
    fn param(&self, name: &str) -> ApiResult<&str> {
        self.params.require(name)
    }

    fn cr_id(&self) -> Option<&str> {
        self.cr.as_ref().map(|c| c.id.as_str())
    }

    /// The revision comments of this scope are about now.
    async fn revision_id(&self, state: &AppState) -> ApiResult<String> {
        match &self.cr {
            Some(cr) => Ok(cr.revision_id.clone()),
            None => crs::current_revision(state, &self.ctx.space.id).await,
        }
    }

    async fn current_content(&self, state: &AppState) -> ApiResult<Arc<Revision>> {
        let revision = self.revision_id(state).await?;
        let root = store::revisions::get(&state.db, &self.ctx.space.id, &revision)
            .await?
            .map(|r| r.root)
            .unwrap_or_default();
        content::load(state, &root).await
    }

    fn location(&self, state: &AppState, comment: &str) -> String {
        match &self.cr {
            Some(cr) => state.url(&format!(
                "/v1/spaces/{}/change-requests/{}/comments/{comment}",
                self.ctx.space.id, cr.id
            )),
            None => state.url(&format!(
                "/v1/spaces/{}/comments/{comment}",
                self.ctx.space.id
            )),
        }
    }

    fn live(&self) -> bool {
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
}

/// A body as sent: markdown, or the official JSON document.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum BodyIn {
    Markdown {
        markdown: String,
    },
    Document {
        document: quire_content::document::Document,
    },
}

/// Largest comment or reply body, as markdown: comments are conversation, and every listing
/// of the space carries them.
const MAX_BODY_BYTES: usize = 64 * 1024;

impl BodyIn {
    fn into_markdown(self, field: &str) -> ApiResult<String> {
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

/// Body format of answers.
#[derive(Deserialize, Clone, Copy, Default, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Markdown,
    Document,
}

fn body_json(markdown: &str, format: Format) -> Body {
    match format {
        Format::Markdown => Body::Markdown(markdown.to_string()),
        Format::Document => Body::Document(json!(quire_content::markdown::markdown_to_document(
            markdown
        ))),
    }
}

fn page_fingerprint(rev: &Revision, page_id: &str) -> Option<String> {
    let page = rev.page(page_id)?;
    let mut h = Sha256::new();
    h.update(page.title.as_bytes());
    h.update([0]);
    h.update(page.markdown().unwrap_or("").as_bytes());
    Some(hex::encode(h.finalize()))
}

fn reactions_json(
    state: &AppState,
    target: &str,
    all: &[ReactionRow],
    users: &HashMap<String, UserRow>,
) -> Vec<Reaction> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_emoji: HashMap<&str, Vec<&ReactionRow>> = HashMap::new();
    for r in all.iter().filter(|r| r.target_id == target) {
        if !by_emoji.contains_key(r.emoji.as_str()) {
            order.push(&r.emoji);
        }
        by_emoji.entry(&r.emoji).or_default().push(r);
    }
    order
        .into_iter()
        .map(|emoji| {
            let rs = &by_emoji[emoji];
            Reaction {
                emoji: emoji.to_string(),
                count: rs.len(),
                users: rs
                    .iter()
                    .map(|r| Reacted {
                        user: user_json(state, users, &r.user_id),
                        reacted_at: iso(r.reacted_at),
                    })
                    .collect(),
            }
        })
        .collect()
}

fn user_json(state: &AppState, users: &HashMap<String, UserRow>, id: &str) -> views::User {
    match users.get(id) {
        Some(u) => views::user_row(state, u),
        None => views::user(state, id, "", "Former member", None),
    }
}

/// Everything needed to render a set of comments and replies.
struct Render<'a> {
    state: &'a AppState,
    scope: &'a Scope,
    caller: &'a Caller,
    format: Format,
    users: HashMap<String, UserRow>,
    reactions: Vec<ReactionRow>,
    current: Option<Arc<Revision>>,
}

impl<'a> Render<'a> {
    async fn new(
        state: &'a AppState,
        scope: &'a Scope,
        caller: &'a Caller,
        format: Format,
        comments: &[&CommentRow],
        replies: &[&ReplyRow],
    ) -> ApiResult<Render<'a>> {
        let mut targets: Vec<&str> = comments.iter().map(|c| c.id.as_str()).collect();
        targets.extend(replies.iter().map(|r| r.id.as_str()));
        let reactions = store::comments::reactions(&state.db, &targets).await?;
        let mut ids: Vec<&str> = comments.iter().map(|c| c.posted_by.as_str()).collect();
        ids.extend(comments.iter().filter_map(|c| c.resolved_by.as_deref()));
        ids.extend(replies.iter().map(|r| r.posted_by.as_str()));
        ids.extend(reactions.iter().map(|r| r.user_id.as_str()));
        let users = crate::domain::access::people(state, &ids).await?;
        let current = if comments.iter().any(|c| c.page_id.is_some()) {
            Some(scope.current_content(state).await?)
        } else {
            None
        };
        Ok(Render {
            state,
            scope,
            caller,
            format,
            users,
            reactions,
            current,
        })
    }

    fn permissions(&self, author: &str) -> Permissions {
        let live = self.scope.live();
        let mine = self.caller.user.id == author;
        Permissions {
            view: true,
            edit: live && mine,
            reply: live && self.scope.ctx.role >= Role::Comment,
            delete: live && (mine || self.scope.ctx.role >= Role::Admin),
        }
    }

    fn target_page(&self, c: &CommentRow, page_id: &str) -> TargetPage {
        let current = self
            .current
            .as_ref()
            .and_then(|rev| rev.page(page_id).map(|p| (rev, p)));
        let stored_title = c
            .page_title
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "Untitled".into());
        match current {
            Some((rev, p)) => TargetPage {
                id: page_id.to_string(),
                title: if p.title.is_empty() {
                    stored_title
                } else {
                    p.title.clone()
                },
                path: rev.path_of(page_id).unwrap_or_default(),
                outdated: page_fingerprint(rev, page_id) != c.page_hash,
                emoji: p.emoji.clone(),
            },
            // The page is gone from the current content: the comment is outdated.
            None => TargetPage {
                id: page_id.to_string(),
                title: stored_title,
                path: String::new(),
                outdated: true,
                emoji: None,
            },
        }
    }

    fn comment(&self, c: &CommentRow) -> Comment {
        let s = self.state;
        let resolved = c.status == CommentStatus::Resolved;
        Comment {
            object: "comment",
            id: c.id.clone(),
            posted_by: user_json(s, &self.users, &c.posted_by),
            posted_at: iso(c.posted_at),
            reactions: reactions_json(s, &c.id, &self.reactions, &self.users),
            replies: c.replies,
            body: body_json(&c.body, self.format),
            target: Target {
                space: c.space_id.clone(),
                revision: c.revision_id.clone(),
                change_request: c.change_request_id.clone(),
                node: c.node_id.clone().map(|id| TargetNode { id }),
                table_cell: match (&c.table_record, &c.table_definition) {
                    (Some(record), Some(definition)) => Some(TargetCell {
                        record: record.clone(),
                        definition: definition.clone(),
                    }),
                    _ => None,
                },
                page: c.page_id.as_deref().map(|p| self.target_page(c, p)),
            },
            urls: Urls {
                location: self.scope.location(s, &c.id),
            },
            permissions: self.permissions(&c.posted_by),
            status: c.status,
            edited_at: c.edited_at.map(iso),
            resolved_at: resolved.then(|| iso(c.resolved_at.unwrap_or(c.posted_at))),
            resolved_by: resolved
                .then(|| user_json(s, &self.users, c.resolved_by.as_deref().unwrap_or(""))),
        }
    }

    fn reply(&self, r: &ReplyRow) -> Reply {
        let s = self.state;
        Reply {
            object: "comment-reply",
            id: r.id.clone(),
            posted_by: user_json(s, &self.users, &r.posted_by),
            posted_at: iso(r.posted_at),
            reactions: reactions_json(s, &r.id, &self.reactions, &self.users),
            body: body_json(&r.body, self.format),
            urls: Urls {
                location: format!("{}/replies/{}", self.scope.location(s, &r.comment_id), r.id),
            },
            permissions: self.permissions(&r.posted_by),
            edited_at: r.edited_at.map(iso),
        }
    }
}

// ---- Implementation shared by both scopes --------------------------------------------

/// Status filter of the listing.
#[derive(Deserialize, Clone, Copy, Default, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StatusFilter {
    #[default]
    All,
    Open,
    Resolved,
}

/// Sort order.
#[derive(Deserialize, Clone, Copy, Default, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    #[default]
    Desc,
}

/// Query of the comment listings.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    #[serde(default)]
    order: Order,
    #[serde(default)]
    status: StatusFilter,
    #[serde(default)]
    format: Format,
    target_page: Option<String>,
    #[serde(default)]
    authors: Vec<String>,
}

/// Query carrying only `format`.
#[derive(Deserialize, Default)]
pub struct FormatQuery {
    #[serde(default)]
    format: Format,
}

async fn list_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    q: ListQuery,
    page: PageRequest,
) -> ApiResult<List<Comment>> {
    let filter = CommentFilter {
        status: match q.status {
            StatusFilter::All => None,
            StatusFilter::Open => Some("open".into()),
            StatusFilter::Resolved => Some("resolved".into()),
        },
        page: q.target_page.filter(|p| !p.is_empty()),
        authors: q.authors.into_iter().filter(|a| !a.is_empty()).collect(),
        ascending: q.order == Order::Asc,
    };
    let scope_key = format!(
        "comments:{}:{}:{:?}",
        scope.ctx.space.id,
        scope.cr_id().unwrap_or("-"),
        q.order
    );
    let after = page.after::<(i64, String)>(&scope_key)?;
    let (rows, count) = store::comments::list(
        &state.db,
        &scope.ctx.space.id,
        scope.cr_id(),
        &filter,
        after,
        page.fetch_limit(),
    )
    .await?;
    let refs: Vec<&CommentRow> = rows.iter().collect();
    let render = Render::new(state, scope, caller, q.format, &refs, &[]).await?;
    let items = rows
        .iter()
        .map(|c| (render.comment(c), (c.posted_at, c.id.clone())))
        .collect();
    page.finish(&scope_key, items, count)
}

/// Body of the post endpoints.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostComment {
    body: BodyIn,
    page: Option<String>,
    node: Option<String>,
    table_cell: Option<TableCell>,
}

/// `TableCellTarget`.
#[derive(Deserialize)]
pub struct TableCell {
    record: String,
    definition: String,
}

/// Node, page and table identifiers are short keys; anything else is refused rather than
/// stored and echoed in every listing.
fn check_target_ids(body: &PostComment) -> ApiResult<()> {
    let fields = [
        ("page", body.page.as_deref()),
        ("node", body.node.as_deref()),
        (
            "tableCell.record",
            body.table_cell.as_ref().map(|t| t.record.as_str()),
        ),
        (
            "tableCell.definition",
            body.table_cell.as_ref().map(|t| t.definition.as_str()),
        ),
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

async fn post_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    body: PostComment,
) -> ApiResult<Comment> {
    scope.require_live()?;
    check_target_ids(&body)?;
    let markdown = body.body.into_markdown("body")?;
    let revision_id = scope.revision_id(state).await?;
    let (page_title, page_hash) = match &body.page {
        Some(page) => {
            let rev = scope.current_content(state).await?;
            let p = rev.page(page).ok_or_else(|| {
                ApiError::bad_request(format!("`page`: no page `{page}` in the current content."))
            })?;
            (Some(p.title.clone()), page_fingerprint(&rev, page))
        }
        None => (None, None),
    };
    let now = state.now();
    let c = CommentRow {
        id: new_id(),
        space_id: scope.ctx.space.id.clone(),
        change_request_id: scope.cr_id().map(str::to_string),
        posted_by: caller.user.id.to_string(),
        posted_at: now,
        edited_at: None,
        body: markdown,
        status: CommentStatus::Open,
        resolved_at: None,
        resolved_by: None,
        revision_id,
        page_id: body.page,
        page_title,
        page_hash,
        node_id: body.node,
        table_record: body.table_cell.as_ref().map(|t| t.record.clone()),
        table_definition: body.table_cell.map(|t| t.definition),
        replies: 0,
    };
    let mut tx = state.db.begin().await?;
    store::comments::insert(&mut tx, &c).await?;
    tx.commit().await?;
    let render = Render::new(state, scope, caller, Format::Markdown, &[&c], &[]).await?;
    Ok(render.comment(&c))
}

async fn load_comment(state: &AppState, scope: &Scope, id: &str) -> ApiResult<CommentRow> {
    store::comments::get(&state.db, &scope.ctx.space.id, scope.cr_id(), id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Comment `{id}` not found.")))
}

async fn get_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    id: &str,
    format: Format,
) -> ApiResult<Comment> {
    let c = load_comment(state, scope, id).await?;
    let render = Render::new(state, scope, caller, format, &[&c], &[]).await?;
    Ok(render.comment(&c))
}

/// Body of the PUT endpoints.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct UpdateBody {
    resolved: Option<bool>,
    body: Option<BodyIn>,
    #[serde(default)]
    added_reactions: Vec<String>,
    #[serde(default)]
    removed_reactions: Vec<String>,
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

/// Applies the caller's reactions inside `tx`, refusing a total past [`MAX_REACTIONS`].
async fn react(
    tx: &mut crate::db::Tx,
    target: &str,
    caller: &Caller,
    (added, removed): (&[String], &[String]),
    now: i64,
) -> ApiResult<()> {
    let total = store::comments::react(tx, target, &caller.user.id, added, removed, now).await?;
    if total > MAX_REACTIONS as i64 {
        return Err(ApiError::bad_request(format!(
            "`addedReactions`: one user may leave at most {MAX_REACTIONS} reactions on a comment."
        )));
    }
    Ok(())
}

async fn update_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    id: &str,
    body: UpdateBody,
) -> ApiResult<Comment> {
    scope.require_live()?;
    check_emojis("addedReactions", &body.added_reactions)?;
    check_emojis("removedReactions", &body.removed_reactions)?;
    let found = load_comment(state, scope, id).await?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    let mut c = store::comments::get_tx(&mut tx, &found.id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Comment `{id}` not found.")))?;
    if let Some(b) = body.body {
        if c.posted_by != caller.user.id {
            return Err(ApiError::forbidden("Only the author can edit a comment."));
        }
        c.body = b.into_markdown("body")?;
        c.edited_at = Some(now);
    }
    if let Some(resolved) = body.resolved {
        let was_open = c.status == CommentStatus::Open;
        if resolved && was_open {
            c.status = CommentStatus::Resolved;
            c.resolved_at = Some(now);
            c.resolved_by = Some(caller.user.id.to_string());
            store::comments::count_open(&mut tx, &c.space_id, c.change_request_id.as_deref(), -1)
                .await?;
        } else if !resolved && !was_open {
            c.status = CommentStatus::Open;
            c.resolved_at = None;
            c.resolved_by = None;
            store::comments::count_open(&mut tx, &c.space_id, c.change_request_id.as_deref(), 1)
                .await?;
        }
    }
    store::comments::update(&mut tx, &c).await?;
    let reactions = (&body.added_reactions[..], &body.removed_reactions[..]);
    react(&mut tx, &c.id, caller, reactions, now).await?;
    tx.commit().await?;
    let render = Render::new(state, scope, caller, Format::Markdown, &[&c], &[]).await?;
    Ok(render.comment(&c))
}

async fn delete_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    id: &str,
) -> ApiResult<StatusCode> {
    scope.require_live()?;
    let mut tx = state.db.begin().await?;
    let Some(c) = store::comments::get_tx(&mut tx, id).await? else {
        return Ok(StatusCode::NO_CONTENT);
    };
    if c.space_id != scope.ctx.space.id || c.change_request_id.as_deref() != scope.cr_id() {
        return Ok(StatusCode::NO_CONTENT);
    }
    if c.posted_by != caller.user.id && scope.ctx.role < Role::Admin {
        return Err(ApiError::forbidden(
            "Only the author or a space admin can delete a comment.",
        ));
    }
    if store::comments::delete(&mut tx, &c.id).await? && c.status == CommentStatus::Open {
        store::comments::count_open(&mut tx, &c.space_id, c.change_request_id.as_deref(), -1)
            .await?;
    }
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list_replies_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    id: &str,
    format: Format,
    page: PageRequest,
) -> ApiResult<List<Reply>> {
    let c = load_comment(state, scope, id).await?;
    let key = format!("replies:{}", c.id);
    let after = page.after::<(i64, String)>(&key)?;
    let (rows, count) =
        store::comments::list_replies(&state.db, &c.id, after, page.fetch_limit()).await?;
    let refs: Vec<&ReplyRow> = rows.iter().collect();
    let render = Render::new(state, scope, caller, format, &[], &refs).await?;
    let items = rows
        .iter()
        .map(|r| (render.reply(r), (r.posted_at, r.id.clone())))
        .collect();
    page.finish(&key, items, count)
}

/// Body of the reply post endpoints.
#[derive(Deserialize)]
pub struct PostReply {
    body: BodyIn,
}

async fn post_reply_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    id: &str,
    body: PostReply,
    format: Format,
) -> ApiResult<Reply> {
    scope.require_live()?;
    let c = load_comment(state, scope, id).await?;
    let r = ReplyRow {
        id: new_id(),
        comment_id: c.id.clone(),
        posted_by: caller.user.id.to_string(),
        posted_at: state.now(),
        edited_at: None,
        body: body.body.into_markdown("body")?,
    };
    let mut tx = state.db.begin().await?;
    store::comments::insert_reply(&mut tx, &r).await?;
    store::comments::count_replies(&mut tx, &c.id, 1).await?;
    tx.commit().await?;
    let render = Render::new(state, scope, caller, format, &[], &[&r]).await?;
    Ok(render.reply(&r))
}

async fn load_reply(
    state: &AppState,
    scope: &Scope,
    comment: &str,
    reply: &str,
) -> ApiResult<(CommentRow, ReplyRow)> {
    let c = load_comment(state, scope, comment).await?;
    let r = store::comments::get_reply(&state.db, &c.id, reply)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Reply `{reply}` not found.")))?;
    Ok((c, r))
}

async fn get_reply_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    comment: &str,
    reply: &str,
    format: Format,
) -> ApiResult<Reply> {
    let (_, r) = load_reply(state, scope, comment, reply).await?;
    let render = Render::new(state, scope, caller, format, &[], &[&r]).await?;
    Ok(render.reply(&r))
}

async fn update_reply_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    comment: &str,
    reply: &str,
    body: UpdateBody,
) -> ApiResult<Reply> {
    scope.require_live()?;
    if body.resolved.is_some() {
        return Err(ApiError::bad_request(
            "`resolved` applies to comments, not replies.",
        ));
    }
    check_emojis("addedReactions", &body.added_reactions)?;
    check_emojis("removedReactions", &body.removed_reactions)?;
    let (_, mut r) = load_reply(state, scope, comment, reply).await?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    if let Some(b) = body.body {
        if r.posted_by != caller.user.id {
            return Err(ApiError::forbidden("Only the author can edit a reply."));
        }
        r.body = b.into_markdown("body")?;
        r.edited_at = Some(now);
        store::comments::update_reply(&mut tx, &r).await?;
    }
    let reactions = (&body.added_reactions[..], &body.removed_reactions[..]);
    react(&mut tx, &r.id, caller, reactions, now).await?;
    tx.commit().await?;
    let render = Render::new(state, scope, caller, Format::Markdown, &[], &[&r]).await?;
    Ok(render.reply(&r))
}

async fn delete_reply_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    comment: &str,
    reply: &str,
) -> ApiResult<StatusCode> {
    scope.require_live()?;
    let Ok(c) = load_comment(state, scope, comment).await else {
        return Ok(StatusCode::NO_CONTENT);
    };
    let Some(r) = store::comments::get_reply(&state.db, &c.id, reply).await? else {
        return Ok(StatusCode::NO_CONTENT);
    };
    if r.posted_by != caller.user.id && scope.ctx.role < Role::Admin {
        return Err(ApiError::forbidden(
            "Only the author or a space admin can delete a reply.",
        ));
    }
    let mut tx = state.db.begin().await?;
    if store::comments::delete_reply(&mut tx, &c.id, &r.id).await? {
        store::comments::count_replies(&mut tx, &c.id, -1).await?;
    }
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

// ---- Handlers: one per operation kind, for spaces and change requests alike ------------

impl FromRequestParts<AppState> for Scope {
    type Rejection = ApiError;

    /// The scope named by the path: the space of the request, and its change request when the
    /// path has `changeRequestId`.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let params = PathParams::read(parts).await?;
        let ctx = parts.extensions.get::<SpaceCtx>().cloned().ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("comment route without a space context"))
        })?;
        let mut scope = match params.get("changeRequestId") {
            Some(cr) => Scope::change_request(state, ctx, cr).await?,
            None => Scope::space(ctx),
        };
        scope.params = params;
        Ok(scope)
    }
}

/// `listCommentsInSpace`, `listCommentsInChangeRequest`.
pub async fn list_comments(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    OriginalUri(uri): OriginalUri,
    scope: Scope,
    QueryParams(q): QueryParams<ListQuery>,
    page: PageRequest,
) -> ApiResult<JsonBytes> {
    // The items' permissions depend on who asks, their role and whether the space is live.
    let live = if scope.ctx.space.deleted_at.is_some() {
        "deleted"
    } else {
        "live"
    };
    let key = [
        "comments",
        listings::request_line(&uri),
        caller.user.id.as_str(),
        scope.ctx.role.as_str(),
        live,
    ]
    .join("\n");
    let build = || list_impl(&s, &scope, &caller, q, page);
    Ok(JsonBytes(
        listings::answer(&s, &scope.ctx.space.id, key, build).await?,
    ))
}

/// `postCommentInSpace`, `postCommentInChangeRequest` (need `comment`).
pub async fn post_comment(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    JsonBody(body): JsonBody<PostComment>,
) -> ApiResult<Json<Comment>> {
    Ok(Json(post_impl(&s, &scope, &caller, body).await?))
}

/// `getCommentInSpace`, `getCommentInChangeRequest`.
pub async fn get_comment(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    QueryParams(q): QueryParams<FormatQuery>,
) -> ApiResult<Json<Comment>> {
    let id = scope.param("commentId")?;
    Ok(Json(get_impl(&s, &scope, &caller, id, q.format).await?))
}

/// `updateCommentInSpace`, `updateCommentInChangeRequest`: resolve or reopen, edit
/// (author), react.
pub async fn update_comment(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    JsonBody(body): JsonBody<UpdateBody>,
) -> ApiResult<Json<Comment>> {
    let id = scope.param("commentId")?;
    Ok(Json(update_impl(&s, &scope, &caller, id, body).await?))
}

/// `deleteCommentInSpace`, `deleteCommentInChangeRequest` (author or space admin); 204 also
/// when absent.
pub async fn delete_comment(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
) -> ApiResult<StatusCode> {
    delete_impl(&s, &scope, &caller, scope.param("commentId")?).await
}

/// `listCommentRepliesInSpace`, `listCommentRepliesInChangeRequest`.
pub async fn list_replies(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    QueryParams(q): QueryParams<FormatQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<Reply>>> {
    let id = scope.param("commentId")?;
    Ok(Json(
        list_replies_impl(&s, &scope, &caller, id, q.format, page).await?,
    ))
}

/// `postCommentReplyInSpace`, `postCommentReplyInChangeRequest` (need `comment`).
pub async fn post_reply(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    QueryParams(q): QueryParams<FormatQuery>,
    JsonBody(body): JsonBody<PostReply>,
) -> ApiResult<Json<Reply>> {
    let id = scope.param("commentId")?;
    Ok(Json(
        post_reply_impl(&s, &scope, &caller, id, body, q.format).await?,
    ))
}

/// `getCommentReplyInSpace`, `getCommentReplyInChangeRequest`.
pub async fn get_reply(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    QueryParams(q): QueryParams<FormatQuery>,
) -> ApiResult<Json<Reply>> {
    let (id, reply) = (scope.param("commentId")?, scope.param("commentReplyId")?);
    Ok(Json(
        get_reply_impl(&s, &scope, &caller, id, reply, q.format).await?,
    ))
}

/// `updateCommentReplyInSpace`, `updateCommentReplyInChangeRequest`.
pub async fn update_reply(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    JsonBody(body): JsonBody<UpdateBody>,
) -> ApiResult<Json<Reply>> {
    let (id, reply) = (scope.param("commentId")?, scope.param("commentReplyId")?);
    Ok(Json(
        update_reply_impl(&s, &scope, &caller, id, reply, body).await?,
    ))
}

/// `deleteCommentReplyInSpace`, `deleteCommentReplyInChangeRequest`; 204 also when absent.
pub async fn delete_reply(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
) -> ApiResult<StatusCode> {
    let (id, reply) = (scope.param("commentId")?, scope.param("commentReplyId")?);
    delete_reply_impl(&s, &scope, &caller, id, reply).await
}
