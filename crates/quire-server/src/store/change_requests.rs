//! Change requests and their contributors.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};
use crate::values::ChangeRequestStatus;

crate::db::inline::row! {
    /// A stored change request.
    #[derive(Debug, Clone)]
    pub struct ChangeRequestRow {
        pub id: String,
        pub space_id: String,
        pub number: i64,
        /// `draft`, `open`, `archived` or `merged`.
        pub status: ChangeRequestStatus,
        pub subject: String,
        pub created_by: String,
        pub created_at: i64,
        pub updated_at: i64,
        /// The change request's current revision.
        pub revision_id: String,
        /// The space revision it started from.
        pub revision_initial: String,
        /// The space revision it last synced with (the merge base).
        pub revision_base: String,
        pub revision_merged: Option<String>,
        pub merged_by: Option<String>,
        pub merged_at: Option<i64>,
        pub comments: i64,
    }
}

pub(crate) const COLUMNS: &str =
    "id, space_id, number, status, subject, created_by, created_at, updated_at, \
    revision_id, revision_initial, revision_base, revision_merged, merged_by, merged_at, comments";

/// A change request of a space by id or by number.
pub async fn get(
    db: &Db,
    space_id: &str,
    id_or_number: &str,
) -> sqlx::Result<Option<ChangeRequestRow>> {
    let number = id_or_number.parse::<i64>().unwrap_or(-1);
    let q = Sql::new(format!(
        "SELECT {COLUMNS} FROM change_requests WHERE space_id = $1 AND (id = $2 OR number = $3)"
    ))
    .arg(space_id)
    .arg(id_or_number)
    .arg(number);
    db.row(&q).await
}

/// A change request by id inside a transaction, its row locked until the transaction ends
/// (PostgreSQL; SQLite's writers already take turns): the change request's writers (batches,
/// updates, the merge) take it first, so none of them works on a state another is replacing.
pub async fn lock(tx: &mut Tx, id: &str) -> sqlx::Result<Option<ChangeRequestRow>> {
    let lock = crate::db::for_update(tx);
    tx.row(
        &Sql::new(format!(
            "SELECT {COLUMNS} FROM change_requests WHERE id = $1{lock}"
        ))
        .arg(id),
    )
    .await
}

/// The next number in a space.
pub async fn next_number(tx: &mut Tx, space_id: &str) -> sqlx::Result<i64> {
    let max: Option<i64> = tx
        .scalar(
            &Sql::new("SELECT MAX(number) FROM change_requests WHERE space_id = $1").arg(space_id),
        )
        .await?;
    Ok(max.unwrap_or(0) + 1)
}

/// What a change request's writes change: its answers.
const CHANGE_REQUESTS: &[super::spaces::Listing] = &[super::spaces::Listing::ChangeRequests];

/// What a change of its status changes too: its comments' answers (a merged change
/// request's comments take no more edits, which their permissions show).
const STATUS: &[super::spaces::Listing] = &[
    super::spaces::Listing::ChangeRequests,
    super::spaces::Listing::Comments,
];

/// The space of the change request `$1`, for [`super::spaces::touch_listings`].
const OF_CHANGE_REQUEST: &str = "SELECT space_id FROM change_requests WHERE id = $1";

/// Inserts a change request.
pub async fn insert(tx: &mut Tx, c: &ChangeRequestRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "INSERT INTO change_requests ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .arg(&c.id)
        .arg(&c.space_id)
        .arg(c.number)
        .arg(c.status)
        .arg(&c.subject)
        .arg(&c.created_by)
        .arg(c.created_at)
        .arg(c.updated_at)
        .arg(&c.revision_id)
        .arg(&c.revision_initial)
        .arg(&c.revision_base)
        .arg(&c.revision_merged)
        .arg(&c.merged_by)
        .arg(c.merged_at)
        .arg(c.comments),
    )
    .await?;
    super::spaces::touch_listings(tx, CHANGE_REQUESTS, "$1", &c.space_id).await?;
    Ok(())
}

/// Writes subject and status back.
pub async fn update_meta(tx: &mut Tx, c: &ChangeRequestRow) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "UPDATE change_requests SET subject = $2, status = $3, updated_at = $4 WHERE id = $1",
        )
        .arg(&c.id)
        .arg(&c.subject)
        .arg(c.status)
        .arg(c.updated_at),
    )
    .await?;
    super::spaces::touch_listings(tx, STATUS, OF_CHANGE_REQUEST, &c.id).await?;
    Ok(())
}

/// Moves a change request to a new revision, only if it is still at `expected` and not
/// merged (optimistic concurrency: the caller retries on `false`, and then sees the merge).
pub async fn advance(
    tx: &mut Tx,
    id: &str,
    expected: &str,
    revision: &str,
    base: Option<&str>,
    now: i64,
) -> sqlx::Result<bool> {
    let res = tx.execute(&Sql::new(
        "UPDATE change_requests SET revision_id = $3, revision_base = COALESCE($4, revision_base), \
         updated_at = $5 WHERE id = $1 AND revision_id = $2 AND status <> 'merged'",
    )
    .arg(id)
    .arg(expected)
    .arg(revision)
    .arg(base)
    .arg(now)
    )
    .await?;
    let moved = res == 1;
    // Listings show the change request's revision and time: they change only if it moved.
    if moved {
        super::spaces::touch_listings(tx, CHANGE_REQUESTS, OF_CHANGE_REQUEST, id).await?;
    }
    Ok(moved)
}

/// What a merge read of its change request, and must still hold when it marks it merged.
pub struct MergeExpect<'a> {
    /// The change request's content revision that was merged.
    pub revision: &'a str,
    /// Its status when read (the counters move from it).
    pub status: ChangeRequestStatus,
}

/// Marks a change request merged, only if it is still at the revision and status the merge
/// read: a batch that landed meanwhile must not be stranded behind the merge. False when it
/// moved (the caller retries).
pub async fn mark_merged(
    tx: &mut Tx,
    id: &str,
    expect: &MergeExpect<'_>,
    revision: &str,
    by: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let res = tx.execute(&Sql::new(
        "UPDATE change_requests SET status = 'merged', revision_merged = $2, merged_by = $3, \
         merged_at = $4, updated_at = $4 WHERE id = $1 AND revision_id = $5 AND status = $6",
    )
    .arg(id)
    .arg(revision)
    .arg(by)
    .arg(now)
    .arg(expect.revision)
    .arg(expect.status)
    )
    .await?;
    super::spaces::touch_listings(tx, STATUS, OF_CHANGE_REQUEST, id).await?;
    Ok(res == 1)
}

/// Records a write of a contributor: a new contributor (listings move then), or one more
/// write and its time. Callers hold the change request's row (`lock`), so writes of one
/// contributor count one after the other.
pub async fn add_contributor(tx: &mut Tx, id: &str, user_id: &str, now: i64) -> sqlx::Result<()> {
    let counted = tx
        .execute(
            &Sql::new(
                "UPDATE change_request_contributors SET edits = edits + 1, last_at = $3 \
                 WHERE change_request_id = $1 AND user_id = $2",
            )
            .arg(id)
            .arg(user_id)
            .arg(now),
        )
        .await?;
    if counted > 0 {
        return Ok(());
    }
    let added = tx.execute(&Sql::new(
        "INSERT INTO change_request_contributors (change_request_id, user_id, first_at, edits, last_at) \
         VALUES ($1, $2, $3, 1, $3) ON CONFLICT (change_request_id, user_id) DO NOTHING",
    )
    .arg(id)
    .arg(user_id)
    .arg(now)
    )
    .await?;
    if added > 0 {
        super::spaces::touch_listings(tx, CHANGE_REQUESTS, OF_CHANGE_REQUEST, id).await?;
    }
    Ok(())
}

crate::db::inline::row! {
    /// A contributor of a change request: their writes and the latest one's time.
    #[derive(Debug, Clone)]
    pub struct ContributorRow {
        pub user_id: String,
        pub first_at: i64,
        pub edits: i64,
        pub last_at: i64,
    }
}

/// A page of a change request's contributors, first contribution first, after
/// `(first_at, user_id)`; and the total.
pub async fn contributors(
    db: &Db,
    id: &str,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<ContributorRow>, i64)> {
    let mut cond = Sql::new(" WHERE change_request_id = ");
    cond.bind(id);
    let mut q = Sql::default();
    if let Some((ts, user)) = after {
        q.push(" AND (first_at > ").bind(ts);
        q.push(" OR (first_at = ").bind(ts);
        q.push(" AND user_id > ").bind(user).push("))");
    }
    q.push(" ORDER BY first_at, user_id LIMIT ").bind(limit);
    super::counted_page(
        db,
        "user_id, first_at, edits, last_at",
        "change_request_contributors",
        &cond,
        &q,
    )
    .await
}

/// A page of a space's change requests with a status, optionally with a contributor,
/// after `(created_at, id)` in descending order; and the filtered total.
pub async fn list(
    db: &Db,
    space_id: &str,
    status: &str,
    contributor: Option<&str>,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<ChangeRequestRow>, i64)> {
    let mut cond = Sql::new(" WHERE space_id = ");
    cond.bind(space_id).push(" AND status = ").bind(status);
    if let Some(user) = contributor {
        cond.push(" AND id IN (SELECT change_request_id FROM change_request_contributors WHERE user_id = ")
            .bind(user)
            .push(")");
    }
    let mut q = Sql::default();
    if let Some((ts, id)) = after {
        q.push(" AND (created_at < ").bind(ts);
        q.push(" OR (created_at = ").bind(ts);
        q.push(" AND id < ").bind(id).push("))");
    }
    q.push(" ORDER BY created_at DESC, id DESC LIMIT ")
        .bind(limit);
    super::counted_page(db, COLUMNS, "change_requests", &cond, &q).await
}

/// Adjusts a space's change-request counters for a status transition (`None`: none).
pub async fn count_transition(
    tx: &mut Tx,
    space_id: &str,
    from: Option<ChangeRequestStatus>,
    to: Option<ChangeRequestStatus>,
) -> sqlx::Result<()> {
    let delta = |s: Option<ChangeRequestStatus>, which| -> i64 { i64::from(s == Some(which)) };
    let total = i64::from(from.is_none() && to.is_some());
    let open = delta(to, ChangeRequestStatus::Open) - delta(from, ChangeRequestStatus::Open);
    let draft = delta(to, ChangeRequestStatus::Draft) - delta(from, ChangeRequestStatus::Draft);
    tx.execute(
        &Sql::new(
            "UPDATE spaces SET change_requests = change_requests + $2, \
         change_requests_open = change_requests_open + $3, \
         change_requests_draft = change_requests_draft + $4 WHERE id = $1",
        )
        .arg(space_id)
        .arg(total)
        .arg(open)
        .arg(draft),
    )
    .await?;
    Ok(())
}

/// The change request whose merge produced `revision`, if any.
pub async fn merged_into(
    db: &Db,
    space_id: &str,
    revision: &str,
) -> sqlx::Result<Option<ChangeRequestRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM change_requests WHERE space_id = $1 AND revision_merged = $2"
    ))
    .bind(space_id)
    .bind(revision)
    .fetch_optional(db.pool())
    .await
}

/// Which spaces of an organization a listing covers.
#[derive(Debug, Clone, Copy)]
pub enum SpaceScope<'a> {
    /// Every live space of the organization, decided in the query itself.
    AllLive(&'a str),
    /// Exactly these spaces.
    Only(&'a [&'a str]),
}

/// The sort of an organization-wide listing, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrgOrder {
    /// By last update.
    UpdatedAt,
    /// By creation.
    CreatedAt,
}

impl OrgOrder {
    fn column(self) -> &'static str {
        match self {
            OrgOrder::UpdatedAt => "updated_at",
            OrgOrder::CreatedAt => "created_at",
        }
    }
}

/// The filters of an organization-wide listing.
#[derive(Debug, Clone, Copy)]
pub struct OrgFilter<'a> {
    /// The spaces covered.
    pub spaces: SpaceScope<'a>,
    /// Statuses kept (none: nothing matches).
    pub statuses: &'a [&'a str],
    /// Only change requests created by this user.
    pub creator: Option<&'a str>,
    /// Only change requests this user contributed to.
    pub contributor: Option<&'a str>,
    /// The sort.
    pub order: OrgOrder,
}

/// A page of the change requests of an organization's spaces, after the sort key
/// `(updated_at or created_at, id)` in descending order; and the filtered total.
pub async fn list_in_org(
    db: &Db,
    filter: &OrgFilter<'_>,
    after: Option<(i64, String)>,
    limit: i64,
) -> sqlx::Result<(Vec<ChangeRequestRow>, i64)> {
    let empty = match filter.spaces {
        SpaceScope::Only(ids) => ids.is_empty(),
        SpaceScope::AllLive(_) => false,
    };
    if empty || filter.statuses.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let mut cond = Sql::new(" WHERE space_id IN (");
    match filter.spaces {
        SpaceScope::AllLive(org_id) => {
            cond.push("SELECT id FROM spaces WHERE deleted_at IS NULL AND org_id = ")
                .bind(org_id);
        }
        SpaceScope::Only(ids) => {
            for (i, id) in ids.iter().enumerate() {
                if i > 0 {
                    cond.push(", ");
                }
                cond.bind(*id);
            }
        }
    }
    cond.push(") AND status IN (");
    for (i, status) in filter.statuses.iter().enumerate() {
        if i > 0 {
            cond.push(", ");
        }
        cond.bind(*status);
    }
    cond.push(")");
    if let Some(user) = filter.creator {
        cond.push(" AND created_by = ").bind(user);
    }
    if let Some(user) = filter.contributor {
        cond.push(" AND id IN (SELECT change_request_id FROM change_request_contributors WHERE user_id = ")
            .bind(user)
            .push(")");
    }
    let mut count_q = Sql::new("SELECT COUNT(*) FROM change_requests");
    count_q.append(&cond);
    let key = filter.order.column();
    let mut q = Sql::new(format!("SELECT {COLUMNS} FROM change_requests"));
    q.append(&cond);
    if let Some((ts, id)) = after {
        q.push(&format!(" AND ({key} < ")).bind(ts);
        q.push(&format!(" OR ({key} = ")).bind(ts);
        q.push(" AND id < ").bind(id).push("))");
    }
    q.push(&format!(" ORDER BY {key} DESC, id DESC LIMIT "))
        .bind(limit);
    let rows = q.query_as().fetch_all(db.pool()).await?;
    let count = count_q.query_scalar().fetch_one(db.pool()).await?;
    Ok((rows, count))
}
