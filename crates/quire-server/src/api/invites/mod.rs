//! Invites: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/invites",
            "inviteUsersToOrganization",
            OrgAdmin,
            handlers::invite_users,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/invites/{inviteId}",
            "joinOrganizationWithInvite",
            User,
            handlers::join_with_invite,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/link-invites",
            "listOrganizationInviteLinks",
            OrgAdmin,
            handlers::list_link_invites,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/link-invites",
            "createOrganizationInvite",
            OrgAdmin,
            handlers::create_link_invite,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/link-invites/{inviteId}",
            "getOrganizationInviteLink",
            OrgAdmin,
            handlers::get_link_invite,
        ),
        op(
            Method::PATCH,
            "/v1/orgs/{organizationId}/link-invites/{inviteId}",
            "updateOrganizationInviteById",
            OrgAdmin,
            handlers::update_link_invite,
        ),
        op(
            Method::DELETE,
            "/v1/orgs/{organizationId}/link-invites/{inviteId}",
            "deleteOrganizationInviteById",
            OrgAdmin,
            handlers::delete_link_invite,
        ),
    ]
}
