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

/// A JSON object serialized from `head`, with one more member `name` whose value is JSON
/// serialized earlier (a revision's page tree, hundreds of kilobytes): the member is sent
/// as its own chunk, neither parsed nor copied again.
pub struct JsonWithMember<T> {
    /// Every other member of the object.
    pub head: T,
    /// The appended member's name (a plain ASCII identifier: it is not escaped).
    pub name: &'static str,
    /// The appended member's value, valid JSON.
    pub value: bytes::Bytes,
}

impl<T: Serialize> IntoResponse for JsonWithMember<T> {
    fn into_response(self) -> Response {
        let mut head = Vec::with_capacity(START);
        if let Err(e) = serde_json::to_writer(&mut head, &self.head) {
            return crate::error::ApiError::internal(e).into_response();
        }
        if head.pop() != Some(b'}') {
            return crate::error::ApiError::internal(anyhow::anyhow!(
                "a spliced JSON body's head is not an object"
            ))
            .into_response();
        }
        if head.len() > 1 {
            head.push(b',');
        }
        head.extend_from_slice(format!("\"{}\":", self.name).as_bytes());
        let body = Chunks::new([
            bytes::Bytes::from(head),
            self.value,
            bytes::Bytes::from_static(b"}"),
        ]);
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            axum::body::Body::new(body),
        )
            .into_response()
    }
}

/// A body of a few chunks known in advance; its exact length becomes `Content-Length`.
struct Chunks {
    chunks: std::collections::VecDeque<bytes::Bytes>,
    remaining: u64,
}

impl Chunks {
    fn new(chunks: impl IntoIterator<Item = bytes::Bytes>) -> Self {
        let chunks: std::collections::VecDeque<_> =
            chunks.into_iter().filter(|c| !c.is_empty()).collect();
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        Self { chunks, remaining }
    }
}

impl hyper::body::Body for Chunks {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let next = self.chunks.pop_front();
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        std::task::Poll::Ready(next.map(|c| Ok(hyper::body::Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_member_is_appended_to_the_head_object_with_its_exact_length() {
        use http_body_util::BodyExt;
        let response = JsonWithMember {
            head: serde_json::json!({"id": "r1"}),
            name: "pages",
            value: bytes::Bytes::from_static(b"[{\"id\":\"p\"}]"),
        }
        .into_response();
        let body = response.into_body();
        let length = hyper::body::Body::size_hint(&body).exact();
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], br#"{"id":"r1","pages":[{"id":"p"}]}"#);
        assert_eq!(length, Some(bytes.len() as u64));
        let empty = JsonWithMember {
            head: serde_json::json!({}),
            name: "pages",
            value: bytes::Bytes::from_static(b"[]"),
        }
        .into_response();
        let bytes = empty.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], br#"{"pages":[]}"#);
    }
}
