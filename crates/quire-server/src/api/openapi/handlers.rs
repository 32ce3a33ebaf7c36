//! OpenAPI specifications: `ORG/openapi`, `SPEC`, `SPEC/versions`, and the documents of
//! their versions.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;

use super::types::{self, OpenApiSpec, OpenApiSpecContent, OpenApiSpecVersion};
use crate::domain::access::{load_org, OrgCtx, Role};
use crate::domain::auth::{authenticate, Caller};
use crate::domain::openapi::{self as rules, valid_slug};
use crate::error::{ApiError, ApiResult};
use crate::http::download::sandboxed;
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::ids::OrgId;
use crate::state::AppState;
use crate::store;
use crate::store::openapi::{SpecRow, VersionRow};

/// `OpenAPISpecSource`: exactly one of `url` and `text`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    url: Option<String>,
    text: Option<String>,
}

/// Whether the caller may change the organization's specs.
fn can_edit(org: &OrgCtx) -> bool {
    org.role.is_some_and(|r| r >= Role::Create)
}

/// The spec named by the path, or 404.
async fn load(state: &AppState, org: &OrgCtx, slug: &str) -> ApiResult<SpecRow> {
    store::openapi::get(&state.db, &org.org.id, slug)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "OpenAPI specification `{}` not found.",
                slug.chars().take(120).collect::<String>()
            ))
        })
}

/// `listOpenAPISpecs`: the organization's specs, oldest first.
pub async fn list_specs(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<OpenApiSpec>>> {
    let scope = format!("openapi:{}", org.org.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::openapi::list(&state.db, &org.org.id, after, page.fetch_limit()).await?;
    let edit = can_edit(&org);
    let rows = rows
        .into_iter()
        .map(|r| {
            let key = (r.created_at, r.id.clone());
            (types::spec(&state, &r, edit), key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Body of `createOpenAPISpec`.
#[derive(Deserialize)]
pub struct CreateSpec {
    slug: String,
    source: Source,
}

/// `createOpenAPISpec`: 201 with the spec, pending its processing; 409 when the slug is
/// taken.
pub async fn create_spec(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    JsonBody(body): JsonBody<CreateSpec>,
) -> ApiResult<Response> {
    let source = (body.source.url, body.source.text);
    rules::create(&state, &org, &body.slug, source).await?;
    let spec = reload(&state, &org, &body.slug).await?;
    Ok(crate::api::views::created(
        &state.url(&types::spec_path(&org.org.id, &spec.slug)),
        types::spec(&state, &spec, true),
    ))
}

async fn reload(state: &AppState, org: &OrgCtx, slug: &str) -> ApiResult<SpecRow> {
    store::openapi::get(&state.db, &org.org.id, slug)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("OpenAPI spec vanished after its write")))
}

/// `getOpenAPISpecBySlug`.
pub async fn get_spec(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug)): Path<(String, String)>,
) -> ApiResult<Json<OpenApiSpec>> {
    let spec = load(&state, &org, &slug).await?;
    Ok(Json(types::spec(&state, &spec, can_edit(&org))))
}

/// Body of `createOrUpdateOpenAPISpecBySlug`.
#[derive(Deserialize)]
pub struct PutSpec {
    source: Source,
}

/// `createOrUpdateOpenAPISpecBySlug`: 201 when the slug is new, 200 when the spec exists
/// (its new source is processed into a new version if the document changed).
pub async fn put_spec(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug)): Path<(String, String)>,
    JsonBody(body): JsonBody<PutSpec>,
) -> ApiResult<Response> {
    let created = rules::put(&state, &org, &slug, (&body.source.url, &body.source.text)).await?;
    let spec = reload(&state, &org, &slug).await?;
    let body = types::spec(&state, &spec, true);
    if created {
        Ok(crate::api::views::created(
            &state.url(&types::spec_path(&org.org.id, &slug)),
            body,
        ))
    } else {
        Ok(Json(body).into_response())
    }
}

/// Body of `updateOpenAPISpecBySlug`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateSpec {
    visibility: Visibility,
}

/// `OpenAPISpecVisibility`.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    Private,
    Public,
}

/// `updateOpenAPISpecBySlug`: sets the visibility.
pub async fn update_spec(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug)): Path<(String, String)>,
    JsonBody(body): JsonBody<UpdateSpec>,
) -> ApiResult<Json<OpenApiSpec>> {
    let spec = load(&state, &org, &slug).await?;
    let visibility = match body.visibility {
        Visibility::Private => "private",
        Visibility::Public => "public",
    };
    store::openapi::set_visibility(&state.db, &spec.id, visibility, state.now()).await?;
    let spec = reload(&state, &org, &slug).await?;
    Ok(Json(types::spec(&state, &spec, true)))
}

/// `deleteOpenAPISpecBySlug`: 204, also when the spec does not exist.
pub async fn delete_spec(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    let Some(spec) = store::openapi::get_for_update(&mut tx, &org.org.id, &slug).await? else {
        return Ok(StatusCode::NO_CONTENT);
    };
    let hashes = store::openapi::delete(&mut tx, &spec.id).await?;
    tx.commit().await?;
    // A document no other version uses goes too; a failure here only leaves bytes behind.
    if let Err(err) = rules::forget_documents(&state, &hashes).await {
        tracing::warn!(error = %err, "could not remove the documents of a deleted OpenAPI spec");
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `listOpenAPISpecVersions`: newest first.
pub async fn list_versions(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug)): Path<(String, String)>,
    page: PageRequest,
) -> ApiResult<Json<List<OpenApiSpecVersion>>> {
    let spec = load(&state, &org, &slug).await?;
    let scope = format!("openapi-versions:{}", spec.id);
    let before = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::openapi::versions(&state.db, &spec.id, before, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|v| {
            let key = (v.created_at, v.id.clone());
            (types::version(&state, &spec, &v), key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// A version of the spec; `latest` names its last version.
async fn load_version(state: &AppState, spec: &SpecRow, id: &str) -> ApiResult<VersionRow> {
    let id = if id == "latest" {
        spec.last_version.as_deref()
    } else {
        Some(id)
    };
    let found = match id {
        Some(id) => store::openapi::version(&state.db, &spec.id, id).await?,
        None => None,
    };
    found.ok_or_else(|| {
        ApiError::not_found(format!(
            "No matching version of OpenAPI specification `{}`.",
            spec.slug
        ))
    })
}

/// `getLatestOpenAPISpecVersion`.
pub async fn get_latest_version(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug)): Path<(String, String)>,
) -> ApiResult<Json<OpenApiSpecVersion>> {
    let spec = load(&state, &org, &slug).await?;
    let v = load_version(&state, &spec, "latest").await?;
    Ok(Json(types::version(&state, &spec, &v)))
}

/// `getOpenAPISpecVersionById`.
pub async fn get_version(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug, version)): Path<(String, String, String)>,
) -> ApiResult<Json<OpenApiSpecVersion>> {
    let spec = load(&state, &org, &slug).await?;
    let v = load_version(&state, &spec, &version).await?;
    Ok(Json(types::version(&state, &spec, &v)))
}

/// `getLatestOpenAPISpecVersionContent`.
pub async fn get_latest_version_content(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug)): Path<(String, String)>,
) -> ApiResult<Json<OpenApiSpecContent>> {
    content(&state, &org, &slug, "latest").await
}

/// `getOpenAPISpecVersionContentById`.
pub async fn get_version_content(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, slug, version)): Path<(String, String, String)>,
) -> ApiResult<Json<OpenApiSpecContent>> {
    content(&state, &org, &slug, &version).await
}

async fn content(
    state: &AppState,
    org: &OrgCtx,
    slug: &str,
    version: &str,
) -> ApiResult<Json<OpenApiSpecContent>> {
    let spec = load(state, org, slug).await?;
    let v = load_version(state, &spec, version).await?;
    let bytes = rules::document(state, &v)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("OpenAPI document {} missing", v.hash))
        })?;
    let text = String::from_utf8(bytes.to_vec()).map_err(ApiError::internal)?;
    let raw = serde_json::value::RawValue::from_string(text).map_err(ApiError::internal)?;
    Ok(Json(OpenApiSpecContent {
        filesystem: [("openapi.json", raw)].into_iter().collect(),
        url: types::document_url(state, &spec, &v.id),
    }))
}

/// `GET /openapi/{organizationId}/{specSlug}/{versionId}` (`latest` for the last version):
/// a version's document as JSON. Public specs are served to anyone; private ones to the
/// organization's members (not guests), with their API token.
pub async fn download(
    State(state): State<AppState>,
    Path((org_id, slug, version)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let not_found = || ApiError::not_found("OpenAPI specification not found.");
    if !valid_slug(&slug) {
        return Err(not_found());
    }
    let spec = store::openapi::get(&state.db, &org_id, &slug)
        .await?
        .ok_or_else(not_found)?;
    if spec.visibility != "public" {
        let caller: Caller = authenticate(&state, &headers).await?;
        let org = load_org(&state, &caller, &OrgId::new(org_id.clone()))
            .await
            .map_err(|_| not_found())?;
        org.require_non_guest("read the organization's OpenAPI specifications")?;
    }
    let v = load_version(&state, &spec, &version).await?;
    let bytes = rules::document(&state, &v)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(not_found)?;
    let mut res = sandboxed(bytes, HeaderValue::from_static("application/json"), None);
    let h = res.headers_mut();
    let cache = if spec.visibility == "public" {
        // Readers built for public specs (API explorers) fetch them from other origins.
        h.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        "public, max-age=60"
    } else {
        "private, no-store"
    };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    Ok(res)
}
