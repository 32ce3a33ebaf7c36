//! Explicit permissions on spaces and collections: `SPACE/permissions/...` and
//! `COLL/permissions/...`, and the aggregate of everyone's effective role.

use std::collections::HashMap;

use crate::http::json::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::api::views;
use crate::domain::access::grants::Grants;
use crate::domain::access::{CollectionCtx, Role, SpaceCtx};
use crate::domain::permissions::{self, Content};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{nullable, JsonBody, PathParams, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;

/// The target of a permission operation: the space or the collection of the path (loaded by
/// the access check), with the path's other parameters.
pub struct Target {
    content: Content,
    params: PathParams,
}

impl Target {
    /// The principal named by the path: `userId` or `teamId`.
    fn principal(&self) -> ApiResult<(&'static str, &str)> {
        match (self.params.get("userId"), self.params.get("teamId")) {
            (Some(user), _) => Ok(("user", user)),
            (None, Some(team)) => Ok(("team", team)),
            _ => Err(ApiError::internal(anyhow::anyhow!(
                "permission route without a principal"
            ))),
        }
    }
}

impl FromRequestParts<AppState> for Target {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> ApiResult<Self> {
        let params = PathParams::read(parts).await?;
        if let Some(ctx) = parts.extensions.get::<SpaceCtx>() {
            return Ok(Target {
                content: Content::space(ctx),
                params,
            });
        }
        let ctx = parts.extensions.get::<CollectionCtx>().ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("permission route without a target"))
        })?;
        Ok(Target {
            content: Content::collection(ctx),
            params,
        })
    }
}

/// Body of `inviteToSpace` / `inviteToCollection`.
#[derive(Deserialize)]
pub struct InviteBody {
    #[serde(deserialize_with = "nullable")]
    role: Option<Option<Role>>,
    users: Option<Vec<String>>,
    teams: Option<Vec<String>>,
}

/// `inviteToSpace`, `inviteToCollection`.
pub async fn invite_to(
    State(state): State<AppState>,
    target: Target,
    JsonBody(body): JsonBody<InviteBody>,
) -> ApiResult<StatusCode> {
    let role = body
        .role
        .ok_or_else(|| ApiError::bad_request("`role` is required."))?;
    let users = body.users.unwrap_or_default();
    let teams = body.teams.unwrap_or_default();
    permissions::grant(&state, &target.content, &users, &teams, role).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Who holds a permission: a user or a team, under its own key.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Holder {
    /// `UserContentPermission.user`.
    User(views::User),
    /// `TeamContentPermission.team`.
    Team(views::Team),
}

/// `UserContentPermission`, `TeamContentPermission`: a role on content and who holds it.
#[derive(Serialize)]
pub struct Permission {
    permission: String,
    #[serde(flatten)]
    holder: Holder,
}

/// One page of the explicit grants of one principal kind on the target, with the users or
/// teams they name loaded in one query.
async fn list_grants(
    state: &AppState,
    target: &Target,
    principal_kind: &str,
    page: PageRequest,
) -> ApiResult<List<Permission>> {
    target
        .content
        .org
        .require_non_guest("list who has access")?;
    let scope = format!(
        "{}-{principal_kind}-permissions:{}",
        target.content.kind, target.content.id
    );
    let after = page.after::<(i64, String)>(&scope)?;
    let grants: Vec<_> =
        store::permissions::on_target(&state.db, target.content.kind, &target.content.id)
            .await?
            .into_iter()
            .filter(|g| g.principal_kind == principal_kind)
            .collect();
    let total = grants.len() as i64;
    let shown: Vec<_> = grants
        .into_iter()
        .filter(|g| {
            after
                .as_ref()
                .is_none_or(|a| (g.created_at, &g.principal_id) > (a.0, &a.1))
        })
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .collect();
    let ids: Vec<&str> = shown.iter().map(|g| g.principal_id.as_str()).collect();
    let mut principals: HashMap<String, Holder> = if principal_kind == "user" {
        store::users::get_many(&state.db, &ids)
            .await?
            .into_iter()
            .map(|u| (u.id.to_string(), Holder::User(views::user_row(state, &u))))
            .collect()
    } else {
        store::teams::get_many(&state.db, &target.content.org_id, &ids)
            .await?
            .into_iter()
            .map(|t| (t.id.clone(), Holder::Team(views::team(&t, false))))
            .collect()
    };
    let items = shown
        .into_iter()
        .filter_map(|g| {
            // One grant per principal and target: each holder is taken once.
            let holder = principals.remove(&g.principal_id)?;
            Some((
                Permission {
                    permission: g.role,
                    holder,
                },
                (g.created_at, g.principal_id),
            ))
        })
        .collect();
    page.finish(&scope, items, total)
}

/// `listUserPermissionsInSpace`, `listUserPermissionsInCollection`.
pub async fn list_users(
    State(state): State<AppState>,
    target: Target,
    page: PageRequest,
) -> ApiResult<Json<List<Permission>>> {
    Ok(Json(list_grants(&state, &target, "user", page).await?))
}

/// `listTeamPermissionsInSpace`, `listTeamPermissionsInCollection`.
pub async fn list_teams(
    State(state): State<AppState>,
    target: Target,
    page: PageRequest,
) -> ApiResult<Json<List<Permission>>> {
    Ok(Json(list_grants(&state, &target, "team", page).await?))
}

/// Body of the PATCH permission endpoints.
#[derive(Deserialize)]
pub struct RoleBody {
    #[serde(default, deserialize_with = "nullable")]
    role: Option<Option<Role>>,
}

/// `updateUserPermissionInSpace`, `updateTeamPermissionInSpace`,
/// `updateUserPermissionInCollection`, `updateTeamPermissionInCollection`.
pub async fn update_permission(
    State(state): State<AppState>,
    target: Target,
    JsonBody(body): JsonBody<RoleBody>,
) -> ApiResult<StatusCode> {
    let principal = target.principal()?;
    permissions::set(&state, &target.content, principal, body.role).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `removeUserFromSpace`, `removeTeamFromSpace`, `removeUserFromCollection`,
/// `removeTeamFromCollection`; 204 also when the principal had no permission.
pub async fn remove_permission(
    State(state): State<AppState>,
    target: Target,
) -> ApiResult<StatusCode> {
    let principal = target.principal()?;
    permissions::remove(&state, &target.content, principal).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Query of the aggregate listings.
#[derive(Deserialize, Default)]
pub struct AggregateQuery {
    role: Option<Role>,
}

/// Every member's effective role on the target, computed from every source at once.
async fn aggregate(
    state: &AppState,
    target: Target,
    query: AggregateQuery,
    page: PageRequest,
) -> ApiResult<List<Permission>> {
    let scope = format!(
        "{}-aggregate:{}:{:?}",
        target.content.kind, target.content.id, query.role
    );
    let after = page.after::<String>(&scope)?;
    let collections: HashMap<_, _> = store::collections::list(&state.db, &target.content.org_id)
        .await?
        .into_iter()
        .map(|c| (c.id.clone(), c))
        .collect();
    let all_grants = store::permissions::for_org(&state.db, &target.content.org_id).await?;
    let memberships = store::teams::memberships(&state.db, &target.content.org_id).await?;
    let (members, _) = store::members::list(
        &state.db,
        &target.content.org_id,
        &Default::default(),
        None,
        i64::MAX,
    )
    .await?;
    let space = if target.content.kind == "space" {
        store::spaces::get(&state.db, &target.content.id).await?
    } else {
        None
    };
    let mut rows = Vec::new();
    for m in members {
        let teams: Vec<&String> = memberships
            .iter()
            .filter(|(_, u)| *u == m.user_id)
            .map(|(t, _)| t)
            .collect();
        let mut explicit: HashMap<(String, String), Role> = HashMap::new();
        for g in &all_grants {
            let applies = (g.principal_kind == "user" && g.principal_id == m.user_id)
                || (g.principal_kind == "team" && teams.contains(&&g.principal_id));
            if let (true, Some(role)) = (applies, Role::parse(&g.role)) {
                let slot = explicit
                    .entry((g.target_kind.clone(), g.target_id.clone()))
                    .or_insert(role);
                *slot = (*slot).max(role);
            }
        }
        let grants = Grants::assemble(
            m.role.as_deref().and_then(Role::parse),
            collections.clone(),
            explicit,
        );
        let role = match (&space, collections.get(&target.content.id)) {
            (Some(s), _) => grants.space_role(s),
            (None, Some(c)) => grants.collection_role(c),
            _ => None,
        };
        let Some(role) = role else { continue };
        if query.role.is_some_and(|want| want != role) {
            continue;
        }
        let user = views::user(
            state,
            &m.user_id,
            &m.email,
            &m.display_name,
            m.photo_url.as_deref(),
        );
        rows.push((
            m.user_id.to_string(),
            Permission {
                permission: role.as_str().to_string(),
                holder: Holder::User(user),
            },
        ));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let total = rows.len() as i64;
    let page_rows = rows
        .into_iter()
        .filter(|(id, _)| after.as_ref().is_none_or(|a| id > a))
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .map(|(id, v)| (v, id))
        .collect();
    page.finish(&scope, page_rows, total)
}

/// `listPermissionsAggregateInSpace`, `listPermissionsAggregateInCollection`.
pub async fn aggregate_permissions(
    State(state): State<AppState>,
    target: Target,
    QueryParams(query): QueryParams<AggregateQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<Permission>>> {
    target
        .content
        .org
        .require_non_guest("list who has access")?;
    Ok(Json(aggregate(&state, target, query, page).await?))
}
