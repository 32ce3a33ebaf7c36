//! JSON response bodies.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A JSON response body. Unlike axum's, it serializes into a plain `Vec` that starts at a
/// typical body's size: serde writes many small fragments, and appending them to a `Vec`
/// costs less than to a `BytesMut` that grows from 128 bytes (a listing is 10–20 KB).
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

/// Bytes reserved for a body before serializing it.
const START: usize = 2048;

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut buf = Vec::with_capacity(START);
        match serde_json::to_writer(&mut buf, &self.0) {
            Ok(()) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                buf,
            )
                .into_response(),
            Err(e) => crate::error::ApiError::internal(e).into_response(),
        }
    }
}

/// A JSON body already serialized (a listing answered from memory).
#[derive(Debug, Clone)]
pub struct JsonBytes(pub bytes::Bytes);

impl IntoResponse for JsonBytes {
    fn into_response(self) -> Response {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            self.0,
        )
            .into_response()
    }
}
