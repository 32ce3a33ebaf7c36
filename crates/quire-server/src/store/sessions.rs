//! The app's sign-in: local passwords and server-side browser sessions.

use crate::db::sql::Sql;
use crate::db::Db;
use crate::ids::{new_id, random_string};
use crate::keys::hash_token;
use crate::scopes::Scope;

crate::db::inline::row! {
    /// A live session of the app.
    #[derive(Debug, Clone)]
    pub struct SessionRow {
        pub id: String,
        pub user_id: String,
        pub csrf: String,
        pub agent: String,
        pub created_at: i64,
        pub seen_at: i64,
        pub expires_at: i64,
    }
}

const COLUMNS: &str = "id, user_id, csrf, agent, created_at, seen_at, expires_at";

/// Opens a session for `user_id`; returns it with its secret (the cookie's value), which is
/// stored only as a hash.
pub async fn open(
    db: &Db,
    user_id: &str,
    agent: &str,
    now: i64,
    expires_at: i64,
) -> sqlx::Result<(SessionRow, String)> {
    let secret = random_string(48);
    let row = SessionRow {
        id: new_id(),
        user_id: user_id.to_string(),
        csrf: random_string(32),
        agent: agent.chars().take(200).collect(),
        created_at: now,
        seen_at: now,
        expires_at,
    };
    db.execute(
        &Sql::new(
            "INSERT INTO app_sessions (id, secret_hash, user_id, csrf, agent, created_at, seen_at, \
             expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .arg(&row.id)
        .arg(hash_token(&secret))
        .arg(&row.user_id)
        .arg(&row.csrf)
        .arg(&row.agent)
        .arg(now)
        .arg(now)
        .arg(expires_at), &[])
    .await?;
    Ok((row, secret))
}

/// The live session whose secret hashes to `secret_hash`: not past its absolute expiry, and
/// seen since `idle_since`.
pub async fn get(
    db: &Db,
    secret_hash: &str,
    now: i64,
    idle_since: i64,
) -> sqlx::Result<Option<SessionRow>> {
    db.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM app_sessions WHERE secret_hash = $1 AND expires_at > $2 \
             AND seen_at > $3"
        ))
        .arg(secret_hash)
        .arg(now)
        .arg(idle_since),
    )
    .await
}

/// Notes that a session was used at `now`.
pub async fn touch(db: &Db, id: &str, now: i64) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("UPDATE app_sessions SET seen_at = $2 WHERE id = $1")
            .arg(id)
            .arg(now),
        &[],
    )
    .await?;
    Ok(())
}

/// The live sessions of a user, newest first.
pub async fn list(db: &Db, user_id: &str, now: i64, limit: i64) -> sqlx::Result<Vec<SessionRow>> {
    db.rows(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM app_sessions WHERE user_id = $1 AND expires_at > $2 \
             ORDER BY created_at DESC, id LIMIT $3"
        ))
        .arg(user_id)
        .arg(now)
        .arg(limit),
    )
    .await
}

/// Ends one session of a user; false when there was none.
pub async fn close(db: &Db, user_id: &str, id: &str) -> sqlx::Result<bool> {
    Ok(db
        .execute(
            &Sql::new("DELETE FROM app_sessions WHERE user_id = $1 AND id = $2")
                .arg(user_id)
                .arg(id),
            &[],
        )
        .await?
        > 0)
}

/// Ends every session of a user ("sign out everywhere", a password change).
pub async fn close_all(db: &Db, user_id: &str) -> sqlx::Result<u64> {
    db.execute(
        &Sql::new("DELETE FROM app_sessions WHERE user_id = $1").arg(user_id),
        &[],
    )
    .await
}

/// The stored password hash of a user, if the account has a password.
pub async fn password_hash(db: &Db, user_id: &str) -> sqlx::Result<Option<String>> {
    Ok(db
        .row::<(Option<String>,)>(
            &Sql::new("SELECT password_hash FROM users WHERE id = $1").arg(user_id),
        )
        .await?
        .and_then(|(h,)| h))
}

/// Sets a user's password hash.
pub async fn set_password_hash(db: &Db, user_id: &str, hash: &str) -> sqlx::Result<bool> {
    Ok(db
        .execute(
            &Sql::new("UPDATE users SET password_hash = $2 WHERE id = $1")
                .arg(user_id)
                .arg(hash),
            &[Scope::Tokens, Scope::User(user_id)],
        )
        .await?
        > 0)
}

/// Makes a user an instance administrator.
pub async fn make_instance_admin(db: &Db, user_id: &str) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("UPDATE users SET instance_admin = 1 WHERE id = $1").arg(user_id),
        &[Scope::Tokens, Scope::User(user_id)],
    )
    .await?;
    Ok(())
}

/// How many accounts exist (the first-run page shows only while there are none).
pub async fn user_count(db: &Db) -> sqlx::Result<i64> {
    db.scalar(&Sql::new("SELECT COUNT(*) FROM users")).await
}
