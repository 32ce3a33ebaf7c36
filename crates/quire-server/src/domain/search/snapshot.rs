//! What queries read of an index (postings, superseded pages, completions, corrections and
//! page texts), kept in memory per index generation.
//!
//! Why: a frequent term's postings are a row per 64 pages, and a completion can read 1,300
//! of them; read through sqlx's SQLite connection thread, each row cost about 10 µs (13 ms
//! for that completion, 0.4 ms to rank it). Reads now run inline on SQLite, but queries
//! still read the same frequent terms and the same pages again and again, and a cached
//! read costs nothing.
//!
//! Never stale: every write of a space's index (a merge's update, a catch-up, a fold step,
//! a rebuild, a copy) bumps its generation (`search_spaces.generation`) in the writing
//! transaction, and a search reads each space's generation before anything else (with the
//! index state it needs anyway). Entries are named by the space, its revision, analysis and
//! generation, so an entry of an earlier generation is never looked up again; it only waits
//! to be evicted.
//!
//! Bounded: at most a quarter of the node's content cache budget (`cache_mb`), weighed in
//! bytes (`AppState::search`, one per node).

use std::any::Any;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use moka::sync::Cache;

use crate::cache::Weighed;
use crate::state::AppState;
use crate::store::search::IndexRow;

/// Turns the cache on or off for this node (a benchmark of cold reads turns it off; it is
/// on by default).
pub fn set_enabled(state: &AppState, on: bool) {
    state.search.reads_on.store(on, Ordering::Relaxed);
}

fn cache(state: &AppState) -> Option<&Cache<String, Weighed>> {
    let s = &state.search;
    s.reads_on.load(Ordering::Relaxed).then_some(&s.reads)
}

fn push(key: &mut String, part: &str) {
    // Length-prefixed, so that no part can run into the next.
    key.push_str(&part.len().to_string());
    key.push(':');
    key.push_str(part);
}

/// The name of one item (`kind`, `item`) of the index `ix` at its generation.
pub fn key(ix: &IndexRow, kind: &str, item: &str) -> String {
    let mut key = String::with_capacity(48 + ix.revision_id.len() + item.len());
    push(&mut key, &ix.space_id);
    push(&mut key, &ix.revision_id);
    push(&mut key, &ix.analyzer);
    push(&mut key, &ix.generation.to_string());
    push(&mut key, kind);
    push(&mut key, item);
    key
}

/// The item under `key`, if it is cached (as a `T`).
pub fn get<T: Any + Send + Sync>(state: &AppState, key: &str) -> Option<Arc<T>> {
    cache(state)?.get(key)?.value.downcast::<T>().ok()
}

/// Keeps an item that weighs about `bytes`.
pub fn put<T: Any + Send + Sync>(state: &AppState, key: String, value: Arc<T>, bytes: usize) {
    if let Some(c) = cache(state) {
        let weight = u32::try_from(bytes.saturating_add(64)).unwrap_or(u32::MAX);
        c.insert(key, Weighed { value, weight });
    }
}
