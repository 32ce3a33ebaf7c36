//! Redirects of published sites (`site_redirects`): a source path, unique per site, and a
//! destination in the site's structure. Writers lock the site row first
//! (`store::sites::lock`), so that the per-site cap and the uniqueness check take turns.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// A stored redirect: `kind` says which of the destination columns are set.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RedirectRow {
        pub id: String,
        pub site_id: String,
        pub source: String,
        pub kind: String,
        pub section_id: Option<String>,
        pub site_space_id: Option<String>,
        pub page_id: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

const COLUMNS: &str =
    "id, site_id, source, kind, section_id, site_space_id, page_id, created_at, updated_at";

/// Inserts a redirect (a source the site already has is a unique violation: 409).
pub async fn insert(tx: &mut Tx, r: &RedirectRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "INSERT INTO site_redirects ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .arg(&r.id)
        .arg(&r.site_id)
        .arg(&r.source)
        .arg(&r.kind)
        .arg(r.section_id.as_deref())
        .arg(r.site_space_id.as_deref())
        .arg(r.page_id.as_deref())
        .arg(r.created_at)
        .arg(r.updated_at),
    )
    .await?;
    Ok(())
}

/// How many redirects a site has, inside a writing transaction.
pub async fn count_tx(tx: &mut Tx, site_id: &str) -> sqlx::Result<i64> {
    tx.scalar(&Sql::new("SELECT COUNT(*) FROM site_redirects WHERE site_id = $1").arg(site_id))
        .await
}

/// A page of a site's redirects, oldest first, and how many it has.
pub async fn list(
    db: &Db,
    site_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<RedirectRow>, i64)> {
    let total: i64 = db
        .scalar(&Sql::new("SELECT COUNT(*) FROM site_redirects WHERE site_id = $1").arg(site_id))
        .await?;
    let (at, id) = after.unwrap_or((i64::MIN, String::new()));
    let rows = db
        .rows(
            &Sql::new(format!(
                "SELECT {COLUMNS} FROM site_redirects WHERE site_id = $1 \
                 AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
                 ORDER BY created_at, id LIMIT $4"
            ))
            .arg(site_id)
            .arg(at)
            .arg(id)
            .arg(limit),
        )
        .await?;
    Ok((rows, total))
}

/// The redirect of a site from `source`, if any.
pub async fn by_source(db: &Db, site_id: &str, source: &str) -> sqlx::Result<Option<RedirectRow>> {
    db.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM site_redirects WHERE site_id = $1 AND source = $2"
        ))
        .arg(site_id)
        .arg(source),
    )
    .await
}

/// The redirect of a site from `source`, inside a writing transaction.
pub async fn by_source_tx(
    tx: &mut Tx,
    site_id: &str,
    source: &str,
) -> sqlx::Result<Option<RedirectRow>> {
    tx.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM site_redirects WHERE site_id = $1 AND source = $2"
        ))
        .arg(site_id)
        .arg(source),
    )
    .await
}

/// A redirect of a site, inside a writing transaction.
pub async fn get_tx(tx: &mut Tx, site_id: &str, id: &str) -> sqlx::Result<Option<RedirectRow>> {
    tx.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM site_redirects WHERE id = $1 AND site_id = $2"
        ))
        .arg(id)
        .arg(site_id),
    )
    .await
}

/// Sets a redirect's source.
pub async fn set_source(tx: &mut Tx, id: &str, source: &str, now: i64) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("UPDATE site_redirects SET source = $2, updated_at = $3 WHERE id = $1")
            .arg(id)
            .arg(source)
            .arg(now),
    )
    .await?;
    Ok(())
}

/// Sets a redirect's destination (its kind and the three columns together).
pub async fn set_destination(tx: &mut Tx, r: &RedirectRow, now: i64) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "UPDATE site_redirects SET kind = $2, section_id = $3, site_space_id = $4, \
             page_id = $5, updated_at = $6 WHERE id = $1",
        )
        .arg(&r.id)
        .arg(&r.kind)
        .arg(r.section_id.as_deref())
        .arg(r.site_space_id.as_deref())
        .arg(r.page_id.as_deref())
        .arg(now),
    )
    .await?;
    Ok(())
}

/// Deletes a redirect of a site; whether it existed.
pub async fn delete(tx: &mut Tx, site_id: &str, id: &str) -> sqlx::Result<bool> {
    let n = tx
        .execute(
            &Sql::new("DELETE FROM site_redirects WHERE id = $1 AND site_id = $2")
                .arg(id)
                .arg(site_id),
        )
        .await?;
    Ok(n > 0)
}
