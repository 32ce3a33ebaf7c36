//! Translations of spaces and the hashes of the pages they last translated.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// A stored translation.
    #[derive(Debug, Clone)]
    pub struct TranslationRow {
        pub id: String,
        pub org_id: String,
        pub source_space: String,
        pub source_language: String,
        pub language: String,
        /// The instructions document, as JSON text.
        pub instructions: String,
        /// `pending`, `running`, `completed` or `failed`.
        pub status: String,
        /// A run was requested while one was running: run again when it ends.
        pub queued: i64,
        /// The job that holds the current run.
        pub run_job: Option<String>,
        pub run_started_at: Option<i64>,
        /// Why the latest run failed (cleared by a run that completes).
        pub failure: Option<String>,
        pub failed_at: Option<i64>,
        pub result_space: Option<String>,
        pub result_revision: Option<String>,
        pub runs: i64,
        pub total_words: i64,
        pub total_duration: i64,
        pub latest_duration: i64,
        pub latest_pages: i64,
        pub latest_words: i64,
        /// Pages ever translated (one hash row each).
        pub total_pages: i64,
        pub created_by: String,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

const SELECT: &str = "SELECT t.id, t.org_id, t.source_space, t.source_language, t.language, \
    t.instructions, t.status, t.queued, t.run_job, t.run_started_at, t.failure, t.failed_at, \
    t.result_space, t.result_revision, t.runs, t.total_words, t.total_duration, \
    t.latest_duration, t.latest_pages, t.latest_words, \
    (SELECT COUNT(*) FROM translation_pages p WHERE p.translation_id = t.id) AS total_pages, \
    t.created_by, t.created_at, t.updated_at FROM translations t";

/// A new translation.
pub struct NewTranslation<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub source_space: &'a str,
    pub source_language: &'a str,
    pub language: &'a str,
    pub instructions: &'a str,
    pub created_by: &'a str,
    pub now: i64,
}

/// Records a translation that has not run yet (`pending`).
pub async fn insert(tx: &mut Tx, t: &NewTranslation<'_>) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO translations (id, org_id, source_space, source_language, language, \
         instructions, status, queued, runs, total_words, total_duration, latest_duration, \
         latest_pages, latest_words, created_by, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, 0, 0, 0, 0, 0, 0, $7, $8, $8)",
        )
        .arg(t.id)
        .arg(t.org_id)
        .arg(t.source_space)
        .arg(t.source_language)
        .arg(t.language)
        .arg(t.instructions)
        .arg(t.created_by)
        .arg(t.now),
    )
    .await?;
    Ok(())
}

/// One translation of an organization.
pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<TranslationRow>> {
    sqlx::query_as(&format!("{SELECT} WHERE t.org_id = $1 AND t.id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await
}

/// One translation by id, whatever its organization (for the job that runs it).
pub async fn get_by_id(db: &Db, id: &str) -> sqlx::Result<Option<TranslationRow>> {
    sqlx::query_as(&format!("{SELECT} WHERE t.id = $1"))
        .bind(id)
        .fetch_optional(db.pool())
        .await
}

/// One translation by id, held for update until `tx` ends.
pub async fn lock(tx: &mut Tx, id: &str) -> sqlx::Result<Option<TranslationRow>> {
    // Touching the row takes its lock on PostgreSQL (SQLite's write transaction holds the
    // whole database already).
    tx.execute(&Sql::new("UPDATE translations SET queued = queued WHERE id = $1").arg(id))
        .await?;
    tx.row(&Sql::new(format!("{SELECT} WHERE t.id = $1")).arg(id))
        .await
}

/// A page of an organization's translations after `(created_at, id)`, with the total.
pub async fn list(
    db: &Db,
    org_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<TranslationRow>, i64)> {
    let (ts, id) = after.unwrap_or((i64::MIN, String::new()));
    let rows = sqlx::query_as(&format!(
        "{SELECT} WHERE t.org_id = $1 AND (t.created_at > $2 OR (t.created_at = $2 AND t.id > $3)) \
         ORDER BY t.created_at, t.id LIMIT $4"
    ))
    .bind(org_id)
    .bind(ts)
    .bind(id)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    let count = sqlx::query_scalar("SELECT COUNT(*) FROM translations WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok((rows, count))
}

/// Replaces the instructions; false when the translation is gone.
pub async fn set_instructions(
    tx: &mut Tx,
    id: &str,
    instructions: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let res = tx
        .execute(
            &Sql::new("UPDATE translations SET instructions = $2, updated_at = $3 WHERE id = $1")
                .arg(id)
                .arg(instructions)
                .arg(now),
        )
        .await?;
    Ok(res == 1)
}

/// Deletes a translation of the organization (its page hashes go with it).
pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> sqlx::Result<()> {
    tx.execute(&Sql::new("DELETE FROM translation_pages WHERE translation_id IN (SELECT id FROM translations WHERE org_id = $1 AND id = $2)")
        .arg(org_id)
        .arg(id)
        )
        .await?;
    tx.execute(
        &Sql::new("DELETE FROM translations WHERE org_id = $1 AND id = $2")
            .arg(org_id)
            .arg(id),
    )
    .await?;
    Ok(())
}

/// Marks a run as requested: `pending` under the job `job`.
pub async fn mark_pending(tx: &mut Tx, id: &str, job: &str, now: i64) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "UPDATE translations SET status = 'pending', queued = 0, run_job = $2, updated_at = $3 \
         WHERE id = $1",
    )
    .arg(id)
    .arg(job)
    .arg(now)
    )
    .await?;
    Ok(())
}

/// Records a run requested while one runs: it follows the current one.
pub async fn mark_queued(tx: &mut Tx, id: &str) -> sqlx::Result<()> {
    tx.execute(&Sql::new("UPDATE translations SET queued = 1 WHERE id = $1").arg(id))
        .await?;
    Ok(())
}

/// Starts the run held by `job`: only if the translation waits for that job (or that job
/// already started it and is claimed again after its node stopped). False otherwise.
pub async fn start(db: &Db, id: &str, job: &str, now: i64) -> sqlx::Result<bool> {
    let res = db
        .execute(
            &Sql::new(
                "UPDATE translations SET status = 'running', run_started_at = $3, updated_at = $3 \
         WHERE id = $1 AND run_job = $2 AND status IN ('pending', 'running')",
            )
            .arg(id)
            .arg(job)
            .arg(now),
            &[],
        )
        .await?;
    Ok(res == 1)
}

/// Records a failed run of `job`, leaving the result as it was.
pub async fn fail(tx: &mut Tx, id: &str, job: &str, reason: &str, now: i64) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "UPDATE translations SET status = 'failed', failure = $3, failed_at = $4, updated_at = $4 \
         WHERE id = $1 AND run_job = $2",
    )
    .arg(id)
    .arg(job)
    .arg(reason)
    .arg(now)
    )
    .await?;
    Ok(())
}

/// What a completed run changes.
pub struct Completed<'a> {
    pub result_space: &'a str,
    pub result_revision: &'a str,
    pub duration_s: i64,
    pub pages: i64,
    pub words: i64,
}

/// Records a completed run of `job`, inside the transaction that saved its result.
pub async fn complete(
    tx: &mut Tx,
    id: &str,
    job: &str,
    c: &Completed<'_>,
    now: i64,
) -> sqlx::Result<bool> {
    let res = tx
        .execute(
            &Sql::new(
                "UPDATE translations SET status = 'completed', failure = NULL, failed_at = NULL, \
         result_space = $3, result_revision = $4, runs = runs + 1, \
         total_words = total_words + $5, total_duration = total_duration + $6, \
         latest_duration = $6, latest_pages = $7, latest_words = $5, updated_at = $8 \
         WHERE id = $1 AND run_job = $2",
            )
            .arg(id)
            .arg(job)
            .arg(c.result_space)
            .arg(c.result_revision)
            .arg(c.words)
            .arg(c.duration_s)
            .arg(c.pages)
            .arg(now),
        )
        .await?;
    Ok(res == 1)
}

/// Most translations of one source [`language_group`] reads.
const MAX_GROUP: i64 = 200;

/// The translations, with a result space, of the source `space_id` is (itself, or the
/// source of a translation whose result it is): `(source, result)` pairs, in the order they
/// were made.
pub async fn language_group(
    db: &Db,
    org_id: &str,
    space_id: &str,
) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT source_space, result_space FROM translations \
         WHERE org_id = $1 AND result_space IS NOT NULL AND (source_space = $2 OR source_space IN \
         (SELECT source_space FROM translations WHERE org_id = $1 AND result_space = $2)) \
         ORDER BY created_at, id LIMIT $3",
    )
    .bind(org_id)
    .bind(space_id)
    .bind(MAX_GROUP)
    .fetch_all(db.pool())
    .await
}

/// The hash last translated for each page of a translation.
pub async fn page_hashes(db: &Db, id: &str) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as("SELECT page_id, hash FROM translation_pages WHERE translation_id = $1")
        .bind(id)
        .fetch_all(db.pool())
        .await
}

/// Records the hashes of pages just translated.
pub async fn put_page_hashes(
    tx: &mut Tx,
    id: &str,
    pages: &[(String, String)],
) -> sqlx::Result<()> {
    for (page, hash) in pages {
        tx.execute(&Sql::new(
            "INSERT INTO translation_pages (translation_id, page_id, hash) VALUES ($1, $2, $3) \
             ON CONFLICT (translation_id, page_id) DO UPDATE SET hash = excluded.hash",
        )
        .arg(id)
        .arg(page)
        .arg(hash)
        )
        .await?;
    }
    Ok(())
}
