//! Links and backlinks: what the pages of a revision refer to (pages, anchors, files,
//! URLs), which of those targets are broken, and what refers to a page or a file. Computed
//! by the content engine (`quire_content::links`) through `domain::links`, cached per
//! revision; the space's content, or a change request's.

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
            "/v1/spaces/{spaceId}/links",
            "listSpaceLinks",
            Space(Role::Read),
            handlers::list_links,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/links",
            "listChangeRequestLinks",
            Space(Role::Read),
            handlers::list_links,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/content/page/{pageId}/links",
            "listPageLinksInSpace",
            Space(Role::Read),
            handlers::list_page_links,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/page/{pageId}/links",
            "listPageLinksInChangeRequest",
            Space(Role::Read),
            handlers::list_page_links,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/content/page/{pageId}/backlinks",
            "listSpacePageBacklinks",
            Space(Role::Read),
            handlers::list_page_backlinks,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/page/{pageId}/backlinks",
            "listChangeRequestPageBacklinks",
            Space(Role::Read),
            handlers::list_page_backlinks,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/content/files/{fileId}/backlinks",
            "listSpaceFileBacklinks",
            Space(Role::Read),
            handlers::list_file_backlinks,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/files/{fileId}/backlinks",
            "listChangeRequestFileBacklinks",
            Space(Role::Read),
            handlers::list_file_backlinks,
        ),
    ]
}
