//! Organization members: `ORG/members`, `ORG/ping`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::types::{MemberSpace, MemberTeam, TeamRole};
use crate::api::views;
use crate::domain::access::grants::Grants;
use crate::domain::access::{OrgCtx, Role};
use crate::domain::auth::Caller;
use crate::domain::teams::owned_teams;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{nullable, JsonBody, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::ids::UserId;
use crate::state::AppState;
use crate::store;
use crate::store::members::MemberFilter;
use crate::store::teams::TeamFilter;

/// Sort order of lists.
#[derive(Deserialize, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    #[default]
    Desc,
}

/// Member list sort key.
#[derive(Deserialize, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[serde(rename_all = "camelCase")]
pub enum MemberSort {
    #[default]
    JoinedAt,
    LastSeenAt,
}

/// Role filter: a role, or `guest`.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum RoleFilter {
    Admin,
    Create,
    Edit,
    Review,
    Comment,
    Read,
    Guest,
}

/// Query of `listMembersInOrganizationById`.
#[derive(Deserialize, Default)]
pub struct ListMembersQuery {
    #[serde(default)]
    order: Order,
    role: Option<RoleFilter>,
    search: Option<String>,
    #[serde(default)]
    sort: MemberSort,
}

/// `listMembersInOrganizationById`.
pub async fn list_members(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    QueryParams(query): QueryParams<ListMembersQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<views::Member>>> {
    let filter = MemberFilter {
        role: query.role.map(|r| match r {
            RoleFilter::Guest => None,
            other => Some(format!("{other:?}").to_lowercase()),
        }),
        search: query.search.filter(|s| !s.is_empty()),
        by_last_seen: query.sort == MemberSort::LastSeenAt,
        ascending: query.order == Order::Asc,
    };
    let scope = format!("members:{}:{:?}:{:?}", ctx.org.id, query.sort, query.order);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::members::list(&state.db, &ctx.org.id, &filter, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|m| {
            let key = (
                if filter.by_last_seen {
                    m.last_seen_at.unwrap_or(0)
                } else {
                    m.joined_at
                },
                m.user_id.clone(),
            );
            (views::member(&state, &m), key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// `getMemberInOrganizationById`.
pub async fn get_member(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, user_id)): Path<(String, UserId)>,
) -> ApiResult<Json<views::Member>> {
    let m = store::members::get(&state.db, &ctx.org.id, &user_id)
        .await?
        .ok_or_else(|| not_a_member(&user_id))?;
    Ok(Json(views::member(&state, &m)))
}

fn not_a_member(user_id: &str) -> ApiError {
    ApiError::not_found(format!(
        "Member `{user_id}` not found in this organization."
    ))
}

/// Body of `updateMemberInOrganizationById`.
#[derive(Deserialize)]
pub struct UpdateMember {
    #[serde(default, deserialize_with = "nullable")]
    role: Option<Option<Role>>,
}

/// `updateMemberInOrganizationById` (admins only): `role: null` makes the member a guest.
pub async fn update_member(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, user_id)): Path<(String, UserId)>,
    JsonBody(body): JsonBody<UpdateMember>,
) -> ApiResult<Json<views::Member>> {
    let m = match body.role {
        Some(role) => crate::domain::members::set_role(&state, &ctx, &user_id, role).await?,
        None => store::members::get(&state.db, &ctx.org.id, &user_id)
            .await?
            .ok_or_else(|| not_a_member(&user_id))?,
    };
    Ok(Json(views::member(&state, &m)))
}

/// `removeMemberFromOrganizationById`: admins remove anyone, members remove themselves;
/// 204 also when the user was not a member.
pub async fn remove_member(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Extension(caller): Extension<Caller>,
    Path((_, user_id)): Path<(String, UserId)>,
) -> ApiResult<StatusCode> {
    crate::domain::members::remove(&state, &ctx, &caller, &user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Claims of the visitor token handed out by `ping`.
#[derive(serde::Serialize)]
struct VisitorClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    org: &'a str,
    iat: i64,
    exp: i64,
}

/// `updateOrganizationMemberLastSeenAt`: records the caller as seen now and returns a
/// signed visitor-claims token (HS256, signed by the server key, valid one hour).
pub async fn ping(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Json<Value>> {
    let now = state.now();
    store::members::touch(&state.db, &ctx.org.id, &caller.user.id, now).await?;
    let claims = VisitorClaims {
        iss: &state.public_url,
        sub: &caller.user.id,
        org: &ctx.org.id,
        iat: now / 1000,
        exp: now / 1000 + 3600,
    };
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(state.keys.jwt_secret()),
    )
    .map_err(ApiError::internal)?;
    // The service description names the field `serviceVisitorClaims`; the official
    // schema names it `gitbookVisitorClaims`. Both carry the same token.
    Ok(Json(
        json!({ "serviceVisitorClaims": token, "gitbookVisitorClaims": token }),
    ))
}

/// `setUserAsSSOMemberForOrganization` (admins only).
pub async fn set_member_sso(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, user_id)): Path<(String, UserId)>,
) -> ApiResult<Json<views::Member>> {
    store::members::set_sso(&state.db, &ctx.org.id, &user_id).await?;
    let m = store::members::get(&state.db, &ctx.org.id, &user_id)
        .await?
        .ok_or_else(|| not_a_member(&user_id))?;
    Ok(Json(views::member(&state, &m)))
}

/// Query of `listTeamsForOrganizationMember`.
#[derive(Deserialize, Default)]
pub struct MemberTeamsQuery {
    title: Option<String>,
}

/// `listTeamsForOrganizationMember`: the member's teams with their role in each.
pub async fn list_member_teams(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Extension(caller): Extension<Caller>,
    Path((_, user_id)): Path<(String, UserId)>,
    QueryParams(query): QueryParams<MemberTeamsQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<MemberTeam>>> {
    store::members::get(&state.db, &ctx.org.id, &user_id)
        .await?
        .ok_or_else(|| not_a_member(&user_id))?;
    let owned = owned_teams(&state, &ctx, &caller).await?;
    let scope = format!("member-teams:{}:{user_id}", ctx.org.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let filter = TeamFilter {
        member: Some(user_id.to_string()),
        title: query.title.filter(|t| !t.is_empty()),
        ..TeamFilter::default()
    };
    let (rows, count) =
        store::teams::list(&state.db, &ctx.org.id, &filter, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|(team, role)| {
            let key = (team.created_at, team.id.clone());
            let manage = owned.can_manage(&team.id);
            let item = MemberTeam {
                team: views::team(&team, manage),
                member: TeamRole {
                    role: role.unwrap_or_else(|| "member".into()),
                },
            };
            (item, key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Query of `listSpacesForOrganizationMember`.
#[derive(Deserialize, Default)]
pub struct MemberSpacesQuery {
    #[serde(default)]
    order: Order,
}

/// `listSpacesForOrganizationMember`: `{permission, space}` for each live space the member
/// can reach, limited to the spaces the caller can see; ordered by list position.
pub async fn list_member_spaces(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Extension(caller): Extension<Caller>,
    Path((_, user_id)): Path<(String, UserId)>,
    QueryParams(query): QueryParams<MemberSpacesQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<MemberSpace>>> {
    let member = store::members::get(&state.db, &ctx.org.id, &user_id)
        .await?
        .ok_or_else(|| not_a_member(&user_id))?;
    let theirs = Grants::load(
        &state,
        &ctx.org.id,
        &user_id,
        member.role.as_deref().and_then(Role::parse),
    )
    .await?;
    let mine = Grants::load(&state, &ctx.org.id, &caller.user.id, ctx.role).await?;
    let scope = format!("member-spaces:{}:{user_id}:{:?}", ctx.org.id, query.order);
    let after = page.after::<(i64, String)>(&scope)?;
    let spaces = store::spaces::list_live_with_comments(&state.db, &ctx.org.id, None).await?;
    let mut rows: Vec<(MemberSpace, (i64, String))> = spaces
        .iter()
        .filter_map(|(s, comments)| {
            let their_role = theirs.space_role(s)?;
            let my_role = mine.space_role(s)?;
            let key = (s.position, s.id.clone());
            Some((
                MemberSpace {
                    permission: their_role,
                    space: views::space(&state, s, *comments, my_role),
                },
                key,
            ))
        })
        .collect();
    if query.order == Order::Desc {
        rows.reverse();
    }
    let count = rows.len() as i64;
    let rows = rows
        .into_iter()
        .filter(|(_, key)| match &after {
            None => true,
            Some(a) if query.order == Order::Asc => key > a,
            Some(a) => key < a,
        })
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}
