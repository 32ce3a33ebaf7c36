//! Users: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::GET,
            "/v1/user",
            "getAuthenticatedUser",
            User,
            handlers::get_authenticated_user,
        ),
        op(
            Method::GET,
            "/v1/users/{userId}",
            "getUserById",
            User,
            handlers::get_user,
        ),
        op(
            Method::PATCH,
            "/v1/users/{userId}",
            "updateUserById",
            User,
            handlers::update_user,
        ),
    ]
}
