//! Comments and replies, on a space (`SPACE/comments`) or on a change request
//! (`CR/comments`): listing with filters, posting, resolving and reopening, editing,
//! reactions, deleting; with exact open-comment and reply counters.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{FromRequestParts, OriginalUri, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Extension;
use quire_content::model::Revision;
use serde::Deserialize;
use serde_json::json;

use super::types::{
    Body, Comment, Permissions, Reacted, Reaction, Reply, Target, TargetCell, TargetNode,
    TargetPage, Urls,
};
use crate::api::views;
use crate::clock::iso;
use crate::domain::access::SpaceCtx;
use crate::domain::auth::Caller;
use crate::domain::comments::{self, page_fingerprint, BodyIn, Thread};
use crate::domain::listings;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, PathParams, QueryParams};
use crate::http::json::{Json, JsonBytes};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::comments::{CommentFilter, CommentRow, ReactionRow, ReplyRow};
use crate::store::users::UserRow;
use crate::values::CommentStatus;

/// Where comments live (a space, or one of its change requests), with the path's other
/// parameters.
pub struct Scope {
    thread: Thread,
    params: PathParams,
}

impl Scope {
    /// A path parameter (`commentId`, `commentReplyId`).
    fn param(&self, name: &str) -> ApiResult<&str> {
        self.params.require(name)
    }

    fn location(&self, state: &AppState, comment: &str) -> String {
        let space = &self.thread.ctx.space.id;
        match self.thread.cr_id() {
            Some(cr) => state.url(&format!(
                "/v1/spaces/{space}/change-requests/{cr}/comments/{comment}"
            )),
            None => state.url(&format!("/v1/spaces/{space}/comments/{comment}")),
        }
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
            Some(scope.thread.current_content(state).await?)
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
        let may = self.scope.thread.may(self.caller.user.id.as_str(), author);
        Permissions {
            view: true,
            edit: may.edit,
            reply: may.reply,
            delete: may.delete,
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
        scope.thread.ctx.space.id,
        scope.thread.cr_id().unwrap_or("-"),
        q.order
    );
    let after = page.after::<(i64, String)>(&scope_key)?;
    let (rows, count) = store::comments::list(
        &state.db,
        &scope.thread.ctx.space.id,
        scope.thread.cr_id(),
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

impl From<UpdateBody> for comments::Change {
    fn from(b: UpdateBody) -> Self {
        comments::Change {
            resolved: b.resolved,
            body: b.body,
            added_reactions: b.added_reactions,
            removed_reactions: b.removed_reactions,
        }
    }
}

async fn list_replies_impl(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    id: &str,
    format: Format,
    page: PageRequest,
) -> ApiResult<List<Reply>> {
    let c = comments::load(state, &scope.thread, id).await?;
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

/// One comment as an answer.
async fn comment_view(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    c: &CommentRow,
    format: Format,
) -> ApiResult<Json<Comment>> {
    let render = Render::new(state, scope, caller, format, &[c], &[]).await?;
    Ok(Json(render.comment(c)))
}

/// One reply as an answer.
async fn reply_view(
    state: &AppState,
    scope: &Scope,
    caller: &Caller,
    r: &ReplyRow,
    format: Format,
) -> ApiResult<Json<Reply>> {
    let render = Render::new(state, scope, caller, format, &[], &[r]).await?;
    Ok(Json(render.reply(r)))
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
        let thread = match params.get("changeRequestId") {
            Some(cr) => Thread::change_request(state, ctx, cr).await?,
            None => Thread::space(ctx),
        };
        Ok(Scope { thread, params })
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
    let live = if scope.thread.ctx.space.deleted_at.is_some() {
        "deleted"
    } else {
        "live"
    };
    let key = [
        "comments",
        listings::request_line(&uri),
        caller.user.id.as_str(),
        scope.thread.ctx.role.as_str(),
        live,
    ]
    .join("\n");
    let build = || list_impl(&s, &scope, &caller, q, page);
    Ok(JsonBytes(
        listings::answer(
            &s,
            &scope.thread.ctx.space.id,
            listings::Listing::Comments,
            key,
            build,
        )
        .await?,
    ))
}

/// `postCommentInSpace`, `postCommentInChangeRequest` (need `comment`).
pub async fn post_comment(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    JsonBody(body): JsonBody<PostComment>,
) -> ApiResult<Json<Comment>> {
    let anchor = comments::Anchor {
        page: body.page,
        node: body.node,
        table_cell: body.table_cell.map(|t| (t.record, t.definition)),
    };
    let c = comments::post(&s, &scope.thread, &caller.user.id, body.body, anchor).await?;
    comment_view(&s, &scope, &caller, &c, Format::Markdown).await
}

/// `getCommentInSpace`, `getCommentInChangeRequest`.
pub async fn get_comment(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    QueryParams(q): QueryParams<FormatQuery>,
) -> ApiResult<Json<Comment>> {
    let id = scope.param("commentId")?;
    let c = comments::load(&s, &scope.thread, id).await?;
    comment_view(&s, &scope, &caller, &c, q.format).await
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
    let c = comments::update(&s, &scope.thread, &caller.user.id, id, body.into()).await?;
    comment_view(&s, &scope, &caller, &c, Format::Markdown).await
}

/// `deleteCommentInSpace`, `deleteCommentInChangeRequest` (author or space admin); 204 also
/// when absent.
pub async fn delete_comment(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
) -> ApiResult<StatusCode> {
    let id = scope.param("commentId")?;
    comments::delete(&s, &scope.thread, &caller.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
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
    let r = comments::reply(&s, &scope.thread, &caller.user.id, id, body.body).await?;
    reply_view(&s, &scope, &caller, &r, q.format).await
}

/// `getCommentReplyInSpace`, `getCommentReplyInChangeRequest`.
pub async fn get_reply(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    QueryParams(q): QueryParams<FormatQuery>,
) -> ApiResult<Json<Reply>> {
    let (id, reply) = (scope.param("commentId")?, scope.param("commentReplyId")?);
    let (_, r) = comments::load_reply(&s, &scope.thread, id, reply).await?;
    reply_view(&s, &scope, &caller, &r, q.format).await
}

/// `updateCommentReplyInSpace`, `updateCommentReplyInChangeRequest`.
pub async fn update_reply(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
    JsonBody(body): JsonBody<UpdateBody>,
) -> ApiResult<Json<Reply>> {
    let (id, reply) = (scope.param("commentId")?, scope.param("commentReplyId")?);
    let user = &caller.user.id;
    let r = comments::update_reply(&s, &scope.thread, user, (id, reply), body.into()).await?;
    reply_view(&s, &scope, &caller, &r, Format::Markdown).await
}

/// `deleteCommentReplyInSpace`, `deleteCommentReplyInChangeRequest`; 204 also when absent.
pub async fn delete_reply(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    scope: Scope,
) -> ApiResult<StatusCode> {
    let (id, reply) = (scope.param("commentId")?, scope.param("commentReplyId")?);
    comments::delete_reply(&s, &scope.thread, &caller.user.id, (id, reply)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `listCommentersInSpace`, `listCommentersInChangeRequest`: the organization's members who
/// posted a comment or a reply in the discussion, by user id.
pub async fn list_commenters(
    State(s): State<AppState>,
    scope: Scope,
    page: PageRequest,
) -> ApiResult<Json<List<views::Member>>> {
    let space = &scope.thread.ctx.space;
    let cr = scope.thread.cr_id();
    let list = format!("commenters:{}:{}", space.id, cr.unwrap_or(""));
    let after = page.after::<String>(&list)?;
    let (rows, count) = store::members::commenters(
        &s.db,
        space.org_id.as_str(),
        &space.id,
        cr,
        after,
        page.fetch_limit(),
    )
    .await?;
    let rows = rows
        .iter()
        .map(|m| (views::member(&s, m), m.user_id.to_string()))
        .collect();
    Ok(Json(page.finish(&list, rows, count)?))
}
