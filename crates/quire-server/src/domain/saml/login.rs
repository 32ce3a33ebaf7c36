//! The end of a login: a verified assertion turns into a user, a membership and a browser
//! session, in one transaction that also consumes the request it answers and records the
//! assertion as used, so that a refused or replayed assertion leaves nothing behind.

use super::verify::Verified;
use super::{LoginError, Refusal, SESSION_TTL_MS};
use crate::db::Tx;
use crate::state::AppState;
use crate::store;
use crate::store::saml::ProviderRow;
use crate::store::users::{normalize_email, UserRow};

/// A session just opened: the cookie's secret (only its hash is stored).
#[derive(Debug)]
pub struct Opened {
    /// The cookie value.
    pub secret: String,
    /// The signed-in user's id.
    pub user_id: String,
}

/// Acts on a verified assertion of `provider`: finds the account the identity may open
/// ([`account`]), makes it a member of the provider's organization, and opens a session
/// confined to that organization.
pub async fn complete(
    state: &AppState,
    provider: &ProviderRow,
    verified: &Verified,
    agent: &str,
) -> Result<Opened, LoginError> {
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[
        crate::cache::Scope::Org(&provider.org_id),
        crate::cache::Scope::Tokens,
    ]);
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
    let Some(request) =
        store::saml::take_request(&mut tx, &verified.in_response_to, &provider.id, now).await?
    else {
        return Err(Refusal::new(
            403,
            "The response answers no pending login request of this provider (unknown, expired or already answered InResponseTo): start again from Quire.",
        )
        .into());
    };
    let user = account(
        &mut tx,
        provider,
        verified,
        request.link_user_id.as_deref(),
        now,
    )
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
    let (_, secret) = store::sessions::open_in(
        &mut tx,
        user.id.as_str(),
        agent,
        now,
        now + SESSION_TTL_MS,
        store::sessions::SsoOrigin {
            org_id: &provider.org_id,
            provider_id: &provider.id,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(Opened {
        secret,
        user_id: user.id.to_string(),
    })
}

/// The account an identity of `provider` opens (the identity is the e-mail it asserts):
/// - the account it is linked to;
/// - else, when the login was started to link (`link_user_id`), that account, once linked
///   (the provider must assert the account's own address);
/// - else the account with that address, if the provider's organization made it through
///   its single sign-on (linked on the way);
/// - else a new account, which belongs to that organization.
///
/// An account that exists on its own (made by `quire admin`, by another organization's
/// single sign-on) is never opened by an identity its owner did not link.
async fn account(
    tx: &mut Tx,
    provider: &ProviderRow,
    verified: &Verified,
    link_user_id: Option<&str>,
    now: i64,
) -> Result<UserRow, LoginError> {
    let subject = normalize_email(&verified.email);
    let linked = store::saml::identity(tx, &provider.id, &subject).await?;
    if let Some(link_user_id) = link_user_id {
        let user = store::users::get_tx(tx, link_user_id)
            .await?
            .ok_or_else(|| {
                Refusal::new(409, "The account this login was to link no longer exists.")
            })?;
        if user.email != subject {
            return Err(Refusal::new(
                403,
                format!(
                    "The identity provider signed in `{subject}`, not the address of the account to link: sign in to the provider as that account's owner."
                ),
            )
            .into());
        }
        if linked.as_deref().is_some_and(|id| id != user.id.as_str()) {
            return Err(
                Refusal::new(409, "This identity is already linked to another account.").into(),
            );
        }
        store::saml::link_identity(tx, &provider.id, &subject, user.id.as_str(), now).await?;
        return Ok(user);
    }
    if let Some(user_id) = linked {
        return store::users::get_tx(tx, &user_id).await?.ok_or_else(|| {
            Refusal::new(409, "The account linked to this identity no longer exists.").into()
        });
    }
    let user = match store::users::insert_for_sso(
        tx,
        &subject,
        verified.name.as_deref(),
        &provider.org_id,
        now,
    )
    .await?
    {
        Some(created) => created,
        None => {
            let existing = store::users::by_email_tx(tx, &subject)
                .await?
                .ok_or(sqlx::Error::RowNotFound)?;
            let owner = store::users::sso_org_tx(tx, existing.id.as_str()).await?;
            if owner.as_deref() != Some(provider.org_id.as_str()) {
                return Err(Refusal::new(
                    403,
                    format!(
                        "An account with the address `{subject}` already exists and has not linked this organization's single sign-on. Its owner can link it while signed in to Quire."
                    ),
                )
                .into());
            }
            existing
        }
    };
    store::saml::link_identity(tx, &provider.id, &subject, user.id.as_str(), now).await?;
    Ok(user)
}
