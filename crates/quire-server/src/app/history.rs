//! A space's history in the app: the revisions of its main line (each merge, rollback and
//! update that moved the space), newest first, with who and when; and one revision with
//! its changes against the one before it.

use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};

use super::shell::{failed, not_found, page, Viewer};
use crate::domain::access::{self, SpaceCtx};
use crate::domain::content;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store::revisions::RevisionRow;
use crate::values::RevisionType;

/// Revisions the history shows; older ones are reached from the oldest shown.
const SHOWN: usize = 50;

fn what(kind: RevisionType) -> &'static str {
    match kind {
        RevisionType::Merge => "Merged a change request",
        RevisionType::Edits => "Edited",
        RevisionType::Update => "Updated from the space",
        RevisionType::Rollback => "Rolled back",
        RevisionType::Computed => "Computed",
    }
}

/// The main line from `from`, newest first: each revision and then its first parent, at
/// most [`SHOWN`]; and the revision after the last shown, when there is one.
async fn main_line(
    state: &AppState,
    ctx: &SpaceCtx,
    from: &str,
) -> ApiResult<(Vec<std::sync::Arc<RevisionRow>>, Option<String>)> {
    let mut out = Vec::new();
    let mut next = Some(from.to_string());
    while let Some(id) = next.take() {
        if id.is_empty() {
            break;
        }
        if out.len() == SHOWN {
            return Ok((out, Some(id)));
        }
        let Some(row) = content::revision_row(state, &ctx.space.id, &id).await? else {
            break;
        };
        next = row
            .parent_ids()
            .map_err(crate::error::ApiError::internal)?
            .into_iter()
            .next();
        out.push(row);
    }
    Ok((out, None))
}

/// `GET /s/{spaceId}/~/revisions`: the main line from the current revision.
pub async fn list(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
) -> Response {
    list_from(state, ctx, viewer, nav, &ctx.space.revision_id).await
}

async fn list_from(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
    from: &str,
) -> Response {
    let (rows, more) = match main_line(state, ctx, from).await {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let ids: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.created_by.as_deref())
        .collect();
    let people = match access::people(state, &ids).await {
        Ok(p) => p,
        Err(e) => return failed(e),
    };
    let id = ctx.space.id.as_str();
    let who = |r: &RevisionRow| {
        r.created_by
            .as_deref()
            .and_then(|u| people.get(u))
            .map(|u| u.display_name.clone())
            .unwrap_or_else(|| "Quire".into())
    };
    let body = html! {
        h1 { "History of " (ctx.space.title) }
        // The same history as a repository: every revision is a commit (`crate::git`).
        p class="muted" {
            "Clone it with git, an API token as the password: "
            code { "git clone " (state.url(&format!("/git/{}.git", ctx.space.id))) }
        }
        @if rows.is_empty() {
            p { "No revision yet." }
        }
        ol class="history" {
            @for r in &rows {
                li {
                    a href={ "/s/" (id) "/~/revisions/" (r.id) } { (what(r.kind)) }
                    " "
                    span class="muted" {
                        "by " (who(r)) " · " (crate::clock::iso(r.created_at))
                        @if r.id == ctx.space.revision_id { " · current" }
                    }
                }
            }
        }
        @if let Some(older) = more {
            p { a href={ "/s/" (id) "/~/revisions/" (older) "/older" } { "Older revisions" } }
        }
    };
    page(StatusCode::OK, "History", Some(viewer), nav, body)
}

/// `GET /s/{spaceId}/~/revisions/{revisionId}`: who made it, when, and what changed
/// against the revision before it; `.../older` lists the main line from it.
pub async fn revision(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
    rest: &str,
) -> Response {
    let (rev_id, older) = match rest.strip_suffix("/older") {
        Some(id) => (id, true),
        None => (rest, false),
    };
    let row = match content::revision_row(state, &ctx.space.id, rev_id).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found(Some(viewer), "No revision of this space has this id."),
        Err(e) => return failed(e),
    };
    if older {
        return list_from(state, ctx, viewer, nav, &row.id).await;
    }
    let who = match &row.created_by {
        Some(u) => match access::people(state, &[u.as_str()]).await {
            Ok(p) => p.get(u).map(|u| u.display_name.clone()),
            Err(e) => return failed(e),
        },
        None => None,
    };
    let parent = match row.parent_ids() {
        Ok(p) => p.into_iter().next().unwrap_or_default(),
        Err(e) => return failed(e),
    };
    let changes =
        match super::screens::changes_html(state, ctx, (&parent, &row.id), "~", None).await {
            Ok(html) => html,
            Err(e) => return failed(e),
        };
    let body = html! {
        nav class="crumbs" aria-label="Breadcrumb" {
            ol { li { a href={ "/s/" (ctx.space.id) "/~/revisions" } { "History" } } }
        }
        h1 { (what(row.kind)) }
        p {
            "By " (who.as_deref().unwrap_or("Quire")) " on " (crate::clock::iso(row.created_at))
            ". Revision " code { (row.id) } "."
        }
        (changes)
    };
    page(StatusCode::OK, "Revision", Some(viewer), nav, body)
}
