//! Collections.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// A stored collection.
    #[derive(Debug, Clone)]
    pub struct CollectionRow {
        pub id: String,
        pub org_id: crate::ids::OrgId,
        pub parent_id: Option<String>,
        pub title: String,
        pub description: Option<String>,
        /// `inherit`, a role, or NULL (no default access).
        pub default_level: Option<String>,
        pub position: i64,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

const COLUMNS: &str =
    "id, org_id, parent_id, title, description, default_level, position, created_at, updated_at";

/// A collection by id.
pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<CollectionRow>> {
    db.row(&Sql::new(format!("SELECT {COLUMNS} FROM collections WHERE id = $1")).arg(id))
        .await
}

/// A collection by id inside a transaction.
pub async fn get_tx(tx: &mut Tx, id: &str) -> sqlx::Result<Option<CollectionRow>> {
    tx.row(&Sql::new(format!("SELECT {COLUMNS} FROM collections WHERE id = $1")).arg(id))
        .await
}

/// Every collection of an organization, in list order. Read in place (it is the access
/// check's, made by every write request): an organization's collections are its
/// structure, tens or hundreds, one index range.
pub async fn list(db: &Db, org_id: &str) -> sqlx::Result<Vec<CollectionRow>> {
    db.rows(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM collections WHERE org_id = $1 ORDER BY position, id"
        ))
        .arg(org_id),
    )
    .await
}

/// Every collection of an organization, inside a transaction.
pub async fn list_tx(tx: &mut Tx, org_id: &str) -> sqlx::Result<Vec<CollectionRow>> {
    tx.rows(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM collections WHERE org_id = $1 ORDER BY position, id"
        ))
        .arg(org_id),
    )
    .await
}

/// Inserts a collection.
pub async fn insert(tx: &mut Tx, c: &CollectionRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "INSERT INTO collections ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .arg(&c.id)
        .arg(&c.org_id)
        .arg(&c.parent_id)
        .arg(&c.title)
        .arg(&c.description)
        .arg(&c.default_level)
        .arg(c.position)
        .arg(c.created_at)
        .arg(c.updated_at),
    )
    .await?;
    Ok(())
}

/// The fields of a collection an update may change; `None` leaves a column as it is.
#[derive(Debug, Default)]
pub struct CollectionPatch {
    pub title: Option<String>,
    pub description: Option<String>,
    pub default_level: Option<Option<String>>,
}

/// Writes only the columns a request changes. False when the collection is gone.
pub async fn patch(tx: &mut Tx, id: &str, p: &CollectionPatch, now: i64) -> sqlx::Result<bool> {
    let mut q = Sql::new("UPDATE collections SET updated_at = ");
    q.bind(now);
    let text = [
        ("title", p.title.clone().map(Some)),
        ("description", p.description.clone().map(Some)),
        ("default_level", p.default_level.clone()),
    ];
    for (column, value) in text {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(value);
        }
    }
    q.push(" WHERE id = ").bind(id);
    Ok(tx.execute(&q).await? == 1)
}

/// Moves a collection to another organization and place, writing only those columns.
/// False when the collection is gone.
pub async fn relocate(
    tx: &mut Tx,
    id: &str,
    to: &crate::store::spaces::Relocation<'_>,
) -> sqlx::Result<bool> {
    let mut q = Sql::new("UPDATE collections SET org_id = ");
    q.bind(to.org_id).push(", position = ").bind(to.position);
    q.push(", updated_at = ").bind(to.now);
    if let Some(parent) = to.parent {
        q.push(", parent_id = ").bind(parent.map(str::to_string));
    }
    q.push(" WHERE id = ").bind(id);
    Ok(tx.execute(&q).await? == 1)
}

/// Sets the position of a collection.
pub async fn set_position(tx: &mut Tx, id: &str, position: i64) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("UPDATE collections SET position = $2 WHERE id = $1")
            .arg(id)
            .arg(position),
    )
    .await?;
    Ok(())
}

/// Deletes a collection after moving its children (spaces and collections) to its parent,
/// so that nothing inside is lost.
pub async fn delete_keeping_children(tx: &mut Tx, c: &CollectionRow) -> sqlx::Result<()> {
    // Spaces visible "in-collection" that land at the root have no collection to follow.
    let visibility_at_root = if c.parent_id.is_none() {
        "private"
    } else {
        "in-collection"
    };
    tx.execute(&Sql::new(
        "UPDATE spaces SET parent_id = $2, visibility = CASE WHEN visibility = 'in-collection' \
         THEN $3 ELSE visibility END WHERE parent_id = $1",
    )
    .arg(&c.id)
    .arg(&c.parent_id)
    .arg(visibility_at_root)
    )
    .await?;
    tx.execute(
        &Sql::new("UPDATE collections SET parent_id = $2 WHERE parent_id = $1")
            .arg(&c.id)
            .arg(&c.parent_id),
    )
    .await?;
    tx.execute(
        &Sql::new(
            "DELETE FROM content_permissions WHERE target_kind = 'collection' AND target_id = $1",
        )
        .arg(&c.id),
    )
    .await?;
    tx.execute(&Sql::new("DELETE FROM collections WHERE id = $1").arg(&c.id))
        .await?;
    Ok(())
}

/// Moves a collection under `parent` (another collection, or the root), writing only that
/// column; false when the collection is gone.
pub async fn set_parent(
    tx: &mut Tx,
    id: &str,
    parent: Option<&str>,
    now: i64,
) -> sqlx::Result<bool> {
    let res = tx
        .execute(
            &Sql::new("UPDATE collections SET parent_id = $2, updated_at = $3 WHERE id = $1")
                .arg(id)
                .arg(parent)
                .arg(now),
        )
        .await?;
    Ok(res == 1)
}
