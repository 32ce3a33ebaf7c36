//! Uploads and custom fonts: `ORG/storage/upload` (`generateStorageUploadURL`) and
//! `ORG/fonts` (`listCustomFonts`, `createCustomFont`, `getCustomFont`, `updateCustomFont`,
//! `deleteCustomFont`). The upload URL itself, `PUT /storage/{key}`, and the uploaded bytes,
//! `GET /storage/{key}`, are outside `/v1` (mounted by `api::router`, not in the route
//! table); the workflow is `domain::fonts`.

pub mod handlers;
pub mod types;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family. Members (not guests) see the organization's fonts; its
/// admins, who edit its sites' customization, upload and manage them.
pub fn operations() -> Vec<Operation> {
    vec![
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/storage/upload",
            "generateStorageUploadURL",
            Access::OrgAdmin,
            handlers::generate_upload_url,
        )
        .body_limit(16 * 1024),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/fonts",
            "listCustomFonts",
            Access::OrgNonGuest,
            handlers::list_fonts,
        ),
        op(
            Method::PUT,
            "/v1/orgs/{organizationId}/fonts",
            "createCustomFont",
            Access::OrgAdmin,
            handlers::create_font,
        )
        .body_limit(64 * 1024),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/fonts/{fontId}",
            "getCustomFont",
            Access::OrgNonGuest,
            handlers::get_font,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/fonts/{fontId}",
            "updateCustomFont",
            Access::OrgAdmin,
            handlers::update_font,
        )
        .body_limit(64 * 1024),
        op(
            Method::DELETE,
            "/v1/orgs/{organizationId}/fonts/{fontId}",
            "deleteCustomFont",
            Access::OrgAdmin,
            handlers::delete_font,
        ),
    ]
}
