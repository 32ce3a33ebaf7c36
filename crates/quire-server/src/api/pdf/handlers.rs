//! `getSpacePDF`, `getChangeRequestPDF`, and the signed download of the PDF.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use axum::Extension;
use serde::{Deserialize, Serialize};

use crate::domain::access::{reader_still_reads, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::pdf;
use crate::error::{ApiError, ApiResult};
use crate::http::download::{sandboxed, Disposition};
use crate::http::extract::QueryParams;
use crate::http::json::Json;
use crate::state::AppState;

/// Query of the PDF operations.
#[derive(Deserialize)]
pub struct PdfQuery {
    only: Option<String>,
    page: Option<String>,
}

/// The answer: where the PDF is, for an hour.
#[derive(Serialize)]
pub struct PdfUrl {
    url: String,
}

/// `getSpacePDF`, `getChangeRequestPDF`: the PDF of the content, of one page and its
/// children (`page`), or of one page alone (`page` and `only=true`).
pub async fn get_pdf(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path(params): Path<HashMap<String, String>>,
    QueryParams(q): QueryParams<PdfQuery>,
) -> ApiResult<Json<PdfUrl>> {
    let only = match q.only.as_deref() {
        None | Some("") | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Invalid query parameter `only`: `{other}` is not a boolean."
            )))
        }
    };
    let page = q.page.as_deref().filter(|p| !p.is_empty());
    if only && page.is_none() {
        return Err(ApiError::bad_request(
            "Invalid query parameter `only`: it needs `page`, the page to print.",
        ));
    }
    let cr = params.get("changeRequestId").map(String::as_str);
    let url = pdf::of_content(&state, &ctx, &caller.user.id, cr, (page, only)).await?;
    Ok(Json(PdfUrl { url }))
}

/// Query of a PDF URL.
#[derive(Deserialize)]
pub struct DownloadQuery {
    reader: String,
    expires: i64,
    signature: String,
}

/// `GET /pdf/{spaceId}/{name}.pdf`: a stored PDF, when the URL's signature is valid and
/// unexpired and its reader may still read the space.
pub async fn download(
    State(state): State<AppState>,
    Path((space, file)): Path<(String, String)>,
    QueryParams(q): QueryParams<DownloadQuery>,
) -> ApiResult<Response> {
    let name = file.strip_suffix(".pdf").unwrap_or(&file);
    if !pdf::verify(&state, &space, name, &q.reader, q.expires, &q.signature) {
        return Err(ApiError::forbidden("Invalid PDF signature."));
    }
    if q.expires < state.now() {
        return Err(ApiError::forbidden(
            "This PDF URL has expired; ask for the PDF again for a new one.",
        ));
    }
    let gone = || ApiError::not_found("PDF not found.");
    if !reader_still_reads(&state, &q.reader, &space).await? {
        return Err(gone());
    }
    let bytes = state
        .blobs
        .get_derived(&space, name)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(gone)?;
    let mut res = sandboxed(
        bytes,
        HeaderValue::from_static("application/pdf"),
        Some((Disposition::Inline, "content.pdf")),
    );
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    Ok(res)
}
