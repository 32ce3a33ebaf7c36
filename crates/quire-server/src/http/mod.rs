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
use axum::http::{HeaderName, HeaderValue, StatusCode};
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

/// The request id header: taken from the request when a proxy set one, else made here, and
/// sent back on the response.
static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// What every request passes first, in one layer (one layer costs less than four):
/// - it gets a request id, and runs inside a span carrying it, so that every log line it
///   causes (errors included) names the request; one line per request is logged at `info`
///   (method, path, status, duration); when neither is enabled nothing is formatted;
/// - a path with `%00` is refused before any handler or query sees it (identifiers never
///   hold NUL characters, and PostgreSQL cannot compare text holding them);
/// - an error answered by the framework rather than by a handler gets the official JSON
///   error body.
pub async fn edge(mut req: Request<Body>, next: Next) -> Response {
    let id = match req.headers().get(&REQUEST_ID) {
        Some(given) => given.clone(),
        None => {
            let made = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string())
                .expect("a UUID is a valid header value");
            req.headers_mut().insert(REQUEST_ID.clone(), made.clone());
            made
        }
    };
    let mut res = if tracing::enabled!(target: "quire::http", tracing::Level::ERROR) {
        let span = tracing::error_span!(
            target: "quire::http",
            "request",
            request_id = %id.to_str().unwrap_or("-")
        );
        logged(req, next).instrument(span).await
    } else {
        checked(req, next).await
    };
    res.headers_mut().insert(REQUEST_ID.clone(), id);
    res
}

/// [`checked`], with one log line per request when `info` is enabled.
async fn logged(req: Request<Body>, next: Next) -> Response {
    if !tracing::enabled!(target: "quire::http", tracing::Level::INFO) {
        return checked(req, next).await;
    }
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let res = checked(req, next).await;
    tracing::info!(
        target: "quire::http",
        "{method} {path} {} {:.1}ms",
        res.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    res
}

/// Refuses NUL characters in the path, and gives framework errors the official body.
async fn checked(req: Request<Body>, next: Next) -> Response {
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
