//! What a request's answer rested on, noted by the lookups it makes while it is recorded:
//! the ages of the access-cache entries it used, whether it read the database, and the
//! listing version it was made at. `answers` keeps an answer only when this says it may be
//! checked again before each reuse. A leaf module, so that the database and the caches,
//! far below the edge, can note what they do.

use std::cell::RefCell;

tokio::task_local! {
    /// What the request being answered rested on, while a reusable answer may be made.
    static READING: RefCell<Reading>;
}

/// What a request's answer rested on, noted by the lookups it made.
#[derive(Debug, Default)]
pub struct Reading {
    /// When the oldest access-cache entry it used was stored.
    pub oldest: Option<i64>,
    /// The scopes of the access-cache entries it used, each at the generation it was at.
    pub rests_on: Vec<Rested>,
    /// Whether it read the database (outside a validator's read).
    pub database: bool,
    /// The space whose listing version the answer was made at, and that version.
    pub listing: Option<(String, i64)>,
    /// When the answer stops being what its request would be answered (ms): the end of
    /// the period its signed URLs were made for.
    pub until: Option<i64>,
    /// Set while a validator's own read runs (see [`validating`]).
    validating: bool,
}

/// Runs `fut` with what it rests on recorded; returns its output and that record.
pub async fn recorded<F: std::future::Future>(fut: F) -> (F::Output, Reading) {
    READING
        .scope(RefCell::new(Reading::default()), async {
            let out = fut.await;
            (out, READING.with(|r| std::mem::take(&mut *r.borrow_mut())))
        })
        .await
}

/// A scope an answer rested on, as the access cache names it (kind and id), and the
/// generation it was at.
pub type Rested = (u8, Box<str>, u64);

/// Notes that the request used an access-cache entry stored at `stored_at` (ms), resting
/// on the scope `(kind, id)` at `generation` (none: an entry resting on no scope).
pub fn note_cached(stored_at: i64, scope: Option<((u8, &str), u64)>) {
    let _ = READING.try_with(|r| {
        let mut r = r.borrow_mut();
        r.oldest = Some(r.oldest.map_or(stored_at, |o| o.min(stored_at)));
        if let Some(((kind, id), generation)) = scope {
            if !r.rests_on.iter().any(|(k, i, _)| *k == kind && **i == *id) {
                r.rests_on.push((kind, id.into(), generation));
            }
        }
    });
}

/// Notes that the answer holds only until `until` (ms), when what it shows (a signed URL
/// made for a period of time) would be made anew.
pub fn note_until(until: i64) {
    let _ = READING.try_with(|r| {
        let mut r = r.borrow_mut();
        r.until = Some(r.until.map_or(until, |u| u.min(until)));
    });
}

/// Notes that the request read the database: its answer is not kept.
pub fn note_database() {
    let _ = READING.try_with(|r| {
        let mut r = r.borrow_mut();
        if !r.validating {
            r.database = true;
        }
    });
}

/// Notes that the answer was made at listing version `version` of `space_id`.
pub fn note_listing(space_id: &str, version: i64) {
    let _ = READING.try_with(|r| {
        let mut r = r.borrow_mut();
        match &r.listing {
            // Two listing versions in one answer: not one this module can check again.
            Some((space, v)) if space != space_id || *v != version => r.database = true,
            Some(_) => {}
            None => r.listing = Some((space_id.to_string(), version)),
        }
    });
}

/// Runs `read`, a validator's own read (a listing version), without marking the answer as
/// one that read the database: the same read is made again before each reuse.
pub async fn validating<F: std::future::Future>(read: F) -> F::Output {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            let _ = READING.try_with(|r| r.borrow_mut().validating = false);
        }
    }
    let _ = READING.try_with(|r| r.borrow_mut().validating = true);
    let _reset = Reset;
    read.await
}
