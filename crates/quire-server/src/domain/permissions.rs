//! Explicit permissions on spaces and collections, shared by the API and the app: granting
//! a role to users and teams, changing one principal's role, and taking it away. Each
//! change needs the admin role on the target and runs in one transaction.

use crate::db::Tx;
use crate::domain::access::{CollectionCtx, OrgCtx, Role, SpaceCtx};
use crate::error::{ApiError, ApiResult};
use crate::ids::{OrgId, UserId};
use crate::state::AppState;
use crate::store;

/// A space or collection whose permissions change, with the caller's role on it.
#[derive(Clone)]
pub struct Content {
    /// `space` or `collection`.
    pub kind: &'static str,
    /// Its id.
    pub id: String,
    /// Its organization.
    pub org_id: OrgId,
    /// The caller's place in the organization.
    pub org: OrgCtx,
    /// The caller's role on the content.
    pub role: Role,
    /// A deleted space takes no permission changes until it is restored.
    pub deleted: bool,
}

impl Content {
    /// A space, as its context gives it.
    pub fn space(ctx: &SpaceCtx) -> Self {
        Content {
            kind: "space",
            id: ctx.space.id.clone(),
            org_id: ctx.space.org_id.clone(),
            org: ctx.org.clone(),
            role: ctx.role,
            deleted: ctx.space.deleted_at.is_some(),
        }
    }

    /// A collection, as its context gives it.
    pub fn collection(ctx: &CollectionCtx) -> Self {
        Content {
            kind: "collection",
            id: ctx.collection.id.clone(),
            org_id: ctx.collection.org_id.clone(),
            org: ctx.org.clone(),
            role: ctx.role,
            deleted: false,
        }
    }

    fn require_change(&self) -> ApiResult<()> {
        if self.role < Role::Admin {
            return Err(ApiError::forbidden(format!(
                "Changing who may access this {} needs its admin role.",
                self.kind
            )));
        }
        if self.deleted {
            return Err(ApiError::conflict(format!(
                "Space `{}` is deleted; restore it before changing it.",
                self.id
            )));
        }
        Ok(())
    }

    async fn set(
        &self,
        tx: &mut Tx,
        (principal_kind, principal_id): (&str, &str),
        role: Option<Role>,
        now: i64,
    ) -> ApiResult<()> {
        match role {
            Some(role) => {
                let grant = store::permissions::Grant {
                    target_kind: self.kind.to_string(),
                    target_id: self.id.clone(),
                    principal_kind: principal_kind.to_string(),
                    principal_id: principal_id.to_string(),
                    role: role.as_str().to_string(),
                    created_at: now,
                };
                store::permissions::upsert(tx, &self.org_id, &grant).await?
            }
            // Guest level on content means no explicit access.
            None => {
                store::permissions::remove(tx, self.kind, &self.id, principal_kind, principal_id)
                    .await?;
            }
        }
        Ok(())
    }
}

/// Gives `role` (`None`: no explicit access) on `target` to members `users` and `teams`
/// of its organization.
pub async fn grant(
    state: &AppState,
    target: &Content,
    users: &[String],
    teams: &[String],
    role: Option<Role>,
) -> ApiResult<()> {
    target.require_change()?;
    if users.is_empty() && teams.is_empty() {
        return Err(ApiError::bad_request(
            "Request body must name at least one of `users` or `teams`.",
        ));
    }
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(target.org_id.as_str())]);
    for (i, user) in users.iter().enumerate() {
        if store::members::get_tx(&mut tx, &target.org_id, &UserId::new(user.clone()))
            .await?
            .is_none()
        {
            return Err(ApiError::not_found(format!(
                "`users[{i}]`: no member `{user}` in the organization."
            )));
        }
        target.set(&mut tx, ("user", user), role, now).await?;
    }
    for (i, team) in teams.iter().enumerate() {
        if store::teams::get_tx(&mut tx, &target.org_id, team)
            .await?
            .is_none()
        {
            return Err(ApiError::not_found(format!(
                "`teams[{i}]`: no team `{team}` in the organization."
            )));
        }
        target.set(&mut tx, ("team", team), role, now).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Changes the role of one principal (`user` or `team`) on `target` to `role` when given
/// (`Some(None)` takes away its explicit access); the principal must exist either way.
pub async fn set(
    state: &AppState,
    target: &Content,
    (principal_kind, principal_id): (&str, &str),
    role: Option<Option<Role>>,
) -> ApiResult<()> {
    target.require_change()?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(target.org_id.as_str())]);
    let exists = match principal_kind {
        "user" => store::members::get_tx(&mut tx, &target.org_id, &UserId::new(principal_id))
            .await?
            .is_some(),
        _ => store::teams::get_tx(&mut tx, &target.org_id, principal_id)
            .await?
            .is_some(),
    };
    if !exists {
        let kind = if principal_kind == "user" {
            "User"
        } else {
            "Team"
        };
        return Err(ApiError::not_found(format!(
            "{kind} `{principal_id}` not found in the organization."
        )));
    }
    if let Some(role) = role {
        let now = state.now();
        target
            .set(&mut tx, (principal_kind, principal_id), role, now)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Takes away the explicit access of one principal on `target` (nothing to do when it had
/// none).
pub async fn remove(
    state: &AppState,
    target: &Content,
    (principal_kind, principal_id): (&str, &str),
) -> ApiResult<()> {
    target.require_change()?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(target.org_id.as_str())]);
    store::permissions::remove(
        &mut tx,
        target.kind,
        &target.id,
        principal_kind,
        principal_id,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
