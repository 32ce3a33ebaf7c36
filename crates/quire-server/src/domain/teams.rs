//! Team management rights, shared by member and team listings.

use crate::domain::access::OrgCtx;
use crate::domain::auth::Caller;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;
use crate::store::teams::TeamFilter;

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
