//! Field checks shared by handlers; each error names the field.

use crate::error::{ApiError, ApiResult};

/// `value` must hold between `min` and `max` characters.
pub fn length(field: &str, value: &str, min: usize, max: usize) -> ApiResult<()> {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(ApiError::bad_request(if min == 0 {
            format!("`{field}` must be at most {max} characters long.")
        } else {
            format!("`{field}` must be {min} to {max} characters long.")
        }));
    }
    Ok(())
}

/// A plausible e-mail address: one `@`, something on both sides, no spaces.
pub fn email(field: &str, value: &str) -> ApiResult<()> {
    let ok = value.len() <= 254
        && !value.chars().any(char::is_whitespace)
        && value.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        });
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}` is not a valid e-mail address: `{value}`."
        )))
    }
}

/// A lower-case DNS name with at least two labels.
pub fn domain(field: &str, value: &str) -> ApiResult<()> {
    let ok = value.len() <= 253
        && value.contains('.')
        && value.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        });
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}` is not a valid lower-case domain: `{value}`."
        )))
    }
}

/// An absolute http(s) URL of at most 2048 characters.
pub fn url(field: &str, value: &str) -> ApiResult<()> {
    let ok = value.len() <= 2048
        && (value.starts_with("https://") || value.starts_with("http://"))
        && value
            .split_once("://")
            .is_some_and(|(_, rest)| !rest.is_empty() && !rest.starts_with('/'))
        && !value.chars().any(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}` must be an absolute http(s) URL of at most 2048 characters."
        )))
    }
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
