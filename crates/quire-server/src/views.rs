//! JSON shapes of the official resources, built from stored rows for one caller.

use serde_json::{json, Value};

use crate::access::Role;
use crate::app::AppState;
use crate::clock::iso;
use crate::store::members::MemberRow;
use crate::store::orgs::OrgRow;
use crate::store::teams::TeamRow;
use crate::store::users::UserRow;

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
pub fn organization(state: &AppState, org: &OrgRow, role: Option<Role>) -> Value {
    let admin = role == Some(Role::Admin);
    let non_guest = role.is_some();
    let creator = role.is_some_and(|r| r >= Role::Create);
    let mut v = json!({
        "object": "organization",
        "id": org.id,
        "title": org.title,
        "createdAt": iso(org.created_at),
        "emailDomains": org.domains(),
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
    v
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
        "spaces": 0,
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
        "spaces": 0,
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
