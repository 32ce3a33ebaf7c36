//! Organization members.

use crate::ids::{OrgId, UserId};
use crate::scopes::Scope;

use crate::db::sql::{like_escape, Sql};
use crate::db::{Db, Tx};

crate::db::inline::row! {
    /// A member with its user and counts.
    #[derive(Debug, Clone)]
    pub struct MemberRow {
        pub org_id: OrgId,
        pub user_id: UserId,
        pub role: Option<String>,
        pub joined_at: i64,
        pub last_seen_at: Option<i64>,
        pub sso: i64,
        pub email: String,
        pub display_name: String,
        pub photo_url: Option<String>,
        pub teams: i64,
        /// Spaces the user was granted access to explicitly.
        pub spaces: i64,
    }
}

const SELECT: &str = "SELECT m.org_id, m.user_id, m.role, m.joined_at, m.last_seen_at, m.sso, \
    u.email, u.display_name, u.photo_url, \
    (SELECT COUNT(*) FROM team_members tm WHERE tm.org_id = m.org_id AND tm.user_id = m.user_id) AS teams, \
    (SELECT COUNT(*) FROM content_permissions cp WHERE cp.org_id = m.org_id AND cp.target_kind = 'space' \
       AND cp.principal_kind = 'user' AND cp.principal_id = m.user_id) AS spaces \
    FROM members m JOIN users u ON u.id = m.user_id";

/// One member.
pub async fn get(db: &Db, org_id: &OrgId, user_id: &UserId) -> sqlx::Result<Option<MemberRow>> {
    db.row(
        &Sql::new(format!("{SELECT} WHERE m.org_id = $1 AND m.user_id = $2"))
            .arg(org_id)
            .arg(user_id),
    )
    .await
}

/// One member, inside a transaction.
pub async fn get_tx(
    tx: &mut Tx,
    org_id: &OrgId,
    user_id: &UserId,
) -> sqlx::Result<Option<MemberRow>> {
    tx.row(
        &Sql::new(format!("{SELECT} WHERE m.org_id = $1 AND m.user_id = $2"))
            .arg(org_id)
            .arg(user_id),
    )
    .await
}

/// Filters and ordering of the member list.
#[derive(Debug, Default)]
pub struct MemberFilter {
    /// `Some(None)` selects guests.
    pub role: Option<Option<String>>,
    /// Case-insensitive substring of display name or e-mail.
    pub search: Option<String>,
    /// Sort by last-seen time (active members only) instead of join time.
    pub by_last_seen: bool,
    /// Ascending order.
    pub ascending: bool,
}

/// A page of members after the keyset `(sort value, user id)`, and the filtered total.
pub async fn list(
    db: &Db,
    org_id: &str,
    filter: &MemberFilter,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<MemberRow>, i64)> {
    let mut cond = Sql::new(" WHERE m.org_id = ");
    cond.bind(org_id);
    match &filter.role {
        Some(Some(role)) => {
            cond.push(" AND m.role = ").bind(role);
        }
        Some(None) => {
            cond.push(" AND m.role IS NULL");
        }
        None => {}
    }
    if let Some(search) = &filter.search {
        let pattern = format!("%{}%", like_escape(&search.to_lowercase()));
        cond.push(" AND (LOWER(u.display_name) LIKE ")
            .bind(pattern.clone());
        cond.push(" ESCAPE '\\' OR LOWER(u.email) LIKE ")
            .bind(pattern);
        cond.push(" ESCAPE '\\')");
    }
    let key = if filter.by_last_seen {
        cond.push(" AND m.last_seen_at IS NOT NULL");
        "m.last_seen_at"
    } else {
        "m.joined_at"
    };
    let mut count_q = Sql::new("SELECT COUNT(*) FROM members m JOIN users u ON u.id = m.user_id");
    count_q.append(&cond);
    let (op, dir) = if filter.ascending {
        (">", "ASC")
    } else {
        ("<", "DESC")
    };
    let mut q = Sql::new(SELECT);
    q.append(&cond);
    if let Some((value, id)) = after {
        q.push(&format!(" AND ({key} {op} ")).bind(value);
        q.push(&format!(" OR ({key} = ")).bind(value);
        q.push(&format!(" AND m.user_id {op} ")).bind(id).push("))");
    }
    q.push(&format!(" ORDER BY {key} {dir}, m.user_id {dir} LIMIT "))
        .bind(limit);
    let rows = q.query_as().fetch_all(db.pool()).await?;
    let count: i64 = count_q.query_scalar().fetch_one(db.pool()).await?;
    Ok((rows, count))
}

/// Adds a member; returns false when the user already was one.
pub async fn insert(
    tx: &mut Tx,
    org_id: &str,
    user_id: &str,
    role: Option<&str>,
    sso: bool,
    now: i64,
) -> sqlx::Result<bool> {
    let res = tx.execute(&Sql::new(
        "INSERT INTO members (org_id, user_id, role, joined_at, sso) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (org_id, user_id) DO NOTHING",
    )
    .arg(org_id)
    .arg(user_id)
    .arg(role)
    .arg(now)
    .arg(i64::from(sso))
    )
    .await?;
    Ok(res > 0)
}

/// Sets a member's role (`None` = guest).
pub async fn set_role(
    tx: &mut Tx,
    org_id: &str,
    user_id: &str,
    role: Option<&str>,
) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("UPDATE members SET role = $3 WHERE org_id = $1 AND user_id = $2")
            .arg(org_id)
            .arg(user_id)
            .arg(role),
    )
    .await?;
    Ok(())
}

/// Marks a member as signing in through SSO.
pub async fn set_sso(db: &Db, org_id: &OrgId, user_id: &UserId) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("UPDATE members SET sso = 1 WHERE org_id = $1 AND user_id = $2")
            .arg(org_id)
            .arg(user_id),
        &[Scope::Org(org_id.as_str())],
    )
    .await?;
    Ok(())
}

/// Marks a member as signing in through SSO, inside a transaction.
pub async fn set_sso_tx(tx: &mut Tx, org_id: &str, user_id: &str) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("UPDATE members SET sso = 1 WHERE org_id = $1 AND user_id = $2 AND sso = 0")
            .arg(org_id)
            .arg(user_id),
    )
    .await?;
    Ok(())
}

/// Records that the member was seen now.
pub async fn touch(db: &Db, org_id: &OrgId, user_id: &UserId, now: i64) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("UPDATE members SET last_seen_at = $3 WHERE org_id = $1 AND user_id = $2")
            .arg(org_id)
            .arg(user_id)
            .arg(now),
        &[],
    )
    .await?;
    Ok(())
}

/// Removes a member (and, by cascade, their team memberships) and their content grants,
/// so that a later re-invitation starts from nothing.
pub async fn remove(tx: &mut Tx, org_id: &OrgId, user_id: &UserId) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "DELETE FROM content_permissions WHERE org_id = $1 AND principal_kind = 'user' AND principal_id = $2",
    )
    .arg(org_id)
    .arg(user_id)
    )
    .await?;
    tx.execute(
        &Sql::new("DELETE FROM members WHERE org_id = $1 AND user_id = $2")
            .arg(org_id)
            .arg(user_id),
    )
    .await?;
    Ok(())
}

/// How many admins the organization has. Locks the organization's row first, so that two
/// concurrent demotions cannot both see a second admin.
pub async fn count_admins(tx: &mut Tx, org_id: &str) -> sqlx::Result<i64> {
    let lock = crate::db::for_update(tx);
    tx.execute(&Sql::new(format!("SELECT id FROM organizations WHERE id = $1{lock}")).arg(org_id))
        .await?;
    tx.scalar(
        &Sql::new("SELECT COUNT(*) FROM members WHERE org_id = $1 AND role = 'admin'").arg(org_id),
    )
    .await
}

/// A page of the members of `org_id` who posted a comment or a reply in a discussion (the
/// space's own when `change_request` is `None`, else that change request's), by user id
/// after `after`; and how many there are.
pub async fn commenters(
    db: &Db,
    org_id: &str,
    space_id: &str,
    change_request: Option<&str>,
    after: Option<String>,
    limit: i64,
) -> sqlx::Result<(Vec<MemberRow>, i64)> {
    let thread = |sql: &mut Sql| {
        sql.push("c.space_id = ").bind(space_id);
        match change_request {
            Some(cr) => sql.push(" AND c.change_request_id = ").bind(cr),
            None => sql.push(" AND c.change_request_id IS NULL"),
        };
    };
    let mut cond = Sql::new(" WHERE m.org_id = ");
    cond.bind(org_id);
    cond.push(" AND m.user_id IN (SELECT c.posted_by FROM comments c WHERE ");
    thread(&mut cond);
    cond.push(" UNION SELECT r.posted_by FROM comment_replies r JOIN comments c ON c.id = r.comment_id WHERE ");
    thread(&mut cond);
    cond.push(")");
    let mut count_q = Sql::new("SELECT COUNT(*) FROM members m JOIN users u ON u.id = m.user_id");
    count_q.append(&cond);
    let mut q = Sql::new(SELECT);
    q.append(&cond);
    if let Some(id) = after {
        q.push(" AND m.user_id > ").bind(id);
    }
    q.push(" ORDER BY m.user_id LIMIT ").bind(limit);
    let rows = db.rows(&q).await?;
    let count: i64 = db.scalar(&count_q).await?;
    Ok((rows, count))
}
