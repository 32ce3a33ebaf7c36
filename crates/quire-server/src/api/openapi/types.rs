//! Response bodies of the OpenAPI family, following the official schemas (`OpenAPISpec`,
//! `OpenAPISpecVersion`, `OpenAPISpecContent`).

use serde::Serialize;
use serde_json::value::RawValue;

use crate::clock::iso;
use crate::domain::openapi::{last_errors, ProcessError};
use crate::state::AppState;
use crate::store::openapi::{SpecRow, VersionRow};

/// `OpenAPISpec`. `lastProcessedErrors` and `lastProcessedErrorCount` are the newer API's
/// fields (0.202.0) carrying the readable message of a failed processing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenApiSpec {
    object: &'static str,
    id: String,
    created_at: String,
    updated_at: String,
    slug: String,
    #[serde(rename = "sourceURL", skip_serializing_if = "Option::is_none")]
    source_url: Option<String>,
    processing_state: String,
    visibility: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_processed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_process_error_code: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    last_processed_errors: Vec<ProcessError>,
    last_processed_error_count: usize,
    permissions: SpecPermissions,
    urls: SpecUrls,
}

/// `OpenAPISpec.permissions`.
#[derive(Serialize)]
pub struct SpecPermissions {
    view: bool,
    edit: bool,
}

/// `OpenAPISpec.urls`.
#[derive(Serialize)]
pub struct SpecUrls {
    location: String,
    app: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    published: Option<String>,
}

/// The API path of a spec.
pub fn spec_path(org_id: &str, slug: &str) -> String {
    format!("/v1/orgs/{org_id}/openapi/{slug}")
}

/// Where a version's document is served (outside `/v1`).
pub fn document_url(state: &AppState, spec: &SpecRow, version_id: &str) -> String {
    state.url(&format!(
        "/openapi/{}/{}/{version_id}",
        spec.org_id, spec.slug
    ))
}

/// `OpenAPISpec` for a caller who may (`edit`) or may not change it.
pub fn spec(state: &AppState, row: &SpecRow, edit: bool) -> OpenApiSpec {
    let errors = last_errors(row);
    OpenApiSpec {
        object: "openapi-spec",
        id: row.id.clone(),
        created_at: iso(row.created_at),
        updated_at: iso(row.updated_at),
        slug: row.slug.clone(),
        source_url: row.source_url.clone(),
        processing_state: row.processing_state.clone(),
        visibility: row.visibility.clone(),
        last_version: row.last_version.clone(),
        last_processed_at: row.last_processed_at.map(iso),
        last_process_error_code: row.last_error_code.clone(),
        last_processed_error_count: errors.len(),
        last_processed_errors: errors,
        permissions: SpecPermissions { view: true, edit },
        urls: SpecUrls {
            location: state.url(&spec_path(&row.org_id, &row.slug)),
            app: state.url(&format!("/o/{}/openapi/{}", row.org_id, row.slug)),
            published: (row.visibility == "public" && row.last_version.is_some())
                .then(|| document_url(state, row, "latest")),
        },
    }
}

/// `OpenAPISpecVersion`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenApiSpecVersion {
    object: &'static str,
    id: String,
    created_at: String,
    url: String,
    urls: VersionUrls,
}

/// `OpenAPISpecVersion.urls`.
#[derive(Serialize)]
pub struct VersionUrls {
    location: String,
}

/// `OpenAPISpecVersion`.
pub fn version(state: &AppState, spec: &SpecRow, row: &VersionRow) -> OpenApiSpecVersion {
    OpenApiSpecVersion {
        object: "openapi-spec-version",
        id: row.id.clone(),
        created_at: iso(row.created_at),
        url: document_url(state, spec, &row.id),
        urls: VersionUrls {
            location: state.url(&format!(
                "{}/versions/{}",
                spec_path(&spec.org_id, &spec.slug),
                row.id
            )),
        },
    }
}

/// `OpenAPISpecContent`: the document, as the one file of the filesystem, and its URL.
#[derive(Serialize)]
pub struct OpenApiSpecContent {
    /// File name to document.
    pub filesystem: std::collections::BTreeMap<&'static str, Box<RawValue>>,
    /// Where the document is served.
    pub url: String,
}
