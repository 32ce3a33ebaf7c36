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
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::pagination::{List, PageRequest};
use crate::ids::{new_id, random_string};
use crate::state::AppState;
use crate::store;
use crate::store::sites::ShareLinkRow;

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
    crate::validate::length("name", &body.name, 0, 50)?;
    let link = ShareLinkRow {
        id: new_id(),
        site_id: ctx.site.id.clone(),
        name: body.name,
        // 32 random characters: the key is the whole secret of the link.
        share_key: random_string(32),
        active: 1,
        created_at: state.now(),
    };
    let mut tx = state.db.begin().await?;
    store::sites::insert_share_link(&mut tx, &link).await?;
    tx.commit().await?;
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
    if body.active.is_none() && body.name.is_none() {
        return Err(ApiError::bad_request(
            "Request body must set `active` or `name`.",
        ));
    }
    if let Some(name) = &body.name {
        crate::validate::length("name", name, 0, 50)?;
    }
    let mut tx = state.db.begin().await?;
    let mut link = store::sites::get_share_link_tx(&mut tx, &ctx.site.id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Share link `{id}` not found.")))?;
    if let Some(name) = body.name {
        link.name = name;
    }
    if let Some(active) = body.active {
        link.active = i64::from(active);
    }
    store::sites::update_share_link(&mut tx, &link).await?;
    tx.commit().await?;
    Ok(Json(types::share_link(&state, &ctx.site, &link)))
}

/// `deleteSiteShareLinkById`: 204, also when absent.
pub async fn delete_site_share_link(
    State(state): State<AppState>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    if let Some(Extension(ctx)) = ctx {
        let mut tx = state.db.begin().await?;
        store::sites::delete_share_link(&mut tx, &ctx.site.id, &id).await?;
        tx.commit().await?;
    }
    Ok(StatusCode::NO_CONTENT)
}
