//! `listChangeRequestsForOrganization` (`GET ORG/change-requests`, 0.202.0): the change
//! requests of every space of the organization that the caller can read, with the filters
//! and keyset paging of the space listing plus the organization-wide ones.

use std::collections::HashMap;

use axum::extract::State;
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;

use super::handlers::StatusFilter;
use crate::api::views;
use crate::domain::access::grants::Grants;
use crate::domain::access::OrgCtx;
use crate::domain::auth::Caller;
use crate::error::ApiResult;
use crate::http::extract::QueryParams;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::change_requests::{OrgFilter, OrgOrder, SpaceScope};

/// `orderBy`: the official `ChangeRequestOrderBy`.
#[derive(Deserialize, Clone, Copy, Default, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum OrderBy {
    /// Most recently updated first (the default).
    #[default]
    UpdatedAt,
    /// Most recently created first.
    CreatedAt,
}

/// `finding`: whether change requests opened from triage are included.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Finding {
    /// Leave out change requests from triage.
    None,
    /// Include them.
    All,
}

/// Query of `listChangeRequestsForOrganization`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct OrgListQuery {
    /// Repeated `status=`; absent means `open` alone.
    #[serde(default)]
    status: Vec<StatusFilter>,
    creator: Option<String>,
    contributor: Option<String>,
    requested_reviewer: Option<String>,
    site: Option<String>,
    space: Option<String>,
    topic: Option<String>,
    styleguide_run: Option<String>,
    // Quire opens no change requests from triage, so `none` and `all` list the same; the
    // value is still checked against the official enum.
    #[allow(dead_code)]
    finding: Option<Finding>,
    #[serde(default)]
    order_by: OrderBy,
}

fn given(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// `listChangeRequestsForOrganization`: newest first by `orderBy` (default `updatedAt`);
/// `status` defaults to `open`. Spaces the caller cannot read, and deleted spaces, are
/// left out as the space listings leave them out.
pub async fn list_org_change_requests(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    QueryParams(query): QueryParams<OrgListQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<views::ChangeRequest>>> {
    let mut statuses: Vec<&str> = query.status.iter().map(|s| s.as_str()).collect();
    if statuses.is_empty() {
        statuses.push(StatusFilter::Open.as_str());
    }
    statuses.sort_unstable();
    statuses.dedup();
    let order = match query.order_by {
        OrderBy::UpdatedAt => OrgOrder::UpdatedAt,
        OrderBy::CreatedAt => OrgOrder::CreatedAt,
    };
    let scope = format!(
        "org-change-requests:{}:{:?}:{}",
        org.org.id,
        order,
        statuses.join(",")
    );
    let after = page.after::<(i64, String)>(&scope)?;

    let grants = Grants::load(&state, &org.org.id, &caller.user.id, org.role).await?;
    let spaces = store::spaces::list_live(&state.db, &org.org.id, None).await?;
    let total = spaces.len();
    let revisions: HashMap<String, String> = spaces
        .into_iter()
        .filter(|s| grants.space_role(s).is_some())
        .map(|s| (s.id, s.revision_id))
        .collect();
    let wanted_space = given(query.space);
    let mut ids: Vec<&str> = revisions
        .keys()
        .map(String::as_str)
        .filter(|id| wanted_space.as_deref().is_none_or(|w| w == *id))
        .collect();
    ids.sort_unstable();
    // Quire links no change request to a reviewer request, site, site topic or style guide
    // run: a filter on any of them matches nothing.
    let unmatched = [
        &query.requested_reviewer,
        &query.site,
        &query.topic,
        &query.styleguide_run,
    ]
    .iter()
    .any(|f| f.as_deref().is_some_and(|v| !v.is_empty()));
    if unmatched {
        ids.clear();
    }
    // A member's organization role reaches every space, including one created while this
    // request runs, so the query may decide the set itself; a guest's list is explicit.
    let everything = org.role.is_some() && wanted_space.is_none() && ids.len() == total;
    let spaces = if everything && !unmatched {
        SpaceScope::AllLive(&org.org.id)
    } else {
        SpaceScope::Only(&ids)
    };
    let creator = given(query.creator);
    let contributor = given(query.contributor);
    let filter = OrgFilter {
        spaces,
        statuses: &statuses,
        creator: creator.as_deref(),
        contributor: contributor.as_deref(),
        order,
    };
    let (rows, count) =
        store::change_requests::list_in_org(&state.db, &filter, after, page.fetch_limit()).await?;
    let creators = crate::domain::change_requests::creators(&state, &rows).await?;
    let mut current = HashMap::new();
    for c in &rows {
        if !current.contains_key(&c.space_id) {
            // A space created after the visibility pass: read its revision now.
            let revision = match revisions.get(&c.space_id) {
                Some(r) => r.clone(),
                None => {
                    crate::domain::change_requests::current_revision(&state, &c.space_id).await?
                }
            };
            current.insert(c.space_id.clone(), revision);
        }
    }
    let rows = rows
        .into_iter()
        .map(|c| {
            let key = match order {
                OrgOrder::UpdatedAt => (c.updated_at, c.id.clone()),
                OrgOrder::CreatedAt => (c.created_at, c.id.clone()),
            };
            let body = views::change_request(
                &state,
                &c,
                creators.get(&c.created_by),
                &current[&c.space_id],
            );
            (body, key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}
