//! Teams: `ORG/teams`, `TEAM`, `TEAM/members`.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;

use super::types::{MembershipPermissions, RoleInTeam, TeamMember};
use crate::api::views;
use crate::domain::access::{OrgCtx, TeamCtx};
use crate::domain::auth::Caller;
use crate::domain::teams::{self, owned_teams};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, OptionalJsonBody, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::ids::UserId;
use crate::state::AppState;
use crate::store;
use crate::store::teams::TeamFilter;
use crate::validate;

/// Query of `listTeamsInOrganizationById`.
#[derive(Deserialize, Default)]
pub struct ListTeamsQuery {
    owner: Option<String>,
    title: Option<String>,
}

/// `listTeamsInOrganizationById`; `owner` keeps the teams that member can manage.
pub async fn list_teams(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Extension(caller): Extension<Caller>,
    QueryParams(query): QueryParams<ListTeamsQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<views::Team>>> {
    let mut filter = TeamFilter {
        title: query.title.filter(|t| !t.is_empty()),
        ..TeamFilter::default()
    };
    if let Some(owner) = query.owner.filter(|o| !o.is_empty()) {
        let member = store::members::get(&state.db, &ctx.org.id, &UserId::new(owner.clone()))
            .await?
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Invalid query parameter `owner`: `{owner}` is not a member of this organization."
                ))
            })?;
        // Admins manage every team; others the teams they own.
        if member.role.as_deref() != Some("admin") {
            filter.owned_by = Some(owner);
        }
    }
    let manageable = owned_teams(&state, &ctx, &caller).await?;
    let scope = format!("teams:{}", ctx.org.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::teams::list(&state.db, &ctx.org.id, &filter, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|(team, _)| {
            let key = (team.created_at, team.id.clone());
            (views::team(&team, manageable.can_manage(&team.id)), key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Body of `createOrganizationTeam`.
#[derive(Deserialize)]
pub struct CreateTeam {
    title: String,
    members: Option<Vec<String>>,
}

/// `createOrganizationTeam` (admins only): 201 with the new team.
pub async fn create_team(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    JsonBody(body): JsonBody<CreateTeam>,
) -> ApiResult<axum::response::Response> {
    let members = body.members.unwrap_or_default();
    let team = teams::create(&state, &ctx, &body.title, &members).await?;
    let location = state.url(&format!("/v1/orgs/{}/teams/{}", ctx.org.id, team.id));
    Ok(views::created(&location, views::team(&team, true)))
}

/// `getTeamInOrganizationById`.
pub async fn get_team(Extension(team): Extension<TeamCtx>) -> Json<views::Team> {
    Json(views::team(&team.team, team.can_manage))
}

/// Body of `updateTeamInOrganizationById`.
#[derive(Deserialize)]
pub struct UpdateTeam {
    title: String,
}

/// `updateTeamInOrganizationById` (admins and team owners).
pub async fn update_team(
    State(state): State<AppState>,
    Extension(ctx): Extension<TeamCtx>,
    JsonBody(body): JsonBody<UpdateTeam>,
) -> ApiResult<Json<views::Team>> {
    validate::length("title", &body.title, 1, 64)?;
    store::teams::rename(&state.db, &ctx.team.org_id, &ctx.team.id, &body.title).await?;
    let mut team = ctx.team.clone();
    team.title = body.title;
    Ok(Json(views::team(&team, ctx.can_manage)))
}

/// `removeTeamFromOrganizationById` (admins only); 204 also when absent.
pub async fn delete_team(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, team_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    teams::delete(&state, &ctx, &team_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `listTeamMembersInOrganizationById`.
pub async fn list_team_members(
    State(state): State<AppState>,
    Extension(ctx): Extension<TeamCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<TeamMember>>> {
    let scope = format!("team-members:{}", ctx.team.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::teams::list_members(&state.db, &ctx.team.id, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|row| {
            let key = (row.added_at, row.member.user_id.clone());
            let item = TeamMember {
                organization: views::member(&state, &row.member),
                team: RoleInTeam {
                    role: row.team_role,
                },
                permissions: MembershipPermissions { view: true },
            };
            (item, key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Team role.
#[derive(Deserialize, Clone, Copy, Debug)]
#[serde(rename_all = "lowercase")]
pub enum TeamRole {
    Owner,
    Member,
}

impl TeamRole {
    fn as_str(self) -> &'static str {
        match self {
            TeamRole::Owner => "owner",
            TeamRole::Member => "member",
        }
    }
}

/// `{role}` of a team membership.
#[derive(Deserialize, Default)]
pub struct Membership {
    role: Option<TeamRole>,
}

/// Body of `updateMembersInOrganizationTeam`.
#[derive(Deserialize)]
pub struct UpdateTeamMembers {
    add: Option<Vec<String>>,
    remove: Option<Vec<String>>,
    memberships: Option<HashMap<String, Membership>>,
}

/// `updateMembersInOrganizationTeam`: adds, re-roles and removes in one transaction; a
/// user both added and removed ends removed.
pub async fn update_team_members(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<TeamCtx>,
    JsonBody(body): JsonBody<UpdateTeamMembers>,
) -> ApiResult<StatusCode> {
    let now = state.now();
    let team_id = &ctx.team.id;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    for (i, who) in body.add.unwrap_or_default().iter().enumerate() {
        let user_id = teams::resolve_member(&mut tx, &org, who, &format!("add[{i}]")).await?;
        store::teams::upsert_member(&mut tx, &org.org.id, team_id, &user_id, None, now).await?;
    }
    let mut memberships: Vec<_> = body.memberships.unwrap_or_default().into_iter().collect();
    memberships.sort_by(|a, b| a.0.cmp(&b.0));
    for (who, membership) in memberships {
        let user_id =
            teams::resolve_member(&mut tx, &org, &who, &format!("memberships.{who}")).await?;
        let role = membership.role.map(TeamRole::as_str);
        store::teams::upsert_member(&mut tx, &org.org.id, team_id, &user_id, role, now).await?;
    }
    for (i, who) in body.remove.unwrap_or_default().iter().enumerate() {
        let user_id = teams::resolve_member(&mut tx, &org, who, &format!("remove[{i}]")).await?;
        store::teams::remove_member(&mut tx, team_id, &user_id).await?;
    }
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `addMemberToOrganizationTeamById`: adds the member, or changes their team role.
pub async fn add_team_member(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<TeamCtx>,
    Path((_, _, user_id)): Path<(String, String, String)>,
    OptionalJsonBody(body): OptionalJsonBody<Membership>,
) -> ApiResult<StatusCode> {
    let role = body.role.map(TeamRole::as_str);
    teams::add_member(
        &state,
        &org,
        &caller,
        &ctx.team.id,
        (&user_id, "userId"),
        role,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `deleteMemberFromOrganizationTeamById`; 204 also when not a member.
pub async fn remove_team_member(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<TeamCtx>,
    Path((_, _, user_id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    teams::remove_member(&state, &org, &caller, &ctx.team.id, &user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
