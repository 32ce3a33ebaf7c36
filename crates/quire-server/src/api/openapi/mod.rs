//! OpenAPI specifications of an organization and their versions: the family's operations,
//! each with its official operationId and the access it requires, and their handlers.
//! Members (not guests) read specifications; members who may create content manage them.
//! A version's document is also served outside `/v1` ([`handlers::download`]), to anyone
//! when the spec is public, to the organization's members otherwise.

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
            "/v1/orgs/{organizationId}/openapi",
            "listOpenAPISpecs",
            OrgNonGuest,
            handlers::list_specs,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/openapi",
            "createOpenAPISpec",
            OrgCreate,
            handlers::create_spec,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/openapi/{specSlug}",
            "getOpenAPISpecBySlug",
            OrgNonGuest,
            handlers::get_spec,
        ),
        op(
            Method::PUT,
            "/v1/orgs/{organizationId}/openapi/{specSlug}",
            "createOrUpdateOpenAPISpecBySlug",
            OrgCreate,
            handlers::put_spec,
        ),
        op(
            Method::PATCH,
            "/v1/orgs/{organizationId}/openapi/{specSlug}",
            "updateOpenAPISpecBySlug",
            OrgCreate,
            handlers::update_spec,
        )
        .body_limit(4 * 1024),
        op(
            Method::DELETE,
            "/v1/orgs/{organizationId}/openapi/{specSlug}",
            "deleteOpenAPISpecBySlug",
            OrgCreate,
            handlers::delete_spec,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/openapi/{specSlug}/versions",
            "listOpenAPISpecVersions",
            OrgNonGuest,
            handlers::list_versions,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/openapi/{specSlug}/versions/latest",
            "getLatestOpenAPISpecVersion",
            OrgNonGuest,
            handlers::get_latest_version,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/openapi/{specSlug}/versions/latest/content",
            "getLatestOpenAPISpecVersionContent",
            OrgNonGuest,
            handlers::get_latest_version_content,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/openapi/{specSlug}/versions/{versionId}",
            "getOpenAPISpecVersionById",
            OrgNonGuest,
            handlers::get_version,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/openapi/{specSlug}/versions/{versionId}/content",
            "getOpenAPISpecVersionContentById",
            OrgNonGuest,
            handlers::get_version_content,
        ),
    ]
}
