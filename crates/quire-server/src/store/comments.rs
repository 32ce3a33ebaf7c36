//! Comments, replies and reactions, with the counters that follow them.

use super::spaces::Listing;
use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::values::CommentStatus;

crate::db::inline::row! {
    /// A stored comment.
    #[derive(Debug, Clone)]
    pub struct CommentRow {
        pub id: String,
        pub space_id: String,
        pub change_request_id: Option<String>,
        pub posted_by: String,
        pub posted_at: i64,
        pub edited_at: Option<i64>,
        /// Markdown.
        pub body: String,
        /// `open` or `resolved`.
        pub status: CommentStatus,
        pub resolved_at: Option<i64>,
        pub resolved_by: Option<String>,
        /// The revision the comment was posted on.
        pub revision_id: String,
        pub page_id: Option<String>,
        /// The page's title when the comment was posted.
        pub page_title: Option<String>,
        /// Fingerprint of the page when the comment was posted (for `outdated`).
        pub page_hash: Option<String>,
        pub node_id: Option<String>,
        pub table_record: Option<String>,
        pub table_definition: Option<String>,
        pub replies: i64,
    }
}

const COLUMNS: &str =
    "id, space_id, change_request_id, posted_by, posted_at, edited_at, body, status, \
    resolved_at, resolved_by, revision_id, page_id, page_title, page_hash, node_id, table_record, \
    table_definition, replies";

crate::db::inline::row! {
    /// A stored reply.
    #[derive(Debug, Clone)]
    pub struct ReplyRow {
        pub id: String,
        pub comment_id: String,
        pub posted_by: String,
        pub posted_at: i64,
        pub edited_at: Option<i64>,
        pub body: String,
    }
}

crate::db::inline::row! {
    /// One reaction.
    #[derive(Debug, Clone)]
    pub struct ReactionRow {
        pub target_id: String,
        pub user_id: String,
        pub emoji: String,
        pub reacted_at: i64,
    }
}

fn scope_cond(q: &mut Sql, space_id: &str, cr: Option<&str>) {
    q.push(" WHERE space_id = ").bind(space_id);
    match cr {
        Some(cr) => {
            q.push(" AND change_request_id = ").bind(cr);
        }
        None => {
            q.push(" AND change_request_id IS NULL");
        }
    }
}

/// One comment of a space (or of one of its change requests).
pub async fn get(
    db: &Db,
    space_id: &str,
    cr: Option<&str>,
    id: &str,
) -> sqlx::Result<Option<CommentRow>> {
    let mut q = Sql::new(format!("SELECT {COLUMNS} FROM comments"));
    scope_cond(&mut q, space_id, cr);
    q.push(" AND id = ").bind(id);
    db.row(&q).await
}

/// Filters of the listing.
#[derive(Debug, Default)]
pub struct CommentFilter {
    /// `open` or `resolved`; all when `None`.
    pub status: Option<String>,
    /// Only comments on this page.
    pub page: Option<String>,
    /// Only comments by these users.
    pub authors: Vec<String>,
    /// Oldest first.
    pub ascending: bool,
}

/// A page of comments after `(posted_at, id)`, with the filtered total.
pub async fn list(
    db: &Db,
    space_id: &str,
    cr: Option<&str>,
    filter: &CommentFilter,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<CommentRow>, i64)> {
    let mut cond = Sql::default();
    scope_cond(&mut cond, space_id, cr);
    if let Some(status) = &filter.status {
        cond.push(" AND status = ").bind(status);
    }
    if let Some(page) = &filter.page {
        cond.push(" AND page_id = ").bind(page);
    }
    if !filter.authors.is_empty() {
        cond.push(" AND posted_by IN (");
        for (i, a) in filter.authors.iter().enumerate() {
            if i > 0 {
                cond.push(", ");
            }
            cond.bind(a);
        }
        cond.push(")");
    }
    let (op, dir) = if filter.ascending {
        (">", "ASC")
    } else {
        ("<", "DESC")
    };
    let mut q = Sql::default();
    if let Some((ts, id)) = after {
        q.push(&format!(" AND (posted_at {op} ")).bind(ts);
        q.push(" OR (posted_at = ").bind(ts);
        q.push(&format!(" AND id {op} ")).bind(id).push("))");
    }
    q.push(&format!(" ORDER BY posted_at {dir}, id {dir} LIMIT "))
        .bind(limit);
    // Filtered by status alone, the total is read from the counters kept with the space or
    // change request ([`count`]); counting the rows cost time in proportion to them.
    if filter.page.is_none() && filter.authors.is_empty() {
        let counter = match filter.status.as_deref() {
            None => "comments_all",
            Some("open") => "comments",
            Some(_) => "comments_all - comments",
        };
        let mut total = Sql::new(format!("SELECT COALESCE(MAX({counter}), 0) FROM "));
        match cr {
            Some(cr) => total.push("change_requests WHERE id = ").bind(cr),
            None => total.push("spaces WHERE id = ").bind(space_id),
        };
        return super::page_with_total(db, COLUMNS, "comments", &total, &cond, &q).await;
    }
    super::counted_page(db, COLUMNS, "comments", &cond, &q).await
}

/// What writes to comments, replies and reactions change; the counts a change request
/// shows are moved by [`count`] alone.
const COMMENTS: &[Listing] = &[Listing::Comments];

/// The space of the comment `$1`, for [`super::spaces::touch_listings`].
const OF_COMMENT: &str = "SELECT space_id FROM comments WHERE id = $1";

/// The space of the reply `$1`.
const OF_REPLY: &str = "SELECT c.space_id FROM comments c \
     JOIN comment_replies r ON r.comment_id = c.id WHERE r.id = $1";

/// The space of the comment or reply `$1` (what a reaction is on).
const OF_TARGET: &str = "SELECT space_id FROM comments WHERE id = $1 UNION \
     SELECT c.space_id FROM comments c JOIN comment_replies r ON r.comment_id = c.id WHERE r.id = $1";

/// Stores a new comment, counted on its space or change request if it is open.
pub async fn insert(tx: &mut Tx, c: &CommentRow) -> sqlx::Result<()> {
    tx.execute(&Sql::new(format!(
        "INSERT INTO comments ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)"
    ))
    .arg(&c.id)
    .arg(&c.space_id)
    .arg(&c.change_request_id)
    .arg(&c.posted_by)
    .arg(c.posted_at)
    .arg(c.edited_at)
    .arg(&c.body)
    .arg(c.status)
    .arg(c.resolved_at)
    .arg(&c.resolved_by)
    .arg(&c.revision_id)
    .arg(&c.page_id)
    .arg(&c.page_title)
    .arg(&c.page_hash)
    .arg(&c.node_id)
    .arg(&c.table_record)
    .arg(&c.table_definition)
    .arg(c.replies)
    )
    .await?;
    // Counted on its space or change request, which moves the space's listing version.
    let open = i64::from(c.status == CommentStatus::Open);
    count(tx, &c.space_id, c.change_request_id.as_deref(), open, 1).await
}

/// A comment by id inside a transaction, locked until it ends (for read-modify-write).
pub async fn get_tx(tx: &mut Tx, id: &str) -> sqlx::Result<Option<CommentRow>> {
    let lock = crate::db::for_update(tx);
    tx.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM comments WHERE id = $1{lock}"
        ))
        .arg(id),
    )
    .await
}

/// Writes back body, edit time and resolution.
pub async fn update(tx: &mut Tx, c: &CommentRow) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "UPDATE comments SET body = $2, edited_at = $3, status = $4, resolved_at = $5, resolved_by = $6 WHERE id = $1",
    )
    .arg(&c.id)
    .arg(&c.body)
    .arg(c.edited_at)
    .arg(c.status)
    .arg(c.resolved_at)
    .arg(&c.resolved_by)
    )
    .await?;
    super::spaces::touch_listings(tx, COMMENTS, "$1", &c.space_id).await?;
    Ok(())
}

/// Deletes a comment with its replies and their reactions; returns whether it existed.
pub async fn delete(tx: &mut Tx, id: &str) -> sqlx::Result<bool> {
    super::spaces::touch_listings(tx, COMMENTS, OF_COMMENT, id).await?;
    tx.execute(&Sql::new("DELETE FROM reactions WHERE target_id = $1 OR target_id IN (SELECT id FROM comment_replies WHERE comment_id = $1)")
        .arg(id)
        )
        .await?;
    let res = tx
        .execute(&Sql::new("DELETE FROM comments WHERE id = $1").arg(id))
        .await?;
    Ok(res > 0)
}

/// Adds `open` to the open comments and `all` to every comment counted on the space, or
/// on the change request, and moves the listing versions of what shows them: the space's
/// comments, and its change requests when a change request's counts changed.
pub async fn count(
    tx: &mut Tx,
    space_id: &str,
    cr: Option<&str>,
    open: i64,
    all: i64,
) -> sqlx::Result<()> {
    if open == 0 && all == 0 {
        return Ok(());
    }
    const COUNTERS: &str = "comments = comments + $2, comments_all = comments_all + $3";
    match cr {
        Some(cr) => {
            tx.execute(
                &Sql::new(format!(
                    "UPDATE change_requests SET {COUNTERS} WHERE id = $1"
                ))
                .arg(cr)
                .arg(open)
                .arg(all),
            )
            .await?;
            let shown = [Listing::ChangeRequests, Listing::Comments];
            super::spaces::touch_listings(tx, &shown, "$1", space_id).await?;
        }
        // One statement: the listing version moves with the counters it shows.
        None => {
            tx.execute(
                &Sql::new(format!(
                    "UPDATE spaces SET {COUNTERS}, {} WHERE id = $1",
                    super::spaces::moves(COMMENTS)
                ))
                .arg(space_id)
                .arg(open)
                .arg(all),
            )
            .await?;
        }
    }
    Ok(())
}

/// Adds `delta` to a comment's reply counter.
pub async fn count_replies(tx: &mut Tx, comment_id: &str, delta: i64) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("UPDATE comments SET replies = replies + $2 WHERE id = $1")
            .arg(comment_id)
            .arg(delta),
    )
    .await?;
    super::spaces::touch_listings(tx, COMMENTS, OF_COMMENT, comment_id).await?;
    Ok(())
}

const REPLY_COLUMNS: &str = "id, comment_id, posted_by, posted_at, edited_at, body";

/// One reply of a comment.
pub async fn get_reply(db: &Db, comment_id: &str, id: &str) -> sqlx::Result<Option<ReplyRow>> {
    let q = Sql::new(format!(
        "SELECT {REPLY_COLUMNS} FROM comment_replies WHERE comment_id = $1 AND id = $2"
    ))
    .arg(comment_id)
    .arg(id);
    db.row(&q).await
}

/// A page of a comment's replies, oldest first, after `(posted_at, id)`; and the total.
pub async fn list_replies(
    db: &Db,
    comment_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<ReplyRow>, i64)> {
    let mut q = Sql::new(format!(
        "SELECT {REPLY_COLUMNS} FROM comment_replies WHERE comment_id = "
    ));
    q.bind(comment_id);
    if let Some((ts, id)) = after {
        q.push(" AND (posted_at > ").bind(ts);
        q.push(" OR (posted_at = ").bind(ts);
        q.push(" AND id > ").bind(id).push("))");
    }
    q.push(" ORDER BY posted_at, id LIMIT ").bind(limit);
    let rows = db.rows(&q).await?;
    let count: i64 = db
        .scalar(
            &Sql::new("SELECT COUNT(*) FROM comment_replies WHERE comment_id = $1").arg(comment_id),
        )
        .await?;
    Ok((rows, count))
}

/// The replies to some comments, oldest first, at most `limit` in all.
pub async fn replies_of(db: &Db, comments: &[&str], limit: i64) -> sqlx::Result<Vec<ReplyRow>> {
    if comments.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Sql::new(format!(
        "SELECT {REPLY_COLUMNS} FROM comment_replies WHERE comment_id IN ("
    ));
    for (i, c) in comments.iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.bind(*c);
    }
    q.push(") ORDER BY posted_at, id LIMIT ").bind(limit);
    db.rows(&q).await
}

/// Inserts a reply.
pub async fn insert_reply(tx: &mut Tx, r: &ReplyRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "INSERT INTO comment_replies ({REPLY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
        ))
        .arg(&r.id)
        .arg(&r.comment_id)
        .arg(&r.posted_by)
        .arg(r.posted_at)
        .arg(r.edited_at)
        .arg(&r.body),
    )
    .await?;
    super::spaces::touch_listings(tx, COMMENTS, OF_COMMENT, &r.comment_id).await?;
    Ok(())
}

/// Writes back a reply's body and edit time.
pub async fn update_reply(tx: &mut Tx, r: &ReplyRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new("UPDATE comment_replies SET body = $2, edited_at = $3 WHERE id = $1")
            .arg(&r.id)
            .arg(&r.body)
            .arg(r.edited_at),
    )
    .await?;
    super::spaces::touch_listings(tx, COMMENTS, OF_REPLY, &r.id).await?;
    Ok(())
}

/// Deletes a reply and its reactions; returns whether it existed.
pub async fn delete_reply(tx: &mut Tx, comment_id: &str, id: &str) -> sqlx::Result<bool> {
    super::spaces::touch_listings(tx, COMMENTS, OF_COMMENT, comment_id).await?;
    tx.execute(&Sql::new("DELETE FROM reactions WHERE target_id = $1").arg(id))
        .await?;
    let res = tx
        .execute(
            &Sql::new("DELETE FROM comment_replies WHERE comment_id = $1 AND id = $2")
                .arg(comment_id)
                .arg(id),
        )
        .await?;
    Ok(res > 0)
}

/// Adds the caller's reactions (idempotent) and removes others; returns how many reactions
/// the user now has on the target.
pub async fn react(
    tx: &mut Tx,
    target: &str,
    user: &str,
    added: &[String],
    removed: &[String],
    now: i64,
) -> sqlx::Result<i64> {
    for emoji in added {
        tx.execute(&Sql::new(
            "INSERT INTO reactions (target_id, user_id, emoji, reacted_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (target_id, user_id, emoji) DO NOTHING",
        )
        .arg(target)
        .arg(user)
        .arg(emoji)
        .arg(now)
        )
        .await?;
    }
    for emoji in removed {
        tx.execute(
            &Sql::new("DELETE FROM reactions WHERE target_id = $1 AND user_id = $2 AND emoji = $3")
                .arg(target)
                .arg(user)
                .arg(emoji),
        )
        .await?;
    }
    super::spaces::touch_listings(tx, COMMENTS, OF_TARGET, target).await?;
    if added.is_empty() {
        return Ok(0);
    }
    tx.scalar::<i64>(
        &Sql::new("SELECT COUNT(*) FROM reactions WHERE target_id = $1 AND user_id = $2")
            .arg(target)
            .arg(user),
    )
    .await
}

/// The reactions on some targets, oldest first.
pub async fn reactions(db: &Db, targets: &[&str]) -> sqlx::Result<Vec<ReactionRow>> {
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Sql::new(
        "SELECT target_id, user_id, emoji, reacted_at FROM reactions WHERE target_id IN (",
    );
    for (i, t) in targets.iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.bind(*t);
    }
    q.push(") ORDER BY reacted_at, user_id");
    db.rows(&q).await
}
