//! The pages each person opened last in the app (`store::recent`), for their home screen and
//! the quick find.

use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;

/// Notes that `user_id` read page `page_id` of space `space_id`. A page read again on this
/// node within a minute is not written again: reading is far more frequent than the order
/// of recent pages needs.
pub async fn seen(state: &AppState, user_id: &str, space_id: &str, page_id: &str) -> ApiResult<()> {
    let key = format!("{user_id} {space_id} {page_id}");
    if state.recent_noted.contains_key(&key) {
        return Ok(());
    }
    store::recent::seen(&state.db, user_id, space_id, page_id, state.now()).await?;
    state.recent_noted.insert(key, ());
    Ok(())
}
