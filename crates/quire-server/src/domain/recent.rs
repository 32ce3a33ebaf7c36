//! The pages each person opened last in the app (`store::recent`), for their home screen and
//! the quick find.

use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;

/// Notes that `user_id` read page `page_id` of space `space_id`. The same page read again
/// right after (a reload, many readers' refreshes) is not written again while this node
/// remembers it as the person's last (a minute): reading is far more frequent than the
/// order of recent pages changes.
pub async fn seen(state: &AppState, user_id: &str, space_id: &str, page_id: &str) -> ApiResult<()> {
    let page = format!("{space_id} {page_id}");
    if state.recent_noted.get(user_id).as_deref() == Some(page.as_str()) {
        return Ok(());
    }
    store::recent::seen(&state.db, user_id, space_id, page_id, state.now()).await?;
    state.recent_noted.insert(user_id.to_string(), page);
    Ok(())
}
