//! Access resolution: who the caller is in an organization, and their effective role on a
//! space or collection (org role, default levels, user and team grants, inheritance). The
//! HTTP layer applies it per operation (`http::access`); handlers receive what was loaded.
//!
//! The database reads behind a cache miss are boxed (`Box::pin`): an async function's
//! future is as large as the largest one it awaits, and the access check's future, moved
//! and boxed for every request, was 6 KB sized for reads a cached request never makes.

pub mod grants;

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::cache::Scope;
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::OrgId;
use crate::state::AppState;
use crate::store;
use crate::store::collections::CollectionRow;
use crate::store::orgs::OrgRow;
use crate::store::spaces::SpaceRow;
use crate::store::teams::TeamRow;
use crate::store::users::UserRow;
use grants::Grants;

/// Content roles, weakest first: `read < comment < edit < review < create < admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Read,
    Comment,
    Edit,
    Review,
    Create,
    Admin,
}

impl Role {
    /// The role's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Comment => "comment",
            Role::Edit => "edit",
            Role::Review => "review",
            Role::Create => "create",
            Role::Admin => "admin",
        }
    }

    /// Parses a stored role; unknown text is treated as no role.
    pub fn parse(text: &str) -> Option<Role> {
        Some(match text {
            "read" => Role::Read,
            "comment" => Role::Comment,
            "edit" => Role::Edit,
            "review" => Role::Review,
            "create" => Role::Create,
            "admin" => Role::Admin,
            _ => return None,
        })
    }
}

/// The organization in the path, with the caller's membership.
#[derive(Debug, Clone)]
pub struct OrgCtx {
    /// The organization, shared with the access cache.
    pub org: Arc<OrgRow>,
    /// The caller's role; `None` for a guest.
    pub role: Option<Role>,
}

impl OrgCtx {
    /// Whether the caller administers the organization.
    pub fn is_admin(&self) -> bool {
        self.role == Some(Role::Admin)
    }

    /// Only the organization's admins may do `action`.
    pub fn require_admin(&self, action: &str) -> ApiResult<()> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "Only organization admins can {action}."
            )))
        }
    }

    /// Guests see only what they were granted, never who the organization's people are:
    /// the one rule for every listing of members, grants and teams.
    pub fn require_non_guest(&self, action: &str) -> ApiResult<()> {
        match self.role {
            Some(_) => Ok(()),
            None => Err(ApiError::forbidden(format!("Guests cannot {action}."))),
        }
    }
}

/// The team in the path, and whether the caller may manage it.
#[derive(Debug, Clone)]
pub struct TeamCtx {
    /// The team.
    pub team: TeamRow,
    /// Organization admin or team owner.
    pub can_manage: bool,
}

/// The space in the path, with the caller's effective role on it.
#[derive(Debug, Clone)]
pub struct SpaceCtx {
    /// The space (possibly deleted), shared with the access cache.
    pub space: Arc<SpaceRow>,
    /// The caller's effective role.
    pub role: Role,
    /// The caller's standing in the space's organization.
    pub org: OrgCtx,
    /// The caller's grants in that organization.
    pub grants: Arc<Grants>,
}

impl SpaceCtx {
    /// Edits are refused on a deleted space (it can be restored, then edited).
    pub fn require_live(&self) -> ApiResult<()> {
        match self.space.deleted_at {
            Some(_) => Err(ApiError::conflict(format!(
                "Space `{}` is deleted; restore it before changing it.",
                self.space.id
            ))),
            None => Ok(()),
        }
    }

    /// Requires at least `role` for an action beyond the route's own requirement.
    pub fn require(&self, role: Role, action: &str) -> ApiResult<()> {
        require_role(Some(self.role), role, action)
    }
}

/// The site in the path (the organization is in the request's `OrgCtx`).
#[derive(Debug, Clone)]
pub struct SiteCtx {
    /// The site.
    pub site: crate::store::sites::SiteRow,
}

/// The collection in the path, with the caller's effective role on it.
#[derive(Debug, Clone)]
pub struct CollectionCtx {
    /// The collection.
    pub collection: CollectionRow,
    /// The caller's effective role.
    pub role: Role,
    /// The caller's standing in the collection's organization.
    pub org: OrgCtx,
    /// The caller's grants in that organization.
    pub grants: Arc<Grants>,
}

/// 403 unless `have` reaches `need`.
pub fn require_role(have: Option<Role>, need: Role, action: &str) -> ApiResult<()> {
    if have >= Some(need) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "You need the `{}` role to {action}.",
            need.as_str()
        )))
    }
}

/// Loads an organization as the caller sees it: 404 unless they are a member and their
/// token reaches it. Every access to an organization's content passes here.
pub async fn load_org(state: &AppState, caller: &Caller, org_id: &OrgId) -> ApiResult<OrgCtx> {
    // A token confined to one organization sees no other, as if it were not a member.
    if !caller.reaches(org_id.as_str()) {
        return Err(ApiError::not_found(format!(
            "Organization `{org_id}` not found."
        )));
    }
    let now = state.clock.now_ms();
    let found = match state.cache.org(org_id, &caller.user.id, now) {
        Some(found) => found,
        None => {
            let generation = state.cache.generation_of(Scope::Org(org_id.as_str()));
            let found = Box::pin(store::orgs::get_for_user(
                &state.db,
                org_id,
                &caller.user.id,
            ))
            .await?
            .map(|o| Arc::new(store::orgs::OrgSeen::from(o)));
            state
                .cache
                .put_org(org_id, &caller.user.id, found.clone(), now, generation);
            found
        }
    };
    match found {
        Some(o) if o.member => Ok(OrgCtx {
            role: o.role.as_deref().and_then(Role::parse),
            org: o.org.clone(),
        }),
        _ => Err(ApiError::not_found(format!(
            "Organization `{org_id}` not found."
        ))),
    }
}

/// Loads a space as the caller sees it: 404 unless they have at least `read` on it.
pub async fn load_space(state: &AppState, caller: &Caller, space_id: &str) -> ApiResult<SpaceCtx> {
    let not_found = || ApiError::not_found(format!("Space `{space_id}` not found."));
    let space = space_row(state, space_id).await?.ok_or_else(not_found)?;
    let org = load_org(state, caller, &space.org_id)
        .await
        .map_err(|_| not_found())?;
    let grants = Grants::load(state, &space.org_id, &caller.user.id, org.role).await?;
    let role = grants.space_role(&space).ok_or_else(not_found)?;
    Ok(SpaceCtx {
        space,
        role,
        org,
        grants,
    })
}

/// Whether the user a signed URL was made for may still read `space_id`, and the space is
/// live: downloads by signed URL (files, PDFs) serve nothing once either stops being true.
pub async fn reader_still_reads(
    state: &AppState,
    reader_id: &str,
    space_id: &str,
) -> ApiResult<bool> {
    let Some(user) = store::users::get(&state.db, reader_id).await? else {
        return Ok(false);
    };
    Ok(
        load_space(state, &Caller::unscoped(Arc::new(user)), space_id)
            .await
            .is_ok_and(|ctx| ctx.space.deleted_at.is_none()),
    )
}

/// The answer `render` makes of `row` as `view` (its kind, id and view), rendered once for
/// each row the access cache hands out: a row is read far more often than it changes, and
/// rendering and serializing it was a tenth of a small read's time.
pub fn rendered<T: std::any::Any + Send + Sync>(
    state: &AppState,
    view: crate::cache::View<'_>,
    row: &Arc<T>,
    render: impl FnOnce() -> ApiResult<bytes::Bytes>,
) -> ApiResult<bytes::Bytes> {
    let now = state.clock.now_ms();
    if let Some(body) = state.cache.rendered(view, row, now) {
        return Ok(body);
    }
    let body = render()?;
    state.cache.put_rendered(view, row, body.clone(), now);
    Ok(body)
}

/// A space's row, deleted or not, through the access cache.
pub async fn space_row(state: &AppState, space_id: &str) -> ApiResult<Option<Arc<SpaceRow>>> {
    let now = state.clock.now_ms();
    if let Some(found) = state.cache.space(space_id, now) {
        return Ok(found);
    }
    let generation = state.cache.generation_of(Scope::Space(space_id));
    let found = Box::pin(store::spaces::get(&state.db, space_id))
        .await?
        .map(Arc::new);
    state
        .cache
        .put_space(space_id, found.clone(), now, generation);
    Ok(found)
}

/// The count of a space's open comments (0 for a space that is gone), through the access
/// cache: read apart from the space's row, which a comment does not move.
pub async fn space_comments(state: &AppState, space_id: &str) -> ApiResult<i64> {
    let now = state.clock.now_ms();
    if let Some(found) = state.cache.comment_count(space_id, now) {
        return Ok(found);
    }
    let generation = state.cache.generation_of(Scope::Comments(space_id));
    let found = store::spaces::comments(&state.db, space_id).await?;
    state
        .cache
        .put_comment_count(space_id, found, now, generation);
    Ok(found)
}

/// A user by id (an author, a reviewer), through the access cache.
pub async fn person(state: &AppState, user_id: &str) -> ApiResult<Option<UserRow>> {
    let now = state.clock.now_ms();
    if let Some(found) = state.cache.person(user_id, now) {
        return Ok(found);
    }
    let generation = state.cache.generation_of(Scope::User(user_id));
    let found = store::users::get(&state.db, user_id).await?;
    state
        .cache
        .put_person(user_id, found.clone(), now, generation);
    Ok(found)
}

/// Users by id, through the access cache; ids naming no user are left out.
pub async fn people(state: &AppState, ids: &[&str]) -> ApiResult<HashMap<String, UserRow>> {
    let now = state.clock.now_ms();
    let mut found = HashMap::new();
    let mut missing = Vec::new();
    for id in ids {
        match state.cache.person(id, now) {
            Some(Some(user)) => {
                found.insert(id.to_string(), user);
            }
            Some(None) => {}
            None => missing.push(*id),
        }
    }
    if missing.is_empty() {
        return Ok(found);
    }
    let generations: Vec<u64> = missing
        .iter()
        .map(|id| state.cache.generation_of(Scope::User(id)))
        .collect();
    let read = store::users::many(&state.db, &missing).await?;
    for (id, generation) in missing.into_iter().zip(generations) {
        let user = read.get(id).cloned();
        state.cache.put_person(id, user.clone(), now, generation);
        if let Some(user) = user {
            found.insert(id.to_string(), user);
        }
    }
    Ok(found)
}

/// The current revision of a space: read fresh by a write request (the cache is bypassed
/// there), else as fresh as the access cache (it moves with merges).
pub async fn current_revision(state: &AppState, space_id: &str) -> ApiResult<String> {
    Ok(space_row(state, space_id)
        .await?
        .map(|s| s.revision_id.clone())
        .unwrap_or_default())
}

/// Loads a collection as the caller sees it: 404 unless they have at least `read` on it.
pub async fn load_collection(
    state: &AppState,
    caller: &Caller,
    collection_id: &str,
) -> ApiResult<CollectionCtx> {
    let not_found = || ApiError::not_found(format!("Collection `{collection_id}` not found."));
    let collection = Box::pin(store::collections::get(&state.db, collection_id))
        .await?
        .ok_or_else(not_found)?;
    let org = load_org(state, caller, &collection.org_id)
        .await
        .map_err(|_| not_found())?;
    let grants = Grants::load(state, &collection.org_id, &caller.user.id, org.role).await?;
    let role = grants.collection_role(&collection).ok_or_else(not_found)?;
    Ok(CollectionCtx {
        collection,
        role,
        org,
        grants,
    })
}

/// Only the user themself may do this (e.g. edit their profile).
pub fn require_self(caller: &Caller, user_id: &str) -> ApiResult<()> {
    if caller.user.id == user_id {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "Users can only change their own profile.",
        ))
    }
}

/// An admin may act on any member; anyone may act on themself (e.g. leave).
pub fn require_admin_or_self(org: &OrgCtx, caller: &Caller, user_id: &str) -> ApiResult<()> {
    if org.is_admin() || caller.user.id == user_id {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "Only organization admins can do this to another member.",
        ))
    }
}
