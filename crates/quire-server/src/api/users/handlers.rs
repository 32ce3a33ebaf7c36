//! Users: `/v1/user`, `/v1/users/{userId}`.

use axum::extract::{Path, State};
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;

use crate::api::views;
use crate::domain::access::require_self;
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::state::AppState;
use crate::store;
use crate::validate;

/// `getAuthenticatedUser`.
pub async fn get_authenticated_user(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Json<views::User> {
    Json(views::user_row(&state, &caller.user))
}

/// `getUserById`: a user the caller shares an organization with (or themself).
pub async fn get_user(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
) -> ApiResult<Json<views::User>> {
    let visible = user_id == caller.user.id
        || store::users::share_an_org(&state.db, &caller.user.id, &user_id, caller.scope.as_ref())
            .await?;
    let user = match visible {
        true => store::users::get(&state.db, &user_id).await?,
        false => None,
    }
    .ok_or_else(|| ApiError::not_found(format!("User `{user_id}` not found.")))?;
    Ok(Json(views::user_row(&state, &user)))
}

/// Body of `updateUserById`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateUser {
    display_name: Option<String>,
    #[serde(rename = "photoURL")]
    photo_url: Option<String>,
}

/// `updateUserById`: a user edits their own profile.
pub async fn update_user(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
    JsonBody(body): JsonBody<UpdateUser>,
) -> ApiResult<Json<views::User>> {
    if user_id != caller.user.id
        && !store::users::share_an_org(&state.db, &caller.user.id, &user_id, caller.scope.as_ref())
            .await?
    {
        return Err(ApiError::not_found(format!("User `{user_id}` not found.")));
    }
    require_self(&caller, &user_id)?;
    if let Some(scope) = &caller.scope {
        // The profile is the account's, beyond the organization, unless the account is
        // that organization's own.
        if store::users::sso_org(&state.db, &user_id).await?.as_deref() != Some(scope.as_str()) {
            caller.require_unscoped("change the profile of an account of its own")?;
        }
    }
    if body.display_name.is_none() && body.photo_url.is_none() {
        return Err(ApiError::bad_request(
            "Request body must set `displayName` or `photoURL`.",
        ));
    }
    if let Some(name) = &body.display_name {
        validate::length("displayName", name, 1, 64)?;
    }
    if let Some(photo) = &body.photo_url {
        validate::url("photoURL", photo)?;
    }
    let user = store::users::update(
        &state.db,
        &user_id,
        body.display_name.as_deref(),
        body.photo_url.as_deref(),
    )
    .await?
    .ok_or_else(|| ApiError::not_found(format!("User `{user_id}` not found.")))?;
    Ok(Json(views::user_row(&state, &user)))
}
