//! Teams, shared by the API and the app: who may manage which team, and creating and
//! deleting teams and changing their members, each in one transaction.

use crate::db::Tx;
use crate::domain::access::OrgCtx;
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::teams::{TeamFilter, TeamRow};
use crate::validate;

/// Which teams the caller may manage: all for admins, owned ones otherwise.
pub struct Manageable {
    all: bool,
    owned: Vec<String>,
}

impl Manageable {
    /// Whether the caller may manage team `id`.
    pub fn can_manage(&self, id: &str) -> bool {
        self.all || self.owned.iter().any(|o| o == id)
    }
}

/// The teams the caller manages in the organization.
pub async fn owned_teams(state: &AppState, ctx: &OrgCtx, caller: &Caller) -> ApiResult<Manageable> {
    if ctx.is_admin() {
        return Ok(Manageable {
            all: true,
            owned: Vec::new(),
        });
    }
    let filter = TeamFilter {
        owned_by: Some(caller.user.id.to_string()),
        ..TeamFilter::default()
    };
    let (rows, _) = store::teams::list(&state.db, &ctx.org.id, &filter, None, 10_000).await?;
    Ok(Manageable {
        all: false,
        owned: rows.into_iter().map(|(t, _)| t.id).collect(),
    })
}

/// Resolves a user id or e-mail to the id of a member of the organization.
pub async fn resolve_member(
    tx: &mut Tx,
    ctx: &OrgCtx,
    who: &str,
    field: &str,
) -> ApiResult<String> {
    let user = if who.contains('@') {
        store::users::by_email_tx(tx, who).await?
    } else {
        store::users::get_tx(tx, who).await?
    };
    if let Some(user) = user {
        if store::members::get_tx(tx, &ctx.org.id, &user.id)
            .await?
            .is_some()
        {
            return Ok(user.id.to_string());
        }
    }
    Err(ApiError::bad_request(format!(
        "`{field}`: `{who}` is not a member of this organization."
    )))
}

/// Creates a team (admins) with `members` (ids or e-mails of members).
pub async fn create(
    state: &AppState,
    ctx: &OrgCtx,
    title: &str,
    members: &[String],
) -> ApiResult<TeamRow> {
    ctx.require_admin("create teams")?;
    validate::length("title", title, 1, 64)?;
    let now = state.now();
    let id = new_id();
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(ctx.org.id.as_str())]);
    store::teams::insert(&mut tx, &id, &ctx.org.id, title, now).await?;
    for (i, member) in members.iter().enumerate() {
        let user_id = resolve_member(&mut tx, ctx, member, &format!("members[{i}]")).await?;
        store::teams::upsert_member(&mut tx, &ctx.org.id, &id, &user_id, None, now).await?;
    }
    tx.commit().await?;
    store::teams::get(&state.db, &ctx.org.id, &id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("team vanished after creation")))
}

/// Deletes a team (admins); nothing to do when it is gone.
pub async fn delete(state: &AppState, ctx: &OrgCtx, team_id: &str) -> ApiResult<()> {
    ctx.require_admin("delete teams")?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(ctx.org.id.as_str())]);
    store::teams::delete(&mut tx, &ctx.org.id, team_id).await?;
    tx.commit().await?;
    Ok(())
}

/// Refuses anyone but the organization's admins and the team's owners.
async fn require_manager(
    state: &AppState,
    ctx: &OrgCtx,
    caller: &Caller,
    team_id: &str,
) -> ApiResult<()> {
    if owned_teams(state, ctx, caller).await?.can_manage(team_id) {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "Only organization admins and the team's owners can change its members.",
        ))
    }
}

/// Adds a member (id or e-mail) to a team, or changes their team role (`owner`,
/// `member`; `None` keeps it); organization admins and the team's owners only.
pub async fn add_member(
    state: &AppState,
    ctx: &OrgCtx,
    caller: &Caller,
    team_id: &str,
    (who, field): (&str, &str),
    role: Option<&str>,
) -> ApiResult<()> {
    require_manager(state, ctx, caller, team_id).await?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(ctx.org.id.as_str())]);
    let user_id = resolve_member(&mut tx, ctx, who, field).await?;
    store::teams::upsert_member(&mut tx, &ctx.org.id, team_id, &user_id, role, state.now()).await?;
    tx.commit().await?;
    Ok(())
}

/// Takes a user out of a team (organization admins and the team's owners); nothing to do
/// when they are not in it.
pub async fn remove_member(
    state: &AppState,
    ctx: &OrgCtx,
    caller: &Caller,
    team_id: &str,
    user_id: &str,
) -> ApiResult<()> {
    require_manager(state, ctx, caller, team_id).await?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(ctx.org.id.as_str())]);
    store::teams::remove_member(&mut tx, team_id, user_id).await?;
    tx.commit().await?;
    Ok(())
}
