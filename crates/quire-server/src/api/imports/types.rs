//! Request and response bodies of the import operations.

use serde::{Deserialize, Serialize};

/// `ImportContent`. Both fields are required; they are read as optional so that a missing
/// one is named in the 400.
#[derive(Deserialize)]
pub struct ImportContent {
    pub url: Option<String>,
    pub source: Option<String>,
}

/// `ImportContentResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportContentResult {
    pub revision: String,
    pub imported_resources: usize,
    pub total_resources: usize,
}
