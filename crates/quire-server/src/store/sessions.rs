//! The app's sign-in: local passwords and server-side browser sessions.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
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
        /// The organization whose single sign-on opened the session, the only one it may
        /// act in (`None`: a password session, with the account's whole reach).
        pub org_id: Option<String>,
        /// The provider of that sign-on.
        pub provider_id: Option<String>,
    }
}

const COLUMNS: &str =
    "id, user_id, csrf, agent, created_at, seen_at, expires_at, org_id, provider_id";

/// Where a single sign-on session comes from: the organization it is confined to and the
/// provider that signed it in.
pub struct SsoOrigin<'a> {
    pub org_id: &'a str,
    pub provider_id: &'a str,
}

/// Opens a password session for `user_id`; returns it with its secret (the cookie's
/// value), which is stored only as a hash.
pub async fn open(
    db: &Db,
    user_id: &str,
    agent: &str,
    now: i64,
    expires_at: i64,
) -> sqlx::Result<(SessionRow, String)> {
    let (row, secret) = new_row(user_id, agent, now, expires_at, None);
    db.execute(&insert(&row, &secret), &[]).await?;
    Ok((row, secret))
}

/// Opens a session in `tx` (a single sign-on's login, which commits the session with the
/// membership it makes); as [`open`].
pub async fn open_in(
    tx: &mut Tx,
    user_id: &str,
    agent: &str,
    now: i64,
    expires_at: i64,
    sso: SsoOrigin<'_>,
) -> sqlx::Result<(SessionRow, String)> {
    let (row, secret) = new_row(user_id, agent, now, expires_at, Some(sso));
    tx.execute(&insert(&row, &secret)).await?;
    Ok((row, secret))
}

fn new_row(
    user_id: &str,
    agent: &str,
    now: i64,
    expires_at: i64,
    sso: Option<SsoOrigin<'_>>,
) -> (SessionRow, String) {
    let row = SessionRow {
        id: new_id(),
        user_id: user_id.to_string(),
        csrf: random_string(32),
        agent: agent.chars().take(200).collect(),
        created_at: now,
        seen_at: now,
        expires_at,
        org_id: sso.as_ref().map(|s| s.org_id.to_string()),
        provider_id: sso.as_ref().map(|s| s.provider_id.to_string()),
    };
    (row, random_string(48))
}

fn insert(row: &SessionRow, secret: &str) -> Sql {
    Sql::new(
        "INSERT INTO app_sessions (id, secret_hash, user_id, csrf, agent, created_at, seen_at, \
         expires_at, org_id, provider_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .arg(&row.id)
    .arg(hash_token(secret))
    .arg(&row.user_id)
    .arg(&row.csrf)
    .arg(&row.agent)
    .arg(row.created_at)
    .arg(row.seen_at)
    .arg(row.expires_at)
    .arg(&row.org_id)
    .arg(&row.provider_id)
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

/// Forgets the sessions past their absolute expiry (idle ones end when read).
pub async fn purge_expired(db: &Db, now: i64) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("DELETE FROM app_sessions WHERE expires_at <= $1").arg(now),
        &[],
    )
    .await?;
    Ok(())
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

/// Sets a user's password hash, and makes the user an instance administrator if `admin`
/// (never takes that away), ending the sessions opened with the old password.
pub async fn set_password_hash(
    tx: &mut Tx,
    user_id: &str,
    hash: &str,
    admin: bool,
) -> sqlx::Result<()> {
    tx.touches(&[Scope::Tokens, Scope::User(user_id)]);
    tx.execute(
        &Sql::new("UPDATE users SET password_hash = $2 WHERE id = $1")
            .arg(user_id)
            .arg(hash),
    )
    .await?;
    if admin {
        tx.execute(&Sql::new("UPDATE users SET instance_admin = 1 WHERE id = $1").arg(user_id))
            .await?;
    }
    tx.execute(&Sql::new("DELETE FROM app_sessions WHERE user_id = $1").arg(user_id))
        .await?;
    Ok(())
}

/// Whether any account exists, read so that no other transaction can add one until this
/// one ends (the first-run setup makes the first account once, however many ask at once).
pub async fn any_user_locked(tx: &mut Tx) -> sqlx::Result<bool> {
    if tx.dialect() == crate::db::Dialect::Postgres {
        // Conflicts with itself and with the row lock every insert takes; SQLite's write
        // transactions are one at a time already.
        tx.execute(&Sql::new("LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE"))
            .await?;
    }
    Ok(tx
        .scalar_opt::<i64>(&Sql::new("SELECT 1 FROM users LIMIT 1"))
        .await?
        .is_some())
}

/// Counts a sign-in attempt under each of `keys` at `now`, before its password is checked,
/// and returns each key's count with it, in the order of `keys`. A key whose window began at
/// or before `after` starts a new one; windows that ended are deleted on the way. Each count
/// is one atomic increment, so attempts racing each other all see distinct counts and no
/// more than a limit of them pass it.
pub async fn note_attempt(db: &Db, keys: &[&str], now: i64, after: i64) -> sqlx::Result<Vec<i64>> {
    let mut tx = db.begin().await?;
    tx.touches(&[]);
    tx.execute(&Sql::new("DELETE FROM sign_in_failures WHERE since <= $1").arg(after))
        .await?;
    let mut counts = Vec::with_capacity(keys.len());
    for key in keys {
        counts.push(
            tx.scalar::<i64>(
                &Sql::new(
                    "INSERT INTO sign_in_failures (key, failures, since) VALUES ($1, 1, $2) \
                     ON CONFLICT (key) DO UPDATE SET failures = sign_in_failures.failures + 1 \
                     RETURNING failures",
                )
                .arg(*key)
                .arg(now),
            )
            .await?,
        );
    }
    tx.commit().await?;
    Ok(counts)
}

/// Takes back an attempt [`note_attempt`] counted under each of `keys`: its password was
/// right, or it was never checked.
pub async fn forget_attempt(db: &Db, keys: &[&str]) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    tx.touches(&[]);
    for key in keys {
        tx.execute(
            &Sql::new(
                "UPDATE sign_in_failures SET failures = failures - 1 \
                 WHERE key = $1 AND failures > 0",
            )
            .arg(*key),
        )
        .await?;
    }
    tx.commit().await
}

crate::db::inline::row! {
    /// An account as the instance administrators' screen lists it.
    #[derive(Debug, Clone)]
    pub struct AccountRow {
        pub id: String,
        pub email: String,
        pub display_name: String,
        /// 1 when the account has a password (it can sign in to the app).
        pub has_password: i64,
        pub instance_admin: i64,
    }
}

/// Whether a user administers the server.
pub async fn is_instance_admin(db: &Db, user_id: &str) -> sqlx::Result<bool> {
    Ok(db
        .row::<(i64,)>(&Sql::new("SELECT instance_admin FROM users WHERE id = $1").arg(user_id))
        .await?
        .is_some_and(|(a,)| a == 1))
}

/// The first `limit` accounts by address, from `after` (an address; `""`: the first).
pub async fn accounts(db: &Db, after: &str, limit: i64) -> sqlx::Result<Vec<AccountRow>> {
    db.rows(
        &Sql::new(
            "SELECT id, email, display_name, \
             CAST(CASE WHEN password_hash IS NULL THEN 0 ELSE 1 END AS BIGINT) AS has_password, \
             instance_admin \
             FROM users WHERE email > $1 ORDER BY email LIMIT $2",
        )
        .arg(after)
        .arg(limit),
    )
    .await
}

/// How many accounts exist (the first-run page shows only while there are none).
pub async fn user_count(db: &Db) -> sqlx::Result<i64> {
    db.scalar(&Sql::new("SELECT COUNT(*) FROM users")).await
}
