//! Search: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;
pub mod types;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/search",
            "searchSpaceContent",
            Space(Role::Read),
            handlers::search_space,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/search",
            "searchOrganizationContent",
            OrgMember,
            handlers::search_organization,
        ),
    ]
}
