//! The durable job table: background work that survives restarts and is shared safely by
//! several server nodes (a job is claimed with a lease; an expired lease is claimed again).
//! A job given up on keeps its row with `failed_at` set and is never claimed again.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::ids::new_id;

crate::db::inline::row! {
    /// A claimed job.
    #[derive(Debug, Clone)]
    pub struct Job {
        pub id: String,
        pub kind: String,
        pub payload: String,
        /// Claims so far, this one included.
        pub attempts: i64,
        /// Runs that ended in an error (the others of `attempts` were interrupted, but the
        /// one running now).
        pub failures: i64,
        /// When the claim's lease runs out: also the claim's fencing token, since a later
        /// claim of the same job always sets a later value.
        pub lease: i64,
    }
}

/// Enqueues a job to run at `run_at`; returns its id.
pub async fn enqueue(
    tx: &mut Tx,
    kind: &str,
    payload: &str,
    run_at: i64,
    now: i64,
) -> sqlx::Result<String> {
    let id = new_id();
    tx.execute(&Sql::new(
        "INSERT INTO jobs (id, kind, payload, run_at, attempts, created_at) VALUES ($1, $2, $3, $4, 0, $5)",
    )
    .arg(&id)
    .arg(kind)
    .arg(payload)
    .arg(run_at)
    .arg(now)
    )
    .await?;
    Ok(id)
}

/// Enqueues a job to run at `run_at` unless one of the same kind and payload is already
/// waiting to be claimed (that one will see what this one would, since jobs read the state
/// they act on when they run); returns whether it enqueued one.
pub async fn enqueue_once(
    tx: &mut Tx,
    kind: &str,
    payload: &str,
    run_at: i64,
    now: i64,
) -> sqlx::Result<bool> {
    let done = tx
        .execute(
            &Sql::new(
                "INSERT INTO jobs (id, kind, payload, run_at, attempts, created_at) \
         SELECT $1, $2, $3, $4, 0, $5 WHERE NOT EXISTS (SELECT 1 FROM jobs \
         WHERE kind = $2 AND payload = $3 AND locked_until IS NULL AND failed_at IS NULL \
         AND run_at <= $4)",
            )
            .arg(new_id())
            .arg(kind)
            .arg(payload)
            .arg(run_at)
            .arg(now),
        )
        .await?;
    Ok(done == 1)
}

/// Claims one due job for `lease_ms`, or none; a job given up on is never claimed. The
/// guard in the outer `WHERE` makes two nodes racing for the same row claim it once: the
/// loser's update matches nothing (on PostgreSQL it waits for the winner's row, then finds
/// the guard false).
pub async fn claim(db: &Db, now: i64, lease_ms: i64) -> sqlx::Result<Option<Job>> {
    db.returning(
        &Sql::new(
            "UPDATE jobs SET locked_until = $2, attempts = attempts + 1 \
         WHERE id = (SELECT id FROM jobs WHERE run_at <= $1 AND failed_at IS NULL \
                     AND (locked_until IS NULL OR locked_until < $1) ORDER BY run_at, id LIMIT 1) \
         AND run_at <= $1 AND failed_at IS NULL AND (locked_until IS NULL OR locked_until < $1) \
         RETURNING id, kind, payload, attempts, failures, locked_until AS lease",
        )
        .arg(now)
        .arg(now + lease_ms),
        &[],
    )
    .await
}

/// Extends the lease of a job still held under `lease` to `until`; false when another
/// claim took it over (or it is gone).
pub async fn renew(db: &Db, id: &str, lease: i64, until: i64) -> sqlx::Result<bool> {
    let done = db
        .execute(
            &Sql::new("UPDATE jobs SET locked_until = $3 WHERE id = $1 AND locked_until = $2")
                .arg(id)
                .arg(lease)
                .arg(until),
            &[],
        )
        .await?;
    Ok(done == 1)
}

/// Removes a finished job still held under `lease`; false when another claim took it over.
pub async fn finish(db: &Db, id: &str, lease: i64) -> sqlx::Result<bool> {
    let done = db
        .execute(
            &Sql::new("DELETE FROM jobs WHERE id = $1 AND locked_until = $2")
                .arg(id)
                .arg(lease),
            &[],
        )
        .await?;
    Ok(done == 1)
}

/// Records a failed run of the claim under `lease` and schedules a retry at `retry_at`.
pub async fn fail(db: &Db, id: &str, lease: i64, error: &str, retry_at: i64) -> sqlx::Result<()> {
    db.execute(&Sql::new(
        "UPDATE jobs SET last_error = $3, run_at = $4, locked_until = NULL, failures = failures + 1 \
         WHERE id = $1 AND locked_until = $2",
    )
    .arg(id)
    .arg(lease)
    .arg(error)
    .arg(retry_at), &[])
    .await?;
    Ok(())
}

/// Gives up on the job claimed under `lease`, after a failed run of this claim or none: it
/// is kept, failed with `reason`, and never claimed again; false when another claim took
/// it over.
pub async fn give_up(
    tx: &mut Tx,
    id: &str,
    lease: i64,
    failed_run: bool,
    reason: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = tx
        .execute(
            &Sql::new(
                "UPDATE jobs SET failed_at = $3, last_error = $4, locked_until = NULL, \
         failures = failures + $5 WHERE id = $1 AND locked_until = $2",
            )
            .arg(id)
            .arg(lease)
            .arg(now)
            .arg(reason)
            .arg(i64::from(failed_run)),
        )
        .await?;
    Ok(done == 1)
}

crate::db::inline::row! {
    /// A job given up on, as the operator sees it.
    #[derive(Debug, Clone)]
    pub struct FailedJob {
        pub id: String,
        pub kind: String,
        pub payload: String,
        /// Claims (starts) and runs that ended in an error.
        pub attempts: i64,
        pub failures: i64,
        pub failed_at: i64,
        /// Why it was given up on.
        pub reason: Option<String>,
    }
}

/// The jobs given up on, latest first, at most `limit`.
pub async fn failed(db: &Db, limit: i64) -> sqlx::Result<Vec<FailedJob>> {
    sqlx::query_as(
        "SELECT id, kind, payload, attempts, failures, failed_at, last_error AS reason FROM jobs \
         WHERE failed_at IS NOT NULL ORDER BY failed_at DESC, id LIMIT $1",
    )
    .bind(limit)
    .fetch_all(db.pool())
    .await
}

/// Jobs given up on, per kind (for the operator's metrics).
pub async fn failed_counts(db: &Db) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT kind, COUNT(*) FROM jobs WHERE failed_at IS NOT NULL GROUP BY kind ORDER BY kind",
    )
    .fetch_all(db.pool())
    .await
}

/// How many jobs of a kind are waiting, not given up on (for tests and health).
pub async fn count(db: &Db, kind: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE kind = $1 AND failed_at IS NULL")
        .bind(kind)
        .fetch_one(db.pool())
        .await
}

/// Jobs due by `now` and not held by a node, per kind, with the oldest one's `run_at`
/// (for the operator's metrics).
pub async fn due(db: &Db, now: i64) -> sqlx::Result<Vec<(String, i64, i64)>> {
    sqlx::query_as(
        "SELECT kind, COUNT(*), MIN(run_at) FROM jobs WHERE run_at <= $1 AND failed_at IS NULL \
         AND (locked_until IS NULL OR locked_until < $1) GROUP BY kind",
    )
    .bind(now)
    .fetch_all(db.pool())
    .await
}
