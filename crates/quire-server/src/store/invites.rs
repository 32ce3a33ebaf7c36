//! Invitations: pending e-mail invites, and invite links.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

/// Records (or refreshes) an invite for an e-mail that has no user yet, with the hash of
/// its link's secret (a new invite of the same address replaces the old link, and its
/// validity starts again).
pub async fn add_pending(
    tx: &mut Tx,
    org_id: &str,
    email: &str,
    role: Option<&str>,
    sso: bool,
    (secret_hash, now): (&str, i64),
) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "INSERT INTO pending_invites (org_id, email, role, sso, created_at, secret_hash) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (org_id, email) DO UPDATE SET role = $3, sso = $4, created_at = $5, \
         secret_hash = $6",
    )
    .arg(org_id)
    .arg(email)
    .arg(role)
    .arg(i64::from(sso))
    .arg(now)
    .arg(secret_hash)
    )
    .await?;
    Ok(())
}

crate::db::inline::row! {
    /// A pending invite found by its link.
    #[derive(Debug, Clone)]
    pub struct PendingLink {
        pub org_id: String,
        pub email: String,
        /// When the invitation (its link) was made.
        pub created_at: i64,
    }
}

/// The pending invite whose link secret hashes to `secret_hash`.
pub async fn pending_by_secret(db: &Db, secret_hash: &str) -> sqlx::Result<Option<PendingLink>> {
    db.row(
        &Sql::new("SELECT org_id, email, created_at FROM pending_invites WHERE secret_hash = $1")
            .arg(secret_hash),
    )
    .await
}

/// Deletes the pending invites made before `before`; how many.
pub async fn prune_pending(db: &Db, before: i64) -> sqlx::Result<u64> {
    db.execute(
        &Sql::new("DELETE FROM pending_invites WHERE created_at < $1").arg(before),
        &[],
    )
    .await
}

/// When the oldest pending invite was made, if any is left.
pub async fn oldest_pending(tx: &mut Tx) -> sqlx::Result<Option<i64>> {
    tx.scalar_opt(&Sql::new(
        "SELECT created_at FROM pending_invites ORDER BY created_at LIMIT 1",
    ))
    .await
}

crate::db::inline::row! {
    /// A pending invite, as an organization's admins see it.
    #[derive(Debug, Clone)]
    pub struct Pending {
        pub email: String,
        pub role: Option<String>,
        pub created_at: i64,
    }
}

/// The invites of an organization still waiting for their address, newest first.
pub async fn list_pending(db: &Db, org_id: &str, limit: i64) -> sqlx::Result<Vec<Pending>> {
    db.rows(
        &Sql::new(
            "SELECT email, role, created_at FROM pending_invites WHERE org_id = $1 \
             ORDER BY created_at DESC, email LIMIT $2",
        )
        .arg(org_id)
        .arg(limit),
    )
    .await
}

/// Withdraws the invite of `email` to an organization.
pub async fn remove_pending(db: &Db, org_id: &str, email: &str) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("DELETE FROM pending_invites WHERE org_id = $1 AND email = $2")
            .arg(org_id)
            .arg(email),
        &[],
    )
    .await?;
    Ok(())
}

crate::db::inline::row! {
    /// A pending invite.
    #[derive(Debug, Clone)]
    pub struct PendingInvite {
        pub org_id: String,
        pub role: Option<String>,
        pub sso: i64,
    }
}

/// Removes every pending invite for `email`; returns those made at or after `since` (the
/// others expired).
pub async fn take_pending(
    tx: &mut Tx,
    email: &str,
    since: i64,
) -> sqlx::Result<Vec<PendingInvite>> {
    let rows: Vec<PendingInvite> = tx
        .rows(
            &Sql::new(
                "SELECT org_id, role, sso FROM pending_invites WHERE email = $1 AND created_at >= $2",
            )
            .arg(email)
            .arg(since),
        )
        .await?;
    tx.execute(&Sql::new("DELETE FROM pending_invites WHERE email = $1").arg(email))
        .await?;
    Ok(rows)
}

crate::db::inline::row! {
    /// An invite link.
    #[derive(Debug, Clone)]
    pub struct InviteLinkRow {
        pub id: String,
        pub org_id: String,
        pub role: Option<String>,
        /// `organization`, `space` or `collection`.
        pub target_kind: String,
        pub target_id: Option<String>,
        pub created_at: i64,
    }
}

const COLUMNS: &str = "id, org_id, role, target_kind, target_id, created_at";

/// One invite link of an organization.
pub async fn get_link(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<InviteLinkRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM invite_links WHERE org_id = $1 AND id = $2"
    ))
    .bind(org_id)
    .bind(id)
    .fetch_optional(db.pool())
    .await
}

/// A page of invite links after `(created_at, id)`, with the total.
pub async fn list_links(
    db: &Db,
    org_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<InviteLinkRow>, i64)> {
    let mut q = Sql::new(format!(
        "SELECT {COLUMNS} FROM invite_links WHERE org_id = "
    ));
    q.bind(org_id);
    if let Some((ts, id)) = after {
        q.push(" AND (created_at > ").bind(ts);
        q.push(" OR (created_at = ").bind(ts);
        q.push(" AND id > ").bind(id).push("))");
    }
    q.push(" ORDER BY created_at, id LIMIT ").bind(limit);
    let rows = q.query_as().fetch_all(db.pool()).await?;
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM invite_links WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok((rows, count))
}

/// Stores a new invite link.
pub async fn insert_link(db: &Db, link: &InviteLinkRow) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "INSERT INTO invite_links (id, org_id, role, target_kind, target_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .arg(&link.id)
        .arg(&link.org_id)
        .arg(&link.role)
        .arg(&link.target_kind)
        .arg(&link.target_id)
        .arg(link.created_at),
        &[],
    )
    .await?;
    Ok(())
}

/// Changes the role an invite link grants.
pub async fn set_link_role(
    db: &Db,
    org_id: &str,
    id: &str,
    role: Option<&str>,
) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("UPDATE invite_links SET role = $3 WHERE org_id = $1 AND id = $2")
            .arg(org_id)
            .arg(id)
            .arg(role),
        &[],
    )
    .await?;
    Ok(())
}

/// Deletes an invite link (nothing happens when it does not exist).
pub async fn delete_link(db: &Db, org_id: &str, id: &str) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("DELETE FROM invite_links WHERE org_id = $1 AND id = $2")
            .arg(org_id)
            .arg(id),
        &[],
    )
    .await?;
    Ok(())
}
