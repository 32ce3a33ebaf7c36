//! Revisions: immutable snapshots of a space's content.

use crate::db::Tx;

/// A revision to record.
#[derive(Debug, Clone)]
pub struct NewRevision<'a> {
    pub id: &'a str,
    pub space_id: &'a str,
    pub parents: &'a [String],
    /// `edits`, `merge`, `update`, ...
    pub kind: &'a str,
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
