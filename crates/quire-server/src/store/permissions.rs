//! Explicit content permissions: a role granted to a user or a team on a space or collection.

use crate::db::sql::Sql;
use crate::ids::{OrgId, UserId};

use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// One grant.
    #[derive(Debug, Clone)]
    pub struct Grant {
        pub target_kind: String,
        pub target_id: String,
        pub principal_kind: String,
        pub principal_id: String,
        pub role: String,
        pub created_at: i64,
    }
}

const COLUMNS: &str = "target_kind, target_id, principal_kind, principal_id, role, created_at";

/// The grants that reach a user in an organization: their own, and their teams'.
pub async fn for_user(db: &Db, org_id: &OrgId, user_id: &UserId) -> sqlx::Result<Vec<Grant>> {
    // Bounded: the grants of one user (directly and through teams) in one organization.
    db.rows(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM content_permissions WHERE org_id = $1 AND \
             ((principal_kind = 'user' AND principal_id = $2) OR \
              (principal_kind = 'team' AND principal_id IN \
                 (SELECT team_id FROM team_members WHERE org_id = $1 AND user_id = $2)))"
        ))
        .arg(org_id)
        .arg(user_id),
    )
    .await
}

/// Every grant in an organization (for aggregate listings).
pub async fn for_org(db: &Db, org_id: &str) -> sqlx::Result<Vec<Grant>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM content_permissions WHERE org_id = $1"
    ))
    .bind(org_id)
    .fetch_all(db.pool())
    .await
}

/// The grants on one target.
pub async fn on_target(db: &Db, kind: &str, id: &str) -> sqlx::Result<Vec<Grant>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM content_permissions WHERE target_kind = $1 AND target_id = $2 \
         ORDER BY created_at, principal_id"
    ))
    .bind(kind)
    .bind(id)
    .fetch_all(db.pool())
    .await
}

/// Grants (or changes) a role; `grant.created_at` is used for a new grant only.
pub async fn upsert(tx: &mut Tx, org_id: &str, grant: &Grant) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "INSERT INTO content_permissions (org_id, target_kind, target_id, principal_kind, principal_id, role, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (target_kind, target_id, principal_kind, principal_id) DO UPDATE SET role = $6",
    )
    .arg(org_id)
    .arg(&grant.target_kind)
    .arg(&grant.target_id)
    .arg(&grant.principal_kind)
    .arg(&grant.principal_id)
    .arg(&grant.role)
    .arg(grant.created_at)
    )
    .await?;
    Ok(())
}

/// Removes a grant; returns whether one existed.
pub async fn remove(
    tx: &mut Tx,
    kind: &str,
    id: &str,
    principal_kind: &str,
    principal_id: &str,
) -> sqlx::Result<bool> {
    let res = tx
        .execute(
            &Sql::new(
                "DELETE FROM content_permissions WHERE target_kind = $1 AND target_id = $2 \
         AND principal_kind = $3 AND principal_id = $4",
            )
            .arg(kind)
            .arg(id)
            .arg(principal_kind)
            .arg(principal_id),
        )
        .await?;
    Ok(res > 0)
}

/// Removes every grant on a target (its users and teams stay behind on a transfer).
pub async fn clear(tx: &mut Tx, kind: &str, id: &str) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("DELETE FROM content_permissions WHERE target_kind = $1 AND target_id = $2")
            .arg(kind)
            .arg(id),
    )
    .await?;
    Ok(())
}
