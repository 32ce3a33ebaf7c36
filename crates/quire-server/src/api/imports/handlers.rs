//! The four import operations: one handler, scoped by the path.

use std::collections::HashMap;

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

/// `importContent`, `importContentInPageById`, `importContentInChangeRequest`,
/// `importContentInChangeRequestPageById`: the path says where (`changeRequestId`, `pageId`).
/// An import into a whole space or change request answers 200 with the new revision, as the
/// service description states; one into a page answers 201, as the spec states.
pub async fn import_content(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path(params): Path<HashMap<String, String>>,
    JsonBody(body): JsonBody<ImportContent>,
) -> ApiResult<Response> {
    let (url, source) = read_body(body)?;
    let target = match params.get("changeRequestId") {
        Some(cr) => Target::ChangeRequest(cr),
        None => Target::Space,
    };
    let page = params.get("pageId").map(String::as_str);
    let done = imports::import(&state, &ctx, &caller.user.id, source, &url, target, page).await?;
    let location = state.url(&format!(
        "/v1/spaces/{}/revisions/{}",
        ctx.space.id, done.revision
    ));
    let status = if page.is_some() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let body = Json(ImportContentResult {
        revision: done.revision,
        imported_resources: done.imported,
        total_resources: done.total,
    });
    Ok((status, [(header::LOCATION, location)], body).into_response())
}
