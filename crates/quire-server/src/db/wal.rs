//! Whether anything was committed to a SQLite database since an earlier moment, learned
//! without a transaction, a lock or a system call.
//!
//! Why: a listing served from memory must first learn that its space's listing version
//! is unchanged on every node. Reading that version takes a read transaction, whose file
//! locks cost a fifth of a cached listing (BENCHMARKS.md, issue 11). Between writes,
//! which are rare beside reads, nothing can have changed at all.
//!
//! How: in WAL mode every connection to a database file, in any process, shares its
//! wal-index (the `-shm` file, mapped into memory). Its header names the last committed
//! frame, the WAL's salts and a counter moved by every transaction, and a commit becomes
//! visible to readers exactly when the writer publishes a new header. SQLite itself
//! decides whether its page cache is still valid by comparing that header with the one it
//! saw last (`walIndexTryHdr`), and the header's layout is part of the file format that
//! every version shares ("WAL-mode File Format" in SQLite's documentation). A [`Watch`]
//! reads the header the same way: the two copies, in the order readers must use, checked
//! against each other and against their checksum. Equal stamps mean nothing was committed
//! in between; anything else (a torn read, a restarted WAL) only makes the caller read.
//!
//! The mapping is SQLite's own, obtained through the VFS (`xShmMap`) of a connection the
//! watch keeps open. While that connection is open in WAL mode it holds a shared lock on
//! the database file, so no other connection can take the database out of WAL mode or
//! delete and recreate the wal-index under it.

use std::ffi::{c_int, c_void};
use std::path::Path;
use std::sync::atomic::{fence, AtomicU32, Ordering};

use rusqlite::{Connection, OpenFlags};

/// Words in one copy of the wal-index header (48 bytes).
const HEADER_WORDS: usize = 12;

/// The wal-index format this reader knows (the header's first word, `iVersion`): a
/// header of any other is not read, and its callers read the database instead.
const WAL_INDEX_VERSION: u32 = 3_007_000;

/// The size of the regions SQLite maps the wal-index in; a mapping call must use the same.
const REGION_BYTES: c_int = 32 * 1024;

/// One reading of the wal-index header. Two equal stamps mean that no transaction was
/// committed between the readings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp([u32; HEADER_WORDS]);

impl Stamp {
    /// A stamp that no database made, told apart by `n` (for tests of what keeps stamps).
    #[cfg(test)]
    pub fn made_up(n: u32) -> Self {
        Self([n; HEADER_WORDS])
    }
}

/// A watch on one database file's commits.
pub struct Watch {
    /// Kept open for as long as `header` is read (see the module documentation).
    _conn: Connection,
    /// The first word of the wal-index, in SQLite's shared mapping.
    header: *const AtomicU32,
}

// SAFETY: `header` points into a shared memory mapping that lives as long as `_conn`, which
// the watch owns and never uses after `open`; the words are only read, atomically.
unsafe impl Send for Watch {}
// SAFETY: as above: reading the mapping from several threads at once only loads words.
unsafe impl Sync for Watch {}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").finish_non_exhaustive()
    }
}

impl Watch {
    /// Watches the database at `path`; `None` when it cannot be watched this way (not in
    /// WAL mode, or a VFS without shared memory), and callers then read as before.
    pub fn open(path: &Path) -> Option<Self> {
        // Read-write, so that SQLite maps the wal-index itself rather than a private copy
        // (which it does only for read-only wal-index files); this connection never writes.
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .ok()?;
        conn.busy_timeout(std::time::Duration::from_secs(10)).ok()?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .ok()?;
        if !mode.eq_ignore_ascii_case("wal") {
            return None;
        }
        // A read opens the WAL and maps the wal-index's first region; the connection keeps
        // both until it closes.
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| {
            row.get::<_, i64>(0)
        })
        .ok()?;
        let header = first_region(&conn)?;
        let watch = Watch {
            _conn: conn,
            header: header.cast::<AtomicU32>(),
        };
        // An initialised header is there once the database has been read in WAL mode.
        watch.stamp()?;
        Some(watch)
    }

    /// The header now; `None` when a writer was publishing a new one meanwhile.
    pub fn stamp(&self) -> Option<Stamp> {
        let first = self.copy(0);
        // Writers publish the second copy, then the first: reading the first, then the
        // second, a reader that sees the new first copy sees the new second one too.
        fence(Ordering::Acquire);
        let second = self.copy(1);
        settled(first, second)
    }

    fn copy(&self, which: usize) -> [u32; HEADER_WORDS] {
        let mut out = [0; HEADER_WORDS];
        for (i, word) in out.iter_mut().enumerate() {
            // SAFETY: the first region is 32 KiB, and both copies lie in its first 96 bytes.
            *word = unsafe { &*self.header.add(which * HEADER_WORDS + i) }.load(Ordering::Relaxed);
        }
        out
    }
}

/// SQLite's mapping of the wal-index's first region, through the connection's VFS.
fn first_region(conn: &Connection) -> Option<*mut c_void> {
    use libsqlite3_sys as ffi;
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: the handle is this live connection's; FILE_POINTER writes one pointer to the
    // main database's open file, valid while the connection is open.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast::<c_void>(),
        )
    };
    if rc != ffi::SQLITE_OK || file.is_null() {
        return None;
    }
    // SAFETY: `file` is the open database file; its methods outlive it.
    let methods = unsafe { (*file).pMethods };
    if methods.is_null() {
        return None;
    }
    // SAFETY: as above; shared-memory methods exist from version 2 of the method table.
    let methods = unsafe { &*methods };
    if methods.iVersion < 2 {
        return None;
    }
    let map = methods.xShmMap?;
    let mut region: *mut c_void = std::ptr::null_mut();
    // SAFETY: region 0, at SQLite's own region size, without extending the file: this
    // returns the mapping the connection's WAL already made (or null if there is none).
    let rc = unsafe { map(file, 0, REGION_BYTES, 0, &raw mut region) };
    (rc == ffi::SQLITE_OK && !region.is_null()).then_some(region)
}

/// The stamp of a header read as its two copies, if they agree, are initialised, of the
/// format this reader knows, and hold their checksum.
fn settled(first: [u32; HEADER_WORDS], second: [u32; HEADER_WORDS]) -> Option<Stamp> {
    // `isInit`, the header's thirteenth byte.
    let initialised = first[3].to_ne_bytes()[0] != 0;
    let known = first[0] == WAL_INDEX_VERSION;
    (first == second && initialised && known && checksum_holds(&first)).then_some(Stamp(first))
}

/// Whether a header copy's last two words are the checksum of the ten before them, as
/// SQLite computes it over the wal-index header (native byte order).
fn checksum_holds(h: &[u32; HEADER_WORDS]) -> bool {
    checksum(h) == (h[HEADER_WORDS - 2], h[HEADER_WORDS - 1])
}

/// SQLite's checksum of a header copy's first ten words.
fn checksum(h: &[u32; HEADER_WORDS]) -> (u32, u32) {
    let (mut s1, mut s2) = (0u32, 0u32);
    for pair in h[..HEADER_WORDS - 2].chunks_exact(2) {
        s1 = s1.wrapping_add(pair[0]).wrapping_add(s2);
        s2 = s2.wrapping_add(pair[1]).wrapping_add(s1);
    }
    (s1, s2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_db(dir: &tempfile::TempDir) -> (std::path::PathBuf, Connection) {
        let path = dir.path().join("w.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1);",
        )
        .unwrap();
        (path, conn)
    }

    #[test]
    fn a_stamp_moves_with_every_commit_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = wal_db(&dir);
        let watch = Watch::open(&path).expect("a WAL database can be watched");
        let before = watch.stamp().unwrap();
        // Reads and an empty transaction commit nothing.
        let _: i64 = writer
            .query_row("SELECT v FROM t", [], |r| r.get(0))
            .unwrap();
        writer.execute_batch("BEGIN; COMMIT;").unwrap();
        assert_eq!(watch.stamp(), Some(before));
        let mut last = before;
        for v in 2..5 {
            writer.execute("UPDATE t SET v = ?1", [v]).unwrap();
            let now = watch.stamp().unwrap();
            assert_ne!(now, last, "commit {v} was not seen");
            last = now;
        }
        // A rolled-back write leaves it as it was.
        writer
            .execute_batch("BEGIN; UPDATE t SET v = 99; ROLLBACK;")
            .unwrap();
        assert_eq!(watch.stamp(), Some(last));
        // A checkpoint that restarts the WAL moves it too; the next commit after that as well.
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        writer.execute("UPDATE t SET v = 7", []).unwrap();
        assert_ne!(watch.stamp(), Some(last));
    }

    /// A header of another format (its version word), even with its checksum made anew, is
    /// not read as a stamp; the same header of the known format is.
    #[test]
    fn a_header_of_an_unknown_format_is_not_a_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _writer) = wal_db(&dir);
        let watch = Watch::open(&path).unwrap();
        let header = watch.stamp().unwrap().0;
        assert_eq!(header[0], WAL_INDEX_VERSION);
        assert_eq!(settled(header, header), Some(Stamp(header)));
        let mut other = header;
        other[0] = WAL_INDEX_VERSION + 1;
        (other[HEADER_WORDS - 2], other[HEADER_WORDS - 1]) = checksum(&other);
        assert!(checksum_holds(&other));
        assert_eq!(settled(other, other), None);
    }

    #[test]
    fn a_database_not_in_wal_mode_is_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE t (v INTEGER);")
            .unwrap();
        assert!(Watch::open(&path).is_none());
    }

    /// Names the database that [`commit_when_asked`] writes to, in the child process.
    const CHILD_DB: &str = "QUIRE_WAL_TEST_CHILD_DB";

    #[test]
    fn a_commit_made_by_another_process_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _writer) = wal_db(&dir);
        let watch = Watch::open(&path).unwrap();
        let before = watch.stamp().unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "db::wal::tests::commit_when_asked",
                "--test-threads=1",
            ])
            .env(CHILD_DB, &path)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let value: i64 = Connection::open(&path)
            .unwrap()
            .query_row("SELECT v FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(value, 42, "the child process committed");
        assert_ne!(watch.stamp(), Some(before));
    }

    /// The other process's half of the test above: commits to the database it is given,
    /// and does nothing when run on its own.
    #[test]
    fn commit_when_asked() {
        if let Some(path) = std::env::var_os(CHILD_DB) {
            let conn = Connection::open(path).unwrap();
            conn.execute("UPDATE t SET v = 42", []).unwrap();
        }
    }
}
