//! JSON shapes of the official resources, built from stored rows for one caller.

use serde::Serialize;
use serde_json::{json, Value};

use crate::clock::iso;
use crate::domain::access::grants::Grants;
use crate::domain::access::Role;
use crate::domain::access::SpaceCtx;
use crate::error::{ApiError, ApiResult};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store::change_requests::ChangeRequestRow;
use crate::store::collections::CollectionRow;
use crate::store::members::MemberRow;
use crate::store::orgs::OrgRow;
use crate::store::spaces::SpaceRow;
use crate::store::teams::TeamRow;
use crate::store::users::UserRow;
use crate::values::{ChangeRequestStatus, EditMode, Visibility};

/// `Urls` of a resource: its API location and, for most, its page in the app.
#[derive(Serialize)]
pub struct Urls {
    /// The resource in the API.
    pub location: String,
    /// The resource in the app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// The organization's logo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo: Option<String>,
    /// Where a site publishes the resource (spaces resolved with a share key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
}

impl Urls {
    fn of(state: &AppState, location: &str, app: Option<&str>) -> Self {
        Self {
            location: state.url(location),
            app: app.map(|a| state.url(a)),
            logo: None,
            published: None,
        }
    }
}

/// `User`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    object: &'static str,
    id: String,
    display_name: String,
    email: String,
    #[serde(rename = "photoURL", skip_serializing_if = "Option::is_none")]
    photo_url: Option<String>,
    urls: Urls,
}

/// `User`.
pub fn user(state: &AppState, id: &str, email: &str, name: &str, photo: Option<&str>) -> User {
    User {
        object: "user",
        id: id.to_string(),
        display_name: name.to_string(),
        email: email.to_string(),
        photo_url: photo.map(str::to_string),
        urls: Urls::of(state, &format!("/v1/users/{id}"), None),
    }
}

/// `User` from a user row.
pub fn user_row(state: &AppState, u: &UserRow) -> User {
    user(
        state,
        &u.id,
        &u.email,
        &u.display_name,
        u.photo_url.as_deref(),
    )
}

/// What the caller may do in an organization (`Organization.permissions`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrgPermissions {
    view: bool,
    access: bool,
    admin: bool,
    own_team: bool,
    create_content: bool,
    #[serde(rename = "createOpenAPISpec")]
    create_openapi_spec: bool,
    ingest_conversations: bool,
    view_billing: bool,
    list_members: bool,
    list_teams: bool,
    list_integrations: bool,
    list_installations: bool,
    install_integration: bool,
}

impl OrgPermissions {
    /// The permissions of a caller holding `role` (`None`: guest).
    pub fn of(role: Option<Role>) -> Self {
        let admin = role == Some(Role::Admin);
        let non_guest = role.is_some();
        Self {
            view: true,
            access: true,
            admin,
            own_team: admin,
            create_content: role.is_some_and(|r| r >= Role::Create),
            create_openapi_spec: role.is_some_and(|r| r >= Role::Create),
            ingest_conversations: admin,
            view_billing: admin,
            list_members: non_guest,
            list_teams: non_guest,
            list_integrations: non_guest,
            list_installations: admin,
            install_integration: admin,
        }
    }

    /// Nothing at all: an organization seen only through a shared e-mail domain.
    pub fn nothing() -> Self {
        Self {
            view: false,
            access: false,
            admin: false,
            own_team: false,
            create_content: false,
            create_openapi_spec: false,
            ingest_conversations: false,
            view_billing: false,
            list_members: false,
            list_teams: false,
            list_integrations: false,
            list_installations: false,
            install_integration: false,
        }
    }
}

/// `Organization.trial`.
#[derive(Serialize)]
pub struct Trial {
    status: &'static str,
    count: i64,
}

/// `Organization.mergeRules`.
#[derive(Serialize)]
pub struct MergeRules {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// `Organization`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    object: &'static str,
    id: String,
    title: String,
    created_at: String,
    email_domains: Vec<String>,
    #[serde(rename = "type")]
    kind: &'static str,
    default_role: Option<String>,
    sso: bool,
    ai: bool,
    invite_links: bool,
    plan: &'static str,
    merge_rules: MergeRules,
    urls: Urls,
    trial: Trial,
    /// What the caller may do.
    pub permissions: OrgPermissions,
    #[serde(skip_serializing_if = "Option::is_none")]
    hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_content: Option<Value>,
}

/// `Organization`, with `permissions` for a caller holding `role` (`None`: guest).
pub fn organization(state: &AppState, org: &OrgRow, role: Option<Role>) -> ApiResult<Organization> {
    let mut urls = Urls::of(
        state,
        &format!("/v1/orgs/{}", org.id),
        Some(&format!("/o/{}", org.id)),
    );
    urls.logo.clone_from(&org.logo_url);
    let default_content = match org.default_content.as_deref() {
        Some(c) => Some(serde_json::from_str::<Value>(c).map_err(ApiError::internal)?),
        None => None,
    };
    Ok(Organization {
        object: "organization",
        id: org.id.to_string(),
        title: org.title.clone(),
        created_at: iso(org.created_at),
        email_domains: org.domains().map_err(ApiError::internal)?,
        kind: "business",
        default_role: org.default_role.clone(),
        sso: org.sso != 0,
        ai: org.ai != 0,
        invite_links: org.invite_links != 0,
        plan: "free",
        merge_rules: MergeRules { kind: "none" },
        urls,
        trial: Trial {
            status: "notapplicable",
            count: 0,
        },
        permissions: OrgPermissions::of(role),
        hostname: org.hostname.clone(),
        default_content,
    })
}

/// `OrganizationMember`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    object: &'static str,
    id: String,
    role: Option<String>,
    user: User,
    disabled: bool,
    joined_at: String,
    sso: bool,
    spaces: i64,
    teams: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_seen_at: Option<String>,
}

/// `OrganizationMember`.
pub fn member(state: &AppState, m: &MemberRow) -> Member {
    Member {
        object: "member",
        id: m.user_id.to_string(),
        role: m.role.clone(),
        user: user(
            state,
            &m.user_id,
            &m.email,
            &m.display_name,
            m.photo_url.as_deref(),
        ),
        disabled: false,
        joined_at: iso(m.joined_at),
        sso: m.sso != 0,
        spaces: m.spaces,
        teams: m.teams,
        last_seen_at: m.last_seen_at.map(iso),
    }
}

/// `OrganizationTeam.permissions`.
#[derive(Serialize)]
pub struct TeamPermissions {
    admin: bool,
    view: bool,
}

/// `OrganizationTeam`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Team {
    object: &'static str,
    id: String,
    title: String,
    members: i64,
    spaces: i64,
    created_at: String,
    permissions: TeamPermissions,
}

/// `OrganizationTeam`; `can_manage` says whether the caller administers it.
pub fn team(t: &TeamRow, can_manage: bool) -> Team {
    Team {
        object: "team",
        id: t.id.clone(),
        title: t.title.clone(),
        members: t.members,
        spaces: t.spaces,
        created_at: iso(t.created_at),
        permissions: TeamPermissions {
            admin: can_manage,
            view: true,
        },
    }
}

/// A 201 answer with the new resource and its `Location`.
pub fn created(location: &str, body: impl Serialize) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        axum::http::StatusCode::CREATED,
        [(axum::http::header::LOCATION, location.to_string())],
        crate::http::json::Json(body),
    )
        .into_response()
}

/// JSON of a stored default level: `inherit`, a role, or `null`.
pub fn default_level(level: Option<&str>) -> Value {
    match level {
        Some(level) => json!(level),
        None => Value::Null,
    }
}

/// `Space.permissions`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpacePermissions {
    view: bool,
    access: bool,
    admin: bool,
    view_invite_links: bool,
    edit: bool,
    trigger_git_sync: bool,
    comment: bool,
    merge: bool,
    review: bool,
    install_integration: bool,
}

/// `Space`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Space {
    object: &'static str,
    id: String,
    title: String,
    emoji: String,
    visibility: Visibility,
    created_at: String,
    updated_at: String,
    edit_mode: EditMode,
    urls: Urls,
    organization: String,
    revision: String,
    default_level: Option<String>,
    comments: i64,
    change_requests: i64,
    change_requests_open: i64,
    change_requests_draft: i64,
    permissions: SpacePermissions,
    #[serde(skip_serializing_if = "Option::is_none")]
    deleted_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    language: Option<String>,
}

impl Space {
    /// Sets the published URL of the space (`urls.published`).
    pub fn with_published(mut self, url: Option<String>) -> Self {
        self.urls.published = url;
        self
    }
}

/// [`space`] with the space's count of open comments, read through the access cache.
pub async fn space_counted(state: &AppState, s: &SpaceRow, role: Role) -> ApiResult<Space> {
    let comments = crate::domain::access::space_comments(state, &s.id).await?;
    Ok(space(state, s, comments, role))
}

/// `Space`, with `permissions` for a caller holding `role` on it, showing `comments` open
/// comments (kept apart from the row: see `store::spaces::comments`).
pub fn space(state: &AppState, s: &SpaceRow, comments: i64, role: Role) -> Space {
    let live = s.deleted_at.is_none();
    let editable = live && s.edit_mode == EditMode::Live;
    let admin = role >= Role::Admin;
    Space {
        object: "space",
        id: s.id.clone(),
        title: s.title.clone(),
        emoji: s.emoji.clone().unwrap_or_default(),
        visibility: s.visibility,
        created_at: iso(s.created_at),
        updated_at: iso(s.updated_at),
        edit_mode: s.edit_mode,
        urls: Urls::of(
            state,
            &format!("/v1/spaces/{}", s.id),
            Some(&format!("/s/{}", s.id)),
        ),
        organization: s.org_id.to_string(),
        revision: s.revision_id.clone(),
        default_level: s.default_level.clone(),
        comments,
        change_requests: s.change_requests,
        change_requests_open: s.change_requests_open,
        change_requests_draft: s.change_requests_draft,
        permissions: SpacePermissions {
            view: true,
            access: true,
            admin,
            view_invite_links: admin,
            edit: editable && role >= Role::Edit,
            trigger_git_sync: editable && role >= Role::Edit,
            comment: live && role >= Role::Comment,
            merge: editable && role >= Role::Edit,
            review: live && role >= Role::Review,
            install_integration: live && admin,
        },
        deleted_at: s.deleted_at.map(iso),
        parent: s.parent_id.clone(),
        language: s.language.clone(),
    }
}

/// `Collection.permissions`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CollectionPermissions {
    view: bool,
    admin: bool,
    view_invite_links: bool,
    create: bool,
}

/// `Collection`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Collection {
    object: &'static str,
    id: String,
    title: String,
    organization: String,
    default_level: Option<String>,
    urls: Urls,
    permissions: CollectionPermissions,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
}

/// `Collection`, with `permissions` for a caller holding `role` on it.
pub fn collection(state: &AppState, c: &CollectionRow, role: Role) -> Collection {
    let admin = role >= Role::Admin;
    Collection {
        object: "collection",
        id: c.id.clone(),
        title: c.title.clone(),
        organization: c.org_id.to_string(),
        default_level: c.default_level.clone(),
        urls: Urls::of(
            state,
            &format!("/v1/collections/{}", c.id),
            Some(&format!("/c/{}", c.id)),
        ),
        permissions: CollectionPermissions {
            view: true,
            admin,
            view_invite_links: admin,
            create: role >= Role::Create,
        },
        description: c.description.clone(),
        parent: c.parent_id.clone(),
    }
}

/// `ChangeRequest`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeRequest {
    object: &'static str,
    id: String,
    number: i64,
    status: ChangeRequestStatus,
    subject: String,
    created_by: User,
    created_at: String,
    updated_at: String,
    space: String,
    revision: String,
    revision_initial: String,
    revision_merged_ancestor: String,
    comments: i64,
    outdated: bool,
    urls: Urls,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision_merged: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    merged_at: Option<String>,
}

/// `ChangeRequest`; `space_revision` is the space's current revision (for `outdated`).
pub fn change_request(
    state: &AppState,
    c: &ChangeRequestRow,
    creator: Option<&UserRow>,
    space_revision: &str,
) -> ChangeRequest {
    let created_by = match creator {
        Some(u) => user_row(state, u),
        None => user(state, &c.created_by, "", "Unknown user", None),
    };
    ChangeRequest {
        object: "change-request",
        id: c.id.clone(),
        number: c.number,
        status: c.status,
        subject: c.subject.clone(),
        created_by,
        created_at: iso(c.created_at),
        updated_at: iso(c.updated_at),
        space: c.space_id.clone(),
        revision: c.revision_id.clone(),
        revision_initial: c.revision_initial.clone(),
        revision_merged_ancestor: c.revision_base.clone(),
        comments: c.comments,
        outdated: c.status != ChangeRequestStatus::Merged && c.revision_base != space_revision,
        urls: Urls::of(
            state,
            &format!("/v1/spaces/{}/change-requests/{}", c.space_id, c.id),
            Some(&format!("/s/{}/~/changes/{}", c.space_id, c.number)),
        ),
        revision_merged: c.revision_merged.clone(),
        merged_at: c.merged_at.map(iso),
    }
}

/// One page of the spaces the caller can see, keyed by `(position, id)`.
pub fn visible_page(
    state: &AppState,
    page: &PageRequest,
    scope: &str,
    grants: &Grants,
    spaces: Vec<(SpaceRow, i64)>,
) -> ApiResult<List<Space>> {
    let after = page.after::<(i64, String)>(scope)?;
    let visible: Vec<(SpaceRow, i64, Role)> = spaces
        .into_iter()
        .filter_map(|(s, comments)| grants.space_role(&s).map(|r| (s, comments, r)))
        .collect();
    let count = visible.len() as i64;
    let rows = visible
        .into_iter()
        .filter(|(s, _, _)| match &after {
            Some((pos, id)) => (s.position, &s.id) > (*pos, id),
            None => true,
        })
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .map(|(s, comments, role)| {
            let key = (s.position, s.id.clone());
            (space(state, &s, comments, role), key)
        })
        .collect();
    page.finish(scope, rows, count)
}

/// Renders one change request.
pub async fn change_request_json(
    state: &AppState,
    ctx: &SpaceCtx,
    c: &ChangeRequestRow,
) -> ApiResult<ChangeRequest> {
    let creator = crate::domain::access::person(state, &c.created_by).await?;
    let space_revision =
        crate::domain::change_requests::current_revision(state, &ctx.space.id).await?;
    Ok(change_request(state, c, creator.as_ref(), &space_revision))
}

// Search results, after the official `SearchSpaceResult`, `SearchPageResult` and
// `SearchSectionResult` (with Quire's `description`, `score`, `rank`, `resultType` and
// `ancestors` beside them): the organization's, the space's and the site's searches answer them.

/// The `urls` of a result.
#[derive(Serialize)]
pub struct AppUrl {
    /// Its address in the app.
    pub app: String,
}

/// An ancestor of a result page.
#[derive(Serialize)]
pub struct Ancestor {
    pub title: String,
}

/// `SearchSectionResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchSectionResult {
    pub id: String,
    pub title: String,
    pub path: String,
    pub body: String,
    pub score: f64,
    /// Always `section`.
    pub result_type: &'static str,
    pub urls: AppUrl,
}

/// `SearchPageResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchPageResult {
    pub id: String,
    pub title: String,
    pub description: String,
    pub path: String,
    pub score: f64,
    /// One-based position in the whole ranking.
    pub rank: usize,
    /// `page` or `section`.
    pub result_type: &'static str,
    pub ancestors: Vec<Ancestor>,
    pub sections: Vec<SearchSectionResult>,
    pub urls: AppUrl,
}

/// `SearchSpaceResult`: the results of one space in an organization's or a site's search.
#[derive(Serialize)]
pub struct SearchSpaceResult {
    /// Always `space`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    pub title: String,
    /// The score of its best page.
    pub score: f64,
    pub pages: Vec<SearchPageResult>,
}

impl From<crate::domain::search::query::FoundSection> for SearchSectionResult {
    fn from(s: crate::domain::search::query::FoundSection) -> Self {
        Self {
            id: s.id,
            title: s.title,
            path: s.path,
            body: s.body,
            score: s.score,
            result_type: "section",
            urls: AppUrl { app: s.url },
        }
    }
}

impl From<crate::domain::search::query::FoundPage> for SearchPageResult {
    fn from(p: crate::domain::search::query::FoundPage) -> Self {
        Self {
            id: p.id,
            title: p.title,
            description: p.description,
            path: p.path,
            score: p.score,
            rank: p.position + 1,
            result_type: p.result_type,
            ancestors: p
                .ancestors
                .into_iter()
                .map(|title| Ancestor { title })
                .collect(),
            sections: p.sections.into_iter().map(Into::into).collect(),
            urls: AppUrl { app: p.url },
        }
    }
}
