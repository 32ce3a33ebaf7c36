//! PDF export: a revision (or one page of it) typeset by `quire_pdf` on a blocking thread,
//! one rendering at a time per node, with caps on pages, images and time. Each PDF is kept
//! in the blob store's derived folder under a name that depends on everything it shows, so
//! it is made once per revision and options; it is served through signed, expiring URLs.

use std::time::Duration;

use sha2::Digest;

use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::keys::{b64, unb64};
use crate::state::AppState;

/// Bumped when the rendering changes, so that PDFs made by an older build are not served.
const PDF_FORMAT: u32 = 1;
/// Most pages of a space put in one PDF; later ones are left out (and said so).
pub const MAX_PAGES: usize = 2_000;
/// Most images embedded in one PDF.
const MAX_IMAGES: usize = 500;
/// Most bytes of images embedded in one PDF.
const MAX_IMAGE_BYTES: usize = 64 * 1024 * 1024;
/// Longest a rendering may take before the request gives up on it.
const MAX_RENDER_TIME: Duration = Duration::from_secs(120);
/// How long a PDF URL stays valid (the official client says one hour).
pub const URL_TTL_MS: i64 = 60 * 60 * 1000;

/// What to print.
pub struct PdfRequest<'a> {
    /// The space.
    pub space_id: &'a str,
    /// Root of the revision.
    pub root: &'a str,
    /// Title page heading.
    pub title: &'a str,
    /// Title page second line.
    pub subtitle: Option<&'a str>,
    /// One page (with its children unless `only`).
    pub page: Option<&'a str>,
    /// Only the page itself.
    pub only: bool,
}

/// The stored name of a PDF: it changes with anything the PDF shows.
pub fn name(req: &PdfRequest<'_>) -> String {
    let id = serde_json::json!([
        PDF_FORMAT,
        env!("CARGO_PKG_VERSION"),
        req.space_id,
        req.root,
        req.title,
        req.subtitle,
        req.page,
        req.only
    ]);
    format!(
        "pdf-{}",
        hex::encode(sha2::Sha256::digest(id.to_string().as_bytes()))
    )
}

/// Makes the PDF of `req` unless it is stored already; returns its stored name. A stored
/// PDF old enough to be pruned before a URL given now expires is made again (see
/// `content::prune_derived`), so that no URL handed out outlives its PDF.
pub async fn ensure(state: &AppState, req: &PdfRequest<'_>) -> ApiResult<String> {
    let name = name(req);
    let written = state
        .blobs
        .derived_written(req.space_id, &name)
        .await
        .map_err(ApiError::internal)?;
    let fresh_after = state.now() - (content::DERIVED_GRACE_MS - 2 * URL_TTL_MS);
    if written.is_some_and(|at| at >= fresh_after) {
        return Ok(name);
    }
    let rev = content::load_in(state, req.space_id, req.root).await?;
    if let Some(page) = req.page {
        if rev.page(page).is_none() {
            return Err(ApiError::bad_request(format!(
                "Invalid query parameter `page`: page `{page}` is not in this content."
            )));
        }
    }
    let footer = format!("Printed by Quire from {}", state.public_url);
    let (title, subtitle, page, only) = (
        req.title.to_string(),
        req.subtitle.map(str::to_string),
        req.page.map(str::to_string),
        req.only,
    );
    let rev2 = rev.clone();
    let book = tokio::task::spawn_blocking(move || {
        quire_pdf::build(
            &rev2,
            &quire_pdf::Selection {
                title: &title,
                subtitle: subtitle.as_deref(),
                footer: Some(&footer),
                page: page.as_deref(),
                only,
                max_pages: MAX_PAGES,
            },
        )
    })
    .await
    .map_err(ApiError::internal)?;
    // The images' bytes, within the caps (what is left out shows its alt text).
    let mut images = Vec::new();
    let mut bytes = 0usize;
    for (key, file_id) in book.images.iter().take(MAX_IMAGES) {
        let Some(file) = rev.file(file_id) else {
            continue;
        };
        if bytes + file.size as usize > MAX_IMAGE_BYTES {
            continue;
        }
        if let Some(data) = state
            .blobs
            .get(&file.blob)
            .await
            .map_err(ApiError::internal)?
        {
            bytes += data.len();
            images.push((key.clone(), data.to_vec()));
        }
    }
    // The turn is held by the typesetting thread itself: a request that gives up at the time
    // bound leaves it running, and the next rendering must wait for it rather than start
    // beside it.
    let turn = state
        .pdf_runs
        .clone()
        .acquire_owned()
        .await
        .map_err(ApiError::internal)?;
    let st = state.clone();
    let task = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let fonts = st
            .pdf_fonts
            .get_or_init(|| quire_pdf::Fonts::new(extra_fonts(&st)));
        quire_pdf::render(
            &book,
            &images,
            fonts,
            &quire_pdf::Limits {
                max_image_bytes: MAX_IMAGE_BYTES,
                max_output_pages: 20_000,
            },
        )
    });
    let pdf = match tokio::time::timeout(MAX_RENDER_TIME, task).await {
        Err(_) => {
            return Err(ApiError::PayloadTooLarge(format!(
            "This content takes longer than {} s to print; print one page with `only` and `page`.",
            MAX_RENDER_TIME.as_secs()
        )))
        }
        Ok(joined) => joined.map_err(ApiError::internal)?,
    };
    let pdf = match pdf {
        Ok(pdf) => pdf,
        Err(quire_pdf::PdfError::TooLong(n, max)) => {
            return Err(ApiError::PayloadTooLarge(format!(
                "The PDF would have {n} pages, more than the {max} allowed; print one page with `only` and `page`."
            )))
        }
        Err(err) => return Err(ApiError::internal(anyhow::anyhow!(err.to_string()))),
    };
    state
        .blobs
        .put_derived(req.space_id, &name, bytes::Bytes::from(pdf))
        .await
        .map_err(ApiError::internal)?;
    Ok(name)
}

/// The font files of the operator's `--pdf-font-dir` (what cannot be read is skipped).
fn extra_fonts(state: &AppState) -> Vec<Vec<u8>> {
    let Some(dir) = &state.config.pdf_font_dir else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        tracing::warn!(dir = %dir.display(), "PDF font folder unreadable");
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                matches!(
                    e.to_ascii_lowercase().as_str(),
                    "ttf" | "otf" | "ttc" | "otc"
                )
            })
        })
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

fn signed_text(space_id: &str, name: &str, reader: &str, expires: i64) -> String {
    [space_id, name, reader, &expires.to_string()].join("\n")
}

/// An absolute, signed, expiring URL serving a stored PDF to `reader` (no bearer token).
pub fn url(state: &AppState, space_id: &str, name: &str, reader: &str) -> String {
    let expires = state.now() + URL_TTL_MS;
    let sig = b64(&state.keys.sign(
        "pdf",
        signed_text(space_id, name, reader, expires).as_bytes(),
    )[..16]);
    let enc = |t: &str| ::url::form_urlencoded::byte_serialize(t.as_bytes()).collect::<String>();
    state.url(&format!(
        "/pdf/{}/{}.pdf?reader={}&expires={expires}&signature={sig}",
        enc(space_id),
        enc(name),
        enc(reader),
    ))
}

/// Whether a PDF URL's signature is the one [`url`] made (expiry not checked).
pub fn verify(
    state: &AppState,
    space_id: &str,
    name: &str,
    reader: &str,
    expires: i64,
    signature: &str,
) -> bool {
    unb64(signature).is_some_and(|sig| {
        state.keys.verify(
            "pdf",
            signed_text(space_id, name, reader, expires).as_bytes(),
            &sig,
        )
    })
}
