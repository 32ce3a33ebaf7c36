//! What a space's git commits are made from beyond its revisions: the author and message
//! each commit was first made with, kept so that renaming a user or a change request never
//! changes a commit id already handed out.

use std::collections::HashMap;

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::store::change_requests::ChangeRequestRow;
use crate::store::revisions::RevisionRow;

/// Every revision of a space, oldest first (parents before their children).
pub async fn revisions(db: &Db, space_id: &str) -> sqlx::Result<Vec<RevisionRow>> {
    sqlx::query_as(
        "SELECT id, space_id, parents, kind, root, created_by, created_at FROM revisions \
         WHERE space_id = $1 ORDER BY created_at, id",
    )
    .bind(space_id)
    .fetch_all(db.pool())
    .await
}

/// Every change request of a space.
pub async fn change_requests(db: &Db, space_id: &str) -> sqlx::Result<Vec<ChangeRequestRow>> {
    sqlx::query_as(&format!(
        "SELECT {} FROM change_requests WHERE space_id = $1",
        super::change_requests::COLUMNS
    ))
    .bind(space_id)
    .fetch_all(db.pool())
    .await
}

crate::db::inline::row! {
    /// The author and message a revision's commit is made with.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Identity {
        pub revision_id: String,
        /// `Name <address>`.
        pub author: String,
        pub message: String,
        /// The pushed commit, for a revision made by a push (`None`: Quire makes the commit).
        pub oid: Option<String>,
        /// The commit Quire made from the revision, once a node has made it.
        pub commit_oid: Option<String>,
        /// The blob of where its content is in its commit's tree, when not where Quire's
        /// layout puts it (`gitsync::carry::Placement` as JSON).
        pub placed: Option<String>,
        /// Whether its commit is made from its parents' trees (`0`: laid out whole, as
        /// commits recorded before were).
        pub carried: i64,
    }
}

/// The identities recorded for a space's revisions, by revision id.
pub async fn identities(db: &Db, space_id: &str) -> sqlx::Result<HashMap<String, Identity>> {
    let rows: Vec<Identity> = sqlx::query_as(
        "SELECT revision_id, author, message, oid, commit_oid, placed, carried FROM git_commits \
         WHERE space_id = $1",
    )
    .bind(space_id)
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.revision_id.clone(), r))
        .collect())
}

/// Records identities not recorded yet (a node that recorded one first keeps it).
pub async fn record(tx: &mut Tx, space_id: &str, identities: &[Identity]) -> sqlx::Result<()> {
    for i in identities {
        tx.execute(
            &Sql::new(
                "INSERT INTO git_commits (revision_id, space_id, author, message, oid, placed) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (revision_id) DO NOTHING",
            )
            .arg(&i.revision_id)
            .arg(space_id)
            .arg(&i.author)
            .arg(&i.message)
            .arg(i.oid.as_deref())
            .arg(i.placed.as_deref()),
        )
        .await?;
    }
    Ok(())
}

/// Records the commits made from revisions, `(revision id, commit id)`, and moves the
/// space's listing version: answers that show a revision's commit are made again.
pub async fn record_commit_ids(
    tx: &mut Tx,
    space_id: &str,
    made: &[(String, String)],
) -> sqlx::Result<()> {
    for (revision, oid) in made {
        tx.execute(
            &Sql::new(
                "UPDATE git_commits SET commit_oid = $1 \
                 WHERE revision_id = $2 AND space_id = $3 AND commit_oid IS NULL",
            )
            .arg(oid)
            .arg(revision)
            .arg(space_id),
        )
        .await?;
    }
    super::spaces::touch_listings(
        tx,
        &[super::spaces::Listing::ChangeRequests],
        "$1",
        space_id,
    )
    .await
}

/// Records where a revision's content is in its commit's tree (a node that recorded it
/// first keeps it: every node makes the same).
pub async fn record_placed(
    db: &Db,
    space_id: &str,
    placed: &[(String, String)],
) -> sqlx::Result<()> {
    for (revision, blob) in placed {
        db.execute(
            &Sql::new(
                "UPDATE git_commits SET placed = $1 \
                 WHERE revision_id = $2 AND space_id = $3 AND placed IS NULL",
            )
            .arg(blob)
            .arg(revision)
            .arg(space_id),
            &[],
        )
        .await?;
    }
    Ok(())
}

/// The recorded identity of a revision's commit (with its id once known).
pub async fn identity(
    db: &Db,
    space_id: &str,
    revision_id: &str,
) -> sqlx::Result<Option<Identity>> {
    sqlx::query_as(
        "SELECT revision_id, author, message, oid, commit_oid, placed, carried FROM git_commits \
         WHERE revision_id = $1 AND space_id = $2",
    )
    .bind(revision_id)
    .bind(space_id)
    .fetch_optional(db.pool())
    .await
}

/// [`identity`], in a transaction.
pub async fn identity_tx(
    tx: &mut Tx,
    space_id: &str,
    revision_id: &str,
) -> sqlx::Result<Option<Identity>> {
    tx.row(
        &Sql::new(
            "SELECT revision_id, author, message, oid, commit_oid, placed, carried \
             FROM git_commits WHERE revision_id = $1 AND space_id = $2",
        )
        .arg(revision_id)
        .arg(space_id),
    )
    .await
}

/// Records a pack of pushed objects, kept in blob storage as `blob`.
pub async fn add_pack(db: &Db, space_id: &str, blob: &str, now: i64) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "INSERT INTO git_packs (space_id, blob, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (space_id, blob) DO NOTHING",
        )
        .arg(space_id)
        .arg(blob)
        .arg(now),
        &[],
    )
    .await?;
    Ok(())
}

/// The packs of pushed objects of a space, oldest first.
pub async fn packs(db: &Db, space_id: &str) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT blob FROM git_packs WHERE space_id = $1 ORDER BY created_at, blob")
        .bind(space_id)
        .fetch_all(db.pool())
        .await
}

/// Names a pushed branch after the change request it opened.
pub async fn name_branch(
    db: &Db,
    space_id: &str,
    name: &str,
    change_request_id: &str,
) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "INSERT INTO git_branches (space_id, name, change_request_id) VALUES ($1, $2, $3) \
             ON CONFLICT (space_id, name) DO UPDATE SET change_request_id = $3",
        )
        .arg(space_id)
        .arg(name)
        .arg(change_request_id),
        &[],
    )
    .await?;
    Ok(())
}

/// The pushed branches' names of a space, with their change requests' ids.
pub async fn branches(db: &Db, space_id: &str) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as("SELECT name, change_request_id FROM git_branches WHERE space_id = $1")
        .bind(space_id)
        .fetch_all(db.pool())
        .await
}

crate::db::inline::row! {
    /// A space's Git Sync: the repository, the branch, what was last in step and the latest
    /// operation (`domain::git::sync`).
    #[derive(Debug, Clone)]
    pub struct SyncRow {
        pub space_id: String,
        /// May hold credentials: never shown or logged.
        pub url: String,
        pub ref_name: String,
        pub provider: Option<String>,
        pub tree_url: Option<String>,
        pub commit_url: Option<String>,
        pub project_dir: Option<String>,
        /// 1 once exported: each merge then exports.
        pub exports: i64,
        pub configured_by: String,
        pub synced_commit: Option<String>,
        pub synced_revision: Option<String>,
        /// Blob of where `synced_revision`'s content is in the branch's tree
        /// (`gitsync::carry::Placement` as JSON, paths inside the project folder).
        pub synced_placed: Option<String>,
        pub op_direction: Option<String>,
        pub op_state: Option<String>,
        pub op_started: Option<i64>,
        pub op_ended: Option<i64>,
        pub op_error: Option<String>,
        /// The sync job running now, if one is.
        pub running_job: Option<String>,
        pub updated_at: i64,
    }
}

const SYNC_COLUMNS: &str = "space_id, url, ref_name, provider, tree_url, commit_url, project_dir, \
     exports, configured_by, synced_commit, synced_revision, synced_placed, op_direction, op_state, op_started, \
     op_ended, op_error, running_job, updated_at";

/// A space's Git Sync, if it has one.
pub async fn sync(db: &Db, space_id: &str) -> sqlx::Result<Option<SyncRow>> {
    sqlx::query_as(&format!(
        "SELECT {SYNC_COLUMNS} FROM git_sync WHERE space_id = $1"
    ))
    .bind(space_id)
    .fetch_optional(db.pool())
    .await
}

/// Whether the space's merges export (read in the merge's transaction).
pub async fn exports_tx(tx: &mut Tx, space_id: &str) -> sqlx::Result<bool> {
    let n: Option<i64> = tx
        .scalar_opt(&Sql::new("SELECT exports FROM git_sync WHERE space_id = $1").arg(space_id))
        .await?;
    Ok(n == Some(1))
}

/// Sets up (or changes) a space's Git Sync and starts an operation in `direction`; the
/// synced state is kept while the repository and branch stay the same.
pub async fn configure(tx: &mut Tx, row: &SyncRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO git_sync (space_id, url, ref_name, provider, tree_url, commit_url, \
             project_dir, exports, configured_by, op_direction, op_state, op_started, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'running', $11, $11) \
             ON CONFLICT (space_id) DO UPDATE SET \
             synced_commit = CASE WHEN git_sync.url = $2 AND git_sync.ref_name = $3 \
               THEN git_sync.synced_commit END, \
             synced_revision = CASE WHEN git_sync.url = $2 AND git_sync.ref_name = $3 \
               THEN git_sync.synced_revision END, \
             synced_placed = CASE WHEN git_sync.url = $2 AND git_sync.ref_name = $3 \
               AND git_sync.project_dir IS NOT DISTINCT FROM $7 THEN git_sync.synced_placed END, \
             url = $2, ref_name = $3, provider = COALESCE($4, git_sync.provider), \
             tree_url = COALESCE($5, git_sync.tree_url), \
             commit_url = COALESCE($6, git_sync.commit_url), project_dir = $7, exports = CASE WHEN git_sync.exports = 1 THEN 1 ELSE $8 END, \
             configured_by = $9, op_direction = $10, op_state = 'running', op_started = $11, \
             op_ended = NULL, op_error = NULL, updated_at = $11",
        )
        .arg(&row.space_id)
        .arg(&row.url)
        .arg(&row.ref_name)
        .arg(row.provider.as_deref())
        .arg(row.tree_url.as_deref())
        .arg(row.commit_url.as_deref())
        .arg(row.project_dir.as_deref())
        .arg(row.exports)
        .arg(&row.configured_by)
        .arg(row.op_direction.as_deref())
        .arg(row.updated_at),
    )
    .await?;
    Ok(())
}

/// Claims the space's sync for `job`, an operation in `direction`, unless another job runs
/// one (a claim older than `stale_before` is taken over); whether it was claimed.
pub async fn sync_claim(
    db: &Db,
    space_id: &str,
    job: &str,
    direction: &str,
    now: i64,
    stale_before: i64,
) -> sqlx::Result<bool> {
    let n = db
        .execute(
            &Sql::new(
                "UPDATE git_sync SET running_job = $2, op_direction = $3, op_state = 'running', \
                 op_started = $4, op_ended = NULL, op_error = NULL WHERE space_id = $1 \
                 AND (running_job IS NULL OR running_job = $2 OR op_started < $5)",
            )
            .arg(space_id)
            .arg(job)
            .arg(direction)
            .arg(now)
            .arg(stale_before),
            &[],
        )
        .await?;
    Ok(n == 1)
}

/// What a sync operation left in step: the branch's commit, the revision holding the same
/// content, and the blob of where that content is in the commit's tree.
pub struct Synced<'a> {
    pub commit: &'a str,
    pub revision: &'a str,
    pub placed: Option<&'a str>,
}

/// Ends the running operation: `error` when it failed; `synced` when the repository's branch
/// and a revision now hold the same content.
pub async fn sync_ended(
    db: &Db,
    space_id: &str,
    error: Option<&str>,
    synced: Option<Synced<'_>>,
    now: i64,
) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "UPDATE git_sync SET op_state = $2, op_error = $3, op_ended = $4, \
             running_job = NULL, synced_commit = COALESCE($5, synced_commit), \
             synced_revision = COALESCE($6, synced_revision), \
             synced_placed = CASE WHEN $5 IS NULL THEN synced_placed ELSE $7 END \
             WHERE space_id = $1",
        )
        .arg(space_id)
        .arg(if error.is_some() {
            "failure"
        } else {
            "success"
        })
        .arg(error)
        .arg(now)
        .arg(synced.as_ref().map(|s| s.commit))
        .arg(synced.as_ref().map(|s| s.revision))
        .arg(synced.as_ref().and_then(|s| s.placed)),
        &[],
    )
    .await?;
    Ok(())
}

/// Which of `ids` name spaces that exist (deleted ones included: they can be restored).
pub async fn spaces_present(
    db: &Db,
    ids: &[String],
) -> sqlx::Result<std::collections::HashSet<String>> {
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let mut q = Sql::new("SELECT id FROM spaces WHERE id IN (");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.bind(id.as_str());
    }
    q.push(")");
    let found: Vec<String> = q.query_scalar().fetch_all(db.pool()).await?;
    Ok(found.into_iter().collect())
}
