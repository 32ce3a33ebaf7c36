//! SAML providers of an organization, shared by the API and the app: adding one (its
//! identity provider's entity id, sign-in URL and certificate, checked) and removing it.

use crate::domain::access::{OrgCtx, Role};
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::saml::ProviderRow;
use crate::validate;

use super::parse_certificate;

/// Most providers one organization may have.
pub const MAX_PROVIDERS: i64 = 100;

/// A provider to add: `label` and `sso_url` are required; without `entity_id` or
/// `certificate` it is pending.
pub struct NewProvider {
    /// Its name on the sign-in page (1 to 30 characters).
    pub label: String,
    /// The identity provider's entity id.
    pub entity_id: Option<String>,
    /// The identity provider's signing certificate.
    pub certificate: Option<String>,
    /// Where the identity provider signs people in.
    pub sso_url: Option<String>,
    /// The team new members join.
    pub default_team: Option<String>,
    /// The role new members get (`None`: the organization's default).
    pub default_role: Option<Option<Role>>,
}

/// Adds a SAML provider to the organization (admins).
pub async fn create(state: &AppState, ctx: &OrgCtx, new: NewProvider) -> ApiResult<ProviderRow> {
    ctx.require_admin("configure single sign-on")?;
    validate::length("label", &new.label, 1, 30)?;
    let entity_id = check_entity_id(new.entity_id)?;
    let sso_url = check_sso_url(new.sso_url)?.ok_or_else(|| {
        ApiError::bad_request("`ssoURL` is required: the identity provider's sign-in URL.")
    })?;
    let certificate = check_certificate(new.certificate)?;
    let now = state.now();
    let row = ProviderRow {
        id: new_id(),
        org_id: ctx.org.id.to_string(),
        label: new.label,
        entity_id: entity_id.unwrap_or_default(),
        sso_url,
        certificate: certificate.unwrap_or_default(),
        default_team: None,
        default_role: match new.default_role {
            Some(role) => role.map(|r| r.as_str().to_string()),
            None => ctx.org.default_role.clone(),
        },
        created_at: now,
        updated_at: now,
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(ctx.org.id.as_str())]);
    let default_team = match new.default_team {
        Some(team) => Some(check_team(&mut tx, ctx, team).await?),
        None => None,
    };
    let row = ProviderRow {
        default_team,
        ..row
    };
    if store::saml::count(&mut tx, ctx.org.id.as_str()).await? >= MAX_PROVIDERS {
        return Err(ApiError::bad_request(format!(
            "An organization can have at most {MAX_PROVIDERS} SAML providers."
        )));
    }
    store::saml::insert(&mut tx, &row).await?;
    tx.commit().await?;
    Ok(row)
}

/// Removes a provider (admins); its pending logins and the sessions it opened end with it.
/// Nothing to do when it is gone.
pub async fn delete(state: &AppState, ctx: &OrgCtx, id: &str) -> ApiResult<()> {
    ctx.require_admin("configure single sign-on")?;
    if store::saml::delete(&state.db, ctx.org.id.as_str(), id).await? {
        tracing::info!(provider = %id, org = %ctx.org.id, "SAML provider deleted");
    }
    Ok(())
}

/// The identity provider's entity id: an absolute URI (a URL or a URN).
pub fn check_entity_id(value: Option<String>) -> ApiResult<Option<String>> {
    let Some(value) = value else { return Ok(None) };
    let ok = !value.is_empty()
        && value.len() <= 1024
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
        && url::Url::parse(&value).is_ok();
    if ok {
        Ok(Some(value))
    } else {
        Err(ApiError::bad_request(
            "`entityID` must be an absolute URI (a URL or a URN) of at most 1024 characters.",
        ))
    }
}

/// An absolute http(s) URL where the identity provider signs people in.
pub fn check_sso_url(value: Option<String>) -> ApiResult<Option<String>> {
    let Some(value) = value else { return Ok(None) };
    validate::url("ssoURL", &value)?;
    url::Url::parse(&value)
        .map_err(|_| ApiError::bad_request("`ssoURL` must be an absolute http(s) URL."))?;
    Ok(Some(value))
}

/// A PEM or base64 X.509 certificate that parses, at most 10,000 characters.
pub fn check_certificate(value: Option<String>) -> ApiResult<Option<String>> {
    let Some(value) = value else { return Ok(None) };
    if value.len() > 10_000 {
        return Err(ApiError::bad_request(
            "`certificate` must be at most 10000 characters.",
        ));
    }
    parse_certificate(&value)
        .map_err(|why| ApiError::bad_request(format!("`certificate` {why}.")))?;
    Ok(Some(value.trim().to_string()))
}

/// A team of the organization, for new members of a provider.
pub async fn check_team(tx: &mut crate::db::Tx, ctx: &OrgCtx, team: String) -> ApiResult<String> {
    match store::teams::get_tx(tx, ctx.org.id.as_str(), &team).await? {
        Some(row) => Ok(row.id),
        None => Err(ApiError::bad_request(format!(
            "`defaultTeam`: `{team}` is not a team of this organization."
        ))),
    }
}
