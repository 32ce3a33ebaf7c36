//! Stored bytes served back to a browser (uploaded files, PDFs, OpenAPI documents): one place
//! that makes sure none of them can run as a page of Quire's origin; and the headers of the
//! HTML pages Quire renders itself.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// How a browser is told to show a download.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Shown in the browser (images, PDFs).
    Inline,
    /// Saved as a file.
    Attachment,
}

/// A 200 of `bytes` as `content_type`, sent so that a browser cannot run it: the type is
/// never sniffed (`nosniff`), and a Content-Security-Policy allows nothing and sandboxes it,
/// so even HTML or SVG has no script and no origin. With a file name, a
/// `Content-Disposition` names it, without quotes, backslashes or control characters.
pub fn sandboxed(
    bytes: impl Into<Body>,
    content_type: HeaderValue,
    file: Option<(Disposition, &str)>,
) -> Response {
    let mut res = (StatusCode::OK, bytes.into()).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, inert(content_type));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    if let Some((disposition, name)) = file {
        let safe: String = crate::validate::shown_name(name)
            .chars()
            .filter(|c| *c != '"' && *c != '\\')
            .collect();
        let kind = match disposition {
            Disposition::Inline => "inline",
            Disposition::Attachment => "attachment",
        };
        if let Ok(v) = HeaderValue::from_str(&format!("{kind}; filename=\"{safe}\"")) {
            h.insert(header::CONTENT_DISPOSITION, v);
        }
    }
    res
}

/// `content_type`, unless a page could load bytes of that type as a script, a style sheet,
/// a WebAssembly module or an XSL transform: those are sent as `application/octet-stream`,
/// which `nosniff` makes a browser refuse for all of them. A download's disposition and
/// the sandbox bind only when the bytes are opened as a page; a `<script src>` ignores both.
fn inert(content_type: HeaderValue) -> HeaderValue {
    let essence = content_type
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let runnable = ["javascript", "ecmascript", "jscript", "livescript", "xsl"]
        .iter()
        .any(|word| essence.contains(word))
        || matches!(essence.as_str(), "text/css" | "application/wasm");
    if runnable {
        HeaderValue::from_static("application/octet-stream")
    } else {
        content_type
    }
}

/// Content types a browser may show inline: raster images, which cannot run script.
const INLINE_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/avif",
    "image/bmp",
];

/// An uploaded file's bytes under its declared type (`application/octet-stream` when that is
/// not a header value), sandboxed: raster images inline, everything else an attachment.
pub fn uploaded_file(bytes: impl Into<Body>, content_type: &str, name: &str) -> Response {
    let disposition = if INLINE_TYPES.contains(&content_type) {
        Disposition::Inline
    } else {
        Disposition::Attachment
    };
    let declared = HeaderValue::from_str(content_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    sandboxed(bytes, declared, Some((disposition, name)))
}

/// The headers of an HTML page Quire renders itself (published sites, the account page, the
/// app): its type, the page's Content-Security-Policy, `nosniff` and its referrer policy.
pub fn page_headers(res: &mut axum::response::Response, csp: &'static str, referrer: &'static str) {
    use axum::http::{header, HeaderValue};
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static(referrer));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_cannot_run_and_its_name_cannot_break_out() {
        let res = sandboxed(
            "<script>alert(1)</script>",
            HeaderValue::from_static("text/html"),
            Some((Disposition::Attachment, "a\"b\\c\r\nd.html")),
        );
        let h = res.headers();
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(
            h[header::CONTENT_SECURITY_POLICY],
            "default-src 'none'; sandbox"
        );
        assert_eq!(
            h[header::CONTENT_DISPOSITION],
            "attachment; filename=\"abcd.html\""
        );
        let inline = sandboxed(
            Vec::new(),
            HeaderValue::from_static("application/pdf"),
            None,
        );
        assert!(inline.headers().get(header::CONTENT_DISPOSITION).is_none());
        assert_eq!(inline.headers()[header::CONTENT_TYPE], "application/pdf");
    }

    #[test]
    fn what_a_page_could_load_to_run_or_style_goes_out_as_bytes() {
        let served = |content_type: &'static str| {
            sandboxed(Vec::new(), HeaderValue::from_static(content_type), None).headers()
                [header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .to_string()
        };
        for runnable in [
            "text/javascript",
            "Application/JavaScript; charset=utf-8",
            "application/x-javascript",
            "text/ecmascript",
            "text/jscript",
            "text/css",
            "application/wasm",
            "text/xsl",
            "application/xslt+xml",
        ] {
            assert_eq!(served(runnable), "application/octet-stream", "{runnable}");
        }
        for kept in [
            "text/plain",
            "image/png",
            "application/pdf",
            "font/woff2",
            "text/html",
        ] {
            assert_eq!(served(kept), kept);
        }
    }

    #[test]
    fn only_raster_images_show_inline() {
        let shown = |content_type: &str| {
            let res = uploaded_file(Vec::new(), content_type, "f");
            let h = res.headers();
            (
                h[header::CONTENT_TYPE].to_str().unwrap().to_string(),
                h[header::CONTENT_DISPOSITION].to_str().unwrap().to_string(),
            )
        };
        assert_eq!(
            shown("image/png"),
            ("image/png".into(), "inline; filename=\"f\"".into())
        );
        assert_eq!(
            shown("image/svg+xml"),
            ("image/svg+xml".into(), "attachment; filename=\"f\"".into())
        );
        assert_eq!(
            shown("text/html\n"),
            (
                "application/octet-stream".into(),
                "attachment; filename=\"f\"".into()
            )
        );
    }
}
