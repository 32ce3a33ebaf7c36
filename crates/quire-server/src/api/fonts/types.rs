//! The family's request and response bodies (`StorageUploadURL`,
//! `CustomizationFontDefinition`).

use serde::{Deserialize, Serialize};

use crate::validate::nullable;

/// `StorageFileMetadata`.
#[derive(Deserialize)]
pub struct FileMetadata {
    pub name: String,
    #[serde(rename = "type")]
    pub content_type: String,
    pub size: f64,
}

/// Body of `generateStorageUploadURL`.
#[derive(Deserialize)]
pub struct UploadRequest {
    pub file: FileMetadata,
    pub kind: String,
}

/// `StorageUploadURL`.
#[derive(Serialize)]
pub struct UploadUrl {
    pub object: &'static str,
    pub url: String,
    pub key: String,
}

/// A face of `createCustomFont`'s body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewFace {
    pub weight: i64,
    pub storage_key: String,
}

/// Body of `createCustomFont`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateFont {
    pub font_family: String,
    pub font_faces: Vec<NewFace>,
}

/// A face of `updateCustomFont`'s body: `storageKey: null` removes the weight.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaceChange {
    pub weight: i64,
    #[serde(deserialize_with = "nullable")]
    pub storage_key: Option<Option<String>>,
}

/// Body of `updateCustomFont`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateFont {
    pub font_family: Option<String>,
    #[serde(default)]
    pub font_faces: Vec<FaceChange>,
}

/// `FontSource`.
#[derive(Serialize)]
pub struct FontSource {
    pub url: String,
    pub format: String,
}

/// `FontFace`.
#[derive(Serialize)]
pub struct FontFace {
    pub weight: i64,
    pub sources: Vec<FontSource>,
}

/// `CustomizationFontDefinition.permissions`.
#[derive(Serialize)]
pub struct FontPermissions {
    pub edit: bool,
}

/// `CustomizationFontDefinition`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FontDefinition {
    pub id: String,
    pub custom: bool,
    pub font_family: String,
    pub font_faces: Vec<FontFace>,
    pub permissions: FontPermissions,
}

/// `listCustomFonts`' answer: every font (an organization holds at most
/// `domain::fonts::MAX_FONTS`), no further page.
#[derive(Serialize)]
pub struct FontList {
    pub items: Vec<FontDefinition>,
}
