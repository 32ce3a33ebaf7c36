//! `GET /files/{hash}/{name}`: file bytes behind signed, expiring download URLs (no bearer
//! token: the signature is the authorisation).

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::blobs::download_signature;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::QueryParams;
use crate::state::AppState;

/// Query of a download URL.
#[derive(Deserialize)]
pub struct DownloadQuery {
    expires: i64,
    signature: String,
}

/// Serves a file when its URL's signature is valid and unexpired.
pub async fn download(
    State(state): State<AppState>,
    Path((hash, name)): Path<(String, String)>,
    QueryParams(q): QueryParams<DownloadQuery>,
) -> ApiResult<Response> {
    let expected = download_signature(&state.keys, &hash, q.expires);
    let valid = crate::keys::unb64(&q.signature)
        .zip(crate::keys::unb64(&expected))
        .is_some_and(|(a, b)| {
            a.len() == b.len() && a.iter().zip(&b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
        });
    if !valid {
        return Err(ApiError::forbidden("Invalid download signature."));
    }
    if q.expires < state.now() {
        return Err(ApiError::forbidden(
            "This download URL has expired; read the file again for a new one.",
        ));
    }
    let content_type: Option<String> =
        sqlx::query_scalar("SELECT content_type FROM blobs WHERE hash = $1")
            .bind(&hash)
            .fetch_optional(state.db.pool())
            .await?;
    let bytes = state
        .blobs
        .get(&hash)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| ApiError::not_found("File not found."))?;
    let mut res = (StatusCode::OK, bytes).into_response();
    let ct = content_type.unwrap_or_else(|| "application/octet-stream".into());
    if let Ok(v) = HeaderValue::from_str(&ct) {
        res.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    let safe: String = name
        .chars()
        .filter(|c| !c.is_control() && *c != '"')
        .collect();
    if let Ok(v) = HeaderValue::from_str(&format!("inline; filename=\"{safe}\"")) {
        res.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600, immutable"),
    );
    Ok(res)
}
