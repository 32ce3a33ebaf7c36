//! Spaces: the family's operations, each with its official operationId and the access
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
            Method::GET,
            "/v1/orgs/{organizationId}/spaces",
            "listSpacesInOrganizationById",
            OrgMember,
            handlers::list_spaces,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/spaces",
            "createSpace",
            OrgMember,
            handlers::create_space,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}",
            "getSpaceById",
            Space(Role::Read),
            handlers::get_space,
        ),
        op(
            Method::PATCH,
            "/v1/spaces/{spaceId}",
            "updateSpaceById",
            Space(Role::Edit),
            handlers::update_space,
        ),
        op(
            Method::DELETE,
            "/v1/spaces/{spaceId}",
            "deleteSpaceById",
            SpaceIfExists(Role::Admin),
            handlers::delete_space,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/restore",
            "restoreSpace",
            Space(Role::Admin),
            handlers::restore_space,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/duplicate",
            "duplicateSpace",
            Space(Role::Read),
            handlers::duplicate_space,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/move",
            "moveSpace",
            Space(Role::Admin),
            handlers::move_space,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/transfer",
            "transferSpace",
            Space(Role::Admin),
            handlers::transfer_space,
        ),
    ]
}
