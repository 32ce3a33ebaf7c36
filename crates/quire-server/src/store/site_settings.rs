//! Settings hung on a site beside its structure: what each site space overrides of the
//! site's customization, and the outside MCP servers the site names.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

/// The most rows of either kind one site holds (the API refuses more).
pub const MAX_PER_SITE: i64 = 500;

crate::db::inline::row! {
    /// A site space's override of its site's customization (a JSON object of the fields it
    /// sets).
    #[derive(Debug, Clone)]
    pub struct SpaceCustomizationRow {
        pub site_space_id: String,
        pub settings: String,
        pub updated_at: i64,
    }
}

/// The overrides of a site's site spaces.
pub async fn space_customizations(
    db: &Db,
    site_id: &str,
) -> sqlx::Result<Vec<SpaceCustomizationRow>> {
    db.rows(
        &Sql::new(
            "SELECT site_space_id, settings, updated_at FROM site_space_customizations \
             WHERE site_id = $1 ORDER BY site_space_id LIMIT $2",
        )
        .arg(site_id)
        .arg(MAX_PER_SITE),
    )
    .await
}

/// One site space's override, inside a writing transaction.
pub async fn space_customization_tx(
    tx: &mut Tx,
    site_id: &str,
    site_space_id: &str,
) -> sqlx::Result<Option<SpaceCustomizationRow>> {
    tx.row(
        &Sql::new(
            "SELECT site_space_id, settings, updated_at FROM site_space_customizations \
             WHERE site_id = $1 AND site_space_id = $2",
        )
        .arg(site_id)
        .arg(site_space_id),
    )
    .await
}

/// Stores a site space's override, replacing the one it had.
pub async fn put_space_customization(
    tx: &mut Tx,
    site_id: &str,
    site_space_id: &str,
    settings: &str,
    now: i64,
) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO site_space_customizations (site_space_id, site_id, settings, updated_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (site_space_id) \
             DO UPDATE SET settings = $3, updated_at = $4",
        )
        .arg(site_space_id)
        .arg(site_id)
        .arg(settings)
        .arg(now),
    )
    .await?;
    Ok(())
}

/// Removes a site space's override; whether it had one.
pub async fn delete_space_customization(
    tx: &mut Tx,
    site_id: &str,
    site_space_id: &str,
) -> sqlx::Result<bool> {
    let n = tx
        .execute(
            &Sql::new(
                "DELETE FROM site_space_customizations WHERE site_id = $1 AND site_space_id = $2",
            )
            .arg(site_id)
            .arg(site_space_id),
        )
        .await?;
    Ok(n > 0)
}

crate::db::inline::row! {
    /// An outside MCP server a site names (`SiteMcpServer`); `headers` is a JSON object of
    /// header names to values.
    #[derive(Debug, Clone)]
    pub struct McpServerRow {
        pub id: String,
        pub site_id: String,
        pub name: String,
        pub url: String,
        pub headers: String,
        pub created_at: i64,
    }
}

const MCP_COLUMNS: &str = "id, site_id, name, url, headers, created_at";

/// A page of a site's MCP servers, oldest first, after the keyset `after`; with their count.
pub async fn list_mcp_servers(
    db: &Db,
    site_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<McpServerRow>, i64)> {
    let total: i64 = db
        .scalar(&Sql::new("SELECT COUNT(*) FROM site_mcp_servers WHERE site_id = $1").arg(site_id))
        .await?;
    let (at, id) = after.unwrap_or((i64::MIN, String::new()));
    let rows = db
        .rows(
            &Sql::new(format!(
                "SELECT {MCP_COLUMNS} FROM site_mcp_servers WHERE site_id = $1 \
                 AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
                 ORDER BY created_at, id LIMIT $4"
            ))
            .arg(site_id)
            .arg(at)
            .arg(id)
            .arg(limit),
        )
        .await?;
    Ok((rows, total))
}

/// One MCP server of a site.
pub async fn mcp_server(db: &Db, site_id: &str, id: &str) -> sqlx::Result<Option<McpServerRow>> {
    db.row(
        &Sql::new(format!(
            "SELECT {MCP_COLUMNS} FROM site_mcp_servers WHERE id = $1 AND site_id = $2"
        ))
        .arg(id)
        .arg(site_id),
    )
    .await
}

/// One MCP server of a site, inside a writing transaction.
pub async fn mcp_server_tx(
    tx: &mut Tx,
    site_id: &str,
    id: &str,
) -> sqlx::Result<Option<McpServerRow>> {
    tx.row(
        &Sql::new(format!(
            "SELECT {MCP_COLUMNS} FROM site_mcp_servers WHERE id = $1 AND site_id = $2"
        ))
        .arg(id)
        .arg(site_id),
    )
    .await
}

/// How many MCP servers a site has, inside a writing transaction.
pub async fn count_mcp_servers(tx: &mut Tx, site_id: &str) -> sqlx::Result<i64> {
    tx.scalar(&Sql::new("SELECT COUNT(*) FROM site_mcp_servers WHERE site_id = $1").arg(site_id))
        .await
}

/// Adds an MCP server to a site.
pub async fn insert_mcp_server(tx: &mut Tx, m: &McpServerRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "INSERT INTO site_mcp_servers ({MCP_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
        ))
        .arg(&m.id)
        .arg(&m.site_id)
        .arg(&m.name)
        .arg(&m.url)
        .arg(&m.headers)
        .arg(m.created_at),
    )
    .await?;
    Ok(())
}

/// The columns of an MCP server a write changes; `None` leaves one as it is.
#[derive(Debug, Default)]
pub struct McpServerPatch {
    pub name: Option<String>,
    pub url: Option<String>,
    pub headers: Option<String>,
}

/// Writes only the columns a request changes; whether the server exists.
pub async fn patch_mcp_server(
    tx: &mut Tx,
    site_id: &str,
    id: &str,
    p: &McpServerPatch,
) -> sqlx::Result<bool> {
    let mut q = Sql::new("UPDATE site_mcp_servers SET id = id");
    for (column, value) in [("name", &p.name), ("url", &p.url), ("headers", &p.headers)] {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(value.as_str());
        }
    }
    q.push(" WHERE id = ")
        .bind(id)
        .push(" AND site_id = ")
        .bind(site_id);
    Ok(tx.execute(&q).await? > 0)
}

/// Removes an MCP server of a site; whether it existed.
pub async fn delete_mcp_server(tx: &mut Tx, site_id: &str, id: &str) -> sqlx::Result<bool> {
    let n = tx
        .execute(
            &Sql::new("DELETE FROM site_mcp_servers WHERE id = $1 AND site_id = $2")
                .arg(id)
                .arg(site_id),
        )
        .await?;
    Ok(n > 0)
}
