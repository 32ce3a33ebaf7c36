//! Teams: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;
pub mod types;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/teams",
            "listTeamsInOrganizationById",
            OrgNonGuest,
            handlers::list_teams,
        ),
        op(
            Method::PUT,
            "/v1/orgs/{organizationId}/teams",
            "createOrganizationTeam",
            OrgAdmin,
            handlers::create_team,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/teams/{teamId}",
            "getTeamInOrganizationById",
            TeamView,
            handlers::get_team,
        ),
        op(
            Method::PATCH,
            "/v1/orgs/{organizationId}/teams/{teamId}",
            "updateTeamInOrganizationById",
            TeamManage,
            handlers::update_team,
        ),
        op(
            Method::DELETE,
            "/v1/orgs/{organizationId}/teams/{teamId}",
            "removeTeamFromOrganizationById",
            OrgAdmin,
            handlers::delete_team,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/teams/{teamId}/members",
            "listTeamMembersInOrganizationById",
            TeamView,
            handlers::list_team_members,
        ),
        op(
            Method::PUT,
            "/v1/orgs/{organizationId}/teams/{teamId}/members",
            "updateMembersInOrganizationTeam",
            TeamManage,
            handlers::update_team_members,
        ),
        op(
            Method::PUT,
            "/v1/orgs/{organizationId}/teams/{teamId}/members/{userId}",
            "addMemberToOrganizationTeamById",
            TeamManage,
            handlers::add_team_member,
        ),
        op(
            Method::DELETE,
            "/v1/orgs/{organizationId}/teams/{teamId}/members/{userId}",
            "deleteMemberFromOrganizationTeamById",
            TeamManage,
            handlers::remove_team_member,
        ),
    ]
}
