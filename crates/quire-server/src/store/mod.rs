//! Storage queries, one module per aggregate. Handlers call these and never write SQL.

pub mod change_requests;
pub mod collections;
pub mod comments;
pub mod invites;
pub mod jobs;
pub mod keys;
pub mod members;
pub mod objects;
pub mod ordering;
pub mod orgs;
pub mod permissions;
pub mod revisions;
pub mod search;
pub mod sites;
pub mod spaces;
pub mod teams;
pub mod tokens;
pub mod users;

/// A round trip to the database (readiness checks).
pub async fn ping(db: &crate::db::Db) -> sqlx::Result<()> {
    sqlx::query("SELECT 1").execute(db.pool()).await?;
    Ok(())
}
