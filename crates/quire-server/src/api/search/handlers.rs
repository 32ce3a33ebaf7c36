//! Search: `searchSpaceContent` (`SPACE/search`) and `searchOrganizationContent`
//! (`ORG/search`). The index and the ranking are in [`crate::domain::search`].

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::domain::access::grants::Grants;
use crate::domain::access::{OrgCtx, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::search;
use crate::domain::search::query::{self, MAX_QUERY_CHARS};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::QueryParams;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
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
    if text.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::bad_request(format!(
            "Invalid query parameter `query`: at most {MAX_QUERY_CHARS} characters."
        )));
    }
    if text.trim().is_empty() {
        return Err(ApiError::bad_request(
            "Invalid query parameter `query`: must not be empty.",
        ));
    }
    Ok(text)
}

/// Cursors are offsets into the ranking, bound to the list and the query.
fn scope(kind: &str, id: &str, text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!("search:{kind}:{id}:{}", hex::encode(&digest[..12]))
}

struct Page {
    /// `(state index, SearchPageResult)` of this page of results.
    results: Vec<(usize, Value)>,
    count: i64,
    next: Option<crate::http::pagination::Next>,
}

async fn ranked_page(
    state: &AppState,
    states: &[SpaceState],
    text: &str,
    page: &PageRequest,
    scope: &str,
) -> ApiResult<Page> {
    let start = page
        .after::<i64>(scope)?
        .map_or(0, |last| usize::try_from(last + 1).unwrap_or(0));
    let end = start + usize::try_from(page.fetch_limit()).unwrap_or(0);
    let parsed = query::parse(text);
    let mut ranked = query::run(state, states, &parsed).await?;
    ranked.check_phrases(state, states, end).await?;
    let rows: Vec<((usize, Value), i64)> = ranked
        .render(state, states, start, end)
        .await?
        .into_iter()
        .map(|(at, space, v)| ((space, v), i64::try_from(at).unwrap_or(i64::MAX)))
        .collect();
    let count = i64::try_from(ranked.count()).unwrap_or(i64::MAX);
    let list = page.finish(scope, rows, count)?;
    Ok(Page {
        results: list.items,
        count: list.count,
        next: list.next,
    })
}

/// `searchSpaceContent`: the pages of the space that match, best first, each with its
/// matching sections. A deleted space has no results.
pub async fn search_space(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    QueryParams(params): QueryParams<SearchParams>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    let text = query_text(params)?;
    let scope = scope("space", &ctx.space.id, &text);
    let states = search::fresh_states(&state, &[ctx.space.id.as_str()]).await?;
    let p = ranked_page(&state, &states, &text, &page, &scope).await?;
    Ok(Json(List {
        items: p.results.into_iter().map(|(_, v)| v).collect(),
        count: p.count,
        next: p.next,
    }))
}

/// `searchOrganizationContent`: matching pages of the live spaces the caller can see,
/// ranked together and grouped by space. `limit` and `count` are in pages.
pub async fn search_organization(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    QueryParams(params): QueryParams<SearchParams>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    let text = query_text(params)?;
    let scope = scope("org", &org.org.id, &text);
    let grants = Grants::load(&state, &org.org.id, &caller.user.id, org.role).await?;
    let spaces = store::spaces::list_live(&state.db, &org.org.id, None).await?;
    let ids: Vec<&str> = spaces
        .iter()
        .filter(|s| grants.space_role(s).is_some())
        .map(|s| s.id.as_str())
        .collect();
    let mut states = search::fresh_states(&state, &ids).await?;
    // Ties between spaces break in the organization's order.
    let order: std::collections::HashMap<&str, usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    states.sort_by_key(|s| {
        order
            .get(s.space_id.as_str())
            .copied()
            .unwrap_or(usize::MAX)
    });
    let p = ranked_page(&state, &states, &text, &page, &scope).await?;
    let mut groups: Vec<(usize, Vec<Value>)> = Vec::new();
    for (space, v) in p.results {
        match groups.iter_mut().find(|(s, _)| *s == space) {
            Some((_, pages)) => pages.push(v),
            None => groups.push((space, vec![v])),
        }
    }
    let items = groups
        .into_iter()
        .map(|(space, pages)| {
            let s = &states[space];
            json!({
                "type": "space",
                "id": s.space_id,
                "title": s.title,
                "score": pages.first().map_or(json!(0), |p| p["score"].clone()),
                "pages": pages,
            })
        })
        .collect();
    Ok(Json(List {
        items,
        count: p.count,
        next: p.next,
    }))
}
