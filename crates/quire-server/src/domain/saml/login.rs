//! The end of a login: a verified assertion turns into a user, a membership and a browser
//! session, in one transaction that also consumes the request it answers and records the
//! assertion as used, so that a refused or replayed assertion leaves nothing behind.

use axum::http::{header, HeaderMap};

use super::verify::Verified;
use super::{LoginError, Refusal, SESSION_TTL_MS};
use crate::ids::{new_id, random_string};
use crate::keys::hash_token;
use crate::state::AppState;
use crate::store;
use crate::store::saml::{ProviderRow, SessionRow};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "quire_session";

/// A session just opened: the cookie's secret (only its hash is stored).
#[derive(Debug)]
pub struct Opened {
    /// The cookie value.
    pub secret: String,
    /// The signed-in user's id.
    pub user_id: String,
}

/// Acts on a verified assertion of `provider`.
pub async fn complete(
    state: &AppState,
    provider: &ProviderRow,
    verified: &Verified,
) -> Result<Opened, LoginError> {
    let now = state.now();
    let mut tx = state.db.begin().await?;
    if !store::saml::use_assertion(
        &mut tx,
        &provider.id,
        &verified.assertion_id,
        verified.valid_until,
    )
    .await?
    {
        return Err(Refusal::new(
            403,
            "This assertion was already used: a login cannot be replayed.",
        )
        .into());
    }
    if !store::saml::take_request(&mut tx, &verified.in_response_to, &provider.id, now).await? {
        return Err(Refusal::new(
            403,
            "The response answers no pending login request of this provider (unknown, expired or already answered InResponseTo): start again from Quire.",
        )
        .into());
    }
    let user =
        store::users::find_or_create(&mut tx, &verified.email, verified.name.as_deref(), now)
            .await?;
    let joined = store::members::insert(
        &mut tx,
        &provider.org_id,
        user.id.as_str(),
        provider.default_role.as_deref(),
        true,
        now,
    )
    .await?;
    if joined {
        if let Some(team) = &provider.default_team {
            // A team deleted since the provider was configured is skipped.
            if store::teams::get_tx(&mut tx, &provider.org_id, team)
                .await?
                .is_some()
            {
                store::teams::upsert_member(
                    &mut tx,
                    &provider.org_id,
                    team,
                    user.id.as_str(),
                    None,
                    now,
                )
                .await?;
            }
        }
    } else {
        store::members::set_sso_tx(&mut tx, &provider.org_id, user.id.as_str()).await?;
    }
    let secret = random_string(48);
    store::saml::insert_session(
        &mut tx,
        &new_id(),
        &hash_token(&secret),
        user.id.as_str(),
        &provider.org_id,
        &provider.id,
        &random_string(32),
        now,
        now + SESSION_TTL_MS,
    )
    .await?;
    tx.commit().await?;
    Ok(Opened {
        secret,
        user_id: user.id.to_string(),
    })
}

/// The live session a request's cookie names, if any.
pub async fn session(state: &AppState, headers: &HeaderMap) -> sqlx::Result<Option<SessionRow>> {
    let Some(secret) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    store::saml::session(&state.db, &hash_token(&secret), state.now()).await
}

/// The `Set-Cookie` value of a session (HttpOnly, SameSite=Lax, Secure over https);
/// `None` clears it.
pub fn session_cookie(state: &AppState, secret: Option<&str>) -> String {
    let secure = if state.public_url.starts_with("https:") {
        "; Secure"
    } else {
        ""
    };
    match secret {
        Some(secret) => format!(
            "{SESSION_COOKIE}={secret}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
            SESSION_TTL_MS / 1000
        ),
        None => format!("{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{secure}"),
    }
}

/// Whether a session may create API tokens: a user who is an SSO member of an organization
/// that enforces SSO gets tokens only through a session opened by that organization's SSO.
/// Returns the title of the organization that refuses, if one does.
pub async fn token_refusal(state: &AppState, session: &SessionRow) -> sqlx::Result<Option<String>> {
    let orgs = store::saml::account_orgs(&state.db, &session.user_id, 1000).await?;
    Ok(orgs
        .into_iter()
        .find(|o| o.enforced != 0 && o.sso_member != 0 && o.id != session.org_id)
        .map(|o| o.title))
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(name)?.strip_prefix('='))
        .find(|v| !v.is_empty() && v.len() <= 256)
        .map(str::to_string)
}
