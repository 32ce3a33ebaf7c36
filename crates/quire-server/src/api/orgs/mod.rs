//! Organizations: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::GET,
            "/v1/orgs",
            "listOrganizationsForAuthenticatedUser",
            User,
            handlers::list_organizations,
        ),
        op(
            Method::POST,
            "/v1/orgs",
            "createOrganization",
            User,
            handlers::create_organization,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}",
            "getOrganizationById",
            OrgMember,
            handlers::get_organization,
        ),
        op(
            Method::PATCH,
            "/v1/orgs/{organizationId}",
            "updateOrganizationById",
            OrgAdmin,
            handlers::update_organization,
        ),
        op(
            Method::GET,
            "/v1/email-domains/{emailDomain}/orgs",
            "getOrganizationsForEmailDomain",
            User,
            handlers::list_organizations_for_email_domain,
        ),
    ]
}
