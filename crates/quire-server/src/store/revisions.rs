//! Revisions: immutable snapshots of a space's content.

use crate::db::Tx;

/// Records a revision.
pub async fn insert(
    tx: &mut Tx,
    id: &str,
    space_id: &str,
    parents: &[String],
    kind: &str,
    root: &str,
    created_by: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO revisions (id, space_id, parents, kind, root, created_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(id)
    .bind(space_id)
    .bind(serde_json::to_string(parents).unwrap_or_else(|_| "[]".into()))
    .bind(kind)
    .bind(root)
    .bind(created_by)
    .bind(now)
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
