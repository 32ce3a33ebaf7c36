//! OpenAPI specifications and their versions.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// A specification's row, without the source text waiting to be processed.
    #[derive(Debug, Clone)]
    pub struct SpecRow {
        pub id: String,
        pub org_id: String,
        pub slug: String,
        pub source_url: Option<String>,
        pub visibility: String,
        pub processing_state: String,
        pub last_version: Option<String>,
        pub last_processed_at: Option<i64>,
        pub last_error_code: Option<String>,
        /// JSON array of `{code, message}`.
        pub last_errors: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

const COLUMNS: &str = "id, org_id, slug, source_url, visibility, processing_state, last_version, \
    last_processed_at, last_error_code, last_errors, created_at, updated_at";

crate::db::inline::row! {
    /// A version of a specification.
    #[derive(Debug, Clone)]
    pub struct VersionRow {
        pub id: String,
        pub spec_id: String,
        pub hash: String,
        pub size: i64,
        pub created_at: i64,
    }
}

crate::db::inline::row! {
    /// The source a processing job takes: where to fetch it, or its text, and its number.
    #[derive(Debug, Clone)]
    pub struct PendingSource {
        pub source_url: Option<String>,
        pub source_text: Option<String>,
        pub source_seq: i64,
    }
}

/// A specification of an organization by slug.
pub async fn get(db: &Db, org_id: &str, slug: &str) -> sqlx::Result<Option<SpecRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM openapi_specs WHERE org_id = $1 AND slug = $2"
    ))
    .bind(org_id)
    .bind(slug)
    .fetch_optional(db.pool())
    .await
}

/// A specification by id.
pub async fn by_id(db: &Db, id: &str) -> sqlx::Result<Option<SpecRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM openapi_specs WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(db.pool())
    .await
}

/// A specification by slug inside a transaction, its row locked on PostgreSQL.
pub async fn get_for_update(
    tx: &mut Tx,
    org_id: &str,
    slug: &str,
) -> sqlx::Result<Option<SpecRow>> {
    let lock = crate::db::for_update(tx);
    tx.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM openapi_specs WHERE org_id = $1 AND slug = $2{lock}"
        ))
        .arg(org_id)
        .arg(slug),
    )
    .await
}

/// A page of an organization's specifications after `(created_at, id)`, with the total.
pub async fn list(
    db: &Db,
    org_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<SpecRow>, i64)> {
    let (ts, id) = after.unwrap_or((i64::MIN, String::new()));
    let rows = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM openapi_specs WHERE org_id = $1 \
         AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
         ORDER BY created_at, id LIMIT $4"
    ))
    .bind(org_id)
    .bind(ts)
    .bind(id)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    let count = sqlx::query_scalar("SELECT COUNT(*) FROM openapi_specs WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok((rows, count))
}

/// How many specifications an organization holds.
pub async fn count(tx: &mut Tx, org_id: &str) -> sqlx::Result<i64> {
    tx.scalar(&Sql::new("SELECT COUNT(*) FROM openapi_specs WHERE org_id = $1").arg(org_id))
        .await
}

/// Creates a specification, pending processing of its first source.
#[allow(clippy::too_many_arguments)]
pub async fn insert(
    tx: &mut Tx,
    id: &str,
    org_id: &str,
    slug: &str,
    source_url: Option<&str>,
    source_text: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "INSERT INTO openapi_specs (id, org_id, slug, source_url, source_text, source_seq, visibility, \
         processing_state, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 1, 'private', 'pending', $6, $6)",
    )
    .arg(id)
    .arg(org_id)
    .arg(slug)
    .arg(source_url)
    .arg(source_text)
    .arg(now)
    )
    .await?;
    Ok(())
}

/// Gives a specification a new source to process (the previous one is forgotten); returns
/// the new source's number.
pub async fn set_source(
    tx: &mut Tx,
    id: &str,
    source_url: Option<&str>,
    source_text: Option<&str>,
    now: i64,
) -> sqlx::Result<i64> {
    tx.scalar(&Sql::new(
        "UPDATE openapi_specs SET source_url = $2, source_text = $3, source_seq = source_seq + 1, \
         processing_state = 'pending', updated_at = $4 WHERE id = $1 RETURNING source_seq",
    )
    .arg(id)
    .arg(source_url)
    .arg(source_text)
    .arg(now)
    )
    .await
}

/// Sets a specification's visibility.
pub async fn set_visibility(db: &Db, id: &str, visibility: &str, now: i64) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("UPDATE openapi_specs SET visibility = $2, updated_at = $3 WHERE id = $1")
            .arg(id)
            .arg(visibility)
            .arg(now),
        &[],
    )
    .await?;
    Ok(())
}

/// Deletes a specification and its versions; returns the hashes its versions used.
pub async fn delete(tx: &mut Tx, id: &str) -> sqlx::Result<Vec<String>> {
    let hashes = tx
        .scalars(
            &Sql::new("SELECT DISTINCT hash FROM openapi_spec_versions WHERE spec_id = $1").arg(id),
        )
        .await?;
    tx.execute(&Sql::new("DELETE FROM openapi_spec_versions WHERE spec_id = $1").arg(id))
        .await?;
    tx.execute(&Sql::new("DELETE FROM openapi_specs WHERE id = $1").arg(id))
        .await?;
    Ok(hashes)
}

/// Whether any version still uses the document `hash`.
pub async fn hash_in_use(db: &Db, hash: &str) -> sqlx::Result<bool> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM openapi_spec_versions WHERE hash = $1")
        .bind(hash)
        .fetch_one(db.pool())
        .await?;
    Ok(n > 0)
}

/// Takes source number `seq` to process, marking the specification `progress`; `None` when
/// a newer source replaced it (its own job processes that one).
pub async fn start_processing(
    db: &Db,
    id: &str,
    seq: i64,
    now: i64,
) -> sqlx::Result<Option<PendingSource>> {
    db.returning(
        &Sql::new(
            "UPDATE openapi_specs SET processing_state = 'progress', updated_at = $3 \
         WHERE id = $1 AND source_seq = $2 RETURNING source_url, source_text, source_seq",
        )
        .arg(id)
        .arg(seq)
        .arg(now),
        &[],
    )
    .await
}

/// The outcome of processing source `seq`: recorded only if no newer source arrived since.
/// A new version is added when `version` is given. Returns whether it was recorded.
pub async fn finish_processing(
    tx: &mut Tx,
    id: &str,
    seq: i64,
    version: Option<&VersionRow>,
    error: Option<(&str, &str)>,
    now: i64,
) -> sqlx::Result<bool> {
    let last_version = version.map(|v| v.id.as_str());
    let done = tx
        .execute(
            &Sql::new(
                "UPDATE openapi_specs SET processing_state = 'complete', last_processed_at = $3, \
         last_error_code = $4, last_errors = $5, last_version = COALESCE($6, last_version), \
         source_text = NULL, updated_at = $3 WHERE id = $1 AND source_seq = $2",
            )
            .arg(id)
            .arg(seq)
            .arg(now)
            .arg(error.map(|e| e.0))
            .arg(error.map(|e| e.1))
            .arg(last_version),
        )
        .await?;
    if done == 0 {
        return Ok(false);
    }
    if let Some(v) = version {
        tx.execute(&Sql::new(
            "INSERT INTO openapi_spec_versions (id, spec_id, hash, size, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .arg(&v.id)
        .arg(&v.spec_id)
        .arg(&v.hash)
        .arg(v.size)
        .arg(v.created_at)
        )
        .await?;
    }
    Ok(true)
}

/// One version of a specification.
pub async fn version(db: &Db, spec_id: &str, id: &str) -> sqlx::Result<Option<VersionRow>> {
    sqlx::query_as(
        "SELECT id, spec_id, hash, size, created_at FROM openapi_spec_versions WHERE spec_id = $1 AND id = $2",
    )
    .bind(spec_id)
    .bind(id)
    .fetch_optional(db.pool())
    .await
}

/// A page of a specification's versions, newest first, before `(created_at, id)`.
pub async fn versions(
    db: &Db,
    spec_id: &str,
    before: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<VersionRow>, i64)> {
    let (ts, id) = before.unwrap_or((i64::MAX, String::new()));
    let rows = sqlx::query_as(
        "SELECT id, spec_id, hash, size, created_at FROM openapi_spec_versions WHERE spec_id = $1 \
         AND (created_at < $2 OR (created_at = $2 AND id < $3)) \
         ORDER BY created_at DESC, id DESC LIMIT $4",
    )
    .bind(spec_id)
    .bind(ts)
    .bind(id)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    let count = sqlx::query_scalar("SELECT COUNT(*) FROM openapi_spec_versions WHERE spec_id = $1")
        .bind(spec_id)
        .fetch_one(db.pool())
        .await?;
    Ok((rows, count))
}
