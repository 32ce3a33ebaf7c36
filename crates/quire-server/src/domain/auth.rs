//! Authentication: `Authorization: Bearer <token>` resolved to a user.

use axum::http::{header, HeaderMap};

use crate::error::{ApiError, ApiResult};
use crate::ids::OrgId;
use crate::keys::TokenDigest;
use crate::state::AppState;
use crate::store;
use crate::store::users::UserRow;

/// The authenticated user of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The user behind the token, shared with the access cache.
    pub user: std::sync::Arc<UserRow>,
    /// The one organization the request may act in, for a token made from a single sign-on
    /// session (`None`: everything the user may reach).
    pub scope: Option<OrgId>,
}

impl Caller {
    /// A caller with the user's whole reach.
    pub fn unscoped(user: std::sync::Arc<UserRow>) -> Self {
        Self { user, scope: None }
    }

    /// Whether the request may act in organization `org_id` at all (its token's scope).
    pub fn reaches(&self, org_id: &str) -> bool {
        self.scope.as_ref().is_none_or(|scope| scope == org_id)
    }

    /// 403 for a token confined to one organization, naming what it cannot do.
    pub fn require_unscoped(&self, action: &str) -> ApiResult<()> {
        match &self.scope {
            None => Ok(()),
            Some(org) => Err(ApiError::forbidden(format!(
                "This token was made from a single sign-on session of organization `{org}` and acts only within it: it cannot {action}."
            ))),
        }
    }
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
    authenticate_token(state, token).await
}

/// Resolves an API token however it came (a bearer token, a git client's password); 401
/// when it is unknown.
pub async fn authenticate_token(state: &AppState, token: &str) -> ApiResult<Caller> {
    let digest = TokenDigest::of(token);
    let hash = digest.as_str();
    let now = state.clock.now_ms();
    if let Some(bearer) = state.cache.user(hash, now) {
        return Ok(Caller {
            user: bearer.user.clone(),
            scope: bearer.scope.clone(),
        });
    }
    let generation = state.cache.generation_of(crate::cache::Scope::Tokens);
    let bearer = Box::pin(store::tokens::authenticate(&state.db, hash))
        .await?
        .map(std::sync::Arc::new)
        .ok_or_else(|| ApiError::Unauthorized("Unknown or revoked API token.".into()))?;
    // Invitations turn into memberships at the first use of a token of the whole account:
    // a token confined to one organization (made by its sign-in) joins the account to no
    // other, and leaves the invitations for a token of the account's owner.
    if bearer.user.first_auth_at.is_none() && bearer.scope.is_none() {
        Box::pin(first_authentication(state, &bearer.user)).await?;
    } else {
        state
            .cache
            .put_user(hash.to_string(), bearer.clone(), now, generation);
    }
    Ok(Caller {
        user: bearer.user.clone(),
        scope: bearer.scope.clone(),
    })
}

/// On a user's first authenticated request, the invitations waiting for their e-mail
/// turn into memberships, unless they expired.
pub async fn first_authentication(state: &AppState, user: &UserRow) -> ApiResult<()> {
    let now = state.clock.now_ms();
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Tokens]);
    if store::users::claim_first_auth(&mut tx, &user.id, now).await? {
        // Expired invitations let no one in (`members`).
        let since = now.saturating_sub(crate::domain::members::invite_ttl_ms(state));
        for invite in store::invites::take_pending(&mut tx, &user.email, since).await? {
            tx.touches(&[crate::cache::Scope::Org(&invite.org_id)]);
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
