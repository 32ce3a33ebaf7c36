//! Share links of a site (`SITE/share-links`): secret keys that open a `share-link` site.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;

use super::types::{self, ShareLink};
use crate::api::views;
use crate::domain::access::{OrgCtx, SiteCtx};
use crate::domain::share_links;
use crate::error::ApiResult;
use crate::http::extract::JsonBody;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;

/// `listSiteShareLinks`, oldest first.
pub async fn list_site_share_links(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<ShareLink>>> {
    let scope = format!("share-links:{}", ctx.site.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::sites::list_share_links(&state.db, &ctx.site.id, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|l| {
            let key = (l.created_at, l.id.clone());
            (types::share_link(&state, &ctx.site, &l), key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Body of `createSiteShareLink`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateShareLink {
    name: String,
}

/// `createSiteShareLink`: 201, an active link with a new secret key.
pub async fn create_site_share_link(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<CreateShareLink>,
) -> ApiResult<Response> {
    let link = share_links::create(&state, &ctx.site.id, body.name).await?;
    Ok(views::created(
        &state.url(&format!(
            "/v1/orgs/{}/sites/{}/share-links/{}",
            org.org.id, ctx.site.id, link.id
        )),
        types::share_link(&state, &ctx.site, &link),
    ))
}

/// Body of `updateSiteShareLinkById`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateShareLink {
    active: Option<bool>,
    name: Option<String>,
}

/// `updateSiteShareLinkById`: name and state; an inactive link opens nothing.
pub async fn update_site_share_link(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<UpdateShareLink>,
) -> ApiResult<Json<ShareLink>> {
    let link = share_links::update(&state, &ctx.site.id, &id, body.name, body.active).await?;
    Ok(Json(types::share_link(&state, &ctx.site, &link)))
}

/// `deleteSiteShareLinkById`: 204, also when absent.
pub async fn delete_site_share_link(
    State(state): State<AppState>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    if let Some(Extension(ctx)) = ctx {
        share_links::delete(&state, &ctx.site.id, &id).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}
