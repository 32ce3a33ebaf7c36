//! `generateStorageUploadURL`, `listCustomFonts`, `createCustomFont`, `getCustomFont`,
//! `updateCustomFont`, `deleteCustomFont`; and the upload URL's `PUT` and the uploaded
//! bytes' `GET` (outside `/v1`).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;

use super::types::*;
use crate::domain::access::OrgCtx;
use crate::domain::auth::Caller;
use crate::domain::fonts::{self, Font};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::json::Json;
use crate::state::AppState;

fn definition(state: &AppState, org: &OrgCtx, font: Font) -> FontDefinition {
    FontDefinition {
        id: font.id,
        custom: true,
        font_family: font.family,
        font_faces: font
            .faces
            .into_iter()
            .map(|f| FontFace {
                weight: f.weight,
                sources: vec![FontSource {
                    url: fonts::file_url(state, &f.key),
                    format: f.format,
                }],
            })
            .collect(),
        permissions: FontPermissions {
            edit: org.is_admin(),
        },
    }
}

/// `generateStorageUploadURL`: a signed URL taking the file's bytes by `PUT` for 15 minutes.
pub async fn generate_upload_url(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    JsonBody(body): JsonBody<UploadRequest>,
) -> ApiResult<(StatusCode, Json<UploadUrl>)> {
    let (key, url) = fonts::upload_url(
        &state,
        org.org.id.as_str(),
        caller.user.id.as_str(),
        &body.file.name,
        &body.file.content_type,
        body.file.size,
        &body.kind,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(UploadUrl {
            object: "storage-signed-url",
            url,
            key,
        }),
    ))
}

/// `listCustomFonts`: oldest first.
pub async fn list_fonts(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
) -> ApiResult<Json<FontList>> {
    let items = fonts::list(&state, org.org.id.as_str())
        .await?
        .into_iter()
        .map(|f| definition(&state, &org, f))
        .collect();
    Ok(Json(FontList { items }))
}

/// `createCustomFont`: 201 with the new font.
pub async fn create_font(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    JsonBody(body): JsonBody<CreateFont>,
) -> ApiResult<(StatusCode, Json<FontDefinition>)> {
    let faces: Vec<(i64, String)> = body
        .font_faces
        .into_iter()
        .map(|f| (f.weight, f.storage_key))
        .collect();
    let font = fonts::create(&state, org.org.id.as_str(), &body.font_family, &faces).await?;
    Ok((StatusCode::CREATED, Json(definition(&state, &org, font))))
}

/// `getCustomFont`.
pub async fn get_font(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<FontDefinition>> {
    let font = fonts::get(&state, org.org.id.as_str(), &id).await?;
    Ok(Json(definition(&state, &org, font)))
}

/// `updateCustomFont`: 201 with the font as it now is.
pub async fn update_font(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
    JsonBody(body): JsonBody<UpdateFont>,
) -> ApiResult<(StatusCode, Json<FontDefinition>)> {
    let changes: Vec<(i64, Option<String>)> = body
        .font_faces
        .into_iter()
        .map(|f| (f.weight, f.storage_key.flatten()))
        .collect();
    let font = fonts::update(
        &state,
        org.org.id.as_str(),
        &id,
        body.font_family.as_deref(),
        &changes,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(definition(&state, &org, font))))
}

/// `deleteCustomFont`: 205 when the font is deleted, 204 when there was none.
pub async fn delete_font(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    Ok(if fonts::delete(&state, org.org.id.as_str(), &id).await? {
        StatusCode::RESET_CONTENT
    } else {
        StatusCode::NO_CONTENT
    })
}

/// Query of an upload URL.
#[derive(Deserialize)]
pub struct UploadQuery {
    expires: Option<i64>,
    signature: Option<String>,
}

/// `PUT /storage/{key}`: the bytes of a signed upload, once, within the size its URL was made
/// for (read no further than that: 413 past it).
pub async fn put_upload(
    State(state): State<AppState>,
    Path(key): Path<String>,
    QueryParams(q): QueryParams<UploadQuery>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<StatusCode> {
    let row = fonts::open_upload(&state, &key, q.expires, q.signature.as_deref()).await?;
    let limit = usize::try_from(row.declared_size).unwrap_or(0);
    let too_large =
        || ApiError::PayloadTooLarge(format!("The upload URL takes at most {limit} bytes."));
    let declared_length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared_length.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(body, limit);
    let bytes = match http_body_util::BodyExt::collect(limited).await {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(err) if crate::http::extract::timed_out(err.as_ref()) => {
            return Err(ApiError::RequestTimeout(
                "The request body was not received in time.".into(),
            ))
        }
        Err(err) => {
            return Err(ApiError::bad_request(format!(
                "Could not read the request body: {err}"
            )))
        }
    };
    fonts::finish_upload(&state, &row, bytes).await?;
    Ok(StatusCode::OK)
}

/// `GET /storage/{key}`: an upload's bytes, public and immutable (a key takes bytes once).
pub async fn get_upload(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> ApiResult<Response> {
    let (bytes, content_type) = fonts::uploaded(&state, &key)
        .await?
        .ok_or_else(|| ApiError::not_found("File not found."))?;
    let content_type =
        HeaderValue::from_str(&content_type).unwrap_or(HeaderValue::from_static("font/woff2"));
    let mut res = crate::http::download::sandboxed(bytes, content_type, None);
    let h = res.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    // Fonts are fetched with CORS: pages elsewhere may use the organization's font.
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    Ok(res.into_response())
}
