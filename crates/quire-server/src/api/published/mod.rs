//! Published content for renderers: `POST /v1/urls/published` (and its `GET` form) resolves
//! a published URL and hands out a short-lived token that reads only that content.

pub mod handlers;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    vec![
        op(
            Method::POST,
            "/v1/urls/published",
            "resolvePublishedContentByUrl",
            Access::User,
            handlers::resolve_published_content_by_url,
        )
        .body_limit(64 * 1024),
        op(
            Method::GET,
            "/v1/urls/published",
            "getPublishedContentByUrl",
            Access::User,
            handlers::get_published_content_by_url,
        ),
    ]
}
