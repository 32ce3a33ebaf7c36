//! The authorization matrix generated from the route table: every operation of
//! `api::operations()` is called by every persona, and the answer must be the one written
//! for that operation in [`EXPECTED`]. A route without its row fails, and so does a row
//! naming no route.
//!
//! Personas, in the order of every row: the organization's admin; members whose
//! organization role is `create`, `edit`, `review`, `comment` and `read`; a guest granted
//! `edit` on the spaces under test (and nothing on collections); the admin of another
//! organization; and a caller without a token.
//!
//! Reads share one world (a space with merged content, a change request, comments and
//! replies, a collection, a team, an invite link). Every operation that writes gets fresh
//! targets per call, created by the admin, so that what one persona did cannot change what
//! the next one sees. A `204` from a delete by someone who may not delete (the target is
//! invisible to them, and deletes answer 204 for absent targets) must leave the target in
//! place.

use std::collections::{HashMap, HashSet};

use quire_server::api::operations;
use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

/// Column names of the matrix, in order.
const PERSONAS: [&str; 9] = [
    "admin",
    "creator",
    "editor",
    "reviewer",
    "commenter",
    "reader",
    "guest",
    "outsider",
    "anonymous",
];
const ADMIN: usize = 0;
const CREATOR: usize = 1;
const REVIEWER: usize = 3;
const READER: usize = 5;
const GUEST: usize = 6;
const OUTSIDER: usize = 7;

/// The expected status per operation, one column per persona (see [`PERSONAS`]):
/// admin, creator, editor, reviewer, commenter, reader, guest, outsider, anonymous.
#[rustfmt::skip]
const EXPECTED: &[(&str, [u16; 9])] = &[
    // Any authenticated user; the answer is scoped to the caller.
    ("getApiInformation",                     [200, 200, 200, 200, 200, 200, 200, 200, 401]),
    ("getAuthenticatedUser",                  [200, 200, 200, 200, 200, 200, 200, 200, 401]),
    ("listOrganizationsForAuthenticatedUser", [200, 200, 200, 200, 200, 200, 200, 200, 401]),
    ("createOrganization",                    [201, 201, 201, 201, 201, 201, 201, 201, 401]),
    ("getOrganizationsForEmailDomain",        [200, 200, 200, 200, 200, 200, 200, 200, 401]),
    // The admin's profile: visible to whoever shares an organization (404 for others),
    // editable by its owner alone.
    ("getUserById",                           [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("updateUserById",                        [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    // A link invite to a fresh organization of someone else: anyone with a token may join.
    ("joinOrganizationWithInvite",            [200, 200, 200, 200, 200, 200, 200, 200, 401]),
    // A public published site: any token resolves its URL.
    ("resolvePublishedContentByUrl",          [200, 200, 200, 200, 200, 200, 200, 200, 401]),
    // Link previews: any token; in a space, its readers.
    ("getEmbedByUrl",                         [200, 200, 200, 200, 200, 200, 200, 200, 401]),
    ("getEmbedByUrlInSpace",                  [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    // An app URL: its space for whoever reads the space.
    ("getContentByUrl",                       [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getPublishedContentByUrl",              [200, 200, 200, 200, 200, 200, 200, 200, 401]),

    // The organization.
    ("getOrganizationById",                   [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("updateOrganizationById",                [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listSpacesInOrganizationById",          [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("createSpace",                           [201, 201, 403, 403, 403, 403, 403, 404, 401]),
    ("listCollectionsInOrganizationById",     [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("createCollection",                      [201, 201, 403, 403, 403, 403, 403, 404, 401]),
    ("searchOrganizationContent",             [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listChangeRequestsForOrganization",     [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    // Members: guests never see who the organization's people are.
    ("listMembersInOrganizationById",         [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("getMemberInOrganizationById",           [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("listSpacesForOrganizationMember",       [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("listTeamsForOrganizationMember",        [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateMemberInOrganizationById",        [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("removeMemberFromOrganizationById",      [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("setUserAsSSOMemberForOrganization",     [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateOrganizationMemberLastSeenAt",    [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    // Invites are the admin's.
    ("inviteUsersToOrganization",             [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listOrganizationInviteLinks",           [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("createOrganizationInvite",              [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getOrganizationInviteLink",             [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateOrganizationInviteById",          [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteOrganizationInviteById",          [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    // Teams: members see them; admins (and team owners) manage them.
    ("listTeamsInOrganizationById",           [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("createOrganizationTeam",                [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getTeamInOrganizationById",             [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("listTeamMembersInOrganizationById",     [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateTeamInOrganizationById",          [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("removeTeamFromOrganizationById",        [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateMembersInOrganizationTeam",       [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("addMemberToOrganizationTeamById",       [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteMemberFromOrganizationTeamById",  [204, 403, 403, 403, 403, 403, 403, 404, 401]),

    // A space: organization roles reach it; the guest holds `edit` on it.
    ("getSpaceById",                          [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("updateSpaceById",                       [200, 200, 200, 200, 403, 403, 200, 404, 401]),
    ("deleteSpaceById",                       [204, 403, 403, 403, 403, 403, 403, 204, 401]),
    ("restoreSpace",                          [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    // Duplicating creates a space beside it: `create` in the organization.
    ("duplicateSpace",                        [201, 201, 403, 403, 403, 403, 403, 404, 401]),
    ("moveSpace",                             [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("transferSpace",                         [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("searchSpaceContent",                    [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("inviteToSpace",                         [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listUserPermissionsInSpace",            [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateUserPermissionInSpace",           [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("removeUserFromSpace",                   [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listTeamPermissionsInSpace",            [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateTeamPermissionInSpace",           [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("removeTeamFromSpace",                   [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listPermissionsAggregateInSpace",       [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    // Change requests: reading needs `read`, writing and merging `edit`.
    ("createChangeRequest",                   [201, 201, 201, 201, 403, 403, 201, 404, 401]),
    ("listChangeRequestsForSpace",            [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getChangeRequestById",                  [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("updateChangeRequestById",               [200, 200, 200, 200, 403, 403, 200, 404, 401]),
    ("updateChangeRequestContent",            [200, 200, 200, 200, 403, 403, 200, 404, 401]),
    ("updateChangeRequest",                   [200, 200, 200, 200, 403, 403, 200, 404, 401]),
    ("mergeChangeRequest",                    [200, 200, 200, 200, 403, 403, 200, 404, 401]),
    ("getChangeRequestChanges",               [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getContributorsByChangeRequestId",      [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getRevisionSemanticChanges",            [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listCommentersInSpace",                 [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listCommentersInChangeRequest",         [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    // Reviews: read to list, `review` to review, `edit` to request or withdraw reviewers
    // (the guest holds `edit` on the spaces under test).
    ("getReviewsByChangeRequestId",           [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("submitChangeRequestReview",             [201, 201, 403, 201, 403, 403, 403, 404, 401]),
    ("getRequestedReviewersByChangeRequestId", [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("requestReviewersForChangeRequest",      [200, 200, 200, 200, 403, 403, 200, 404, 401]),
    ("removeRequestedReviewerFromChangeRequest", [205, 205, 205, 205, 403, 403, 205, 404, 401]),
    // Imports change content: `edit` on the space (the page forms answer 201).
    ("importContent",                         [200, 200, 200, 200, 403, 403, 200, 404, 401]),
    ("importContentInPageById",               [201, 201, 201, 201, 403, 403, 201, 404, 401]),
    ("importContentInChangeRequest",          [200, 200, 200, 200, 403, 403, 200, 404, 401]),
    ("importContentInChangeRequestPageById",  [201, 201, 201, 201, 403, 403, 201, 404, 401]),
    // Git Sync: its state is read with `read`; setting it up takes the space's admins.
    ("getSpaceGitInfo",                       [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("importGitRepository",                   [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("exportToGitRepository",                 [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    // Content of the space, of a change request and of a revision.
    ("getCurrentRevision",                    [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listPages",                             [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listFiles",                             [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getFileById",                           [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getPageById",                           [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getPageByPath",                         [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getRevisionOfChangeRequestById",        [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listPagesInChangeRequest",              [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listFilesInChangeRequestById",          [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getFileInChangeRequestById",            [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getPageInChangeRequestById",            [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getPageInChangeRequestByPath",          [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getRevisionById",                       [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listPagesInRevisionById",               [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listFilesInRevisionById",               [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getFileInRevisionById",                 [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getPageInRevisionById",                 [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getPageInRevisionByPath",               [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getPageDocumentInRevisionById",         [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listRevisionPageMetaLinks",             [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getReusableContentById",                [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getReusableContentInChangeRequestById", [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getReusableContentInRevisionById",      [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getReusableContentDocumentInRevisionById", [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getDocumentById",                       [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getComputedRevision",                   [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getComputedDocument",                   [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    // Links and backlinks, and PDFs: reading needs `read`.
    ("listSpaceLinks",                        [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listChangeRequestLinks",                [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listPageLinksInSpace",                  [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listPageLinksInChangeRequest",          [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listSpacePageBacklinks",                [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listChangeRequestPageBacklinks",        [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listSpaceFileBacklinks",                [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("listChangeRequestFileBacklinks",        [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getSpacePDF",                           [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("getChangeRequestPDF",                   [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    // Templates change the space's content: `edit`.
    ("applyTemplateToSpace",                  [201, 201, 201, 201, 403, 403, 201, 404, 401]),
    // Comments: posting needs `comment`; editing is the author's (here the admin's);
    // deleting the author's or a space admin's.
    ("listCommentsInSpace",                   [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("postCommentInSpace",                    [200, 200, 200, 200, 200, 403, 200, 404, 401]),
    ("getCommentInSpace",                     [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("updateCommentInSpace",                  [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteCommentInSpace",                  [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listCommentRepliesInSpace",             [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("postCommentReplyInSpace",               [200, 200, 200, 200, 200, 403, 200, 404, 401]),
    ("getCommentReplyInSpace",                [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("updateCommentReplyInSpace",             [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteCommentReplyInSpace",             [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listCommentsInChangeRequest",           [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("postCommentInChangeRequest",            [200, 200, 200, 200, 200, 403, 200, 404, 401]),
    ("getCommentInChangeRequest",             [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("updateCommentInChangeRequest",          [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteCommentInChangeRequest",          [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listCommentRepliesInChangeRequest",     [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("postCommentReplyInChangeRequest",       [200, 200, 200, 200, 200, 403, 200, 404, 401]),
    ("getCommentReplyInChangeRequest",        [200, 200, 200, 200, 200, 200, 200, 404, 401]),
    ("updateCommentReplyInChangeRequest",     [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteCommentReplyInChangeRequest",     [204, 403, 403, 403, 403, 403, 403, 404, 401]),

    // A collection: organization roles reach it; the guest has nothing on it, so it is
    // invisible to them (and a delete of it answers 204 without deleting).
    ("getCollectionById",                     [200, 200, 200, 200, 200, 200, 404, 404, 401]),
    ("listSpacesInCollectionById",            [200, 200, 200, 200, 200, 200, 404, 404, 401]),
    ("updateCollectionById",                  [200, 403, 403, 403, 403, 403, 404, 404, 401]),
    ("deleteCollectionById",                  [204, 403, 403, 403, 403, 403, 204, 204, 401]),
    ("moveCollection",                        [200, 403, 403, 403, 403, 403, 404, 404, 401]),
    ("transferCollection",                    [200, 403, 403, 403, 403, 403, 404, 404, 401]),
    ("inviteToCollection",                    [204, 403, 403, 403, 403, 403, 404, 404, 401]),
    ("listUserPermissionsInCollection",       [200, 200, 200, 200, 200, 200, 404, 404, 401]),
    ("updateUserPermissionInCollection",      [204, 403, 403, 403, 403, 403, 404, 404, 401]),
    ("removeUserFromCollection",              [204, 403, 403, 403, 403, 403, 404, 404, 401]),
    ("listTeamPermissionsInCollection",       [200, 200, 200, 200, 200, 200, 404, 404, 401]),
    ("updateTeamPermissionInCollection",      [204, 403, 403, 403, 403, 403, 404, 404, 401]),
    ("removeTeamFromCollection",              [204, 403, 403, 403, 403, 403, 404, 404, 401]),
    ("listPermissionsAggregateInCollection",  [200, 200, 200, 200, 200, 200, 404, 404, 401]),

    // Sites: members read them (not guests: a site lists every space it holds);
    // organization admins change them. Share links are secrets: their list is the admins' too.
    ("listSites",                             [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("createSite",                            [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getSiteById",                           [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateSiteById",                        [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteSiteById",                        [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("publishSite",                           [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("unpublishSite",                         [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getSiteStructure",                      [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("sortSiteStructure",                     [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getSiteCustomizationById",              [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateSiteCustomizationById",           [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    // Custom hostnames: their site's organization's admins; to anyone else they do not
    // exist (a delete then answers 204, as for a hostname nobody holds).
    ("getCustomHostname",                     [200, 404, 404, 404, 404, 404, 404, 404, 401]),
    ("dnsRevalidateCustomHostname",           [204, 404, 404, 404, 404, 404, 404, 404, 401]),
    ("removeCustomHostname",                  [205, 204, 204, 204, 204, 204, 204, 204, 401]),
    // Uploads and custom fonts: members (not guests) see the fonts; admins, who edit the
    // sites' customization, upload and manage them.
    ("generateStorageUploadURL",              [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listCustomFonts",                       [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("createCustomFont",                      [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getCustomFont",                         [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateCustomFont",                      [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteCustomFont",                      [205, 403, 403, 403, 403, 403, 403, 404, 401]),
    // Subdomains are public addresses: any token may ask whose one is.
    ("getSubdomain",                          [200, 200, 200, 200, 200, 200, 200, 200, 401]),
    ("getPublishedContentSite",               [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("searchSiteContent",                     [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("listPermissionsAggregateInSite",        [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("getSiteAdaptiveSchema",                 [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateSiteAdaptiveSchema",              [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listSiteAdaptiveTemplateConditions",    [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("listSiteSpaces",                        [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("addSpaceToSite",                        [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateSiteSpaceById",                   [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteSiteSpaceById",                   [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("moveSiteSpace",                         [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getSiteSpaceCustomizationById",         [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("overrideSiteSpaceCustomizationById",    [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteSiteSpaceCustomizationById",      [205, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listSiteSections",                      [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("addSectionToSite",                      [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateSiteSectionById",                 [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteSiteSectionById",                 [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("moveSiteSection",                       [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listSiteSectionGroups",                 [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("addSectionGroupToSite",                 [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateSiteSectionGroupById",            [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteSiteSectionGroupById",            [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("addSectionToGroup",                     [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("removeSectionFromGroup",                [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("moveSiteSectionGroup",                  [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listSiteShareLinks",                    [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("createSiteShareLink",                   [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateSiteShareLinkById",               [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteSiteShareLinkById",               [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    // Outside MCP servers: their headers hold credentials, so even their reads are the admins'.
    ("listSiteMcpServers",                    [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("createSiteMcpServer",                   [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getSiteMcpServerById",                  [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateSiteMcpServerById",               [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteSiteMcpServerById",               [205, 403, 403, 403, 403, 403, 403, 404, 401]),
    // Redirects are site settings: members read them, admins change them.
    ("listSiteRedirects",                     [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("getSiteRedirectBySource",               [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("createSiteRedirect",                    [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateSiteRedirectById",                [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteSiteRedirectById",                [205, 403, 403, 403, 403, 403, 403, 404, 401]),
    // Insights: a published site's visitors send events without a token (the spec declares
    // no security); members read them.
    ("trackEventsInSiteById",                 [204, 204, 204, 204, 204, 204, 204, 204, 204]),
    ("aggregateSiteEvents",                   [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("listSiteVisitorSegments",               [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    // The visitor-token signing key is a secret too: even its read is the admins'.
    ("getSitePublishingAuthById",             [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateSitePublishingAuthById",          [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("regenerateSitePublishingAuthById",      [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    // A preview URL carries a token signed with that key.
    ("getSitePublishingPreviewById",          [200, 403, 403, 403, 403, 403, 403, 404, 401]),

    // Translations: members with a role see them; those who create content manage them
    // (a run creates a space).
    ("listTranslations",                      [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("createTranslation",                     [201, 201, 403, 403, 403, 403, 403, 404, 401]),
    ("getTranslation",                        [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("listGlossaryEntries",                   [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateGlossaryEntries",                 [204, 204, 403, 403, 403, 403, 403, 404, 401]),
    ("getGlossaryEntry",                      [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("updateTranslation",                     [200, 200, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteTranslation",                     [204, 204, 403, 403, 403, 403, 403, 404, 401]),
    ("runTranslation",                        [204, 204, 403, 403, 403, 403, 403, 404, 401]),
    // OpenAPI specifications: members (not guests) read them; members who create content
    // manage them.
    // SAML providers: organization admins alone manage them; the list of logins is public.
    ("listSAMLProvidersInOrganizationById",   [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("createOrganizationSAMLProvider",        [201, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("getOrganizationSAMLProviderById",       [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("updateOrganizationSAMLProvider",        [200, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteOrganizationSAMLProvider",        [204, 403, 403, 403, 403, 403, 403, 404, 401]),
    ("listSSOProviderLoginsInOrganization",   [200, 200, 200, 200, 200, 200, 200, 200, 200]),
    ("listOpenAPISpecs",                      [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("createOpenAPISpec",                     [201, 201, 403, 403, 403, 403, 403, 404, 401]),
    ("getOpenAPISpecBySlug",                  [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("createOrUpdateOpenAPISpecBySlug",       [201, 201, 403, 403, 403, 403, 403, 404, 401]),
    ("updateOpenAPISpecBySlug",               [200, 200, 403, 403, 403, 403, 403, 404, 401]),
    ("deleteOpenAPISpecBySlug",               [204, 204, 403, 403, 403, 403, 403, 404, 401]),
    ("listOpenAPISpecVersions",               [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("getLatestOpenAPISpecVersion",           [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("getLatestOpenAPISpecVersionContent",    [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("getOpenAPISpecVersionById",             [200, 200, 200, 200, 200, 200, 403, 404, 401]),
    ("getOpenAPISpecVersionContentById",      [200, 200, 200, 200, 200, 200, 403, 404, 401]),
];

/// A 2×3 PNG, the world's file.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZBwEEq5ZtpAAAAABJRU5ErkJggg==";

/// What the read operations share.
struct World {
    /// One per column; `None` for the caller without a token.
    people: Vec<Option<Persona>>,
    org: String,
    /// A second organization of the admin, where transfers go.
    target_org: String,
    /// A user outside the matrix who owns the organizations that personas join.
    host: Persona,
    space: String,
    coll: String,
    team: String,
    link: String,
    cr: String,
    page: String,
    path: String,
    file: String,
    revision: String,
    /// A reusable content of the space's revision, and a page's document.
    reusable: String,
    document: String,
    comment: String,
    reply: String,
    cr_comment: String,
    cr_reply: String,
    /// A published site with a section, a group, a share link and an adaptive schema.
    site: SiteFixture,
    /// A translation of the space.
    translation: String,
    /// A processed OpenAPI specification (its slug) and its version.
    spec: String,
    spec_version: String,
    /// A SAML provider.
    saml: String,
    /// A loopback server of import sources (`/doc.md`, `/two.zip`).
    imports: String,
}

/// A site and what it holds.
#[derive(Default, Clone)]
struct SiteFixture {
    site: String,
    /// Two site spaces of the first section.
    site_spaces: Vec<String>,
    /// Two sections; the first in the group.
    sections: Vec<String>,
    group: String,
    link: String,
    /// A redirect from `/old` to the first site space.
    redirect: String,
}

impl World {
    fn admin(&self) -> &Persona {
        self.people[ADMIN].as_ref().unwrap()
    }

    fn id_of(&self, column: usize) -> String {
        self.people[column].as_ref().unwrap().id.clone()
    }
}

async fn world(app: &TestApp) -> World {
    let two = crate::imports::zip_of(&[("a.md", b"# A\n"), ("b.md", b"# B\n")]);
    let kit = crate::imports::zip_of(&[
        (
            "uses.md",
            b"# Uses\n\n{% include \".gitbook/includes/note.md\" %}\n",
        ),
        (".gitbook/includes/note.md", b"# Note\n\nShared.\n"),
    ]);
    let imports = crate::loopback::serve(move |r| match r.path.as_str() {
        "/doc.md" => crate::loopback::Reply::ok("text/markdown", "# Imported\n"),
        "/kit.zip" => crate::loopback::Reply::ok("application/zip", kit.clone()),
        _ => crate::loopback::Reply::ok("application/zip", two.clone()),
    })
    .await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let mut people = vec![Some(admin.clone())];
    for (name, role) in [
        ("creator", json!("create")),
        ("editor", json!("edit")),
        ("reviewer", json!("review")),
        ("commenter", json!("comment")),
        ("reader", json!("read")),
        ("guest", json!(null)),
    ] {
        let p = app.persona(name).await;
        app.add_member(&admin, &org, &p, role).await;
        people.push(Some(p));
    }
    let outsider = app.persona("outsider").await;
    app.org(&outsider, "Elsewhere").await;
    people.push(Some(outsider));
    people.push(None);
    let target_org = app.org(&admin, "Target").await;
    let host = app.persona("host").await;
    let coll = app.collection(&admin, &org, "Docs", None).await;
    let team = id(&app
        .put(
            &admin,
            &format!("/v1/orgs/{org}/teams"),
            json!({ "title": "Writers" }),
        )
        .await
        .expect(201));
    let link = id(&app
        .post(
            &admin,
            &format!("/v1/orgs/{org}/link-invites"),
            json!({ "role": "read" }),
        )
        .await
        .expect(201));
    let mut w = World {
        people,
        org,
        target_org,
        host,
        space: String::new(),
        coll,
        team,
        link,
        cr: String::new(),
        page: String::new(),
        path: String::new(),
        file: String::new(),
        revision: String::new(),
        reusable: String::new(),
        document: String::new(),
        comment: String::new(),
        reply: String::new(),
        cr_comment: String::new(),
        cr_reply: String::new(),
        site: SiteFixture::default(),
        translation: String::new(),
        spec: String::new(),
        spec_version: String::new(),
        saml: String::new(),
        imports,
    };
    w.space = fresh_space(app, &w).await;
    let space = w.space.clone();
    // Content: a page and a file, merged into the space.
    let first = fresh_cr(app, &w, &space).await;
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/change-requests/{first}/content"),
        json!({ "changes": [
            { "operation": "insert_page", "title": "Intro", "document": { "markdown": "# Intro\n\nHello.\n" } },
            { "operation": "insert_files", "files": [{ "base64": PNG, "name": "pixel.png" }] }
        ] }),
    )
    .await
    .expect(200);
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/change-requests/{first}/merge"),
        json!({}),
    )
    .await
    .expect(200);
    let pages = app
        .get(&admin, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    w.page = id(&pages["pages"][0]);
    w.path = pages["pages"][0]["path"].as_str().unwrap().to_string();
    let files = app
        .get(&admin, &format!("/v1/spaces/{space}/content/files"))
        .await
        .expect(200);
    w.file = id(&files["items"][0]);
    // A reusable content, which only an import or a push makes.
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/content/import"),
        json!({ "url": format!("{}/kit.zip", w.imports), "source": "zip" }),
    )
    .await
    .expect(200);
    let revision = app
        .get(&admin, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    w.revision = id(&revision);
    w.reusable = id(&revision["reusableContents"][0]);
    w.document = revision["pages"][0]["documentId"]
        .as_str()
        .expect("a document page has a document id")
        .to_string();
    w.cr = fresh_cr(app, &w, &space).await;
    let space_comments = format!("/v1/spaces/{space}/comments");
    w.comment = fresh_comment(app, &w, &space_comments).await;
    w.reply = fresh_reply(app, &w, &space_comments, &w.comment).await;
    let cr_comments = format!("/v1/spaces/{space}/change-requests/{}/comments", w.cr);
    w.cr_comment = fresh_comment(app, &w, &cr_comments).await;
    w.cr_reply = fresh_reply(app, &w, &cr_comments, &w.cr_comment).await;
    w.site = fresh_site(app, &w).await;
    let site = format!("/v1/orgs/{}/sites/{}", w.org, w.site.site);
    app.post(&admin, &format!("{site}/publish"), json!({}))
        .await
        .expect(200);
    app.put(
        &admin,
        &format!("{site}/adaptive-schema"),
        json!({ "jsonSchema": { "type": "object", "properties": { "beta": { "type": "boolean" } } } }),
    )
    .await
    .expect(200);
    w.translation = fresh_translation(app, &w).await;
    w.saml = fresh_saml(app, &w).await;
    w.spec = fresh_spec(app, &w).await;
    let spec_path = format!("/v1/orgs/{}/openapi/{}", w.org, w.spec);
    for _ in 0..400 {
        quire_server::domain::jobs::run_due(&app.state)
            .await
            .unwrap();
        let spec = app.get(&admin, &spec_path).await.expect(200);
        if let Some(version) = spec["lastVersion"].as_str() {
            w.spec_version = version.to_string();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(!w.spec_version.is_empty(), "the world's spec was processed");
    w
}

/// A finished font upload of the world's organization, made by the admin: its key.
async fn fresh_font_upload(app: &TestApp, w: &World) -> String {
    let got = app
        .post(
            w.admin(),
            &format!("/v1/orgs/{}/storage/upload", w.org),
            json!({ "file": { "name": "a.woff2", "type": "font/woff2", "size": 8 }, "kind": "customization_font" }),
        )
        .await
        .expect(201);
    let res = reqwest::Client::new()
        .put(got["url"].as_str().unwrap())
        .body(b"wOF2\0\0\0\0".to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    got["key"].as_str().unwrap().to_string()
}

/// A custom font of the world's organization, made by the admin: its id.
async fn fresh_font(app: &TestApp, w: &World) -> String {
    let key = fresh_font_upload(app, w).await;
    id(&app
        .put(
            w.admin(),
            &format!("/v1/orgs/{}/fonts", w.org),
            json!({ "fontFamily": "Matrix", "fontFaces": [{ "weight": 400, "storageKey": key }] }),
        )
        .await
        .expect(201))
}

/// A translation of the world's space into French, made by the admin.
async fn fresh_translation(app: &TestApp, w: &World) -> String {
    id(&app
        .post(
            w.admin(),
            &format!("/v1/orgs/{}/translations", w.org),
            json!({ "source": { "space": w.space, "language": "en" }, "language": "fr" }),
        )
        .await
        .expect(201))
}

const SPEC: &str = "openapi: 3.1.0\ninfo: { title: Matrix, version: '1' }\npaths: {}\n";

/// A fresh slug for an OpenAPI specification.
fn fresh_slug() -> String {
    format!(
        "spec-{}",
        quire_server::ids::random_string(10).to_lowercase()
    )
}

/// An OpenAPI specification of the organization, made by the admin; returns its slug.
/// A SAML provider of the world's organization (label and sign-in URL only: pending), made by
/// the admin.
async fn fresh_saml(app: &TestApp, w: &World) -> String {
    id(&app
        .post(
            w.admin(),
            &format!("/v1/orgs/{}/saml", w.org),
            json!({ "label": "Matrix IdP", "ssoURL": "https://idp.example.test/sso" }),
        )
        .await
        .expect(201))
}

async fn fresh_spec(app: &TestApp, w: &World) -> String {
    let slug = fresh_slug();
    app.put(
        w.admin(),
        &format!("/v1/orgs/{}/openapi/{slug}", w.org),
        json!({ "source": { "text": SPEC } }),
    )
    .await
    .expect(201);
    slug
}

/// A site with two sections (the first holding two site spaces, in a group) and a share
/// link, made by the admin.
async fn fresh_site(app: &TestApp, w: &World) -> SiteFixture {
    let admin = w.admin();
    let other = app.space(admin, &w.org, "Other", None).await;
    let site = id(&app
        .post(
            admin,
            &format!("/v1/orgs/{}/sites", w.org),
            json!({ "title": "Docs", "spaces": [w.space, other] }),
        )
        .await
        .expect(201));
    let base = format!("/v1/orgs/{}/sites/{site}", w.org);
    let second = id(&app
        .post(
            admin,
            &format!("{base}/sections"),
            json!({ "spaceId": other }),
        )
        .await
        .expect(201));
    let sections = app
        .get(admin, &format!("{base}/sections"))
        .await
        .expect(200);
    let first = id(&sections["items"][0]);
    let site_spaces: Vec<String> = sections["items"][0]["siteSpaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(id)
        .collect();
    let group = id(&app
        .post(
            admin,
            &format!("{base}/section-groups"),
            json!({ "title": "Guides", "sections": [first] }),
        )
        .await
        .expect(201));
    let link = id(&app
        .post(
            admin,
            &format!("{base}/share-links"),
            json!({ "name": "Partners" }),
        )
        .await
        .expect(201));
    let redirect = id(&app
        .post(
            admin,
            &format!("{base}/redirects"),
            json!({ "source": "/old", "destination": { "kind": "site-space", "siteSpaceId": site_spaces[0] } }),
        )
        .await
        .expect(201));
    SiteFixture {
        site,
        site_spaces,
        sections: vec![first, second],
        group,
        link,
        redirect,
    }
}

/// A space at the organization's root, with the guest's `edit` grant.
async fn fresh_space(app: &TestApp, w: &World) -> String {
    let space = app.space(w.admin(), &w.org, "Fresh", None).await;
    app.post(
        w.admin(),
        &format!("/v1/spaces/{space}/permissions"),
        json!({ "role": "edit", "users": [w.id_of(GUEST)] }),
    )
    .await
    .expect(204);
    space
}

async fn fresh_collection(app: &TestApp, w: &World) -> String {
    app.collection(w.admin(), &w.org, "Fresh", None).await
}

async fn fresh_cr(app: &TestApp, w: &World, space: &str) -> String {
    id(&app
        .post(
            w.admin(),
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "Fresh" }),
        )
        .await
        .expect(201))
}

/// A comment by the admin under `base` (`.../comments`).
async fn fresh_comment(app: &TestApp, w: &World, base: &str) -> String {
    id(&app
        .post(
            w.admin(),
            base,
            json!({ "body": { "markdown": "A comment" } }),
        )
        .await
        .expect(200))
}

/// A reply by the admin to `comment` under `base` (`.../comments`).
async fn fresh_reply(app: &TestApp, w: &World, base: &str, comment: &str) -> String {
    id(&app
        .post(
            w.admin(),
            &format!("{base}/{comment}/replies"),
            json!({ "body": { "markdown": "A reply" } }),
        )
        .await
        .expect(200))
}

async fn fresh_team(app: &TestApp, w: &World) -> String {
    id(&app
        .put(
            w.admin(),
            &format!("/v1/orgs/{}/teams", w.org),
            json!({ "title": "Fresh" }),
        )
        .await
        .expect(201))
}

async fn fresh_link(app: &TestApp, w: &World) -> String {
    id(&app
        .post(
            w.admin(),
            &format!("/v1/orgs/{}/link-invites", w.org),
            json!({ "role": "read" }),
        )
        .await
        .expect(201))
}

/// A new `read` member who is none of the personas (created in storage: no token needed).
async fn fresh_member(app: &TestApp, w: &World) -> String {
    let email = format!(
        "member-{}@example.com",
        quire_server::ids::random_string(10).to_lowercase()
    );
    let mut tx = app.state.db.begin().await.unwrap();
    tx.touches(&[]);
    let user = quire_server::store::users::find_or_create(&mut tx, &email, None, 0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    app.post(
        w.admin(),
        &format!("/v1/orgs/{}/invites", w.org),
        json!({ "emails": [{ "email": email, "role": "read" }] }),
    )
    .await
    .expect(200);
    user.id.to_string()
}

/// One request of the matrix: path parameters, query, body, and where to look to see that
/// the target of a delete survived.
struct Call {
    params: HashMap<&'static str, String>,
    query: &'static str,
    body: Option<Value>,
    probe: Option<String>,
}

impl Call {
    fn set(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.params.insert(name, value.into());
        self
    }

    fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    fn probe(mut self, path: String) -> Self {
        self.probe = Some(path);
        self
    }

    fn query(mut self, query: &'static str) -> Self {
        self.query = query;
        self
    }
}

/// A fresh site with an MCP server, made by the admin: (site id, server id).
async fn fresh_mcp_server(app: &TestApp, w: &World) -> (String, String) {
    let site = fresh_site(app, w).await.site;
    let server = app
        .post(
            w.admin(),
            &format!("/v1/orgs/{}/sites/{site}/mcp-servers", w.org),
            json!({ "name": "Tools", "url": "https://mcp.example.com/", "headers": {} }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    (site, server)
}

/// The request for `op`: the world's targets for reads, fresh ones for writes. `None`
/// for a write without a fixture (the test fails: every write needs one).
async fn fixture(app: &TestApp, w: &World, op: &str, writes: bool) -> Option<Call> {
    let base = Call {
        params: HashMap::from([
            ("organizationId", w.org.clone()),
            ("spaceId", w.space.clone()),
            ("collectionId", w.coll.clone()),
            ("changeRequestId", w.cr.clone()),
            ("pageId", w.page.clone()),
            ("pagePath", w.path.clone()),
            ("fileId", w.file.clone()),
            ("revisionId", w.revision.clone()),
            ("reusableContentId", w.reusable.clone()),
            ("documentId", w.document.clone()),
            ("commentId", w.comment.clone()),
            ("commentReplyId", w.reply.clone()),
            ("teamId", w.team.clone()),
            ("inviteId", w.link.clone()),
            ("userId", w.id_of(ADMIN)),
            ("emailDomain", "example.com".to_string()),
            ("siteId", w.site.site.clone()),
            ("siteSpaceId", w.site.site_spaces[0].clone()),
            ("siteSectionId", w.site.sections[0].clone()),
            ("siteSectionGroupId", w.site.group.clone()),
            ("shareLinkId", w.site.link.clone()),
            ("siteRedirectId", w.site.redirect.clone()),
            ("translationId", w.translation.clone()),
            ("specSlug", w.spec.clone()),
            ("versionId", w.spec_version.clone()),
            ("samlProviderId", w.saml.clone()),
        ]),
        query: "",
        body: None,
        probe: None,
    };
    let space_comments = format!("/v1/spaces/{}/comments", w.space);
    let cr_comments = format!("/v1/spaces/{}/change-requests/{}/comments", w.space, w.cr);
    let in_cr = op.ends_with("InChangeRequest");
    let (comments, comment) = if in_cr {
        (&cr_comments, &w.cr_comment)
    } else {
        (&space_comments, &w.comment)
    };
    let call = match op {
        "searchSpaceContent" | "searchOrganizationContent" => base.query("?query=hello"),
        "getSiteMcpServerById" => {
            let (site, server) = fresh_mcp_server(app, w).await;
            base.set("siteId", site).set("siteMcpServerId", server)
        }
        "getSiteRedirectBySource" => base.query("?source=/old"),
        "getCommentInChangeRequest"
        | "listCommentRepliesInChangeRequest"
        | "getCommentReplyInChangeRequest" => base
            .set("commentId", &w.cr_comment)
            .set("commentReplyId", &w.cr_reply),
        "getSpaceGitInfo" => {
            // A space with a sync set up (its job fails: nothing listens there).
            let space = fresh_space(app, w).await;
            app.post(
                w.admin(),
                &format!("/v1/spaces/{space}/git/export"),
                json!({ "url": "http://127.0.0.1:9/r.git", "ref": "refs/heads/main", "commitMessage": "x" }),
            )
            .await
            .expect(204);
            base.set("spaceId", space)
        }
        "getCustomHostname" => {
            app.patch(
                w.admin(),
                &format!("/v1/orgs/{}/sites/{}", w.org, w.site.site),
                json!({ "hostname": "matrix.example.com" }),
            )
            .await
            .expect(200);
            base.set("hostname", "matrix.example.com")
        }
        "getSubdomain" => {
            app.patch(
                w.admin(),
                &format!("/v1/orgs/{}", w.org),
                json!({ "hostname": "matrixorg" }),
            )
            .await
            .expect(200);
            base.set("subdomain", "matrixorg")
        }
        "getGlossaryEntry" => {
            let glossary = format!("/v1/orgs/{}/translations-glossary", w.org);
            let listed = app.get(w.admin(), &glossary).await.expect(200);
            let id = match listed["items"][0]["id"].as_str() {
                Some(id) => id.to_string(),
                None => {
                    app.put(
                        w.admin(),
                        &glossary,
                        json!({ "operations": [
                            { "type": "insert", "translations": { "en": "tool", "fr": "outil" } }
                        ] }),
                    )
                    .await
                    .expect(204);
                    let listed = app.get(w.admin(), &glossary).await.expect(200);
                    id(&listed["items"][0])
                }
            };
            base.set("glossaryEntryId", id)
        }
        "getCustomFont" => base.set("fontId", fresh_font(app, w).await),
        "getPublishedContentByUrl" => {
            let query = format!("?url={}/sites/{}/", app.base, w.site.site);
            base.query(Box::leak(query.into_boxed_str()))
        }
        // Loopback: refused by the fetcher at once, previewed by its address.
        "getEmbedByUrl" | "getEmbedByUrlInSpace" => base.query("?url=http%3A%2F%2F127.0.0.1%3A9%2Fx"),
        "getContentByUrl" => {
            let query = format!("?url={}/s/{}", app.base, w.space);
            base.query(Box::leak(query.into_boxed_str()))
        }
        _ if !writes => base,

        // Reads by POST: the world's spec, computed.
        "getComputedRevision" | "getComputedDocument" => base.body(json!({
            "source": {
                "type": "builtin:openapi",
                "props": { "doc": "models", "models": true },
                "dependencies": { "spec": { "ref": { "kind": "openapi", "spec": w.spec } } }
            },
            "seed": "matrix"
        })),

        "updateUserById" => base.body(json!({ "displayName": "Admin" })),
        "createOrganization" => base.body(json!({ "title": "Mine" })),
        "joinOrganizationWithInvite" => {
            // One organization per call: two personas who joined the same one would share
            // an organization, which changes what they see of each other.
            let org = app.org(&w.host, "Joinable").await;
            let link = id(&app
                .post(
                    &w.host,
                    &format!("/v1/orgs/{org}/link-invites"),
                    json!({ "role": "read" }),
                )
                .await
                .expect(201));
            base.set("organizationId", org)
                .set("inviteId", link)
                .body(json!({}))
        }
        "updateOrganizationById" => base.body(json!({ "title": "Acme" })),
        "createSpace" | "createCollection" => base.body(json!({ "title": "New" })),
        "updateMemberInOrganizationById" => base
            .set("userId", fresh_member(app, w).await)
            .body(json!({ "role": "edit" })),
        "removeMemberFromOrganizationById" => {
            let member = fresh_member(app, w).await;
            let probe = format!("/v1/orgs/{}/members/{member}", w.org);
            base.set("userId", member).probe(probe)
        }
        "setUserAsSSOMemberForOrganization" => base
            .set("userId", fresh_member(app, w).await)
            .body(json!({})),
        "updateOrganizationMemberLastSeenAt" => base.body(json!({})),
        "inviteUsersToOrganization" => base.body(json!({ "emails": [format!(
            "invitee-{}@example.com",
            quire_server::ids::random_string(10).to_lowercase()
        )] })),
        "createOrganizationInvite" => base.body(json!({ "role": "read" })),
        "updateOrganizationInviteById" => base
            .set("inviteId", fresh_link(app, w).await)
            .body(json!({ "role": "comment" })),
        "deleteOrganizationInviteById" => {
            let link = fresh_link(app, w).await;
            let probe = format!("/v1/orgs/{}/link-invites/{link}", w.org);
            base.set("inviteId", link).probe(probe)
        }
        "createOrganizationTeam" => base.body(json!({ "title": "New" })),
        "updateTeamInOrganizationById" => base
            .set("teamId", fresh_team(app, w).await)
            .body(json!({ "title": "Renamed" })),
        "removeTeamFromOrganizationById" => {
            let team = fresh_team(app, w).await;
            let probe = format!("/v1/orgs/{}/teams/{team}", w.org);
            base.set("teamId", team).probe(probe)
        }
        "updateMembersInOrganizationTeam" => base
            .set("teamId", fresh_team(app, w).await)
            .body(json!({ "add": [w.id_of(READER)] })),
        "addMemberToOrganizationTeamById" => base
            .set("teamId", fresh_team(app, w).await)
            .set("userId", w.id_of(READER))
            .body(json!({ "role": "member" })),
        "deleteMemberFromOrganizationTeamById" => {
            let team = fresh_team(app, w).await;
            app.put(
                w.admin(),
                &format!(
                    "/v1/orgs/{}/teams/{team}/members/{}",
                    w.org,
                    w.id_of(READER)
                ),
                json!({}),
            )
            .await
            .expect(204);
            base.set("teamId", team).set("userId", w.id_of(READER))
        }

        "updateSpaceById" => base
            .set("spaceId", fresh_space(app, w).await)
            .body(json!({ "title": "Renamed" })),
        "deleteSpaceById" => {
            let space = fresh_space(app, w).await;
            let probe = format!("/v1/spaces/{space}");
            base.set("spaceId", space).probe(probe)
        }
        "restoreSpace" => {
            let space = fresh_space(app, w).await;
            app.delete(w.admin(), &format!("/v1/spaces/{space}"))
                .await
                .expect(204);
            base.set("spaceId", space).body(json!({}))
        }
        "duplicateSpace" => base.body(json!({})),
        "moveSpace" => base
            .set("spaceId", fresh_space(app, w).await)
            .body(json!({ "parent": w.coll })),
        "transferSpace" => base
            .set("spaceId", fresh_space(app, w).await)
            .body(json!({ "organization": w.target_org })),
        "inviteToSpace" => base
            .set("spaceId", fresh_space(app, w).await)
            .body(json!({ "role": "read", "users": [w.id_of(READER)] })),
        "updateUserPermissionInSpace" => base
            .set("spaceId", fresh_space(app, w).await)
            .set("userId", w.id_of(GUEST))
            .body(json!({ "role": "comment" })),
        "removeUserFromSpace" => base
            .set("spaceId", fresh_space(app, w).await)
            .set("userId", w.id_of(GUEST)),
        "updateTeamPermissionInSpace" | "removeTeamFromSpace" => {
            let space = fresh_space(app, w).await;
            app.post(
                w.admin(),
                &format!("/v1/spaces/{space}/permissions"),
                json!({ "role": "edit", "teams": [w.team] }),
            )
            .await
            .expect(204);
            let call = base.set("spaceId", space);
            if op == "updateTeamPermissionInSpace" {
                call.body(json!({ "role": "read" }))
            } else {
                call
            }
        }

        "applyTemplateToSpace" => {
            // Applying changes the space's content: a space of its own.
            let space = fresh_space(app, w).await;
            base.set("spaceId", space)
                .body(json!({ "id": "changelog" }))
        }
        "createChangeRequest" => base.body(json!({ "subject": "New" })),
        "updateChangeRequestById" => base
            .set("changeRequestId", fresh_cr(app, w, &w.space).await)
            .body(json!({ "subject": "Renamed" })),
        "updateChangeRequestContent" => base
            .set("changeRequestId", fresh_cr(app, w, &w.space).await)
            .body(json!({ "changes": [
                { "operation": "insert_page", "title": "More", "document": { "markdown": "More." } }
            ] })),
        "updateChangeRequest" => base
            .set("changeRequestId", fresh_cr(app, w, &w.space).await)
            .body(json!({})),
        "importGitRepository" | "exportToGitRepository" => base
            .set("spaceId", fresh_space(app, w).await)
            .body(json!({ "url": "http://127.0.0.1:9/r.git", "ref": "refs/heads/main", "commitMessage": "x" })),
        "importContent" => base
            .set("spaceId", fresh_space(app, w).await)
            .body(json!({ "url": format!("{}/doc.md", w.imports), "source": "markdown" })),
        "importContentInChangeRequest" => base
            .set("changeRequestId", fresh_cr(app, w, &w.space).await)
            .body(json!({ "url": format!("{}/doc.md", w.imports), "source": "markdown" })),
        "importContentInPageById" => {
            base.body(json!({ "url": format!("{}/two.zip", w.imports), "source": "zip" }))
        }
        "importContentInChangeRequestPageById" => base
            .set("changeRequestId", fresh_cr(app, w, &w.space).await)
            .body(json!({ "url": format!("{}/two.zip", w.imports), "source": "zip" })),
        "submitChangeRequestReview" => base.body(json!({ "status": "approved" })),
        "requestReviewersForChangeRequest" => {
            base.body(json!({ "users": [w.id_of(REVIEWER)] }))
        }
        "removeRequestedReviewerFromChangeRequest" => {
            // A fresh request to withdraw, so that each persona's answer is its own.
            let cr = fresh_cr(app, w, &w.space).await;
            app.post(
                w.admin(),
                &format!("/v1/spaces/{}/change-requests/{cr}/requested-reviewers", w.space),
                json!({ "users": [w.id_of(REVIEWER)] }),
            )
            .await
            .expect(200);
            base.set("changeRequestId", cr)
                .set("userId", w.id_of(REVIEWER))
        }
        "mergeChangeRequest" => {
            // Merging changes the space's content: a space of its own.
            let space = fresh_space(app, w).await;
            let cr = fresh_cr(app, w, &space).await;
            base.set("spaceId", space)
                .set("changeRequestId", cr)
                .body(json!({}))
        }

        "postCommentInSpace" | "postCommentInChangeRequest" => {
            base.body(json!({ "body": { "markdown": "Posted" } }))
        }
        "updateCommentInSpace" | "updateCommentInChangeRequest" => base
            .set("commentId", fresh_comment(app, w, comments).await)
            .body(json!({ "body": { "markdown": "Edited" } })),
        "deleteCommentInSpace" | "deleteCommentInChangeRequest" => {
            let c = fresh_comment(app, w, comments).await;
            let probe = format!("{comments}/{c}");
            base.set("commentId", c).probe(probe)
        }
        "postCommentReplyInSpace" | "postCommentReplyInChangeRequest" => base
            .set("commentId", comment)
            .body(json!({ "body": { "markdown": "Replied" } })),
        "updateCommentReplyInSpace" | "updateCommentReplyInChangeRequest" => base
            .set("commentId", comment)
            .set(
                "commentReplyId",
                fresh_reply(app, w, comments, comment).await,
            )
            .body(json!({ "body": { "markdown": "Edited" } })),
        "deleteCommentReplyInSpace" | "deleteCommentReplyInChangeRequest" => {
            let r = fresh_reply(app, w, comments, comment).await;
            let probe = format!("{comments}/{comment}/replies/{r}");
            base.set("commentId", comment)
                .set("commentReplyId", r)
                .probe(probe)
        }

        "updateCollectionById" => base
            .set("collectionId", fresh_collection(app, w).await)
            .body(json!({ "title": "Renamed" })),
        "deleteCollectionById" => {
            let coll = fresh_collection(app, w).await;
            let probe = format!("/v1/collections/{coll}");
            base.set("collectionId", coll).probe(probe)
        }
        "moveCollection" => base
            .set("collectionId", fresh_collection(app, w).await)
            .body(json!({ "parent": w.coll })),
        "transferCollection" => base
            .set("collectionId", fresh_collection(app, w).await)
            .body(json!({ "organization": w.target_org })),
        "inviteToCollection" => base
            .set("collectionId", fresh_collection(app, w).await)
            .body(json!({ "role": "read", "users": [w.id_of(READER)] })),
        "updateUserPermissionInCollection" | "removeUserFromCollection" => {
            let coll = fresh_collection(app, w).await;
            app.post(
                w.admin(),
                &format!("/v1/collections/{coll}/permissions"),
                json!({ "role": "comment", "users": [w.id_of(READER)] }),
            )
            .await
            .expect(204);
            let call = base
                .set("collectionId", coll)
                .set("userId", w.id_of(READER));
            if op == "updateUserPermissionInCollection" {
                call.body(json!({ "role": "edit" }))
            } else {
                call
            }
        }
        "updateTeamPermissionInCollection" | "removeTeamFromCollection" => {
            let coll = fresh_collection(app, w).await;
            app.post(
                w.admin(),
                &format!("/v1/collections/{coll}/permissions"),
                json!({ "role": "edit", "teams": [w.team] }),
            )
            .await
            .expect(204);
            let call = base.set("collectionId", coll);
            if op == "updateTeamPermissionInCollection" {
                call.body(json!({ "role": "read" }))
            } else {
                call
            }
        }

        "createSite" => base.body(json!({ "title": "New site" })),
        "resolvePublishedContentByUrl" => base.body(json!({
            "url": format!("{}/sites/{}/", app.base, w.site.site)
        })),
        "updateSiteById" => base
            .set("siteId", fresh_site(app, w).await.site)
            .body(json!({ "title": "Renamed" })),
        "deleteSiteById" => {
            let f = fresh_site(app, w).await;
            let probe = format!("/v1/orgs/{}/sites/{}", w.org, f.site);
            base.set("siteId", f.site).probe(probe)
        }
        "publishSite" | "unpublishSite" => base.set("siteId", fresh_site(app, w).await.site),
        "sortSiteStructure" => {
            let f = fresh_site(app, w).await;
            base.set("siteId", f.site).body(json!({
                "item": { "type": "site-section", "id": f.sections[1] },
                "position": { "before": { "type": "site-section-group", "id": f.group } }
            }))
        }
        "updateSiteCustomizationById" => base
            .set("siteId", fresh_site(app, w).await.site)
            .body(json!({ "title": "Docs", "themes": { "default": "dark", "toggeable": false } })),
        "updateSiteAdaptiveSchema" => base
            .set("siteId", fresh_site(app, w).await.site)
            .body(json!({ "jsonSchema": { "type": "object", "properties": { "pro": { "type": "boolean" } } } })),
        "addSpaceToSite" | "addSectionToSite" => base
            .set("siteId", fresh_site(app, w).await.site)
            .body(json!({ "spaceId": w.space })),
        "updateSiteSpaceById" | "deleteSiteSpaceById" | "moveSiteSpace" => {
            let f = fresh_site(app, w).await;
            let call = base
                .set("siteId", f.site)
                .set("siteSpaceId", f.site_spaces[1].clone());
            match op {
                "updateSiteSpaceById" => call.body(json!({ "path": "renamed" })),
                "moveSiteSpace" => call.body(json!({ "position": {
                    "before": { "type": "site-space", "siteSpace": f.site_spaces[0] }
                } })),
                _ => call,
            }
        }
        "overrideSiteSpaceCustomizationById" | "deleteSiteSpaceCustomizationById" => {
            let f = fresh_site(app, w).await;
            let ss = f.site_spaces[0].clone();
            let path = format!(
                "/v1/orgs/{}/sites/{}/site-spaces/{ss}/customization",
                w.org, f.site
            );
            let call = base.set("siteId", f.site).set("siteSpaceId", ss);
            if op == "overrideSiteSpaceCustomizationById" {
                call.body(json!({ "title": "Variant" }))
            } else {
                app.patch(w.admin(), &path, json!({ "title": "Variant" }))
                    .await
                    .expect(200);
                call
            }
        }
        "updateSiteSectionById" | "deleteSiteSectionById" | "moveSiteSection" => {
            let f = fresh_site(app, w).await;
            let call = base
                .set("siteId", f.site)
                .set("siteSectionId", f.sections[1].clone());
            match op {
                "updateSiteSectionById" => call.body(json!({ "title": "Renamed" })),
                "moveSiteSection" => call.body(json!({ "position": {
                    "before": { "type": "site-section", "siteSection": f.sections[0] }
                } })),
                _ => call,
            }
        }
        "addSectionGroupToSite" => base
            .set("siteId", fresh_site(app, w).await.site)
            .body(json!({ "title": "More" })),
        "updateSiteSectionGroupById"
        | "deleteSiteSectionGroupById"
        | "addSectionToGroup"
        | "removeSectionFromGroup"
        | "moveSiteSectionGroup" => {
            let f = fresh_site(app, w).await;
            let call = base
                .set("siteId", f.site)
                .set("siteSectionGroupId", f.group.clone())
                .set("siteSectionId", f.sections[0].clone());
            match op {
                "updateSiteSectionGroupById" => call.body(json!({ "title": "Renamed" })),
                "addSectionToGroup" => call.body(json!({ "sectionId": f.sections[1] })),
                "moveSiteSectionGroup" => call.body(json!({ "position": {
                    "after": { "type": "site-section", "id": f.sections[1] }
                } })),
                _ => call,
            }
        }
        "updateSitePublishingAuthById" => base
            .set("siteId", fresh_site(app, w).await.site)
            .body(json!({ "backend": "custom", "fallbackURL": "https://login.example.com/" })),
        "dnsRevalidateCustomHostname" | "removeCustomHostname" => {
            // An IP literal: the DNS check resolves it without asking any server.
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let host = format!("10.77.{}.{}", n / 250, n % 250 + 1);
            let f = fresh_site(app, w).await;
            app.patch(
                w.admin(),
                &format!("/v1/orgs/{}/sites/{}", w.org, f.site),
                json!({ "hostname": host }),
            )
            .await
            .expect(200);
            let call = base.set("hostname", host.clone());
            if op == "removeCustomHostname" {
                call.probe(format!("/v1/custom-hostnames/{host}"))
            } else {
                call.body(json!({}))
            }
        }
        "regenerateSitePublishingAuthById" => base.set("siteId", fresh_site(app, w).await.site),
        "createSiteShareLink" => base
            .set("siteId", fresh_site(app, w).await.site)
            .body(json!({ "name": "Friends" })),
        "updateSiteShareLinkById" | "deleteSiteShareLinkById" => {
            let f = fresh_site(app, w).await;
            let call = base.set("siteId", f.site).set("shareLinkId", f.link);
            if op == "updateSiteShareLinkById" {
                call.body(json!({ "active": false }))
            } else {
                call
            }
        }
        "updateGlossaryEntries" => base.body(json!({ "operations": [
            { "type": "insert", "translations": { "en": "term", "de": "Begriff" } }
        ] })),
        "searchSiteContent" => base.body(json!({ "query": "hello" })),
        "trackEventsInSiteById" => base.body(json!({ "events": [{
            "type": "page_view",
            "session": { "visitorId": "", "sessionId": "", "cookies": {}, "userAgent": "",
                "language": null, "referrer": null },
            "location": { "url": "https://docs.example.com/", "siteSection": null,
                "siteSpace": null, "siteShareKey": null, "space": null, "revision": null,
                "page": null }
        }] })),
        "aggregateSiteEvents" => base.body(json!({ "range": "last7Days" })),
        "generateStorageUploadURL" => base.body(json!({
            "file": { "name": "a.woff2", "type": "font/woff2", "size": 8 },
            "kind": "customization_font"
        })),
        "createCustomFont" => {
            let key = fresh_font_upload(app, w).await;
            base.body(json!({ "fontFamily": "New", "fontFaces": [{ "weight": 400, "storageKey": key }] }))
        }
        "updateCustomFont" => base
            .set("fontId", fresh_font(app, w).await)
            .body(json!({ "fontFamily": "Renamed" })),
        "deleteCustomFont" => {
            let font = fresh_font(app, w).await;
            let probe = format!("/v1/orgs/{}/fonts/{font}", w.org);
            base.set("fontId", font).probe(probe)
        }
        "createSiteMcpServer" => base
            .set("siteId", fresh_site(app, w).await.site)
            .body(json!({ "name": "Tools", "url": "https://mcp.example.com/", "headers": {} })),
        "updateSiteMcpServerById" | "deleteSiteMcpServerById" => {
            let (site, server) = fresh_mcp_server(app, w).await;
            let call = base.set("siteId", site).set("siteMcpServerId", server);
            if op == "updateSiteMcpServerById" {
                call.body(json!({ "name": "Renamed" }))
            } else {
                call
            }
        }
        "createSiteRedirect" => {
            let f = fresh_site(app, w).await;
            base.set("siteId", f.site).body(json!({
                "source": "/older",
                "destination": { "kind": "site-section", "siteSectionId": f.sections[1] }
            }))
        }
        "updateSiteRedirectById" | "deleteSiteRedirectById" => {
            let f = fresh_site(app, w).await;
            let call = base.set("siteId", f.site).set("siteRedirectId", f.redirect);
            if op == "updateSiteRedirectById" {
                call.body(json!({ "source": "/elsewhere" }))
            } else {
                call
            }
        }
        "createTranslation" => base.body(json!({
            "source": { "space": w.space, "language": "en" },
            "language": "de"
        })),
        "updateTranslation" => base
            .set("translationId", fresh_translation(app, w).await)
            .body(json!({ "instructions": { "object": "document", "data": {}, "nodes": [] } })),
        "deleteTranslation" | "runTranslation" => {
            base.set("translationId", fresh_translation(app, w).await)
        }
        "createOpenAPISpec" => {
            base.body(json!({ "slug": fresh_slug(), "source": { "text": SPEC } }))
        }
        "createOrUpdateOpenAPISpecBySlug" => base
            .set("specSlug", fresh_slug())
            .body(json!({ "source": { "text": SPEC } })),
        "updateOpenAPISpecBySlug" => base
            .set("specSlug", fresh_spec(app, w).await)
            .body(json!({ "visibility": "public" })),
        "deleteOpenAPISpecBySlug" => {
            let slug = fresh_spec(app, w).await;
            let probe = format!("/v1/orgs/{}/openapi/{slug}", w.org);
            base.set("specSlug", slug).probe(probe)
        }
        "createOrganizationSAMLProvider" => base.body(json!({ "label": "New IdP", "ssoURL": "https://idp.example.test/sso" })),
        "updateOrganizationSAMLProvider" => base
            .set("samlProviderId", fresh_saml(app, w).await)
            .body(json!({ "label": "Renamed" })),
        "deleteOrganizationSAMLProvider" => {
            let provider = fresh_saml(app, w).await;
            let probe = format!("/v1/orgs/{}/saml/{provider}", w.org);
            base.set("samlProviderId", provider).probe(probe)
        }
        _ => return None,
    };
    Some(call)
}

/// Deletes that a persona other than the admin may make: members who create content manage
/// the organization's OpenAPI specifications.
fn may_delete(op: &str, column: usize) -> bool {
    op == "deleteOpenAPISpecBySlug" && column == CREATOR
}

/// The route's path with `{name}` and `{*name}` segments filled from `params`.
fn fill(template: &str, params: &HashMap<&'static str, String>) -> String {
    template
        .split('/')
        .map(
            |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => {
                    let name = name.trim_start_matches('*');
                    params
                        .get(name)
                        .unwrap_or_else(|| panic!("no value for path parameter {name}"))
                        .clone()
                }
                None => seg.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn every_route_has_exactly_one_row() {
    let routes: HashSet<&str> = operations().iter().map(|r| r.operation).collect();
    let mut rows = HashSet::new();
    let mut problems = Vec::new();
    for (op, _) in EXPECTED {
        if !rows.insert(*op) {
            problems.push(format!("{op}: two rows"));
        }
        if !routes.contains(op) {
            problems.push(format!("{op}: a row for an operation that is not routed"));
        }
    }
    for op in &routes {
        if !rows.contains(op) {
            problems.push(format!("{op}: routed, but has no row in EXPECTED"));
        }
    }
    problems.sort();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn every_operation_answers_every_persona_as_expected() {
    // Imports read their sources from a loopback server.
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let w = world(&app).await;
    assert_personas_hold_their_roles(&app, &w).await;
    let expected: HashMap<&str, [u16; 9]> = EXPECTED.iter().copied().collect();
    let mut failures = Vec::new();
    let mut calls = 0;
    let routes = operations();
    for route in &routes {
        let op = route.operation;
        let Some(want) = expected.get(op) else {
            failures.push(format!("{op}: no row in EXPECTED"));
            continue;
        };
        let writes = route.method != Method::GET;
        for (column, who) in w.people.iter().enumerate() {
            let Some(call) = fixture(&app, &w, op, writes).await else {
                failures.push(format!("{op}: writes, but has no fixture"));
                break;
            };
            let path = format!("{}{}", fill(route.path, &call.params), call.query);
            let token = who.as_ref().map(|p| p.token.as_str());
            let res = app
                .call(route.method.clone(), &path, token, call.body.clone())
                .await;
            calls += 1;
            let want = want[column];
            let persona = PERSONAS[column];
            if res.status != want {
                failures.push(format!(
                    "{op} as {persona}: expected {want}, got {} {}",
                    res.status, res.body
                ));
                continue;
            }
            if want >= 400 && res.body["error"]["code"] != json!(want) {
                failures.push(format!("{op} as {persona}: error body {}", res.body));
            }
            // A delete that answered 204 to someone without the right left its target.
            if want == 204 && column != ADMIN && !may_delete(op, column) {
                if let Some(probe) = &call.probe {
                    let seen = app.get(w.admin(), probe).await;
                    if seen.status != 200 {
                        failures.push(format!(
                            "{op} as {persona}: answered 204 and the target is gone ({})",
                            seen.status
                        ));
                    }
                }
            }
        }
    }
    if failures.is_empty() {
        assert_eq!(calls, routes.len() * PERSONAS.len());
    }
    assert!(
        failures.is_empty(),
        "{} authorization mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The matrix's columns really are what they claim: the roles the world gave them.
async fn assert_personas_hold_their_roles(app: &TestApp, w: &World) {
    let members = app
        .get(w.admin(), &format!("/v1/orgs/{}/members?limit=100", w.org))
        .await
        .expect(200);
    let role_of = |column: usize| {
        let id = w.id_of(column);
        members["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["user"]["id"] == json!(id))
            .map(|m| m["role"].clone())
    };
    let roles: Vec<Option<Value>> = (0..OUTSIDER + 1).map(role_of).collect();
    assert_eq!(
        roles,
        vec![
            Some(json!("admin")),
            Some(json!("create")),
            Some(json!("edit")),
            Some(json!("review")),
            Some(json!("comment")),
            Some(json!("read")),
            Some(json!(null)),
            None,
        ]
    );
    let guest = w.people[GUEST].as_ref().unwrap();
    let space = app
        .get(guest, &format!("/v1/spaces/{}", w.space))
        .await
        .expect(200);
    assert_eq!(space["permissions"]["edit"], true);
    assert_eq!(space["permissions"]["admin"], false);
    assert!(w.people[OUTSIDER + 1].is_none());
}
