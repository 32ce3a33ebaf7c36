//! Meta: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;

pub use handlers::{healthz, metrics, readyz};

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![op(
        Method::GET,
        "/v1/",
        "getApiInformation",
        User,
        handlers::get_api_information,
    )]
}
