//! What a write changes, and the generations that tell a cached value whether it still holds.
//!
//! Every write transaction says what it changes ([`crate::db::Tx::touches`]); once it is
//! committed it moves the generation of each of those scopes, and a cached value recorded
//! at an older generation is no longer served. A committed transaction that said nothing
//! moves every scope at once: forgetting costs the node its cached lookups, never a stale
//! answer. Those are counted ([`Generations::undeclared`]) and logged with the place that
//! began them, and the API tests fail on any, so that the safe default stays rare.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// What a write changes, and what a cached entry rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Every token's owner (revocations and profile changes: rare).
    Tokens,
    /// A user's row.
    User(&'a str),
    /// An organization: its row, memberships, teams, grants, collections and sites, and
    /// the addresses of its sites.
    Org(&'a str),
    /// A space's row (its counters and current revision) and listings.
    Space(&'a str),
    /// A published site's row, structure, visitor key and addresses.
    Site(&'a str),
    /// A space's count of open comments, kept out of its row so that a comment does not
    /// move what every read of the space rests on.
    Comments(&'a str),
}

/// A scope as it is kept: its kind (see [`Scope::key`]) and id.
pub type Owned = (u8, Box<str>);

/// The kind of [`Scope::Tokens`] in [`Scope::key`].
const TOKENS: u8 = 5;

impl<'a> Scope<'a> {
    /// Its kind (a map of [`Generations`], or tokens) and id.
    pub fn key(self) -> (u8, &'a str) {
        match self {
            Scope::User(id) => (0, id),
            Scope::Org(id) => (1, id),
            Scope::Space(id) => (2, id),
            Scope::Site(id) => (3, id),
            Scope::Comments(id) => (4, id),
            Scope::Tokens => (TOKENS, ""),
        }
    }

    /// The scope, owned.
    pub fn owned(self) -> Owned {
        let (kind, id) = self.key();
        (kind, id.into())
    }
}

/// Scopes known at most per kind; past this a kind's map is emptied and every scope not in
/// a map moves on (all entries resting on those are dropped: rare, and safe).
const MAX_SCOPES: usize = 100_000;

/// The generation of every scope a write moved; a scope never moved is at `floor`.
#[derive(Default)]
pub struct Generations {
    /// The last generation handed out: every move takes a new one, so a value is never seen
    /// twice.
    last: AtomicU64,
    floor: AtomicU64,
    tokens: AtomicU64,
    /// Users, organizations, spaces, sites, spaces' comment counts.
    kinds: [RwLock<HashMap<String, u64, foldhash::fast::RandomState>>; 5],
    /// Moved whenever an organization or a site does: what the sites' addresses rest on.
    addresses: AtomicU64,
    /// Write transactions that ended without saying what they changed.
    undeclared: AtomicU64,
}

impl std::fmt::Debug for Generations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generations")
            .field("last", &self.last.load(Ordering::Relaxed))
            .finish()
    }
}

impl Generations {
    /// The generation `scope` is at.
    pub fn current(&self, scope: Scope<'_>) -> u64 {
        let (kind, id) = scope.key();
        match kind {
            TOKENS => self.tokens.load(Ordering::SeqCst),
            kind => {
                let map = self.kinds[usize::from(kind)]
                    .read()
                    .unwrap_or_else(|e| e.into_inner());
                match map.get(id) {
                    Some(g) => *g,
                    None => self.floor.load(Ordering::SeqCst),
                }
            }
        }
    }

    /// A number that moves whenever an organization or a site does.
    pub fn addresses(&self) -> u64 {
        self.addresses.load(Ordering::SeqCst)
    }

    /// Moves each of `scopes`: what was cached resting on them is no longer served.
    pub fn moved(&self, scopes: &[Scope<'_>]) {
        for scope in scopes {
            self.advance(scope.key());
        }
    }

    /// [`Generations::moved`] of owned scopes.
    pub fn moved_owned(&self, scopes: &[Owned]) {
        for (kind, id) in scopes {
            self.advance((*kind, id));
        }
    }

    /// Moves every scope: nothing cached before is served again.
    pub fn moved_all(&self) {
        let next = self.next();
        self.floor.store(next, Ordering::SeqCst);
        self.tokens.store(next, Ordering::SeqCst);
        for map in &self.kinds {
            map.write().unwrap_or_else(|e| e.into_inner()).clear();
        }
        self.addresses.fetch_add(1, Ordering::SeqCst);
    }

    /// Notes a write transaction, begun at `at`, that ended without saying what it changed
    /// (its caller then moves everything).
    pub fn note_undeclared(&self, at: &std::panic::Location<'_>) {
        self.undeclared.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            begun_at = %at,
            "a write did not say what it changed: every cached lookup of this node moved"
        );
    }

    /// Write transactions since start that did not say what they changed.
    pub fn undeclared(&self) -> u64 {
        self.undeclared.load(Ordering::Relaxed)
    }

    fn next(&self) -> u64 {
        self.last.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn advance(&self, (kind, id): (u8, &str)) {
        let next = self.next();
        if kind == TOKENS {
            self.tokens.store(next, Ordering::SeqCst);
            return;
        }
        if kind == 1 || kind == 3 {
            self.addresses.fetch_add(1, Ordering::SeqCst);
        }
        let mut map = self.kinds[usize::from(kind)]
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_SCOPES && !map.contains_key(id) {
            map.clear();
            self.floor.store(next, Ordering::SeqCst);
        }
        map.insert(id.to_string(), next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_move_changes_its_scope_only_and_moving_all_changes_every_one() {
        let g = Generations::default();
        let (a, b) = (g.current(Scope::Space("a")), g.current(Scope::Space("b")));
        let tokens = g.current(Scope::Tokens);
        g.moved(&[Scope::Space("a")]);
        assert_ne!(g.current(Scope::Space("a")), a);
        assert_eq!(g.current(Scope::Space("b")), b);
        assert_eq!(g.current(Scope::Tokens), tokens);
        let addresses = g.addresses();
        g.moved(&[Scope::Space("a")]);
        assert_eq!(g.addresses(), addresses, "a space holds no address");
        g.moved_owned(&[Scope::Site("s").owned()]);
        assert_ne!(g.addresses(), addresses);
        let seen = [
            g.current(Scope::Space("a")),
            g.current(Scope::Space("b")),
            g.current(Scope::Org("o")),
            g.current(Scope::Tokens),
        ];
        g.moved_all();
        let now = [
            g.current(Scope::Space("a")),
            g.current(Scope::Space("b")),
            g.current(Scope::Org("o")),
            g.current(Scope::Tokens),
        ];
        for (before, after) in seen.iter().zip(now) {
            assert_ne!(*before, after);
        }
    }
}
