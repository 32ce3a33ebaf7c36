//! Response bodies of the content operations. Pages and documents stay JSON values: the
//! content engine's views build them, and their shape follows the content itself.

use serde::Serialize;
use serde_json::Value;

use crate::api::views::ChangeRequest;
use crate::values::RevisionType;

/// A reusable content block named by a revision.
#[derive(Serialize)]
pub struct ReusableContent {
    pub id: String,
    pub title: String,
    /// The id of its body's document (`getDocumentById`); none when it is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
}

impl ReusableContent {
    /// The official object of a reusable content whose body (as its reader sees it) is
    /// `markdown`.
    pub fn new(r: &quire_content::model::ReusableContent, markdown: &str) -> ReusableContent {
        ReusableContent {
            id: r.id.clone(),
            title: r.title.clone(),
            document: (!markdown.is_empty())
                .then(|| quire_content::store::text_body_hash(markdown).to_hex()),
        }
    }
}

/// `urls` of a revision.
#[derive(Serialize)]
pub struct RevisionUrls {
    pub app: String,
}

/// `Revision`, but for `pages`: the page tree, serialised once per revision, is appended
/// to this object as it is sent (`http::json::JsonWithMember`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub object: &'static str,
    pub id: String,
    pub parents: Vec<String>,
    pub files: Vec<Value>,
    pub reusable_contents: Vec<ReusableContent>,
    pub variables: Value,
    pub created_at: String,
    #[serde(rename = "type")]
    pub kind: RevisionType,
    pub urls: RevisionUrls,
    /// The change request a merge revision came from (an official `ChangeRequest`,
    /// serialized as its listings keep it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Box<serde_json::value::RawValue>>,
    /// The revision's commit in the space's repository (an official `GitSyncCommit`),
    /// once it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git: Option<Box<serde_json::value::RawValue>>,
}

/// `git` of a revision: the official `GitSyncCommit`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GitCommit {
    pub oid: String,
    pub message: String,
    /// Quire made the commit from the revision (else it was pushed).
    #[serde(rename = "createdByGitBook")]
    pub created_by_quire: bool,
}

/// `location` of a page a batch created or updated.
#[derive(Serialize)]
pub struct PageUrls {
    pub location: String,
}

/// A page a batch created or updated.
#[derive(Serialize)]
pub struct PageRef {
    pub object: &'static str,
    pub id: String,
    pub urls: PageUrls,
}

/// What one change of a batch did.
#[derive(Serialize)]
#[serde(tag = "object", rename_all = "snake_case")]
pub enum ChangeResult {
    /// `created_page`, with the `ref` the change gave it.
    CreatedPage {
        page: PageRef,
        #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
    },
    /// `updated_page`.
    UpdatedPage { page: PageRef },
    /// `deleted_page`: the id of the page.
    DeletedPage { page: String },
}

/// The answer of a content batch on a change request.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchResult {
    pub change_request: ChangeRequest,
    pub changes: Vec<ChangeResult>,
    pub inserted_files: Vec<Value>,
}

/// `updateChangeRequest…` and `mergeChangeRequest` answers: the new revision and what was done.
#[derive(Serialize)]
pub struct Landed {
    pub revision: String,
    pub result: &'static str,
}

/// `getChangeRequestChanges`: the first changes and how many more there are.
#[derive(Serialize)]
pub struct Changes<T: Serialize> {
    pub changes: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<usize>,
}

/// `getRevisionSemanticChanges`: the first changes, how many more there are, and a merge
/// revision's change request.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionChanges<T: Serialize> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Box<serde_json::value::RawValue>>,
    pub changes: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<usize>,
}
