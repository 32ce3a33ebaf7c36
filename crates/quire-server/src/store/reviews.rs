//! Reviews of change requests and the reviewers requested.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::scopes::Scope;

crate::db::inline::row! {
    /// A submitted review.
    #[derive(Debug, Clone)]
    pub struct ReviewRow {
        pub id: String,
        pub change_request_id: String,
        pub reviewer_id: String,
        pub requested_by: Option<String>,
        pub revision_id: String,
        pub status: String,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

crate::db::inline::row! {
    /// A reviewer requested and not yet heard from.
    #[derive(Debug, Clone)]
    pub struct RequestedRow {
        pub change_request_id: String,
        pub user_id: String,
        pub requested_by: String,
        pub revision_id: String,
        pub created_at: i64,
    }
}

const REVIEW_COLUMNS: &str =
    "id, change_request_id, reviewer_id, requested_by, revision_id, status, created_at, updated_at";
const REQUESTED_COLUMNS: &str = "change_request_id, user_id, requested_by, revision_id, created_at";

/// Records a review; the reviewer's pending request, if any, is fulfilled by it (its
/// requester is returned in the row).
pub async fn submit(tx: &mut Tx, r: &ReviewRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "INSERT INTO change_request_reviews ({REVIEW_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .arg(&r.id)
        .arg(&r.change_request_id)
        .arg(&r.reviewer_id)
        .arg(&r.requested_by)
        .arg(&r.revision_id)
        .arg(&r.status)
        .arg(r.created_at)
        .arg(r.updated_at),
    )
    .await?;
    tx.execute(
        &Sql::new(
            "DELETE FROM change_request_reviewers WHERE change_request_id = $1 AND user_id = $2",
        )
        .arg(&r.change_request_id)
        .arg(&r.reviewer_id),
    )
    .await?;
    Ok(())
}

/// Who requested `user_id`'s review of a change request, if it is pending.
pub async fn requester(tx: &mut Tx, cr: &str, user_id: &str) -> sqlx::Result<Option<String>> {
    tx.scalar_opt(
        &Sql::new(
            "SELECT requested_by FROM change_request_reviewers \
             WHERE change_request_id = $1 AND user_id = $2",
        )
        .arg(cr)
        .arg(user_id),
    )
    .await
}

/// A page of a change request's reviews, oldest first, after `(created_at, id)`; and the
/// total.
pub async fn list(
    db: &Db,
    cr: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<ReviewRow>, i64)> {
    let mut cond = Sql::new(" WHERE change_request_id = ");
    cond.bind(cr);
    let mut q = Sql::default();
    if let Some((ts, id)) = after {
        q.push(" AND (created_at > ").bind(ts);
        q.push(" OR (created_at = ").bind(ts);
        q.push(" AND id > ").bind(id).push("))");
    }
    q.push(" ORDER BY created_at, id LIMIT ").bind(limit);
    super::counted_page(db, REVIEW_COLUMNS, "change_request_reviews", &cond, &q).await
}

/// Requests reviews from `users` (a user already requested keeps the first request).
pub async fn request(
    tx: &mut Tx,
    cr: &str,
    users: &[&str],
    requested_by: &str,
    revision_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    for user in users {
        tx.execute(
            &Sql::new(format!(
                "INSERT INTO change_request_reviewers ({REQUESTED_COLUMNS}) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (change_request_id, user_id) DO NOTHING"
            ))
            .arg(cr)
            .arg(*user)
            .arg(requested_by)
            .arg(revision_id)
            .arg(now),
        )
        .await?;
    }
    Ok(())
}

/// The pending requests of a change request among `users`.
pub async fn requested_of(
    tx: &mut Tx,
    cr: &str,
    users: &[&str],
) -> sqlx::Result<Vec<RequestedRow>> {
    let mut out = Vec::with_capacity(users.len());
    for user in users {
        if let Some(row) = tx
            .row(
                &Sql::new(format!(
                    "SELECT {REQUESTED_COLUMNS} FROM change_request_reviewers \
                     WHERE change_request_id = $1 AND user_id = $2"
                ))
                .arg(cr)
                .arg(*user),
            )
            .await?
        {
            out.push(row);
        }
    }
    Ok(out)
}

/// A page of a change request's pending reviewers, oldest request first, after
/// `(created_at, user_id)`; and the total.
pub async fn list_requested(
    db: &Db,
    cr: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<RequestedRow>, i64)> {
    let mut cond = Sql::new(" WHERE change_request_id = ");
    cond.bind(cr);
    let mut q = Sql::default();
    if let Some((ts, id)) = after {
        q.push(" AND (created_at > ").bind(ts);
        q.push(" OR (created_at = ").bind(ts);
        q.push(" AND user_id > ").bind(id).push("))");
    }
    q.push(" ORDER BY created_at, user_id LIMIT ").bind(limit);
    super::counted_page(db, REQUESTED_COLUMNS, "change_request_reviewers", &cond, &q).await
}

/// Withdraws a pending request; false when there was none.
pub async fn remove_requested(
    db: &Db,
    space_id: &str,
    cr: &str,
    user_id: &str,
) -> sqlx::Result<bool> {
    Ok(db
        .execute(
            &Sql::new(
                "DELETE FROM change_request_reviewers WHERE change_request_id = $1 AND user_id = $2",
            )
            .arg(cr)
            .arg(user_id), &[Scope::Space(space_id)])
        .await?
        > 0)
}
