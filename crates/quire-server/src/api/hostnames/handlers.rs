//! `getCustomHostname`, `dnsRevalidateCustomHostname`, `removeCustomHostname`,
//! `getSubdomain`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use serde::Serialize;

use crate::domain::auth::Caller;
use crate::domain::hostnames;
use crate::error::{ApiError, ApiResult};
use crate::http::json::Json;
use crate::state::AppState;

/// `OrganizationPointer` or `SitePointer`.
#[derive(Serialize)]
pub struct Pointer {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    site: Option<String>,
}

/// `CustomHostname`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomHostname {
    object: &'static str,
    hostname: String,
    target: Pointer,
    is_active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    urls: Urls,
}

/// `CustomHostname.urls`.
#[derive(Serialize)]
pub struct Urls {
    location: String,
}

/// `getCustomHostname`: the site holding it, active (served) while the site is published
/// and the hostname's control is proven; its status is the latest check's (none before the
/// first, never `live` before the proof).
pub async fn get_custom_hostname(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(hostname): Path<String>,
) -> ApiResult<Json<CustomHostname>> {
    let hostname = hostname.to_ascii_lowercase();
    let holder = hostnames::administered(&state, &caller, &hostname).await?;
    Ok(Json(CustomHostname {
        object: "custom-hostname",
        urls: Urls {
            location: state.url(&format!("/v1/custom-hostnames/{hostname}")),
        },
        hostname,
        target: Pointer {
            kind: "site",
            organization: None,
            site: Some(holder.site_id),
        },
        is_active: holder.published != 0 && holder.hostname_verified_at.is_some(),
        status: holder.hostname_status,
    }))
}

/// `dnsRevalidateCustomHostname`: checks the name's DNS and the proof of its control now;
/// `getCustomHostname` reports it.
pub async fn revalidate_custom_hostname(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(hostname): Path<String>,
) -> ApiResult<StatusCode> {
    hostnames::revalidate(&state, &caller, &hostname).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `removeCustomHostname`: `205` when the site's hostname is removed, `204` when there was
/// none (or it is not the caller's to remove).
pub async fn remove_custom_hostname(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(hostname): Path<String>,
) -> ApiResult<StatusCode> {
    Ok(match hostnames::remove(&state, &caller, &hostname).await? {
        true => StatusCode::RESET_CONTENT,
        false => StatusCode::NO_CONTENT,
    })
}

/// `Subdomain`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subdomain {
    object: &'static str,
    subdomain: String,
    target: Pointer,
    is_active: bool,
}

/// `getSubdomain`: the organization whose hostname it is. Subdomains are public addresses,
/// so any signed-in user may ask; `isActive` says whether this server serves them
/// (`--sites-domain`).
pub async fn get_subdomain(
    State(state): State<AppState>,
    Path(subdomain): Path<String>,
) -> ApiResult<Json<Subdomain>> {
    let missing = || ApiError::not_found(format!("Subdomain `{subdomain}` not found."));
    if subdomain.len() > 32 {
        return Err(missing());
    }
    let org = hostnames::subdomain_owner(&state, &subdomain.to_ascii_lowercase())
        .await?
        .ok_or_else(missing)?;
    Ok(Json(Subdomain {
        object: "subdomain",
        subdomain: subdomain.to_ascii_lowercase(),
        target: Pointer {
            kind: "organization",
            organization: Some(org),
            site: None,
        },
        is_active: state.config.sites_domain.is_some(),
    }))
}
