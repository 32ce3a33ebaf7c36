//! Comments: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;
pub mod types;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// Largest request body of a comment operation: a comment is at most 64 KiB of markdown,
/// and its document form is more verbose. Larger bodies get 413 before they are read.
const BODY_LIMIT: usize = 1024 * 1024;

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    let operations = vec![
        op(Method::GET, "/v1/spaces/{spaceId}/comments", "listCommentsInSpace", Space(Role::Read), handlers::list_comments),
        op(Method::POST, "/v1/spaces/{spaceId}/comments", "postCommentInSpace", Space(Role::Comment), handlers::post_comment),
        op(Method::GET, "/v1/spaces/{spaceId}/comments/{commentId}", "getCommentInSpace", Space(Role::Read), handlers::get_comment),
        op(Method::PUT, "/v1/spaces/{spaceId}/comments/{commentId}", "updateCommentInSpace", Space(Role::Comment), handlers::update_comment),
        op(Method::DELETE, "/v1/spaces/{spaceId}/comments/{commentId}", "deleteCommentInSpace", Space(Role::Read), handlers::delete_comment),
        op(Method::GET, "/v1/spaces/{spaceId}/comments/{commentId}/replies", "listCommentRepliesInSpace", Space(Role::Read), handlers::list_replies),
        op(Method::POST, "/v1/spaces/{spaceId}/comments/{commentId}/replies", "postCommentReplyInSpace", Space(Role::Comment), handlers::post_reply),
        op(Method::GET, "/v1/spaces/{spaceId}/comments/{commentId}/replies/{commentReplyId}", "getCommentReplyInSpace", Space(Role::Read), handlers::get_reply),
        op(Method::PUT, "/v1/spaces/{spaceId}/comments/{commentId}/replies/{commentReplyId}", "updateCommentReplyInSpace", Space(Role::Comment), handlers::update_reply),
        op(Method::DELETE, "/v1/spaces/{spaceId}/comments/{commentId}/replies/{commentReplyId}", "deleteCommentReplyInSpace", Space(Role::Read), handlers::delete_reply),
        op(Method::GET, "/v1/spaces/{spaceId}/commenters", "listCommentersInSpace", Space(Role::Read), handlers::list_commenters),
        op(Method::GET, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/commenters", "listCommentersInChangeRequest", Space(Role::Read), handlers::list_commenters),
        op(Method::GET, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments", "listCommentsInChangeRequest", Space(Role::Read), handlers::list_comments),
        op(Method::POST, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments", "postCommentInChangeRequest", Space(Role::Comment), handlers::post_comment),
        op(Method::GET, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}", "getCommentInChangeRequest", Space(Role::Read), handlers::get_comment),
        op(Method::PUT, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}", "updateCommentInChangeRequest", Space(Role::Comment), handlers::update_comment),
        op(Method::DELETE, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}", "deleteCommentInChangeRequest", Space(Role::Read), handlers::delete_comment),
        op(Method::GET, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies", "listCommentRepliesInChangeRequest", Space(Role::Read), handlers::list_replies),
        op(Method::POST, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies", "postCommentReplyInChangeRequest", Space(Role::Comment), handlers::post_reply),
        op(Method::GET, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies/{commentReplyId}", "getCommentReplyInChangeRequest", Space(Role::Read), handlers::get_reply),
        op(Method::PUT, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies/{commentReplyId}", "updateCommentReplyInChangeRequest", Space(Role::Comment), handlers::update_reply),
        op(Method::DELETE, "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies/{commentReplyId}", "deleteCommentReplyInChangeRequest", Space(Role::Read), handlers::delete_reply),
    ];
    operations
        .into_iter()
        .map(|o| o.body_limit(BODY_LIMIT))
        .collect()
}
