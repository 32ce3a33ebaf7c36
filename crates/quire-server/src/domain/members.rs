//! Membership workflows, shared by the API and the app: inviting by address, changing a
//! member's role, removing a member, joining through an invite link, and accepting an
//! address's invitation by creating the account.
//!
//! An invitation by address lets its person in for `--invite-ttl-ms` (14 days by default)
//! after it was made, by its link or by the address's first authentication: a link handed
//! over and forgotten should not open the organization for ever. An expired invitation is
//! kept [`EXPIRED_KEPT_MS`] more, so that its link says it expired, then [`PRUNE_JOB`]
//! deletes it.

use crate::domain::access::{OrgCtx, Role};
use crate::domain::accounts::{self, AccountError};
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{random_string, UserId};
use crate::keys::hash_token;
use crate::state::AppState;
use crate::store;
use crate::store::users::UserRow;
use crate::validate;

/// Job kind that deletes the invitations by address expired for [`EXPIRED_KEPT_MS`].
pub const PRUNE_JOB: &str = "prune-invitations";

/// The job that deletes long-expired invitations by address.
pub const PRUNE_KIND: crate::state::JobKind = crate::state::JobKind {
    name: PRUNE_JOB,
    run: |state, _| Box::pin(async move { prune(state).await.map(drop) }),
    given_up: None,
};

/// How long an expired invitation is kept, so that its link says it expired rather than
/// that it is unknown: a week.
pub const EXPIRED_KEPT_MS: i64 = 7 * 24 * 3600 * 1000;

/// How long an invitation by address lets its person in, as this node is set.
pub fn invite_ttl_ms(state: &AppState) -> i64 {
    i64::try_from(state.config.invite_ttl_ms).unwrap_or(i64::MAX / 4)
}

/// When an invitation made at `created_at` stops letting anyone in.
pub fn expires_at(state: &AppState, created_at: i64) -> i64 {
    created_at.saturating_add(invite_ttl_ms(state))
}

/// Whether an invitation made at `created_at` has expired.
pub fn expired(state: &AppState, created_at: i64) -> bool {
    state.now() >= expires_at(state, created_at)
}

/// The outcome of an invitation by address.
pub struct Invited {
    /// Users who existed and joined at once.
    pub joined: Vec<UserId>,
    /// How many addresses were invited (joined or waiting).
    pub invited: usize,
    /// For each address with no user yet, the secret of its invitation's link (shown once).
    pub links: Vec<(String, String)>,
}

/// Invites `emails` (each with its own role, or `role`, or the organization's default) to
/// the organization: users who exist join at once with the role; other addresses wait and
/// join when a user with that address first authenticates, or through their link.
pub async fn invite(
    state: &AppState,
    ctx: &OrgCtx,
    emails: Vec<(String, Option<Option<Role>>)>,
    role: Option<Option<Role>>,
    sso: bool,
) -> ApiResult<Invited> {
    ctx.require_admin("invite people")?;
    if emails.is_empty() {
        return Err(ApiError::bad_request(
            "`emails` must name at least one address.",
        ));
    }
    let default_role = match role {
        Some(role) => role,
        None => ctx.org.default_role.as_deref().and_then(Role::parse),
    };
    let now = state.now();
    let mut out = Invited {
        joined: Vec::new(),
        invited: 0,
        links: Vec::new(),
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(&ctx.org.id)]);
    for (i, (email, role)) in emails.iter().enumerate() {
        let email = store::users::normalize_email(email);
        validate::email(&format!("emails[{i}]"), &email)?;
        let role = role.unwrap_or(default_role).map(Role::as_str);
        match store::users::by_email_tx(&mut tx, &email).await? {
            Some(user) => {
                if store::members::insert(&mut tx, &ctx.org.id, &user.id, role, sso, now).await? {
                    out.joined.push(user.id);
                    out.invited += 1;
                }
            }
            None => {
                let secret = random_string(40);
                let hashed = (hash_token(&secret), now);
                let hashed = (hashed.0.as_str(), hashed.1);
                store::invites::add_pending(&mut tx, &ctx.org.id, &email, role, sso, hashed)
                    .await?;
                out.links.push((email, secret));
                out.invited += 1;
            }
        }
    }
    if !out.links.is_empty() {
        // Deleted a while after they expire (a job already due earlier enqueues the next
        // one when it runs).
        let at = expires_at(state, now).saturating_add(EXPIRED_KEPT_MS);
        store::jobs::enqueue_once(&mut tx, PRUNE_JOB, "", at, now).await?;
    }
    tx.commit().await?;
    Ok(out)
}

/// Deletes the invitations by address expired for [`EXPIRED_KEPT_MS`], and enqueues the
/// next run for when the oldest left will be; how many were deleted.
pub async fn prune(state: &AppState) -> anyhow::Result<u64> {
    let keep = invite_ttl_ms(state).saturating_add(EXPIRED_KEPT_MS);
    let now = state.now();
    let deleted = store::invites::prune_pending(&state.db, now.saturating_sub(keep)).await?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[]);
    if let Some(oldest) = store::invites::oldest_pending(&mut tx).await? {
        let at = oldest.saturating_add(keep).max(now);
        store::jobs::enqueue_once(&mut tx, PRUNE_JOB, "", at, now).await?;
    }
    tx.commit().await?;
    if deleted > 0 {
        tracing::info!(deleted, "expired invitations deleted");
    }
    Ok(deleted)
}

fn not_a_member(user_id: &str) -> ApiError {
    ApiError::not_found(format!(
        "Member `{user_id}` not found in this organization."
    ))
}

/// Changes a member's role (`None`: a guest); the last admin stays an admin.
pub async fn set_role(
    state: &AppState,
    ctx: &OrgCtx,
    user_id: &UserId,
    role: Option<Role>,
) -> ApiResult<store::members::MemberRow> {
    ctx.require_admin("change members' roles")?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(&ctx.org.id)]);
    let current = store::members::get_tx(&mut tx, &ctx.org.id, user_id)
        .await?
        .ok_or_else(|| not_a_member(user_id))?;
    let role = role.map(Role::as_str);
    if current.role.as_deref() == Some("admin")
        && role != Some("admin")
        && store::members::count_admins(&mut tx, &ctx.org.id).await? <= 1
    {
        return Err(ApiError::bad_request(
            "`role`: the last admin of an organization cannot be demoted.",
        ));
    }
    store::members::set_role(&mut tx, &ctx.org.id, user_id, role).await?;
    let m = store::members::get_tx(&mut tx, &ctx.org.id, user_id)
        .await?
        .ok_or_else(|| not_a_member(user_id))?;
    tx.commit().await?;
    Ok(m)
}

/// Removes a member (admins remove anyone, members themselves); the last admin stays.
/// Nothing to do when the user is not a member.
pub async fn remove(
    state: &AppState,
    ctx: &OrgCtx,
    caller: &Caller,
    user_id: &UserId,
) -> ApiResult<()> {
    crate::domain::access::require_admin_or_self(ctx, caller, user_id)?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(&ctx.org.id)]);
    if let Some(current) = store::members::get_tx(&mut tx, &ctx.org.id, user_id).await? {
        if current.role.as_deref() == Some("admin")
            && store::members::count_admins(&mut tx, &ctx.org.id).await? <= 1
        {
            return Err(ApiError::bad_request(
                "The last admin of an organization cannot be removed.",
            ));
        }
        store::members::remove(&mut tx, &ctx.org.id, user_id).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The caller joins organization `org_id` through invite link `invite_id` (nothing to do
/// when already a member).
pub async fn join_with_link(
    state: &AppState,
    caller: &Caller,
    org_id: &str,
    invite_id: &str,
) -> ApiResult<()> {
    if !caller.reaches(org_id) {
        caller.require_unscoped("join another organization")?;
    }
    let missing = || ApiError::not_found(format!("Invite `{invite_id}` not found."));
    let link = store::invites::get_link(&state.db, org_id, invite_id)
        .await?
        .ok_or_else(missing)?;
    let org = crate::ids::OrgId::new(org_id.to_string());
    if crate::domain::access::load_org(state, caller, &org)
        .await
        .is_ok()
    {
        return Ok(());
    }
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org_id)]);
    let org = store::orgs::get_tx(&mut tx, org_id)
        .await?
        .ok_or_else(missing)?;
    if org.invite_links == 0 {
        return Err(ApiError::forbidden(
            "Invite links are disabled in this organization.",
        ));
    }
    let role = match link.target_kind.as_str() {
        "organization" => link.role.as_deref(),
        // Content invites let the user in as a guest; their level applies to the content.
        _ => None,
    };
    store::members::insert(&mut tx, org_id, &caller.user.id, role, false, state.now()).await?;
    tx.commit().await?;
    Ok(())
}

/// An invitation as its link finds it.
pub enum Invitation {
    /// Valid: its address and organization.
    Open(store::invites::PendingLink),
    /// Expired: it lets no one in.
    Expired(store::invites::PendingLink),
    /// No invitation has this link (withdrawn, accepted, replaced or pruned).
    Unknown,
}

/// The invitation whose link carries `secret`.
pub async fn invitation(state: &AppState, secret: &str) -> ApiResult<Invitation> {
    Ok(
        match store::invites::pending_by_secret(&state.db, &hash_token(secret)).await? {
            Some(found) if expired(state, found.created_at) => Invitation::Expired(found),
            Some(found) => Invitation::Open(found),
            None => Invitation::Unknown,
        },
    )
}

/// What the link of an expired invitation says.
pub const EXPIRED_MESSAGE: &str =
    "This invitation has expired: ask the organization's admins to invite you again.";

/// What a link that leads to no invitation says.
pub const UNKNOWN_MESSAGE: &str = "This invitation is no longer valid: ask for a new one.";

/// Accepts the invitation whose link carries `secret`: creates the invited address's
/// account with `password`, and every invitation waiting for the address becomes a
/// membership.
pub async fn accept(
    state: &AppState,
    secret: &str,
    name: Option<&str>,
    password: &str,
) -> Result<UserRow, AccountError> {
    let found = invitation(state, secret)
        .await
        .map_err(|e| AccountError::Failed(anyhow::anyhow!("{e}")))?;
    let invite = match found {
        Invitation::Open(invite) => invite,
        Invitation::Expired(_) => return Err(AccountError::Invalid(EXPIRED_MESSAGE.into())),
        Invitation::Unknown => return Err(AccountError::Invalid(UNKNOWN_MESSAGE.into())),
    };
    let user = accounts::set_password(
        &state.db,
        &state.hashing,
        &invite.email,
        name,
        password,
        accounts::Holder::New,
        state.now(),
    )
    .await
    .map_err(|e| match e {
        AccountError::Exists => AccountError::Invalid(
            "An account with this address exists already: sign in instead.".into(),
        ),
        e => e,
    })?;
    crate::domain::auth::first_authentication(state, &user)
        .await
        .map_err(|e| AccountError::Failed(anyhow::anyhow!("{e}")))?;
    Ok(user)
}

/// Creates an invite link to the organization, giving `role` to who joins (`None`: a
/// guest); refused while the organization disables invite links.
pub async fn create_link(
    state: &AppState,
    ctx: &OrgCtx,
    role: Option<Role>,
) -> ApiResult<store::invites::InviteLinkRow> {
    ctx.require_admin("create invite links")?;
    if ctx.org.invite_links == 0 {
        return Err(ApiError::bad_request(
            "Invite links are disabled in this organization (`inviteLinks` is false).",
        ));
    }
    let link = store::invites::InviteLinkRow {
        id: crate::ids::new_id(),
        org_id: ctx.org.id.to_string(),
        role: role.map(|r| r.as_str().to_string()),
        target_kind: "organization".into(),
        target_id: None,
        created_at: state.now(),
    };
    store::invites::insert_link(&state.db, &link).await?;
    Ok(link)
}
