//! List envelopes `{items, count, next: {page}}` with keyset cursors.
//!
//! A cursor is the sort key of the last item served, signed with the server key and bound to
//! the list it came from, so that walking a list while rows are inserted serves every
//! pre-existing row exactly once, and a forged or foreign cursor is refused with 400.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult};
use crate::keys::{b64, unb64};
use crate::state::AppState;

/// Items per page when `limit` is absent.
pub const DEFAULT_LIMIT: i64 = 100;
/// Largest accepted `limit`.
pub const MAX_LIMIT: i64 = 1000;

/// The `page` and `limit` query parameters of a list request.
#[derive(Debug, Clone)]
pub struct PageRequest {
    /// Items wanted on this page.
    pub limit: i64,
    cursor: Option<String>,
    keys: crate::keys::Keys,
}

#[derive(Deserialize)]
struct RawPage {
    page: Option<String>,
    limit: Option<String>,
}

impl FromRequestParts<AppState> for PageRequest {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let raw: RawPage = crate::http::extract::parse_query(parts.uri.query().unwrap_or(""))?;
        let limit = match raw.limit.as_deref() {
            None => DEFAULT_LIMIT,
            Some(text) => match text.trim().parse::<i64>() {
                Ok(n) if (0..=MAX_LIMIT).contains(&n) => n,
                Ok(_) => {
                    return Err(ApiError::bad_request(format!(
                        "Invalid query parameter `limit`: must be between 0 and {MAX_LIMIT}."
                    )))
                }
                Err(_) => {
                    return Err(ApiError::bad_request(
                        "Invalid query parameter `limit`: must be a whole number.",
                    ))
                }
            },
        };
        let cursor = raw.page.filter(|p| !p.is_empty());
        Ok(PageRequest {
            limit,
            cursor,
            keys: state.keys.clone(),
        })
    }
}

fn forged() -> ApiError {
    ApiError::bad_request("Invalid query parameter `page`: not a cursor issued for this list.")
}

impl PageRequest {
    /// The sort key after which this page starts, if a cursor was given. `scope` names the
    /// list and its ordering; a cursor from another list is refused.
    pub fn after<K: DeserializeOwned>(&self, scope: &str) -> ApiResult<Option<K>> {
        let Some(cursor) = &self.cursor else {
            return Ok(None);
        };
        let (payload, sig) = cursor.split_once('.').ok_or_else(forged)?;
        let payload = unb64(payload).ok_or_else(forged)?;
        let sig = unb64(sig).ok_or_else(forged)?;
        if !self.keys.verify("cursor", &payload, &sig) {
            return Err(forged());
        }
        let (cursor_scope, key): (String, K) =
            serde_json::from_slice(&payload).map_err(|_| forged())?;
        if cursor_scope != scope {
            return Err(forged());
        }
        Ok(Some(key))
    }

    /// Rows to fetch: one more than the page, to learn whether a next page exists.
    pub fn fetch_limit(&self) -> i64 {
        self.limit + 1
    }

    /// Builds the envelope from up to `fetch_limit()` rows, each with its sort key.
    pub fn finish<T, K: Serialize>(
        &self,
        scope: &str,
        mut rows: Vec<(T, K)>,
        count: i64,
    ) -> ApiResult<List<T>> {
        let limit = usize::try_from(self.limit).unwrap_or(0);
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = match (more, rows.last()) {
            (true, Some((_, key))) => {
                let payload = serde_json::to_vec(&(scope, key)).map_err(ApiError::internal)?;
                let sig = self.keys.sign("cursor", &payload);
                Some(Next {
                    page: format!("{}.{}", b64(&payload), b64(&sig[..16])),
                })
            }
            _ => None,
        };
        Ok(List {
            items: rows.into_iter().map(|(item, _)| item).collect(),
            count,
            next,
        })
    }
}

/// The official list envelope.
#[derive(Debug, Serialize)]
pub struct List<T> {
    /// This page's items.
    pub items: Vec<T>,
    /// How many items the whole list holds.
    pub count: i64,
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<Next>,
}

/// Pointer to the next page.
#[derive(Debug, Serialize)]
pub struct Next {
    /// Opaque cursor to pass back as `page`.
    pub page: String,
}

impl<T> List<T> {
    /// Converts every item, keeping the envelope.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> List<U> {
        List {
            items: self.items.into_iter().map(f).collect(),
            count: self.count,
            next: self.next,
        }
    }
}
