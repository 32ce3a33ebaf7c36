//! Settings of the whole server, by name (`server_settings`).

use crate::db::sql::Sql;
use crate::db::Db;

/// The value of setting `name`, if it was ever set.
pub async fn get(db: &Db, name: &str) -> sqlx::Result<Option<String>> {
    Ok(db
        .row::<(String,)>(&Sql::new("SELECT value FROM server_settings WHERE name = $1").arg(name))
        .await?
        .map(|(v,)| v))
}

/// Sets setting `name` to `value`.
pub async fn set(db: &Db, name: &str, value: &str, now: i64) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "INSERT INTO server_settings (name, value, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET value = $2, updated_at = $3",
        )
        .arg(name)
        .arg(value)
        .arg(now),
        &[],
    )
    .await?;
    Ok(())
}
