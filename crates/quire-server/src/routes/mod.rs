//! The route table: every endpoint declared once with its official operationId and the
//! access it requires, and the router built from it.

pub mod change_requests;
pub mod collections;
pub mod comments;
pub mod content;
pub mod files;
pub mod invites;
pub mod members;
pub mod meta;
pub mod orgs;
pub mod permissions;
pub mod search;
pub mod spaces;
pub mod teams;
pub mod uploads;
pub mod users;

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, Method, StatusCode};
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::Response;
use axum::routing::{delete, get, patch, post, put, MethodRouter};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::RequestBodyTimeoutLayer;
use tracing::Instrument;

use crate::access::{enforce, Access, Role};
use crate::app::AppState;
use crate::error::{error_response, normalize_error_bodies};

/// One endpoint.
pub struct RouteDef {
    /// HTTP method.
    pub method: Method,
    /// Path pattern, with `{param}` segments.
    pub path: &'static str,
    /// Official operationId.
    pub operation: &'static str,
    /// What the caller needs.
    pub access: Access,
    handler: MethodRouter<AppState>,
}

fn route(
    method: Method,
    path: &'static str,
    operation: &'static str,
    access: Access,
    handler: MethodRouter<AppState>,
) -> RouteDef {
    RouteDef {
        method,
        path,
        operation,
        access,
        handler,
    }
}

const ORG: &str = "/v1/orgs/{organizationId}";

/// Every endpoint of the API.
pub fn table() -> Vec<RouteDef> {
    use Access::*;
    use Method as M;
    let _ = ORG;
    vec![
        route(
            M::GET,
            "/v1/",
            "getApiInformation",
            User,
            get(meta::get_api_information),
        ),
        route(
            M::GET,
            "/v1/user",
            "getAuthenticatedUser",
            User,
            get(users::get_authenticated_user),
        ),
        route(
            M::GET,
            "/v1/users/{userId}",
            "getUserById",
            User,
            get(users::get_user),
        ),
        route(
            M::PATCH,
            "/v1/users/{userId}",
            "updateUserById",
            User,
            patch(users::update_user),
        ),
        // Organizations
        route(
            M::GET,
            "/v1/orgs",
            "listOrganizationsForAuthenticatedUser",
            User,
            get(orgs::list_organizations),
        ),
        route(
            M::POST,
            "/v1/orgs",
            "createOrganization",
            User,
            post(orgs::create_organization),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}",
            "getOrganizationById",
            OrgMember,
            get(orgs::get_organization),
        ),
        route(
            M::PATCH,
            "/v1/orgs/{organizationId}",
            "updateOrganizationById",
            OrgAdmin,
            patch(orgs::update_organization),
        ),
        route(
            M::GET,
            "/v1/email-domains/{emailDomain}/orgs",
            "getOrganizationsForEmailDomain",
            User,
            get(orgs::list_organizations_for_email_domain),
        ),
        // Members
        route(
            M::GET,
            "/v1/orgs/{organizationId}/members",
            "listMembersInOrganizationById",
            OrgNonGuest,
            get(members::list_members),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}/members/{userId}",
            "getMemberInOrganizationById",
            OrgNonGuest,
            get(members::get_member),
        ),
        route(
            M::PATCH,
            "/v1/orgs/{organizationId}/members/{userId}",
            "updateMemberInOrganizationById",
            OrgAdmin,
            patch(members::update_member),
        ),
        route(
            M::DELETE,
            "/v1/orgs/{organizationId}/members/{userId}",
            "removeMemberFromOrganizationById",
            OrgMember,
            delete(members::remove_member),
        ),
        route(
            M::POST,
            "/v1/orgs/{organizationId}/ping",
            "updateOrganizationMemberLastSeenAt",
            OrgMember,
            post(members::ping),
        ),
        route(
            M::POST,
            "/v1/orgs/{organizationId}/members/{userId}/sso",
            "setUserAsSSOMemberForOrganization",
            OrgAdmin,
            post(members::set_member_sso),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}/members/{userId}/spaces",
            "listSpacesForOrganizationMember",
            OrgNonGuest,
            get(members::list_member_spaces),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}/members/{userId}/teams",
            "listTeamsForOrganizationMember",
            OrgNonGuest,
            get(members::list_member_teams),
        ),
        // Teams
        route(
            M::GET,
            "/v1/orgs/{organizationId}/teams",
            "listTeamsInOrganizationById",
            OrgNonGuest,
            get(teams::list_teams),
        ),
        route(
            M::PUT,
            "/v1/orgs/{organizationId}/teams",
            "createOrganizationTeam",
            OrgAdmin,
            put(teams::create_team),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}/teams/{teamId}",
            "getTeamInOrganizationById",
            TeamView,
            get(teams::get_team),
        ),
        route(
            M::PATCH,
            "/v1/orgs/{organizationId}/teams/{teamId}",
            "updateTeamInOrganizationById",
            TeamManage,
            patch(teams::update_team),
        ),
        route(
            M::DELETE,
            "/v1/orgs/{organizationId}/teams/{teamId}",
            "removeTeamFromOrganizationById",
            OrgAdmin,
            delete(teams::delete_team),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}/teams/{teamId}/members",
            "listTeamMembersInOrganizationById",
            TeamView,
            get(teams::list_team_members),
        ),
        route(
            M::PUT,
            "/v1/orgs/{organizationId}/teams/{teamId}/members",
            "updateMembersInOrganizationTeam",
            TeamManage,
            put(teams::update_team_members),
        ),
        route(
            M::PUT,
            "/v1/orgs/{organizationId}/teams/{teamId}/members/{userId}",
            "addMemberToOrganizationTeamById",
            TeamManage,
            put(teams::add_team_member),
        ),
        route(
            M::DELETE,
            "/v1/orgs/{organizationId}/teams/{teamId}/members/{userId}",
            "deleteMemberFromOrganizationTeamById",
            TeamManage,
            delete(teams::remove_team_member),
        ),
        // Invites
        route(
            M::POST,
            "/v1/orgs/{organizationId}/invites",
            "inviteUsersToOrganization",
            OrgAdmin,
            post(invites::invite_users),
        ),
        route(
            M::POST,
            "/v1/orgs/{organizationId}/invites/{inviteId}",
            "joinOrganizationWithInvite",
            User,
            post(invites::join_with_invite),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}/link-invites",
            "listOrganizationInviteLinks",
            OrgAdmin,
            get(invites::list_link_invites),
        ),
        route(
            M::POST,
            "/v1/orgs/{organizationId}/link-invites",
            "createOrganizationInvite",
            OrgAdmin,
            post(invites::create_link_invite),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}/link-invites/{inviteId}",
            "getOrganizationInviteLink",
            OrgAdmin,
            get(invites::get_link_invite),
        ),
        route(
            M::PATCH,
            "/v1/orgs/{organizationId}/link-invites/{inviteId}",
            "updateOrganizationInviteById",
            OrgAdmin,
            patch(invites::update_link_invite),
        ),
        route(
            M::DELETE,
            "/v1/orgs/{organizationId}/link-invites/{inviteId}",
            "deleteOrganizationInviteById",
            OrgAdmin,
            delete(invites::delete_link_invite),
        ),
        // Spaces
        route(
            M::GET,
            "/v1/orgs/{organizationId}/spaces",
            "listSpacesInOrganizationById",
            OrgMember,
            get(spaces::list_spaces),
        ),
        route(
            M::POST,
            "/v1/orgs/{organizationId}/spaces",
            "createSpace",
            OrgMember,
            post(spaces::create_space),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}",
            "getSpaceById",
            Space(Role::Read),
            get(spaces::get_space),
        ),
        route(
            M::PATCH,
            "/v1/spaces/{spaceId}",
            "updateSpaceById",
            Space(Role::Edit),
            patch(spaces::update_space),
        ),
        route(
            M::DELETE,
            "/v1/spaces/{spaceId}",
            "deleteSpaceById",
            SpaceIfExists(Role::Admin),
            delete(spaces::delete_space),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/restore",
            "restoreSpace",
            Space(Role::Admin),
            post(spaces::restore_space),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/duplicate",
            "duplicateSpace",
            Space(Role::Read),
            post(spaces::duplicate_space),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/move",
            "moveSpace",
            Space(Role::Admin),
            post(spaces::move_space),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/transfer",
            "transferSpace",
            Space(Role::Admin),
            post(spaces::transfer_space),
        ),
        // Space permissions
        route(
            M::POST,
            "/v1/spaces/{spaceId}/permissions",
            "inviteToSpace",
            Space(Role::Admin),
            post(permissions::invite_to_space),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/permissions/users",
            "listUserPermissionsInSpace",
            Space(Role::Read),
            get(permissions::list_space_users),
        ),
        route(
            M::PATCH,
            "/v1/spaces/{spaceId}/permissions/users/{userId}",
            "updateUserPermissionInSpace",
            Space(Role::Admin),
            patch(permissions::update_space_user),
        ),
        route(
            M::DELETE,
            "/v1/spaces/{spaceId}/permissions/users/{userId}",
            "removeUserFromSpace",
            Space(Role::Admin),
            delete(permissions::remove_space_user),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/permissions/teams",
            "listTeamPermissionsInSpace",
            Space(Role::Read),
            get(permissions::list_space_teams),
        ),
        route(
            M::PATCH,
            "/v1/spaces/{spaceId}/permissions/teams/{teamId}",
            "updateTeamPermissionInSpace",
            Space(Role::Admin),
            patch(permissions::update_space_team),
        ),
        route(
            M::DELETE,
            "/v1/spaces/{spaceId}/permissions/teams/{teamId}",
            "removeTeamFromSpace",
            Space(Role::Admin),
            delete(permissions::remove_space_team),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/permissions/aggregate",
            "listPermissionsAggregateInSpace",
            Space(Role::Read),
            get(permissions::aggregate_space),
        ),
        // Change requests
        route(
            M::POST,
            "/v1/spaces/{spaceId}/change-requests",
            "createChangeRequest",
            Space(Role::Edit),
            post(change_requests::create_change_request),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests",
            "listChangeRequestsForSpace",
            Space(Role::Read),
            get(change_requests::list_change_requests),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}",
            "getChangeRequestById",
            Space(Role::Read),
            get(change_requests::get_change_request),
        ),
        route(
            M::PATCH,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}",
            "updateChangeRequestById",
            Space(Role::Edit),
            patch(change_requests::update_change_request),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content",
            "updateChangeRequestContent",
            Space(Role::Edit),
            post(content::update_cr_content),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/update",
            "updateChangeRequest",
            Space(Role::Edit),
            post(content::update_cr),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/merge",
            "mergeChangeRequest",
            Space(Role::Edit),
            post(content::merge_cr),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/changes",
            "getChangeRequestChanges",
            Space(Role::Read),
            get(content::get_cr_changes),
        ),
        // Comments
        route(
            M::GET,
            "/v1/spaces/{spaceId}/comments",
            "listCommentsInSpace",
            Space(Role::Read),
            get(comments::list_space_comments),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/comments",
            "postCommentInSpace",
            Space(Role::Comment),
            post(comments::post_space_comment),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/comments/{commentId}",
            "getCommentInSpace",
            Space(Role::Read),
            get(comments::get_space_comment),
        ),
        route(
            M::PUT,
            "/v1/spaces/{spaceId}/comments/{commentId}",
            "updateCommentInSpace",
            Space(Role::Comment),
            put(comments::update_space_comment),
        ),
        route(
            M::DELETE,
            "/v1/spaces/{spaceId}/comments/{commentId}",
            "deleteCommentInSpace",
            Space(Role::Read),
            delete(comments::delete_space_comment),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/comments/{commentId}/replies",
            "listCommentRepliesInSpace",
            Space(Role::Read),
            get(comments::list_space_replies),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/comments/{commentId}/replies",
            "postCommentReplyInSpace",
            Space(Role::Comment),
            post(comments::post_space_reply),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/comments/{commentId}/replies/{commentReplyId}",
            "getCommentReplyInSpace",
            Space(Role::Read),
            get(comments::get_space_reply),
        ),
        route(
            M::PUT,
            "/v1/spaces/{spaceId}/comments/{commentId}/replies/{commentReplyId}",
            "updateCommentReplyInSpace",
            Space(Role::Comment),
            put(comments::update_space_reply),
        ),
        route(
            M::DELETE,
            "/v1/spaces/{spaceId}/comments/{commentId}/replies/{commentReplyId}",
            "deleteCommentReplyInSpace",
            Space(Role::Read),
            delete(comments::delete_space_reply),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments",
            "listCommentsInChangeRequest",
            Space(Role::Read),
            get(comments::list_cr_comments),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments",
            "postCommentInChangeRequest",
            Space(Role::Comment),
            post(comments::post_cr_comment),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}",
            "getCommentInChangeRequest",
            Space(Role::Read),
            get(comments::get_cr_comment),
        ),
        route(
            M::PUT,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}",
            "updateCommentInChangeRequest",
            Space(Role::Comment),
            put(comments::update_cr_comment),
        ),
        route(
            M::DELETE,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}",
            "deleteCommentInChangeRequest",
            Space(Role::Read),
            delete(comments::delete_cr_comment),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies",
            "listCommentRepliesInChangeRequest",
            Space(Role::Read),
            get(comments::list_cr_replies),
        ),
        route(
            M::POST,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies",
            "postCommentReplyInChangeRequest",
            Space(Role::Comment),
            post(comments::post_cr_reply),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies/{commentReplyId}",
            "getCommentReplyInChangeRequest",
            Space(Role::Read),
            get(comments::get_cr_reply),
        ),
        route(
            M::PUT,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies/{commentReplyId}",
            "updateCommentReplyInChangeRequest",
            Space(Role::Comment),
            put(comments::update_cr_reply),
        ),
        route(
            M::DELETE,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/comments/{commentId}/replies/{commentReplyId}",
            "deleteCommentReplyInChangeRequest",
            Space(Role::Read),
            delete(comments::delete_cr_reply),
        ),
        // Content
        route(
            M::GET,
            "/v1/spaces/{spaceId}/content",
            "getCurrentRevision",
            Space(Role::Read),
            get(content::get_space_content),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/content/pages",
            "listPages",
            Space(Role::Read),
            get(content::list_space_pages),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/content/files",
            "listFiles",
            Space(Role::Read),
            get(content::list_space_files),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/content/files/{fileId}",
            "getFileById",
            Space(Role::Read),
            get(content::get_space_file),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/content/page/{pageId}",
            "getPageById",
            Space(Role::Read),
            get(content::get_space_page),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/content/path/{*pagePath}",
            "getPageByPath",
            Space(Role::Read),
            get(content::get_space_page_by_path),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content",
            "getRevisionOfChangeRequestById",
            Space(Role::Read),
            get(content::get_cr_content),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/pages",
            "listPagesInChangeRequest",
            Space(Role::Read),
            get(content::list_cr_pages),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/files",
            "listFilesInChangeRequestById",
            Space(Role::Read),
            get(content::list_cr_files),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/files/{fileId}",
            "getFileInChangeRequestById",
            Space(Role::Read),
            get(content::get_cr_file),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/page/{pageId}",
            "getPageInChangeRequestById",
            Space(Role::Read),
            get(content::get_cr_page),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/change-requests/{changeRequestId}/content/path/{*pagePath}",
            "getPageInChangeRequestByPath",
            Space(Role::Read),
            get(content::get_cr_page_by_path),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/revisions/{revisionId}",
            "getRevisionById",
            Space(Role::Read),
            get(content::get_revision),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/revisions/{revisionId}/pages",
            "listPagesInRevisionById",
            Space(Role::Read),
            get(content::list_revision_pages),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/revisions/{revisionId}/files",
            "listFilesInRevisionById",
            Space(Role::Read),
            get(content::list_revision_files),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/revisions/{revisionId}/files/{fileId}",
            "getFileInRevisionById",
            Space(Role::Read),
            get(content::get_revision_file),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/revisions/{revisionId}/page/{pageId}",
            "getPageInRevisionById",
            Space(Role::Read),
            get(content::get_revision_page),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/revisions/{revisionId}/path/{*pagePath}",
            "getPageInRevisionByPath",
            Space(Role::Read),
            get(content::get_revision_page_by_path),
        ),
        route(
            M::GET,
            "/v1/spaces/{spaceId}/search",
            "searchSpaceContent",
            Space(Role::Read),
            get(search::search_space),
        ),
        route(
            M::GET,
            "/v1/orgs/{organizationId}/search",
            "searchOrganizationContent",
            OrgMember,
            get(search::search_organization),
        ),
        // Collections
        route(
            M::GET,
            "/v1/orgs/{organizationId}/collections",
            "listCollectionsInOrganizationById",
            OrgMember,
            get(collections::list_collections),
        ),
        route(
            M::POST,
            "/v1/orgs/{organizationId}/collections",
            "createCollection",
            OrgMember,
            post(collections::create_collection),
        ),
        route(
            M::GET,
            "/v1/collections/{collectionId}",
            "getCollectionById",
            Collection(Role::Read),
            get(collections::get_collection),
        ),
        route(
            M::PATCH,
            "/v1/collections/{collectionId}",
            "updateCollectionById",
            Collection(Role::Admin),
            patch(collections::update_collection),
        ),
        route(
            M::DELETE,
            "/v1/collections/{collectionId}",
            "deleteCollectionById",
            CollectionIfExists(Role::Admin),
            delete(collections::delete_collection),
        ),
        route(
            M::GET,
            "/v1/collections/{collectionId}/spaces",
            "listSpacesInCollectionById",
            Collection(Role::Read),
            get(collections::list_collection_spaces),
        ),
        route(
            M::POST,
            "/v1/collections/{collectionId}/move",
            "moveCollection",
            Collection(Role::Admin),
            post(collections::move_collection),
        ),
        route(
            M::POST,
            "/v1/collections/{collectionId}/transfer",
            "transferCollection",
            Collection(Role::Admin),
            post(collections::transfer_collection),
        ),
        // Collection permissions
        route(
            M::POST,
            "/v1/collections/{collectionId}/permissions",
            "inviteToCollection",
            Collection(Role::Admin),
            post(permissions::invite_to_collection),
        ),
        route(
            M::GET,
            "/v1/collections/{collectionId}/permissions/users",
            "listUserPermissionsInCollection",
            Collection(Role::Read),
            get(permissions::list_collection_users),
        ),
        route(
            M::PATCH,
            "/v1/collections/{collectionId}/permissions/users/{userId}",
            "updateUserPermissionInCollection",
            Collection(Role::Admin),
            patch(permissions::update_collection_user),
        ),
        route(
            M::DELETE,
            "/v1/collections/{collectionId}/permissions/users/{userId}",
            "removeUserFromCollection",
            Collection(Role::Admin),
            delete(permissions::remove_collection_user),
        ),
        route(
            M::GET,
            "/v1/collections/{collectionId}/permissions/teams",
            "listTeamPermissionsInCollection",
            Collection(Role::Read),
            get(permissions::list_collection_teams),
        ),
        route(
            M::PATCH,
            "/v1/collections/{collectionId}/permissions/teams/{teamId}",
            "updateTeamPermissionInCollection",
            Collection(Role::Admin),
            patch(permissions::update_collection_team),
        ),
        route(
            M::DELETE,
            "/v1/collections/{collectionId}/permissions/teams/{teamId}",
            "removeTeamFromCollection",
            Collection(Role::Admin),
            delete(permissions::remove_collection_team),
        ),
        route(
            M::GET,
            "/v1/collections/{collectionId}/permissions/aggregate",
            "listPermissionsAggregateInCollection",
            Collection(Role::Read),
            get(permissions::aggregate_collection),
        ),
    ]
}

/// Builds the router from [`table`], each route behind its access check.
pub fn build(state: AppState) -> Router {
    let mut router: Router<AppState> = Router::new();
    for def in table() {
        let layer = from_fn_with_state((state.clone(), def.access), enforce);
        router = router.route(def.path, def.handler.route_layer(layer));
    }
    let request_id = HeaderName::from_static("x-request-id");
    router
        .route("/healthz", get(meta::healthz))
        .route("/files/{hash}/{name}", get(files::download))
        .fallback(fallback)
        .layer(RequestBodyTimeoutLayer::new(Duration::from_millis(
            state.config.body_timeout_ms.max(1),
        )))
        .layer(from_fn(refuse_nul_paths))
        .layer(from_fn(normalize_error_bodies))
        .layer(CatchPanicLayer::custom(|_| {
            error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal error; see the server log for details.",
            )
        }))
        .layer(from_fn(log_request))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .with_state(state)
}

/// Identifiers never hold NUL characters, and PostgreSQL cannot compare text holding them:
/// a path with `%00` is refused before any handler or query sees it.
async fn refuse_nul_paths(req: Request<Body>, next: Next) -> Response {
    if crate::extract::contains_encoded_nul(req.uri().path()) {
        return error_response(
            StatusCode::BAD_REQUEST,
            "The request path must not contain NUL characters.",
        );
    }
    next.run(req).await
}

async fn fallback(req: Request<Body>) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &format!("No endpoint at {} {}.", req.method(), req.uri().path()),
    )
}

/// Runs every request inside a span carrying its request id, so that every log line it
/// causes (errors included) names the request; then logs one line per request: method, path,
/// status and duration. When neither is enabled, nothing is formatted or copied.
async fn log_request(req: Request<Body>, next: Next) -> Response {
    let span_on = tracing::enabled!(target: "quire::http", tracing::Level::ERROR);
    if !span_on {
        return next.run(req).await;
    }
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_string();
    let span = tracing::error_span!(target: "quire::http", "request", request_id = %id);
    async move {
        if !tracing::enabled!(target: "quire::http", tracing::Level::INFO) {
            return next.run(req).await;
        }
        let started = Instant::now();
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let res = next.run(req).await;
        tracing::info!(
            target: "quire::http",
            "{method} {path} {} {:.1}ms",
            res.status().as_u16(),
            started.elapsed().as_secs_f64() * 1000.0
        );
        res
    }
    .instrument(span)
    .await
}
