//! The single sign-on session's own forms beside the app's account screen
//! (`app::account`): link another provider to the account (`POST /account/link`) and end
//! the session (`POST /account/logout`); and the pages of a refused sign-in. Every form
//! carries the session's CSRF token and must come from Quire's own origin; the pages are
//! escaped HTML with no script.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use quire_content::html::escape_text as text;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::pages::CSP;
use crate::domain::saml::login::{session, session_cookie};
use crate::domain::saml::Refusal;
use crate::state::AppState;
use crate::store;
use crate::store::saml::SessionRow;

/// An HTML page: escaped by the caller, no script, never cached.
pub fn page(status: StatusCode, title: &str, body: String) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{} · Quire</title></head><body><main>\n<h1>{}</h1>\n{body}</main></body></html>\n",
        text(title),
        text(title)
    );
    let mut res = (status, html).into_response();
    crate::http::download::page_headers(&mut res, CSP, "no-referrer");
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The error page of a refused sign-in, and its log line.
pub fn refused(provider: &str, r: &Refusal) -> Response {
    tracing::warn!(provider = %provider, status = r.status, reason = %r.reason, "SAML login refused");
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::FORBIDDEN);
    page(
        status,
        "Sign-in refused",
        format!("<p>{}</p>\n", text(&r.reason)),
    )
}

fn internal(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "account page failed");
    page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "<p>Quire could not answer. Try again later.</p>\n".into(),
    )
}

fn signed_out() -> Response {
    page(
        StatusCode::UNAUTHORIZED,
        "Not signed in",
        "<p>Sign in through your organization's single sign-on to see your account.</p>\n".into(),
    )
}

/// The session of a request, or the page to answer instead.
async fn current(state: &AppState, headers: &HeaderMap) -> Result<SessionRow, Response> {
    match session(state, headers).await {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(signed_out()),
        Err(e) => Err(internal(e)),
    }
}

/// A form's fields.
#[derive(Deserialize, Default)]
struct Form {
    csrf: Option<String>,
    provider: Option<String>,
}

/// The form of a state-changing request, once its origin and CSRF token are checked.
async fn form(
    state: &AppState,
    headers: &HeaderMap,
    session: &SessionRow,
    body: Body,
) -> Result<Form, Response> {
    let forbidden = |why: &str| {
        tracing::warn!(session = %session.id, reason = why, "account form refused");
        page(
            StatusCode::FORBIDDEN,
            "Request refused",
            format!("<p>{}</p>\n", text(why)),
        )
    };
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ours = url::Url::parse(&state.public_url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        if origin.to_str().ok() != Some(ours.as_str()) {
            return Err(forbidden("This form must be sent from Quire's own pages."));
        }
    }
    let Ok(bytes) = axum::body::to_bytes(body, 16 * 1024).await else {
        return Err(forbidden("The form is too large."));
    };
    let form: Form = serde_html_form::from_bytes(&bytes).unwrap_or_default();
    let given = Sha256::digest(form.csrf.as_deref().unwrap_or("").as_bytes());
    let want = Sha256::digest(session.csrf.as_bytes());
    if given != want {
        return Err(forbidden(
            "The form has expired: reload the account page and try again.",
        ));
    }
    Ok(form)
}

/// `POST /account/link`: off to the provider named in the form, to link it to the account.
pub async fn link(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let session = match current(&state, &headers).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let form = match form(&state, &headers, &session, body).await {
        Ok(f) => f,
        Err(res) => return res,
    };
    let id = form.provider.unwrap_or_default();
    let id = id.trim();
    match crate::domain::saml::link(&state, id, &session.user_id).await {
        Ok(url) => match HeaderValue::from_str(&url) {
            Ok(location) => {
                let mut res = StatusCode::SEE_OTHER.into_response();
                res.headers_mut().insert(header::LOCATION, location);
                res
            }
            Err(_) => refused(
                id,
                &Refusal::new(409, "The provider's sign-in URL is not usable."),
            ),
        },
        Err(crate::domain::saml::LoginError::Refused(r)) => refused(id, &r),
        Err(crate::domain::saml::LoginError::Internal(e)) => internal(e),
    }
}

/// `POST /account/logout`.
pub async fn logout(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let session = match current(&state, &headers).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    if let Err(res) = form(&state, &headers, &session, body).await {
        return res;
    }
    match store::saml::delete_session(&state.db, &session.id).await {
        Ok(()) => see_other("/account", Some(session_cookie(&state, None))),
        Err(e) => internal(e),
    }
}

fn see_other(to: &'static str, cookie: Option<String>) -> Response {
    let mut res = StatusCode::SEE_OTHER.into_response();
    let h = res.headers_mut();
    h.insert(header::LOCATION, HeaderValue::from_static(to));
    if let Some(v) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::SET_COOKIE, v);
    }
    res
}
