//! SAML single sign-on: providers, AuthnRequests awaiting their answer, assertion ids already
//! accepted, and the browser sessions a login opens.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// A stored SAML provider; `''` marks an IdP setting not given yet.
    #[derive(Debug, Clone)]
    pub struct ProviderRow {
        pub id: String,
        pub org_id: String,
        pub label: String,
        pub entity_id: String,
        pub sso_url: String,
        pub certificate: String,
        pub default_team: Option<String>,
        pub default_role: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

impl ProviderRow {
    /// Whether every IdP setting a login needs is present.
    pub fn is_active(&self) -> bool {
        !self.entity_id.is_empty() && !self.sso_url.is_empty() && !self.certificate.is_empty()
    }
}

const COLUMNS: &str = "id, org_id, label, entity_id, sso_url, certificate, default_team, \
    default_role, created_at, updated_at";

/// A provider of an organization.
pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<ProviderRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM saml_providers WHERE org_id = $1 AND id = $2"
    ))
    .bind(org_id)
    .bind(id)
    .fetch_optional(db.pool())
    .await
}

/// A provider by id alone (the login endpoints name no organization).
pub async fn get_by_id(db: &Db, id: &str) -> sqlx::Result<Option<ProviderRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM saml_providers WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(db.pool())
    .await
}

/// A page of an organization's providers after `(created_at, id)`, with their total.
pub async fn list(
    db: &Db,
    org_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<ProviderRow>, i64)> {
    let (ts, id) = after.unwrap_or((i64::MIN, String::new()));
    let rows = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM saml_providers WHERE org_id = $1 \
         AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
         ORDER BY created_at, id LIMIT $4"
    ))
    .bind(org_id)
    .bind(ts)
    .bind(id)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    let count = sqlx::query_scalar("SELECT COUNT(*) FROM saml_providers WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok((rows, count))
}

/// The first `limit` providers of an organization, oldest first.
pub async fn list_all(db: &Db, org_id: &str, limit: i64) -> sqlx::Result<Vec<ProviderRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM saml_providers WHERE org_id = $1 ORDER BY created_at, id LIMIT $2"
    ))
    .bind(org_id)
    .bind(limit)
    .fetch_all(db.pool())
    .await
}

/// How many providers an organization has.
pub async fn count(tx: &mut Tx, org_id: &str) -> sqlx::Result<i64> {
    tx.scalar(&Sql::new("SELECT COUNT(*) FROM saml_providers WHERE org_id = $1").arg(org_id))
        .await
}

/// Stores a new provider.
pub async fn insert(tx: &mut Tx, p: &ProviderRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
        "INSERT INTO saml_providers ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
        .arg(&p.id)
        .arg(&p.org_id)
        .arg(&p.label)
        .arg(&p.entity_id)
        .arg(&p.sso_url)
        .arg(&p.certificate)
        .arg(&p.default_team)
        .arg(&p.default_role)
        .arg(p.created_at)
        .arg(p.updated_at),
    )
    .await?;
    Ok(())
}

/// The columns an update changes; `None` leaves a column as it is.
#[derive(Debug, Default)]
pub struct ProviderChanges {
    pub label: Option<String>,
    pub entity_id: Option<String>,
    pub sso_url: Option<String>,
    pub certificate: Option<String>,
    pub default_team: Option<Option<String>>,
    pub default_role: Option<Option<String>>,
}

/// Writes the changed columns of a provider; returns whether it still existed.
pub async fn update(
    tx: &mut Tx,
    org_id: &str,
    id: &str,
    c: &ProviderChanges,
    now: i64,
) -> sqlx::Result<bool> {
    let mut q = Sql::new("UPDATE saml_providers SET updated_at = ");
    q.bind(now);
    let text = [
        ("label", &c.label),
        ("entity_id", &c.entity_id),
        ("sso_url", &c.sso_url),
        ("certificate", &c.certificate),
    ];
    for (column, value) in text {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(value.clone());
        }
    }
    let nullable = [
        ("default_team", &c.default_team),
        ("default_role", &c.default_role),
    ];
    for (column, value) in nullable {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(value.clone());
        }
    }
    q.push(" WHERE org_id = ").bind(org_id);
    q.push(" AND id = ").bind(id);
    let res = tx.execute(&q).await?;
    Ok(res > 0)
}

/// Deletes a provider of the organization with its pending requests, the browser sessions
/// it opened and the identities linked through it.
pub async fn delete(db: &Db, org_id: &str, id: &str) -> sqlx::Result<bool> {
    let mut tx = db.begin().await?;
    tx.touches(&[
        crate::scopes::Scope::Org(org_id),
        crate::scopes::Scope::Tokens,
    ]);
    for table in ["saml_requests", "app_sessions", "sso_identities"] {
        tx.execute(
            &Sql::new(format!(
                "DELETE FROM {table} WHERE provider_id = $1 AND EXISTS \
             (SELECT 1 FROM saml_providers p WHERE p.id = $1 AND p.org_id = $2)"
            ))
            .arg(id)
            .arg(org_id),
        )
        .await?;
    }
    let res = tx
        .execute(
            &Sql::new("DELETE FROM saml_providers WHERE org_id = $1 AND id = $2")
                .arg(org_id)
                .arg(id),
        )
        .await?;
    tx.commit().await?;
    Ok(res > 0)
}

/// Records an AuthnRequest sent to a provider, answerable until `expires_at`; a login that
/// links the provider to the account `link_user_id` says so.
pub async fn insert_request(
    db: &Db,
    id: &str,
    provider_id: &str,
    link_user_id: Option<&str>,
    now: i64,
    expires_at: i64,
) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "INSERT INTO saml_requests (id, provider_id, link_user_id, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5)",
        )
        .arg(id)
        .arg(provider_id)
        .arg(link_user_id)
        .arg(now)
        .arg(expires_at),
        &[],
    )
    .await?;
    Ok(())
}

crate::db::inline::row! {
    /// A pending AuthnRequest, once consumed.
    #[derive(Debug, Clone)]
    pub struct Taken {
        /// The account the login links its provider to, when it was started to link.
        pub link_user_id: Option<String>,
    }
}

/// Consumes a live AuthnRequest of a provider: `Some` once, `None` for an unknown, expired
/// or already answered one.
pub async fn take_request(
    tx: &mut Tx,
    id: &str,
    provider_id: &str,
    now: i64,
) -> sqlx::Result<Option<Taken>> {
    tx.row(
        &Sql::new(
            "DELETE FROM saml_requests WHERE id = $1 AND provider_id = $2 AND expires_at > $3 \
         RETURNING link_user_id",
        )
        .arg(id)
        .arg(provider_id)
        .arg(now),
    )
    .await
}

/// The account an identity of a provider (the e-mail it asserts) is linked to.
pub async fn identity(
    tx: &mut Tx,
    provider_id: &str,
    subject: &str,
) -> sqlx::Result<Option<String>> {
    tx.scalar_opt(
        &Sql::new("SELECT user_id FROM sso_identities WHERE provider_id = $1 AND subject = $2")
            .arg(provider_id)
            .arg(subject),
    )
    .await
}

/// Links an identity of a provider to an account, unless it is linked already; returns the
/// account it is linked to now.
pub async fn link_identity(
    tx: &mut Tx,
    provider_id: &str,
    subject: &str,
    user_id: &str,
    now: i64,
) -> sqlx::Result<String> {
    tx.execute(
        &Sql::new(
            "INSERT INTO sso_identities (provider_id, subject, user_id, created_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (provider_id, subject) DO NOTHING",
        )
        .arg(provider_id)
        .arg(subject)
        .arg(user_id)
        .arg(now),
    )
    .await?;
    identity(tx, provider_id, subject)
        .await?
        .ok_or(sqlx::Error::RowNotFound)
}

/// Records that an assertion was accepted: false when it already was.
pub async fn use_assertion(
    tx: &mut Tx,
    provider_id: &str,
    assertion_id: &str,
    expires_at: i64,
) -> sqlx::Result<bool> {
    let res = tx.execute(&Sql::new(
        "INSERT INTO saml_assertions (provider_id, assertion_id, expires_at) VALUES ($1, $2, $3) \
         ON CONFLICT (provider_id, assertion_id) DO NOTHING",
    )
    .arg(provider_id)
    .arg(assertion_id)
    .arg(expires_at)
    )
    .await?;
    Ok(res > 0)
}

/// Forgets requests and assertion ids past their expiry.
pub async fn purge_expired(db: &Db, now: i64) -> sqlx::Result<()> {
    for table in ["saml_requests", "saml_assertions"] {
        db.execute(
            &Sql::new(format!("DELETE FROM {table} WHERE expires_at <= $1")).arg(now),
            &[],
        )
        .await?;
    }
    Ok(())
}

crate::db::inline::row! {
    /// An organization of the account page: title, the user's role, whether they are an SSO
    /// member, and whether the organization enforces SSO.
    #[derive(Debug, Clone)]
    pub struct AccountOrg {
        pub id: String,
        pub title: String,
        pub role: Option<String>,
        pub sso_member: i64,
        pub enforced: i64,
    }
}

/// The organizations a user belongs to (at most `limit`), by title.
pub async fn account_orgs(db: &Db, user_id: &str, limit: i64) -> sqlx::Result<Vec<AccountOrg>> {
    sqlx::query_as(
        "SELECT o.id, o.title, m.role, m.sso AS sso_member, o.sso AS enforced \
         FROM members m JOIN organizations o ON o.id = m.org_id WHERE m.user_id = $1 \
         ORDER BY o.title, o.id LIMIT $2",
    )
    .bind(user_id)
    .bind(limit)
    .fetch_all(db.pool())
    .await
}
