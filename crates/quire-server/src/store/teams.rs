//! Teams and their members.

use crate::scopes::Scope;

use crate::db::sql::{like_escape, Sql};
use crate::db::{Db, Tx};
use crate::store::members::MemberRow;

crate::db::inline::row! {
    /// A team with its member count.
    #[derive(Debug, Clone)]
    pub struct TeamRow {
        pub id: String,
        pub org_id: String,
        pub title: String,
        pub created_at: i64,
        pub members: i64,
        /// Spaces the team was granted access to.
        pub spaces: i64,
    }
}

const SELECT: &str = "SELECT t.id, t.org_id, t.title, t.created_at, \
    (SELECT COUNT(*) FROM team_members tm WHERE tm.team_id = t.id) AS members, \
    (SELECT COUNT(*) FROM content_permissions cp WHERE cp.target_kind = 'space' \
       AND cp.principal_kind = 'team' AND cp.principal_id = t.id) AS spaces FROM teams t";

/// One team of an organization.
pub async fn get(db: &Db, org_id: &str, team_id: &str) -> sqlx::Result<Option<TeamRow>> {
    sqlx::query_as(&format!("{SELECT} WHERE t.org_id = $1 AND t.id = $2"))
        .bind(org_id)
        .bind(team_id)
        .fetch_optional(db.pool())
        .await
}

/// Team filters.
#[derive(Debug, Default)]
pub struct TeamFilter {
    /// Only teams this user owns.
    pub owned_by: Option<String>,
    /// Case-insensitive substring of the title.
    pub title: Option<String>,
    /// Only teams this user belongs to.
    pub member: Option<String>,
}

/// A page of teams after `(created_at, id)`, with the filtered total. Each row carries the
/// role of `filter.member` in it when that filter is set.
pub async fn list(
    db: &Db,
    org_id: &str,
    filter: &TeamFilter,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<(TeamRow, Option<String>)>, i64)> {
    let mut cond = Sql::new(" WHERE t.org_id = ");
    cond.bind(org_id);
    if let Some(owner) = &filter.owned_by {
        cond.push(" AND EXISTS (SELECT 1 FROM team_members o WHERE o.team_id = t.id AND o.role = 'owner' AND o.user_id = ")
            .bind(owner)
            .push(")");
    }
    if let Some(member) = &filter.member {
        cond.push(
            " AND EXISTS (SELECT 1 FROM team_members x WHERE x.team_id = t.id AND x.user_id = ",
        )
        .bind(member)
        .push(")");
    }
    if let Some(title) = &filter.title {
        let pattern = format!("%{}%", like_escape(&title.to_lowercase()));
        cond.push(" AND LOWER(t.title) LIKE ")
            .bind(pattern)
            .push(" ESCAPE '\\'");
    }
    let mut count_q = Sql::new("SELECT COUNT(*) FROM teams t");
    count_q.append(&cond);
    let mut q = Sql::new(
        "SELECT t.id, t.org_id, t.title, t.created_at, \
        (SELECT COUNT(*) FROM team_members tm WHERE tm.team_id = t.id) AS members, \
        (SELECT COUNT(*) FROM content_permissions cp WHERE cp.target_kind = 'space' \
           AND cp.principal_kind = 'team' AND cp.principal_id = t.id) AS spaces, ",
    );
    match &filter.member {
        Some(member) => {
            q.push("(SELECT r.role FROM team_members r WHERE r.team_id = t.id AND r.user_id = ")
                .bind(member)
                .push(") AS member_role");
        }
        None => {
            q.push("NULL AS member_role");
        }
    }
    q.push(" FROM teams t");
    q.append(&cond);
    if let Some((ts, id)) = after {
        q.push(" AND (t.created_at > ").bind(ts);
        q.push(" OR (t.created_at = ").bind(ts);
        q.push(" AND t.id > ").bind(id).push("))");
    }
    q.push(" ORDER BY t.created_at, t.id LIMIT ").bind(limit);
    crate::db::inline::row! {
        struct Row {
            #[flatten]
            team: TeamRow,
            member_role: Option<String>,
        }
    }
    let rows: Vec<Row> = q.query_as().fetch_all(db.pool()).await?;
    let count: i64 = count_q.query_scalar().fetch_one(db.pool()).await?;
    Ok((
        rows.into_iter().map(|r| (r.team, r.member_role)).collect(),
        count,
    ))
}

/// Creates a team.
pub async fn insert(
    tx: &mut Tx,
    id: &str,
    org_id: &str,
    title: &str,
    now: i64,
) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("INSERT INTO teams (id, org_id, title, created_at) VALUES ($1, $2, $3, $4)")
            .arg(id)
            .arg(org_id)
            .arg(title)
            .arg(now),
    )
    .await?;
    Ok(())
}

/// Renames a team.
pub async fn rename(db: &Db, org_id: &str, team_id: &str, title: &str) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("UPDATE teams SET title = $2 WHERE id = $1")
            .arg(team_id)
            .arg(title),
        &[Scope::Org(org_id)],
    )
    .await?;
    Ok(())
}

/// Deletes a team, its memberships and its content grants.
pub async fn delete(tx: &mut Tx, org_id: &str, team_id: &str) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "DELETE FROM content_permissions WHERE org_id = $1 AND principal_kind = 'team' AND principal_id = $2",
    )
    .arg(org_id)
    .arg(team_id)
    )
    .await?;
    tx.execute(
        &Sql::new("DELETE FROM teams WHERE org_id = $1 AND id = $2")
            .arg(org_id)
            .arg(team_id),
    )
    .await?;
    Ok(())
}

/// The role of a user in a team, if they belong to it.
pub async fn role_of(db: &Db, team_id: &str, user_id: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT role FROM team_members WHERE team_id = $1 AND user_id = $2")
        .bind(team_id)
        .bind(user_id)
        .fetch_optional(db.pool())
        .await
}

/// Adds a member to a team, or changes their role when `role` is given.
pub async fn upsert_member(
    tx: &mut Tx,
    org_id: &str,
    team_id: &str,
    user_id: &str,
    role: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO team_members (team_id, org_id, user_id, role, added_at) \
         VALUES ($1, $2, $3, COALESCE($4, 'member'), $5) \
         ON CONFLICT (team_id, user_id) DO UPDATE SET role = COALESCE($4, team_members.role)",
        )
        .arg(team_id)
        .arg(org_id)
        .arg(user_id)
        .arg(role)
        .arg(now),
    )
    .await?;
    Ok(())
}

/// Removes a member from a team.
pub async fn remove_member(tx: &mut Tx, team_id: &str, user_id: &str) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("DELETE FROM team_members WHERE team_id = $1 AND user_id = $2")
            .arg(team_id)
            .arg(user_id),
    )
    .await?;
    Ok(())
}

crate::db::inline::row! {
    /// A team member: the organization member and the team role.
    #[derive(Debug, Clone)]
    pub struct TeamMemberRow {
        #[flatten]
        pub member: MemberRow,
        pub team_role: String,
        pub added_at: i64,
    }
}

/// A page of a team's members after `(added_at, user id)`, with the total.
pub async fn list_members(
    db: &Db,
    team_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<TeamMemberRow>, i64)> {
    let mut q = Sql::new(
        "SELECT m.org_id, m.user_id, m.role, m.joined_at, m.last_seen_at, m.sso, \
         u.email, u.display_name, u.photo_url, \
         (SELECT COUNT(*) FROM team_members c WHERE c.org_id = m.org_id AND c.user_id = m.user_id) AS teams, \
         (SELECT COUNT(*) FROM content_permissions cp WHERE cp.org_id = m.org_id AND cp.target_kind = 'space' \
            AND cp.principal_kind = 'user' AND cp.principal_id = m.user_id) AS spaces, \
         tm.role AS team_role, tm.added_at \
         FROM team_members tm JOIN members m ON m.org_id = tm.org_id AND m.user_id = tm.user_id \
         JOIN users u ON u.id = m.user_id WHERE tm.team_id = ",
    );
    q.bind(team_id);
    if let Some((ts, id)) = after {
        q.push(" AND (tm.added_at > ").bind(ts);
        q.push(" OR (tm.added_at = ").bind(ts);
        q.push(" AND tm.user_id > ").bind(id).push("))");
    }
    q.push(" ORDER BY tm.added_at, tm.user_id LIMIT ")
        .bind(limit);
    let rows = q.query_as().fetch_all(db.pool()).await?;
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM team_members WHERE team_id = $1")
        .bind(team_id)
        .fetch_one(db.pool())
        .await?;
    Ok((rows, count))
}

/// One team of an organization, inside a transaction.
pub async fn get_tx(tx: &mut Tx, org_id: &str, team_id: &str) -> sqlx::Result<Option<TeamRow>> {
    tx.row(
        &Sql::new(format!("{SELECT} WHERE t.org_id = $1 AND t.id = $2"))
            .arg(org_id)
            .arg(team_id),
    )
    .await
}

/// Every `(team id, user id)` membership of an organization.
pub async fn memberships(db: &Db, org_id: &str) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as("SELECT team_id, user_id FROM team_members WHERE org_id = $1")
        .bind(org_id)
        .fetch_all(db.pool())
        .await
}

/// The teams of an organization with these ids (those that exist), in one query.
pub async fn get_many(db: &Db, org_id: &str, ids: &[&str]) -> sqlx::Result<Vec<TeamRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Sql::new(format!("{SELECT} WHERE t.org_id = "));
    q.bind(org_id).push(" AND t.id IN (");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.bind(*id);
    }
    q.push(")");
    q.query_as().fetch_all(db.pool()).await
}
