//! `resolvePublishedContentByUrl`.

use crate::http::json::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::published::{self, Scope};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::state::AppState;

/// `SiteVisitorPayload`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Visitor {
    jwt_token: Option<String>,
    unsigned_claims: Option<Value>,
}

/// Body of `resolvePublishedContentByUrl`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResolveBody {
    url: String,
    /// Accepted for compatibility: Quire answers 404 instead of redirecting.
    #[serde(default)]
    #[allow(dead_code)]
    redirect_on_error: bool,
    visitor: Option<Visitor>,
}

/// `PublishedSiteContent`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedSiteContent {
    site: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    site_section: Option<String>,
    site_space: String,
    space: String,
    revision: String,
    pathname: String,
    base_path: String,
    site_base_path: String,
    api_token: String,
    organization: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    share_key: Option<String>,
    complete: bool,
    canonical_url: String,
}

/// `resolvePublishedContentByUrl`: the site, section, site space, space and revision a
/// published URL shows to this visitor, with a read-only token scoped to them; 404 when it
/// shows nothing they may read.
pub async fn resolve_published_content_by_url(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<ResolveBody>,
) -> ApiResult<Json<PublishedSiteContent>> {
    crate::validate::length("url", &body.url, 1, 2048)?;
    let visitor = body.visitor.unwrap_or_default();
    if visitor.jwt_token.is_some() {
        return Err(ApiError::bad_request(
            "`visitor.jwtToken`: visitor-authenticated access is not available on this server.",
        ));
    }
    if let Some(claims) = &visitor.unsigned_claims {
        if !claims.is_object() {
            return Err(ApiError::bad_request(
                "`visitor.unsignedClaims` must be an object.",
            ));
        }
    }
    let context = published::visitor_context(visitor.unsigned_claims.as_ref());
    let r = published::resolve(&state, &body.url, &context).await?;
    let api_token = published::issue(
        &state,
        Scope {
            org: r.site.org_id.clone(),
            site: r.site.id.clone(),
            site_space: r.site_space.id.clone(),
            space: r.site_space.space_id.clone(),
            revision: r.space_revision.clone(),
        },
    )?;
    let canonical_url = if r.pathname.is_empty() {
        state.url(&r.base_path)
    } else {
        state.url(&format!("{}{}", r.base_path, r.pathname))
    };
    Ok(Json(PublishedSiteContent {
        site: r.site.id.clone(),
        site_section: r.section.map(|s| s.id),
        site_space: r.site_space.id.clone(),
        space: r.site_space.space_id.clone(),
        revision: r.space_revision,
        pathname: r.pathname,
        base_path: r.base_path,
        site_base_path: r.site_base_path,
        api_token,
        organization: r.site.org_id,
        share_key: r.share_key,
        complete: true,
        canonical_url,
    }))
}
