//! The API, one folder per resource family: each declares its operations (method, path,
//! official operationId, required access) beside their handlers and types. Families never
//! import each other; what several share lives in the domain layer, or in `views` for
//! response bodies.

pub mod change_requests;
pub mod collections;
pub mod comments;
pub mod content;
pub mod files;
pub mod invites;
pub mod members;
pub mod meta;
pub mod orgs;
pub mod permissions;
pub mod search;
pub mod spaces;
pub mod teams;
pub mod users;
pub mod views;

use crate::http::operation::Operation;

/// Every operation of the API.
pub fn operations() -> Vec<Operation> {
    [
        change_requests::operations(),
        collections::operations(),
        comments::operations(),
        content::operations(),
        invites::operations(),
        members::operations(),
        meta::operations(),
        orgs::operations(),
        permissions::operations(),
        search::operations(),
        spaces::operations(),
        teams::operations(),
        users::operations(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
