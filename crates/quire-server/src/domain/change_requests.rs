//! Change requests as the content workflows see them: finding one by id or number, the
//! space's current revision, and the right to edit.

use crate::domain::access::{Role, SpaceCtx};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::change_requests::ChangeRequestRow;

/// Loads a change request of the space by id or number; 404 otherwise.
pub async fn load(
    state: &AppState,
    ctx: &SpaceCtx,
    id_or_number: &str,
) -> ApiResult<ChangeRequestRow> {
    store::change_requests::get(&state.db, &ctx.space.id, id_or_number)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Change request `{id_or_number}` not found in this space."
            ))
        })
}

/// The space's current revision, read fresh (it moves with merges).
pub async fn current_revision(state: &AppState, space_id: &str) -> ApiResult<String> {
    Ok(store::spaces::get(&state.db, space_id)
        .await?
        .map(|s| s.revision_id)
        .unwrap_or_default())
}

/// Editing a change request's content needs `edit` on the space.
pub fn require_edit(ctx: &SpaceCtx) -> ApiResult<()> {
    ctx.require(Role::Edit, "edit content in this space")
}
