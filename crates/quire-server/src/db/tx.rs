//! Write transactions.
//!
//! On a SQLite file every write runs through one read-write connection used in place, on
//! the caller's thread, while the transaction holds it. Through sqlx each statement was a
//! round trip to the connection's worker thread (two thread switches, about 0.2 ms under
//! load), made while the transaction held the database's only write lock: a comment's
//! handful of statements kept every other writer waiting a millisecond or more, and writes
//! bounded the whole server (BENCHMARKS.md, "Writes beside reads"). In place, a statement
//! costs what SQLite takes to run it. Holding the connection is also the process's turn to
//! write, so writers queue here in order instead of polling SQLite's lock.
//!
//! On PostgreSQL (and an in-memory SQLite database, which other connections cannot open)
//! a transaction is sqlx's, on a pooled connection.

use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use sqlx::{Any, Transaction};

use super::inline::{bind, positions, Columns, FromSqlite};
use super::sql::Sql;
use super::Dialect;
use crate::scopes::{Generations, Owned, Scope};

/// The one connection that writes to a SQLite file (held: the turn to use it), and the
/// thread that checkpoints what it commits.
#[derive(Clone, Debug)]
pub(super) struct Writer {
    conn: Arc<tokio::sync::Mutex<Connection>>,
    checkpoints: SyncSender<()>,
}

/// WAL frames (pages) past which the writing connection checkpoints by itself after a
/// commit: what bounds the WAL (16 MiB of 4 KiB pages; up to about twice that when the
/// thread's checkpoints keep the writer's from running) when the checkpointing thread cannot
/// finish one between commits. By then that thread has copied nearly every frame, so the
/// writer copies only the last few and the next write starts the WAL again.
const WRITER_CHECKPOINT_FRAMES: u32 = 4000;

/// How long the checkpointing thread rests after a checkpoint: the commits of that time are
/// copied together by the next one.
const CHECKPOINT_PAUSE: Duration = Duration::from_millis(10);

/// Opens the writing connection of a SQLite file (already created, in WAL mode, migrated),
/// and starts its checkpointing thread.
pub(super) fn open_writer(path: &std::path::Path) -> rusqlite::Result<Writer> {
    let conn = Connection::open(path)?;
    // No busy handler: [`Tx::in_place`] waits for the lock without blocking its thread, and
    // once a transaction holds the lock its statements never wait for another connection.
    conn.busy_timeout(Duration::ZERO)?;
    conn.set_prepared_statement_cache_capacity(128);
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; \
         PRAGMA wal_autocheckpoint = {WRITER_CHECKPOINT_FRAMES};"
    ))?;
    Ok(Writer {
        conn: Arc::new(tokio::sync::Mutex::new(conn)),
        checkpoints: start_checkpoints(path)?,
    })
}

/// Starts the thread that copies committed WAL frames into the database file, nudged after
/// each commit through the returned sender; it ends once every sender is gone.
///
/// Why: SQLite checkpoints by default in the connection that commits, after its commit,
/// every 1,000 frames; here that connection holds the process's only turn to write, so one
/// commit in a hundred or so kept every writer waiting some 15 ms (BENCHMARKS.md, "Writes
/// beside reads"). A passive checkpoint from another connection runs beside writers and
/// readers, waiting for neither.
fn start_checkpoints(path: &std::path::Path) -> rusqlite::Result<SyncSender<()>> {
    let conn = Connection::open(path)?;
    // One nudge waiting is enough: the checkpoint after it copies every frame committed.
    let (nudge, nudged) = std::sync::mpsc::sync_channel::<()>(1);
    let spawned = std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || {
            while nudged.recv().is_ok() {
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::warn!(error = %e, "a WAL checkpoint failed");
                }
                std::thread::sleep(CHECKPOINT_PAUSE);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no checkpointing thread: the writer checkpoints alone");
    }
    Ok(nudge)
}

/// A write transaction; dropping it without `commit` rolls back. Once committed it moves the
/// scopes it said it changes ([`Tx::touches`]), or all of them if it said nothing.
pub struct Tx {
    inner: Inner,
    moves: Moves,
}

/// What a transaction changes, moved once it is committed (see [`crate::scopes`]).
pub(super) struct Moves {
    generations: Arc<Generations>,
    /// `None` until the transaction says what it changes.
    touched: Option<Vec<Owned>>,
    /// Whether its commit was asked for: one rolled back changed nothing.
    committing: bool,
    /// Where the transaction was begun, for the log when it says nothing.
    at: &'static std::panic::Location<'static>,
}

impl Moves {
    pub(super) fn new(
        generations: Arc<Generations>,
        at: &'static std::panic::Location<'static>,
    ) -> Self {
        Moves {
            generations,
            touched: None,
            committing: false,
            at,
        }
    }
}

impl Drop for Moves {
    fn drop(&mut self) {
        if !self.committing {
            return;
        }
        match &self.touched {
            Some(scopes) if scopes.is_empty() => {}
            Some(scopes) => self.generations.moved_owned(scopes),
            None => {
                self.generations.note_undeclared(self.at);
                self.generations.moved_all();
            }
        }
    }
}

enum Inner {
    /// SQLite file: the writing connection, held (and in a transaction) until the end.
    InPlace {
        conn: tokio::sync::OwnedMutexGuard<Connection>,
        open: bool,
        /// Nudges the checkpointing thread once committed.
        checkpoints: SyncSender<()>,
    },
    /// PostgreSQL or in-memory SQLite: a pooled sqlx transaction, with the process's turn
    /// to write on SQLite.
    Pooled {
        tx: Transaction<'static, Any>,
        _turn: Option<tokio::sync::OwnedSemaphorePermit>,
    },
    /// Committed or rolled back.
    Done,
}

/// The value types a transaction's one-column reads decode, on both engines.
pub trait Scalar:
    rusqlite::types::FromSql + for<'r> sqlx::Decode<'r, Any> + sqlx::Type<Any> + Send + Unpin
{
}
impl<T> Scalar for T where
    T: rusqlite::types::FromSql + for<'r> sqlx::Decode<'r, Any> + sqlx::Type<Any> + Send + Unpin
{
}

/// The row types a transaction reads, on both engines.
pub trait Row: FromSqlite + for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin {}
impl<T> Row for T where T: FromSqlite + for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin {}

impl Tx {
    /// Begins on the SQLite file's writing connection (`BEGIN IMMEDIATE`: the lock is taken
    /// up front, so a read-then-write transaction cannot fail to upgrade).
    pub(super) async fn in_place(
        writer: &Writer,
        wait: Duration,
        moves: Moves,
    ) -> Result<Tx, sqlx::Error> {
        let deadline = tokio::time::Instant::now() + wait;
        let conn = tokio::time::timeout_at(deadline, writer.conn.clone().lock_owned())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?;
        // Another process (or, in tests, another handle in this one) may hold the lock. The
        // connection has no busy timeout, which would sleep on this thread and could stall
        // the very task that holds the lock: the wait for it is asynchronous instead.
        let mut pause = Duration::from_millis(1);
        loop {
            match conn.execute_batch("BEGIN IMMEDIATE") {
                Ok(()) => break,
                Err(e) if is_busy(&e) && tokio::time::Instant::now() + pause < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(25));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a write transaction could not begin");
                    return Err(error(e));
                }
            }
        }
        Ok(Tx {
            inner: Inner::InPlace {
                conn,
                open: true,
                checkpoints: writer.checkpoints.clone(),
            },
            moves,
        })
    }

    /// Wraps a pooled sqlx transaction.
    pub(super) fn pooled(
        tx: Transaction<'static, Any>,
        turn: Option<tokio::sync::OwnedSemaphorePermit>,
        moves: Moves,
    ) -> Tx {
        Tx {
            inner: Inner::Pooled { tx, _turn: turn },
            moves,
        }
    }

    /// Says that this transaction changes `scopes` (none: nothing any cache rests on); may
    /// be called again as the transaction learns more. What was cached resting on them is
    /// no longer served once the transaction is committed.
    pub fn touches(&mut self, scopes: &[Scope<'_>]) -> &mut Self {
        let touched = self.moves.touched.get_or_insert_with(Vec::new);
        for scope in scopes {
            let owned = scope.owned();
            if !touched.contains(&owned) {
                touched.push(owned);
            }
        }
        self
    }

    /// The engine this transaction writes to.
    pub fn dialect(&self) -> Dialect {
        match &self.inner {
            Inner::InPlace { .. } | Inner::Done => Dialect::Sqlite,
            Inner::Pooled { tx, .. } => {
                let conn: &sqlx::AnyConnection = tx;
                if conn.backend_name().eq_ignore_ascii_case("postgresql") {
                    Dialect::Postgres
                } else {
                    Dialect::Sqlite
                }
            }
        }
    }

    /// Runs a statement; the number of rows it changed (0 for one that only reads).
    pub async fn execute(&mut self, q: &Sql) -> sqlx::Result<u64> {
        match &mut self.inner {
            Inner::InPlace { conn, .. } => {
                // Stepped to the end: a statement may return rows (a lock taken with a
                // `SELECT` on PostgreSQL is a plain one here; `... RETURNING`).
                let reads_only = in_place(conn, q, |stmt| {
                    let reads_only = stmt.readonly();
                    let mut rows = stmt.raw_query();
                    while rows.next()?.is_some() {}
                    Ok(reads_only)
                })?;
                // SQLite's count is the last writing statement's: not this one's if it read.
                Ok(if reads_only { 0 } else { conn.changes() })
            }
            Inner::Pooled { tx, .. } => Ok(q.query().execute(&mut **tx).await?.rows_affected()),
            Inner::Done => Err(ended()),
        }
    }

    /// Every row of a read.
    pub async fn rows<T: Row>(&mut self, q: &Sql) -> sqlx::Result<Vec<T>> {
        match &mut self.inner {
            Inner::InPlace { conn, .. } => in_place(conn, q, |stmt| {
                let at = positions::<T>(stmt)?;
                let mut rows = stmt.raw_query();
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    out.push(T::read(row, &mut Columns::new(&at))?);
                }
                Ok(out)
            }),
            Inner::Pooled { tx, .. } => q.query_as().fetch_all(&mut **tx).await,
            Inner::Done => Err(ended()),
        }
    }

    /// The first row of a read, if any.
    pub async fn row<T: Row>(&mut self, q: &Sql) -> sqlx::Result<Option<T>> {
        match &mut self.inner {
            Inner::InPlace { conn, .. } => in_place(conn, q, |stmt| {
                let at = positions::<T>(stmt)?;
                let mut rows = stmt.raw_query();
                match rows.next()? {
                    Some(row) => Ok(Some(T::read(row, &mut Columns::new(&at))?)),
                    None => Ok(None),
                }
            }),
            Inner::Pooled { tx, .. } => q.query_as().fetch_optional(&mut **tx).await,
            Inner::Done => Err(ended()),
        }
    }

    /// The first column of every row of a read.
    pub async fn scalars<T: Scalar>(&mut self, q: &Sql) -> sqlx::Result<Vec<T>> {
        match &mut self.inner {
            Inner::InPlace { conn, .. } => in_place(conn, q, |stmt| {
                let mut rows = stmt.raw_query();
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    out.push(row.get(0)?);
                }
                Ok(out)
            }),
            Inner::Pooled { tx, .. } => q.query_scalar().fetch_all(&mut **tx).await,
            Inner::Done => Err(ended()),
        }
    }

    /// The first column of the first row of a read, if there is a row.
    pub async fn scalar_opt<T: Scalar>(&mut self, q: &Sql) -> sqlx::Result<Option<T>> {
        match &mut self.inner {
            Inner::InPlace { conn, .. } => in_place(conn, q, |stmt| {
                let mut rows = stmt.raw_query();
                match rows.next()? {
                    Some(row) => Ok(Some(row.get(0)?)),
                    None => Ok(None),
                }
            }),
            Inner::Pooled { tx, .. } => q.query_scalar().fetch_optional(&mut **tx).await,
            Inner::Done => Err(ended()),
        }
    }

    /// The first column of the first row of a read; `RowNotFound` when there is none.
    pub async fn scalar<T: Scalar>(&mut self, q: &Sql) -> sqlx::Result<T> {
        self.scalar_opt(q).await?.ok_or(sqlx::Error::RowNotFound)
    }

    /// Commits the transaction.
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        // From here its changes may be seen, even if this future is dropped half way.
        self.moves.committing = true;
        match &mut self.inner {
            Inner::InPlace {
                conn,
                open,
                checkpoints,
            } => {
                *open = false;
                if let Err(e) = conn.execute_batch("COMMIT") {
                    // A failed COMMIT may leave the transaction open: end it before the
                    // connection serves the next writer.
                    let _ = conn.execute_batch("ROLLBACK");
                    return Err(error(e));
                }
                // Full means a checkpoint is already due.
                let _ = checkpoints.try_send(());
                Ok(())
            }
            Inner::Pooled { .. } => match std::mem::replace(&mut self.inner, Inner::Done) {
                Inner::Pooled { tx, .. } => tx.commit().await,
                _ => unreachable!(),
            },
            Inner::Done => Ok(()),
        }
    }

    /// Rolls the transaction back.
    pub async fn rollback(mut self) -> Result<(), sqlx::Error> {
        match &mut self.inner {
            Inner::InPlace { conn, open, .. } => {
                *open = false;
                conn.execute_batch("ROLLBACK").map_err(error)
            }
            Inner::Pooled { .. } => match std::mem::replace(&mut self.inner, Inner::Done) {
                Inner::Pooled { tx, .. } => tx.rollback().await,
                _ => unreachable!(),
            },
            Inner::Done => Ok(()),
        }
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        // A pooled transaction rolls back by itself when dropped; this one must end before
        // the connection is handed to the next writer.
        if let Inner::InPlace {
            conn, open: true, ..
        } = &mut self.inner
        {
            if let Err(e) = conn.execute_batch("ROLLBACK") {
                tracing::error!(error = %e, "a dropped write transaction did not roll back");
            }
        }
    }
}

/// The error of a statement sent to a transaction that has ended (a bug).
fn ended() -> sqlx::Error {
    sqlx::Error::Protocol("statement sent to an ended transaction".into())
}

fn in_place<R>(
    conn: &Connection,
    q: &Sql,
    run: impl FnOnce(&mut rusqlite::Statement<'_>) -> rusqlite::Result<R>,
) -> sqlx::Result<R> {
    let out = (|| {
        let mut stmt = conn.prepare_cached(q.text())?;
        bind(&mut stmt, q.args())?;
        run(&mut stmt)
    })();
    out.map_err(|e| {
        tracing::warn!(statement = q.text(), error = %e, "write statement failed");
        error(e)
    })
}

/// Whether SQLite refused for another connection's lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(code, _)
        if code.code == rusqlite::ffi::ErrorCode::DatabaseBusy)
}

/// A SQLite error as sqlx reports one, so that callers tell a unique violation (a 409)
/// from a failure the same way on both engines.
pub(super) fn error(e: rusqlite::Error) -> sqlx::Error {
    use rusqlite::ffi::ErrorCode;
    match e {
        rusqlite::Error::QueryReturnedNoRows => sqlx::Error::RowNotFound,
        rusqlite::Error::SqliteFailure(code, message)
            if code.code == ErrorCode::ConstraintViolation =>
        {
            sqlx::Error::Database(Box::new(Constraint {
                message: message.unwrap_or_else(|| code.to_string()),
                extended: code.extended_code,
            }))
        }
        e => sqlx::Error::AnyDriverError(Box::new(e)),
    }
}

/// A constraint SQLite refused a write for.
#[derive(Debug)]
struct Constraint {
    message: String,
    /// SQLite's extended result code, which names the kind of constraint.
    extended: std::ffi::c_int,
}

impl std::fmt::Display for Constraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Constraint {}

impl sqlx::error::DatabaseError for Constraint {
    fn message(&self) -> &str {
        &self.message
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> sqlx::error::ErrorKind {
        use rusqlite::ffi;
        use sqlx::error::ErrorKind;
        match self.extended {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                ErrorKind::UniqueViolation
            }
            ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
            ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
            ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::db::{Db, Sql};

    /// A SQLite database in `dir` holding an empty table `filler`, and the file's path.
    async fn filler(dir: &std::path::Path) -> (Db, std::path::PathBuf) {
        let path = dir.join("t.db");
        let db = Db::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let mut tx = db.begin().await.unwrap();
        tx.touches(&[]);
        tx.execute(&Sql::new("CREATE TABLE filler (data BLOB)"))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        (db, path)
    }

    #[tokio::test]
    async fn commits_reach_the_database_file_without_the_writer_checkpointing() {
        let dir = tempfile::tempdir().unwrap();
        let (db, path) = filler(dir.path()).await;
        let before = std::fs::metadata(&path).unwrap().len();
        let mut tx = db.begin().await.unwrap();
        tx.touches(&[]);
        // About 120 pages: far below the frames at which the writer checkpoints itself.
        for _ in 0..60 {
            tx.execute(&Sql::new("INSERT INTO filler VALUES (zeroblob(8000))"))
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
        // Only a checkpoint copies the pages from the WAL into the database file.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let now = std::fs::metadata(&path).unwrap().len();
            if now >= before + 60 * 8000 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the database file stayed at {now} bytes: nothing was checkpointed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn the_wal_stays_bounded_under_continuous_writes() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _) = filler(dir.path()).await;
        // About 12,000 pages, three times the writer's own checkpoint threshold, in
        // commits of about 100 pages one after another.
        for _ in 0..120 {
            let mut tx = db.begin().await.unwrap();
            tx.touches(&[]);
            for _ in 0..50 {
                tx.execute(&Sql::new("INSERT INTO filler VALUES (zeroblob(8000))"))
                    .await
                    .unwrap();
            }
            tx.commit().await.unwrap();
        }
        // The WAL is reused from its start once a checkpoint has copied all of it: about
        // the threshold's 4,000 pages (16 MiB), more when the checkpointing thread's own
        // checkpoint made the writer's give way (18 to 30 MB in runs of this test). The
        // thread alone never catches up with writes this fast: the WAL kept all 52 MB.
        let wal = std::fs::metadata(dir.path().join("t.db-wal"))
            .unwrap()
            .len();
        assert!(
            wal < 36 << 20,
            "the WAL grew to {wal} bytes for 48 MB written"
        );
    }
}
