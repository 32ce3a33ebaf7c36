//! Quire's account page, for people signed in through SSO: `GET /account` shows the
//! organization whose single sign-on opened the session and the API tokens made for it;
//! forms create (`POST /account/tokens`) and revoke (`POST /account/tokens/{tokenId}/revoke`)
//! such tokens, link another provider to the account (`POST /account/link`) and sign out
//! (`POST /account/logout`). A session acts only within its organization: its tokens are
//! confined to it, and the page shows nothing of the account beyond it. Every form carries
//! the session's CSRF token and must come from Quire's own origin; the pages are escaped
//! HTML with no script.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use quire_content::html::{escape_attr as attr, escape_text as text};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::pages::CSP;
use crate::clock::iso;
use crate::domain::saml::login::{session, session_cookie};
use crate::domain::saml::Refusal;
use crate::state::AppState;
use crate::store;
use crate::store::saml::SessionRow;

/// Most tokens and organizations the page lists.
const LIST_LIMIT: i64 = 200;

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
    label: Option<String>,
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

/// `GET /account`.
pub async fn show(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match current(&state, &headers).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    match render(&state, &session, None).await {
        Ok(res) => res,
        Err(e) => internal(e),
    }
}

async fn render(
    state: &AppState,
    session: &SessionRow,
    new_token: Option<&str>,
) -> sqlx::Result<Response> {
    let user = store::users::get(&state.db, &session.user_id).await?;
    let mut orgs = store::saml::account_orgs(&state.db, &session.user_id, LIST_LIMIT).await?;
    orgs.retain(|o| o.id == session.org_id);
    let tokens = store::tokens::list_live(
        &state.db,
        &session.user_id,
        Some(&session.org_id),
        LIST_LIMIT,
    )
    .await?;
    let csrf = attr(&session.csrf);
    let mut body = String::new();
    if let Some(user) = &user {
        body.push_str(&format!(
            "<p>Signed in as <strong>{}</strong> ({}).</p>\n",
            text(&user.display_name),
            text(&user.email)
        ));
    }
    if let Some(token) = new_token {
        body.push_str(&format!(
            "<section><h2>New API token</h2><p>Copy it now: Quire shows it only once.</p>\
<p><code id=\"new-token\">{}</code></p></section>\n",
            text(token)
        ));
    }
    body.push_str("<section><h2>Organization</h2>\n<p>This session was opened by the organization's single sign-on: it and its tokens act only within it.</p>\n<ul>\n");
    for org in &orgs {
        body.push_str(&format!(
            "<li data-org=\"{}\">{} — {}{}{}</li>\n",
            attr(&org.id),
            text(&org.title),
            text(org.role.as_deref().unwrap_or("guest")),
            if org.sso_member != 0 {
                ", SSO member"
            } else {
                ""
            },
            if org.enforced != 0 {
                ", SSO enforced"
            } else {
                ""
            },
        ));
    }
    body.push_str("</ul></section>\n<section><h2>API tokens</h2>\n<ul>\n");
    for token in &tokens {
        body.push_str(&format!(
            "<li data-token=\"{id}\">{label} (created {created}) \
<form method=\"post\" action=\"/account/tokens/{id}/revoke\">\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><button type=\"submit\">Revoke</button></form></li>\n",
            id = attr(&token.id),
            label = text(token.label.as_deref().unwrap_or("(unnamed)")),
            created = text(&iso(token.created_at)),
        ));
    }
    body.push_str(&format!(
        "</ul>\n<form method=\"post\" action=\"/account/tokens\">\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<label>Label <input name=\"label\" required maxlength=\"64\"></label> \
<button type=\"submit\">Create a token</button></form></section>\n\
<section><h2>Single sign-on</h2><p>Link another organization's SAML provider to this account: \
you will sign in there, as this account's address.</p>\
<form method=\"post\" action=\"/account/link\">\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<label>Provider id <input name=\"provider\" required maxlength=\"64\"></label> \
<button type=\"submit\">Link</button></form></section>\n\
<form method=\"post\" action=\"/account/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<button type=\"submit\">Sign out</button></form>\n"
    ));
    Ok(page(StatusCode::OK, "Your account", body))
}

/// `POST /account/tokens`: a new personal API token, shown once.
pub async fn create_token(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let session = match current(&state, &headers).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let form = match form(&state, &headers, &session, body).await {
        Ok(f) => f,
        Err(res) => return res,
    };
    let label = form.label.unwrap_or_default().trim().to_string();
    if label.is_empty() || label.chars().count() > 64 {
        return page(
            StatusCode::BAD_REQUEST,
            "Token not created",
            "<p>A token needs a label of 1 to 64 characters.</p>\n".into(),
        );
    }
    let created = store::tokens::create_labelled(
        &state.db,
        &session.user_id,
        &label,
        Some(&session.org_id),
        state.now(),
    )
    .await;
    match created {
        Ok((id, token)) => {
            tracing::info!(user = %session.user_id, token = %id, "API token created from the account page");
            render(&state, &session, Some(&token))
                .await
                .unwrap_or_else(internal)
        }
        Err(e) => internal(e),
    }
}

/// `POST /account/tokens/{tokenId}/revoke`.
pub async fn revoke_token(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let session = match current(&state, &headers).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    if let Err(res) = form(&state, &headers, &session, body).await {
        return res;
    }
    let revoked = store::tokens::revoke_by_id(
        &state.db,
        &session.user_id,
        Some(&session.org_id),
        &id,
        state.now(),
    )
    .await;
    match revoked {
        Ok(revoked) => {
            if revoked {
                tracing::info!(user = %session.user_id, token = %id, "API token revoked from the account page");
            }
            see_other("/account", None)
        }
        Err(e) => internal(e),
    }
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
