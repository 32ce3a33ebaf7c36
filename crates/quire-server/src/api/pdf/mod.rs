//! PDF export: `getSpacePDF` and `getChangeRequestPDF` answer a signed, expiring URL of the
//! PDF of the content (or of one page), made by `domain::pdf`; `GET /pdf/{spaceId}/{name}`
//! (outside `/v1`, no bearer token: the signature is the authorisation) serves it.

pub mod handlers;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    vec![
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/pdf",
            "getSpacePDF",
            Access::Space(Role::Read),
            handlers::get_pdf,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/pdf",
            "getChangeRequestPDF",
            Access::Space(Role::Read),
            handlers::get_pdf,
        ),
    ]
}
