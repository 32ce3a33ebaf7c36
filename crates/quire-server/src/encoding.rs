//! Compressed answers. A `GET` answer of text (JSON, HTML, markdown, XML, CSS, scripts) of
//! at least [`MIN_BYTES`] is sent gzip-compressed to a client that accepts gzip, as the
//! official client does (Node's `fetch` asks for `gzip, deflate`) and every browser does.
//! A revision with its pages' markdown shrinks to a third, a listing to a twelfth.
//!
//! Only `GET` answers: a write's answer may carry a secret minted for it next to what the
//! request sent (a token, a signed URL), the pairing that compression lets an observer of
//! sizes guess at; reads are where the bytes are anyway. Every answer that could be
//! compressed names `Accept-Encoding` in `Vary`, so a shared cache keeps the two apart, and
//! a compressed answer's `ETag` is weak (the same entity, other bytes).

use std::hash::BuildHasher;
use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

/// Smaller answers are sent as they are: gzip's framing and a round of decoding cost more
/// than the bytes they save.
pub const MIN_BYTES: u64 = 1024;

/// Larger answers are sent as they are (none of Quire's is near it; it bounds the work).
pub const MAX_BYTES: u64 = 64 << 20;

/// Answers larger than this are compressed off the async workers (a 700 KB revision takes
/// about 8 ms).
pub const INLINE_BYTES: usize = 256 << 10;

/// How hard to compress.
#[derive(Clone, Copy, Debug)]
pub enum Effort {
    /// For an answer made once and sent many times (a published page).
    Kept,
    /// For an answer sent once.
    Once,
}

/// Whether a request's `Accept-Encoding` accepts gzip: named (or as `x-gzip`) with a
/// non-zero weight, or not named while `*` is.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut gzip = None;
    let mut any = None;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(text) = value.to_str() else { continue };
        for item in text.split(',') {
            let mut params = item.split(';');
            let name = params.next().unwrap_or("").trim();
            let weight = params
                .filter_map(|p| {
                    let (key, value) = p.split_once('=')?;
                    key.trim()
                        .eq_ignore_ascii_case("q")
                        .then(|| value.trim().parse::<f32>().unwrap_or(0.0))
                })
                .next_back()
                .unwrap_or(1.0);
            if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
                gzip = Some(weight > 0.0);
            } else if name == "*" {
                any = Some(weight > 0.0);
            }
        }
    }
    gzip.or(any).unwrap_or(false)
}

/// Whether an answer with these headers and a body of `len` bytes is sent compressed to a
/// client that accepts it: text, not encoded already, of a size worth it.
pub fn worth(headers: &HeaderMap, len: u64) -> bool {
    (MIN_BYTES..=MAX_BYTES).contains(&len)
        && !headers.contains_key(header::CONTENT_ENCODING)
        && !headers.contains_key(header::CONTENT_RANGE)
        && headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_text)
}

/// Whether a content type is text that compresses.
fn is_text(content_type: &str) -> bool {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    media.starts_with("text/")
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || matches!(
            media.as_str(),
            "application/json"
                | "application/javascript"
                | "application/xml"
                | "application/yaml"
                | "application/x-yaml"
        )
}

/// Names `Accept-Encoding` in `Vary` (an answer that is sent compressed to some clients).
pub fn vary(headers: &mut HeaderMap) {
    let named = headers
        .get_all(header::VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case("accept-encoding") || v.trim() == "*");
    if !named {
        headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
}

/// `body` gzip-compressed, or `None` when that does not make it smaller.
pub fn gzip(body: &[u8], effort: Effort) -> Option<Bytes> {
    use std::io::Write;
    // Level 1 of zlib-rs (flate2's backend here) leaves a revision half again as large
    // as level 3 does, for two thirds of the time; past 3, little is gained.
    let level = match effort {
        Effort::Kept => flate2::Compression::default(),
        Effort::Once => flate2::Compression::new(3),
    };
    let mut out = flate2::write::GzEncoder::new(Vec::with_capacity(body.len() / 3), level);
    // Writing to memory cannot fail.
    out.write_all(body).ok()?;
    let packed = out.finish().ok()?;
    (packed.len() < body.len()).then(|| Bytes::from(packed))
}

/// The headers of the compressed answer, from those of the plain one (which name
/// `Accept-Encoding` in `Vary` already).
pub fn gzipped_headers(plain: &HeaderMap) -> HeaderMap {
    let mut headers = plain.clone();
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    // The length is the body's, which the server sets.
    headers.remove(header::CONTENT_LENGTH);
    if let Some(tag) = headers.get(header::ETAG) {
        if !tag.as_bytes().starts_with(b"W/") {
            let mut weak = b"W/".to_vec();
            weak.extend_from_slice(tag.as_bytes());
            if let Ok(weak) = HeaderValue::from_bytes(&weak) {
                headers.insert(header::ETAG, weak);
            }
        }
    }
    headers
}

/// Whether an `If-None-Match` value names `etag`, by the weak comparison the header calls
/// for (a compressed answer's tag is the weak form of the plain one's).
pub fn none_match(if_none_match: &str, etag: &str) -> bool {
    fn bare(tag: &str) -> &str {
        let tag = tag.trim();
        tag.strip_prefix("W/").unwrap_or(tag)
    }
    let etag = bare(etag);
    if_none_match
        .split(',')
        .any(|t| t.trim() == "*" || bare(t) == etag)
}

/// Bytes of answers (plain and compressed) held by [`Recent`].
const RECENT_BYTES: u64 = 32 << 20;

/// The compressed forms of answers sent lately, found by their bytes: an answer sent again
/// alike (a page, a listing, a search) is compressed once, not for every client. Hashing
/// and comparing the bytes costs a small fraction of compressing them (page reads ran at a
/// third of the rate when each was compressed; a search answer of 200 KB took 2 ms, ten
/// times its cost to make from the caches), and what is found by its bytes cannot be stale.
pub struct Recent {
    /// By a hash of the plain bytes, with those bytes (compared on use: a hash that is
    /// the same for other bytes finds nothing) and their compressed form.
    packed: moka::sync::Cache<u64, Arc<(Bytes, Bytes)>, foldhash::fast::RandomState>,
    /// The hash's seed, random per process.
    seed: foldhash::fast::RandomState,
}

impl Default for Recent {
    fn default() -> Self {
        Self {
            packed: moka::sync::Cache::builder()
                .max_capacity(RECENT_BYTES)
                .weigher(|_, pair: &Arc<(Bytes, Bytes)>| {
                    u32::try_from(pair.0.len() + pair.1.len()).unwrap_or(u32::MAX)
                })
                .build_with_hasher(Default::default()),
            seed: Default::default(),
        }
    }
}

impl std::fmt::Debug for Recent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recent").finish_non_exhaustive()
    }
}

impl Recent {
    /// `plain` compressed for an answer sent once (`None`: it does not shrink), from the
    /// answers compressed lately when it is one of them.
    async fn gzip(&self, plain: &Bytes) -> Option<Bytes> {
        let hash = self.seed.hash_one(&plain[..]);
        if let Some(pair) = self.packed.get(&hash) {
            if pair.0 == *plain {
                return Some(pair.1.clone());
            }
        }
        let packed = gzip_off_workers(plain.clone(), Effort::Once).await?;
        self.packed
            .insert(hash, Arc::new((plain.clone(), packed.clone())));
        Some(packed)
    }
}

/// `res`, the answer to a `GET`, as it is sent to a client that accepts gzip (`gzip`) or
/// not: compressed when [`worth`] it (from `recent` when it was lately), and naming
/// `Accept-Encoding` in `Vary` whenever it could have been.
pub async fn negotiate(res: Response, gzip: bool, recent: &Recent) -> Response {
    let Some(len) = res.body().size_hint().exact() else {
        return res;
    };
    if !worth(res.headers(), len) {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    vary(&mut parts.headers);
    if !gzip {
        return Response::from_parts(parts, body);
    }
    let plain = match whole(body, "compress").await {
        Ok(plain) => plain,
        Err(failed) => return failed,
    };
    match recent.gzip(&plain).await {
        Some(packed) => {
            parts.headers = gzipped_headers(&parts.headers);
            Response::from_parts(parts, Body::from(packed))
        }
        None => Response::from_parts(parts, Body::from(plain)),
    }
}

/// Tags a `200` answer of the API with an `ETag` made from its bytes (and asks clients to
/// revalidate, `Cache-Control: private, no-cache`), unless it has one: a client or proxy
/// that kept it then gets `304 Not Modified` for an unchanged answer ([`not_modified`]).
/// Bodies of unknown or outsized length are left untagged.
pub async fn tag(res: Response) -> Response {
    if res.status() != StatusCode::OK || res.headers().contains_key(header::ETAG) {
        return res;
    }
    match res.body().size_hint().exact() {
        Some(len) if len <= MAX_BYTES => {}
        _ => return res,
    }
    let (mut parts, body) = res.into_parts();
    let bytes = match whole(body, "tag").await {
        Ok(bytes) => bytes,
        Err(failed) => return failed,
    };
    // A fixed seed: every node of a deployment tags the same bytes alike.
    let hash = foldhash::fast::FixedState::with_seed(0x7175_6972_6520_7631).hash_one(&bytes[..]);
    if let Ok(tag) = HeaderValue::from_str(&format!("\"{hash:016x}\"")) {
        parts.headers.insert(header::ETAG, tag);
        parts
            .headers
            .entry(header::CACHE_CONTROL)
            .or_insert(HeaderValue::from_static("private, no-cache"));
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// A `304 Not Modified` for `res` when it is a `200` whose `ETag` the request's
/// `If-None-Match` names (with its `ETag`, `Vary` and `Cache-Control`), else `res`.
pub fn not_modified(res: Response, if_none_match: Option<&HeaderValue>) -> Response {
    let Some(asked) = if_none_match.and_then(|v| v.to_str().ok()) else {
        return res;
    };
    let matches = res.status() == StatusCode::OK
        && res
            .headers()
            .get(header::ETAG)
            .and_then(|t| t.to_str().ok())
            .is_some_and(|tag| none_match(asked, tag));
    if !matches {
        return res;
    }
    let mut unchanged = StatusCode::NOT_MODIFIED.into_response();
    for name in [header::ETAG, header::VARY, header::CACHE_CONTROL] {
        if let Some(value) = res.headers().get(&name) {
            unchanged.headers_mut().insert(name, value.clone());
        }
    }
    *unchanged.extensions_mut() = res.into_parts().0.extensions;
    unchanged
}

/// The bytes of an answer's body of known size, which is whole already (collecting it does
/// not wait), to `purpose` it; the official 500 if reading it fails all the same.
pub async fn whole(body: Body, purpose: &str) -> Result<Bytes, Response> {
    match http_body_util::BodyExt::collect(body).await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) => {
            tracing::error!(error = %err, "reading an answer to {purpose} it failed");
            Err(crate::error::error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal error; see the server log for details.",
            ))
        }
    }
}

/// [`gzip`], off the async workers for a body past [`INLINE_BYTES`].
pub async fn gzip_off_workers(body: Bytes, effort: Effort) -> Option<Bytes> {
    if body.len() <= INLINE_BYTES {
        return gzip(&body, effort);
    }
    tokio::task::spawn_blocking(move || gzip(&body, effort))
        .await
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn gzip_is_accepted_as_the_header_weighs_it() {
        for yes in [
            "gzip",
            "gzip, deflate",
            "br;q=1.0, gzip;q=0.5",
            "x-gzip",
            "*",
            "identity, *;q=0.1",
            "GZIP",
        ] {
            assert!(accepts_gzip(&asking(yes)), "{yes}");
        }
        for no in [
            "identity",
            "gzip;q=0",
            "gzip; q=0.000",
            "br",
            "*;q=0",
            "gzip;q=0, *",
            "",
        ] {
            assert!(!accepts_gzip(&asking(no)), "{no}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn only_text_of_a_worthwhile_size_is_compressed() {
        let typed = |t: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_str(t).unwrap());
            h
        };
        assert!(worth(&typed("application/json"), 2048));
        assert!(worth(&typed("text/html; charset=utf-8"), 2048));
        assert!(worth(&typed("image/svg+xml"), 2048));
        assert!(!worth(&typed("application/json"), MIN_BYTES - 1));
        assert!(!worth(&typed("application/pdf"), 2048));
        assert!(!worth(&typed("image/png"), 2048));
        assert!(!worth(&HeaderMap::new(), 2048));
        let mut encoded = typed("application/json");
        encoded.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        assert!(!worth(&encoded, 2048));
    }

    #[tokio::test]
    async fn an_answer_sent_again_alike_is_compressed_once() {
        let recent = Recent::default();
        // A page's answer (1.5 KB) as well as a search's (52 KB).
        let page = Bytes::from(r#"{"markdown":"A line."},"#.repeat(64));
        let first = recent.gzip(&page).await.unwrap();
        let again = recent.gzip(&page.clone()).await.unwrap();
        assert_eq!(first.as_ptr(), again.as_ptr(), "not compressed again");
        let plain = Bytes::from(r#"{"items":["a search hit"],"#.repeat(2000));
        let first = recent.gzip(&plain).await.unwrap();
        let again = recent.gzip(&plain.clone()).await.unwrap();
        assert_eq!(first.as_ptr(), again.as_ptr(), "not compressed again");
        // Other bytes under the same hash find nothing.
        let other = Bytes::from(r#"{"items":["another hit"],"#.repeat(2000));
        let hash = recent.seed.hash_one(&other[..]);
        recent
            .packed
            .insert(hash, Arc::new((plain.clone(), first.clone())));
        let packed = recent.gzip(&other).await.unwrap();
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&packed[..]), &mut back)
            .unwrap();
        assert_eq!(back, other);
    }

    #[test]
    fn a_compressed_answer_decodes_to_the_plain_one_and_its_tag_is_weak() {
        use std::io::Read;
        let body = br#"{"pages":["#.repeat(500);
        let packed = gzip(&body, Effort::Kept).unwrap();
        assert!(packed.len() < body.len() / 10);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&packed[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, body);
        // Bytes that do not shrink are sent as they are.
        assert!(gzip(&[7u8], Effort::Once).is_none());

        let mut plain = HeaderMap::new();
        plain.insert(header::ETAG, HeaderValue::from_static("\"v1\""));
        plain.insert(header::CONTENT_LENGTH, HeaderValue::from(10u32));
        vary(&mut plain);
        vary(&mut plain);
        let packed = gzipped_headers(&plain);
        assert_eq!(packed[header::ETAG], "W/\"v1\"");
        assert_eq!(packed[header::CONTENT_ENCODING], "gzip");
        assert!(!packed.contains_key(header::CONTENT_LENGTH));
        assert_eq!(packed.get_all(header::VARY).iter().count(), 1);
        assert!(none_match("W/\"v1\"", "\"v1\""));
        assert!(none_match("\"v0\", \"v1\"", "\"v1\""));
        assert!(none_match("*", "\"v1\""));
        assert!(!none_match("\"v2\"", "\"v1\""));
    }
}
