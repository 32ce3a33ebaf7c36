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

/// `name` without control characters or the invisible marks that reorder text (a name could
/// otherwise read as another: `photo<U+202E>gpj.exe` shows as `photoexe.jpg`), trimmed.
pub fn shown_name(name: &str) -> String {
    name.chars()
        .filter(|c| {
            !c.is_control()
                && !matches!(
                    c,
                    '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
                )
        })
        .collect::<String>()
        .trim()
        .to_string()
}

/// A file's name as given, made [`shown_name`]; refused when nothing is left or it is `.` or
/// `..`, which no download link can carry (a URL reads them as "this folder", "the one above").
pub fn file_name(field: &str, name: &str) -> ApiResult<String> {
    let shown = shown_name(name);
    if matches!(shown.as_str(), "" | "." | "..") {
        return Err(ApiError::bad_request(format!(
            "`{field}` must name a file: not empty, `.` or `..` (once control characters and \
             marks that reorder text are left out)."
        )));
    }
    Ok(shown)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_lose_what_hides_or_reorders_text_and_dots_alone_are_refused() {
        assert_eq!(shown_name("photo\u{202E}gpj.exe"), "photogpj.exe");
        assert_eq!(shown_name(" a\u{2066}b\u{2069}\r\n.png "), "ab.png");
        assert_eq!(file_name("f", "diagram.svg").unwrap(), "diagram.svg");
        for bad in ["", " ", ".", "..", "\u{202E}..", "\n"] {
            let e = file_name("changes[0].files[0].name", bad).unwrap_err();
            assert!(e.to_string().contains("changes[0].files[0].name"), "{e}");
        }
    }
}
