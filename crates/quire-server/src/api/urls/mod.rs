//! `getContentByUrl` (`/v1/urls/content`): what an app URL that the API handed out
//! (`urls.app`) names: a collection, or a space with its change request.

pub mod handlers;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    vec![op(
        Method::GET,
        "/v1/urls/content",
        "getContentByUrl",
        Access::User,
        handlers::get_content_by_url,
    )]
}
