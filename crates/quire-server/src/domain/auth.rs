//! Authentication: `Authorization: Bearer <token>` resolved to a user.

use axum::http::{header, HeaderMap};

use crate::error::{ApiError, ApiResult};
use crate::keys::TokenDigest;
use crate::state::AppState;
use crate::store;
use crate::store::users::UserRow;

/// The authenticated user of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The user behind the token, shared with the access cache.
    pub user: std::sync::Arc<UserRow>,
}

/// Resolves the bearer token of a request; 401 when it is missing or unknown.
pub async fn authenticate(state: &AppState, headers: &HeaderMap) -> ApiResult<Caller> {
    if !headers.contains_key(header::AUTHORIZATION) {
        return Err(ApiError::Unauthorized(
            "Missing Authorization header.".into(),
        ));
    }
    let token = crate::keys::bearer(headers).ok_or_else(|| {
        ApiError::Unauthorized("Authorization header must be `Bearer <token>`.".into())
    })?;
    let digest = TokenDigest::of(token);
    let hash = digest.as_str();
    let now = state.clock.now_ms();
    if let Some(user) = state.cache.user(hash, now) {
        return Ok(Caller { user });
    }
    let generation = state.cache.generation();
    let user = Box::pin(store::tokens::authenticate(&state.db, hash))
        .await?
        .map(std::sync::Arc::new)
        .ok_or_else(|| ApiError::Unauthorized("Unknown or revoked API token.".into()))?;
    if user.first_auth_at.is_none() {
        Box::pin(first_authentication(state, &user)).await?;
    } else {
        state
            .cache
            .put_user(hash.to_string(), user.clone(), now, generation);
    }
    Ok(Caller { user })
}

/// On a user's first authenticated request, the invitations waiting for their e-mail
/// turn into memberships.
async fn first_authentication(state: &AppState, user: &UserRow) -> ApiResult<()> {
    let now = state.clock.now_ms();
    let mut tx = state.db.begin().await?;
    if store::users::claim_first_auth(&mut tx, &user.id, now).await? {
        for invite in store::invites::take_pending(&mut tx, &user.email).await? {
            store::members::insert(
                &mut tx,
                &invite.org_id,
                &user.id,
                invite.role.as_deref(),
                invite.sso != 0,
                now,
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}
