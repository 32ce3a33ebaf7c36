//! Request and response bodies of Git Sync.

use serde::{Deserialize, Serialize};

/// `UpdateSpaceGitInfo`.
#[derive(Deserialize, Default)]
pub struct GitInfo {
    pub provider: Option<String>,
    pub url: Option<String>,
}

/// `ImportGitRepository` and `ExportToGitRepository` (the export adds `commitMessage`).
/// Required fields are read as optional so that a missing one is named in the 400;
/// `repoCacheID` and `timestamp` are accepted and not needed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncBody {
    pub url: Option<String>,
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub commit_message: Option<String>,
    #[serde(rename = "repoTreeURL")]
    pub repo_tree_url: Option<String>,
    #[serde(rename = "repoCommitURL")]
    pub repo_commit_url: Option<String>,
    pub repo_project_directory: Option<String>,
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub standalone: bool,
    pub git_info: Option<GitInfo>,
}

/// `GitSyncState`, with the latest operation as the newer spec reports it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GitSyncState {
    pub repo_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installation_provider: Option<String>,
    pub url: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
}

/// The latest operation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    pub state: String,
    pub direction: String,
    pub started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
