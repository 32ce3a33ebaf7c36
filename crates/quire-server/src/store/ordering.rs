//! Sibling order of spaces and collections under one parent.
//!
//! Positions are unique within an organization (spaces and collections share them), so
//! ordering any list by position shows every sibling group in its order. Moving an item
//! permutes the positions already held by its new sibling group and itself: no renumbering
//! of anything else, and uniqueness is kept.

use crate::db::sql::Sql;
use crate::db::Tx;

/// A space or collection, as a sibling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// `space` or `collection`.
    pub kind: String,
    /// Its id.
    pub id: String,
}

/// Where to put an item among its new siblings.
#[derive(Debug, Clone)]
pub enum Place {
    /// After every sibling.
    End,
    /// Just before this sibling.
    Before(Item),
    /// Just after this sibling.
    After(Item),
}

async fn siblings(
    tx: &mut Tx,
    org_id: &str,
    parent: Option<&str>,
) -> sqlx::Result<Vec<(Item, i64)>> {
    let rows: Vec<(String, String, i64)> = tx
        .rows(
            &Sql::new(
                "SELECT 'space', id, position FROM spaces WHERE org_id = $1 AND \
           ((parent_id IS NULL AND $2 IS NULL) OR parent_id = $2) \
         UNION ALL SELECT 'collection', id, position FROM collections WHERE org_id = $1 AND \
           ((parent_id IS NULL AND $2 IS NULL) OR parent_id = $2)",
            )
            .arg(org_id)
            .arg(parent),
        )
        .await?;
    let mut out: Vec<(Item, i64)> = rows
        .into_iter()
        .map(|(kind, id, pos)| (Item { kind, id }, pos))
        .collect();
    out.sort_by_key(|(_, pos)| *pos);
    Ok(out)
}

/// Places `item` (already moved under `parent`) among its siblings. Returns `Ok(false)`
/// when the reference sibling of `place` is not under `parent`.
pub async fn place(
    tx: &mut Tx,
    org_id: &str,
    parent: Option<&str>,
    item: &Item,
    item_position: i64,
    place: &Place,
) -> sqlx::Result<bool> {
    let all = siblings(tx, org_id, parent).await?;
    let mut pool: Vec<i64> = all.iter().map(|(_, p)| *p).collect();
    if !all.iter().any(|(i, _)| i == item) {
        pool.push(item_position);
    }
    pool.sort_unstable();
    let mut order: Vec<Item> = all
        .into_iter()
        .map(|(i, _)| i)
        .filter(|i| i != item)
        .collect();
    let index = match place {
        Place::End => order.len(),
        Place::Before(other) | Place::After(other) => {
            let Some(at) = order.iter().position(|i| i == other) else {
                return Ok(false);
            };
            if matches!(place, Place::After(_)) {
                at + 1
            } else {
                at
            }
        }
    };
    order.insert(index, item.clone());
    for (it, pos) in order.iter().zip(pool) {
        let table = if it.kind == "space" {
            "spaces"
        } else {
            "collections"
        };
        tx.execute(
            &Sql::new(format!("UPDATE {table} SET position = $2 WHERE id = $1"))
                .arg(&it.id)
                .arg(pos),
        )
        .await?;
    }
    Ok(true)
}
