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
    state
        .cache
        .invalidate(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    Ok((collection, role))
}
