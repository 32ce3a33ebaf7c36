//! `getSpaceGitInfo`, `importGitRepository`, `exportToGitRepository`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;

use super::types::{GitSyncState, Operation, SyncBody};
use crate::clock::iso;
use crate::domain::access::SpaceCtx;
use crate::domain::auth::Caller;
use crate::domain::git::sync::{self, Direction, Request};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::state::AppState;

/// `getSpaceGitInfo`: 404 when the space has no Git Sync. The URL shown is the tree URL
/// given, else the repository's without credentials.
pub async fn get_info(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
) -> ApiResult<Json<GitSyncState>> {
    let row = sync::info(&state, &ctx.space.id)
        .await?
        .ok_or_else(|| ApiError::not_found("No Git Sync is set up on this space."))?;
    let operation = match (&row.op_state, &row.op_direction, row.op_started) {
        (Some(s), Some(d), Some(started)) => Some(Operation {
            state: s.clone(),
            direction: d.clone(),
            started_at: iso(started),
            ended_at: row.op_ended.map(iso),
            error: row.op_error.clone(),
        }),
        _ => None,
    };
    Ok(Json(GitSyncState {
        repo_name: sync::repo_name(&row.url),
        installation_provider: row.provider.clone(),
        url: row
            .tree_url
            .clone()
            .unwrap_or_else(|| sync::shown_url(&row.url)),
        updated_at: iso(row.updated_at),
        operation,
    }))
}

fn request(body: SyncBody) -> ApiResult<Request> {
    let url = body
        .url
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ApiError::bad_request("`url` is required."))?;
    let reference = body
        .reference
        .filter(|r| !r.is_empty())
        .ok_or_else(|| ApiError::bad_request("`ref` is required."))?;
    let info = body.git_info.unwrap_or_default();
    Ok(Request {
        url,
        reference,
        message: body.commit_message,
        tree_url: body.repo_tree_url.or(info.url),
        commit_url: body.repo_commit_url,
        project_dir: body.repo_project_directory,
        provider: info.provider,
        standalone: body.standalone,
        force: body.force,
    })
}

/// `importGitRepository`: 204, the import runs as a job.
pub async fn import(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<SyncBody>,
) -> ApiResult<StatusCode> {
    start(&state, &caller, &ctx, body, Direction::Import).await
}

/// `exportToGitRepository`: 204, the export runs as a job.
pub async fn export(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<SyncBody>,
) -> ApiResult<StatusCode> {
    start(&state, &caller, &ctx, body, Direction::Export).await
}

/// Checks the body and starts the operation.
async fn start(
    state: &AppState,
    caller: &Caller,
    ctx: &SpaceCtx,
    body: SyncBody,
    direction: Direction,
) -> ApiResult<StatusCode> {
    let req = request(body)?;
    sync::start(state, ctx, caller.user.id.as_str(), direction, req).await?;
    Ok(StatusCode::NO_CONTENT)
}
