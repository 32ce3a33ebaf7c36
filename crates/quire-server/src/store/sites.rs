//! Docs sites: the site row, its sections, section groups, site spaces and share links.
//!
//! Writers lock the site row first ([`lock`]) and then read the site's structure through
//! their own transaction, so that two writes to one site's structure take turns.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::values::{AgentsContext, SiteType, SiteVisibility, VisitorAuthBackend};

crate::db::inline::row! {
    /// A stored site, with its number of site spaces.
    #[derive(Debug, Clone)]
    pub struct SiteRow {
        pub id: String,
        pub org_id: String,
        pub site_type: SiteType,
        pub title: String,
        pub visibility: SiteVisibility,
        pub basename: Option<String>,
        pub hostname: Option<String>,
        pub proxy: Option<String>,
        pub published: i64,
        pub adaptive_content: i64,
        pub agents_context: AgentsContext,
        pub default_site_space: Option<String>,
        pub default_section: Option<String>,
        pub customization: Option<String>,
        pub customization_updated_at: Option<i64>,
        pub adaptive_schema: Option<String>,
        pub adaptive_schema_updated_at: Option<i64>,
        pub created_at: i64,
        pub updated_at: i64,
        /// Counted when read, so it is always exact.
        pub site_spaces: i64,
    }
}

const SITE_COLUMNS: &str = "id, org_id, type AS site_type, title, visibility, basename, hostname, \
    proxy, published, adaptive_content, agents_context, default_site_space, default_section, \
    customization, customization_updated_at, adaptive_schema, adaptive_schema_updated_at, \
    created_at, updated_at, \
    (SELECT COUNT(*) FROM site_spaces ss WHERE ss.site_id = sites.id) AS site_spaces";

crate::db::inline::row! {
    /// A section of a site.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SectionRow {
        pub id: String,
        pub site_id: String,
        pub group_id: Option<String>,
        pub title: String,
        pub description: Option<String>,
        pub path: String,
        pub condition: Option<String>,
        pub icon: Option<String>,
        pub default_site_space: Option<String>,
        pub position: i64,
        pub group_position: i64,
        pub created_at: i64,
    }
}

crate::db::inline::row! {
    /// A group of sections.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct GroupRow {
        pub id: String,
        pub site_id: String,
        pub title: String,
        pub icon: Option<String>,
        pub position: i64,
        pub created_at: i64,
    }
}

crate::db::inline::row! {
    /// A space published in a site (at the root, or in a section).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SiteSpaceRow {
        pub id: String,
        pub site_id: String,
        pub section_id: Option<String>,
        pub space_id: String,
        pub path: String,
        pub condition: Option<String>,
        pub position: i64,
        pub created_at: i64,
    }
}

crate::db::inline::row! {
    /// A share link of a site.
    #[derive(Debug, Clone)]
    pub struct ShareLinkRow {
        pub id: String,
        pub site_id: String,
        pub name: String,
        pub share_key: String,
        pub active: i64,
        pub created_at: i64,
    }
}

/// Everything below a site, each list in its stored order.
#[derive(Debug, Clone, Default)]
pub struct Structure {
    pub sections: Vec<SectionRow>,
    pub groups: Vec<GroupRow>,
    pub site_spaces: Vec<SiteSpaceRow>,
}

/// Inserts a site.
pub async fn insert(tx: &mut Tx, s: &SiteRow) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "INSERT INTO sites (id, org_id, type, title, visibility, basename, hostname, proxy, \
         published, adaptive_content, agents_context, default_site_space, default_section, \
         customization, customization_updated_at, adaptive_schema, adaptive_schema_updated_at, \
         created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
    )
    .arg(&s.id)
    .arg(&s.org_id)
    .arg(s.site_type)
    .arg(&s.title)
    .arg(s.visibility)
    .arg(&s.basename)
    .arg(&s.hostname)
    .arg(&s.proxy)
    .arg(s.published)
    .arg(s.adaptive_content)
    .arg(s.agents_context)
    .arg(&s.default_site_space)
    .arg(&s.default_section)
    .arg(&s.customization)
    .arg(s.customization_updated_at)
    .arg(&s.adaptive_schema)
    .arg(s.adaptive_schema_updated_at)
    .arg(s.created_at)
    .arg(s.updated_at)
    )
    .await?;
    Ok(())
}

/// A site of an organization.
pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<SiteRow>> {
    sqlx::query_as(&format!(
        "SELECT {SITE_COLUMNS} FROM sites WHERE id = $1 AND org_id = $2"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_optional(db.pool())
    .await
}

/// A site by id alone (published-content tokens name the site, not the caller's org).
pub async fn get_by_id(db: &Db, id: &str) -> sqlx::Result<Option<SiteRow>> {
    sqlx::query_as(&format!("SELECT {SITE_COLUMNS} FROM sites WHERE id = $1"))
        .bind(id)
        .fetch_optional(db.pool())
        .await
}

/// Locks a site of an organization for a write of its row or structure, and reads it.
pub async fn lock(tx: &mut Tx, org_id: &str, id: &str) -> sqlx::Result<Option<SiteRow>> {
    let lock = crate::db::for_update(tx);
    // Lock the bare row (PostgreSQL refuses FOR UPDATE beside the counting subquery), then
    // read it whole.
    let found: Option<String> = tx
        .scalar_opt(
            &Sql::new(format!(
                "SELECT id FROM sites WHERE id = $1 AND org_id = $2{lock}"
            ))
            .arg(id)
            .arg(org_id),
        )
        .await?;
    if found.is_none() {
        return Ok(None);
    }
    tx.row(&Sql::new(format!("SELECT {SITE_COLUMNS} FROM sites WHERE id = $1")).arg(id))
        .await
}

/// Filters of `listSites`.
#[derive(Debug, Default)]
pub struct SiteFilter {
    /// Only sites publishing this space.
    pub space: Option<String>,
    /// Only sites whose title contains this text (case-insensitive).
    pub title: Option<String>,
    /// Only published (or unpublished) sites.
    pub published: Option<bool>,
    /// Only sites of these types.
    pub types: Vec<SiteType>,
}

fn filtered(org_id: &str, f: &SiteFilter) -> Sql {
    let mut q = Sql::new(" FROM sites WHERE org_id = ");
    q.bind(org_id);
    if let Some(space) = &f.space {
        q.push(" AND id IN (SELECT site_id FROM site_spaces WHERE space_id = ")
            .bind(space)
            .push(")");
    }
    if let Some(title) = &f.title {
        q.push(" AND LOWER(title) LIKE ")
            .bind(format!(
                "%{}%",
                crate::db::sql::like_escape(&title.to_lowercase())
            ))
            .push(" ESCAPE '\\'");
    }
    if let Some(published) = f.published {
        q.push(" AND published = ").bind(i64::from(published));
    }
    if !f.types.is_empty() {
        q.push(" AND type IN (");
        for (i, t) in f.types.iter().enumerate() {
            if i > 0 {
                q.push(", ");
            }
            q.bind(t.as_str());
        }
        q.push(")");
    }
    q
}

/// A page of an organization's sites, oldest first, after the keyset `after`.
pub async fn list(
    db: &Db,
    org_id: &str,
    f: &SiteFilter,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<SiteRow>, i64)> {
    let base = filtered(org_id, f);
    let mut count = Sql::new("SELECT COUNT(*)");
    count.append(&base);
    let total: i64 = count.query_scalar().fetch_one(db.pool()).await?;
    let mut q = Sql::new(format!("SELECT {SITE_COLUMNS}"));
    q.append(&base);
    if let Some((at, id)) = after {
        q.push(" AND (created_at > ")
            .bind(at)
            .push(" OR (created_at = ")
            .bind(at)
            .push(" AND id > ")
            .bind(id)
            .push("))");
    }
    q.push(" ORDER BY created_at, id LIMIT ").bind(limit);
    Ok((q.query_as().fetch_all(db.pool()).await?, total))
}

/// The columns of a site that a `PATCH` may change; `None` leaves a column as it is.
#[derive(Debug, Default)]
pub struct SitePatch {
    pub title: Option<String>,
    pub visibility: Option<SiteVisibility>,
    pub basename: Option<String>,
    pub hostname: Option<Option<String>>,
    pub proxy: Option<Option<String>>,
    pub adaptive_content: Option<bool>,
    pub agents_context: Option<AgentsContext>,
    pub default_site_space: Option<String>,
    pub default_section: Option<String>,
    pub published: Option<bool>,
    pub customization: Option<String>,
    pub adaptive_schema: Option<String>,
}

/// Writes only the columns a request changes.
pub async fn patch(tx: &mut Tx, id: &str, p: &SitePatch, now: i64) -> sqlx::Result<()> {
    let mut q = Sql::new("UPDATE sites SET updated_at = ");
    q.bind(now);
    let text = [
        ("title", p.title.clone().map(Some)),
        (
            "visibility",
            p.visibility.map(|v| Some(v.as_str().to_string())),
        ),
        ("basename", p.basename.clone().map(Some)),
        ("hostname", p.hostname.clone()),
        ("proxy", p.proxy.clone()),
        (
            "agents_context",
            p.agents_context.map(|a| Some(a.as_str().to_string())),
        ),
        ("default_site_space", p.default_site_space.clone().map(Some)),
        ("default_section", p.default_section.clone().map(Some)),
        ("customization", p.customization.clone().map(Some)),
        ("adaptive_schema", p.adaptive_schema.clone().map(Some)),
    ];
    for (column, value) in text {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(value);
        }
    }
    for (column, value) in [
        ("adaptive_content", p.adaptive_content),
        ("published", p.published),
    ] {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(i64::from(value));
        }
    }
    if p.customization.is_some() {
        q.push(", customization_updated_at = ").bind(now);
    }
    if p.adaptive_schema.is_some() {
        q.push(", adaptive_schema_updated_at = ").bind(now);
    }
    q.push(" WHERE id = ").bind(id);
    tx.execute(&q).await?;
    Ok(())
}

/// Deletes a site with everything below it. False when it did not exist.
pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> sqlx::Result<bool> {
    let res = tx
        .execute(
            &Sql::new("DELETE FROM sites WHERE id = $1 AND org_id = $2")
                .arg(id)
                .arg(org_id),
        )
        .await?;
    Ok(res == 1)
}

/// The three reads of a site's structure.
fn structure_queries(site_id: &str) -> [Sql; 3] {
    [
        Sql::new(
            "SELECT id, site_id, group_id, title, description, path, condition, icon, \
             default_site_space, position, group_position, created_at \
             FROM site_sections WHERE site_id = $1 ORDER BY position, id",
        )
        .arg(site_id),
        Sql::new(
            "SELECT id, site_id, title, icon, position, created_at \
             FROM site_section_groups WHERE site_id = $1 ORDER BY position, id",
        )
        .arg(site_id),
        Sql::new(
            "SELECT id, site_id, section_id, space_id, path, condition, position, created_at \
             FROM site_spaces WHERE site_id = $1 ORDER BY position, id",
        )
        .arg(site_id),
    ]
}

/// The structure of a site.
pub async fn structure(db: &Db, site_id: &str) -> sqlx::Result<Structure> {
    let [sections, groups, site_spaces] = structure_queries(site_id);
    Ok(Structure {
        sections: sqlx_all(db, &sections).await?,
        groups: sqlx_all(db, &groups).await?,
        site_spaces: sqlx_all(db, &site_spaces).await?,
    })
}

/// The rows of an unbounded read, through the pool.
async fn sqlx_all<T>(db: &Db, q: &Sql) -> sqlx::Result<Vec<T>>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    q.query_as().fetch_all(db.pool()).await
}

/// The structure of a locked site, inside its writing transaction.
pub async fn structure_tx(tx: &mut Tx, site_id: &str) -> sqlx::Result<Structure> {
    let [sections, groups, site_spaces] = structure_queries(site_id);
    Ok(Structure {
        sections: tx.rows(&sections).await?,
        groups: tx.rows(&groups).await?,
        site_spaces: tx.rows(&site_spaces).await?,
    })
}

/// Inserts a section.
pub async fn insert_section(tx: &mut Tx, s: &SectionRow) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "INSERT INTO site_sections (id, site_id, group_id, title, description, path, condition, \
         icon, default_site_space, position, group_position, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .arg(&s.id)
    .arg(&s.site_id)
    .arg(&s.group_id)
    .arg(&s.title)
    .arg(&s.description)
    .arg(&s.path)
    .arg(&s.condition)
    .arg(&s.icon)
    .arg(&s.default_site_space)
    .arg(s.position)
    .arg(s.group_position)
    .arg(s.created_at)
    )
    .await?;
    Ok(())
}

/// Rewrites the changeable columns of a section (its row was read under the site's lock).
pub async fn update_section(tx: &mut Tx, s: &SectionRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "UPDATE site_sections SET group_id = $2, title = $3, description = $4, path = $5, \
         condition = $6, icon = $7, default_site_space = $8, position = $9, group_position = $10 \
         WHERE id = $1",
        )
        .arg(&s.id)
        .arg(&s.group_id)
        .arg(&s.title)
        .arg(&s.description)
        .arg(&s.path)
        .arg(&s.condition)
        .arg(&s.icon)
        .arg(&s.default_site_space)
        .arg(s.position)
        .arg(s.group_position),
    )
    .await?;
    Ok(())
}

/// Deletes a section; its site spaces go with it.
pub async fn delete_section(tx: &mut Tx, id: &str) -> sqlx::Result<()> {
    tx.execute(&Sql::new("DELETE FROM site_spaces WHERE section_id = $1").arg(id))
        .await?;
    tx.execute(&Sql::new("DELETE FROM site_sections WHERE id = $1").arg(id))
        .await?;
    Ok(())
}

/// Inserts a section group.
pub async fn insert_group(tx: &mut Tx, g: &GroupRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO site_section_groups (id, site_id, title, icon, position, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .arg(&g.id)
        .arg(&g.site_id)
        .arg(&g.title)
        .arg(&g.icon)
        .arg(g.position)
        .arg(g.created_at),
    )
    .await?;
    Ok(())
}

/// Rewrites the changeable columns of a section group.
pub async fn update_group(tx: &mut Tx, g: &GroupRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "UPDATE site_section_groups SET title = $2, icon = $3, position = $4 WHERE id = $1",
        )
        .arg(&g.id)
        .arg(&g.title)
        .arg(&g.icon)
        .arg(g.position),
    )
    .await?;
    Ok(())
}

/// Deletes a section group; its sections stay in the site, ungrouped.
pub async fn delete_group(tx: &mut Tx, id: &str) -> sqlx::Result<()> {
    tx.execute(&Sql::new("UPDATE site_sections SET group_id = NULL WHERE group_id = $1").arg(id))
        .await?;
    tx.execute(&Sql::new("DELETE FROM site_section_groups WHERE id = $1").arg(id))
        .await?;
    Ok(())
}

/// Inserts a site space.
pub async fn insert_site_space(tx: &mut Tx, s: &SiteSpaceRow) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "INSERT INTO site_spaces (id, site_id, section_id, space_id, path, condition, position, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .arg(&s.id)
    .arg(&s.site_id)
    .arg(&s.section_id)
    .arg(&s.space_id)
    .arg(&s.path)
    .arg(&s.condition)
    .arg(s.position)
    .arg(s.created_at)
    )
    .await?;
    Ok(())
}

/// Rewrites the changeable columns of a site space.
pub async fn update_site_space(tx: &mut Tx, s: &SiteSpaceRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "UPDATE site_spaces SET section_id = $2, space_id = $3, path = $4, condition = $5, \
         position = $6 WHERE id = $1",
        )
        .arg(&s.id)
        .arg(&s.section_id)
        .arg(&s.space_id)
        .arg(&s.path)
        .arg(&s.condition)
        .arg(s.position),
    )
    .await?;
    Ok(())
}

/// Deletes a site space.
pub async fn delete_site_space(tx: &mut Tx, id: &str) -> sqlx::Result<()> {
    tx.execute(&Sql::new("DELETE FROM site_spaces WHERE id = $1").arg(id))
        .await?;
    Ok(())
}

/// Takes a deleted space out of every site that publishes it.
pub async fn remove_space(tx: &mut Tx, space_id: &str) -> sqlx::Result<()> {
    tx.execute(&Sql::new("DELETE FROM site_spaces WHERE space_id = $1").arg(space_id))
        .await?;
    Ok(())
}

/// Inserts a share link.
pub async fn insert_share_link(tx: &mut Tx, l: &ShareLinkRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO site_share_links (id, site_id, name, share_key, active, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .arg(&l.id)
        .arg(&l.site_id)
        .arg(&l.name)
        .arg(&l.share_key)
        .arg(l.active)
        .arg(l.created_at),
    )
    .await?;
    Ok(())
}

const LINK_COLUMNS: &str = "id, site_id, name, share_key, active, created_at";

/// A page of a site's share links, oldest first.
pub async fn list_share_links(
    db: &Db,
    site_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<ShareLinkRow>, i64)> {
    let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM site_share_links WHERE site_id = $1")
        .bind(site_id)
        .fetch_one(db.pool())
        .await?;
    let (at, id) = after.unwrap_or((i64::MIN, String::new()));
    let rows = sqlx::query_as(&format!(
        "SELECT {LINK_COLUMNS} FROM site_share_links WHERE site_id = $1 \
         AND (created_at > $2 OR (created_at = $2 AND id > $3)) \
         ORDER BY created_at, id LIMIT $4"
    ))
    .bind(site_id)
    .bind(at)
    .bind(id)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    Ok((rows, total))
}

/// A share link of a site, inside a writing transaction.
pub async fn get_share_link_tx(
    tx: &mut Tx,
    site_id: &str,
    id: &str,
) -> sqlx::Result<Option<ShareLinkRow>> {
    tx.row(
        &Sql::new(format!(
            "SELECT {LINK_COLUMNS} FROM site_share_links WHERE id = $1 AND site_id = $2"
        ))
        .arg(id)
        .arg(site_id),
    )
    .await
}

/// The active share link of a site holding `key`, if any.
pub async fn active_share_link(
    db: &Db,
    site_id: &str,
    key: &str,
) -> sqlx::Result<Option<ShareLinkRow>> {
    sqlx::query_as(&format!(
        "SELECT {LINK_COLUMNS} FROM site_share_links \
         WHERE site_id = $1 AND share_key = $2 AND active = 1"
    ))
    .bind(site_id)
    .bind(key)
    .fetch_optional(db.pool())
    .await
}

/// A published share-link site (and its site space) showing `space_id` whose active share
/// link holds `key`.
pub async fn shared_site_space(
    db: &Db,
    space_id: &str,
    key: &str,
) -> sqlx::Result<Option<(SiteRow, String)>> {
    let found: Option<(String, String)> = sqlx::query_as(
        "SELECT ss.site_id, ss.id FROM site_spaces ss          JOIN site_share_links l ON l.site_id = ss.site_id          JOIN sites s ON s.id = ss.site_id          WHERE ss.space_id = $1 AND l.share_key = $2 AND l.active = 1            AND s.published = 1 AND s.visibility = 'share-link'          ORDER BY ss.id LIMIT 1",
    )
    .bind(space_id)
    .bind(key)
    .fetch_optional(db.pool())
    .await?;
    let Some((site_id, site_space)) = found else {
        return Ok(None);
    };
    Ok(get_by_id(db, &site_id).await?.map(|s| (s, site_space)))
}

/// Rewrites a share link's name and state.
pub async fn update_share_link(tx: &mut Tx, l: &ShareLinkRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("UPDATE site_share_links SET name = $2, active = $3 WHERE id = $1")
            .arg(&l.id)
            .arg(&l.name)
            .arg(l.active),
    )
    .await?;
    Ok(())
}

/// Deletes a share link of a site.
pub async fn delete_share_link(tx: &mut Tx, site_id: &str, id: &str) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("DELETE FROM site_share_links WHERE id = $1 AND site_id = $2")
            .arg(id)
            .arg(site_id),
    )
    .await?;
    Ok(())
}

/// Writes what changed from `before` to `after` in a locked site's structure: new rows,
/// changed rows and removed rows, parents before children.
pub async fn save_structure(
    tx: &mut Tx,
    before: &Structure,
    after: &Structure,
) -> sqlx::Result<()> {
    fn find<'a, T>(rows: &'a [T], id: &str, id_of: impl Fn(&T) -> &str) -> Option<&'a T> {
        rows.iter().find(|r| id_of(r) == id)
    }
    for g in &after.groups {
        match find(&before.groups, &g.id, |r| &r.id) {
            None => insert_group(tx, g).await?,
            Some(old) if old != g => update_group(tx, g).await?,
            Some(_) => {}
        }
    }
    for x in &after.sections {
        match find(&before.sections, &x.id, |r| &r.id) {
            None => insert_section(tx, x).await?,
            Some(old) if old != x => update_section(tx, x).await?,
            Some(_) => {}
        }
    }
    for ss in &after.site_spaces {
        match find(&before.site_spaces, &ss.id, |r| &r.id) {
            None => insert_site_space(tx, ss).await?,
            Some(old) if old != ss => update_site_space(tx, ss).await?,
            Some(_) => {}
        }
    }
    for ss in &before.site_spaces {
        if find(&after.site_spaces, &ss.id, |r| &r.id).is_none() {
            delete_site_space(tx, &ss.id).await?;
        }
    }
    for x in &before.sections {
        if find(&after.sections, &x.id, |r| &r.id).is_none() {
            delete_section(tx, &x.id).await?;
        }
    }
    for g in &before.groups {
        if find(&after.groups, &g.id, |r| &r.id).is_none() {
            delete_group(tx, &g.id).await?;
        }
    }
    Ok(())
}

crate::db::inline::row! {
    /// The visitor-authentication settings of a site (`SitePublishingAuth`).
    #[derive(Debug, Clone)]
    pub struct PublishingAuthRow {
        pub site_id: String,
        pub private_key: String,
        pub fallback_url: Option<String>,
        pub backend: VisitorAuthBackend,
        pub integration: Option<String>,
        pub updated_at: i64,
    }
}

const AUTH_COLUMNS: &str = "site_id, private_key, fallback_url, backend, integration, updated_at";

/// The visitor-authentication settings of a site, when they were ever created.
pub async fn publishing_auth(db: &Db, site_id: &str) -> sqlx::Result<Option<PublishingAuthRow>> {
    sqlx::query_as(&format!(
        "SELECT {AUTH_COLUMNS} FROM site_publishing_auth WHERE site_id = $1"
    ))
    .bind(site_id)
    .fetch_optional(db.pool())
    .await
}

/// The visitor-authentication settings of a site, read inside a writing transaction.
pub async fn publishing_auth_tx(
    tx: &mut Tx,
    site_id: &str,
) -> sqlx::Result<Option<PublishingAuthRow>> {
    tx.row(
        &Sql::new(format!(
            "SELECT {AUTH_COLUMNS} FROM site_publishing_auth WHERE site_id = $1"
        ))
        .arg(site_id),
    )
    .await
}

/// Creates a site's settings with `private_key` and the `custom` backend, unless they exist:
/// two first reads racing keep one key.
pub async fn create_publishing_auth(
    tx: &mut Tx,
    site_id: &str,
    private_key: &str,
    now: i64,
) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO site_publishing_auth (site_id, private_key, backend, updated_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (site_id) DO NOTHING",
        )
        .arg(site_id)
        .arg(private_key)
        .arg(VisitorAuthBackend::Custom)
        .arg(now),
    )
    .await?;
    Ok(())
}

/// The columns of a site's visitor-authentication settings that a write changes; `None`
/// leaves a column as it is.
#[derive(Debug, Default)]
pub struct PublishingAuthPatch {
    pub private_key: Option<String>,
    pub fallback_url: Option<Option<String>>,
    pub backend: Option<VisitorAuthBackend>,
    pub integration: Option<Option<String>>,
}

/// Writes only the columns a request changes (the row exists: see [`create_publishing_auth`]).
pub async fn patch_publishing_auth(
    tx: &mut Tx,
    site_id: &str,
    p: &PublishingAuthPatch,
    now: i64,
) -> sqlx::Result<()> {
    let mut q = Sql::new("UPDATE site_publishing_auth SET updated_at = ");
    q.bind(now);
    let text = [
        ("private_key", p.private_key.clone().map(Some)),
        ("fallback_url", p.fallback_url.clone()),
        ("backend", p.backend.map(|b| Some(b.as_str().to_string()))),
        ("integration", p.integration.clone()),
    ];
    for (column, value) in text {
        if let Some(value) = value {
            q.push(&format!(", {column} = ")).bind(value);
        }
    }
    q.push(" WHERE site_id = ").bind(site_id);
    tx.execute(&q).await?;
    Ok(())
}
