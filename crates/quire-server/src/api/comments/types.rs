//! Response bodies of the comment operations, after the official `Comment`,
//! `CommentReply`, `CommentReaction` and `CommentTarget` schemas.

use serde::Serialize;
use serde_json::Value;

use crate::api::views::User;
use crate::values::CommentStatus;

/// A comment's body in the requested format: `{markdown}` or `{document}`.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Body {
    /// The markdown as written.
    Markdown(String),
    /// The document the markdown parses to.
    Document(Value),
}

/// One person's reaction.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reacted {
    pub user: User,
    pub reacted_at: String,
}

/// `CommentReaction`: one emoji and who reacted with it.
#[derive(Serialize)]
pub struct Reaction {
    pub emoji: String,
    pub count: usize,
    pub users: Vec<Reacted>,
}

/// What a caller may do with a comment or a reply.
#[derive(Serialize)]
pub struct Permissions {
    pub view: bool,
    pub edit: bool,
    pub reply: bool,
    pub delete: bool,
}

/// The page a comment is on, as the current content has it.
#[derive(Serialize)]
pub struct TargetPage {
    pub id: String,
    pub title: String,
    pub path: String,
    pub outdated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
}

/// A block a comment is on.
#[derive(Serialize)]
pub struct TargetNode {
    pub id: String,
}

/// A table cell a comment is on.
#[derive(Serialize)]
pub struct TargetCell {
    pub record: String,
    pub definition: String,
}

/// `CommentTarget`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    pub space: String,
    pub revision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_request: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<TargetNode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_cell: Option<TargetCell>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<TargetPage>,
}

/// `urls` of a comment or reply.
#[derive(Serialize)]
pub struct Urls {
    pub location: String,
}

/// `Comment`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub object: &'static str,
    pub id: String,
    pub posted_by: User,
    pub posted_at: String,
    pub reactions: Vec<Reaction>,
    pub replies: i64,
    pub body: Body,
    pub target: Target,
    pub urls: Urls,
    pub permissions: Permissions,
    pub status: CommentStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<User>,
}

/// `CommentReply`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reply {
    pub object: &'static str,
    pub id: String,
    pub posted_by: User,
    pub posted_at: String,
    pub reactions: Vec<Reaction>,
    pub body: Body,
    pub urls: Urls,
    pub permissions: Permissions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_at: Option<String>,
}
