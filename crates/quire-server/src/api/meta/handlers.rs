//! Service information and health.

use crate::http::json::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::state::AppState;

/// `getApiInformation`: version and build of this server.
pub async fn get_api_information() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "build": option_env!("QUIRE_BUILD").unwrap_or("quire"),
    }))
}

/// `GET /healthz`: 200 once the server is ready (its database answers).
pub async fn healthz(State(state): State<AppState>) -> ApiResult<(StatusCode, Json<Value>)> {
    crate::store::ping(&state.db).await?;
    Ok((StatusCode::OK, Json(json!({ "status": "ok" }))))
}
