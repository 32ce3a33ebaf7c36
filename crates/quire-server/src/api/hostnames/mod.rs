//! Sites on addresses of their own: `/v1/custom-hostnames/{hostname}` (a site's custom
//! hostname, administered by its organization's admins) and `/v1/subdomains/{subdomain}`
//! (an organization's hostname). Serving them is `crate::hosts`.

pub mod handlers;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    vec![
        op(
            Method::GET,
            "/v1/custom-hostnames/{hostname}",
            "getCustomHostname",
            Access::User,
            handlers::get_custom_hostname,
        ),
        op(
            Method::PATCH,
            "/v1/custom-hostnames/{hostname}",
            "dnsRevalidateCustomHostname",
            Access::User,
            handlers::revalidate_custom_hostname,
        ),
        op(
            Method::DELETE,
            "/v1/custom-hostnames/{hostname}",
            "removeCustomHostname",
            Access::User,
            handlers::remove_custom_hostname,
        ),
        op(
            Method::GET,
            "/v1/subdomains/{subdomain}",
            "getSubdomain",
            Access::User,
            handlers::get_subdomain,
        ),
    ]
}
