//! The account screen (`/account`), one for every kind of session: who is signed in, their
//! personal API tokens (made with a label and shown once, listed, revoked), and the way to
//! their sessions. A session opened by an organization's single sign-on acts only within that
//! organization: the screen shows it, its tokens are confined to it, and it can link
//! another provider (`/account/link`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use serde::Deserialize;

use super::session::{NoFields, Posted, Signed};
use super::shell::{failed, page, see_other};
use crate::clock::iso;
use crate::state::AppState;
use crate::store;

const HERE: &str = "/account";

/// Most tokens and organizations the screen lists.
const LIST_LIMIT: i64 = 200;

/// Longest label of a token, in characters.
const LABEL_CHARS: usize = 64;

/// `GET /account`.
pub async fn show(State(state): State<AppState>, signed: Signed) -> Response {
    render(&state, &signed, StatusCode::OK, None, None).await
}

/// The screen, with a token just made (shown once) or a problem at its top.
async fn render(
    state: &AppState,
    signed: &Signed,
    status: StatusCode,
    new_token: Option<&str>,
    problem: Option<&str>,
) -> Response {
    let user = signed.user.id.as_str();
    let scope = signed.scope.as_ref().map(|o| o.as_str());
    let tokens = match store::tokens::list_live(&state.db, user, scope, LIST_LIMIT).await {
        Ok(t) => t,
        Err(e) => return failed(e),
    };
    let orgs = match scope {
        Some(org) => match store::saml::account_orgs(&state.db, user, LIST_LIMIT).await {
            Ok(mut orgs) => {
                orgs.retain(|o| o.id == org);
                orgs
            }
            Err(e) => return failed(e),
        },
        None => Vec::new(),
    };
    let csrf = signed.session.csrf.as_str();
    let body = html! {
        h1 { "Your account" }
        p { "Signed in as " strong { (signed.user.display_name) } " (" (signed.user.email) ")." }
        @if let Some(problem) = problem {
            p.error role="alert" { (problem) }
        }
        @if let Some(token) = new_token {
            section.notice aria-labelledby="new-token-title" {
                h2 #new-token-title { "New API token" }
                p { "Copy it now: Quire shows it only once." }
                p { code #new-token { (token) } }
            }
        }
        @if scope.is_some() {
            section aria-labelledby="org-title" {
                h2 #org-title { "Organization" }
                p { "This session was opened by the organization's single sign-on: it and its tokens act only within it." }
                ul {
                    @for org in &orgs {
                        li data-org=(org.id) {
                            (org.title) " — " (org.role.as_deref().unwrap_or("guest"))
                            @if org.sso_member != 0 { ", SSO member" }
                            @if org.enforced != 0 { ", SSO enforced" }
                        }
                    }
                }
            }
        } @else {
            p { a href="/account/sessions" { "Your sessions" } ": where you are signed in, and signing out everywhere." }
        }
        section aria-labelledby="tokens-title" {
            h2 #tokens-title { "API tokens" }
            p.muted {
                "A token acts as you through the API and git: send it as "
                code { "Authorization: Bearer …" }
                ", or give it as the password when git asks. Revoke one you no longer use."
            }
            @if tokens.is_empty() {
                p { "No tokens yet." }
            } @else {
                table {
                    thead { tr {
                        th scope="col" { "Label" }
                        th scope="col" { "Made" }
                        th scope="col" { span.skip { "Action" } }
                    } }
                    tbody {
                        @for token in &tokens {
                            tr data-token=(token.id) {
                                td { (token.label.as_deref().unwrap_or("(unnamed)")) }
                                td { (iso(token.created_at)) }
                                td {
                                    form method="post" action={ "/account/tokens/" (token.id) "/revoke" } {
                                        input type="hidden" name="csrf" value=(csrf);
                                        button.link type="submit" aria-label={ "Revoke " (token.label.as_deref().unwrap_or("(unnamed)")) } { "Revoke" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            form method="post" action="/account/tokens" {
                input type="hidden" name="csrf" value=(csrf);
                label { "Label " input name="label" required maxlength=(LABEL_CHARS) placeholder="laptop"; }
                " "
                button type="submit" { "Create a token" }
            }
        }
        @if scope.is_some() {
            section aria-labelledby="sso-title" {
                h2 #sso-title { "Single sign-on" }
                p { "Link another organization's SAML provider to this account: you will sign in there, as this account's address." }
                form method="post" action="/account/link" {
                    input type="hidden" name="csrf" value=(csrf);
                    label { "Provider id " input name="provider" required maxlength="64"; }
                    " "
                    button type="submit" { "Link" }
                }
            }
        }
    };
    page(status, "Your account", Some(&signed.viewer()), None, body)
}

/// The form of `POST /account/tokens`.
#[derive(Deserialize)]
pub struct NewToken {
    label: String,
}

/// `POST /account/tokens`: a new personal API token (confined to the session's organization
/// for a single sign-on session), shown once.
pub async fn create_token(
    State(state): State<AppState>,
    signed: Signed,
    Posted(form): Posted<NewToken>,
) -> Response {
    let label = form.label.trim();
    if label.is_empty() || label.chars().count() > LABEL_CHARS {
        let why = format!("`label`: a token needs a label of 1 to {LABEL_CHARS} characters.");
        return render(&state, &signed, StatusCode::BAD_REQUEST, None, Some(&why)).await;
    }
    let user = signed.user.id.as_str();
    let scope = signed.scope.as_ref().map(|o| o.as_str());
    match store::tokens::create_labelled(&state.db, user, label, scope, state.now()).await {
        Ok((id, token)) => {
            tracing::info!(user = %user, token = %id, "API token created from the account page");
            render(&state, &signed, StatusCode::OK, Some(&token), None).await
        }
        Err(e) => failed(e),
    }
}

/// `POST /account/tokens/{tokenId}/revoke`.
pub async fn revoke_token(
    State(state): State<AppState>,
    Path(id): Path<String>,
    signed: Signed,
    Posted(_): Posted<NoFields>,
) -> Response {
    let user = signed.user.id.as_str();
    let scope = signed.scope.as_ref().map(|o| o.as_str());
    match store::tokens::revoke_by_id(&state.db, user, scope, &id, state.now()).await {
        Ok(revoked) => {
            if revoked {
                tracing::info!(user = %user, token = %id, "API token revoked from the account page");
            }
            see_other(HERE)
        }
        Err(e) => failed(e),
    }
}

/// The form of `POST /account/link`.
#[derive(Deserialize)]
pub struct Link {
    provider: String,
}

/// `POST /account/link`: off to the SAML provider named in the form, to link it to the
/// account (its login must assert the account's own address).
pub async fn link(
    State(state): State<AppState>,
    signed: Signed,
    Posted(form): Posted<Link>,
) -> Response {
    let id = form.provider.trim();
    use crate::domain::saml::{LoginError, Refusal};
    let refusal = match crate::domain::saml::link(&state, id, signed.user.id.as_str()).await {
        Ok(url) if url.parse::<axum::http::HeaderValue>().is_ok() => return see_other(&url),
        Ok(_) => Refusal::new(409, "The provider's sign-in URL is not usable."),
        Err(LoginError::Refused(r)) => r,
        Err(LoginError::Internal(e)) => return failed(e),
    };
    tracing::warn!(provider = %id, status = refusal.status, reason = %refusal.reason, "SAML link refused");
    let body = html! {
        h1 { "Not linked" }
        p.error role="alert" { (refusal.reason) }
        p { a href=(HERE) { "Back to your account" } }
    };
    page(
        StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN),
        "Not linked",
        Some(&signed.viewer()),
        None,
        body,
    )
}
