//! Change requests: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod contributors;
pub mod handlers;
pub mod organization;
pub mod reviews;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/reviews",
            "getReviewsByChangeRequestId",
            Space(Role::Read),
            reviews::list_reviews,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/reviews",
            "submitChangeRequestReview",
            Space(Role::Review),
            reviews::submit_review,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/requested-reviewers",
            "getRequestedReviewersByChangeRequestId",
            Space(Role::Read),
            reviews::list_requested,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/requested-reviewers",
            "requestReviewersForChangeRequest",
            Space(Role::Edit),
            reviews::request_reviewers,
        ),
        op(
            Method::DELETE,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/requested-reviewers/{userId}",
            "removeRequestedReviewerFromChangeRequest",
            Space(Role::Edit),
            reviews::remove_requested,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/contributors",
            "getContributorsByChangeRequestId",
            Space(Role::Read),
            contributors::list_contributors,
        ),
        op(
            Method::POST,
            "/v1/spaces/{spaceId}/change-requests",
            "createChangeRequest",
            Space(Role::Edit),
            handlers::create_change_request,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests",
            "listChangeRequestsForSpace",
            Space(Role::Read),
            handlers::list_change_requests,
        ),
        op(
            Method::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}",
            "getChangeRequestById",
            Space(Role::Read),
            handlers::get_change_request,
        ),
        op(
            Method::PATCH,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}",
            "updateChangeRequestById",
            Space(Role::Edit),
            handlers::update_change_request,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/change-requests",
            "listChangeRequestsForOrganization",
            OrgMember,
            organization::list_org_change_requests,
        ),
    ]
}
