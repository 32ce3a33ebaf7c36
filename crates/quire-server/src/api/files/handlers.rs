//! `GET /files/{spaceId}/{fileId}/{name}`: file bytes behind signed, expiring download URLs
//! (no bearer token: the signature is the authorisation). A URL is bound to one file of one
//! space and to the reader it was made for, and stops working once that reader can no
//! longer read the space, or the space is deleted.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use serde::Deserialize;

use crate::blobs::{download_signature, FileLink};
use crate::domain::access::reader_still_reads;
use crate::error::{ApiError, ApiResult};
use crate::http::download::uploaded_file;
use crate::http::extract::QueryParams;
use crate::state::AppState;
use crate::store;

/// Query of a download URL.
#[derive(Deserialize)]
pub struct DownloadQuery {
    hash: String,
    #[serde(rename = "type")]
    content_type: String,
    reader: String,
    expires: i64,
    signature: String,
}

/// Serves a file when its URL's signature is valid and unexpired and its reader may still
/// read the space.
pub async fn download(
    State(state): State<AppState>,
    Path((space, file, name)): Path<(String, String, String)>,
    QueryParams(q): QueryParams<DownloadQuery>,
) -> ApiResult<Response> {
    let link = FileLink {
        space: &space,
        file: &file,
        hash: &q.hash,
        content_type: &q.content_type,
        name: &name,
        reader: &q.reader,
    };
    let expected = download_signature(&state.keys, &link, q.expires);
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
    // The reader must still read the space, and the space must be live and hold the bytes.
    let gone = || ApiError::not_found("File not found.");
    if !reader_still_reads(&state, &q.reader, &space).await?
        || !store::objects::has_blob_ref(&state.db, &space, &q.hash).await?
    {
        return Err(gone());
    }
    let bytes = state
        .blobs
        .get(&q.hash)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(gone)?;
    let mut res = uploaded_file(bytes, &q.content_type, &name);
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    Ok(res)
}
