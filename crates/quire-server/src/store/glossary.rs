//! An organization's translation glossary (`domain::translations::glossary`).

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// A stored glossary entry; `translations` is a JSON object of language code to term.
    #[derive(Debug, Clone)]
    pub struct EntryRow {
        pub id: String,
        pub org_id: String,
        pub translations: String,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

const COLUMNS: &str = "id, org_id, translations, created_at, updated_at";

/// A page of an organization's entries, oldest first, after `after`; and how many it has.
pub async fn list(
    db: &Db,
    org_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<EntryRow>, i64)> {
    let (ts, id) = after.unwrap_or((i64::MIN, String::new()));
    let rows = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM glossary_entries WHERE org_id = $1 \
         AND (created_at > $2 OR (created_at = $2 AND id > $3)) ORDER BY created_at, id LIMIT $4"
    ))
    .bind(org_id)
    .bind(ts)
    .bind(id)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    Ok((rows, count(db, org_id).await?))
}

/// How many entries an organization has.
pub async fn count(db: &Db, org_id: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM glossary_entries WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await
}

/// Every entry of an organization (bounded by the domain's cap), oldest first.
pub async fn all(db: &Db, org_id: &str) -> sqlx::Result<Vec<EntryRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM glossary_entries WHERE org_id = $1 ORDER BY created_at, id"
    ))
    .bind(org_id)
    .fetch_all(db.pool())
    .await
}

/// One entry of an organization.
pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<EntryRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM glossary_entries WHERE org_id = $1 AND id = $2"
    ))
    .bind(org_id)
    .bind(id)
    .fetch_optional(db.pool())
    .await
}

/// Adds an entry.
pub async fn insert(tx: &mut Tx, e: &EntryRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO glossary_entries (id, org_id, translations, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .arg(&e.id)
        .arg(&e.org_id)
        .arg(&e.translations)
        .arg(e.created_at)
        .arg(e.updated_at),
    )
    .await?;
    Ok(())
}

/// Replaces an entry's terms; whether it exists.
pub async fn update(
    tx: &mut Tx,
    org_id: &str,
    id: &str,
    translations: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let n = tx
        .execute(
            &Sql::new(
                "UPDATE glossary_entries SET translations = $3, updated_at = $4 \
                 WHERE org_id = $1 AND id = $2",
            )
            .arg(org_id)
            .arg(id)
            .arg(translations)
            .arg(now),
        )
        .await?;
    Ok(n > 0)
}

/// Deletes an entry; whether it existed.
pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> sqlx::Result<bool> {
    let n = tx
        .execute(
            &Sql::new("DELETE FROM glossary_entries WHERE org_id = $1 AND id = $2")
                .arg(org_id)
                .arg(id),
        )
        .await?;
    Ok(n > 0)
}

/// How many entries an organization has, read in a write transaction.
pub async fn count_tx(tx: &mut Tx, org_id: &str) -> sqlx::Result<i64> {
    tx.scalar(&Sql::new("SELECT COUNT(*) FROM glossary_entries WHERE org_id = $1").arg(org_id))
        .await
}
