//! API tokens: random secrets handed out once and stored only as SHA-256 hashes.

use crate::db::sql::Sql;
use crate::db::Db;
use crate::ids::{new_id, random_string};
use crate::keys::hash_token;
use crate::scopes::Scope;
use crate::store::users::UserRow;

/// Prefix of every token, so that leaked tokens are easy to recognise.
pub const TOKEN_PREFIX: &str = "quire_";

/// Creates a token for `user_id` and returns it in the clear (the only time it exists so).
pub async fn create(db: &Db, user_id: &str, now: i64) -> sqlx::Result<String> {
    let token = format!("{TOKEN_PREFIX}{}", random_string(40));
    db.execute(
        &Sql::new(
            "INSERT INTO api_tokens (id, user_id, token_hash, created_at) VALUES ($1, $2, $3, $4)",
        )
        .arg(new_id())
        .arg(user_id)
        .arg(hash_token(&token))
        .arg(now),
        &[],
    )
    .await?;
    Ok(token)
}

crate::db::inline::row! {
    /// A token as its owner's account page lists it (never the secret).
    #[derive(Debug, Clone)]
    pub struct TokenRow {
        pub id: String,
        pub label: Option<String>,
        pub created_at: i64,
    }
}

/// Creates a labelled token for `user_id`, confined to organization `scope` when given;
/// returns its id and the token in the clear.
pub async fn create_labelled(
    db: &Db,
    user_id: &str,
    label: &str,
    scope: Option<&str>,
    now: i64,
) -> sqlx::Result<(String, String)> {
    let id = new_id();
    let token = format!("{TOKEN_PREFIX}{}", random_string(40));
    db.execute(
        &Sql::new(
            "INSERT INTO api_tokens (id, user_id, token_hash, created_at, label, org_id) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .arg(&id)
        .arg(user_id)
        .arg(hash_token(&token))
        .arg(now)
        .arg(label)
        .arg(scope),
        &[],
    )
    .await?;
    Ok((id, token))
}

/// `AND` the token is confined to `scope`, when a scope is given (its value bound as `$n`).
fn in_scope(scope: Option<&str>, n: u8) -> String {
    match scope {
        Some(_) => format!(" AND org_id = ${n}"),
        None => String::new(),
    }
}

/// The live tokens of a user (at most `limit`), newest first; with a `scope`, only those
/// confined to that organization.
pub async fn list_live(
    db: &Db,
    user_id: &str,
    scope: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<TokenRow>> {
    let sql = format!(
        "SELECT id, label, created_at FROM api_tokens WHERE user_id = $1 AND revoked_at IS NULL{} \
         ORDER BY created_at DESC, id DESC LIMIT $2",
        in_scope(scope, 3)
    );
    let mut q = sqlx::query_as(&sql).bind(user_id).bind(limit);
    if let Some(scope) = scope {
        q = q.bind(scope);
    }
    q.fetch_all(db.pool()).await
}

/// Revokes one of a user's tokens by id (with a `scope`, only one confined to it); returns
/// whether a live token was revoked.
pub async fn revoke_by_id(
    db: &Db,
    user_id: &str,
    scope: Option<&str>,
    id: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let sql = format!(
        "UPDATE api_tokens SET revoked_at = $3 WHERE id = $1 AND user_id = $2 \
         AND revoked_at IS NULL{}",
        in_scope(scope, 4)
    );
    let mut q = Sql::new(sql).arg(id).arg(user_id).arg(now);
    if let Some(scope) = scope {
        q = q.arg(scope);
    }
    Ok(db.execute(&q, &[Scope::Tokens]).await? > 0)
}

/// Revokes a token given in the clear; returns whether a live token was revoked.
pub async fn revoke(db: &Db, token: &str, now: i64) -> sqlx::Result<bool> {
    let res = db.execute(&Sql::new(
        "UPDATE api_tokens SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL",
    )
    .arg(hash_token(token))
    .arg(now), &[Scope::Tokens])
    .await?;
    Ok(res > 0)
}

/// Revokes every live token of the user with `email`; returns how many.
pub async fn revoke_all_for_email(db: &Db, email: &str, now: i64) -> sqlx::Result<u64> {
    let res = db
        .execute(
            &Sql::new(
                "UPDATE api_tokens SET revoked_at = $2 WHERE revoked_at IS NULL AND user_id IN \
         (SELECT id FROM users WHERE email = $1)",
            )
            .arg(crate::store::users::normalize_email(email))
            .arg(now),
            &[Scope::Tokens],
        )
        .await?;
    Ok(res)
}

/// The owner of a live token, and the organization it is confined to.
#[derive(Debug)]
pub struct Bearer {
    /// The token's user.
    pub user: std::sync::Arc<UserRow>,
    /// The one organization the token may act in (made from an SSO session); `None`: the
    /// user's whole reach.
    pub scope: Option<crate::ids::OrgId>,
}

crate::db::inline::row! {
    struct BearerRow {
        #[flatten]
        user: UserRow,
        org_id: Option<String>,
    }
}

/// The owner of a live token, given the token's hash, if any.
pub async fn authenticate(db: &Db, token_hash: &str) -> sqlx::Result<Option<Bearer>> {
    let row: Option<BearerRow> = db
        .row(
            &Sql::new(
                "SELECT u.id, u.email, u.display_name, u.photo_url, u.created_at, \
                 u.first_auth_at, t.org_id FROM api_tokens t JOIN users u ON u.id = t.user_id \
                 WHERE t.token_hash = $1 AND t.revoked_at IS NULL",
            )
            .arg(token_hash),
        )
        .await?;
    Ok(row.map(|r| Bearer {
        user: std::sync::Arc::new(r.user),
        scope: r.org_id.map(crate::ids::OrgId::new),
    }))
}
