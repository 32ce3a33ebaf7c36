//! Space templates: `applyTemplateToSpace` adds the pages of a built-in template
//! (`quire_content::templates`) to a space's content as one new revision.

pub mod handlers;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    vec![op(
        Method::POST,
        "/v1/spaces/{spaceId}/content/template",
        "applyTemplateToSpace",
        Access::Space(Role::Edit),
        handlers::apply_template,
    )]
}
