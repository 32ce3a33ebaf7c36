//! Space and collection permissions: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/permissions",
            "inviteToSpace",
            Space(Role::Admin),
            handlers::invite_to,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/permissions/users",
            "listUserPermissionsInSpace",
            Space(Role::Read),
            handlers::list_users,
        ),
        op(
            Method::PATCH,
            "/v1/spaces/{spaceId}/permissions/users/{userId}",
            "updateUserPermissionInSpace",
            Space(Role::Admin),
            handlers::update_permission,
        ),
        op(
            Method::DELETE,
            "/v1/spaces/{spaceId}/permissions/users/{userId}",
            "removeUserFromSpace",
            Space(Role::Admin),
            handlers::remove_permission,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/permissions/teams",
            "listTeamPermissionsInSpace",
            Space(Role::Read),
            handlers::list_teams,
        ),
        op(
            Method::PATCH,
            "/v1/spaces/{spaceId}/permissions/teams/{teamId}",
            "updateTeamPermissionInSpace",
            Space(Role::Admin),
            handlers::update_permission,
        ),
        op(
            Method::DELETE,
            "/v1/spaces/{spaceId}/permissions/teams/{teamId}",
            "removeTeamFromSpace",
            Space(Role::Admin),
            handlers::remove_permission,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/permissions/aggregate",
            "listPermissionsAggregateInSpace",
            Space(Role::Read),
            handlers::aggregate_permissions,
        ),
        op(
            Method::POST,
            "/v1/collections/{collectionId}/permissions",
            "inviteToCollection",
            Collection(Role::Admin),
            handlers::invite_to,
        ),
        op(
            Method::GET,
            "/v1/collections/{collectionId}/permissions/users",
            "listUserPermissionsInCollection",
            Collection(Role::Read),
            handlers::list_users,
        ),
        op(
            Method::PATCH,
            "/v1/collections/{collectionId}/permissions/users/{userId}",
            "updateUserPermissionInCollection",
            Collection(Role::Admin),
            handlers::update_permission,
        ),
        op(
            Method::DELETE,
            "/v1/collections/{collectionId}/permissions/users/{userId}",
            "removeUserFromCollection",
            Collection(Role::Admin),
            handlers::remove_permission,
        ),
        op(
            Method::GET,
            "/v1/collections/{collectionId}/permissions/teams",
            "listTeamPermissionsInCollection",
            Collection(Role::Read),
            handlers::list_teams,
        ),
        op(
            Method::PATCH,
            "/v1/collections/{collectionId}/permissions/teams/{teamId}",
            "updateTeamPermissionInCollection",
            Collection(Role::Admin),
            handlers::update_permission,
        ),
        op(
            Method::DELETE,
            "/v1/collections/{collectionId}/permissions/teams/{teamId}",
            "removeTeamFromCollection",
            Collection(Role::Admin),
            handlers::remove_permission,
        ),
        op(
            Method::GET,
            "/v1/collections/{collectionId}/permissions/aggregate",
            "listPermissionsAggregateInCollection",
            Collection(Role::Read),
            handlers::aggregate_permissions,
        ),
    ]
}
