//! Turns at heavy work (content imports, PDF exports), per node: a node runs a few of each at once,
//! so that their memory does not add up without bound. A request that gets no turn within
//! a short wait is answered 503 with `Retry-After`, rather than queueing without end.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A turn among `slots`, waiting at most the configured `busy_wait_ms`; `work` names the
/// work in the 503's message ("imports", "PDF exports"), whose `Retry-After` is that wait.
pub async fn take(
    state: &AppState,
    slots: &Arc<Semaphore>,
    work: &str,
) -> ApiResult<OwnedSemaphorePermit> {
    let wait = Duration::from_millis(state.config.busy_wait_ms);
    match tokio::time::timeout(wait, slots.clone().acquire_owned()).await {
        Ok(Ok(turn)) => Ok(turn),
        Ok(Err(closed)) => Err(ApiError::internal(closed)),
        Err(_) => {
            let secs = wait.as_secs().max(1);
            Err(ApiError::Busy(
                format!("This server is busy with other {work}; retry in {secs} s."),
                secs,
            ))
        }
    }
}
