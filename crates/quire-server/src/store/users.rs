//! Users.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::ids::new_id;
use crate::scopes::Scope;

crate::db::inline::row! {
    /// A stored user.
    #[derive(Debug, Clone)]
    pub struct UserRow {
        pub id: crate::ids::UserId,
        pub email: String,
        pub display_name: String,
        pub photo_url: Option<String>,
        pub created_at: i64,
        pub first_auth_at: Option<i64>,
    }
}

const COLUMNS: &str = "id, email, display_name, photo_url, created_at, first_auth_at";

/// E-mail addresses are compared case-insensitively, so they are stored lower-cased.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// A user by id.
pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<UserRow>> {
    db.row(&Sql::new(format!("SELECT {COLUMNS} FROM users WHERE id = $1")).arg(id))
        .await
}

/// A user by e-mail.
pub async fn by_email(db: &Db, email: &str) -> sqlx::Result<Option<UserRow>> {
    db.row(
        &Sql::new(format!("SELECT {COLUMNS} FROM users WHERE email = $1"))
            .arg(normalize_email(email)),
    )
    .await
}

/// A user by e-mail, inside a transaction.
pub async fn by_email_tx(tx: &mut Tx, email: &str) -> sqlx::Result<Option<UserRow>> {
    tx.row(
        &Sql::new(format!("SELECT {COLUMNS} FROM users WHERE email = $1"))
            .arg(normalize_email(email)),
    )
    .await
}

/// A user by id, inside a transaction.
pub async fn get_tx(tx: &mut Tx, id: &str) -> sqlx::Result<Option<UserRow>> {
    tx.row(&Sql::new(format!("SELECT {COLUMNS} FROM users WHERE id = $1")).arg(id))
        .await
}

/// Finds the user with `email`, or creates one named `name` (default: the e-mail's local part).
pub async fn find_or_create(
    tx: &mut Tx,
    email: &str,
    name: Option<&str>,
    now: i64,
) -> sqlx::Result<UserRow> {
    if let Some(user) = by_email_tx(tx, email).await? {
        return Ok(user);
    }
    match insert(tx, email, name, None, now).await? {
        Some(user) => Ok(user),
        // Created meanwhile by a racing request.
        None => by_email_tx(tx, email)
            .await?
            .ok_or(sqlx::Error::RowNotFound),
    }
}

/// Creates the account of a first login through the single sign-on of `org_id`, which it
/// belongs to; `None` when the address has an account already (made meanwhile by a racing
/// login, on PostgreSQL once that login commits).
pub async fn insert_for_sso(
    tx: &mut Tx,
    email: &str,
    name: Option<&str>,
    org_id: &str,
    now: i64,
) -> sqlx::Result<Option<UserRow>> {
    insert(tx, email, name, Some(org_id), now).await
}

/// Creates a user named `name` (default: the e-mail's local part); `None` when the address
/// has an account already.
pub async fn create(
    tx: &mut Tx,
    email: &str,
    name: Option<&str>,
    now: i64,
) -> sqlx::Result<Option<UserRow>> {
    insert(tx, email, name, None, now).await
}

/// Inserts a user unless the address is taken.
async fn insert(
    tx: &mut Tx,
    email: &str,
    name: Option<&str>,
    sso_org_id: Option<&str>,
    now: i64,
) -> sqlx::Result<Option<UserRow>> {
    let email = normalize_email(email);
    let display_name = name
        .map(str::to_string)
        .unwrap_or_else(|| email.split('@').next().unwrap_or(&email).to_string());
    let user = UserRow {
        id: crate::ids::UserId::new(new_id()),
        email,
        display_name,
        photo_url: None,
        created_at: now,
        first_auth_at: None,
    };
    let inserted = tx
        .execute(
            &Sql::new(
                "INSERT INTO users (id, email, display_name, photo_url, created_at, sso_org_id) \
         VALUES ($1, $2, $3, NULL, $4, $5) ON CONFLICT (email) DO NOTHING",
            )
            .arg(&user.id)
            .arg(&user.email)
            .arg(&user.display_name)
            .arg(now)
            .arg(sso_org_id),
        )
        .await?;
    Ok((inserted > 0).then_some(user))
}

/// The organization whose single sign-on created a user's account; `None` for an account
/// of its own (made by `quire admin`, or before SSO).
pub async fn sso_org(db: &Db, id: &str) -> sqlx::Result<Option<String>> {
    Ok(db
        .row::<(Option<String>,)>(&sso_org_query(id))
        .await?
        .and_then(|(o,)| o))
}

/// As [`sso_org`], inside a transaction.
pub async fn sso_org_tx(tx: &mut Tx, id: &str) -> sqlx::Result<Option<String>> {
    Ok(tx
        .row::<(Option<String>,)>(&sso_org_query(id))
        .await?
        .and_then(|(o,)| o))
}

fn sso_org_query(id: &str) -> Sql {
    Sql::new("SELECT sso_org_id FROM users WHERE id = $1").arg(id)
}

/// Updates the profile fields that are `Some`.
pub async fn update(
    db: &Db,
    id: &str,
    display_name: Option<&str>,
    photo_url: Option<&str>,
) -> sqlx::Result<Option<UserRow>> {
    db.execute(
        &Sql::new(
            "UPDATE users SET display_name = COALESCE($2, display_name), \
         photo_url = COALESCE($3, photo_url) WHERE id = $1",
        )
        .arg(id)
        .arg(display_name)
        .arg(photo_url),
        &[Scope::Tokens, Scope::User(id)],
    )
    .await?;
    get(db, id).await
}

/// Whether two users share an organization (who may see whom).
pub async fn share_an_org(
    db: &Db,
    a: &str,
    b: &str,
    within: Option<&crate::ids::OrgId>,
) -> sqlx::Result<bool> {
    let sql = format!(
        "SELECT COUNT(*) FROM members m1 JOIN members m2 ON m1.org_id = m2.org_id \
         WHERE m1.user_id = $1 AND m2.user_id = $2{}",
        if within.is_some() {
            " AND m1.org_id = $3"
        } else {
            ""
        }
    );
    let mut q = sqlx::query_scalar(&sql).bind(a).bind(b);
    if let Some(org) = within {
        q = q.bind(org.as_str());
    }
    let n: i64 = q.fetch_one(db.pool()).await?;
    Ok(n > 0)
}

/// Users by id, for rendering lists that name several users.
pub async fn many(
    db: &Db,
    ids: &[&str],
) -> sqlx::Result<std::collections::HashMap<String, UserRow>> {
    let mut wanted: Vec<&str> = ids.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut out = std::collections::HashMap::new();
    // Bounded statements: a listing names at most a few hundred people.
    for chunk in wanted.chunks(500) {
        let mut q = crate::db::sql::Sql::new(format!("SELECT {COLUMNS} FROM users WHERE id IN ("));
        for (i, id) in chunk.iter().enumerate() {
            if i > 0 {
                q.push(", ");
            }
            q.bind(*id);
        }
        q.push(")");
        for user in db.rows::<UserRow>(&q).await? {
            out.insert(user.id.to_string(), user);
        }
    }
    Ok(out)
}

/// Records a user's first authentication; false when it was already recorded (only the first
/// request claims the user's pending invitations).
pub async fn claim_first_auth(tx: &mut Tx, id: &str, now: i64) -> sqlx::Result<bool> {
    let res = tx
        .execute(
            &Sql::new(
                "UPDATE users SET first_auth_at = $2 WHERE id = $1 AND first_auth_at IS NULL",
            )
            .arg(id)
            .arg(now),
        )
        .await?;
    Ok(res > 0)
}

/// The users with these ids (those that exist), in one query.
pub async fn get_many(db: &Db, ids: &[&str]) -> sqlx::Result<Vec<UserRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Sql::new(format!("SELECT {COLUMNS} FROM users WHERE id IN ("));
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.bind(*id);
    }
    q.push(")");
    db.rows(&q).await
}
