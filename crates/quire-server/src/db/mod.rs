//! The database: one connection pool over SQLite (embedded default) or PostgreSQL
//! (scale-out), with one schema and one set of queries written in their common dialect.
//!
//! Portability rules kept by every query: `$n` placeholders (both engines accept them),
//! `BIGINT` for integers, flags and millisecond timestamps, `TEXT` for strings and JSON.

pub mod inline;
mod migrations;
pub mod sql;
mod tx;
mod wal;

pub use migrations::{known_versions, pending as pending_migrations};
pub use tx::{Row, Scalar, Tx};
pub use wal::Stamp;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use sqlx::any::AnyPoolOptions;
use sqlx::{Any, AnyPool};

use crate::scopes::{Generations, Scope};
use inline::{FromSqlite, Reader};
use sql::Sql;

/// Which engine a pool talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite, file-backed, WAL mode.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A shared handle on the database.
#[derive(Clone, Debug)]
pub struct Db {
    pool: AnyPool,
    dialect: Dialect,
    /// SQLite files only: bounded reads run on the caller's thread (see [`inline`]).
    reader: Option<Arc<Reader>>,
    /// SQLite files only: the connection every write transaction uses, in place (see [`tx`]).
    in_place: Option<tx::Writer>,
    /// In-memory SQLite only: the turn to write. SQLite lets one transaction write at a
    /// time, and a connection waiting for the lock polls it in growing sleeps; the writers
    /// of this process wait here instead, in order, without holding a connection.
    writer: Option<Arc<tokio::sync::Semaphore>>,
    /// What this node has cached rests on these; every write transaction moves what it
    /// changes (see [`crate::scopes`]).
    generations: Arc<Generations>,
}

/// How long a write waits for its turn before giving up (as long as SQLite's
/// `busy_timeout`: a turn held longer is a bug to be logged, not a hang).
const WRITER_WAIT: Duration = Duration::from_secs(10);

impl Dialect {
    /// The dialect of a database URL; `None` for anything else.
    pub fn of_url(url: &str) -> Option<Self> {
        if url.starts_with("sqlite:") {
            Some(Dialect::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Some(Dialect::Postgres)
        } else {
            None
        }
    }
}

/// The clause that locks the rows a read-modify-write selects: `FOR UPDATE` on PostgreSQL;
/// nothing on SQLite, where `BEGIN IMMEDIATE` already makes writers take turns.
pub fn for_update(tx: &Tx) -> &'static str {
    match tx.dialect() {
        Dialect::Postgres => " FOR UPDATE",
        Dialect::Sqlite => "",
    }
}

impl Db {
    /// Connects to `url` (`sqlite://path` or `postgres://...`) and brings its schema up to date.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        let Some(dialect) = Dialect::of_url(url) else {
            anyhow::bail!("unsupported database URL (expected sqlite:// or postgres://): {url}");
        };
        if dialect == Dialect::Sqlite {
            no_memory_statistics();
        }
        let pool = match dialect {
            Dialect::Sqlite => AnyPoolOptions::new()
                .max_connections(8)
                // A connection to a local file cannot break between uses: testing it before
                // each use would double the round trips to its worker thread.
                .test_before_acquire(false)
                .min_connections(1)
                // Per-connection settings; foreign keys are on by default in the driver.
                .after_connect(|conn, _meta| {
                    Box::pin(async move {
                        use sqlx::Executor;
                        conn.execute(
                            "PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000; \
                             PRAGMA synchronous = NORMAL;",
                        )
                        .await?;
                        Ok(())
                    })
                })
                .connect(&sqlite_url(url))
                .await
                .with_context(|| format!("cannot open SQLite database {url}"))?,
            Dialect::Postgres => AnyPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(30))
                .connect(url)
                .await
                .with_context(|| "cannot connect to PostgreSQL".to_string())?,
        };
        let mut db = Db {
            pool,
            dialect,
            reader: None,
            in_place: None,
            writer: (dialect == Dialect::Sqlite).then(|| Arc::new(tokio::sync::Semaphore::new(1))),
            generations: Arc::default(),
        };
        if dialect == Dialect::Sqlite {
            // WAL is a property of the database file: set once, kept by every connection.
            sqlx::query("PRAGMA journal_mode = WAL")
                .execute(&db.pool)
                .await?;
        }
        migrations::run(&db).await?;
        if let Some(path) = sqlite_file(url) {
            let reader = Reader::open(&path)
                .with_context(|| format!("cannot open SQLite database {url} for reading"))?;
            db.reader = Some(Arc::new(reader));
            db.in_place = Some(
                tx::open_writer(&path)
                    .with_context(|| format!("cannot open SQLite database {url} for writing"))?,
            );
            db.writer = None;
        }
        Ok(db)
    }

    /// Every row of a bounded read (one row, a page with a `LIMIT`, a list of keys).
    pub async fn rows<T>(&self, q: &Sql) -> sqlx::Result<Vec<T>>
    where
        T: FromSqlite + for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        match &self.reader {
            Some(reader) => reader.rows(q).map_err(driver_error),
            None => q.query_as().fetch_all(&self.pool).await,
        }
    }

    /// The first row of a bounded read, if any.
    pub async fn row<T>(&self, q: &Sql) -> sqlx::Result<Option<T>>
    where
        T: FromSqlite + for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        match &self.reader {
            Some(reader) => reader.row(q).map_err(driver_error),
            None => q.query_as().fetch_optional(&self.pool).await,
        }
    }

    /// The one value a bounded read returns (a count, a flag).
    pub async fn scalar<T>(&self, q: &Sql) -> sqlx::Result<T>
    where
        T: rusqlite::types::FromSql
            + for<'r> sqlx::Decode<'r, Any>
            + sqlx::Type<Any>
            + Send
            + Unpin,
    {
        match &self.reader {
            Some(reader) => reader.scalar(q).map_err(driver_error),
            None => q.query_scalar().fetch_one(&self.pool).await,
        }
    }

    /// The pool, for reads.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Where a SQLite database's commits stand: two equal stamps mean that nothing was
    /// committed between them, by any connection or process (see [`wal`]). `None` on
    /// PostgreSQL, or when the file cannot be watched: callers read instead.
    pub fn stamp(&self) -> Option<Stamp> {
        self.reader.as_ref()?.stamp()
    }

    /// The engine behind this handle.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The generations this node's cached values rest on, which its writes move.
    pub fn generations(&self) -> &Arc<Generations> {
        &self.generations
    }

    /// Begins a write transaction, which must say what it changes before it ends
    /// ([`Tx::touches`]). On SQLite it takes the write lock up front (`BEGIN IMMEDIATE`) so
    /// that a read-then-write transaction cannot fail to upgrade.
    #[track_caller]
    pub fn begin(&self) -> impl std::future::Future<Output = Result<Tx, sqlx::Error>> + Send + '_ {
        let moves = tx::Moves::new(self.generations.clone(), std::panic::Location::caller());
        async move {
            if let Some(writer) = &self.in_place {
                return Tx::in_place(writer, WRITER_WAIT, moves).await;
            }
            let turn = match &self.writer {
                Some(writer) => {
                    match tokio::time::timeout(WRITER_WAIT, writer.clone().acquire_owned()).await {
                        Ok(Ok(turn)) => Some(turn),
                        _ => {
                            tracing::warn!(
                                "a write waited {WRITER_WAIT:?} for its turn; trying the lock"
                            );
                            None
                        }
                    }
                }
                None => None,
            };
            let tx = match self.dialect {
                Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
                Dialect::Postgres => self.pool.begin().await?,
            };
            Ok(Tx::pooled(tx, turn, moves))
        }
    }

    /// Runs one statement that returns a row (`... RETURNING`) in a transaction of its own,
    /// which changes `touches`.
    #[track_caller]
    pub fn returning<'a, T: Row + 'a>(
        &'a self,
        q: &'a Sql,
        touches: &'a [Scope<'a>],
    ) -> impl std::future::Future<Output = sqlx::Result<Option<T>>> + Send + 'a {
        let begin = self.begin();
        async move {
            let mut tx = begin.await?;
            tx.touches(touches);
            let row = tx.row(q).await?;
            tx.commit().await?;
            Ok(row)
        }
    }

    /// Runs one statement, which changes `touches`, in a transaction of its own; the number
    /// of rows it changed.
    #[track_caller]
    pub fn execute<'a>(
        &'a self,
        q: &'a Sql,
        touches: &'a [Scope<'a>],
    ) -> impl std::future::Future<Output = sqlx::Result<u64>> + Send + 'a {
        let begin = self.begin();
        async move {
            let mut tx = begin.await?;
            tx.touches(touches);
            let n = tx.execute(q).await?;
            tx.commit().await?;
            Ok(n)
        }
    }

    /// Writes a consistent copy of a SQLite database to `path` (one read transaction, while
    /// writers go on); an error on PostgreSQL, whose copies are `pg_dump`'s.
    pub async fn snapshot_into(&self, path: &std::path::Path) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.dialect == Dialect::Sqlite,
            "PostgreSQL databases are copied with pg_dump"
        );
        let target = path
            .to_str()
            .context("the backup path must be valid UTF-8")?
            .replace('\'', "''");
        sqlx::query(&format!("VACUUM INTO '{target}'"))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A read error of the inline path, as sqlx reports a driver's.
fn driver_error(e: rusqlite::Error) -> sqlx::Error {
    tx::error(e)
}

/// The file behind a SQLite URL; `None` for an in-memory database, which other connections
/// cannot open.
fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    use std::str::FromStr;
    if Dialect::of_url(url) != Some(Dialect::Sqlite) || url.contains("mode=memory") {
        return None;
    }
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url).ok()?;
    let path = options.get_filename();
    (path.as_os_str() != ":memory:").then(|| path.to_path_buf())
}

/// Turns off SQLite's memory statistics, once per process, before its first connection.
/// They are on by default and take one process-wide mutex on every allocation, which the
/// pool's connections (each on its own thread) then queue for; Quire never reads them.
fn no_memory_statistics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sqlite3_config` is called before this process opens any SQLite connection
        // (or, if one was opened already, it returns SQLITE_MISUSE and changes nothing); the
        // option takes one int argument.
        let rc = unsafe {
            libsqlite3_sys::sqlite3_config(
                libsqlite3_sys::SQLITE_CONFIG_MEMSTATUS,
                0 as std::ffi::c_int,
            )
        };
        if rc != libsqlite3_sys::SQLITE_OK {
            tracing::debug!(rc, "SQLite memory statistics left as they were");
        }
    });
}

/// A SQLite URL that creates the file when missing, unless the caller chose a mode.
fn sqlite_url(url: &str) -> String {
    if url.contains("mode=") {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}
