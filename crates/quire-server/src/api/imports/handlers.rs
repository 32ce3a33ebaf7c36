//! `importContent`, `importContentInPageById`, `importContentInChangeRequest` and
//! `importContentInChangeRequestPageById`: one handler body, scoped by the path.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::types::{ImportContent, ImportContentResult};
use crate::domain::access::SpaceCtx;
use crate::domain::auth::Caller;
use crate::domain::imports::{self, Source, Target};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::state::AppState;

/// The checked body: the URL and the source.
fn read_body(body: ImportContent) -> ApiResult<(String, Source)> {
    let url = body
        .url
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("`url` is required."))?;
    let source = body
        .source
        .ok_or_else(|| ApiError::bad_request("`source` is required."))?;
    Ok((url.trim().to_string(), Source::parse(&source)?))
}

async fn run(
    state: &AppState,
    caller: &Caller,
    ctx: &SpaceCtx,
    body: ImportContent,
    target: Target<'_>,
    page: Option<&str>,
    status: StatusCode,
) -> ApiResult<Response> {
    let (url, source) = read_body(body)?;
    let done = imports::import(state, ctx, &caller.user.id, source, &url, target, page).await?;
    let location = state.url(&format!(
        "/v1/spaces/{}/revisions/{}",
        ctx.space.id, done.revision
    ));
    let body = Json(ImportContentResult {
        revision: done.revision,
        imported_resources: done.imported,
        total_resources: done.total,
    });
    Ok((status, [(header::LOCATION, location)], body).into_response())
}

/// `importContent`: imports into the space's content as one new revision (200, as the
/// service description states).
pub async fn import_content(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<ImportContent>,
) -> ApiResult<Response> {
    run(
        &state,
        &caller,
        &ctx,
        body,
        Target::Space,
        None,
        StatusCode::OK,
    )
    .await
}

/// `importContentInPageById`: imports into a page of the space (201, as the spec states).
pub async fn import_content_in_page(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, page)): Path<(String, String)>,
    JsonBody(body): JsonBody<ImportContent>,
) -> ApiResult<Response> {
    run(
        &state,
        &caller,
        &ctx,
        body,
        Target::Space,
        Some(&page),
        StatusCode::CREATED,
    )
    .await
}

/// `importContentInChangeRequest`: imports into a change request as one new revision of it
/// (200, as the service description states).
pub async fn import_content_in_cr(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
    JsonBody(body): JsonBody<ImportContent>,
) -> ApiResult<Response> {
    run(
        &state,
        &caller,
        &ctx,
        body,
        Target::ChangeRequest(&cr),
        None,
        StatusCode::OK,
    )
    .await
}

/// `importContentInChangeRequestPageById`: imports into a page of a change request (201).
pub async fn import_content_in_cr_page(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr, page)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<ImportContent>,
) -> ApiResult<Response> {
    run(
        &state,
        &caller,
        &ctx,
        body,
        Target::ChangeRequest(&cr),
        Some(&page),
        StatusCode::CREATED,
    )
    .await
}
