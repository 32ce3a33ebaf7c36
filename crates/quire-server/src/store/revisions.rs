//! Revisions: immutable snapshots of a space's content.

use crate::db::sql::Sql;
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
    tx.execute(
        &Sql::new(
            "INSERT INTO revisions (id, space_id, parents, kind, root, created_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .arg(r.id)
        .arg(r.space_id)
        .arg(serde_json::to_string(r.parents).unwrap_or_else(|_| "[]".into()))
        .arg(r.kind)
        .arg(r.root)
        .arg(r.created_by)
        .arg(r.created_at),
    )
    .await?;
    Ok(())
}

/// The root object of a revision, if it belongs to the space.
pub async fn root_of(tx: &mut Tx, space_id: &str, id: &str) -> sqlx::Result<Option<String>> {
    tx.scalar_opt(
        &Sql::new("SELECT root FROM revisions WHERE space_id = $1 AND id = $2")
            .arg(space_id)
            .arg(id),
    )
    .await
}

crate::db::inline::row! {
    /// A stored revision.
    #[derive(Debug, Clone)]
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
    let res = tx.execute(&Sql::new(
        "UPDATE spaces SET revision_id = $3, updated_at = $4 WHERE id = $1 AND revision_id = $2",
    )
    .arg(space_id)
    .arg(expected)
    .arg(revision)
    .arg(now)
    )
    .await?;
    Ok(res == 1)
}
