//! SAML single sign-on providers of an organization (`ORG/saml`) and the logins they offer
//! (`ORG/sso`). Only organization admins manage providers; the list of logins is public, as
//! a sign-in page needs it before anyone is signed in. The login itself (start, ACS,
//! metadata) and the account page are browser endpoints in `web/`.

pub mod handlers;
pub mod types;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/saml",
            "listSAMLProvidersInOrganizationById",
            OrgAdmin,
            handlers::list_providers,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/saml",
            "createOrganizationSAMLProvider",
            OrgAdmin,
            handlers::create_provider,
        )
        .body_limit(32 * 1024),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/saml/{samlProviderId}",
            "getOrganizationSAMLProviderById",
            OrgAdmin,
            handlers::get_provider,
        ),
        op(
            Method::PATCH,
            "/v1/orgs/{organizationId}/saml/{samlProviderId}",
            "updateOrganizationSAMLProvider",
            OrgAdmin,
            handlers::update_provider,
        )
        .body_limit(32 * 1024),
        op(
            Method::DELETE,
            "/v1/orgs/{organizationId}/saml/{samlProviderId}",
            "deleteOrganizationSAMLProvider",
            OrgAdmin,
            handlers::delete_provider,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/sso",
            "listSSOProviderLoginsInOrganization",
            Public,
            handlers::list_logins,
        ),
    ]
}
