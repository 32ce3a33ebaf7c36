//! The pages each person opened last in the app (`recent_pages`).

use crate::db::sql::Sql;
use crate::db::Db;

/// Pages kept a person.
pub const KEPT: i64 = 30;

/// Notes that `user_id` opened page `page_id` of space `space_id` at `now` (or just after
/// the last page they opened, if that is later); drops their oldest past [`KEPT`].
pub async fn seen(
    db: &Db,
    user_id: &str,
    space_id: &str,
    page_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            // After every page the person read before, even in the same millisecond: the
            // last page opened is always first.
            "INSERT INTO recent_pages (user_id, space_id, page_id, seen_at) \
             SELECT $1, $2, $3, CASE WHEN COALESCE(MAX(seen_at), 0) >= $4 THEN MAX(seen_at) + 1 \
             ELSE $4 END FROM recent_pages WHERE user_id = $1 \
             ON CONFLICT (user_id, space_id, page_id) DO UPDATE SET seen_at = excluded.seen_at",
        )
        .arg(user_id)
        .arg(space_id)
        .arg(page_id)
        .arg(now),
        &[],
    )
    .await?;
    db.execute(
        &Sql::new(
            "DELETE FROM recent_pages WHERE user_id = $1 AND seen_at < (SELECT seen_at FROM \
             recent_pages WHERE user_id = $1 ORDER BY seen_at DESC LIMIT 1 OFFSET $2)",
        )
        .arg(user_id)
        .arg(KEPT - 1),
        &[],
    )
    .await?;
    Ok(())
}

/// The pages `user_id` opened last, newest first: (space, page).
pub async fn list(db: &Db, user_id: &str, limit: i64) -> sqlx::Result<Vec<(String, String)>> {
    db.rows(
        &Sql::new(
            "SELECT space_id, page_id FROM recent_pages WHERE user_id = $1 \
             ORDER BY seen_at DESC, page_id LIMIT $2",
        )
        .arg(user_id)
        .arg(limit),
    )
    .await
}
