//! Where sites are served besides `/sites/{siteId}/`: their custom hostnames and proxies,
//! the sites of organizations with a hostname, and each custom hostname's latest DNS check
//! and proof of control.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::scopes::Scope;

crate::db::inline::row! {
    /// A site with an address of its own (a custom hostname or a proxy).
    #[derive(Debug, Clone)]
    pub struct HostedSite {
        pub id: String,
        pub org_id: String,
        pub hostname: Option<String>,
        pub proxy: Option<String>,
        /// When control of the hostname was proven (none: it is not served yet).
        pub hostname_verified_at: Option<i64>,
    }
}

/// Every site with a custom hostname or a proxy.
pub async fn hosted(db: &Db) -> sqlx::Result<Vec<HostedSite>> {
    sqlx::query_as(
        "SELECT id, org_id, hostname, proxy, hostname_verified_at FROM sites \
         WHERE hostname IS NOT NULL OR proxy IS NOT NULL",
    )
    .fetch_all(db.pool())
    .await
}

crate::db::inline::row! {
    /// A site of an organization that has a hostname.
    #[derive(Debug, Clone)]
    pub struct OrgSite {
        /// The organization's hostname.
        pub org_hostname: String,
        pub id: String,
        pub basename: Option<String>,
        pub created_at: i64,
    }
}

/// The sites of every organization that has a hostname, oldest first.
pub async fn org_sites(db: &Db) -> sqlx::Result<Vec<OrgSite>> {
    sqlx::query_as(
        "SELECT o.hostname AS org_hostname, s.id, s.basename, s.created_at FROM sites s \
         JOIN organizations o ON o.id = s.org_id WHERE o.hostname IS NOT NULL \
         ORDER BY s.created_at, s.id",
    )
    .fetch_all(db.pool())
    .await
}

crate::db::inline::row! {
    /// The site holding a custom hostname.
    #[derive(Debug, Clone)]
    pub struct Holder {
        pub site_id: String,
        pub org_id: String,
        pub published: i64,
        /// The outcome of the latest DNS check (`CustomHostnameStatus`), if any.
        pub hostname_status: Option<String>,
        /// When control of the hostname was proven, if it was.
        pub hostname_verified_at: Option<i64>,
    }
}

/// The site whose custom hostname is `host`.
pub async fn holder(db: &Db, host: &str) -> sqlx::Result<Option<Holder>> {
    sqlx::query_as(
        "SELECT id AS site_id, org_id, published, hostname_status, hostname_verified_at \
         FROM sites WHERE hostname = $1",
    )
    .bind(host)
    .fetch_optional(db.pool())
    .await
}

/// Records the outcome of a check of `host`, and when its control was proven (`proven_at`:
/// kept once set), if site `site_id` still holds it: a hostname that moved to another site
/// meanwhile is left alone, since the proof was the first site's.
pub async fn set_checked(
    db: &Db,
    site_id: &str,
    host: &str,
    status: &str,
    proven_at: Option<i64>,
) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "UPDATE sites SET hostname_status = $3, \
             hostname_verified_at = COALESCE(hostname_verified_at, $4) \
             WHERE hostname = $1 AND id = $2",
        )
        .arg(host)
        .arg(site_id)
        .arg(status)
        .arg(proven_at),
        &[Scope::Site(site_id)],
    )
    .await?;
    Ok(())
}

/// Forgets the DNS check and the proof of control of a site whose hostname changed.
pub async fn reset_status(tx: &mut Tx, site_id: &str) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "UPDATE sites SET hostname_status = NULL, hostname_verified_at = NULL WHERE id = $1",
        )
        .arg(site_id),
    )
    .await?;
    Ok(())
}

/// Takes `host` from the site holding it; whether one did.
pub async fn remove(db: &Db, site_id: &str, host: &str, now: i64) -> sqlx::Result<bool> {
    let changed = db
        .execute(
            &Sql::new(
                "UPDATE sites SET hostname = NULL, hostname_status = NULL, \
                 hostname_verified_at = NULL, updated_at = $2 WHERE hostname = $1",
            )
            .arg(host)
            .arg(now),
            &[Scope::Site(site_id)],
        )
        .await?;
    Ok(changed > 0)
}

/// The organization whose hostname is `hostname`.
pub async fn org_with_hostname(db: &Db, hostname: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT id FROM organizations WHERE hostname = $1")
        .bind(hostname)
        .fetch_optional(db.pool())
        .await
}
