//! Explicit permissions on spaces and collections: `SPACE/permissions/...` and
//! `COLL/permissions/...`, and the aggregate of everyone's effective role.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::views;
use crate::domain::access::grants::Grants;
use crate::domain::access::{CollectionCtx, Role, SpaceCtx};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{nullable, JsonBody, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;

/// The target of a permission endpoint.
struct Target {
    kind: &'static str,
    id: String,
    org_id: String,
}

fn space_target(ctx: &SpaceCtx) -> Target {
    Target {
        kind: "space",
        id: ctx.space.id.clone(),
        org_id: ctx.space.org_id.clone(),
    }
}

fn collection_target(ctx: &CollectionCtx) -> Target {
    Target {
        kind: "collection",
        id: ctx.collection.id.clone(),
        org_id: ctx.collection.org_id.clone(),
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

async fn invite(state: &AppState, target: Target, body: InviteBody) -> ApiResult<StatusCode> {
    let role = body
        .role
        .ok_or_else(|| ApiError::bad_request("`role` is required."))?;
    let users = body.users.unwrap_or_default();
    let teams = body.teams.unwrap_or_default();
    if users.is_empty() && teams.is_empty() {
        return Err(ApiError::bad_request(
            "Request body must name at least one of `users` or `teams`.",
        ));
    }
    let now = state.now();
    let mut tx = state.db.begin().await?;
    for (i, user) in users.iter().enumerate() {
        if store::members::get_tx(&mut tx, &target.org_id, user)
            .await?
            .is_none()
        {
            return Err(ApiError::not_found(format!(
                "`users[{i}]`: no member `{user}` in the organization."
            )));
        }
        set_grant(&mut tx, &target, "user", user, role, now).await?;
    }
    for (i, team) in teams.iter().enumerate() {
        if store::teams::get_tx(&mut tx, &target.org_id, team)
            .await?
            .is_none()
        {
            return Err(ApiError::not_found(format!(
                "`teams[{i}]`: no team `{team}` in the organization."
            )));
        }
        set_grant(&mut tx, &target, "team", team, role, now).await?;
    }
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn set_grant(
    tx: &mut crate::db::Tx,
    target: &Target,
    principal_kind: &str,
    principal_id: &str,
    role: Option<Role>,
    now: i64,
) -> ApiResult<()> {
    match role {
        Some(role) => {
            let grant = store::permissions::Grant {
                target_kind: target.kind.to_string(),
                target_id: target.id.clone(),
                principal_kind: principal_kind.to_string(),
                principal_id: principal_id.to_string(),
                role: role.as_str().to_string(),
                created_at: now,
            };
            store::permissions::upsert(tx, &target.org_id, &grant).await?
        }
        // Guest level on content means no explicit access.
        None => {
            store::permissions::remove(tx, target.kind, &target.id, principal_kind, principal_id)
                .await?;
        }
    }
    Ok(())
}

/// `inviteToSpace`.
pub async fn invite_to_space(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<InviteBody>,
) -> ApiResult<StatusCode> {
    ctx.require_live()?;
    invite(&state, space_target(&ctx), body).await
}

/// `inviteToCollection`.
pub async fn invite_to_collection(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    JsonBody(body): JsonBody<InviteBody>,
) -> ApiResult<StatusCode> {
    invite(&state, collection_target(&ctx), body).await
}

async fn list_users(state: &AppState, target: Target, page: PageRequest) -> ApiResult<List<Value>> {
    let scope = format!("{}-user-permissions:{}", target.kind, target.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let grants: Vec<_> = store::permissions::on_target(&state.db, target.kind, &target.id)
        .await?
        .into_iter()
        .filter(|g| g.principal_kind == "user")
        .collect();
    let total = grants.len() as i64;
    let mut items = Vec::new();
    for g in grants {
        if after
            .as_ref()
            .is_some_and(|a| (g.created_at, &g.principal_id) <= (a.0, &a.1))
        {
            continue;
        }
        if let Some(user) = store::users::get(&state.db, &g.principal_id).await? {
            items.push((
                json!({ "permission": g.role, "user": views::user_row(state, &user) }),
                (g.created_at, g.principal_id),
            ));
        }
        if items.len() as i64 >= page.fetch_limit() {
            break;
        }
    }
    page.finish(&scope, items, total)
}

async fn list_teams(state: &AppState, target: Target, page: PageRequest) -> ApiResult<List<Value>> {
    let scope = format!("{}-team-permissions:{}", target.kind, target.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let grants: Vec<_> = store::permissions::on_target(&state.db, target.kind, &target.id)
        .await?
        .into_iter()
        .filter(|g| g.principal_kind == "team")
        .collect();
    let total = grants.len() as i64;
    let mut items = Vec::new();
    for g in grants {
        if after
            .as_ref()
            .is_some_and(|a| (g.created_at, &g.principal_id) <= (a.0, &a.1))
        {
            continue;
        }
        if let Some(team) = store::teams::get(&state.db, &target.org_id, &g.principal_id).await? {
            items.push((
                json!({ "permission": g.role, "team": views::team(&team, false) }),
                (g.created_at, g.principal_id),
            ));
        }
        if items.len() as i64 >= page.fetch_limit() {
            break;
        }
    }
    page.finish(&scope, items, total)
}

/// `listUserPermissionsInSpace`.
pub async fn list_space_users(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    ctx.org.require_non_guest("list who has access")?;
    Ok(Json(list_users(&state, space_target(&ctx), page).await?))
}

/// `listUserPermissionsInCollection`.
pub async fn list_collection_users(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    ctx.org.require_non_guest("list who has access")?;
    Ok(Json(
        list_users(&state, collection_target(&ctx), page).await?,
    ))
}

/// `listTeamPermissionsInSpace`.
pub async fn list_space_teams(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    ctx.org.require_non_guest("list who has access")?;
    Ok(Json(list_teams(&state, space_target(&ctx), page).await?))
}

/// `listTeamPermissionsInCollection`.
pub async fn list_collection_teams(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    ctx.org.require_non_guest("list who has access")?;
    Ok(Json(
        list_teams(&state, collection_target(&ctx), page).await?,
    ))
}

/// Body of the PATCH permission endpoints.
#[derive(Deserialize)]
pub struct RoleBody {
    #[serde(default, deserialize_with = "nullable")]
    role: Option<Option<Role>>,
}

async fn update_one(
    state: &AppState,
    target: Target,
    principal_kind: &str,
    principal_id: &str,
    body: RoleBody,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    let exists = match principal_kind {
        "user" => store::members::get_tx(&mut tx, &target.org_id, principal_id)
            .await?
            .is_some(),
        _ => store::teams::get_tx(&mut tx, &target.org_id, principal_id)
            .await?
            .is_some(),
    };
    if !exists {
        return Err(ApiError::not_found(format!(
            "{} `{principal_id}` not found in the organization.",
            if principal_kind == "user" {
                "User"
            } else {
                "Team"
            }
        )));
    }
    if let Some(role) = body.role {
        set_grant(
            &mut tx,
            &target,
            principal_kind,
            principal_id,
            role,
            state.now(),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn remove_one(
    state: &AppState,
    target: Target,
    principal_kind: &str,
    principal_id: &str,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    store::permissions::remove(
        &mut tx,
        target.kind,
        &target.id,
        principal_kind,
        principal_id,
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `updateUserPermissionInSpace`.
pub async fn update_space_user(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, user_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<RoleBody>,
) -> ApiResult<StatusCode> {
    ctx.require_live()?;
    update_one(&state, space_target(&ctx), "user", &user_id, body).await
}

/// `updateTeamPermissionInSpace`.
pub async fn update_space_team(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, team_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<RoleBody>,
) -> ApiResult<StatusCode> {
    ctx.require_live()?;
    update_one(&state, space_target(&ctx), "team", &team_id, body).await
}

/// `removeUserFromSpace`; 204 also when the user had no permission.
pub async fn remove_space_user(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, user_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    ctx.require_live()?;
    remove_one(&state, space_target(&ctx), "user", &user_id).await
}

/// `removeTeamFromSpace`; 204 also when the team had no permission.
pub async fn remove_space_team(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, team_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    ctx.require_live()?;
    remove_one(&state, space_target(&ctx), "team", &team_id).await
}

/// `updateUserPermissionInCollection`.
pub async fn update_collection_user(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    Path((_, user_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<RoleBody>,
) -> ApiResult<StatusCode> {
    update_one(&state, collection_target(&ctx), "user", &user_id, body).await
}

/// `updateTeamPermissionInCollection`.
pub async fn update_collection_team(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    Path((_, team_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<RoleBody>,
) -> ApiResult<StatusCode> {
    update_one(&state, collection_target(&ctx), "team", &team_id, body).await
}

/// `removeUserFromCollection`; 204 also when the user had no permission.
pub async fn remove_collection_user(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    Path((_, user_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    remove_one(&state, collection_target(&ctx), "user", &user_id).await
}

/// `removeTeamFromCollection`; 204 also when the team had no permission.
pub async fn remove_collection_team(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    Path((_, team_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    remove_one(&state, collection_target(&ctx), "team", &team_id).await
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
) -> ApiResult<List<Value>> {
    let scope = format!("{}-aggregate:{}:{:?}", target.kind, target.id, query.role);
    let after = page.after::<String>(&scope)?;
    let collections: HashMap<_, _> = store::collections::list(&state.db, &target.org_id)
        .await?
        .into_iter()
        .map(|c| (c.id.clone(), c))
        .collect();
    let all_grants = store::permissions::for_org(&state.db, &target.org_id).await?;
    let memberships = store::teams::memberships(&state.db, &target.org_id).await?;
    let (members, _) = store::members::list(
        &state.db,
        &target.org_id,
        &Default::default(),
        None,
        i64::MAX,
    )
    .await?;
    let space = if target.kind == "space" {
        store::spaces::get(&state.db, &target.id).await?
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
        let role = match (&space, collections.get(&target.id)) {
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
            m.user_id.clone(),
            json!({ "permission": role, "user": user }),
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

/// `listPermissionsAggregateInSpace`.
pub async fn aggregate_space(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    QueryParams(query): QueryParams<AggregateQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    ctx.org.require_non_guest("list who has access")?;
    Ok(Json(
        aggregate(&state, space_target(&ctx), query, page).await?,
    ))
}

/// `listPermissionsAggregateInCollection`.
pub async fn aggregate_collection(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    QueryParams(query): QueryParams<AggregateQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    ctx.org.require_non_guest("list who has access")?;
    Ok(Json(
        aggregate(&state, collection_target(&ctx), query, page).await?,
    ))
}
