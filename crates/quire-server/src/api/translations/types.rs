//! Response bodies of the translation operations.

use serde::Serialize;
use serde_json::value::RawValue;

/// `Translation`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Translation {
    pub object: &'static str,
    pub id: String,
    /// `pending`, `running` or `completed` (a failed run reads `completed`, with `failure`).
    pub status: &'static str,
    pub source: TranslationSource,
    pub language: String,
    /// The instructions document, as stored.
    pub instructions: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<TranslationResult>,
    pub created_at: String,
    pub updated_at: String,
    pub stats: TranslationStats,
    pub permissions: TranslationPermissions,
    pub urls: TranslationUrls,
    /// Quire's addition: why the latest run failed, until a run completes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<TranslationFailure>,
}

/// `TranslationSource`.
#[derive(Serialize)]
pub struct TranslationSource {
    pub space: String,
    pub language: String,
}

/// `TranslationResult`.
#[derive(Serialize)]
pub struct TranslationResult {
    pub space: String,
    pub revision: String,
}

/// `Translation.stats`: durations in seconds.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TranslationStats {
    pub runs: i64,
    pub total_words: i64,
    pub total_pages: i64,
    pub total_duration: i64,
    pub latest_run_duration: i64,
    pub latest_pages: i64,
    pub latest_words: i64,
}

/// `Translation.permissions`.
#[derive(Serialize)]
pub struct TranslationPermissions {
    pub view: bool,
    pub edit: bool,
}

/// `Translation.urls`.
#[derive(Serialize)]
pub struct TranslationUrls {
    pub location: String,
}

/// Why the latest run failed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TranslationFailure {
    pub reason: String,
    pub failed_at: String,
}
