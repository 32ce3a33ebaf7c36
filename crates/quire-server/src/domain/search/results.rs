//! A per-node cache of whole search answers (the serialised response body).
//!
//! Why: a search costs several database round trips and the ranking of every matching page,
//! while the same questions come back often (the same words typed by many readers, the next
//! page of a list). An answer depends only on what its key holds: the spaces searched, each
//! at one revision and under one analysis (and, for an organization, with its title), the
//! query text, the page of results asked for, and the server's public URL. A revision never
//! changes, so a content change, a language change or a rename gives a new key: an entry is
//! never stale, it is only left unused until it is evicted.
//!
//! The revisions in a key come from the space rows the request already holds (the access
//! layer's, as content reads use them). An answer is stored only under the revisions that
//! the database gave while computing it, and only when they did not move meanwhile, so an
//! answer that straddles a merge is never kept.
//!
//! Bounded: the cache holds at most an eighth of the node's content cache budget
//! (`cache_mb`), weighed in bytes of keys and bodies (`AppState::search`, one per node).

use std::sync::atomic::Ordering;

use bytes::Bytes;
use moka::sync::Cache;

use super::analyze::Analyzer;
use crate::state::AppState;

/// Turns the cache on or off for this node (benchmarks of the search itself turn it off;
/// it is on by default).
pub fn set_enabled(state: &AppState, on: bool) {
    state.search.answers_on.store(on, Ordering::Relaxed);
}

fn cache(state: &AppState) -> Option<&Cache<String, Bytes>> {
    let s = &state.search;
    s.answers_on.load(Ordering::Relaxed).then_some(&s.answers)
}

/// One space as an answer depends on it.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub space_id: &'a str,
    pub revision_id: &'a str,
    pub language: Option<&'a str>,
    /// Shown in organization answers only.
    pub title: Option<&'a str>,
}

/// What an answer depends on, besides the spaces.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// `space` or `org`, and the searched scope's id.
    pub kind: &'a str,
    pub scope_id: &'a str,
    /// The query as sent.
    pub text: &'a str,
    /// The first position and the number of results of the page asked for.
    pub start: usize,
    pub limit: i64,
}

fn push(key: &mut String, part: &str) {
    // Length-prefixed, so that no part can run into the next.
    key.push_str(&part.len().to_string());
    key.push(':');
    key.push_str(part);
}

/// The key of an answer.
pub fn key(state: &AppState, ask: &Ask<'_>, spaces: &[Seen<'_>]) -> String {
    let mut key = String::with_capacity(64 + ask.text.len() + spaces.len() * 64);
    push(&mut key, &state.public_url);
    push(&mut key, ask.kind);
    push(&mut key, ask.scope_id);
    push(&mut key, &ask.start.to_string());
    push(&mut key, &ask.limit.to_string());
    push(&mut key, ask.text);
    for s in spaces {
        push(&mut key, s.space_id);
        push(&mut key, s.revision_id);
        push(&mut key, &Analyzer::for_language(s.language).key());
        if let Some(title) = s.title {
            push(&mut key, title);
        }
    }
    key
}

/// The cached answer under `key`, if any.
pub fn get(state: &AppState, key: &str) -> Option<Bytes> {
    cache(state)?.get(key)
}

/// Keeps an answer.
pub fn put(state: &AppState, key: String, body: Bytes) {
    if let Some(c) = cache(state) {
        c.insert(key, body);
    }
}

/// Whether answers are being kept (a caller can skip preparing a key otherwise).
pub fn enabled(state: &AppState) -> bool {
    cache(state).is_some()
}
