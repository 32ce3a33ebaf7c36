//! Request extractors that answer bad input with the official error body and a message
//! naming the offending field.

use axum::body::Bytes;
use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ApiResult};
use crate::http::operation::BodyLimit;
use crate::state::AppState;

/// A JSON request body, parsed with field-path error messages and bounded by the configured
/// body limit (413 past it).
pub struct JsonBody<T>(pub T);

/// A JSON request body that may be absent; an empty body yields `T::default()`.
pub struct OptionalJsonBody<T>(pub T);

async fn read_body(req: Request, state: &AppState) -> Result<Bytes, ApiError> {
    let limit = match req.extensions().get::<BodyLimit>() {
        Some(BodyLimit(op_limit)) => (*op_limit).min(state.config.max_body_bytes),
        None => state.config.max_body_bytes,
    };
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
        Err(err) if timed_out(err.as_ref()) => Err(ApiError::RequestTimeout(
            "The request body was not received in time.".into(),
        )),
        Err(err) => Err(ApiError::bad_request(format!(
            "Could not read the request body: {err}"
        ))),
    }
}

/// Whether a body error comes from the body read deadline (it arrives wrapped by the body
/// types between the timeout layer and the extractor).
pub(crate) fn timed_out(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(err);
    while let Some(e) = current {
        if e.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// Whether JSON text escapes a NUL character somewhere (`\u0000` after an odd number of
/// backslashes); raw NULs are not valid JSON and the parser refuses them.
fn escapes_nul(bytes: &[u8]) -> bool {
    let needle = b"u0000";
    bytes.windows(needle.len()).enumerate().any(|(i, w)| {
        w == needle && bytes[..i].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1
    })
}

/// The path of the first string (or key) in `value` that holds a NUL character.
fn nul_path(value: &serde_json::Value, path: &mut String) -> bool {
    use serde_json::Value;
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().enumerate().any(|(i, v)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let found = nul_path(v, path);
            if !found {
                path.truncate(len);
            }
            found
        }),
        Value::Object(map) => map.iter().any(|(k, v)| {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&k.replace('\0', "\\u0000"));
            let found = k.contains('\0') || nul_path(v, path);
            if !found {
                path.truncate(len);
            }
            found
        }),
        _ => false,
    }
}

/// Parses JSON bytes into `T`, naming the field at fault on error. Text holding NUL
/// characters is refused: no field needs one, and PostgreSQL cannot store them.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if escapes_nul(bytes) {
        let mut path = String::new();
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) {
            if nul_path(&value, &mut path) {
                let field = if path.is_empty() { "." } else { &path };
                return Err(ApiError::bad_request(format!(
                    "`{field}` must not contain NUL characters."
                )));
            }
        }
    }
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
        if contains_encoded_nul(query) {
            return Err(ApiError::bad_request(
                "Query parameters must not contain NUL characters.",
            ));
        }
        parse_query(query).map(QueryParams)
    }
}

/// Parses a raw query string into `T`, naming the parameter at fault on error.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    // Pairs that each carry a value read the same either way, and serde_urlencoded reads
    // them without grouping them first (a few percent of a page read); an empty value (None
    // for serde_html_form) or a repeated key takes the full path.
    if plain_pairs(query) {
        if let Ok(parsed) = serde_urlencoded::from_str(query) {
            return Ok(parsed);
        }
    }
    // Tracking the path of the failing field costs a small read a few percent: it is done
    // only to word the error, on a second pass.
    if let Ok(parsed) = serde_html_form::from_str(query) {
        return Ok(parsed);
    }
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

/// Whether every pair of `query` has a key and a non-empty value (an empty query has none).
fn plain_pairs(query: &str) -> bool {
    query.is_empty()
        || query.split('&').all(|pair| {
            pair.split_once('=')
                .is_some_and(|(k, v)| !k.is_empty() && !v.is_empty())
        })
}

pub use crate::validate::nullable;

/// Whether URL-encoded text carries a NUL character (`%00`).
pub fn contains_encoded_nul(text: &str) -> bool {
    text.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1] == b'0' && w[2] == b'0')
}

/// The matched route's path parameters, percent-decoded, looked up by name: a route has a
/// few, and copying them into a map cost every space-scoped request several allocations.
#[derive(Debug, Default)]
pub struct PathParams(Option<RawPathParams>);

impl PathParams {
    /// The request's path parameters (none for a route without any); 400 naming the
    /// parameter when one is not UTF-8 once percent-decoded.
    pub async fn read(parts: &mut Parts) -> ApiResult<Self> {
        match RawPathParams::from_request_parts(parts, &()).await {
            Ok(params) => Ok(Self(Some(params))),
            Err(RawPathParamsRejection::MissingPathParams(_)) => Ok(Self(None)),
            Err(other) => Err(ApiError::bad_request(other.body_text())),
        }
    }

    /// The parameter `name`, if the route has it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .as_ref()?
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
    }

    /// A parameter the route is declared with: its absence is a bug in the route table.
    pub fn require(&self, name: &str) -> ApiResult<&str> {
        self.get(name).ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("the route has no path parameter `{name}`"))
        })
    }
}

/// What a read scoped by its path needs from the request, after the access check: the path
/// parameters, the space's context and the caller's id (for whom download URLs are signed).
pub async fn scoped_read(
    parts: &mut Parts,
) -> Result<(PathParams, &crate::domain::access::SpaceCtx, String), ApiError> {
    let params = PathParams::read(parts).await?;
    let reader = parts
        .extensions
        .get::<crate::domain::auth::Caller>()
        .map(|c| c.user.id.to_string())
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("a read without a caller")))?;
    let ctx = parts
        .extensions
        .get::<crate::domain::access::SpaceCtx>()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("a read without a space context")))?;
    Ok((params, ctx, reader))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        Markdown,
        Document,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Query {
        format: Option<Kind>,
        metadata: Option<bool>,
        query: Option<String>,
        limit: Option<u32>,
        #[serde(default)]
        id: Vec<String>,
    }

    #[test]
    fn both_parsers_read_a_query_alike() {
        let q: Query = parse_query("format=markdown&metadata=false&query=a+b%21&limit=3").unwrap();
        assert_eq!(q.format, Some(Kind::Markdown));
        assert_eq!(q.metadata, Some(false));
        assert_eq!(q.query.as_deref(), Some("a b!"));
        assert_eq!(q.limit, Some(3));
        // An empty value is absent, as serde_html_form reads it (serde_urlencoded would
        // read Some("")).
        let q: Query = parse_query("query=&format=document").unwrap();
        assert_eq!(q.query, None);
        assert_eq!(q.format, Some(Kind::Document));
        // A repeated key fills a list; a single one too.
        let q: Query = parse_query("id=a&id=b").unwrap();
        assert_eq!(q.id, ["a", "b"]);
        let q: Query = parse_query("id=a").unwrap();
        assert_eq!(q.id, ["a"]);
        let q: Query = parse_query("").unwrap();
        assert_eq!(q.format, None);
    }

    #[test]
    fn a_bad_value_is_a_400_naming_the_parameter() {
        let err = parse_query::<Query>("limit=many").unwrap_err();
        assert!(err.to_string().contains("limit"), "{err}");
        let err = parse_query::<Query>("format=pdf").unwrap_err();
        assert!(err.to_string().contains("format"), "{err}");
    }
}
