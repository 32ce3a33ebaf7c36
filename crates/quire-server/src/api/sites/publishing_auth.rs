//! Visitor authentication settings of a site (`SITE/publishing/auth`): the private key that
//! signs visitor tokens, the fallback URL and the backend.
//!
//! All three operations are the organization admins' (`SiteAdmin`), the read included: the
//! answer holds `privateKey`, a secret with which anyone could sign themselves into a
//! `visitor-auth` site, and the family already keeps its secrets (share-link keys) from
//! members who may otherwise read sites.

use axum::extract::State;
use axum::Extension;
use serde::Deserialize;

use super::types::{self, SitePublishingAuth};
use crate::domain::access::SiteCtx;
use crate::domain::visitor;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::state::AppState;
use crate::store;
use crate::store::sites::PublishingAuthPatch;
use crate::validate::nullable;
use crate::values::VisitorAuthBackend;

/// `getSitePublishingAuthById`: the settings, created with a new key on first read.
pub async fn get_site_publishing_auth(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
) -> ApiResult<Json<SitePublishingAuth>> {
    let auth = visitor::settings(&state, &ctx.site.id).await?;
    Ok(Json(types::publishing_auth(auth)))
}

/// Body of `updateSitePublishingAuthById` (`SitePublishingAuthUpdate`): `backend` is required
/// by both branches of the official schema; `fallbackURL` is left as it is when absent and
/// unset by `null`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdatePublishingAuth {
    backend: VisitorAuthBackend,
    #[serde(default, rename = "fallbackURL", deserialize_with = "nullable")]
    fallback_url: Option<Option<String>>,
}

/// `fallbackURL`: an absolute http(s) URL with a host, since visitors are sent there.
fn check_fallback_url(value: &str) -> ApiResult<()> {
    crate::validate::url("fallbackURL", value)?;
    match url::Url::parse(value) {
        Ok(u) if u.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        _ => Err(ApiError::bad_request(
            "`fallbackURL` must be an absolute http(s) URL of at most 2048 characters.",
        )),
    }
}

/// `updateSitePublishingAuthById`: changes the backend and, when given, the fallback URL.
/// The `integration` backend needs an authenticated-access integration installed on the
/// site, and Quire installs none, so it is refused.
pub async fn update_site_publishing_auth(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<UpdatePublishingAuth>,
) -> ApiResult<Json<SitePublishingAuth>> {
    if let Some(Some(url)) = &body.fallback_url {
        check_fallback_url(url)?;
    }
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(&ctx.site.id)]);
    let current = visitor::locked_settings(&state, &mut tx, &ctx.site).await?;
    if body.backend == VisitorAuthBackend::Integration && current.integration.is_none() {
        return Err(ApiError::bad_request(
            "`backend`: `integration` needs an authenticated-access integration installed on the site, and this site has none.",
        ));
    }
    let patch = PublishingAuthPatch {
        backend: Some(body.backend),
        fallback_url: body.fallback_url,
        ..PublishingAuthPatch::default()
    };
    store::sites::patch_publishing_auth(&mut tx, &ctx.site.id, &patch, state.now()).await?;
    let row = store::sites::publishing_auth_tx(&mut tx, &ctx.site.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("publishing auth not stored")))?;
    tx.commit().await?;
    Ok(Json(types::publishing_auth(row)))
}

/// `regenerateSitePublishingAuthById`: a new private key; tokens signed with the old one are
/// refused from the commit on (every check reads the key as stored).
pub async fn regenerate_site_publishing_auth(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
) -> ApiResult<Json<SitePublishingAuth>> {
    let row = visitor::regenerate(&state, &ctx.site).await?;
    Ok(Json(types::publishing_auth(row)))
}
