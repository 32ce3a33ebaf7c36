//! The server's accounts and settings, for its instance administrators (`/admin/accounts`):
//! every account, a new account with its password, and a new password for an account, as
//! `quire admin set-password` does from the shell (Quire sends no e-mail, so this is how an
//! administrator lets someone in without a shell on the server); and who may create
//! organizations (`POST /admin/settings`).

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use serde::Deserialize;

use super::session::{Posted, Signed};
use super::shell::{failed, page, see_other};
use crate::domain::accounts::{self, AccountError, Holder};
use crate::domain::orgs::Creators;
use crate::state::AppState;
use crate::store;

/// Accounts listed per page.
const PAGE: i64 = 100;

const HERE: &str = "/admin/accounts";

/// Where the listing starts.
#[derive(Deserialize, Default)]
pub struct At {
    /// The address after which the page starts.
    after: Option<String>,
}

/// `GET /admin/accounts`.
pub async fn screen(
    State(state): State<AppState>,
    signed: Signed,
    Query(at): Query<At>,
) -> Response {
    render(&state, &signed, at.after.as_deref().unwrap_or(""), None).await
}

/// The screen, from the account after `after`, with a refusal at its top.
async fn render(state: &AppState, signed: &Signed, after: &str, problem: Option<&str>) -> Response {
    let list = match store::sessions::accounts(&state.db, after, PAGE).await {
        Ok(list) => list,
        Err(e) => return failed(e),
    };
    let creators = match crate::domain::orgs::creators(state).await {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let csrf = signed.session.csrf.as_str();
    // The next page starts after the last address listed, when the page is full.
    let next = (list.len() as i64 == PAGE)
        .then(|| list.last())
        .flatten()
        .map(|last| {
            format!(
                "{HERE}?after={}",
                url::form_urlencoded::byte_serialize(last.email.as_bytes()).collect::<String>()
            )
        });
    let body = html! {
        h1 { "Accounts" }
        @if let Some(problem) = problem {
            p.error role="alert" { (problem) }
        }
        table {
            thead {
                tr {
                    th scope="col" { "Name" }
                    th scope="col" { "Address" }
                    th scope="col" { "Signs in with" }
                }
            }
            tbody {
                @for a in &list {
                    tr data-account=(a.id) {
                        td {
                            (a.display_name)
                            @if a.instance_admin == 1 {
                                " " span.muted { "(administers the server)" }
                            }
                        }
                        td { (a.email) }
                        td { (if a.has_password == 1 { "a password" } else { "API tokens or single sign-on" }) }
                    }
                }
            }
        }
        @if let Some(next) = next {
            p { a href=(next) { "Next accounts" } }
        }
        h2 { "New account" }
        form method="post" action=(HERE) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="create";
            label { "Name " input name="name" autocomplete="off"; }
            label { "Address " input name="email" type="email" required autocomplete="off"; }
            label { "Password " input name="password" type="password" required minlength="8" autocomplete="new-password"; }
            button type="submit" { "Create the account" }
        }
        h2 { "New password" }
        p.muted { "The account's sessions end; tell its owner the new password." }
        form method="post" action=(HERE) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="reset";
            label { "Address " input name="email" type="email" required autocomplete="off"; }
            label { "Password " input name="password" type="password" required minlength="8" autocomplete="new-password"; }
            button type="submit" { "Set the password" }
        }
        (settings_form(csrf, creators))
    };
    let status = if problem.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    page(status, "Accounts", Some(&signed.viewer()), None, body)
}

/// What the accounts form does.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccountOp {
    /// A new account.
    Create,
    /// A new password for an existing account.
    Reset,
}

/// The form of `POST /admin/accounts`.
#[derive(Deserialize)]
pub struct AccountForm {
    op: AccountOp,
    email: String,
    password: String,
    /// The new account's name.
    name: Option<String>,
}

/// `POST /admin/accounts`: `op` `create` (name, email, password) or `reset` (email,
/// password).
pub async fn act(
    State(state): State<AppState>,
    signed: Signed,
    Posted(form): Posted<AccountForm>,
) -> Response {
    let AccountForm {
        op,
        email,
        password,
        name,
    } = form;
    let name = name.filter(|n| !n.trim().is_empty());
    let holder = match op {
        AccountOp::Create => Holder::New,
        AccountOp::Reset => {
            let known =
                store::users::by_email(&state.db, &store::users::normalize_email(&email)).await;
            match known {
                Ok(Some(_)) => Holder::Any { admin: false },
                Ok(None) => {
                    let why = "`email`: no account has this address.";
                    return render(&state, &signed, "", Some(why)).await;
                }
                Err(e) => return failed(e),
            }
        }
    };
    let now = state.now();
    match accounts::set_password(
        &state.db,
        &state.hashing,
        &email,
        name.as_deref(),
        &password,
        holder,
        now,
    )
    .await
    {
        Ok(user) => {
            tracing::info!(by = %signed.user.id, user = %user.id, op = ?op, "account changed by an instance administrator");
            see_other(HERE)
        }
        Err(AccountError::Invalid(why)) => render(&state, &signed, "", Some(&why)).await,
        Err(AccountError::Exists) => {
            let why = "`email`: an account with this address exists already.";
            render(&state, &signed, "", Some(why)).await
        }
        Err(AccountError::Busy) => crate::app::shell::busy(),
        Err(AccountError::Failed(e)) => failed(e),
    }
}

/// The server settings' form.
fn settings_form(csrf: &str, creators: Creators) -> maud::Markup {
    maud::html! {
        h2 #settings { "Settings" }
        form method="post" action="/admin/settings" {
            input type="hidden" name="csrf" value=(csrf);
            fieldset {
                legend { "Who may create organizations" }
                @for (value, label) in [
                    (Creators::Everyone, "Everyone with an account"),
                    (Creators::Admins, "Only the server's administrators"),
                ] {
                    label {
                        input type="radio" name="creators" value=(value.as_str()) checked[value == creators];
                        " " (label)
                    }
                }
            }
            button type="submit" { "Save the settings" }
        }
    }
}

/// The form of `POST /admin/settings`.
#[derive(Deserialize)]
pub struct Settings {
    creators: String,
}

/// `POST /admin/settings`: who may create organizations.
pub async fn settings(
    State(state): State<AppState>,
    signed: Signed,
    Posted(form): Posted<Settings>,
) -> Response {
    let Some(creators) = Creators::parse(&form.creators) else {
        let why = "`creators` must be `everyone` or `admins`.";
        return render(&state, &signed, "", Some(why)).await;
    };
    match crate::domain::orgs::set_creators(&state, creators).await {
        Ok(()) => {
            tracing::info!(by = %signed.user.id, creators = creators.as_str(), "who may create organizations changed");
            see_other(HERE)
        }
        Err(e) => failed(e),
    }
}
