//! `searchSiteContent` (`SITE/search`): the site's search as an API, grouped by space. The
//! search itself is the published site's (`domain::site_search`); this reads the body, the
//! visitor (a published-content token's, else an anonymous visitor) and pages the answer.

use axum::extract::State;
use axum::Extension;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::api::views::{SearchPageResult, SearchSpaceResult};
use crate::domain::access::SiteCtx;
use crate::domain::published::{self, visitor_context};
use crate::domain::search;
use crate::domain::search::ask::Refused;
use crate::domain::search::query::MAX_QUERY_CHARS;
use crate::domain::search::site::DEPTH;
use crate::domain::site_search::{self, Scope};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;

/// `SiteSearchScope`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScopeBody {
    mode: String,
    included_site_spaces: Option<Vec<String>>,
    site_space_ids: Option<Vec<String>>,
}

/// Body of `searchSiteContent`: `query` with a `scope`, or one of the deprecated `mode`s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchBody {
    query: String,
    scope: Option<ScopeBody>,
    mode: Option<String>,
    site_space_ids: Option<Vec<String>>,
    site_space_id: Option<String>,
}

fn scope_of(body: SearchBody) -> ApiResult<(String, Scope)> {
    let modes = "`all`, `default` or `specific`";
    let scope = match (body.scope, body.mode.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "Give `scope` or the deprecated `mode`, not both.",
            ))
        }
        (Some(s), None) => match s.mode.as_str() {
            "all" => Scope::All,
            "default" => Scope::Default(s.included_site_spaces.unwrap_or_default()),
            "specific" => Scope::Specific(
                s.site_space_ids.ok_or_else(|| {
                    ApiError::bad_request("`scope.siteSpaceIds` is required by `specific`.")
                })?,
                "scope.siteSpaceIds",
            ),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "`scope.mode` must be {modes}."
                )))
            }
        },
        (None, Some("all")) => Scope::All,
        (None, Some("current")) => Scope::Current(
            body.site_space_id.ok_or_else(|| {
                ApiError::bad_request("`siteSpaceId` is required by the `current` mode.")
            })?,
            "siteSpaceId",
        ),
        (None, Some("specific")) | (None, None) if body.site_space_ids.is_some() => {
            Scope::Specific(body.site_space_ids.unwrap_or_default(), "siteSpaceIds")
        }
        (None, None) => Scope::All,
        (None, Some(_)) => {
            return Err(ApiError::bad_request(
                "`mode` must be `all`, `current` or `specific` (with `siteSpaceIds`).",
            ))
        }
    };
    Ok((body.query, scope))
}

/// `searchSiteContent`: the pages of the site that match, best first, grouped by space;
/// `limit` and `count` are in pages. Only what the visitor sees is searched: site spaces and
/// sections whose conditions hold, pages the navigation reaches (not hidden, conditions
/// holding, not excluded from search), text outside conditional blocks that exclude them.
/// A member searches as an anonymous visitor; the renderer's published-content token, as
/// the visitor it was issued for. The results' `urls.app` are the pages' published URLs.
pub async fn search_site_content(
    State(state): State<AppState>,
    reading: Option<Extension<published::Reading>>,
    Extension(ctx): Extension<SiteCtx>,
    page: PageRequest,
    JsonBody(body): JsonBody<SearchBody>,
) -> ApiResult<Json<List<SearchSpaceResult>>> {
    let (text, scope) = scope_of(body)?;
    match search::ask::accept(&text) {
        Ok(_) => {}
        Err(Refused::TooLong) => {
            return Err(ApiError::bad_request(format!(
                "`query` must be at most {MAX_QUERY_CHARS} characters."
            )))
        }
        Err(Refused::Empty) => return Err(ApiError::bad_request("`query` must not be empty.")),
    }
    let (visitor, share_key) = match &reading {
        Some(Extension(published::Reading(s))) => (s.visitor.clone(), s.share_key.clone()),
        None => (visitor_context(None, None), None),
    };
    let cursor_scope = {
        let digest = Sha256::digest(format!("{text}\n{scope:?}\n{visitor}").as_bytes());
        format!("site-search:{}:{}", ctx.site.id, hex::encode(&digest[..12]))
    };
    let start = page
        .after::<i64>(&cursor_scope)?
        .map_or(0, |last| usize::try_from(last + 1).unwrap_or(0));
    // Read to the search's depth: the count is of what this visitor may see there.
    let hits = site_search::search(
        &state,
        &ctx.site,
        &scope,
        &text,
        &visitor,
        share_key.as_deref(),
        DEPTH,
    )
    .await?;
    let count = i64::try_from(hits.len()).unwrap_or(i64::MAX);
    let rows: Vec<_> = hits
        .into_iter()
        .enumerate()
        .skip(start)
        .take(page.fetch_limit().try_into().unwrap_or(usize::MAX))
        .map(|(at, hit)| (hit, i64::try_from(at).unwrap_or(i64::MAX)))
        .collect();
    let list = page.finish(&cursor_scope, rows, count)?;
    let mut groups: Vec<SearchSpaceResult> = Vec::new();
    for hit in list.items {
        let mut result = SearchPageResult::from(hit.page);
        for s in &mut result.sections {
            s.urls.app = if s.id.is_empty() {
                hit.url.clone()
            } else {
                format!("{}#{}", hit.url, s.id)
            };
        }
        result.urls.app = hit.url;
        let space = &hit.site_space.space_id;
        match groups.iter_mut().find(|g| &g.id == space) {
            Some(g) => g.pages.push(result),
            None => groups.push(SearchSpaceResult {
                kind: "space",
                id: space.clone(),
                title: hit.space_title,
                score: result.score,
                pages: vec![result],
            }),
        }
    }
    Ok(Json(List {
        items: groups,
        count: list.count,
        next: list.next,
    }))
}
