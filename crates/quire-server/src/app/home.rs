//! The home screen (`/`): the first-run page while no account exists, else the signed-in
//! person's organizations and the form that creates one (`POST /orgs`), where the server
//! lets them.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::html;
use serde::Deserialize;

use super::session::{self, Posted, Signed};
use super::shell::{failed, page, run_write, see_other};
use crate::state::AppState;
use crate::store;

/// Most organizations the screen lists.
const LIST_LIMIT: i64 = 500;

/// `GET /`: the organizations of the signed-in user; the first-run page while no account
/// exists; otherwise the way to sign in.
pub async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let signed = match session::current(&state, &headers).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return match store::sessions::user_count(&state.db).await {
                Ok(0) => page(
                    StatusCode::OK,
                    "Welcome to Quire",
                    None,
                    None,
                    session::signin_form("/", None, true, ""),
                ),
                Ok(_) => see_other("/signin"),
                Err(e) => failed(e),
            };
        }
        Err(e) => return failed(e),
    };
    let user = signed.user.id.as_str();
    let orgs = match store::orgs::list_for_user(&state.db, user, None, LIST_LIMIT).await {
        // A single sign-on session sees only its organization.
        Ok((orgs, _)) => orgs
            .into_iter()
            .filter(|o| signed.scope.as_ref().is_none_or(|s| *s == o.org.id))
            .collect::<Vec<_>>(),
        Err(e) => return failed(e),
    };
    let admin = signed.scope.is_none()
        && store::sessions::is_instance_admin(&state.db, user)
            .await
            .unwrap_or(false);
    let may_create = crate::domain::orgs::may_create(&state, &signed.caller())
        .await
        .is_ok();
    let recent = match super::find::recent(&state, &signed, super::find::RECENT).await {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let body = html! {
        h1 { "Your organizations" }
        @if orgs.is_empty() {
            p {
                "You are not a member of any organization yet. "
                @if may_create {
                    "Create one below, or ask an administrator of one to invite you."
                } @else {
                    "An administrator of one can invite you."
                }
            }
        } @else {
            ul.orgs {
                @for o in &orgs {
                    li {
                        a href={ "/o/" (o.org.id.as_str()) } { (o.org.title) }
                        " "
                        span.muted { (o.role.as_deref().unwrap_or("guest")) }
                    }
                }
            }
        }
        @if !recent.is_empty() {
            section aria-labelledby="recent" {
                h2 #recent { "Recent pages" }
                (super::find::recent_list(&recent))
            }
        }
        p.muted {
            a href="/find" { "Find" } " a page, a space or an organization from anywhere: "
            kbd { "Ctrl" } "+" kbd { "K" } "."
        }
        @if may_create {
            section aria-labelledby="new-org" {
                h2 #new-org { "New organization" }
                p.muted { "You will administer it: add spaces, invite people, publish sites." }
                form method="post" action="/orgs" {
                    input type="hidden" name="csrf" value=(signed.session.csrf);
                    label { "Name " input name="title" required minlength="2" maxlength="255" autocomplete="organization"; }
                    button type="submit" { "Create the organization" }
                }
            }
        }
        @if admin {
            p {
                "You administer this server: "
                a href="/admin/accounts" { "its accounts and settings" }
                "."
            }
        }
    };
    page(
        StatusCode::OK,
        "Your organizations",
        Some(&signed.viewer()),
        None,
        body,
    )
}

/// The form of `POST /orgs`.
#[derive(Deserialize)]
pub struct NewOrg {
    title: String,
}

/// `POST /orgs`: creates an organization the signed-in person administers, then opens it.
pub async fn create_org(
    State(state): State<AppState>,
    signed: Signed,
    Posted(form): Posted<NewOrg>,
) -> Response {
    let caller = signed.caller();
    let viewer = signed.viewer();
    run_write(&viewer, "/", "Back to your organizations", async move {
        let org =
            crate::domain::orgs::create(&state, &caller, form.title.trim().to_string(), vec![])
                .await?;
        Ok(format!("/o/{}", org.id))
    })
    .await
}
