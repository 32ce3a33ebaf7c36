//! SQLite reads run on the calling thread, through a small pool of read-only connections.
//!
//! sqlx gives each SQLite connection a worker thread and hands it every query: two thread
//! switches per query, which cost more than the query itself for the point reads and short
//! pages that most requests make. These connections are used in place, with cached prepared
//! statements. Only bounded reads come here (one row, a page with a `LIMIT`, a list of keys),
//! so a request's thread is never held long. With WAL, a read sees every committed write,
//! including the caller's own commit just before it; writes run in place too (see [`super::tx`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags, Statement};

use super::sql::{Arg, Sql};
use super::wal::{Stamp, Watch};

/// Connections kept idle between reads; more are opened under load and closed after.
const IDLE: usize = 8;

/// A row type that can be read from a SQLite statement by column name.
pub trait FromSqlite: Sized {
    /// The column names this row reads, in the order `read` takes them.
    fn fields(out: &mut Vec<&'static str>);

    /// Reads one row, taking its columns' positions in order from `at`.
    fn read(row: &rusqlite::Row<'_>, at: &mut Columns<'_>) -> rusqlite::Result<Self>;
}

/// Tuples of plain values read their columns in order.
macro_rules! tuple_rows {
    ($($t:ident),+) => {
        impl<$($t: rusqlite::types::FromSql),+> FromSqlite for ($($t,)+) {
            fn fields(_out: &mut Vec<&'static str>) {}

            #[allow(unused_assignments)]
            fn read(row: &rusqlite::Row<'_>, _at: &mut Columns<'_>) -> rusqlite::Result<Self> {
                let mut i = 0;
                Ok(($({
                    let v: $t = row.get(i)?;
                    i += 1;
                    v
                },)+))
            }
        }
    };
}
tuple_rows!(A);
tuple_rows!(A, B);
tuple_rows!(A, B, C);
tuple_rows!(A, B, C, D);

/// The positions, in a statement's result, of a row type's fields.
pub struct Columns<'a>(std::slice::Iter<'a, usize>);

impl<'a> Columns<'a> {
    /// The positions found by [`positions`], in field order.
    pub(super) fn new(at: &'a [usize]) -> Self {
        Columns(at.iter())
    }

    /// The position of the next field.
    pub fn take(&mut self) -> rusqlite::Result<usize> {
        self.0
            .next()
            .copied()
            .ok_or(rusqlite::Error::InvalidColumnIndex(usize::MAX))
    }
}

/// Pooled read-only connections to one SQLite file.
pub struct Reader {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Tells whether anything was committed since an earlier stamp (WAL mode only).
    watch: Option<Watch>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").field("path", &self.path).finish()
    }
}

impl Reader {
    /// Reads the database file at `path` (already created and migrated by the write pool).
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let watch = Watch::open(path);
        if watch.is_none() {
            tracing::warn!(path = %path.display(), "SQLite commits cannot be watched: listings read their version every time");
        }
        let reader = Reader {
            path: path.to_path_buf(),
            idle: Mutex::new(Vec::new()),
            watch,
        };
        let first = reader.connect()?;
        reader.put_back(first);
        Ok(reader)
    }

    /// Where the database's commits stand now (see [`super::wal`]).
    pub fn stamp(&self) -> Option<Stamp> {
        self.watch.as_ref()?.stamp()
    }

    fn connect(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }

    fn put_back(&self, conn: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE {
            idle.push(conn);
        }
    }

    fn with<R>(
        &self,
        sql: &Sql,
        run: impl FnOnce(&mut Statement<'_>) -> rusqlite::Result<R>,
    ) -> rusqlite::Result<R> {
        let taken = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match taken {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let out = (|| {
            let mut stmt = conn.prepare_cached(sql.text())?;
            bind(&mut stmt, sql.args())?;
            // The statement cache clears its arguments when it takes the statement back.
            run(&mut stmt)
        })();
        self.put_back(conn);
        out
    }

    /// Every row of `sql`.
    pub fn rows<T: FromSqlite>(&self, sql: &Sql) -> rusqlite::Result<Vec<T>> {
        self.with(sql, |stmt| {
            let at = positions::<T>(stmt)?;
            let mut rows = stmt.raw_query();
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(T::read(row, &mut Columns(at.iter()))?);
            }
            Ok(out)
        })
    }

    /// The first row of `sql`, if any.
    pub fn row<T: FromSqlite>(&self, sql: &Sql) -> rusqlite::Result<Option<T>> {
        self.with(sql, |stmt| {
            let at = positions::<T>(stmt)?;
            let mut rows = stmt.raw_query();
            match rows.next()? {
                Some(row) => Ok(Some(T::read(row, &mut Columns(at.iter()))?)),
                None => Ok(None),
            }
        })
    }

    /// The first column of the first row of `sql`.
    pub fn scalar<T: rusqlite::types::FromSql>(&self, sql: &Sql) -> rusqlite::Result<T> {
        self.with(sql, |stmt| {
            let mut rows = stmt.raw_query();
            match rows.next()? {
                Some(row) => row.get(0),
                None => Err(rusqlite::Error::QueryReturnedNoRows),
            }
        })
    }
}

/// Binds each argument to its `$n` placeholder by name: SQLite numbers named parameters in the
/// order they first appear, which need not be `n`.
pub(super) fn bind(stmt: &mut Statement<'_>, args: &[Arg]) -> rusqlite::Result<()> {
    let mut name = String::with_capacity(4);
    for (i, arg) in args.iter().enumerate() {
        use std::fmt::Write;
        name.clear();
        let _ = write!(name, "${}", i + 1);
        let Some(at) = stmt.parameter_index(&name)? else {
            continue;
        };
        match arg {
            Arg::Text(v) => stmt.raw_bind_parameter(at, v.as_deref())?,
            Arg::Int(v) => stmt.raw_bind_parameter(at, v)?,
            Arg::Bytes(v) => stmt.raw_bind_parameter(at, v.as_deref())?,
        }
    }
    Ok(())
}

/// Where each of `T`'s fields is in the statement's result. The store's queries select a
/// row's columns in its fields' order, which one pass confirms; otherwise each is looked up
/// by name (a search of every column per field, which profiles showed on point reads).
pub(super) fn positions<T: FromSqlite>(stmt: &Statement<'_>) -> rusqlite::Result<Vec<usize>> {
    let mut names = Vec::new();
    T::fields(&mut names);
    let in_order = names.len() <= stmt.column_count()
        && names
            .iter()
            .enumerate()
            .all(|(i, n)| stmt.column_name(i).is_ok_and(|c| c.eq_ignore_ascii_case(n)));
    if in_order {
        return Ok((0..names.len()).collect());
    }
    names.iter().map(|n| stmt.column_index(n)).collect()
}

/// Declares a stored row type, read by column name on both engines: through sqlx's `Any`
/// driver and through [`Reader`]. Field types must decode from both (text, integers, their
/// options, and the closed sets and ids, which implement both). A first field marked
/// `#[flatten]` is a row type of its own, read from the same columns.
macro_rules! row {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            #[flatten] $(#[$imeta:meta])* $ivis:vis $inner:ident : $ity:ty,
            $($(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(#[$imeta])* $ivis $inner: $ity,
            $($(#[$fmeta])* $fvis $field: $ty),+
        }

        impl<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> for $name {
            fn from_row(row: &'r sqlx::any::AnyRow) -> sqlx::Result<Self> {
                use sqlx::Row as _;
                Ok(Self {
                    $inner: <$ity as sqlx::FromRow<'r, sqlx::any::AnyRow>>::from_row(row)?,
                    $($field: row.try_get(stringify!($field))?),+
                })
            }
        }

        impl $crate::db::inline::FromSqlite for $name {
            fn fields(out: &mut Vec<&'static str>) {
                <$ity as $crate::db::inline::FromSqlite>::fields(out);
                out.extend_from_slice(&[$(stringify!($field)),+]);
            }

            fn read(
                row: &rusqlite::Row<'_>,
                at: &mut $crate::db::inline::Columns<'_>,
            ) -> rusqlite::Result<Self> {
                Ok(Self {
                    $inner: <$ity as $crate::db::inline::FromSqlite>::read(row, at)?,
                    $($field: row.get(at.take()?)?),+
                })
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $($(#[$fmeta])* $fvis $field: $ty),+
        }

        impl<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> for $name {
            fn from_row(row: &'r sqlx::any::AnyRow) -> sqlx::Result<Self> {
                use sqlx::Row as _;
                Ok(Self { $($field: row.try_get(stringify!($field))?),+ })
            }
        }

        impl $crate::db::inline::FromSqlite for $name {
            fn fields(out: &mut Vec<&'static str>) {
                out.extend_from_slice(&[$(stringify!($field)),+]);
            }

            fn read(
                row: &rusqlite::Row<'_>,
                at: &mut $crate::db::inline::Columns<'_>,
            ) -> rusqlite::Result<Self> {
                Ok(Self { $($field: row.get(at.take()?)?),+ })
            }
        }
    };
}
pub(crate) use row;

#[cfg(test)]
mod tests {
    use crate::db::sql::Sql;
    use crate::db::Db;
    use crate::values::ChangeRequestStatus;

    super::row! {
        /// A row of the test table.
        #[derive(Debug, PartialEq)]
        struct Item {
            name: String,
            status: ChangeRequestStatus,
            n: i64,
            note: Option<String>,
        }
    }

    async fn db(dir: &tempfile::TempDir) -> Db {
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let db = Db::connect(&url).await.unwrap();
        assert!(db.reader.is_some(), "a SQLite file is read inline");
        sqlx::query("CREATE TABLE items (name TEXT, status TEXT, n BIGINT, note TEXT)")
            .execute(db.pool())
            .await
            .unwrap();
        db
    }

    #[tokio::test]
    async fn a_write_transaction_counts_what_each_statement_changed() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir).await;
        let mut tx = db.begin().await.unwrap();
        let inserted = tx
            .execute(&Sql::new(
                "INSERT INTO items VALUES ('a', 'open', 1, NULL), ('b', 'open', 2, NULL)",
            ))
            .await
            .unwrap();
        assert_eq!(inserted, 2);
        // A read run as a statement (a lock on PostgreSQL) changed nothing.
        let read = tx
            .execute(&Sql::new("SELECT name FROM items WHERE n = $1").arg(1i64))
            .await
            .unwrap();
        assert_eq!(read, 0);
        let n: i64 = tx
            .scalar(&Sql::new("SELECT COUNT(*) FROM items"))
            .await
            .unwrap();
        assert_eq!(n, 2);
        // Dropped without a commit: nothing was written.
        drop(tx);
        let n: i64 = db
            .scalar(&Sql::new("SELECT COUNT(*) FROM items"))
            .await
            .unwrap();
        assert_eq!(n, 0);
    }

    #[tokio::test]
    async fn reads_see_committed_writes_and_bind_placeholders_by_number() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir).await;
        let mut tx = db.begin().await.unwrap();
        tx.execute(&Sql::new(
            "INSERT INTO items VALUES ('a', 'open', 1, NULL), ('b', 'merged', 2, 'x')",
        ))
        .await
        .unwrap();
        tx.commit().await.unwrap();
        // `$2` appears before `$1`: binding by position would swap them.
        let q = Sql::new("SELECT name, status, n, note FROM items WHERE n = $2 OR name = $1")
            .arg("zzz")
            .arg(2i64);
        let rows: Vec<Item> = db.rows(&q).await.unwrap();
        assert_eq!(
            rows,
            vec![Item {
                name: "b".into(),
                status: ChangeRequestStatus::Merged,
                n: 2,
                note: Some("x".into()),
            }]
        );
        let count: i64 = db
            .scalar(&Sql::new("SELECT COUNT(*) FROM items WHERE note IS NULL"))
            .await
            .unwrap();
        assert_eq!(count, 1);
        let none: Option<Item> = db
            .row(&Sql::new("SELECT name, status, n, note FROM items WHERE n = $1").arg(9i64))
            .await
            .unwrap();
        assert_eq!(none, None);
    }

    #[tokio::test]
    async fn columns_are_read_by_name_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir).await;
        sqlx::query("INSERT INTO items VALUES ('a', 'open', 7, 'x')")
            .execute(db.pool())
            .await
            .unwrap();
        let want = Some(Item {
            name: "a".into(),
            status: ChangeRequestStatus::Open,
            n: 7,
            note: Some("x".into()),
        });
        for sql in [
            "SELECT name, status, n, note FROM items",
            "SELECT note, n, status, name FROM items",
            "SELECT n AS extra, name, status, n, note FROM items",
            "SELECT name, status, n, note, 1 AS extra FROM items",
        ] {
            let got: Option<Item> = db.row(&Sql::new(sql)).await.unwrap();
            assert_eq!(got, want, "{sql}");
        }
    }

    #[tokio::test]
    async fn a_stored_value_outside_its_set_is_an_error_not_a_default() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir).await;
        sqlx::query("INSERT INTO items VALUES ('a', 'bogus', 1, NULL)")
            .execute(db.pool())
            .await
            .unwrap();
        let read: sqlx::Result<Vec<Item>> = db
            .rows(&Sql::new("SELECT name, status, n, note FROM items"))
            .await;
        let err = read.expect_err("an unknown status must not decode");
        assert!(err.to_string().contains("bogus"), "{err}");
    }
}
