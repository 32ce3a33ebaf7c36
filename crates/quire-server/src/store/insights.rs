//! Site insights rolled up per day (`site_insights`, `site_insights_days`): counts by key,
//! never a row per event. A site's day holds at most a given number of keys; past it, an
//! event counts under its type alone (every dimension `''`), so totals stay exact.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

/// The dimensions of one count: `''` for a dimension the event does not have.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Key {
    /// Days since the Unix epoch, in UTC.
    pub day: i64,
    pub event_type: String,
    pub section_id: String,
    pub site_space_id: String,
    pub space_id: String,
    pub page_id: String,
    /// The search query, the link target (JSON) or the rating, by event type.
    pub detail: String,
    /// A link's position.
    pub position: String,
}

impl Key {
    /// The same count with its dimensions dropped: where events go once the day is full.
    pub fn folded(&self) -> Key {
        Key {
            day: self.day,
            event_type: self.event_type.clone(),
            ..Key::default()
        }
    }
}

/// How many keys one site's day may hold, and how many of them free text.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub keys: i64,
    pub texts: i64,
}

/// What [`add`] did with a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// Counted under its key.
    Kept,
    /// The day was full: counted under its type alone.
    Folded,
}

const KEY_MATCH: &str = "site_id = $1 AND day = $2 AND event_type = $3 AND section_id = $4 \
    AND site_space_id = $5 AND space_id = $6 AND page_id = $7 AND detail = $8 AND position = $9";

fn keyed(sql: &str, site_id: &str, k: &Key) -> Sql {
    Sql::new(sql)
        .arg(site_id)
        .arg(k.day)
        .arg(&k.event_type)
        .arg(&k.section_id)
        .arg(&k.site_space_id)
        .arg(&k.space_id)
        .arg(&k.page_id)
        .arg(&k.detail)
        .arg(&k.position)
}

/// Takes a site's day row (made when missing) before any of its counts: every writer takes
/// it first, so writers of one day wait for each other instead of locking counts in
/// opposite orders. True when the day is new.
pub async fn open_day(tx: &mut Tx, site_id: &str, day: i64) -> sqlx::Result<bool> {
    let used: i64 = tx
        .scalar(
            &Sql::new(
                "INSERT INTO site_insights_days (site_id, day, keys_used, texts_used) \
                 VALUES ($1, $2, 0, 0) ON CONFLICT (site_id, day) DO UPDATE SET \
                 keys_used = site_insights_days.keys_used RETURNING keys_used",
            )
            .arg(site_id)
            .arg(day),
        )
        .await?;
    // A day row holds at least one key once its first writer commits.
    Ok(used == 0)
}

/// Adds `n` events under `key` (its day opened by [`open_day`] in this transaction): to
/// its row when the day has it, else in a new row if the day has room (`text`: the key
/// holds free text, capped apart), else under its type alone.
pub async fn add(
    tx: &mut Tx,
    site_id: &str,
    key: &Key,
    n: i64,
    text: bool,
    caps: Caps,
) -> sqlx::Result<Added> {
    let bumped = tx
        .execute(
            &keyed(
                &format!("UPDATE site_insights SET events = events + $10 WHERE {KEY_MATCH}"),
                site_id,
                key,
            )
            .arg(n),
        )
        .await?;
    if bumped > 0 {
        return Ok(Added::Kept);
    }
    let texts = i64::from(text);
    let slot = tx
        .execute(
            &Sql::new(
                "UPDATE site_insights_days SET keys_used = keys_used + 1, \
                 texts_used = texts_used + $3 WHERE site_id = $1 AND day = $2 \
                 AND keys_used < $4 AND texts_used + $3 <= $5",
            )
            .arg(site_id)
            .arg(key.day)
            .arg(texts)
            .arg(caps.keys)
            .arg(caps.texts),
        )
        .await?;
    let (key, added) = match slot {
        1 => (key.clone(), Added::Kept),
        _ => (key.folded(), Added::Folded),
    };
    tx.execute(
        &keyed(
            "INSERT INTO site_insights (site_id, day, event_type, section_id, site_space_id, \
             space_id, page_id, detail, position, events) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (site_id, day, event_type, section_id, site_space_id, space_id, \
             page_id, detail, position) DO UPDATE SET events = site_insights.events + $10",
            site_id,
            &key,
        )
        .arg(n),
    )
    .await?;
    Ok(added)
}

crate::db::inline::row! {
    /// A count read back, summed over the dimensions the read did not keep (`''` there).
    #[derive(Debug, Clone)]
    pub struct CountRow {
        pub day: i64,
        pub event_type: String,
        pub section_id: String,
        pub site_space_id: String,
        pub space_id: String,
        pub page_id: String,
        pub detail: String,
        pub position: String,
        pub events: i64,
    }
}

/// The dimensions a read keeps apart; the others are summed over.
#[derive(Debug, Clone, Copy, Default)]
pub struct Kept {
    pub day: bool,
    pub event_type: bool,
    pub section: bool,
    pub site_space: bool,
    pub space: bool,
    pub page: bool,
    pub detail: bool,
    pub position: bool,
}

/// Most rows a read returns: a site keeps at most its retention's days of capped keys.
pub const MAX_READ_ROWS: i64 = 200_000;

/// A site's counts for the days `from..=to`, summed over the dimensions `kept` leaves out.
pub async fn read(
    db: &Db,
    site_id: &str,
    from: i64,
    to: i64,
    kept: Kept,
) -> sqlx::Result<Vec<CountRow>> {
    let mut select = Vec::new();
    let mut group = Vec::new();
    let day = match kept.day {
        true => {
            group.push("day");
            "day"
        }
        false => "CAST(0 AS BIGINT) AS day",
    };
    select.push(day.to_string());
    for (on, column) in [
        (kept.event_type, "event_type"),
        (kept.section, "section_id"),
        (kept.site_space, "site_space_id"),
        (kept.space, "space_id"),
        (kept.page, "page_id"),
        (kept.detail, "detail"),
        (kept.position, "position"),
    ] {
        if on {
            group.push(column);
            select.push(column.to_string());
        } else {
            select.push(format!("CAST('' AS TEXT) AS {column}"));
        }
    }
    let group_by = match group.is_empty() {
        true => String::new(),
        false => format!(" GROUP BY {}", group.join(", ")),
    };
    db.rows(
        &Sql::new(format!(
            "SELECT {}, CAST(COALESCE(SUM(events), 0) AS BIGINT) AS events FROM site_insights \
             WHERE site_id = $1 AND day >= $2 AND day <= $3{group_by} LIMIT $4",
            select.join(", ")
        ))
        .arg(site_id)
        .arg(from)
        .arg(to)
        .arg(MAX_READ_ROWS),
    )
    .await
}

/// Deletes the counts of one site's day older than `before` (days), in one transaction;
/// false when no such day is left.
pub async fn prune_one(db: &Db, before: i64) -> sqlx::Result<bool> {
    let mut tx = db.begin().await?;
    tx.touches(&[]);
    let Some((site_id, day)) = tx
        .row::<(String, i64)>(
            &Sql::new("SELECT site_id, day FROM site_insights_days WHERE day < $1 LIMIT 1")
                .arg(before),
        )
        .await?
    else {
        // Counts without their day row (none are written so): cleared all the same.
        tx.execute(&Sql::new("DELETE FROM site_insights WHERE day < $1").arg(before))
            .await?;
        tx.commit().await?;
        return Ok(false);
    };
    tx.execute(
        &Sql::new("DELETE FROM site_insights WHERE site_id = $1 AND day = $2")
            .arg(&site_id)
            .arg(day),
    )
    .await?;
    tx.execute(
        &Sql::new("DELETE FROM site_insights_days WHERE site_id = $1 AND day = $2")
            .arg(&site_id)
            .arg(day),
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// How many counts a site keeps (tests and the operator).
pub async fn count_rows(db: &Db, site_id: &str) -> sqlx::Result<i64> {
    db.scalar(&Sql::new("SELECT COUNT(*) FROM site_insights WHERE site_id = $1").arg(site_id))
        .await
}
