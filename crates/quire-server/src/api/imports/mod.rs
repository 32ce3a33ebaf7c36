//! Content imports: the family's operations, each with its official operationId and the
//! access it requires (edit on the space), and their handlers. The work itself is
//! `domain::imports`.

pub mod handlers;
pub mod types;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// Bodies are a URL and a source name.
const BODY_LIMIT: usize = 64 * 1024;

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/content/import",
            "importContent",
            Space(Role::Edit),
            handlers::import_content,
        )
        .body_limit(BODY_LIMIT),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/content/page/{pageId}/import",
            "importContentInPageById",
            Space(Role::Edit),
            handlers::import_content,
        )
        .body_limit(BODY_LIMIT),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/import",
            "importContentInChangeRequest",
            Space(Role::Edit),
            handlers::import_content,
        )
        .body_limit(BODY_LIMIT),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/page/{pageId}/import",
            "importContentInChangeRequestPageById",
            Space(Role::Edit),
            handlers::import_content,
        )
        .body_limit(BODY_LIMIT),
    ]
}
