//! Uploads through signed URLs (`generateStorageUploadURL`) and an organization's custom
//! fonts, whose weights name finished uploads.
//!
//! Quire is its own storage: an upload URL is Quire's `PUT /storage/{key}` with an expiry and
//! an HMAC binding the key, the declared type and size. The bytes go to the blob store's
//! `uploads/` folder once, checked against what the URL was made for; the key then serves
//! them (`GET /storage/{key}`, immutable) and takes no more.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::keys::{b64, unb64};
use crate::state::AppState;
use crate::store;
use crate::store::fonts::{FontRow, UploadRow};

/// How long an upload URL accepts its bytes.
pub const UPLOAD_TTL_MS: i64 = 15 * 60 * 1000;
/// The most bytes one font file may hold.
pub const MAX_FONT_BYTES: u64 = 5 * 1024 * 1024;
/// The most bytes an organization's uploads hold, those whose URL may still be used included.
pub const MAX_ORG_UPLOAD_BYTES: i64 = 200 * 1024 * 1024;
/// The most uploads an organization holds, those whose URL may still be used included.
pub const MAX_ORG_UPLOADS: i64 = 1000;
/// How long an uploaded file no font uses is kept (time to make the font).
pub const UNUSED_UPLOAD_MS: i64 = 24 * 60 * 60 * 1000;
/// The most custom fonts an organization holds.
pub const MAX_FONTS: i64 = 100;
/// The most weights one font holds.
pub const MAX_FACES: usize = 20;
/// The only upload kind of the official spec.
pub const FONT_KIND: &str = "customization_font";

/// The font formats Quire takes: declared types, the format's name and its magic bytes.
const FORMATS: &[(&str, &str, &[u8; 4])] = &[
    ("font/woff2", "woff2", b"wOF2"),
    ("application/font-woff2", "woff2", b"wOF2"),
    ("font/woff", "woff", b"wOFF"),
    ("application/font-woff", "woff", b"wOFF"),
];

/// The content type a font format is served with.
pub fn format_type(format: &str) -> &'static str {
    if format == "woff2" {
        "font/woff2"
    } else {
        "font/woff"
    }
}

fn signed_text(key: &str, content_type: &str, size: i64, expires: i64) -> String {
    [key, content_type, &size.to_string(), &expires.to_string()].join("\n")
}

/// A new upload URL for organization `org_id`: the key it fills and its signed `PUT` URL.
pub async fn upload_url(
    state: &AppState,
    org_id: &str,
    user_id: &str,
    name: &str,
    content_type: &str,
    size: f64,
    kind: &str,
) -> ApiResult<(String, String)> {
    if kind != FONT_KIND {
        return Err(ApiError::bad_request(format!(
            "`kind` must be `{FONT_KIND}`."
        )));
    }
    crate::validate::length("file.name", name, 1, 255)?;
    if !FORMATS.iter().any(|(t, _, _)| *t == content_type) {
        return Err(ApiError::bad_request(format!(
            "`file.type` must be a font type: {}.",
            FORMATS
                .iter()
                .map(|(t, _, _)| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if !(size.fract() == 0.0 && size >= 1.0 && size <= MAX_FONT_BYTES as f64) {
        return Err(ApiError::bad_request(format!(
            "`file.size` must be a whole number of bytes from 1 to {MAX_FONT_BYTES}."
        )));
    }
    let size = size as i64;
    let now = state.now();
    reclaim(state, org_id, now).await?;
    let (count, bytes) = store::fonts::reserved(&state.db, org_id, now).await?;
    if bytes + size > MAX_ORG_UPLOAD_BYTES {
        return Err(ApiError::bad_request(format!(
            "`file.size`: the organization's uploads may hold at most {MAX_ORG_UPLOAD_BYTES} bytes."
        )));
    }
    if count >= MAX_ORG_UPLOADS {
        return Err(ApiError::bad_request(format!(
            "`file`: an organization holds at most {MAX_ORG_UPLOADS} uploads."
        )));
    }
    let key = format!("fonts/{org_id}/{}", new_id());
    let row = UploadRow {
        storage_key: key.clone(),
        org_id: org_id.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        declared_type: content_type.to_string(),
        declared_size: size,
        created_by: user_id.to_string(),
        created_at: now,
        expires_at: now + UPLOAD_TTL_MS,
        hash: None,
        content_type: None,
        size: None,
        uploaded_at: None,
    };
    store::fonts::insert_upload(&state.db, &row).await?;
    let sig = b64(&state.keys.sign(
        "storage-upload",
        signed_text(&key, content_type, size, row.expires_at).as_bytes(),
    )[..16]);
    let url = state.url(&format!(
        "/storage/{key}?expires={}&signature={sig}",
        row.expires_at
    ));
    Ok((key, url))
}

/// Forgets an organization's uploaded files that no font uses a day after they came, and
/// their bytes (each upload's own: see [`finish_upload`]).
async fn reclaim(state: &AppState, org_id: &str, now: i64) -> ApiResult<()> {
    let stale = store::fonts::finished_before(&state.db, org_id, now - UNUSED_UPLOAD_MS).await?;
    if stale.is_empty() {
        return Ok(());
    }
    let used: std::collections::HashSet<String> = list(state, org_id)
        .await?
        .into_iter()
        .flat_map(|f| f.faces.into_iter().map(|face| face.key))
        .collect();
    for (key, name) in stale {
        if used.contains(&key) {
            continue;
        }
        // The row first: a crash between the two leaves bytes nothing names, never a key
        // whose bytes are gone. A font that took the file since it was listed touched it,
        // and the row stays.
        if !store::fonts::delete_upload(&state.db, &key, now - UNUSED_UPLOAD_MS).await? {
            continue;
        }
        state
            .blobs
            .delete_upload(&name)
            .await
            .map_err(ApiError::internal)?;
    }
    Ok(())
}

/// The upload a `PUT` may fill: the URL's signature and expiry hold, and the key has no
/// bytes yet. 403 for a signature that is not Quire's or has expired, 409 once filled.
pub async fn open_upload(
    state: &AppState,
    key: &str,
    expires: Option<i64>,
    signature: Option<&str>,
) -> ApiResult<UploadRow> {
    let refused = || ApiError::forbidden("The upload URL's signature is not valid.");
    let (Some(expires), Some(signature)) = (expires, signature) else {
        return Err(refused());
    };
    // The row gives what the signature must bind; an unknown key has no valid signature.
    let row = store::fonts::upload(&state.db, key)
        .await?
        .ok_or_else(refused)?;
    let signed = signed_text(key, &row.declared_type, row.declared_size, expires);
    let valid = unb64(signature)
        .is_some_and(|sig| state.keys.verify("storage-upload", signed.as_bytes(), &sig));
    if !valid || expires != row.expires_at {
        return Err(refused());
    }
    if state.now() > expires {
        return Err(ApiError::forbidden("The upload URL has expired."));
    }
    if row.hash.is_some() {
        return Err(ApiError::conflict(
            "This storage key already holds its file; ask for another upload URL.",
        ));
    }
    Ok(row)
}

/// Stores the bytes of upload `row` (read within its declared size) once they are what the
/// URL was made for.
pub async fn finish_upload(state: &AppState, row: &UploadRow, bytes: Bytes) -> ApiResult<()> {
    if bytes.len() as i64 != row.declared_size {
        return Err(ApiError::bad_request(format!(
            "The body holds {} bytes; the upload URL was made for {}.",
            bytes.len(),
            row.declared_size
        )));
    }
    let Some((_, format, magic)) = FORMATS.iter().find(|(t, _, _)| *t == row.declared_type) else {
        return Err(ApiError::bad_request(
            "The upload's type is not a font type.",
        ));
    };
    if !bytes.starts_with(*magic) {
        return Err(ApiError::bad_request(format!(
            "The body is not a {format} font (it must start with `{}`).",
            String::from_utf8_lossy(*magic)
        )));
    }
    let size = bytes.len() as i64;
    // Named by the key and the bytes: no other upload shares them (so forgetting an upload
    // removes its bytes), and two racing `PUT`s of different bytes never overwrite the
    // winner's.
    let mut digest = Sha256::new();
    digest.update(row.storage_key.as_bytes());
    digest.update([0]);
    digest.update(&bytes);
    let name = hex::encode(digest.finalize());
    state
        .blobs
        .put_upload(&name, bytes)
        .await
        .map_err(ApiError::internal)?;
    let finished = store::fonts::finish_upload(
        &state.db,
        &row.storage_key,
        &name,
        format_type(format),
        size,
        state.now(),
    )
    .await?;
    if !finished {
        let winner = store::fonts::upload(&state.db, &row.storage_key).await?;
        if winner.and_then(|w| w.hash).as_deref() != Some(name.as_str()) {
            state
                .blobs
                .delete_upload(&name)
                .await
                .map_err(ApiError::internal)?;
        }
        return Err(ApiError::conflict(
            "This storage key already holds its file; ask for another upload URL.",
        ));
    }
    Ok(())
}

/// A finished upload's bytes and content type, for `GET /storage/{key}`.
pub async fn uploaded(state: &AppState, key: &str) -> ApiResult<Option<(Bytes, String)>> {
    let Some(row) = store::fonts::upload(&state.db, key).await? else {
        return Ok(None);
    };
    let (Some(hash), Some(content_type)) = (row.hash, row.content_type) else {
        return Ok(None);
    };
    let bytes = state
        .blobs
        .get_upload(&hash)
        .await
        .map_err(ApiError::internal)?;
    Ok(bytes.map(|b| (b, content_type)))
}

/// One weight of a stored font: the upload holding it and its format.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Face {
    /// CSS font weight, 1 to 1000.
    pub weight: i64,
    /// The storage key of its file.
    pub key: String,
    /// `woff2` or `woff`.
    pub format: String,
}

/// A stored font with its faces read.
#[derive(Debug, Clone)]
pub struct Font {
    /// Its id.
    pub id: String,
    /// The CSS family name shown to people.
    pub family: String,
    /// Its weights, lightest first.
    pub faces: Vec<Face>,
    /// When it last changed (ms).
    pub updated_at: i64,
}

fn font_of(row: FontRow) -> ApiResult<Font> {
    let faces: Vec<Face> = serde_json::from_str(&row.faces).map_err(ApiError::internal)?;
    Ok(Font {
        id: row.id,
        family: row.family,
        faces,
        updated_at: row.updated_at,
    })
}

/// The public URL of an upload's bytes.
pub fn file_url(state: &AppState, key: &str) -> String {
    state.url(&format!("/storage/{key}"))
}

/// Every custom font of an organization, oldest first.
pub async fn list(state: &AppState, org_id: &str) -> ApiResult<Vec<Font>> {
    store::fonts::list(&state.db, org_id)
        .await?
        .into_iter()
        .map(font_of)
        .collect()
}

/// One custom font of an organization (404 otherwise).
pub async fn get(state: &AppState, org_id: &str, id: &str) -> ApiResult<Font> {
    find(state, org_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Custom font `{id}` not found.")))
}

/// One custom font of an organization, if it has it.
pub async fn find(state: &AppState, org_id: &str, id: &str) -> ApiResult<Option<Font>> {
    store::fonts::get(&state.db, org_id, id)
        .await?
        .map(font_of)
        .transpose()
}

fn check_family(family: &str) -> ApiResult<()> {
    crate::validate::length("fontFamily", family, 1, 50)
}

fn check_weight(field: &str, weight: i64) -> ApiResult<()> {
    if (1..=1000).contains(&weight) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}` must be a weight from 1 to 1000."
        )))
    }
}

/// The face of weight `weight` whose file is upload `key`: a font upload of `org_id` whose
/// bytes came (412 naming `field` otherwise; another organization's key is unknown here).
async fn face(
    state: &AppState,
    org_id: &str,
    field: &str,
    weight: i64,
    key: &str,
) -> ApiResult<Face> {
    crate::validate::length(field, key, 1, 512)?;
    let row = store::fonts::upload(&state.db, key)
        .await?
        .filter(|u| u.org_id == org_id && u.kind == FONT_KIND);
    let Some(row) = row else {
        return Err(ApiError::PreconditionFailed(format!(
            "`{field}` names no font upload of this organization."
        )));
    };
    let Some(content_type) = row.content_type.filter(|_| row.hash.is_some()) else {
        return Err(ApiError::PreconditionFailed(format!(
            "`{field}`: the file was not uploaded yet."
        )));
    };
    // Taken now, before the font is written: a clearing of unused files that listed this one
    // leaves it (or cleared it first, and the font is refused).
    if !store::fonts::touch_upload(&state.db, key, state.now()).await? {
        return Err(ApiError::PreconditionFailed(format!(
            "`{field}` names no font upload of this organization."
        )));
    }
    let format = if content_type == "font/woff2" {
        "woff2"
    } else {
        "woff"
    };
    Ok(Face {
        weight,
        key: key.to_string(),
        format: format.to_string(),
    })
}

fn require_regular(faces: &[Face]) -> ApiResult<()> {
    if faces.iter().any(|f| f.weight == 400) {
        Ok(())
    } else {
        Err(ApiError::PreconditionFailed(
            "`fontFaces` must hold a face of weight 400 (regular).".into(),
        ))
    }
}

fn faces_json(faces: &mut [Face]) -> ApiResult<String> {
    faces.sort_by_key(|f| f.weight);
    serde_json::to_string(faces).map_err(ApiError::internal)
}

/// `createCustomFont`: a new font of `org_id` from `(weight, storageKey)` pairs.
pub async fn create(
    state: &AppState,
    org_id: &str,
    family: &str,
    wanted: &[(i64, String)],
) -> ApiResult<Font> {
    check_family(family)?;
    if wanted.is_empty() || wanted.len() > MAX_FACES {
        return Err(ApiError::bad_request(format!(
            "`fontFaces` must hold 1 to {MAX_FACES} faces."
        )));
    }
    let mut faces: Vec<Face> = Vec::with_capacity(wanted.len());
    for (i, (weight, key)) in wanted.iter().enumerate() {
        check_weight(&format!("fontFaces[{i}].weight"), *weight)?;
        if faces.iter().any(|f| f.weight == *weight) {
            return Err(ApiError::PreconditionFailed(format!(
                "`fontFaces[{i}].weight`: weight {weight} is given twice."
            )));
        }
        faces.push(
            face(
                state,
                org_id,
                &format!("fontFaces[{i}].storageKey"),
                *weight,
                key,
            )
            .await?,
        );
    }
    require_regular(&faces)?;
    if store::fonts::count(&state.db, org_id).await? >= MAX_FONTS {
        return Err(ApiError::bad_request(format!(
            "An organization holds at most {MAX_FONTS} custom fonts."
        )));
    }
    let now = state.now();
    let row = FontRow {
        id: new_id(),
        org_id: org_id.to_string(),
        family: family.to_string(),
        faces: faces_json(&mut faces)?,
        created_at: now,
        updated_at: now,
    };
    store::fonts::insert(&state.db, &row).await?;
    font_of(row)
}

/// `updateCustomFont`: a new family, and faces set (a storage key) or removed (`None`) by
/// weight; the regular weight must remain.
pub async fn update(
    state: &AppState,
    org_id: &str,
    id: &str,
    family: Option<&str>,
    changes: &[(i64, Option<String>)],
) -> ApiResult<Font> {
    if let Some(family) = family {
        check_family(family)?;
    }
    if changes.len() > MAX_FACES {
        return Err(ApiError::bad_request(format!(
            "`fontFaces` must hold at most {MAX_FACES} faces."
        )));
    }
    for (i, (weight, _)) in changes.iter().enumerate() {
        check_weight(&format!("fontFaces[{i}].weight"), *weight)?;
    }
    // Compare-and-set on the row's `updated_at`: a write that raced this one is read again.
    for _ in 0..5 {
        let row = store::fonts::get(&state.db, org_id, id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("Custom font `{id}` not found.")))?;
        let seen = row.updated_at;
        let mut font = font_of(row)?;
        for (i, (weight, key)) in changes.iter().enumerate() {
            font.faces.retain(|f| f.weight != *weight);
            if let Some(key) = key {
                let field = format!("fontFaces[{i}].storageKey");
                font.faces
                    .push(face(state, org_id, &field, *weight, key).await?);
            }
        }
        require_regular(&font.faces)?;
        if font.faces.len() > MAX_FACES {
            return Err(ApiError::bad_request(format!(
                "A font holds at most {MAX_FACES} faces."
            )));
        }
        if let Some(family) = family {
            font.family = family.to_string();
        }
        let now = state.now().max(seen + 1);
        let faces = faces_json(&mut font.faces)?;
        if store::fonts::update(&state.db, org_id, id, seen, &font.family, &faces, now).await? {
            font.updated_at = now;
            return Ok(font);
        }
    }
    Err(ApiError::conflict(
        "The font kept changing while this update was made; retry.",
    ))
}

/// `deleteCustomFont`: whether the font existed. Sites using it fall back to their default
/// font (`site_font` finds it no more).
pub async fn delete(state: &AppState, org_id: &str, id: &str) -> ApiResult<bool> {
    Ok(store::fonts::delete(&state.db, org_id, id).await?)
}

/// The custom font a site's `styling.font` names, when it is a font definition whose `id`
/// is a custom font of the site's organization; `None` (the site's default font) otherwise,
/// a deleted font included.
pub async fn site_font(state: &AppState, org_id: &str, font: &Value) -> ApiResult<Option<Font>> {
    let Some(id) = font.get("id").and_then(Value::as_str) else {
        return Ok(None);
    };
    if id.is_empty() || id.len() > 64 {
        return Ok(None);
    }
    find(state, org_id, id).await
}

/// GitBook's fonts (`CustomizationDefaultFont`).
pub const DEFAULT_FONTS: &[&str] = &[
    "ABCFavorit",
    "Inter",
    "Roboto",
    "RobotoSlab",
    "OpenSans",
    "SourceSansPro",
    "Lato",
    "Ubuntu",
    "Raleway",
    "Merriweather",
    "Overpass",
    "NotoSans",
    "IBMPlexSerif",
    "Poppins",
    "FiraSans",
];

/// Checks a customization's font (`CustomizationFont`): one of GitBook's fonts by name, or a
/// font definition (`CustomizationFontDefinitionInput`); 400 naming the field otherwise.
pub fn check_site_font(field: &str, font: &Value) -> ApiResult<()> {
    let bad = |what: String| Err(ApiError::bad_request(format!("`{field}{what}")));
    match font {
        // `null` resets the field (a site space's override).
        Value::Null => Ok(()),
        Value::String(name) if DEFAULT_FONTS.contains(&name.as_str()) => Ok(()),
        Value::Object(def) => {
            let id = def.get("id").and_then(Value::as_str);
            if id.is_none_or(|id| id.len() > 64) {
                return bad(".id` must be a font id.".into());
            }
            if !def.get("custom").is_some_and(Value::is_boolean) {
                return bad(".custom` must be a boolean.".into());
            }
            let family = def.get("fontFamily").and_then(Value::as_str).unwrap_or("");
            if !(1..=50).contains(&family.chars().count()) {
                return bad(".fontFamily` must be 1 to 50 characters long.".into());
            }
            let faces = match def.get("fontFaces").and_then(Value::as_array) {
                Some(faces) if (1..=MAX_FACES).contains(&faces.len()) => faces,
                _ => return bad(format!(".fontFaces` must hold 1 to {MAX_FACES} faces.")),
            };
            for (i, face) in faces.iter().enumerate() {
                let weight = face.get("weight").and_then(Value::as_i64);
                if !weight.is_some_and(|w| (1..=1000).contains(&w)) {
                    return bad(format!(".fontFaces[{i}].weight` must be from 1 to 1000."));
                }
                let sources = match face.get("sources").and_then(Value::as_array) {
                    Some(s) if (1..=4).contains(&s.len()) => s,
                    _ => {
                        return bad(format!(
                            ".fontFaces[{i}].sources` must hold 1 to 4 sources."
                        ))
                    }
                };
                for (j, source) in sources.iter().enumerate() {
                    let url = source.get("url").and_then(Value::as_str).unwrap_or("");
                    if url.is_empty() || url.len() > 2048 {
                        return bad(format!(".fontFaces[{i}].sources[{j}].url` must be a URL."));
                    }
                    if let Some(format) = source.get("format") {
                        if format != "woff2" && format != "woff" {
                            return bad(format!(
                                ".fontFaces[{i}].sources[{j}].format` must be `woff2` or `woff`."
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
        _ => bad(format!(
            "` must be one of GitBook's fonts ({}) or a font definition.",
            DEFAULT_FONTS.join(", ")
        )),
    }
}

/// The last segment of a storage key: what a site's `~fonts/` path names a file by.
pub fn file_name(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}
