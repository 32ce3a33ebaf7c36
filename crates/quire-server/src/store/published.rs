//! Scopes of published-content tokens (`published_scopes`): what a token may read, kept on
//! the server under a hash of itself so that the token only names it.

use crate::db::sql::Sql;
use crate::db::Db;

/// The scope named `id` (its JSON) and when its row expires, if it is stored.
pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<(String, i64)>> {
    sqlx::query_as("SELECT scope, expires_at FROM published_scopes WHERE id = $1")
        .bind(id)
        .fetch_optional(db.pool())
        .await
}

/// How many stored scopes `caller` made that are still live at `now`.
pub async fn live_of(db: &Db, caller: &str, now: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM published_scopes WHERE created_by = $1 AND expires_at > $2",
    )
    .bind(caller)
    .bind(now)
    .fetch_one(db.pool())
    .await
}

/// Stores scope `id` (`scope`, its JSON) until `expires_at`, or moves a stored one's expiry
/// to `expires_at`; scopes expired before `now` are dropped on the way.
pub async fn keep(
    db: &Db,
    id: &str,
    scope: &str,
    caller: &str,
    expires_at: i64,
    now: i64,
) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    tx.touches(&[]);
    tx.execute(&Sql::new("DELETE FROM published_scopes WHERE expires_at <= $1").arg(now))
        .await?;
    tx.execute(&Sql::new(
        "INSERT INTO published_scopes (id, scope, created_by, expires_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (id) DO UPDATE SET expires_at = $4",
    )
    .arg(id)
    .arg(scope)
    .arg(caller)
    .arg(expires_at)
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
