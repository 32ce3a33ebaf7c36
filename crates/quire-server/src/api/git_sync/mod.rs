//! Git Sync with a repository on any host: `importGitRepository` and
//! `exportToGitRepository` start an operation (a job, `domain::git::sync`) and answer 204;
//! `getSpaceGitInfo` reports the repository and the latest operation.

pub mod handlers;
pub mod types;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    vec![
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/git/info",
            "getSpaceGitInfo",
            Access::Space(Role::Read),
            handlers::get_info,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/git/import",
            "importGitRepository",
            Access::Space(Role::Admin),
            handlers::import,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/git/export",
            "exportToGitRepository",
            Access::Space(Role::Admin),
            handlers::export,
        ),
    ]
}
