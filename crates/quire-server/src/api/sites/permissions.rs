//! `listPermissionsAggregateInSite`: who may open a site in Quire and why. Sites are read by
//! every member of their organization (not guests: a site lists every space it holds), so
//! each member's permission is their organization role, enforced by the organization.

use axum::extract::State;
use axum::Extension;
use serde::Serialize;

use crate::api::views::{self, User};
use crate::domain::access::{OrgCtx, SiteCtx};
use crate::error::ApiResult;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;

/// `UserSitePermission`.
#[derive(Serialize)]
pub struct UserSitePermission {
    permission: String,
    user: User,
    origin: OrganizationPointer,
}

/// `OrganizationPointer`.
#[derive(Serialize)]
pub struct OrganizationPointer {
    #[serde(rename = "type")]
    kind: &'static str,
    organization: String,
}

/// `listPermissionsAggregateInSite`: the organization's members (guests excluded), by user
/// id, each with their role.
pub async fn list_permissions_aggregate_in_site(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<UserSitePermission>>> {
    let scope = format!("site-aggregate:{}", ctx.site.id);
    let after = page.after::<String>(&scope)?;
    // As the space and collection aggregates do: every member at once, paged here.
    let (members, _) =
        store::members::list(&state.db, &org.org.id, &Default::default(), None, i64::MAX).await?;
    let mut rows: Vec<(String, UserSitePermission)> = members
        .into_iter()
        .filter_map(|m| {
            let role = m.role.clone()?;
            let user = views::user(
                &state,
                &m.user_id,
                &m.email,
                &m.display_name,
                m.photo_url.as_deref(),
            );
            Some((
                m.user_id.to_string(),
                UserSitePermission {
                    permission: role,
                    user,
                    origin: OrganizationPointer {
                        kind: "organization",
                        organization: org.org.id.to_string(),
                    },
                },
            ))
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let total = i64::try_from(rows.len()).unwrap_or(i64::MAX);
    let page_rows = rows
        .into_iter()
        .filter(|(id, _)| after.as_ref().is_none_or(|a| id > a))
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .map(|(id, v)| (v, id))
        .collect();
    Ok(Json(page.finish(&scope, page_rows, total)?))
}
