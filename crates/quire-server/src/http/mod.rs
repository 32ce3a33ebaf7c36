//! The HTTP layer's plumbing: operations and their access checks, extractors, paging, and
//! the middleware every request passes (logging with request ids, NUL refusal, the body
//! budget, the fallback). `api::router` assembles them with the families' operations.

pub mod access;
pub mod extract;
pub mod operation;
pub mod pagination;

use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::error::{error_response, normalize_error_body};
use crate::state::AppState;
use operation::BodyLimit;

/// Large request bodies wait for room in the body budget and hold it until their answer
/// is made, so that many clients posting maximal bodies at once are served a few at a time
/// instead of all together. A body without a declared length counts as maximal.
pub async fn budget_bodies(
    State(state): State<AppState>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let chunked = req
        .headers()
        .contains_key(axum::http::header::TRANSFER_ENCODING);
    let limit = match req.extensions().get::<BodyLimit>() {
        Some(BodyLimit(op_limit)) => (*op_limit).min(state.config.max_body_bytes),
        None => state.config.max_body_bytes,
    };
    let size = match declared {
        Some(len) => len.min(limit),
        None if chunked => limit,
        None => 0,
    };
    if size <= crate::state::SMALL_BODY_BYTES {
        return next.run(req).await;
    }
    let kib = u32::try_from(size.div_ceil(1024)).unwrap_or(u32::MAX);
    match state.body_budget.acquire_many(kib).await {
        Ok(_permit) => next.run(req).await,
        Err(_) => error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "The server is shutting down.",
        ),
    }
}

/// What every request passes first, in one layer: a path with `%00` is refused before any
/// handler or query sees it (identifiers never hold NUL characters, and PostgreSQL cannot
/// compare text holding them); an error answered by the framework rather than by a handler
/// gets the official JSON error body.
pub async fn edge(req: Request<Body>, next: Next) -> Response {
    if extract::contains_encoded_nul(req.uri().path()) {
        return error_response(
            StatusCode::BAD_REQUEST,
            "The request path must not contain NUL characters.",
        );
    }
    normalize_error_body(next.run(req).await)
}

/// The official 404 for a path no operation serves.
pub async fn fallback(req: Request<Body>) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &format!("No endpoint at {} {}.", req.method(), req.uri().path()),
    )
}

/// Runs every request inside a span carrying its request id, so that every log line it
/// causes (errors included) names the request; then logs one line per request: method, path,
/// status and duration. When neither is enabled, nothing is formatted or copied.
pub async fn log_request(req: Request<Body>, next: Next) -> Response {
    let span_on = tracing::enabled!(target: "quire::http", tracing::Level::ERROR);
    if !span_on {
        return next.run(req).await;
    }
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_string();
    let span = tracing::error_span!(target: "quire::http", "request", request_id = %id);
    async move {
        if !tracing::enabled!(target: "quire::http", tracing::Level::INFO) {
            return next.run(req).await;
        }
        let started = Instant::now();
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let res = next.run(req).await;
        tracing::info!(
            target: "quire::http",
            "{method} {path} {} {:.1}ms",
            res.status().as_u16(),
            started.elapsed().as_secs_f64() * 1000.0
        );
        res
    }
    .instrument(span)
    .await
}
