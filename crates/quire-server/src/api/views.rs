//! JSON shapes of the official resources, built from stored rows for one caller.

use serde_json::{json, Value};

use crate::clock::iso;
use crate::domain::access::grants::Grants;
use crate::domain::access::Role;
use crate::domain::access::SpaceCtx;
use crate::error::{ApiError, ApiResult};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store::change_requests::ChangeRequestRow;
use crate::store::members::MemberRow;
use crate::store::orgs::OrgRow;
use crate::store::spaces::SpaceRow;
use crate::store::teams::TeamRow;
use crate::store::users::UserRow;
use crate::values::{ChangeRequestStatus, EditMode};

/// `User`.
pub fn user(state: &AppState, id: &str, email: &str, name: &str, photo: Option<&str>) -> Value {
    let mut v = json!({
        "object": "user",
        "id": id,
        "displayName": name,
        "email": email,
        "urls": { "location": state.url(&format!("/v1/users/{id}")) },
    });
    if let Some(photo) = photo {
        v["photoURL"] = json!(photo);
    }
    v
}

/// `User` from a user row.
pub fn user_row(state: &AppState, u: &UserRow) -> Value {
    user(
        state,
        &u.id,
        &u.email,
        &u.display_name,
        u.photo_url.as_deref(),
    )
}

/// `Organization`, with `permissions` for a caller holding `role` (`None`: guest).
pub fn organization(state: &AppState, org: &OrgRow, role: Option<Role>) -> ApiResult<Value> {
    let admin = role == Some(Role::Admin);
    let non_guest = role.is_some();
    let creator = role.is_some_and(|r| r >= Role::Create);
    let mut v = json!({
        "object": "organization",
        "id": org.id,
        "title": org.title,
        "createdAt": iso(org.created_at),
        "emailDomains": org.domains().map_err(ApiError::internal)?,
        "type": "business",
        "defaultRole": org.default_role,
        "sso": org.sso != 0,
        "ai": org.ai != 0,
        "inviteLinks": org.invite_links != 0,
        "plan": "free",
        "mergeRules": { "type": "none" },
        "urls": {
            "location": state.url(&format!("/v1/orgs/{}", org.id)),
            "app": state.url(&format!("/o/{}", org.id)),
        },
        "trial": { "status": "notapplicable", "count": 0 },
        "permissions": {
            "view": true,
            "access": true,
            "admin": admin,
            "ownTeam": admin,
            "createContent": creator,
            "createOpenAPISpec": creator,
            "ingestConversations": admin,
            "viewBilling": admin,
            "listMembers": non_guest,
            "listTeams": non_guest,
            "listIntegrations": non_guest,
            "listInstallations": admin,
            "installIntegration": admin,
        },
    });
    if let Some(hostname) = &org.hostname {
        v["hostname"] = json!(hostname);
    }
    if let Some(content) = org
        .default_content
        .as_deref()
        .and_then(|c| serde_json::from_str::<Value>(c).ok())
    {
        v["defaultContent"] = content;
    }
    if let Some(logo) = &org.logo_url {
        v["urls"]["logo"] = json!(logo);
    }
    Ok(v)
}

/// `OrganizationMember`.
pub fn member(state: &AppState, m: &MemberRow) -> Value {
    let mut v = json!({
        "object": "member",
        "id": m.user_id,
        "role": m.role,
        "user": user(state, &m.user_id, &m.email, &m.display_name, m.photo_url.as_deref()),
        "disabled": false,
        "joinedAt": iso(m.joined_at),
        "sso": m.sso != 0,
        "spaces": m.spaces,
        "teams": m.teams,
    });
    if let Some(seen) = m.last_seen_at {
        v["lastSeenAt"] = json!(iso(seen));
    }
    v
}

/// `OrganizationTeam`; `can_manage` says whether the caller administers it.
pub fn team(t: &TeamRow, can_manage: bool) -> Value {
    json!({
        "object": "team",
        "id": t.id,
        "title": t.title,
        "members": t.members,
        "spaces": t.spaces,
        "createdAt": iso(t.created_at),
        "permissions": { "admin": can_manage, "view": true },
    })
}

/// A 201 answer with the new resource and its `Location`.
pub fn created(location: &str, body: Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        axum::http::StatusCode::CREATED,
        [(axum::http::header::LOCATION, location.to_string())],
        axum::Json(body),
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

/// `Space`, with `permissions` for a caller holding `role` on it.
pub fn space(state: &AppState, s: &crate::store::spaces::SpaceRow, role: Role) -> Value {
    let live = s.deleted_at.is_none();
    let editable = live && s.edit_mode == EditMode::Live;
    let admin = role >= Role::Admin;
    let mut v = json!({
        "object": "space",
        "id": s.id,
        "title": s.title,
        "emoji": s.emoji.clone().unwrap_or_default(),
        "visibility": s.visibility,
        "createdAt": iso(s.created_at),
        "updatedAt": iso(s.updated_at),
        "editMode": s.edit_mode,
        "urls": {
            "location": state.url(&format!("/v1/spaces/{}", s.id)),
            "app": state.url(&format!("/s/{}", s.id)),
        },
        "organization": s.org_id,
        "revision": s.revision_id,
        "defaultLevel": default_level(s.default_level.as_deref()),
        "comments": s.comments,
        "changeRequests": s.change_requests,
        "changeRequestsOpen": s.change_requests_open,
        "changeRequestsDraft": s.change_requests_draft,
        "permissions": {
            "view": true,
            "access": true,
            "admin": admin,
            "viewInviteLinks": admin,
            "edit": editable && role >= Role::Edit,
            "triggerGitSync": editable && role >= Role::Edit,
            "comment": live && role >= Role::Comment,
            "merge": editable && role >= Role::Edit,
            "review": live && role >= Role::Review,
            "installIntegration": live && admin,
        },
    });
    if let Some(deleted) = s.deleted_at {
        v["deletedAt"] = json!(iso(deleted));
    }
    if let Some(parent) = &s.parent_id {
        v["parent"] = json!(parent);
    }
    if let Some(language) = &s.language {
        v["language"] = json!(language);
    }
    v
}

/// `Collection`, with `permissions` for a caller holding `role` on it.
pub fn collection(
    state: &AppState,
    c: &crate::store::collections::CollectionRow,
    role: Role,
) -> Value {
    let admin = role >= Role::Admin;
    let mut v = json!({
        "object": "collection",
        "id": c.id,
        "title": c.title,
        "organization": c.org_id,
        "defaultLevel": default_level(c.default_level.as_deref()),
        "urls": {
            "location": state.url(&format!("/v1/collections/{}", c.id)),
            "app": state.url(&format!("/c/{}", c.id)),
        },
        "permissions": {
            "view": true,
            "admin": admin,
            "viewInviteLinks": admin,
            "create": role >= Role::Create,
        },
    });
    if let Some(description) = &c.description {
        v["description"] = json!(description);
    }
    if let Some(parent) = &c.parent_id {
        v["parent"] = json!(parent);
    }
    v
}

/// `ChangeRequest`; `space_revision` is the space's current revision (for `outdated`).
pub fn change_request(
    state: &AppState,
    c: &crate::store::change_requests::ChangeRequestRow,
    creator: Option<&UserRow>,
    space_revision: &str,
) -> Value {
    let creator = match creator {
        Some(u) => user_row(state, u),
        None => user(state, &c.created_by, "", "Unknown user", None),
    };
    let mut v = json!({
        "object": "change-request",
        "id": c.id,
        "number": c.number,
        "status": c.status,
        "subject": c.subject,
        "createdBy": creator,
        "createdAt": iso(c.created_at),
        "updatedAt": iso(c.updated_at),
        "space": c.space_id,
        "revision": c.revision_id,
        "revisionInitial": c.revision_initial,
        "revisionMergedAncestor": c.revision_base,
        "comments": c.comments,
        "outdated": c.status != ChangeRequestStatus::Merged && c.revision_base != space_revision,
        "urls": {
            "app": state.url(&format!("/s/{}/~/changes/{}", c.space_id, c.number)),
            "location": state.url(&format!("/v1/spaces/{}/change-requests/{}", c.space_id, c.id)),
        },
    });
    if let Some(merged) = &c.revision_merged {
        v["revisionMerged"] = json!(merged);
    }
    if let Some(at) = c.merged_at {
        v["mergedAt"] = json!(iso(at));
    }
    v
}

/// One page of the spaces the caller can see, keyed by `(position, id)`.
pub fn visible_page(
    state: &AppState,
    page: &PageRequest,
    scope: &str,
    grants: &Grants,
    spaces: Vec<SpaceRow>,
) -> ApiResult<List<Value>> {
    let after = page.after::<(i64, String)>(scope)?;
    let visible: Vec<(SpaceRow, Role)> = spaces
        .into_iter()
        .filter_map(|s| grants.space_role(&s).map(|r| (s, r)))
        .collect();
    let count = visible.len() as i64;
    let rows = visible
        .into_iter()
        .filter(|(s, _)| match &after {
            Some((pos, id)) => (s.position, &s.id) > (*pos, id),
            None => true,
        })
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .map(|(s, role)| {
            let key = (s.position, s.id.clone());
            (space(state, &s, role), key)
        })
        .collect();
    page.finish(scope, rows, count)
}

/// Renders one change request.
pub async fn change_request_json(
    state: &AppState,
    ctx: &SpaceCtx,
    c: &ChangeRequestRow,
) -> ApiResult<Value> {
    let creator = crate::store::users::get(&state.db, &c.created_by).await?;
    let space_revision =
        crate::domain::change_requests::current_revision(state, &ctx.space.id).await?;
    Ok(change_request(state, c, creator.as_ref(), &space_revision))
}
