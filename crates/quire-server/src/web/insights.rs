//! `POST <site>/~insights`: the site's own script sends its events here, inside the site's
//! address, so that a site on its own hostname (where `/v1` is not served) reaches them;
//! the same workflow as `trackEventsInSiteById` (`domain::insights::track`).

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::domain::insights;
use crate::error::ApiError;
use crate::state::AppState;

/// The path, at the site's root (after its share key, if any), that takes events.
pub const PATH: &str = "~insights";

/// Whether `rest` (the path after `/sites/`) is a site's `~insights` path.
pub fn is_insights(rest: &str) -> bool {
    rest.strip_suffix(PATH)
        .is_some_and(|before| before.ends_with('/'))
}

/// Counts the events in `body` for the site `rest` names (its first segment): 204, or the
/// API's error bodies.
pub async fn serve(state: &AppState, rest: &str, body: Body) -> Response {
    let site_id = rest.split('/').next().unwrap_or("");
    let bytes = match axum::body::to_bytes(body, insights::MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError::PayloadTooLarge(format!(
                "Request body exceeds the limit of {} bytes.",
                insights::MAX_BODY
            ))
            .into_response()
        }
    };
    let value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(err) => {
            return ApiError::bad_request(format!("Request body is not valid JSON: {err}"))
                .into_response()
        }
    };
    match insights::track(state, None, site_id, &value).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(err) => err.into_response(),
    }
}
