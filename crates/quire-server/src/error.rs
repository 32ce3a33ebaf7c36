//! The one error type of the API and its mapping to the official error body
//! `{"error": {"code": <status>, "message": "..."}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to the caller. Internal causes are logged, never echoed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 412: a request well formed but whose conditions do not hold (a custom font without
    /// its regular weight, a storage key that names no finished upload).
    #[error("{0}")]
    PreconditionFailed(String),
    #[error("{0}")]
    RequestTimeout(String),
    #[error("{0}")]
    TooManyRequests(String),
    /// 503: the node is busy with work of this kind; the client may retry after this many
    /// seconds (`Retry-After`).
    #[error("{0}")]
    Busy(String, u64),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

/// Result alias used by handlers and stores.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// 400 with a message naming what was wrong.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::BadRequest(msg.into())
    }
    /// 403 for a caller who can see the resource but may not do this.
    pub fn forbidden(msg: impl Into<String>) -> Self {
        Self::Forbidden(msg.into())
    }
    /// 404 naming the missing resource.
    pub fn not_found(msg: impl Into<String>) -> Self {
        Self::NotFound(msg.into())
    }
    /// 409 for a request that conflicts with the current state.
    pub fn conflict(msg: impl Into<String>) -> Self {
        Self::Conflict(msg.into())
    }
    /// 500 wrapping an unexpected cause.
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        Self::Internal(err.into())
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            Self::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Busy(..) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// What a unique constraint guards, by the names the two databases give it: PostgreSQL names
/// the index (`organizations_hostname`, `members_pkey`), SQLite the columns
/// (`organizations.hostname`, `members.org_id, members.user_id`).
const UNIQUE_VIOLATIONS: &[(&str, &str, &str)] = &[
    (
        "organizations_hostname",
        "organizations.hostname",
        "Another organization already uses this `hostname`.",
    ),
    (
        "users_email",
        "users.email",
        "A user with this e-mail address already exists.",
    ),
    (
        "sites_hostname",
        "sites.hostname",
        "`hostname`: another site already has this custom hostname.",
    ),
    (
        "members_pkey",
        "members.org_id",
        "This user is already a member of the organization.",
    ),
    (
        "team_members_pkey",
        "team_members.team_id",
        "This user is already a member of the team.",
    ),
    (
        "pending_invites_pkey",
        "pending_invites.org_id",
        "This e-mail address is already invited to the organization.",
    ),
    (
        "change_requests_number",
        "change_requests.space_id",
        "Another change request took the same number at the same moment; retry.",
    ),
];

/// The 409 message for a unique violation, naming what already exists.
fn unique_violation_message(db: &dyn sqlx::error::DatabaseError) -> String {
    let constraint = db.constraint().unwrap_or_default();
    let text = db.message();
    UNIQUE_VIOLATIONS
        .iter()
        .find(|(pg, sqlite, _)| constraint == *pg || text.contains(sqlite))
        .map(|(_, _, message)| (*message).to_string())
        .unwrap_or_else(|| "A resource with the same unique value already exists.".into())
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &err {
            if db.is_unique_violation() {
                return Self::Conflict(unique_violation_message(db.as_ref()));
            }
        }
        Self::Internal(err.into())
    }
}

/// The official error body for a status and message.
pub fn error_response(status: StatusCode, message: &str) -> Response {
    let body = json!({ "error": { "code": status.as_u16(), "message": message } });
    (status, axum::Json(body)).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let Self::Internal(cause) = &self {
            tracing::error!(error = ?cause, "internal error");
            return error_response(status, "Internal error; see the server log for details.");
        }
        let mut res = error_response(status, &self.to_string());
        if let Self::Busy(_, secs) = &self {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(*secs));
        }
        res
    }
}

/// Gives every error answer the official body, whichever layer produced it (405 from the
/// router, 413 from a body limit, a caught panic): a response of 400 or more that is not
/// JSON is replaced by `{"error": {...}}` with the same status.
pub fn normalize_error_body(res: Response) -> Response {
    let status = res.status();
    if status.as_u16() < 400 {
        return res;
    }
    // The published sites' HTML error pages are answers of their own, kept as they are.
    let is_json = res.headers().get(header::CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes().starts_with(b"application/json") || v.as_bytes().starts_with(b"text/html")
    });
    if is_json {
        return res;
    }
    let message = match status {
        StatusCode::METHOD_NOT_ALLOWED => "Method not allowed on this path.".to_string(),
        StatusCode::PAYLOAD_TOO_LARGE => "Request body is too large.".to_string(),
        StatusCode::INTERNAL_SERVER_ERROR => {
            "Internal error; see the server log for details.".to_string()
        }
        other => other.canonical_reason().unwrap_or("Error").to_string(),
    };
    let mut out = error_response(status, &message);
    // Keep headers such as `Allow` on 405.
    for (name, value) in res.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().insert(name.clone(), value.clone());
        }
    }
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out
}
