//! `SITE/site-spaces/{siteSpaceId}/customization`: what a site space overrides of its site's
//! customization (the merge itself in `domain::site_settings`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use serde_json::Value;

use crate::domain::access::{OrgCtx, SiteCtx};
use crate::domain::site_settings;
use crate::domain::site_structure::check_customization;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::state::AppState;

/// `getSiteSpaceCustomizationById`: the site's customization with the site space's override
/// on top.
pub async fn get_site_space_customization(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<Json<Value>> {
    Ok(Json(site_settings::get(&state, &ctx.site, &id).await?))
}

/// `overrideSiteSpaceCustomizationById`: fields left out stay as they were, `null` resets
/// one to the site's.
pub async fn override_site_space_customization(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<Value>,
) -> ApiResult<Json<Value>> {
    let Value::Object(fields) = body else {
        return Err(ApiError::bad_request("The body must be a JSON object."));
    };
    Ok(Json(
        site_settings::override_with(
            &state,
            &org.org.id,
            &ctx.site.id,
            &id,
            fields,
            check_customization,
        )
        .await?,
    ))
}

/// `deleteSiteSpaceCustomizationById`: 205 when an override was removed, 204 when there was
/// none.
pub async fn delete_site_space_customization(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    let Some(Extension(ctx)) = ctx else {
        return Ok(StatusCode::NO_CONTENT);
    };
    Ok(
        if site_settings::remove(&state, &org.org.id, &ctx.site.id, &id).await? {
            StatusCode::RESET_CONTENT
        } else {
            StatusCode::NO_CONTENT
        },
    )
}
