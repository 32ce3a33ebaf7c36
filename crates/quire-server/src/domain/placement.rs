//! Where spaces and collections go: default levels, moves among siblings and between
//! collections, and transfers between organizations, shared by both families.

use crate::cache::Scope;
use serde::Deserialize;

use crate::domain::access::grants::Grants;
use crate::domain::access::{load_org, require_role, OrgCtx, Role};
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::collections::CollectionRow;
use crate::store::ordering::{Item, Place};
use crate::store::spaces::{Relocation, SpaceRow};
use crate::validate::nullable;

/// A default level as sent: a role, `null` (no default access) or `inherit`.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(untagged)]
pub enum LevelIn {
    /// A role.
    Role(Role),
    /// `inherit`.
    Inherit(InheritTag),
}

/// The literal `inherit`.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum InheritTag {
    Inherit,
}

/// Stored form of a default level.
pub fn level_to_db(level: Option<LevelIn>) -> Option<String> {
    match level {
        None => None,
        Some(LevelIn::Inherit(_)) => Some("inherit".into()),
        Some(LevelIn::Role(r)) => Some(r.as_str().into()),
    }
}

/// Who may create content under `parent` (a collection) or at the organization's root.
pub fn require_create_in(org: &OrgCtx, grants: &Grants, parent: Option<&str>) -> ApiResult<()> {
    match parent {
        None => require_role(org.role, Role::Create, "create content in the organization"),
        Some(id) => {
            let collection = grants
                .collections()
                .get(id)
                .filter(|c| grants.collection_role(c).is_some())
                .ok_or_else(|| {
                    ApiError::bad_request(format!("`parent`: collection `{id}` not found."))
                })?;
            require_role(
                grants.collection_role(collection),
                Role::Create,
                "create content in this collection",
            )
        }
    }
}

/// A sibling reference in a `position`.
#[derive(Deserialize, Debug)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Pointer {
    /// A space.
    Space { space: String },
    /// A collection.
    Collection { collection: String },
}

impl Pointer {
    fn item(&self) -> Item {
        match self {
            Pointer::Space { space } => Item {
                kind: "space".into(),
                id: space.clone(),
            },
            Pointer::Collection { collection } => Item {
                kind: "collection".into(),
                id: collection.clone(),
            },
        }
    }
}

/// `ContentPosition`.
#[derive(Deserialize, Debug, Default)]
pub struct Position {
    before: Option<Pointer>,
    after: Option<Pointer>,
}

impl Position {
    /// The place this position names.
    pub fn place(&self) -> ApiResult<Place> {
        match (&self.before, &self.after) {
            (Some(b), None) => Ok(Place::Before(b.item())),
            (None, Some(a)) => Ok(Place::After(a.item())),
            (None, None) => Ok(Place::End),
            (Some(_), Some(_)) => Err(ApiError::bad_request(
                "`position` takes `before` or `after`, not both.",
            )),
        }
    }
}

/// Body of `moveSpace` and `moveCollection`.
#[derive(Deserialize)]
pub struct MoveBody {
    #[serde(default, deserialize_with = "nullable")]
    pub parent: Option<Option<String>>,
    pub position: Option<Position>,
}

/// Resolves and checks a move's destination: the new parent (which the caller must be
/// able to create in) and the place among siblings.
pub fn move_target(
    ctx_org: &OrgCtx,
    grants: &Grants,
    current_parent: Option<&str>,
    body: &MoveBody,
) -> ApiResult<(Option<String>, Place)> {
    if body.parent.is_none() && body.position.is_none() {
        return Err(ApiError::bad_request(
            "Request body must set `parent` or `position`.",
        ));
    }
    let parent = match &body.parent {
        Some(p) => p.clone(),
        None => current_parent.map(str::to_string),
    };
    if body.parent.is_some() {
        require_create_in(ctx_org, grants, parent.as_deref())?;
    }
    let place = match &body.position {
        Some(p) => p.place()?,
        None => Place::End,
    };
    Ok((parent, place))
}

/// Body of `transferSpace` / `transferCollection`.
#[derive(Deserialize)]
pub struct TransferBody {
    pub organization: String,
    /// Destination collection in the target organization (optional).
    #[serde(alias = "collection")]
    pub parent: Option<String>,
}

/// Checks a transfer's destination: the caller must administer the target organization;
/// a destination collection must belong to it. Returns the target organization's grants.
pub async fn transfer_target(
    state: &AppState,
    caller: &Caller,
    body: &TransferBody,
) -> ApiResult<(OrgCtx, std::sync::Arc<Grants>)> {
    let target = load_org(
        state,
        caller,
        &crate::ids::OrgId::new(body.organization.clone()),
    )
    .await
    .map_err(|_| ApiError::not_found(format!("Organization `{}` not found.", body.organization)))?;
    require_role(
        target.role,
        Role::Admin,
        "transfer content into the target organization",
    )?;
    let grants = Grants::load(state, &target.org.id, &caller.user.id, target.role).await?;
    if let Some(parent) = &body.parent {
        if !grants.collections().contains_key(parent) {
            return Err(ApiError::bad_request(format!(
                "`parent`: collection `{parent}` not found in the target organization."
            )));
        }
    }
    Ok((target, grants))
}

/// What is being moved: a space or a collection, with where it stands now.
pub struct Moving<'a> {
    /// The item (`space` or `collection`).
    pub item: Item,
    /// Its organization.
    pub org_id: &'a str,
    /// Its position among its current siblings.
    pub position: i64,
}

/// Moves an item under `parent` and to `place` among its new siblings, in one transaction
/// that writes only the parent column: a move never brings back fields another request
/// changed meanwhile, nor a space deleted meanwhile.
pub async fn move_to(
    state: &AppState,
    moving: &Moving<'_>,
    parent: Option<&str>,
    place: &Place,
) -> ApiResult<()> {
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[Scope::Org(moving.org_id)]);
    if moving.item.kind == "space" {
        tx.touches(&[Scope::Space(&moving.item.id)]);
    }
    let moved = if moving.item.kind == "space" {
        store::spaces::set_parent(&mut tx, &moving.item.id, parent, now).await?
    } else {
        store::collections::set_parent(&mut tx, &moving.item.id, parent, now).await?
    };
    if !moved {
        return Err(ApiError::conflict(format!(
            "`{}` was deleted meanwhile; nothing was moved.",
            moving.item.id
        )));
    }
    let placed = store::ordering::place(
        &mut tx,
        moving.org_id,
        parent,
        &moving.item,
        moving.position,
        place,
    )
    .await?;
    if !placed {
        return Err(ApiError::bad_request(
            "`position` must name a sibling under the destination parent.",
        ));
    }
    tx.commit().await?;
    Ok(())
}

/// What a transfer takes: a space, or a collection with its sub-collections and their spaces.
pub enum Transferred<'a> {
    /// A live space.
    Space(&'a SpaceRow),
    /// A collection and everything below it.
    Collection(&'a CollectionRow),
}

impl Transferred<'_> {
    fn item(&self) -> Item {
        match self {
            Transferred::Space(s) => Item {
                kind: "space".into(),
                id: s.id.clone(),
            },
            Transferred::Collection(c) => Item {
                kind: "collection".into(),
                id: c.id.clone(),
            },
        }
    }

    fn org_id(&self) -> &str {
        match self {
            Transferred::Space(s) => &s.org_id,
            Transferred::Collection(c) => &c.org_id,
        }
    }
}

/// Moves a space or a collection tree to `org_id` (under `parent`, at the end of its list)
/// in one transaction that writes only where things stand: organization, parent, position
/// (and the visibility of an `in-collection` space left at the root). Grants stay behind
/// when the organization changes. 409 when the space was deleted meanwhile.
pub async fn transfer(
    state: &AppState,
    what: Transferred<'_>,
    org_id: &str,
    parent: Option<&str>,
) -> ApiResult<()> {
    let now = state.now();
    let moving_org = org_id != what.org_id();
    let mut tx = state.db.begin().await?;
    tx.touches(&[Scope::Org(org_id), Scope::Org(what.org_id())]);
    let position = store::spaces::next_position(&mut tx, org_id).await?;
    let root = Relocation {
        org_id,
        parent: Some(parent),
        position,
        now,
    };
    let item = what.item();
    match what {
        Transferred::Space(space) => {
            tx.touches(&[Scope::Space(&space.id)]);
            if !store::spaces::relocate(&mut tx, &space.id, &root).await? {
                return Err(ApiError::conflict(format!(
                    "Space `{}` was deleted meanwhile; nothing was transferred.",
                    space.id
                )));
            }
            if moving_org {
                store::permissions::clear(&mut tx, "space", &space.id).await?;
                // Sites publish spaces of their own organization only.
                store::sites::remove_space(&mut tx, &space.id).await?;
            }
        }
        Transferred::Collection(top) => {
            let all = store::collections::list_tx(&mut tx, &top.org_id).await?;
            for c in subtree(&all, &top.id) {
                let to = if c.id == top.id {
                    root
                } else {
                    Relocation {
                        org_id,
                        parent: None,
                        position: store::spaces::next_position(&mut tx, org_id).await?,
                        now,
                    }
                };
                store::collections::relocate(&mut tx, &c.id, &to).await?;
                if moving_org {
                    store::permissions::clear(&mut tx, "collection", &c.id).await?;
                }
                // Deleted spaces go too: they belong where their collection is.
                for space in store::spaces::list_in_parent_tx(&mut tx, &c.id).await? {
                    let to = Relocation {
                        org_id,
                        parent: None,
                        position: store::spaces::next_position(&mut tx, org_id).await?,
                        now,
                    };
                    tx.touches(&[Scope::Space(&space.id)]);
                    store::spaces::relocate_any(&mut tx, &space.id, &to).await?;
                    if moving_org {
                        store::permissions::clear(&mut tx, "space", &space.id).await?;
                        store::sites::remove_space(&mut tx, &space.id).await?;
                    }
                }
            }
        }
    }
    store::ordering::place(&mut tx, org_id, parent, &item, position, &Place::End).await?;
    tx.commit().await?;
    Ok(())
}

/// `top` and every collection below it, read from one listing of the organization (each
/// collection visited once, so a corrupt cycle cannot loop).
fn subtree<'a>(all: &'a [CollectionRow], top: &str) -> Vec<&'a CollectionRow> {
    let mut out: Vec<&CollectionRow> = all.iter().filter(|c| c.id == top).collect();
    let mut i = 0;
    while i < out.len() {
        let id = out[i].id.clone();
        for c in all {
            if c.parent_id.as_deref() == Some(id.as_str()) && !out.iter().any(|o| o.id == c.id) {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}
