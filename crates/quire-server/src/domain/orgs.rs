//! Organizations: creating one (the API's `createOrganization` and the app's home screen),
//! who may, and the e-mail domains one may claim.

use serde_json::json;

use crate::domain::access::Role;
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::orgs::OrgRow;
use crate::validate;

/// The server setting naming who may create organizations.
const CREATORS: &str = "org_creators";

/// Who may create organizations on this server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Creators {
    /// Every signed-in account (the default).
    Everyone,
    /// The server's administrators alone.
    Admins,
}

impl Creators {
    /// The setting's stored (and form) value.
    pub fn as_str(self) -> &'static str {
        match self {
            Creators::Everyone => "everyone",
            Creators::Admins => "admins",
        }
    }

    /// The value read back; `None` for anything else.
    pub fn parse(value: &str) -> Option<Creators> {
        match value {
            "everyone" => Some(Creators::Everyone),
            "admins" => Some(Creators::Admins),
            _ => None,
        }
    }
}

/// Who may create organizations now.
pub async fn creators(state: &AppState) -> ApiResult<Creators> {
    let value = store::settings::get(&state.db, CREATORS).await?;
    Ok(value
        .as_deref()
        .and_then(Creators::parse)
        .unwrap_or(Creators::Everyone))
}

/// Sets who may create organizations (the caller is a server administrator: the app's
/// admin screen checks it).
pub async fn set_creators(state: &AppState, who: Creators) -> ApiResult<()> {
    store::settings::set(&state.db, CREATORS, who.as_str(), state.now()).await?;
    Ok(())
}

/// Whether `caller` may create an organization; the refusal says why.
pub async fn may_create(state: &AppState, caller: &Caller) -> ApiResult<()> {
    caller.require_unscoped("create organizations")?;
    if creators(state).await? == Creators::Admins
        && !store::sessions::is_instance_admin(&state.db, caller.user.id.as_str()).await?
    {
        return Err(ApiError::forbidden(
            "Only this server's administrators may create organizations here.",
        ));
    }
    Ok(())
}

/// Creates organization `title` claiming `email_domains`; the caller is its first admin.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    title: String,
    email_domains: Vec<String>,
) -> ApiResult<OrgRow> {
    may_create(state, caller).await?;
    validate::length("title", &title, 2, 255)?;
    let domains = check_domains(email_domains, caller, &[])?;
    let now = state.now();
    let org = OrgRow {
        id: crate::ids::OrgId::new(new_id()),
        title,
        hostname: None,
        email_domains: json!(domains).to_string(),
        default_role: Some(Role::Read.as_str().to_string()),
        default_content: None,
        logo_url: None,
        sso: 0,
        ai: 0,
        invite_links: 1,
        created_at: now,
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.id.as_str())]);
    store::orgs::insert(&mut tx, &org).await?;
    store::members::insert(&mut tx, &org.id, &caller.user.id, Some("admin"), false, now).await?;
    tx.commit().await?;
    Ok(org)
}

/// Checks the e-mail domains an organization claims. A domain not already claimed must be the
/// domain of the caller's own e-mail address (the one address Quire knows to be theirs):
/// otherwise anyone could claim `gmail.com` and be offered to its users.
pub fn check_domains(
    domains: Vec<String>,
    caller: &Caller,
    already: &[String],
) -> ApiResult<Vec<String>> {
    let own = caller
        .user
        .email
        .rsplit_once('@')
        .map(|(_, d)| d.to_lowercase());
    let mut out = Vec::with_capacity(domains.len());
    for (i, d) in domains.into_iter().enumerate() {
        let d = d.trim().to_lowercase();
        let field = format!("emailDomains[{i}]");
        validate::domain(&field, &d)?;
        if !already.contains(&d) && own.as_deref() != Some(d.as_str()) {
            return Err(ApiError::forbidden(format!(
                "`{field}`: you can only claim the domain of your own e-mail address."
            )));
        }
        if !out.contains(&d) {
            out.push(d);
        }
    }
    Ok(out)
}
