//! The cookies Quire reads and sets, through one reader and one writer: every cookie it sets
//! is `HttpOnly` and `SameSite=Lax`, and `Secure` when the public URL is https.

use axum::http::{header, HeaderMap, HeaderValue};

/// The cookie of a signed-in browser session (password or single sign-on alike).
pub const SESSION: &str = "quire_app";

/// The value of the cookie `name`, when the request carries a non-empty one of at most
/// `max_len` bytes.
pub fn read(headers: &HeaderMap, name: &str, max_len: usize) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(name)?.strip_prefix('='))
        .find(|v| !v.is_empty() && v.len() <= max_len)
        .map(str::to_string)
}

/// Appends a `Set-Cookie` for `name` on `path`: `Some(value)` kept `max_age` seconds (for
/// the browser's session when `None`), or, with `None`, the cookie removed.
pub fn set(
    headers: &mut HeaderMap,
    public_url: &str,
    name: &str,
    path: &str,
    value: Option<&str>,
    max_age: Option<i64>,
) {
    let secure = if public_url.starts_with("https:") {
        "; Secure"
    } else {
        ""
    };
    let (value, max_age) = match value {
        Some(v) => (
            v,
            max_age.map_or(String::new(), |s| format!("; Max-Age={s}")),
        ),
        None => ("", "; Max-Age=0".to_string()),
    };
    let cookie = format!("{name}={value}; Path={path}{max_age}; HttpOnly; SameSite=Lax{secure}");
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        headers.append(header::SET_COOKIE, v);
    }
}
