//! Organizations.

use crate::ids::{OrgId, UserId};

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// A stored organization.
    #[derive(Debug, Clone)]
    pub struct OrgRow {
        pub id: crate::ids::OrgId,
        pub title: String,
        pub hostname: Option<String>,
        /// JSON array of strings.
        pub email_domains: String,
        pub default_role: Option<String>,
        /// JSON object, when set.
        pub default_content: Option<String>,
        pub logo_url: Option<String>,
        pub sso: i64,
        pub ai: i64,
        pub invite_links: i64,
        pub created_at: i64,
    }
}

impl OrgRow {
    /// The e-mail domains, decoded; corrupt stored JSON is an error, never an empty list.
    pub fn domains(&self) -> Result<Vec<String>, serde_json::Error> {
        serde_json::from_str(&self.email_domains)
    }
}

crate::db::inline::row! {
    /// An organization seen by one user: `member` is false for outsiders, and `role` is
    /// `None` for guests and outsiders.
    #[derive(Debug, Clone)]
    pub struct OrgForUser {
        #[flatten]
        pub org: OrgRow,
        pub member_id: Option<String>,
        pub role: Option<String>,
    }
}

/// An organization seen by one user, as the access cache shares it between requests: the
/// row is shared, not copied, by every request that reads it.
#[derive(Debug)]
pub struct OrgSeen {
    pub org: std::sync::Arc<OrgRow>,
    /// Whether the user is a member (guests included).
    pub member: bool,
    pub role: Option<String>,
}

impl From<OrgForUser> for OrgSeen {
    fn from(o: OrgForUser) -> Self {
        Self {
            org: std::sync::Arc::new(o.org),
            member: o.member_id.is_some(),
            role: o.role,
        }
    }
}

const COLUMNS: &str = "o.id, o.title, o.hostname, o.email_domains, o.default_role, \
    o.default_content, o.logo_url, o.sso, o.ai, o.invite_links, o.created_at";

/// An organization and the caller's membership of it.
pub async fn get_for_user(
    db: &Db,
    id: &OrgId,
    user_id: &UserId,
) -> sqlx::Result<Option<OrgForUser>> {
    db.row(
        &Sql::new(format!(
            "SELECT {COLUMNS}, m.user_id AS member_id, m.role FROM organizations o \
             LEFT JOIN members m ON m.org_id = o.id AND m.user_id = $2 WHERE o.id = $1"
        ))
        .arg(id)
        .arg(user_id),
    )
    .await
}

/// Whether the user is a member of an organization that requires its single sign-on.
pub async fn sso_enforced_for(db: &Db, user_id: &str) -> sqlx::Result<bool> {
    Ok(db
        .row::<(i64,)>(
            &Sql::new(
                "SELECT 1 FROM members m JOIN organizations o ON o.id = m.org_id \
                 WHERE m.user_id = $1 AND o.sso = 1 LIMIT 1",
            )
            .arg(user_id),
        )
        .await?
        .is_some())
}

/// An organization by id.
pub async fn get(db: &Db, id: &OrgId) -> sqlx::Result<Option<OrgRow>> {
    db.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM organizations o WHERE o.id = $1"
        ))
        .arg(id),
    )
    .await
}

/// An organization by id, inside a transaction.
pub async fn get_tx(tx: &mut Tx, id: &str) -> sqlx::Result<Option<OrgRow>> {
    tx.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM organizations o WHERE o.id = $1"
        ))
        .arg(id),
    )
    .await
}

/// Inserts an organization.
pub async fn insert(tx: &mut Tx, org: &OrgRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO organizations (id, title, hostname, email_domains, default_role, \
         default_content, logo_url, sso, ai, invite_links, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)",
        )
        .arg(&org.id)
        .arg(&org.title)
        .arg(&org.hostname)
        .arg(&org.email_domains)
        .arg(&org.default_role)
        .arg(&org.default_content)
        .arg(&org.logo_url)
        .arg(org.sso)
        .arg(org.ai)
        .arg(org.invite_links)
        .arg(org.created_at),
    )
    .await?;
    set_domains(
        tx,
        &org.id,
        &org.domains().map_err(|e| sqlx::Error::Decode(e.into()))?,
    )
    .await
}

/// The fields of an organization a `PATCH` may change; `None` leaves a column as it is.
#[derive(Debug, Default)]
pub struct OrgPatch {
    pub title: Option<String>,
    pub hostname: Option<String>,
    /// The email domains (also written to `organization_domains`).
    pub email_domains: Option<Vec<String>>,
    pub default_role: Option<Option<String>>,
    /// JSON of the default content, or `None` for none.
    pub default_content: Option<Option<String>>,
    pub logo_url: Option<Option<String>>,
    pub sso: Option<bool>,
    pub ai: Option<bool>,
    pub invite_links: Option<bool>,
}

/// Writes only the columns a request changes: a `PATCH` of one field leaves the others as
/// they are in the database, whatever another request wrote since this one read the row.
/// False when the organization is gone.
pub async fn patch(tx: &mut Tx, id: &str, p: &OrgPatch, now: i64) -> sqlx::Result<bool> {
    let mut q = Sql::new("UPDATE organizations SET updated_at = ");
    q.bind(now);
    let domains = p
        .email_domains
        .as_ref()
        .map(|d| serde_json::json!(d).to_string());
    let text = [
        ("title", p.title.clone().map(Some)),
        ("hostname", p.hostname.clone().map(Some)),
        ("email_domains", domains.map(Some)),
        ("default_role", p.default_role.clone()),
        ("default_content", p.default_content.clone()),
        ("logo_url", p.logo_url.clone()),
    ];
    for (column, value) in text {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(value);
        }
    }
    for (column, value) in [
        ("sso", p.sso),
        ("ai", p.ai),
        ("invite_links", p.invite_links),
    ] {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(i64::from(value));
        }
    }
    q.push(" WHERE id = ").bind(id);
    if tx.execute(&q).await? != 1 {
        return Ok(false);
    }
    if let Some(domains) = &p.email_domains {
        set_domains(tx, id, domains).await?;
    }
    Ok(true)
}

async fn set_domains(tx: &mut Tx, org_id: &str, domains: &[String]) -> sqlx::Result<()> {
    tx.execute(&Sql::new("DELETE FROM organization_domains WHERE org_id = $1").arg(org_id))
        .await?;
    let mut unique: Vec<&String> = domains.iter().collect();
    unique.sort();
    unique.dedup();
    for domain in unique {
        tx.execute(
            &Sql::new("INSERT INTO organization_domains (domain, org_id) VALUES ($1, $2)")
                .arg(domain)
                .arg(org_id),
        )
        .await?;
    }
    Ok(())
}

/// Organizations the user is a member of, ordered by (created_at, id), after a cursor.
pub async fn list_for_user(
    db: &Db,
    user_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<OrgForUser>, i64)> {
    let mut q = Sql::new(format!(
        "SELECT {COLUMNS}, m.user_id AS member_id, m.role FROM organizations o \
         JOIN members m ON m.org_id = o.id WHERE m.user_id = "
    ));
    q.bind(user_id);
    if let Some((ts, id)) = after {
        q.push(" AND (o.created_at > ").bind(ts);
        q.push(" OR (o.created_at = ").bind(ts);
        q.push(" AND o.id > ").bind(id).push("))");
    }
    q.push(" ORDER BY o.created_at, o.id LIMIT ").bind(limit);
    let rows = q.query_as().fetch_all(db.pool()).await?;
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM members WHERE user_id = $1")
        .bind(user_id)
        .fetch_one(db.pool())
        .await?;
    Ok((rows, count))
}

/// Organizations claiming an e-mail domain, with the caller's membership.
pub async fn by_domain(db: &Db, domain: &str, user_id: &str) -> sqlx::Result<Vec<OrgForUser>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS}, m.user_id AS member_id, m.role FROM organization_domains d \
         JOIN organizations o ON o.id = d.org_id \
         LEFT JOIN members m ON m.org_id = o.id AND m.user_id = $2 \
         WHERE d.domain = $1 ORDER BY o.created_at, o.id"
    ))
    .bind(domain)
    .bind(user_id)
    .fetch_all(db.pool())
    .await
}
