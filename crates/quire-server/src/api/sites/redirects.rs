//! Redirects of a site (`SITE/redirects`, `SITE/redirect`): the workflow is in
//! `domain::redirects`, which published sites also follow.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;

use super::types::{self, ResolvedRedirect, SiteRedirect};
use crate::api::views;
use crate::domain::access::{OrgCtx, SiteCtx};
use crate::domain::redirects::{self, Destination};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;

/// `listSiteRedirects`, oldest first.
pub async fn list_site_redirects(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<SiteRedirect>>> {
    let scope = format!("redirects:{}", ctx.site.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::redirects::list(&state.db, &ctx.site.id, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|r| Ok((types::site_redirect(&r)?, (r.created_at, r.id))))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Body of `createSiteRedirect`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRedirect {
    source: String,
    destination: Destination,
}

/// `createSiteRedirect`: 201; 409 when the site already redirects that source.
pub async fn create_site_redirect(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<CreateRedirect>,
) -> ApiResult<Response> {
    let row = redirects::create(&state, &ctx.site, body.source, &body.destination).await?;
    Ok(views::created(
        &state.url(&format!(
            "/v1/orgs/{}/sites/{}/redirects/{}",
            org.org.id, ctx.site.id, row.id
        )),
        types::site_redirect(&row)?,
    ))
}

/// Body of `updateSiteRedirectById`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateRedirect {
    source: Option<String>,
    destination: Option<Destination>,
}

/// `updateSiteRedirectById`: the source, the destination, or both.
pub async fn update_site_redirect(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<UpdateRedirect>,
) -> ApiResult<Json<SiteRedirect>> {
    if body.source.is_none() && body.destination.is_none() {
        return Err(ApiError::bad_request(
            "Request body must set `source` or `destination`.",
        ));
    }
    let row = redirects::update(
        &state,
        &ctx.site,
        &id,
        body.source,
        body.destination.as_ref(),
    )
    .await?;
    Ok(Json(types::site_redirect(&row)?))
}

/// `deleteSiteRedirectById`: 205 when deleted, 204 when there was none (as the spec says).
pub async fn delete_site_redirect(
    State(state): State<AppState>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    let deleted = match ctx {
        Some(Extension(ctx)) => redirects::delete(&state, &ctx.site.id, &id).await?,
        None => false,
    };
    Ok(match deleted {
        true => StatusCode::RESET_CONTENT,
        false => StatusCode::NO_CONTENT,
    })
}

/// Query of `getSiteRedirectBySource`.
#[derive(Deserialize)]
pub struct BySource {
    source: Option<String>,
    #[serde(rename = "shareKey")]
    share_key: Option<String>,
}

/// `getSiteRedirectBySource`: the redirect from a source and its target URL (under the
/// share link's key when given); 404 when there is none, or its destination left the site.
pub async fn get_site_redirect_by_source(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    QueryParams(q): QueryParams<BySource>,
) -> ApiResult<Json<ResolvedRedirect>> {
    let source = q
        .source
        .ok_or_else(|| ApiError::bad_request("Query parameter `source` is required."))?;
    redirects::check_source("source", &source)?;
    let share_key = match q.share_key.filter(|k| !k.is_empty()) {
        Some(key) => Some(
            store::sites::active_share_link(&state.db, &ctx.site.id, &key)
                .await?
                .ok_or_else(|| {
                    ApiError::bad_request("`shareKey` is not an active share link of this site.")
                })?
                .share_key,
        ),
        None => None,
    };
    let none = || ApiError::not_found(format!("No redirect from `{source}` in this site."));
    let row = store::redirects::by_source(&state.db, &ctx.site.id, &source)
        .await?
        .ok_or_else(none)?;
    let structure = store::sites::structure(&state.db, &ctx.site.id).await?;
    let target = redirects::target(&state, &ctx.site, &structure, &row, share_key.as_deref())
        .await?
        .ok_or_else(none)?;
    Ok(Json(ResolvedRedirect {
        redirect: types::site_redirect(&row)?,
        target,
    }))
}
