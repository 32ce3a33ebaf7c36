//! Effective roles on spaces and collections.
//!
//! A member's role on a space is the highest of: organization admin; their organization
//! role (not for guests); the default level of the space and of each ancestor collection
//! (not for guests; `inherit` and no-default contribute nothing); and the roles granted
//! explicitly, to them or to one of their teams, on the space or on an ancestor collection.

use crate::ids::{OrgId, UserId};
use std::collections::HashMap;
use std::sync::Arc;

use crate::domain::access::Role;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;
use crate::store::collections::CollectionRow;
use crate::store::spaces::SpaceRow;

/// What decides one user's roles in one organization, loaded once per request.
#[derive(Debug, Clone)]
pub struct Grants {
    member_role: Option<Role>,
    collections: HashMap<String, CollectionRow>,
    explicit: HashMap<(String, String), Role>,
}

impl Grants {
    /// The collections of the organization and the grants reaching the user, through the
    /// access cache. `member_role` is the user's organization role (`None` for a guest).
    pub async fn load(
        state: &AppState,
        org_id: &OrgId,
        user_id: &UserId,
        member_role: Option<Role>,
    ) -> ApiResult<Arc<Self>> {
        let now = state.clock.now_ms();
        if let Some(found) = state.cache.derived::<Grants>(org_id, user_id, now) {
            if found.member_role == member_role {
                return Ok(found);
            }
        }
        let generation = state
            .cache
            .generation_of(crate::cache::Scope::Org(org_id.as_str()));
        let grants = Arc::new(Box::pin(Self::read(state, org_id, user_id, member_role)).await?);
        state
            .cache
            .put_derived(org_id, user_id, grants.clone(), now, generation);
        Ok(grants)
    }

    /// Reads the collections of the organization and the grants reaching the user.
    async fn read(
        state: &AppState,
        org_id: &OrgId,
        user_id: &UserId,
        member_role: Option<Role>,
    ) -> ApiResult<Self> {
        let collections = store::collections::list(&state.db, org_id)
            .await?
            .into_iter()
            .map(|c| (c.id.clone(), c))
            .collect();
        let mut explicit: HashMap<(String, String), Role> = HashMap::new();
        for grant in store::permissions::for_user(&state.db, org_id, user_id).await? {
            if let Some(role) = Role::parse(&grant.role) {
                let slot = explicit
                    .entry((grant.target_kind, grant.target_id))
                    .or_insert(role);
                *slot = (*slot).max(role);
            }
        }
        Ok(Self {
            member_role,
            collections,
            explicit,
        })
    }

    /// Grants assembled from already-loaded parts (for computing many users at once).
    pub fn assemble(
        member_role: Option<Role>,
        collections: HashMap<String, CollectionRow>,
        explicit: HashMap<(String, String), Role>,
    ) -> Self {
        Self {
            member_role,
            collections,
            explicit,
        }
    }

    /// The organization's collections by id.
    pub fn collections(&self) -> &HashMap<String, CollectionRow> {
        &self.collections
    }

    fn walk(
        &self,
        own_level: Option<&str>,
        kind: &str,
        id: &str,
        parent: Option<&str>,
    ) -> Option<Role> {
        if self.member_role == Some(Role::Admin) {
            return Some(Role::Admin);
        }
        let guest = self.member_role.is_none();
        let mut best = self.member_role;
        let mut consider = |level: Option<&str>, kind: &str, id: &str| {
            if !guest {
                if let Some(role) = level.and_then(Role::parse) {
                    best = best.max(Some(role));
                }
            }
            if let Some(role) = self.explicit.get(&(kind.to_string(), id.to_string())) {
                best = best.max(Some(*role));
            }
        };
        consider(own_level, kind, id);
        let mut next = parent.map(str::to_string);
        let mut hops = 0;
        while let Some(cid) = next {
            let Some(c) = self.collections.get(&cid) else {
                break;
            };
            consider(c.default_level.as_deref(), "collection", &c.id);
            next = c.parent_id.clone();
            hops += 1;
            if hops > 1000 {
                break; // a cycle cannot be stored, but never loop forever
            }
        }
        best
    }

    /// The caller's effective role on a space (`None`: no access).
    pub fn space_role(&self, space: &SpaceRow) -> Option<Role> {
        self.walk(
            space.default_level.as_deref(),
            "space",
            &space.id,
            space.parent_id.as_deref(),
        )
    }

    /// The caller's effective role on a collection (`None`: no access).
    pub fn collection_role(&self, collection: &CollectionRow) -> Option<Role> {
        self.walk(
            collection.default_level.as_deref(),
            "collection",
            &collection.id,
            collection.parent_id.as_deref(),
        )
    }

    /// Whether `ancestor` is `id` or one of its ancestors.
    pub fn is_within(&self, id: &str, ancestor: &str) -> bool {
        let mut next = Some(id.to_string());
        let mut hops = 0;
        while let Some(cid) = next {
            if cid == ancestor {
                return true;
            }
            next = self.collections.get(&cid).and_then(|c| c.parent_id.clone());
            hops += 1;
            if hops > 1000 {
                return false;
            }
        }
        false
    }
}
