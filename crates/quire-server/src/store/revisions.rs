//! Revisions: immutable snapshots of a space's content.

use crate::db::Tx;
use crate::values::RevisionType;

/// A revision to record.
#[derive(Debug, Clone)]
pub struct NewRevision<'a> {
    pub id: &'a str,
    pub space_id: &'a str,
    pub parents: &'a [String],
    /// `edits`, `merge`, `update`, ...
    pub kind: RevisionType,
    /// Root object of its content (empty: no content yet).
    pub root: &'a str,
    pub created_by: Option<&'a str>,
    pub created_at: i64,
}

/// Records a revision.
pub async fn insert(tx: &mut Tx, r: &NewRevision<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO revisions (id, space_id, parents, kind, root, created_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(r.id)
    .bind(r.space_id)
    .bind(serde_json::to_string(r.parents).unwrap_or_else(|_| "[]".into()))
    .bind(r.kind)
    .bind(r.root)
    .bind(r.created_by)
    .bind(r.created_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The root object of a revision, if it belongs to the space.
pub async fn root_of(tx: &mut Tx, space_id: &str, id: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT root FROM revisions WHERE space_id = $1 AND id = $2")
        .bind(space_id)
        .bind(id)
        .fetch_optional(&mut **tx)
        .await
}

/// A stored revision.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RevisionRow {
    pub id: String,
    pub space_id: String,
    /// JSON array of parent revision ids.
    pub parents: String,
    pub kind: RevisionType,
    pub root: String,
    pub created_by: Option<String>,
    pub created_at: i64,
}

impl RevisionRow {
    /// Parent revision ids; corrupt stored JSON is an error, never an empty list.
    pub fn parent_ids(&self) -> Result<Vec<String>, serde_json::Error> {
        serde_json::from_str(&self.parents)
    }
}

/// A revision of a space by id.
pub async fn get(
    db: &crate::db::Db,
    space_id: &str,
    id: &str,
) -> sqlx::Result<Option<RevisionRow>> {
    sqlx::query_as(
        "SELECT id, space_id, parents, kind, root, created_by, created_at FROM revisions \
         WHERE space_id = $1 AND id = $2",
    )
    .bind(space_id)
    .bind(id)
    .fetch_optional(db.pool())
    .await
}

/// Moves a space to a new revision, only if it is still at `expected`.
pub async fn advance_space(
    tx: &mut Tx,
    space_id: &str,
    expected: &str,
    revision: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let res = sqlx::query(
        "UPDATE spaces SET revision_id = $3, updated_at = $4 WHERE id = $1 AND revision_id = $2",
    )
    .bind(space_id)
    .bind(expected)
    .bind(revision)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(res.rows_affected() == 1)
}
