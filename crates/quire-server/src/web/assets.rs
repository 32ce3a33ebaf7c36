//! The one stylesheet and the one script of published sites, embedded in the binary and
//! served under names that carry their content hash, so browsers keep them for good.

use std::sync::LazyLock;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::Digest;

/// The URL path segment that holds the assets: `/sites/~assets/<name>`.
pub const FOLDER: &str = crate::hosts::ASSETS_FOLDER;

/// An embedded asset and its hashed file name.
pub struct Asset {
    /// `site.<hash>.css`.
    pub name: String,
    /// The bytes.
    pub body: String,
    /// Its content type.
    pub content_type: &'static str,
}

fn asset(stem: &str, ext: &str, body: String, content_type: &'static str) -> Asset {
    let hash = hex::encode(&sha2::Sha256::digest(body.as_bytes())[..8]);
    Asset {
        name: format!("{stem}.{hash}.{ext}"),
        body,
        content_type,
    }
}

/// The stylesheet: the site's own rules, then the code highlighting's.
pub static CSS: LazyLock<Asset> = LazyLock::new(|| {
    let body = format!(
        "{}\n{}",
        include_str!("site.css"),
        quire_content::html::highlight_css()
    );
    asset("site", "css", body, "text/css; charset=utf-8")
});

/// The script: enhancements only.
pub static JS: LazyLock<Asset> = LazyLock::new(|| {
    asset(
        "site",
        "js",
        include_str!("site.js").to_string(),
        "text/javascript; charset=utf-8",
    )
});

/// The asset named `name`, with a year of immutable caching; 404 for any other name (an
/// older hash included: its content is gone).
pub fn serve(name: &str) -> Response {
    let Some(a) = [&*CSS, &*JS].into_iter().find(|a| a.name == name) else {
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "Not found.",
        )
            .into_response();
    };
    let mut res = a.body.clone().into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(a.content_type),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}
