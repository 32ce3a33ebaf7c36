//! Organization members: the family's operations, each with its official operationId and the access
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
            "/v1/orgs/{organizationId}/members",
            "listMembersInOrganizationById",
            OrgNonGuest,
            handlers::list_members,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/members/{userId}",
            "getMemberInOrganizationById",
            OrgNonGuest,
            handlers::get_member,
        ),
        op(
            Method::PATCH,
            "/v1/orgs/{organizationId}/members/{userId}",
            "updateMemberInOrganizationById",
            OrgAdmin,
            handlers::update_member,
        ),
        op(
            Method::DELETE,
            "/v1/orgs/{organizationId}/members/{userId}",
            "removeMemberFromOrganizationById",
            OrgMember,
            handlers::remove_member,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/ping",
            "updateOrganizationMemberLastSeenAt",
            OrgMember,
            handlers::ping,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/members/{userId}/sso",
            "setUserAsSSOMemberForOrganization",
            OrgAdmin,
            handlers::set_member_sso,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/members/{userId}/spaces",
            "listSpacesForOrganizationMember",
            OrgNonGuest,
            handlers::list_member_spaces,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/members/{userId}/teams",
            "listTeamsForOrganizationMember",
            OrgNonGuest,
            handlers::list_member_teams,
        ),
    ]
}
