//! Search: `searchSpaceContent` (`SPACE/search`) and `searchOrganizationContent`
//! (`ORG/search`). The index and the ranking are in [`crate::domain::search`].

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use bytes::Bytes;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::types::{SearchPageResult, SearchSpaceResult};

use crate::domain::access::grants::Grants;
use crate::domain::access::{OrgCtx, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::search;
use crate::domain::search::ask::Refused;
use crate::domain::search::query::{FoundPage, MAX_QUERY_CHARS};
use crate::domain::search::results::{self, Ask, Seen};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::QueryParams;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store::search::SpaceState;

/// Query of both searches (`page` and `limit` are read by [`PageRequest`]).
#[derive(Deserialize, Default)]
pub struct SearchParams {
    query: Option<String>,
}

fn query_text(params: SearchParams) -> ApiResult<String> {
    let text = params
        .query
        .ok_or_else(|| ApiError::bad_request("Query parameter `query` is required."))?;
    match search::ask::accept(&text) {
        Ok(_) => Ok(text),
        Err(Refused::TooLong) => Err(ApiError::bad_request(format!(
            "Invalid query parameter `query`: at most {MAX_QUERY_CHARS} characters."
        ))),
        Err(Refused::Empty) => Err(ApiError::bad_request(
            "Invalid query parameter `query`: must not be empty.",
        )),
    }
}

/// Cursors are offsets into the ranking, bound to the list and the query.
fn scope(kind: &str, id: &str, text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!("search:{kind}:{id}:{}", hex::encode(&digest[..12]))
}

struct Page {
    /// The spaces searched (results name them by index).
    states: Vec<SpaceState>,
    /// This page of results, in ranking order.
    results: Vec<FoundPage>,
    count: i64,
    next: Option<crate::http::pagination::Next>,
}

/// The first ranking position of the page asked for.
fn start_of(page: &PageRequest, scope: &str) -> ApiResult<usize> {
    Ok(page
        .after::<i64>(scope)?
        .map_or(0, |last| usize::try_from(last + 1).unwrap_or(0)))
}

async fn ranked_page(
    state: &AppState,
    space_ids: &[&str],
    text: &str,
    page: &PageRequest,
    scope: &str,
    start: usize,
) -> ApiResult<Page> {
    let limit = usize::try_from(page.limit).unwrap_or(0);
    let end = start.saturating_add(limit);
    // One hit past the page tells whether a next page exists; it is ranked, not rendered.
    let answer = search::ask::ask(state, space_ids, text, None, end.saturating_add(1)).await?;
    let rendered = answer.render(state, start, end).await?;
    let more = answer.count() > end;
    let mut rows: Vec<(Option<FoundPage>, i64)> = rendered
        .into_iter()
        .map(|p| {
            let at = i64::try_from(p.position).unwrap_or(i64::MAX);
            (Some(p), at)
        })
        .collect();
    if more {
        rows.push((None, i64::try_from(end).unwrap_or(i64::MAX)));
    }
    let count = i64::try_from(answer.count()).unwrap_or(i64::MAX);
    let list = page.finish(scope, rows, count)?;
    Ok(Page {
        states: answer.states,
        results: list.items.into_iter().flatten().collect(),
        count: list.count,
        next: list.next,
    })
}

/// A JSON response from its serialised body.
fn json_body(body: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn serialise<T: serde::Serialize>(value: &T) -> ApiResult<Bytes> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

/// Keeps an answer computed from `states` under their revisions, unless they moved
/// while it was computed.
async fn keep(
    state: &AppState,
    ask: &Ask<'_>,
    states: &[SpaceState],
    with_titles: bool,
    body: &Bytes,
) -> ApiResult<()> {
    if !results::enabled(state) || !search::unchanged(state, states).await? {
        return Ok(());
    }
    let seen: Vec<Seen<'_>> = states
        .iter()
        .map(|s| Seen {
            space_id: &s.space_id,
            revision_id: &s.revision_id,
            language: s.language.as_deref(),
            title: with_titles.then_some(s.title.as_str()),
        })
        .collect();
    results::put(state, results::key(state, ask, &seen), body.clone());
    Ok(())
}

/// `searchSpaceContent`: the pages of the space that match, best first, each with its
/// matching sections. A deleted space has no results.
pub async fn search_space(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    QueryParams(params): QueryParams<SearchParams>,
    page: PageRequest,
) -> ApiResult<Response> {
    let text = query_text(params)?;
    let scope = scope("space", &ctx.space.id, &text);
    let start = start_of(&page, &scope)?;
    let ask = Ask {
        kind: "space",
        scope_id: &ctx.space.id,
        text: &text,
        start,
        limit: page.limit,
    };
    let live = ctx.space.deleted_at.is_none();
    if live && results::enabled(&state) {
        let seen = [Seen {
            space_id: &ctx.space.id,
            revision_id: &ctx.space.revision_id,
            language: ctx.space.language.as_deref(),
            title: None,
        }];
        if let Some(body) = results::get(&state, &results::key(&state, &ask, &seen)) {
            return Ok(json_body(body));
        }
    }
    let p = ranked_page(
        &state,
        &[ctx.space.id.as_str()],
        &text,
        &page,
        &scope,
        start,
    )
    .await?;
    let body = serialise(&List {
        items: p
            .results
            .into_iter()
            .map(SearchPageResult::from)
            .collect::<Vec<_>>(),
        count: p.count,
        next: p.next,
    })?;
    if !p.states.is_empty() {
        keep(&state, &ask, &p.states, false, &body).await?;
    }
    Ok(json_body(body))
}

/// `searchOrganizationContent`: matching pages of the live spaces the caller can see,
/// ranked together and grouped by space. `limit` and `count` are in pages.
pub async fn search_organization(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    QueryParams(params): QueryParams<SearchParams>,
    page: PageRequest,
) -> ApiResult<Response> {
    let text = query_text(params)?;
    let scope = scope("org", &org.org.id, &text);
    let start = start_of(&page, &scope)?;
    let grants = Grants::load(&state, &org.org.id, &caller.user.id, org.role).await?;
    let visible = search::ask::org_spaces(&state, &org.org.id, &grants).await?;
    let ask = Ask {
        kind: "org",
        scope_id: &org.org.id,
        text: &text,
        start,
        limit: page.limit,
    };
    if results::enabled(&state) {
        let seen: Vec<Seen<'_>> = visible
            .iter()
            .map(|s| Seen {
                space_id: &s.id,
                revision_id: &s.revision_id,
                language: s.language.as_deref(),
                title: Some(&s.title),
            })
            .collect();
        if let Some(body) = results::get(&state, &results::key(&state, &ask, &seen)) {
            return Ok(json_body(body));
        }
    }
    // Ties between spaces break in the organization's order.
    let ids: Vec<&str> = visible.iter().map(|s| s.id.as_str()).collect();
    let p = ranked_page(&state, &ids, &text, &page, &scope, start).await?;
    let mut groups: Vec<(usize, Vec<SearchPageResult>)> = Vec::new();
    for found in p.results {
        let space = found.space;
        let result = SearchPageResult::from(found);
        match groups.iter_mut().find(|(s, _)| *s == space) {
            Some((_, pages)) => pages.push(result),
            None => groups.push((space, vec![result])),
        }
    }
    let items: Vec<SearchSpaceResult> = groups
        .into_iter()
        .map(|(space, pages)| {
            let s = &p.states[space];
            SearchSpaceResult {
                kind: "space",
                id: s.space_id.clone(),
                title: s.title.clone(),
                score: pages.first().map_or(0.0, |p| p.score),
                pages,
            }
        })
        .collect();
    let body = serialise(&List {
        items,
        count: p.count,
        next: p.next,
    })?;
    keep(&state, &ask, &p.states, true, &body).await?;
    Ok(json_body(body))
}
