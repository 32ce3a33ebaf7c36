//! File uploads of authoring batches (`insert_files`): bytes fetched by URL or decoded from
//! base64, stored content-addressed in the blob store, described for the content engine.

use base64::Engine;
use bytes::Bytes;
use quire_content::edit::{Change, FileUpload};
use quire_content::gitsync::objects;
use quire_content::model::{Dimensions, File};

use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;

/// Fetches or decodes every file of the batch's `insert_files` changes, stores the bytes,
/// and fills in each upload's `resolved` file. Returns the new files in order.
pub async fn resolve_files(
    state: &AppState,
    space_id: &str,
    changes: &mut [Change],
) -> ApiResult<Vec<File>> {
    let mut out = Vec::new();
    for (i, change) in changes.iter_mut().enumerate() {
        let Change::InsertFiles(insert) = change else {
            continue;
        };
        if insert.files.is_empty() || insert.files.len() > 20 {
            return Err(ApiError::bad_request(format!(
                "`changes[{i}].files` must hold 1 to 20 files."
            )));
        }
        for (j, upload) in insert.files.iter_mut().enumerate() {
            let field = format!("changes[{i}].files[{j}]");
            upload.name = crate::validate::file_name(&format!("{field}.name"), &upload.name)?;
            let (bytes, fetched_type) = read_upload(state, upload, &field).await?;
            let file = store_file(state, upload, bytes, fetched_type).await?;
            crate::store::objects::add_blob_ref(&state.db, space_id, &file.blob).await?;
            upload.resolved = Some(file.clone());
            out.push(file);
        }
    }
    Ok(out)
}

async fn read_upload(
    state: &AppState,
    upload: &FileUpload,
    field: &str,
) -> ApiResult<(Bytes, Option<String>)> {
    let limit = state.config.max_body_bytes;
    match (&upload.url, &upload.base64) {
        (Some(_), Some(_)) | (None, None) => Err(ApiError::bad_request(format!(
            "`{field}` needs exactly one of `url` or `base64`."
        ))),
        (None, Some(data)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| {
                    ApiError::bad_request(format!("`{field}.base64` is not valid base64: {e}"))
                })?;
            Ok((Bytes::from(bytes), None))
        }
        (Some(url), None) => {
            let fetched = state
                .fetcher
                .get(url, limit)
                .await
                .map_err(|e| ApiError::bad_request(format!("`{field}.url` {e}.")))?;
            Ok((fetched.bytes, fetched.content_type))
        }
    }
}

async fn store_file(
    state: &AppState,
    upload: &FileUpload,
    bytes: Bytes,
    fetched_type: Option<String>,
) -> ApiResult<File> {
    let declared = upload
        .content_type
        .clone()
        .or(fetched_type.filter(|t| !t.is_empty() && t != "application/octet-stream"));
    store_bytes(state, &upload.name, bytes, declared).await
}

/// Stores `bytes` in the blob store as a new file named `name`: its content type is the
/// declared one, else guessed from the name; images get their dimensions.
pub async fn store_bytes(
    state: &AppState,
    name: &str,
    bytes: Bytes,
    declared_type: Option<String>,
) -> ApiResult<File> {
    let content_type = declared_type.unwrap_or_else(|| {
        mime_guess::from_path(name)
            .first_or_octet_stream()
            .to_string()
    });
    let dimensions = if content_type.starts_with("image/") {
        imagesize::blob_size(&bytes).ok().and_then(|d| {
            Some(Dimensions {
                width: u32::try_from(d.width).ok()?,
                height: u32::try_from(d.height).ok()?,
            })
        })
    } else {
        None
    };
    let size = bytes.len() as u64;
    // The id a space's repository gives these bytes, shown as the file's `git`.
    let git_oid = objects::id_of(objects::Kind::Blob, &bytes).to_hex();
    let hash = state.blobs.put(bytes).await.map_err(ApiError::internal)?;
    let dims = dimensions.map(|d| (i64::from(d.width), i64::from(d.height)));
    let size_i64 = i64::try_from(size).unwrap_or(i64::MAX);
    crate::store::objects::record_blob(
        &state.db,
        &hash,
        size_i64,
        &content_type,
        dims,
        state.now(),
    )
    .await?;
    Ok(File {
        id: new_id(),
        name: name.to_string(),
        content_type,
        size,
        dimensions,
        blob: hash,
        git_oid: Some(git_oid),
    })
}
