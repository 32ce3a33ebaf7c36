//! Spaces.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::values::{EditMode, Visibility};

crate::db::inline::row! {
    /// A stored space.
    #[derive(Debug, Clone)]
    pub struct SpaceRow {
        pub id: String,
        pub org_id: crate::ids::OrgId,
        pub parent_id: Option<String>,
        pub title: String,
        pub emoji: Option<String>,
        pub visibility: Visibility,
        pub edit_mode: EditMode,
        pub language: Option<String>,
        /// `inherit`, a role, or NULL (no default access).
        pub default_level: Option<String>,
        pub revision_id: String,
        pub change_requests: i64,
        pub change_requests_open: i64,
        pub change_requests_draft: i64,
        pub position: i64,
        pub created_at: i64,
        pub updated_at: i64,
        pub deleted_at: Option<i64>,
    }
}

// Without the count of open comments, which changes with every comment: it is read on its
// own (`comments`), so that a cached row does not rest on it.
const COLUMNS: &str = "id, org_id, parent_id, title, emoji, visibility, edit_mode, language, \
    default_level, revision_id, change_requests, change_requests_open, \
    change_requests_draft, position, created_at, updated_at, deleted_at";

/// A space by id, deleted or not.
pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<SpaceRow>> {
    db.row(&Sql::new(format!("SELECT {COLUMNS} FROM spaces WHERE id = $1")).arg(id))
        .await
}

/// A space by id inside a transaction.
pub async fn get_tx(tx: &mut Tx, id: &str) -> sqlx::Result<Option<SpaceRow>> {
    tx.row(&Sql::new(format!("SELECT {COLUMNS} FROM spaces WHERE id = $1")).arg(id))
        .await
}

/// The count of open comments of a space (outside its change requests); 0 when it is gone.
pub async fn comments(db: &Db, id: &str) -> sqlx::Result<i64> {
    db.scalar(&Sql::new("SELECT COALESCE(MAX(comments), 0) FROM spaces WHERE id = $1").arg(id))
        .await
}

/// Spaces by id, deleted or not; ids that name no space are left out.
pub async fn get_many(db: &Db, ids: &[&str]) -> sqlx::Result<Vec<SpaceRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    db.rows(&by_ids(COLUMNS, ids)).await
}

/// [`get_many`], each space with its count of open comments.
pub async fn get_many_with_comments(db: &Db, ids: &[&str]) -> sqlx::Result<Vec<(SpaceRow, i64)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    with_comments(db, |columns| by_ids(columns, ids)).await
}

/// The rows the query `of(columns)` selects, each with its space's count of open comments.
async fn with_comments(
    db: &Db,
    of: impl FnOnce(&str) -> Sql,
) -> sqlx::Result<Vec<(SpaceRow, i64)>> {
    // The count rides in the column that a counted listing's total takes.
    let columns = format!("{COLUMNS}, comments AS total");
    let rows: Vec<super::Counted<SpaceRow>> = db.rows(&of(&columns)).await?;
    Ok(rows.into_iter().map(|c| (c.row, c.total)).collect())
}

/// The query of [`get_many`], selecting `columns`.
fn by_ids(columns: &str, ids: &[&str]) -> Sql {
    let mut q = Sql::new(format!("SELECT {columns} FROM spaces WHERE id IN ("));
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.bind(*id);
    }
    q.push(")");
    q
}

/// Inserts a space.
pub async fn insert(tx: &mut Tx, s: &SpaceRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "INSERT INTO spaces ({COLUMNS}, comments) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 0)"
        ))
        .arg(&s.id)
        .arg(&s.org_id)
        .arg(&s.parent_id)
        .arg(&s.title)
        .arg(&s.emoji)
        .arg(s.visibility)
        .arg(s.edit_mode)
        .arg(&s.language)
        .arg(&s.default_level)
        .arg(&s.revision_id)
        .arg(s.change_requests)
        .arg(s.change_requests_open)
        .arg(s.change_requests_draft)
        .arg(s.position)
        .arg(s.created_at)
        .arg(s.updated_at)
        .arg(s.deleted_at),
    )
    .await?;
    Ok(())
}

/// The fields of a space a `PATCH` may change; `None` leaves a column as it is.
#[derive(Debug, Default)]
pub struct SpacePatch {
    pub title: Option<String>,
    pub emoji: Option<Option<String>>,
    pub visibility: Option<Visibility>,
    pub edit_mode: Option<EditMode>,
    pub language: Option<String>,
    pub default_level: Option<Option<String>>,
}

/// Writes only the columns a request changes, and only while the space is live: a `PATCH`
/// racing a delete cannot bring the space back. False when the space is gone or deleted.
pub async fn patch(tx: &mut Tx, id: &str, p: &SpacePatch, now: i64) -> sqlx::Result<bool> {
    let mut q = Sql::new("UPDATE spaces SET updated_at = ");
    q.bind(now);
    let text = [
        ("title", p.title.clone().map(Some)),
        ("emoji", p.emoji.clone()),
        (
            "visibility",
            p.visibility.map(|v| Some(v.as_str().to_string())),
        ),
        (
            "edit_mode",
            p.edit_mode.map(|m| Some(m.as_str().to_string())),
        ),
        ("language", p.language.clone().map(Some)),
        ("default_level", p.default_level.clone()),
    ];
    for (column, value) in text {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(value);
        }
    }
    q.push(" WHERE id = ")
        .bind(id)
        .push(" AND deleted_at IS NULL");
    Ok(tx.execute(&q).await? == 1)
}

/// Brings a deleted space back; `to_root` also takes it out of a collection deleted
/// meanwhile (an `in-collection` space at the root becomes private). Only those columns are
/// written. False when the space is live (or gone).
pub async fn restore(tx: &mut Tx, id: &str, to_root: bool, now: i64) -> sqlx::Result<bool> {
    let sql = if to_root {
        "UPDATE spaces SET deleted_at = NULL, updated_at = $2, parent_id = NULL, \
         visibility = CASE WHEN visibility = 'in-collection' THEN 'private' ELSE visibility END \
         WHERE id = $1 AND deleted_at IS NOT NULL"
    } else {
        "UPDATE spaces SET deleted_at = NULL, updated_at = $2 WHERE id = $1 AND deleted_at IS NOT NULL"
    };
    let res = tx.execute(&Sql::new(sql).arg(id).arg(now)).await?;
    Ok(res == 1)
}

/// Where a transfer puts a space or a collection: its organization, its place in the list
/// and, for the transferred item itself, its parent.
#[derive(Clone, Copy)]
pub struct Relocation<'a> {
    /// The destination organization.
    pub org_id: &'a str,
    /// `Some(parent)` moves the item under `parent` (`None`: the root); `None` keeps it
    /// under its collection (which moves with it).
    pub parent: Option<Option<&'a str>>,
    /// Its position in the destination's list.
    pub position: i64,
    /// When.
    pub now: i64,
}

/// Moves a live space to another organization and place, writing only those columns (an
/// `in-collection` space left at the root becomes private). False when the space is gone or
/// deleted.
pub async fn relocate(tx: &mut Tx, id: &str, to: &Relocation<'_>) -> sqlx::Result<bool> {
    relocate_where(tx, id, to, " AND deleted_at IS NULL").await
}

/// As [`relocate`], deleted or not: a space going along with its collection.
pub async fn relocate_any(tx: &mut Tx, id: &str, to: &Relocation<'_>) -> sqlx::Result<bool> {
    relocate_where(tx, id, to, "").await
}

async fn relocate_where(
    tx: &mut Tx,
    id: &str,
    to: &Relocation<'_>,
    only: &str,
) -> sqlx::Result<bool> {
    let mut q = Sql::new("UPDATE spaces SET org_id = ");
    q.bind(to.org_id).push(", position = ").bind(to.position);
    q.push(", updated_at = ").bind(to.now);
    // SET expressions see the row as it was: the test names the parent it will have.
    let at_root = match to.parent {
        Some(parent) => {
            q.push(", parent_id = ").bind(parent.map(str::to_string));
            if parent.is_none() {
                "TRUE"
            } else {
                "FALSE"
            }
        }
        None => "parent_id IS NULL",
    };
    q.push(&format!(
        ", visibility = CASE WHEN visibility = 'in-collection' AND {at_root} \
         THEN 'private' ELSE visibility END"
    ));
    q.push(" WHERE id = ").bind(id).push(only);
    Ok(tx.execute(&q).await? == 1)
}

/// Marks a live space deleted; false when it was already deleted (or is gone).
pub async fn soft_delete(tx: &mut Tx, id: &str, now: i64) -> sqlx::Result<bool> {
    let res = tx.execute(&Sql::new(
        "UPDATE spaces SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL",
    )
    .arg(id)
    .arg(now)
    )
    .await?;
    Ok(res == 1)
}

/// Every live space of an organization (optionally under one collection), in list order.
pub async fn list_live(db: &Db, org_id: &str, parent: Option<&str>) -> sqlx::Result<Vec<SpaceRow>> {
    db.rows(&live(COLUMNS, org_id, parent)).await
}

/// [`list_live`], each space with its count of open comments.
pub async fn list_live_with_comments(
    db: &Db,
    org_id: &str,
    parent: Option<&str>,
) -> sqlx::Result<Vec<(SpaceRow, i64)>> {
    with_comments(db, |columns| live(columns, org_id, parent)).await
}

/// The query of [`list_live`], selecting `columns`.
fn live(columns: &str, org_id: &str, parent: Option<&str>) -> Sql {
    let mut q = Sql::new(format!(
        "SELECT {columns} FROM spaces WHERE deleted_at IS NULL AND org_id = "
    ));
    q.bind(org_id);
    if let Some(parent) = parent {
        q.push(" AND parent_id = ").bind(parent);
    }
    q.push(" ORDER BY position, id");
    q
}

/// The spaces of an organization deleted at or after `since` (still restorable), most
/// recently deleted first.
pub async fn list_deleted(db: &Db, org_id: &str, since: i64) -> sqlx::Result<Vec<SpaceRow>> {
    db.rows(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM spaces WHERE org_id = $1 AND deleted_at >= $2 \
             ORDER BY deleted_at DESC, id LIMIT 500"
        ))
        .arg(org_id)
        .arg(since),
    )
    .await
}

/// Sets the position of a space.
pub async fn set_position(tx: &mut Tx, id: &str, position: i64) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("UPDATE spaces SET position = $2 WHERE id = $1")
            .arg(id)
            .arg(position),
    )
    .await?;
    Ok(())
}

/// Spaces deleted before `cutoff`, for purging.
pub async fn deleted_before(db: &Db, id: &str, cutoff: i64) -> sqlx::Result<bool> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM spaces WHERE id = $1 AND deleted_at IS NOT NULL AND deleted_at <= $2",
    )
    .bind(id)
    .bind(cutoff)
    .fetch_one(db.pool())
    .await?;
    Ok(n > 0)
}

/// The tables holding most of a space's rows, with the columns that name a row beside its
/// `space_id`: [`purge_some`] empties them a batch at a time before [`purge`].
const BULK_ROWS: &[(&str, &str)] = &[
    ("search_postings", "term, block"),
    ("search_delta", "term, page_key"),
    ("search_sections", "page_key, idx"),
    ("search_words", "word"),
    ("search_terms", "term"),
    ("search_pages", "page_key"),
    ("search_dead", "page_key"),
    ("content_objects", "hash"),
];

/// Deletes at most `rows` of a purged space's bulk rows (content objects, its search
/// index) in the first table that still holds some; returns how many went (0: none left).
/// A purge runs these in transactions of their own, so that the write lock is never held
/// long: nothing references these rows, and a space past its retention is never restored.
pub async fn purge_some(tx: &mut Tx, id: &str, rows: i64) -> sqlx::Result<u64> {
    for (table, key) in BULK_ROWS {
        let done = tx
            .execute(
                &Sql::new(format!(
                    "DELETE FROM {table} WHERE space_id = $1 AND ({key}) IN \
             (SELECT {key} FROM {table} WHERE space_id = $1 LIMIT $2)"
                ))
                .arg(id)
                .arg(rows),
            )
            .await?;
        if done > 0 {
            return Ok(done);
        }
    }
    Ok(0)
}

/// Removes a space and, by cascade, everything stored under it.
pub async fn purge(tx: &mut Tx, id: &str) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("DELETE FROM content_permissions WHERE target_kind = 'space' AND target_id = $1")
            .arg(id),
    )
    .await?;
    tx.execute(&Sql::new("DELETE FROM spaces WHERE id = $1").arg(id))
        .await?;
    Ok(())
}

/// The next free position in an organization (spaces and collections share the order).
pub async fn next_position(tx: &mut Tx, org_id: &str) -> sqlx::Result<i64> {
    let max: Option<i64> = tx
        .scalar(
            &Sql::new(
                "SELECT MAX(p) FROM (SELECT MAX(position) AS p FROM spaces WHERE org_id = $1 \
         UNION ALL SELECT MAX(position) AS p FROM collections WHERE org_id = $1) AS m",
            )
            .arg(org_id),
        )
        .await?;
    Ok(max.map_or(0, |m| m + 1))
}

/// Every space (live or deleted) directly in a collection, inside a transaction.
pub async fn list_in_parent_tx(tx: &mut Tx, parent_id: &str) -> sqlx::Result<Vec<SpaceRow>> {
    tx.rows(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM spaces WHERE parent_id = $1 ORDER BY position, id"
        ))
        .arg(parent_id),
    )
    .await
}

/// Moves a live space under `parent` (a collection, or the root), writing only that column;
/// false when the space is gone or deleted.
pub async fn set_parent(
    tx: &mut Tx,
    id: &str,
    parent: Option<&str>,
    now: i64,
) -> sqlx::Result<bool> {
    let res = tx.execute(&Sql::new(
        "UPDATE spaces SET parent_id = $2, updated_at = $3 WHERE id = $1 AND deleted_at IS NULL",
    )
    .arg(id)
    .arg(parent)
    .arg(now)
    )
    .await?;
    Ok(res == 1)
}

/// Which of a space's listing versions an answer kept in memory rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// Its change requests, one by one and listed (and what revisions show of them).
    ChangeRequests,
    /// Its comments and those of its change requests, with their replies and reactions.
    Comments,
}

impl Listing {
    fn column(self) -> &'static str {
        match self {
            Listing::ChangeRequests => "listings_version",
            Listing::Comments => "comments_version",
        }
    }
}

/// The space's `listing` version (-1 when there is no such space): moved on by every write
/// to what such answers show.
pub async fn listings_version(db: &Db, id: &str, listing: Listing) -> sqlx::Result<i64> {
    // Whole texts: a listing asks for its version on every read that is not stamped.
    let text = match listing {
        Listing::ChangeRequests => {
            "SELECT COALESCE((SELECT listings_version FROM spaces WHERE id = $1), -1)"
        }
        Listing::Comments => {
            "SELECT COALESCE((SELECT comments_version FROM spaces WHERE id = $1), -1)"
        }
    };
    db.scalar(&Sql::new(text).arg(id)).await
}

/// Moves on the `listings` versions of the spaces `spaces_of` names, an SQL expression
/// that yields space ids from `$1` (`"$1"` when `key` is the space id itself). Called by
/// every store write that changes what such an answer shows, inside its transaction, so
/// that no node answers from memory what the commit changed.
pub(super) async fn touch_listings(
    tx: &mut Tx,
    listings: &[Listing],
    spaces_of: &str,
    key: &str,
) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "UPDATE spaces SET {} WHERE id IN ({spaces_of})",
            moves(listings)
        ))
        .arg(key),
    )
    .await?;
    Ok(())
}

/// The `SET` list that moves on `listings` versions.
pub(super) fn moves(listings: &[Listing]) -> String {
    listings
        .iter()
        .map(|l| format!("{0} = {0} + 1", l.column()))
        .collect::<Vec<_>>()
        .join(", ")
}
