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
            handlers::invite_to_space,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/permissions/users",
            "listUserPermissionsInSpace",
            Space(Role::Read),
            handlers::list_space_users,
        ),
        op(
            Method::PATCH,
            "/v1/spaces/{spaceId}/permissions/users/{userId}",
            "updateUserPermissionInSpace",
            Space(Role::Admin),
            handlers::update_space_user,
        ),
        op(
            Method::DELETE,
            "/v1/spaces/{spaceId}/permissions/users/{userId}",
            "removeUserFromSpace",
            Space(Role::Admin),
            handlers::remove_space_user,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/permissions/teams",
            "listTeamPermissionsInSpace",
            Space(Role::Read),
            handlers::list_space_teams,
        ),
        op(
            Method::PATCH,
            "/v1/spaces/{spaceId}/permissions/teams/{teamId}",
            "updateTeamPermissionInSpace",
            Space(Role::Admin),
            handlers::update_space_team,
        ),
        op(
            Method::DELETE,
            "/v1/spaces/{spaceId}/permissions/teams/{teamId}",
            "removeTeamFromSpace",
            Space(Role::Admin),
            handlers::remove_space_team,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/permissions/aggregate",
            "listPermissionsAggregateInSpace",
            Space(Role::Read),
            handlers::aggregate_space,
        ),
        op(
            Method::POST,
            "/v1/collections/{collectionId}/permissions",
            "inviteToCollection",
            Collection(Role::Admin),
            handlers::invite_to_collection,
        ),
        op(
            Method::GET,
            "/v1/collections/{collectionId}/permissions/users",
            "listUserPermissionsInCollection",
            Collection(Role::Read),
            handlers::list_collection_users,
        ),
        op(
            Method::PATCH,
            "/v1/collections/{collectionId}/permissions/users/{userId}",
            "updateUserPermissionInCollection",
            Collection(Role::Admin),
            handlers::update_collection_user,
        ),
        op(
            Method::DELETE,
            "/v1/collections/{collectionId}/permissions/users/{userId}",
            "removeUserFromCollection",
            Collection(Role::Admin),
            handlers::remove_collection_user,
        ),
        op(
            Method::GET,
            "/v1/collections/{collectionId}/permissions/teams",
            "listTeamPermissionsInCollection",
            Collection(Role::Read),
            handlers::list_collection_teams,
        ),
        op(
            Method::PATCH,
            "/v1/collections/{collectionId}/permissions/teams/{teamId}",
            "updateTeamPermissionInCollection",
            Collection(Role::Admin),
            handlers::update_collection_team,
        ),
        op(
            Method::DELETE,
            "/v1/collections/{collectionId}/permissions/teams/{teamId}",
            "removeTeamFromCollection",
            Collection(Role::Admin),
            handlers::remove_collection_team,
        ),
        op(
            Method::GET,
            "/v1/collections/{collectionId}/permissions/aggregate",
            "listPermissionsAggregateInCollection",
            Collection(Role::Read),
            handlers::aggregate_collection,
        ),
    ]
}
