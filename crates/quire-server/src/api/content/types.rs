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
    /// The tags its pages may carry (Git Sync's `.gitbook/tags.yaml`): always there, empty
    /// when it defines none, as 0.202.0's `RevisionBase` requires it (0.137.0 lacks it).
    pub tags: Vec<RevisionTag>,
    /// The change request a merge revision came from (an official `ChangeRequest`,
    /// serialized as its listings keep it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Box<serde_json::value::RawValue>>,
    /// The revision's commit in the space's repository (an official `GitSyncCommit`),
    /// once it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git: Option<Box<serde_json::value::RawValue>>,
}

/// The official `RevisionTag`: a tag of a revision, which pages name by its slug.
#[derive(Serialize)]
pub struct RevisionTag {
    pub slug: String,
    pub label: String,
    /// A `DocumentTextColor` (required).
    pub color: &'static str,
    /// An `icon` of `.gitbook/tags.yaml` that is an emoji, as the API writes emojis (its
    /// code points in hex, joined by `-`). (0.202.0's schema cannot validate it: its second
    /// `oneOf` branch, `icon` optional, matches a tag with `emoji` too; the client's type,
    /// `{emoji} | {icon?}`, allows it.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
    /// Any other `icon`: an icon's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
}

/// The longest `Emoji` and `Icon` the official schemas allow.
const MAX_ICON: usize = 50;

impl RevisionTag {
    pub fn new(tag: &quire_content::model::Tag) -> RevisionTag {
        // A colour outside the official `DocumentTextColor` (a hex value, a name GitBook
        // does not know) or none at all shows as `default`: the enum's neutral colour,
        // the one GitBook gives text that has no colour of its own.
        let color = tag
            .color
            .as_deref()
            .and_then(|c| {
                quire_content::markdown::TEXT_COLORS
                    .iter()
                    .find(|known| **known == c)
            })
            .copied()
            .unwrap_or("default");
        // `tags.yaml` has one `icon`: an emoji (anything not ASCII) or an icon's name.
        let (emoji, icon) = match tag.icon.as_deref().map(str::trim) {
            None | Some("") => (None, None),
            Some(i) if !i.is_ascii() => (Some(emoji_code(i)), None),
            Some(i) => (None, Some(i.to_string())),
        };
        RevisionTag {
            slug: tag.slug.clone(),
            label: tag.label.clone(),
            color,
            emoji: emoji.filter(|e| e.len() <= MAX_ICON),
            icon: icon.filter(|i| i.len() <= MAX_ICON),
        }
    }
}

/// An emoji as the API writes emojis (a space's, a page's): its code points in hex joined
/// by `-`, without the variation selector U+FE0F (`🎉` is `1f389`).
fn emoji_code(emoji: &str) -> String {
    emoji
        .chars()
        .filter(|c| *c != '\u{fe0f}')
        .map(|c| format!("{:x}", c as u32))
        .collect::<Vec<_>>()
        .join("-")
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

/// `RevisionPageMetaLinks`: a page's canonical and alternate addresses. Quire keeps no
/// canonical address of its own for a page, so `canonical` is never there; `alternates`
/// holds the same page in other languages (`ContentRefPage`s), left out when there is none.
#[derive(Serialize)]
pub struct PageMetaLinks {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternates: Vec<quire_content::model::ContentRef>,
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
