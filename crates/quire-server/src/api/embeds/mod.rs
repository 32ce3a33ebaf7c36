//! Link previews: `getEmbedByUrl` (`/v1/urls/embed`) and `getEmbedByUrlInSpace`
//! (`/v1/spaces/{spaceId}/embed`), both made by `domain::embeds`.

pub mod handlers;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    vec![
        op(
            Method::GET,
            "/v1/urls/embed",
            "getEmbedByUrl",
            Access::User,
            handlers::get_embed_by_url,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/embed",
            "getEmbedByUrlInSpace",
            Access::Space(Role::Read),
            handlers::get_embed_by_url_in_space,
        ),
    ]
}
