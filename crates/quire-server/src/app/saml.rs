//! The browser side of SAML logins, outside `/v1`: `GET /saml/{id}/metadata` (Quire's
//! service-provider metadata), `GET /saml/{id}/start` (off to the identity provider with an
//! AuthnRequest) and `POST /saml/{id}/acs` (the identity provider's signed response, which
//! opens a session and lands in the app, at the organization; the session is the app's too,
//! confined to that organization, and the account page holds its API tokens). Every refusal
//! is a page of the app's shell with a 4xx status and a log line.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;

use maud::html;

use super::shell;
use crate::domain::auth::authenticate;
use crate::domain::saml::login::complete;
use crate::domain::saml::verify::{verify, Expected};
use crate::domain::saml::{
    self, parse_certificate, service_urls, LoginError, Refusal, MAX_RESPONSE_BYTES, SKEW_MS,
};
use crate::error::{error_response, ApiError};
use crate::state::AppState;
use crate::store;
use crate::store::saml::ProviderRow;

/// Where a login started by Quire asks the identity provider to send the browser back
/// (`RelayState`); the login itself lands in the app, at the organization.
const LANDING: &str = "/account";

async fn provider(state: &AppState, id: &str) -> Result<ProviderRow, Response> {
    match store::saml::get_by_id(&state.db, id).await {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err(refused(
            id,
            &Refusal::new(
                404,
                "There is no such SAML provider (it may have been deleted).",
            ),
        )),
        Err(e) => Err(internal(e.into())),
    }
}

/// A page of the app's shell, never cached (a login's answers are one person's).
fn page(status: StatusCode, title: &str, why: &str) -> Response {
    let body = html! {
        h1 { (title) }
        p.error role="alert" { (why) }
        p { a href="/" { "Back to the home page" } }
    };
    let mut res = shell::page(status, title, None, None, body);
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The page of a refused sign-in, and its log line.
fn refused(provider: &str, r: &Refusal) -> Response {
    tracing::warn!(provider = %provider, status = r.status, reason = %r.reason, "SAML login refused");
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::FORBIDDEN);
    page(status, "Sign-in refused", &r.reason)
}

fn internal(e: anyhow::Error) -> Response {
    tracing::error!(error = %e, "SAML login failed inside Quire");
    page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Sign-in failed",
        "Quire could not complete the sign-in. Try again later.",
    )
}

fn failed(provider: &str, e: LoginError) -> Response {
    match e {
        LoginError::Refused(r) => refused(provider, &r),
        LoginError::Internal(e) => internal(e),
    }
}

/// `GET /saml/{id}/metadata`: Quire's service-provider metadata for the provider.
pub async fn metadata(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let p = match provider(&state, &id).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let xml = saml::metadata_xml(&service_urls(&state, &p.id));
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/samlmetadata+xml"),
        )],
        xml,
    )
        .into_response()
}

/// `GET /saml/{id}/start`: 302 to the identity provider with a new AuthnRequest.
pub async fn start(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let p = match provider(&state, &id).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    match saml::start(&state, &p, Some(LANDING), None).await {
        Ok(url) => match HeaderValue::from_str(&url) {
            Ok(location) => {
                let mut res = StatusCode::FOUND.into_response();
                res.headers_mut().insert(header::LOCATION, location);
                res.headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                res
            }
            Err(e) => internal(e.into()),
        },
        Err(e) => failed(&id, e),
    }
}

/// `POST /saml/{id}/link`, with an API token of the account's: the identity provider's URL
/// (`{"url": ...}`) where its owner signs in to link provider `id` to the account. For
/// accounts without a browser session; the URL is good for one login within ten minutes.
pub async fn link(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Response {
    let caller = match authenticate(&state, &headers).await {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    match saml::link(&state, &id, caller.user.id.as_str()).await {
        Ok(url) => {
            tracing::info!(provider = %id, user = %caller.user.id, "SAML link started");
            let mut res = axum::Json(serde_json::json!({ "url": url })).into_response();
            res.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            res
        }
        Err(LoginError::Refused(r)) => error_response(
            StatusCode::from_u16(r.status).unwrap_or(StatusCode::FORBIDDEN),
            &r.reason,
        ),
        Err(LoginError::Internal(e)) => ApiError::internal(e).into_response(),
    }
}

/// The HTTP-POST binding's form.
#[derive(Deserialize)]
struct AcsForm {
    #[serde(rename = "SAMLResponse")]
    saml_response: Option<String>,
}

/// `POST /saml/{id}/acs`: checks the identity provider's response, then signs the user in.
pub async fn acs(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let p = match provider(&state, &id).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    // Base64 and form encoding make the posted form larger than the response it carries.
    let Ok(bytes) = axum::body::to_bytes(body, MAX_RESPONSE_BYTES * 3).await else {
        return refused(
            &id,
            &Refusal::new(413, "The posted SAML response is too large."),
        );
    };
    let encoded = serde_html_form::from_bytes::<AcsForm>(&bytes)
        .ok()
        .and_then(|f| f.saml_response)
        .filter(|v| !v.is_empty());
    let Some(encoded) = encoded else {
        return refused(
            &id,
            &Refusal::new(
                400,
                "The request carries no SAMLResponse (HTTP-POST binding).",
            ),
        );
    };
    let compact: String = encoded.chars().filter(|c| !c.is_whitespace()).collect();
    let xml = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .ok()
        .filter(|x| x.len() <= MAX_RESPONSE_BYTES)
        .and_then(|x| String::from_utf8(x).ok());
    let Some(xml) = xml else {
        return refused(
            &id,
            &Refusal::new(
                400,
                "The SAMLResponse is not base64-encoded UTF-8 XML of at most 256 KiB.",
            ),
        );
    };
    if !p.is_active() {
        return refused(
            &id,
            &Refusal::new(409, "This SAML provider is not fully configured."),
        );
    }
    let certificate = match parse_certificate(&p.certificate) {
        Ok(c) => c,
        Err(why) => {
            return refused(
                &id,
                &Refusal::new(409, format!("The provider's certificate {why}.")),
            )
        }
    };
    let urls = service_urls(&state, &p.id);
    let expected = Expected {
        issuer: p.entity_id.clone(),
        certificate,
        acs: urls.acs,
        audience: urls.entity_id,
        now: state.now(),
        skew: SKEW_MS,
    };
    // Signature checks are CPU work: off the async threads.
    let verified = tokio::task::spawn_blocking(move || verify(&xml, &expected)).await;
    let verified = match verified {
        Ok(Ok(v)) => v,
        Ok(Err(r)) => return refused(&id, &r),
        Err(e) => return internal(e.into()),
    };
    // The login runs to its end even if the browser leaves (see `http::access`).
    let finished = {
        let (state, p) = (state.clone(), p.clone());
        let agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        tokio::spawn(async move { complete(&state, &p, &verified, &agent).await }).await
    };
    let opened = match finished {
        Ok(opened) => opened,
        Err(e) => return internal(e.into()),
    };
    match opened {
        Ok(opened) => {
            tracing::info!(provider = %p.id, org = %p.org_id, user = %opened.user_id, "SAML login");
            let mut res = StatusCode::SEE_OTHER.into_response();
            let h = res.headers_mut();
            // Into the app, at the organization the login is for.
            let landing = format!("/o/{}", p.org_id);
            if let Ok(v) = HeaderValue::from_str(&landing) {
                h.insert(header::LOCATION, v);
            }
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            crate::http::cookies::set(
                h,
                &state.public_url,
                crate::http::cookies::SESSION,
                "/",
                Some(&opened.secret),
                Some(saml::SESSION_TTL_MS / 1000),
            );
            res
        }
        Err(e) => failed(&id, e),
    }
}
