//! Collections' own workflows, shared by the API and the app.

use crate::domain::access::grants::Grants;
use crate::domain::access::{require_role, OrgCtx, Role};
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::collections::CollectionRow;
use crate::validate;

/// Creates a collection in the organization (needs `create` there) or in collection
/// `parent` (needs `create` in it); answers it with the caller's role on it.
pub async fn create(
    state: &AppState,
    org: &OrgCtx,
    caller: &Caller,
    title: String,
    description: Option<String>,
    parent: Option<String>,
) -> ApiResult<(CollectionRow, Role)> {
    let grants = Grants::load(state, &org.org.id, &caller.user.id, org.role).await?;
    match &parent {
        None => require_role(org.role, Role::Create, "create content in the organization")?,
        Some(id) => {
            let parent = grants
                .collections()
                .get(id)
                .filter(|c| grants.collection_role(c).is_some())
                .ok_or_else(|| {
                    ApiError::bad_request(format!("`parent`: collection `{id}` not found."))
                })?;
            require_role(
                grants.collection_role(parent),
                Role::Create,
                "create content in this collection",
            )?;
        }
    }
    validate::length("title", &title, 0, 50)?;
    if let Some(d) = &description {
        validate::length("description", d, 0, 100)?;
    }
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    let collection = CollectionRow {
        id: new_id(),
        org_id: org.org.id.clone(),
        parent_id: parent,
        title,
        description,
        default_level: Some("inherit".into()),
        position: store::spaces::next_position(&mut tx, &org.org.id).await?,
        created_at: now,
        updated_at: now,
    };
    store::collections::insert(&mut tx, &collection).await?;
    tx.commit().await?;
    let role = grants
        .collection_role(&collection)
        .unwrap_or(Role::Admin)
        .max(Role::Admin.min(org.role.unwrap_or(Role::Read)));
    Ok((collection, role))
}

/// Renames a collection, changes its description and/or its default level (collection
/// admins); the collection as stored after.
pub async fn update(
    state: &AppState,
    collection: &CollectionRow,
    patch: store::collections::CollectionPatch,
) -> ApiResult<CollectionRow> {
    if let Some(title) = &patch.title {
        validate::length("title", title, 0, 50)?;
    }
    if let Some(d) = &patch.description {
        validate::length("description", d, 0, 100)?;
    }
    let missing = || ApiError::not_found(format!("Collection `{}` not found.", collection.id));
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(&collection.org_id)]);
    if !store::collections::patch(&mut tx, &collection.id, &patch, state.now()).await? {
        return Err(missing());
    }
    tx.commit().await?;
    store::collections::get(&state.db, &collection.id)
        .await?
        .ok_or_else(missing)
}

/// Deletes a collection (collection admins): its spaces and sub-collections move up to its
/// parent, so that no content is lost.
pub async fn delete(state: &AppState, collection: &CollectionRow) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(&collection.org_id)]);
    store::collections::delete_keeping_children(&mut tx, collection).await?;
    tx.commit().await?;
    Ok(())
}

/// Moves a collection under another collection (or the organization's root) and/or among
/// its siblings; never under itself or its own descendants.
pub async fn move_collection(
    state: &AppState,
    ctx: &crate::domain::access::CollectionCtx,
    body: &crate::domain::placement::MoveBody,
) -> ApiResult<()> {
    use crate::domain::placement::{move_target, move_to, Moving};
    let (parent, place) = move_target(
        &ctx.org,
        &ctx.grants,
        ctx.collection.parent_id.as_deref(),
        body,
    )?;
    if let Some(p) = &parent {
        if ctx.grants.is_within(p, &ctx.collection.id) {
            return Err(ApiError::bad_request(
                "`parent`: a collection cannot move under itself or its descendants.",
            ));
        }
    }
    let moving = Moving {
        item: crate::store::ordering::Item {
            kind: "collection".into(),
            id: ctx.collection.id.clone(),
        },
        org_id: &ctx.collection.org_id,
        position: ctx.collection.position,
    };
    move_to(state, &moving, parent.as_deref(), &place).await
}
