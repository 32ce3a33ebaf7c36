//! Service information and health.

use crate::http::json::Json;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::error_response;
use crate::metrics::Scraped;
use crate::state::AppState;

/// `getApiInformation`: version and build of this server.
pub async fn get_api_information() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "build": option_env!("QUIRE_BUILD").unwrap_or("quire"),
    }))
}

/// `GET /healthz`: 200 while the process serves requests (liveness; touches nothing).
pub async fn healthz() -> (StatusCode, Json<Value>) {
    (StatusCode::OK, Json(json!({ "status": "ok" })))
}

/// `GET /readyz`: 200 when the database answers and has every migration of this build;
/// 503 otherwise, so that a load balancer sends this node nothing until then.
pub async fn readyz(State(state): State<AppState>) -> Response {
    let unready = |why: String| error_response(StatusCode::SERVICE_UNAVAILABLE, &why);
    if let Err(e) = crate::store::ping(&state.db).await {
        return unready(format!("The database does not answer: {e}"));
    }
    match crate::db::pending_migrations(&state.db).await {
        Ok(pending) if pending.is_empty() => {
            (StatusCode::OK, Json(json!({ "status": "ok" }))).into_response()
        }
        Ok(pending) => unready(format!("Migrations not applied yet: {pending:?}.")),
        Err(e) => unready(format!("The migrations cannot be read: {e}")),
    }
}

/// `GET /metrics`: this node's metrics in the Prometheus text format, for a bearer of the
/// configured metrics token; the endpoint does not exist without one.
pub async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(expected) = state.config.metrics_token.as_deref() else {
        return error_response(StatusCode::NOT_FOUND, "No endpoint at GET /metrics.");
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    // Compared as digests: equal-length values, so the comparison says nothing by its time.
    if Sha256::digest(given.as_bytes()) != Sha256::digest(expected.as_bytes()) {
        return error_response(
            StatusCode::UNAUTHORIZED,
            "`Authorization` must carry the metrics token as a bearer token.",
        );
    }
    let now = state.now();
    let jobs = match crate::store::jobs::due(&state.db, now).await {
        Ok(rows) => rows
            .into_iter()
            .map(|(kind, count, oldest)| (kind, count, (now - oldest).max(0) as f64 / 1000.0))
            .collect(),
        Err(e) => return crate::error::ApiError::from(e).into_response(),
    };
    let failed_jobs = match crate::store::jobs::failed_counts(&state.db).await {
        Ok(rows) => rows,
        Err(e) => return crate::error::ApiError::from(e).into_response(),
    };
    let pool = state.db.pool();
    let scraped = Scraped {
        db_connections: pool.size(),
        db_idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
        jobs,
        failed_jobs,
        cache: state
            .cache
            .lookups()
            .into_iter()
            .map(|(name, (hits, misses))| (name, hits, misses))
            .collect(),
    };
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(scraped),
    )
        .into_response()
}
