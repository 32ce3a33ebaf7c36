//! Request extractors that answer bad input with the official error body and a message
//! naming the offending field.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::app::AppState;
use crate::error::ApiError;

/// A JSON request body, parsed with field-path error messages and bounded by the configured
/// body limit (413 past it).
pub struct JsonBody<T>(pub T);

/// A JSON request body that may be absent; an empty body yields `T::default()`.
pub struct OptionalJsonBody<T>(pub T);

async fn read_body(req: Request, state: &AppState) -> Result<Bytes, ApiError> {
    let limit = state.config.max_body_bytes;
    let too_large =
        || ApiError::PayloadTooLarge(format!("Request body exceeds the limit of {limit} bytes."));
    if let Some(len) = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        if len > limit {
            return Err(too_large());
        }
    }
    let body = http_body_util::Limited::new(req.into_body(), limit);
    match http_body_util::BodyExt::collect(body).await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(err) => Err(ApiError::bad_request(format!(
            "Could not read the request body: {err}"
        ))),
    }
}

/// Parses JSON bytes into `T`, naming the field at fault on error.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::bad_request(format!("Malformed JSON in request body: {inner}"))
        } else if path == "." {
            ApiError::bad_request(format!("Invalid request body: {inner}"))
        } else {
            ApiError::bad_request(format!("Invalid field `{path}` in request body: {inner}"))
        }
    })?;
    de.end()
        .map_err(|err| ApiError::bad_request(format!("Malformed JSON in request body: {err}")))?;
    Ok(value)
}

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("A JSON request body is required."));
        }
        parse_json(&bytes).map(JsonBody)
    }
}

impl<T: DeserializeOwned + Default> FromRequest<AppState> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(T::default()));
        }
        parse_json(&bytes).map(OptionalJsonBody)
    }
}

/// Query parameters, parsed with repeated keys as arrays and errors naming the parameter.
pub struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        parse_query(query).map(QueryParams)
    }
}

/// Parses a raw query string into `T`, naming the parameter at fault on error.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let de = serde_html_form::Deserializer::from_bytes(query.as_bytes());
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            ApiError::bad_request(format!("Invalid query parameters: {inner}"))
        } else {
            ApiError::bad_request(format!("Invalid query parameter `{path}`: {inner}"))
        }
    })
}

/// Deserializes a field that distinguishes absent (`None`) from `null` (`Some(None)`);
/// use with `#[serde(default, deserialize_with = "nullable")]`.
pub fn nullable<'de, D, T>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(de).map(Some)
}
