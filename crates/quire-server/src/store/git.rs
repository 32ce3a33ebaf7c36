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

/// The author and message a revision's commit is made with.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Identity {
    pub revision_id: String,
    /// `Name <address>`.
    pub author: String,
    pub message: String,
    /// The pushed commit, for a revision made by a push (`None`: Quire makes the commit).
    pub oid: Option<String>,
}

/// The identities recorded for a space's revisions, by revision id.
pub async fn identities(db: &Db, space_id: &str) -> sqlx::Result<HashMap<String, Identity>> {
    let rows: Vec<Identity> = sqlx::query_as(
        "SELECT revision_id, author, message, oid FROM git_commits WHERE space_id = $1",
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
                "INSERT INTO git_commits (revision_id, space_id, author, message, oid) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (revision_id) DO NOTHING",
            )
            .arg(&i.revision_id)
            .arg(space_id)
            .arg(&i.author)
            .arg(&i.message)
            .arg(i.oid.as_deref()),
        )
        .await?;
    }
    Ok(())
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
