//! PDF export: a revision (or one page of it) laid out by `quire_pdf` on a blocking thread,
//! a few renderings at a time per node (`max_pdf_exports`; others wait `busy_wait_ms`, then
//! get 503), with caps on pages, blocks (the layout's memory), images and time. Each PDF is kept
//! in the blob store's derived folder under a name that depends on everything it shows, so
//! it is made once per revision and options; it is served through signed, expiring URLs.

use std::time::Duration;

use sha2::Digest;

use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::keys::{b64, unb64};
use crate::state::AppState;

/// Bumped when the rendering changes, so that PDFs made by an older build are not served.
const PDF_FORMAT: u32 = 2;
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
    // The turn covers the book and the images' bytes too: they are held until the end.
    let turn = crate::domain::heavy::take(state, &state.pdf_runs, "PDF exports").await?;
    let footer = format!("Printed by Quire from {}", state.public_url);
    let (title, subtitle, page, only) = (
        req.title.to_string(),
        req.subtitle.map(str::to_string),
        req.page.map(str::to_string),
        req.only,
    );
    let max_blocks = state.config.pdf_max_blocks;
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
                max_blocks,
            },
        )
    })
    .await
    .map_err(ApiError::internal)?;
    if book.blocks > book.max_blocks {
        return Err(too_large(&quire_pdf::PdfError::TooLarge(
            book.blocks,
            book.max_blocks,
        )));
    }
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
    // beside it. What it makes is stored even then, so that asking again later finds it.
    let st = state.clone();
    let limits = quire_pdf::Limits {
        max_image_bytes: MAX_IMAGE_BYTES,
        max_image_pixels: state.config.pdf_max_image_pixels,
        max_total_pixels: state.config.pdf_max_pixels,
        max_output_pages: 20_000,
    };
    let task = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let fonts = st
            .pdf_fonts
            .get_or_init(|| quire_pdf::Fonts::new(extra_fonts(&st)));
        quire_pdf::render(&book, &images, fonts, &limits)
    });
    let (st, space, stored) = (state.clone(), req.space_id.to_string(), name.clone());
    let made = tokio::spawn(async move {
        let pdf = match task.await.map_err(ApiError::internal)? {
            Ok(pdf) => pdf,
            Err(err @ (quire_pdf::PdfError::TooLong(..) | quire_pdf::PdfError::TooLarge(..))) => {
                return Err(too_large(&err))
            }
            Err(err) => return Err(ApiError::internal(anyhow::anyhow!(err.to_string()))),
        };
        st.blobs
            .put_derived(&space, &stored, bytes::Bytes::from(pdf))
            .await
            .map_err(ApiError::internal)
    });
    match tokio::time::timeout(MAX_RENDER_TIME, made).await {
        Err(_) => Err(ApiError::Busy(
            format!(
                "Printing this content takes longer than {} s; it goes on, ask again in a minute.",
                MAX_RENDER_TIME.as_secs()
            ),
            60,
        )),
        Ok(joined) => joined.map_err(ApiError::internal)?.map(|()| name),
    }
}

/// The 413 of content too large to print in one PDF.
fn too_large(err: &quire_pdf::PdfError) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "This content is too large to print: {err}; print a part of it with `page` (and `only`)."
    ))
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

/// The signed URL of the PDF of a space's current content, or of change request `cr`'s;
/// of one page and its children (`page`), or of the page alone (`only`); made for `reader`.
pub async fn of_content(
    state: &AppState,
    ctx: &crate::domain::access::SpaceCtx,
    reader: &str,
    cr: Option<&str>,
    (page, only): (Option<&str>, bool),
) -> ApiResult<String> {
    let (revision, subtitle) = match cr {
        Some(cr) => {
            let cr = crate::domain::change_requests::load(state, ctx, cr).await?;
            let subtitle = if cr.subject.is_empty() {
                format!("Change request #{}", cr.number)
            } else {
                format!("Change request #{}: {}", cr.number, cr.subject)
            };
            (cr.revision_id, Some(subtitle))
        }
        None => (ctx.space.revision_id.clone(), None),
    };
    let row = crate::domain::content::revision_row(state, &ctx.space.id, &revision)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Revision `{revision}` not found.")))?;
    let title = if ctx.space.title.is_empty() {
        "Untitled space"
    } else {
        ctx.space.title.as_str()
    };
    let name = ensure(
        state,
        &PdfRequest {
            space_id: &ctx.space.id,
            root: &row.root,
            title,
            subtitle: subtitle.as_deref(),
            page,
            only,
        },
    )
    .await?;
    Ok(url(state, &ctx.space.id, &name, reader))
}
