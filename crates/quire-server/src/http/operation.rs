//! An operation of the API: method, path, official operationId, the access it requires, and
//! its handler. Each family lists its own in `api::<family>::operations`.

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};

use crate::domain::access::Role;
use crate::state::AppState;

/// What a route requires of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No authentication (health checks only).
    Public,
    /// Any authenticated user; the handler scopes what it returns to the caller.
    User,
    /// A member of the organization in the path, guests included.
    OrgMember,
    /// A member with a role (not a guest): lists members and teams.
    OrgNonGuest,
    /// An admin of the organization in the path.
    OrgAdmin,
    /// A non-guest member, on a team of the organization in the path.
    TeamView,
    /// An organization admin or an owner of the team in the path.
    TeamManage,
    /// A member whose organization role is at least `create` (creates content).
    OrgCreate,
    /// At least this role on the space in the path (`spaceId`).
    Space(Role),
    /// At least this role on the collection in the path (`collectionId`).
    Collection(Role),
    /// As `Space`, but a space that does not exist (or is invisible) lets the request
    /// through without context: deletes answer 204 for absent targets.
    SpaceIfExists(Role),
    /// As `Collection`, for deletes.
    CollectionIfExists(Role),
    /// A member (not a guest) of the organization in the path reading its site (`siteId`).
    SiteRead,
    /// An admin of the organization in the path changing its site (`siteId`).
    SiteAdmin,
    /// As `SiteAdmin`, but an absent site lets the request through: deletes answer 204.
    SiteAdminIfExists,
}

/// One operation.
pub struct Operation {
    /// HTTP method.
    pub method: Method,
    /// Path pattern, with `{param}` segments.
    pub path: &'static str,
    /// Official operationId.
    pub operation: &'static str,
    /// What the caller needs.
    pub access: Access,
    /// The handler, routed for `method` only.
    pub(crate) handler: MethodRouter<AppState>,
    /// A body limit below the server's, for operations whose bodies are small by nature.
    pub body_limit: Option<usize>,
}

impl Operation {
    /// Caps this operation's request body at `bytes` (413 past it).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = Some(bytes);
        self
    }
}

/// The body limit of the operation a request was routed to, for the body extractors.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

/// Declares an operation; the handler is routed for `method` alone.
pub fn op<H, T>(
    method: Method,
    path: &'static str,
    operation: &'static str,
    access: Access,
    handler: H,
) -> Operation
where
    H: Handler<T, AppState>,
    T: 'static,
{
    let filter = MethodFilter::try_from(method.clone())
        .unwrap_or_else(|_| panic!("{operation}: {method} cannot be routed"));
    Operation {
        method,
        path,
        operation,
        access,
        handler: on(filter, handler),
        body_limit: None,
    }
}
