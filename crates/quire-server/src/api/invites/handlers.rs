//! Invitations: `ORG/invites` (by e-mail) and `ORG/link-invites` (links).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::views;
use crate::domain::access::{OrgCtx, Role};
use crate::domain::auth::Caller;
use crate::domain::members;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{nullable, JsonBody};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::invites::InviteLinkRow;

/// One entry of `emails`: an address, or an address with its own role.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum InviteEntry {
    Email(String),
    WithRole {
        email: String,
        #[serde(default, deserialize_with = "nullable")]
        role: Option<Option<Role>>,
    },
}

/// Body of `inviteUsersToOrganization`.
#[derive(Deserialize)]
pub struct InviteUsers {
    emails: Vec<InviteEntry>,
    #[serde(default, deserialize_with = "nullable")]
    role: Option<Option<Role>>,
    sso: Option<bool>,
}

/// `inviteUsersToOrganization` (admins only): users who exist join at once with the role;
/// other addresses wait and join when a user with that e-mail first authenticates.
pub async fn invite_users(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    JsonBody(body): JsonBody<InviteUsers>,
) -> ApiResult<Json<Value>> {
    let emails = body
        .emails
        .into_iter()
        .map(|entry| match entry {
            InviteEntry::Email(email) => (email, None),
            InviteEntry::WithRole { email, role } => (email, role),
        })
        .collect();
    let sso = body.sso.unwrap_or(false);
    let done = members::invite(&state, &ctx, emails, body.role, sso).await?;
    Ok(Json(
        json!({ "users": done.joined, "invited": done.invited }),
    ))
}

/// `joinOrganizationWithInvite`: the caller joins through an invite link.
pub async fn join_with_invite(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((org_id, invite_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    members::join_with_link(&state, &caller, &org_id, &invite_id).await?;
    Ok(Json(json!({})))
}

fn link_json(link: &InviteLinkRow) -> ApiResult<Value> {
    match link.target_kind.as_str() {
        "organization" => Ok(json!({
            "object": "invite",
            "id": link.id,
            "role": link.role,
            "redundant": false,
        })),
        other => Err(ApiError::internal(anyhow::anyhow!(
            "unknown invite target {other}"
        ))),
    }
}

/// `listOrganizationInviteLinks` (admins only).
pub async fn list_link_invites(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    let scope = format!("link-invites:{}", ctx.org.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::invites::list_links(&state.db, &ctx.org.id, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|l| Ok((link_json(&l)?, (l.created_at, l.id))))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Body of `createOrganizationInvite`: an organization role, or a level on one space or
/// collection.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum CreateInvite {
    Space {
        #[serde(deserialize_with = "nullable")]
        level: Option<Option<Role>>,
        space: String,
    },
    Collection {
        #[serde(deserialize_with = "nullable")]
        level: Option<Option<Role>>,
        collection: String,
    },
    Organization {
        #[serde(deserialize_with = "nullable")]
        role: Option<Option<Role>>,
    },
}

/// `createOrganizationInvite` (admins only): 201 with the link.
pub async fn create_link_invite(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    JsonBody(body): JsonBody<CreateInvite>,
) -> ApiResult<axum::response::Response> {
    let role = match body {
        CreateInvite::Organization { role } => role.flatten(),
        CreateInvite::Space { space, .. } => {
            return Err(ApiError::not_found(format!("Space `{space}` not found.")))
        }
        CreateInvite::Collection { collection, .. } => {
            return Err(ApiError::not_found(format!(
                "Collection `{collection}` not found."
            )))
        }
    };
    let link = members::create_link(&state, &ctx, role).await?;
    let location = state.url(&format!("/v1/orgs/{}/link-invites/{}", ctx.org.id, link.id));
    Ok(views::created(&location, link_json(&link)?))
}

/// `getOrganizationInviteLink` (admins only).
pub async fn get_link_invite(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, invite_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let link = store::invites::get_link(&state.db, &ctx.org.id, &invite_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Invite `{invite_id}` not found.")))?;
    Ok(Json(link_json(&link)?))
}

/// Body of `updateOrganizationInviteById`: `role` for organization links, `level` for
/// content links.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum UpdateInvite {
    Role {
        #[serde(deserialize_with = "nullable")]
        role: Option<Option<Role>>,
    },
    Level {
        #[serde(deserialize_with = "nullable")]
        level: Option<Option<Role>>,
    },
}

/// `updateOrganizationInviteById` (admins only).
pub async fn update_link_invite(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, invite_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<UpdateInvite>,
) -> ApiResult<Json<Value>> {
    let mut link = store::invites::get_link(&state.db, &ctx.org.id, &invite_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Invite `{invite_id}` not found.")))?;
    let role = match body {
        UpdateInvite::Role { role } | UpdateInvite::Level { level: role } => role.flatten(),
    };
    link.role = role.map(|r| r.as_str().to_string());
    store::invites::set_link_role(&state.db, &ctx.org.id, &invite_id, link.role.as_deref()).await?;
    Ok(Json(link_json(&link)?))
}

/// `deleteOrganizationInviteById` (admins only); 204 also when absent.
pub async fn delete_link_invite(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, invite_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    store::invites::delete_link(&state.db, &ctx.org.id, &invite_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
