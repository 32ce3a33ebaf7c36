//! The server's shared signing secret.

use crate::db::sql::Sql;
use crate::db::Db;
use crate::ids::random_string;

/// The signing secret, created on first start (first writer wins, so every node shares it).
pub async fn signing_secret(db: &Db, now_ms: i64) -> sqlx::Result<String> {
    db.execute(
        &Sql::new(
            "INSERT INTO server_keys (name, secret, created_at) VALUES ('signing', $1, $2) \
         ON CONFLICT (name) DO NOTHING",
        )
        .arg(random_string(48))
        .arg(now_ms),
        &[],
    )
    .await?;
    sqlx::query_scalar("SELECT secret FROM server_keys WHERE name = 'signing'")
        .fetch_one(db.pool())
        .await
}
