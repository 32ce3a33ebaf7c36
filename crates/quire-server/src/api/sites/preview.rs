//! `getSitePublishingPreviewById` (`SITE/publishing/preview`): a URL opening the published
//! site as a visitor with the given claims would see it, for an hour (`domain::site_preview`).

use axum::extract::State;
use axum::Extension;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::access::SiteCtx;
use crate::domain::site_preview;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::QueryParams;
use crate::http::json::Json;
use crate::state::AppState;

/// Query of `getSitePublishingPreviewById`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PreviewQuery {
    site_space: Option<String>,
    claims: Option<String>,
}

/// Answer of `getSitePublishingPreviewById`.
#[derive(Serialize)]
pub struct Preview {
    url: String,
}

/// `getSitePublishingPreviewById`: admins only, since the URL carries a token signed with
/// the site's key (it opens a `visitor-auth` site).
pub async fn get_site_publishing_preview(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    QueryParams(q): QueryParams<PreviewQuery>,
) -> ApiResult<Json<Preview>> {
    let claims = match q.claims.as_deref() {
        None | Some("") => serde_json::Map::new(),
        Some(text) => match site_preview::parse_rison(text)? {
            Value::Object(map) => map,
            _ => return Err(ApiError::bad_request(
                "Invalid query parameter `claims`: it must be a Rison object, such as `(beta:!t)`.",
            )),
        },
    };
    let url = site_preview::preview_url(&state, &ctx.site, q.site_space.as_deref(), claims).await?;
    Ok(Json(Preview { url }))
}
