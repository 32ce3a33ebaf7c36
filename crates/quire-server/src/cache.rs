//! Per-node caches. The content caches hold immutable things: objects, decoded revisions,
//! revision rows, page listings and page bodies (named by content, never stale). The access
//! cache is a short-lived cache of what nearly every request looks up before its handler
//! runs: the user behind a token, a user's membership of an organization, a space's row,
//! a user's grants in an organization, and the users that listings name as authors; and
//! the answers of change-request and comment reads, which are also checked against their
//! space's listing version before each use (`domain::listings`).
//!
//! Why: each database round trip costs more than the rest of a small request, and these
//! lookups happen on nearly every request. Correctness:
//! - every entry rests on one [`Scope`] (tokens, a user, an organization, a space, a site),
//!   and records that scope's generation seen *before* its query; every write transaction
//!   of this node moves the generation of each scope it says it changes once it is done
//!   (committed or dropped; one that says nothing moves them all: [`crate::scopes`]), so
//!   a read racing a write can never cache the old value, and a write costs the entries of
//!   what it changed, not the whole cache (read-your-writes on a node);
//! - changes made elsewhere (another node, `quire admin revoke-token`) are seen after at
//!   most `ttl_ms`; a TTL of 0 disables the cache.

use crate::ids::{OrgId, UserId};
use crate::per_thread::{PerThread, Tally};
use crate::revision_cache::Revisions;
use crate::store::revisions::RevisionRow;
use crate::store::spaces::SpaceRow;
use moka::sync::Cache;
use quire_content::model::Revision;
use quire_content::store::ObjectHash;
use std::any::Any;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::store::orgs::OrgSeen;
use crate::store::tokens::Bearer;
use crate::store::users::UserRow;

use crate::scopes::Generations;
pub use crate::scopes::Scope;

tokio::task_local! {
    /// Set while a write request runs: its lookups read the database, so that what it reads
    /// after its own commit is never a value cached before it.
    static WRITING: ();
}

/// Runs `fut` (a write request) with the access cache bypassed.
pub async fn bypassed<F: std::future::Future>(fut: F) -> F::Output {
    WRITING.scope((), fut).await
}

/// Whether the running request is a write (see [`bypassed`]).
fn writing() -> bool {
    WRITING.try_with(|_| ()).is_ok()
}

thread_local! {
    /// Reused buffer for composite keys, so that a cache hit allocates nothing.
    static PAIR_KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Runs `f` with the composite key `a + '\n' + b`, built in a reused buffer.
pub fn with_pair<R>(a: &str, b: &str, f: impl FnOnce(&str) -> R) -> R {
    with_parts(&[a, b], f)
}

/// Runs `f` with `parts` joined by `'\n'`, built in a reused buffer: a lookup that hits
/// allocates nothing. `f` must not build another key. Entries are stored under
/// `parts.join("\n")`, the same text.
pub fn with_parts<R>(parts: &[&str], f: impl FnOnce(&str) -> R) -> R {
    PAIR_KEY.with(|key| {
        let mut key = key.borrow_mut();
        key.clear();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                key.push('\n');
            }
            key.push_str(part);
        }
        f(key.as_str())
    })
}

/// A bounded cache hashing its keys with foldhash rather than SipHash: the hot caches are
/// looked up on every read, and the hashing showed in their profiles. Seeded per cache.
pub type FastCache<K, V> = Cache<K, V, foldhash::fast::RandomState>;

/// Entries kept at most, per map; past this the least used make room.
const MAX_ENTRIES: u64 = 50_000;

#[derive(Clone)]
struct Entry<V> {
    value: V,
    stored_at: i64,
    generation: u64,
}

struct Map<K, V> {
    // foldhash rather than SipHash: hashing the keys was 2-3% of a read's instructions.
    entries: FastCache<K, Entry<V>>,
    /// Lookups answered, and not answered, for the operator's metrics.
    hits: Tally,
    misses: Tally,
}

impl<K: Eq + Hash + Send + Sync + 'static, V: Clone + Send + Sync + 'static> Map<K, V> {
    fn new() -> Self {
        Self {
            entries: Cache::builder()
                .max_capacity(MAX_ENTRIES)
                .build_with_hasher(Default::default()),
            hits: Tally::default(),
            misses: Tally::default(),
        }
    }

    fn counts(&self) -> (u64, u64) {
        (self.hits.get(), self.misses.get())
    }

    /// The entry of `key` if it is fresh at `now` and its `scope` is still at the
    /// generation it was stored at (an entry of no scope: at 0).
    fn get<Q>(
        &self,
        key: &Q,
        now: i64,
        ttl: i64,
        scope: Option<Scope<'_>>,
        generations: &Generations,
    ) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let generation = scope.map_or(0, |s| generations.current(s));
        let found = self.entries.get(key).and_then(|entry| {
            let fresh = entry.generation == generation
                && now - entry.stored_at < ttl
                && now >= entry.stored_at;
            fresh.then_some(entry.value)
        });
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.add();
        found
    }

    fn put(&self, key: K, value: V, now: i64, generation: u64) {
        self.entries.insert(
            key,
            Entry {
                value,
                stored_at: now,
                generation,
            },
        );
    }
}

/// A value the layers above compute for one organization and user, shared by reference.
pub type Shared = Arc<dyn Any + Send + Sync>;

/// The access cache of one node.
pub struct AccessCache {
    ttl_ms: i64,
    /// The database's generations, which its write transactions move.
    generations: Arc<Generations>,
    users: Map<String, Arc<Bearer>>,
    /// Keyed by `org id + '\n' + user id`, looked up without allocating.
    orgs: Map<String, Option<Arc<OrgSeen>>>,
    /// Space rows by id (`None`: known not to exist).
    spaces: Map<String, Option<Arc<SpaceRow>>>,
    /// Spaces' counts of open comments, by space id.
    comment_counts: Map<String, i64>,
    /// Users by id, as authors of what listings show (`None`: known not to exist).
    people: Map<String, Option<UserRow>>,
    /// What the domain derives for a user in an organization (their grants), keyed by
    /// `org id + '\n' + user id`.
    derived: Map<String, Shared>,
    /// What published sites show: a site's row and structure, by site id.
    sites: Map<String, Shared>,
    /// Answers rendered from rows the caches share, keyed by `kind + '\n' + id + '\n' +
    /// view` (see [`AccessCache::rendered`]).
    rendered: Map<String, Rendered>,
    /// Serialized listings of change requests and comments, and change requests (see
    /// [`AccessCache::listing`]).
    listings: Listings,
    /// Fresh reads of spaces' listing versions, shared by the listings that ask at once.
    pub listing_versions: Rounds<i64>,
    /// Listing versions read since the database's last commit (SQLite; see
    /// [`crate::db::Db::stamp`]): current on every node until something is committed.
    pub stamped_versions: Stamped,
}

/// What names a rendered answer: the row's kind, its id, and the view of it (the caller's
/// role, for one).
pub type View<'a> = (&'a str, &'a str, &'a str);

/// An answer rendered from a shared row, with that row held weakly: the weak reference
/// keeps the row's allocation, so no other row can take its address while the entry lives,
/// and the same address means the same (immutable) row.
#[derive(Clone)]
struct Rendered {
    from: std::sync::Weak<dyn Any + Send + Sync>,
    body: bytes::Bytes,
}

/// Bytes of listing answers kept per node: a few thousand listings of typical size.
const LISTING_BYTES: u64 = 32 << 20;

/// Listing answers by key, bounded by their size.
struct Listings {
    answers: FastCache<String, Arc<Listed>>,
    hits: Tally,
    misses: Tally,
}

/// A listing answer, with what it was built at.
struct Listed {
    body: bytes::Bytes,
    /// The space's listing version read before the answer was built.
    version: i64,
    /// The cache generation seen before the answer was built.
    generation: u64,
    stored_at: i64,
}

impl std::fmt::Debug for AccessCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessCache")
            .field("ttl_ms", &self.ttl_ms)
            .finish()
    }
}

impl AccessCache {
    /// A cache whose entries live `ttl_ms` milliseconds (0: disabled).
    pub fn new(ttl_ms: u64, generations: Arc<Generations>) -> Self {
        Self {
            ttl_ms: i64::try_from(ttl_ms).unwrap_or(i64::MAX),
            generations,
            users: Map::new(),
            orgs: Map::new(),
            spaces: Map::new(),
            comment_counts: Map::new(),
            people: Map::new(),
            derived: Map::new(),
            sites: Map::new(),
            rendered: Map::new(),
            listings: Listings {
                answers: Cache::builder()
                    .max_capacity(LISTING_BYTES)
                    .weigher(|k: &String, l: &Arc<Listed>| {
                        u32::try_from(k.len() + l.body.len()).unwrap_or(u32::MAX)
                    })
                    .build_with_hasher(Default::default()),
                hits: Tally::default(),
                misses: Tally::default(),
            },
            listing_versions: Rounds::default(),
            stamped_versions: Stamped::default(),
        }
    }

    /// Hits and misses of each of the cache's maps since start, for the operator's metrics.
    pub fn lookups(&self) -> [(&'static str, (u64, u64)); 9] {
        let listings = &self.listings;
        [
            ("tokens", self.users.counts()),
            ("memberships", self.orgs.counts()),
            ("spaces", self.spaces.counts()),
            ("comment_counts", self.comment_counts.counts()),
            ("people", self.people.counts()),
            ("grants", self.derived.counts()),
            ("sites", self.sites.counts()),
            ("answers", self.rendered.counts()),
            ("listings", (listings.hits.get(), listings.misses.get())),
        ]
    }

    /// Whether caching is on (never inside a write request).
    pub fn enabled(&self) -> bool {
        self.ttl_ms > 0 && !writing()
    }

    /// The generation of `scope`, to record with a value about to be read from the database.
    pub fn generation_of(&self, scope: Scope<'_>) -> u64 {
        self.generations.current(scope)
    }

    /// The cached owner of a token hash.
    pub fn user(&self, token_hash: &str, now: i64) -> Option<Arc<Bearer>> {
        if !self.enabled() {
            return None;
        }
        self.users.get(
            token_hash,
            now,
            self.ttl_ms,
            Some(Scope::Tokens),
            &self.generations,
        )
    }

    /// Caches the owner of a token hash, read at `generation`.
    pub fn put_user(&self, token_hash: String, user: Arc<Bearer>, now: i64, generation: u64) {
        if self.enabled() {
            self.users.put(token_hash, user, now, generation);
        }
    }

    /// The cached view of an organization by a user (`Some(None)`: known not to exist).
    pub fn org(&self, org_id: &OrgId, user_id: &UserId, now: i64) -> Option<Option<Arc<OrgSeen>>> {
        if !self.enabled() {
            return None;
        }
        with_pair(org_id, user_id, |key| {
            self.orgs.get(
                key,
                now,
                self.ttl_ms,
                Some(Scope::Org(org_id)),
                &self.generations,
            )
        })
    }

    /// Caches the view of an organization by a user, read at `generation`.
    pub fn put_org(
        &self,
        org_id: &str,
        user_id: &str,
        org: Option<Arc<OrgSeen>>,
        now: i64,
        generation: u64,
    ) {
        if self.enabled() {
            self.orgs
                .put(format!("{org_id}\n{user_id}"), org, now, generation);
        }
    }

    /// The cached row of a space (`Some(None)`: known not to exist).
    pub fn space(&self, space_id: &str, now: i64) -> Option<Option<Arc<SpaceRow>>> {
        if !self.enabled() {
            return None;
        }
        self.spaces.get(
            space_id,
            now,
            self.ttl_ms,
            Some(Scope::Space(space_id)),
            &self.generations,
        )
    }

    /// Caches the row of a space, read at `generation`.
    pub fn put_space(&self, space_id: &str, row: Option<Arc<SpaceRow>>, now: i64, generation: u64) {
        if self.enabled() {
            self.spaces.put(space_id.to_string(), row, now, generation);
        }
    }

    /// The cached count of a space's open comments.
    pub fn comment_count(&self, space_id: &str, now: i64) -> Option<i64> {
        if !self.enabled() {
            return None;
        }
        self.comment_counts.get(
            space_id,
            now,
            self.ttl_ms,
            Some(Scope::Comments(space_id)),
            &self.generations,
        )
    }

    /// Caches the count of a space's open comments, read at `generation`.
    pub fn put_comment_count(&self, space_id: &str, count: i64, now: i64, generation: u64) {
        if self.enabled() {
            self.comment_counts
                .put(space_id.to_string(), count, now, generation);
        }
    }

    /// The cached user of an id (`Some(None)`: known not to exist).
    pub fn person(&self, user_id: &str, now: i64) -> Option<Option<UserRow>> {
        if !self.enabled() {
            return None;
        }
        self.people.get(
            user_id,
            now,
            self.ttl_ms,
            Some(Scope::User(user_id)),
            &self.generations,
        )
    }

    /// Caches the user of an id, read at `generation`.
    pub fn put_person(&self, user_id: &str, row: Option<UserRow>, now: i64, generation: u64) {
        if self.enabled() {
            self.people.put(user_id.to_string(), row, now, generation);
        }
    }

    /// The cached value derived for a user in an organization, if it is a `T`.
    pub fn derived<T: Any + Send + Sync>(
        &self,
        org_id: &OrgId,
        user_id: &UserId,
        now: i64,
    ) -> Option<Arc<T>> {
        if !self.enabled() {
            return None;
        }
        with_pair(org_id, user_id, |key| {
            self.derived.get(
                key,
                now,
                self.ttl_ms,
                Some(Scope::Org(org_id)),
                &self.generations,
            )
        })
        .and_then(|v| v.downcast::<T>().ok())
    }

    /// Caches a value derived for a user in an organization from reads made at `generation`.
    pub fn put_derived<T: Any + Send + Sync>(
        &self,
        org_id: &OrgId,
        user_id: &UserId,
        value: Arc<T>,
        now: i64,
        generation: u64,
    ) {
        if self.enabled() {
            self.derived
                .put(format!("{org_id}\n{user_id}"), value, now, generation);
        }
    }

    /// The answer rendered earlier as `view` of the `kind` row `id`, if `row` is the very
    /// row it was rendered from (the caches hand out a new one when it changes).
    pub fn rendered<T: Any + Send + Sync>(
        &self,
        (kind, id, view): View<'_>,
        row: &Arc<T>,
        now: i64,
    ) -> Option<bytes::Bytes> {
        if !self.enabled() {
            return None;
        }
        let found = with_parts(&[kind, id, view], |key| {
            // The very row it was rendered from (checked below) is its only version.
            self.rendered
                .get(key, now, self.ttl_ms, None, &self.generations)
        })?;
        std::ptr::addr_eq(found.from.as_ptr(), Arc::as_ptr(row)).then_some(found.body)
    }

    /// Keeps `body`, rendered as `view` of `row` (the `kind` row `id`).
    pub fn put_rendered<T: Any + Send + Sync>(
        &self,
        (kind, id, view): View<'_>,
        row: &Arc<T>,
        body: bytes::Bytes,
        now: i64,
    ) {
        if self.enabled() {
            let from: std::sync::Weak<T> = Arc::downgrade(row);
            self.rendered.put(
                [kind, id, view].join("\n"),
                Rendered {
                    from: from as std::sync::Weak<dyn Any + Send + Sync>,
                    body,
                },
                now,
                0,
            );
        }
    }

    /// The cached state of a published site (or what a key starting with its id and a line
    /// feed names), if it is a `T`.
    pub fn site<T: Any + Send + Sync>(&self, site_id: &str, now: i64) -> Option<Arc<T>> {
        if !self.enabled() {
            return None;
        }
        self.sites
            .get(
                site_id,
                now,
                self.ttl_ms,
                // What a site's entries are keyed by starts with its id (`id\n...`).
                Some(Scope::Site(site_id.split('\n').next().unwrap_or(site_id))),
                &self.generations,
            )
            .and_then(|v| v.downcast::<T>().ok())
    }

    /// Caches the state of a published site, read at `generation`.
    pub fn put_site<T: Any + Send + Sync>(
        &self,
        site_id: &str,
        value: Arc<T>,
        now: i64,
        generation: u64,
    ) {
        if self.enabled() {
            self.sites.put(site_id.to_string(), value, now, generation);
        }
    }

    /// The listing answer cached under `key`, if it was built at the space's listing
    /// `version` (read just now), since the last write this node served, and within the
    /// cache's bound (the names and revision it shows were read then).
    pub fn listing(
        &self,
        space_id: &str,
        key: &str,
        version: i64,
        now: i64,
    ) -> Option<bytes::Bytes> {
        if !self.enabled() {
            return None;
        }
        let listings = &self.listings;
        let found = listings.answers.get(key).filter(|l| {
            l.version == version
                && l.generation == self.generation_of(Scope::Space(space_id))
                && now >= l.stored_at
                && now - l.stored_at < self.ttl_ms
        });
        let counter = if found.is_some() {
            &listings.hits
        } else {
            &listings.misses
        };
        counter.add();
        found.map(|l| l.body.clone())
    }

    /// Caches a listing answer built at the space's listing `version` and the cache's
    /// `generation`, both read before the answer's own reads.
    pub fn put_listing(
        &self,
        key: String,
        version: i64,
        body: bytes::Bytes,
        now: i64,
        generation: u64,
    ) {
        if self.enabled() {
            let listed = Listed {
                body,
                version,
                generation,
                stored_at: now,
            };
            self.listings.answers.insert(key, Arc::new(listed));
        }
    }
}

/// The per-node caches of content.
#[derive(Clone)]
pub struct ContentCache {
    /// Content objects by hash.
    pub objects: Cache<ObjectHash, Arc<Vec<u8>>>,
    /// Decoded revisions by root; a body several of them share is weighed once.
    pub revisions: Revisions,
    /// Roots of revisions being loaded in the background (after a page read from the stored
    /// page tree), so that a burst of first visits loads each once.
    warming: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// Roots whose page tree this node stored, or found stored (see `content::keep_tree`).
    trees: Cache<String, ()>,
    /// Published pages this node rendered from a stored page tree rather than a loaded
    /// revision (what shows that a first page after a restart took that path).
    from_trees: Arc<AtomicU64>,
    /// Objects known to be stored for a space, so that a save writes only new ones.
    pub stored: Cache<(String, ObjectHash), ()>,
    /// Serialised page listings of revisions, by `space:root` (a revision never changes,
    /// and a listing holds no expiring URLs).
    pub listings: FastCache<String, bytes::Bytes>,
    /// Serialised page bodies, by space, root, page and format joined by `'\n'`
    /// (immutable, as listings), and published pages' routes and HTML.
    pub pages: FastCache<String, bytes::Bytes>,
    /// Revision rows by space and revision joined by `'\n'`: a stored revision never
    /// changes.
    pub revision_rows: FastCache<String, Arc<RevisionRow>>,
    /// What each page body refers to, by the body's hash: a revision that changes a few
    /// pages reads only those again.
    pub page_links: Cache<ObjectHash, Arc<quire_content::links::PageLinks>>,
    /// The links of revisions, by `space:root`.
    pub links: Cache<String, Arc<quire_content::links::RevisionLinks>>,
    /// Revisions being read and decoded, by root: a burst of first reads decodes once.
    pub loads: Flights<Arc<Revision>>,
    /// Stored page trees being read and decoded, by `space:root` (as `loads`).
    pub tree_reads: Flights<Option<Arc<Revision>>>,
    /// Stored page trees decoded in the last minute, by `space:root`: the visits that come
    /// while the revision itself loads (after a restart) neither read nor copy the tree.
    pub warm_trees: Cache<String, Arc<Revision>>,
    /// Revisions this node decoded whole, and stored page trees it decoded.
    decoded: Arc<[AtomicU64; 2]>,
    /// Whether this node already warned of a revision too heavy for its share of the cache.
    warned_heavy: Arc<std::sync::atomic::AtomicBool>,
}

/// Work on a key done once for everyone who asks while it runs: the first caller runs it,
/// the others wait for its result. Only running work is held, never a finished result (the
/// bounded caches hold those); if the caller running it goes away, a waiter takes it over.
/// A key whose every caller went away keeps an empty entry until it is asked for again.
pub struct Flights<V> {
    running: Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::OnceCell<V>>>>>,
}

impl<V> Default for Flights<V> {
    fn default() -> Self {
        Self {
            running: Arc::default(),
        }
    }
}

impl<V> Clone for Flights<V> {
    fn clone(&self) -> Self {
        Self {
            running: self.running.clone(),
        }
    }
}

impl<V: Clone> Flights<V> {
    /// The result of `work` for `key`, run once for the callers that ask at the same time.
    pub async fn run<E, F, Fut>(&self, key: &str, work: F) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<V, E>>,
    {
        let cell = {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            running.entry(key.to_string()).or_default().clone()
        };
        let out = cell.get_or_try_init(work).await.cloned();
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.get(key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            running.remove(key);
        }
        out
    }
}

/// Spaces kept by [`Stamped`] at most; past that it starts again (a read each refills it).
const STAMPED_SPACES: usize = 100_000;

/// Values read while the database was at one commit stamp, kept until it moves. A value
/// read after the stamp was taken is exact for as long as the stamp is unchanged: nothing
/// was committed meanwhile, by any connection.
///
/// Each thread keeps a copy of the values it was asked for: between commits, a listing
/// asks for its version on every request.
#[derive(Default)]
pub struct Stamped {
    at: std::sync::Mutex<(
        Option<Stamp>,
        HashMap<String, i64, foldhash::fast::RandomState>,
    )>,
    copies: PerThread<Option<StampedCopy>>,
}

type Stamp = crate::db::Stamp;

/// A thread's copy of a [`Stamped`]'s values at one stamp.
struct StampedCopy {
    stamp: Stamp,
    values: HashMap<String, i64, foldhash::fast::RandomState>,
}

/// Values a thread's copy holds at most; past that it starts again.
const STAMPED_COPY: usize = 4096;

impl Stamped {
    /// The value of `key` if it was read since the stamp was last `stamp`.
    pub fn get(&self, stamp: &Stamp, key: &str) -> Option<i64> {
        let copied = self.copies.with(|copy| {
            let copy = copy.as_ref().filter(|c| c.stamp == *stamp)?;
            copy.values.get(key).copied()
        });
        if copied.is_some() {
            return copied;
        }
        let value = {
            let at = self.at.lock().unwrap_or_else(|e| e.into_inner());
            match &at.0 {
                Some(s) if s == stamp => at.1.get(key).copied(),
                _ => None,
            }
        }?;
        self.copy(*stamp, key, value);
        Some(value)
    }

    /// Notes `value`, read for `key` after the stamp read `stamp`; the values of any other
    /// stamp are dropped (the last stamp noted wins: an older one costs the next caller a read).
    pub fn put(&self, stamp: Stamp, key: &str, value: i64) {
        {
            let mut at = self.at.lock().unwrap_or_else(|e| e.into_inner());
            if at.0 != Some(stamp) || at.1.len() >= STAMPED_SPACES {
                at.0 = Some(stamp);
                at.1.clear();
            }
            at.1.insert(key.to_string(), value);
        }
        self.copy(stamp, key, value);
    }

    /// Notes `value` in this thread's copy.
    fn copy(&self, stamp: Stamp, key: &str, value: i64) {
        self.copies.with(|copy| {
            let copy = copy.get_or_insert_with(|| StampedCopy {
                stamp,
                values: HashMap::default(),
            });
            if copy.stamp != stamp || copy.values.len() >= STAMPED_COPY {
                copy.stamp = stamp;
                copy.values.clear();
            }
            copy.values.insert(key.to_string(), value);
        });
    }
}

/// Reads that must be fresh, shared. A caller joins only a read of its key that has not
/// started yet, so whatever it gets was read after it asked; while one read of a key runs,
/// the callers that arrive wait for it to end and then share one new read. Under load a key
/// costs one round trip at a time instead of one per caller, each caller waiting at most
/// for the read running when it came and its own. A read keeps going while anyone waits for
/// it, whoever started it; one that everyone left is finished by the next caller of its key.
///
/// With `gather`, a read starts only after its first caller has let the other ready tasks
/// run once, so that the callers that come together join it even when the read itself
/// takes no time to wait for (SQLite, read on the request's thread): under load, one read
/// serves a pass of the scheduler instead of every caller paying its own. Alone, a caller
/// should not gather: the pass costs an idle worker a wake-up (twice a point read's time).
pub struct Rounds<V> {
    slots: Arc<std::sync::Mutex<HashMap<String, Slot<V>, foldhash::fast::RandomState>>>,
    ids: Arc<AtomicU64>,
}

/// One read, shared by the callers that joined it; errors are shared as their message.
type Round<V> = futures_util::future::Shared<
    futures_util::future::BoxFuture<'static, Result<V, Arc<anyhow::Error>>>,
>;

/// The read of a key running now, and the one its next callers join.
struct Slot<V> {
    running: Option<(u64, Round<V>)>,
    next: Option<(u64, Round<V>)>,
}

impl<V> Default for Slot<V> {
    fn default() -> Self {
        Self {
            running: None,
            next: None,
        }
    }
}

impl<V> Default for Rounds<V> {
    fn default() -> Self {
        Self {
            slots: Arc::default(),
            ids: Arc::default(),
        }
    }
}

impl<V> Clone for Rounds<V> {
    fn clone(&self) -> Self {
        Self {
            slots: self.slots.clone(),
            ids: self.ids.clone(),
        }
    }
}

impl<V: Clone + Send + Sync + 'static> Rounds<V> {
    /// What the work that `make` makes reads for `key`, by a read that started after this
    /// call. `make` is called only when this call starts a round: the callers that join one
    /// copy nothing (a shared handle's count, touched by every caller, bounces between
    /// cores).
    pub async fn read<M, F, Fut, E>(
        &self,
        key: &str,
        gather: bool,
        make: M,
    ) -> Result<V, Arc<anyhow::Error>>
    where
        M: FnOnce() -> F,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<V, E>> + Send + 'static,
        E: Into<anyhow::Error>,
    {
        use futures_util::FutureExt;
        // Opened by the round's first caller after one scheduler pass; a caller that joins
        // meanwhile and polls the round waits at it. (A yield inside the shared round would
        // end at the first joiner's poll, so only two callers would share each read.)
        let mut opens = None;
        let round = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            // Most callers find their key there: its name is copied only for a new one.
            if !slots.contains_key(key) {
                slots.insert(key.to_string(), Slot::default());
            }
            let slot = slots.get_mut(key).expect("inserted above");
            if let Some((_, next)) = &slot.next {
                next.clone()
            } else {
                let id = self.ids.fetch_add(1, Ordering::Relaxed);
                let before = slot.running.as_ref().map(|(_, r)| r.clone());
                let (rounds, key, work) = (self.clone(), key.to_string(), make());
                let gate = gather.then(|| {
                    let (open, gate) = tokio::sync::oneshot::channel::<()>();
                    opens = Some(open);
                    gate
                });
                let round = async move {
                    if let Some(before) = before {
                        let _ = before.await;
                    }
                    // Open, or its opener went away: either way the round may start.
                    if let Some(gate) = gate {
                        let _ = gate.await;
                    }
                    rounds.set_running(&key, id);
                    let out = work().await.map_err(|e| Arc::new(e.into()));
                    rounds.set_done(&key, id);
                    out
                }
                .boxed()
                .shared();
                slot.next = Some((id, round.clone()));
                round
            }
        };
        if let Some(open) = opens {
            tokio::task::yield_now().await;
            let _ = open.send(());
        }
        round.await
    }

    /// Round `id` of `key` starts: callers from now on join a later one.
    fn set_running(&self, key: &str, id: u64) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = slots.get_mut(key) {
            if let Some(next) = slot.next.take_if(|(n, _)| *n == id) {
                slot.running = Some(next);
            }
        }
    }

    /// Round `id` of `key` has its result; a key with no round left is forgotten.
    fn set_done(&self, key: &str, id: u64) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = slots.get_mut(key) {
            slot.running.take_if(|(r, _)| *r == id);
            if slot.running.is_none() && slot.next.is_none() {
                slots.remove(key);
            }
        }
    }
}

/// The per-node caches of search: what queries read of indexes
/// (`domain::search::snapshot`), and whole answers (`domain::search::results`). Each
/// module's documentation says what names its entries and why no change leaves one in use.
pub struct SearchCaches {
    /// Postings, superseded pages, completions, corrections and page texts, by index
    /// generation: at most a quarter of the content cache budget, weighed in bytes.
    pub reads: Cache<String, Weighed>,
    /// Serialised answers, by the revisions they were computed at: at most an eighth.
    pub answers: Cache<String, bytes::Bytes>,
    /// Whether `reads` is used (on by default; a benchmark of cold reads turns it off).
    pub reads_on: std::sync::atomic::AtomicBool,
    /// Whether `answers` is used (on by default; benchmarks of the search turn it off).
    pub answers_on: std::sync::atomic::AtomicBool,
}

/// A value of any type, with what it weighs in bytes.
#[derive(Clone)]
pub struct Weighed {
    /// The value, read back by downcasting to its type.
    pub value: Shared,
    /// Its weight in bytes.
    pub weight: u32,
}

impl SearchCaches {
    /// Caches within a content cache budget of `bytes`.
    pub fn with_capacity(bytes: u64) -> Self {
        Self {
            reads: Cache::builder()
                .max_capacity(bytes / 4)
                .weigher(|k: &String, e: &Weighed| {
                    e.weight
                        .saturating_add(u32::try_from(k.len()).unwrap_or(u32::MAX))
                })
                .build(),
            answers: Cache::builder()
                .max_capacity(bytes / 8)
                .weigher(|k: &String, v: &bytes::Bytes| {
                    u32::try_from(k.len() + v.len()).unwrap_or(u32::MAX)
                })
                .build(),
            reads_on: true.into(),
            answers_on: true.into(),
        }
    }
}

impl std::fmt::Debug for SearchCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SearchCaches")
    }
}

impl std::fmt::Debug for ContentCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ContentCache")
    }
}

impl ContentCache {
    /// Marks the revision `root` as being loaded in the background; false if it already is.
    pub fn start_warming(&self, root: &str) -> bool {
        let mut set = self.warming.lock().unwrap_or_else(|e| e.into_inner());
        set.insert(root.to_string())
    }

    /// Whether the page tree of `root` is still to be stored by this node (then marked).
    pub fn start_tree(&self, root: &str) -> bool {
        if self.trees.contains_key(root) {
            return false;
        }
        self.trees.insert(root.to_string(), ());
        true
    }

    /// Counts a published page rendered from a stored page tree.
    pub fn rendered_from_tree(&self) {
        self.from_trees.fetch_add(1, Ordering::Relaxed);
    }

    /// How many published pages this node rendered from stored page trees.
    pub fn renders_from_trees(&self) -> u64 {
        self.from_trees.load(Ordering::Relaxed)
    }

    /// Counts a revision decoded whole (`false`) or a stored page tree decoded (`true`).
    pub fn count_decode(&self, tree: bool) {
        self.decoded[usize::from(tree)].fetch_add(1, Ordering::Relaxed);
    }

    /// How many revisions this node decoded whole (`false`) or stored trees (`true`).
    pub fn decodes(&self, tree: bool) -> u64 {
        self.decoded[usize::from(tree)].load(Ordering::Relaxed)
    }

    /// Ends what [`ContentCache::start_warming`] began.
    pub fn done_warming(&self, root: &str) {
        let mut set = self.warming.lock().unwrap_or_else(|e| e.into_inner());
        set.remove(root);
    }

    /// Caches holding at most about `bytes` in all: a third each for objects and decoded
    /// revisions, a sixth each for page listings and page bodies.
    pub fn with_capacity(bytes: u64) -> Self {
        let third = bytes / 3;
        let sixth = bytes / 6;
        Self {
            objects: Cache::builder()
                .max_capacity(third)
                .weigher(|_, v: &Arc<Vec<u8>>| u32::try_from(v.len() + 64).unwrap_or(u32::MAX))
                .build(),
            revisions: Revisions::new(third),
            warming: Default::default(),
            trees: Cache::builder().max_capacity(100_000).build(),
            from_trees: Arc::default(),
            stored: Cache::builder().max_capacity(2_000_000).build(),
            listings: Cache::builder()
                .max_capacity(sixth)
                .weigher(|_, b: &bytes::Bytes| u32::try_from(b.len()).unwrap_or(u32::MAX))
                .build_with_hasher(Default::default()),
            pages: Cache::builder()
                .max_capacity(sixth)
                .weigher(|k: &String, b: &bytes::Bytes| {
                    u32::try_from(k.len() + b.len()).unwrap_or(u32::MAX)
                })
                .build_with_hasher(Default::default()),
            revision_rows: Cache::builder()
                .max_capacity(100_000)
                .build_with_hasher(Default::default()),
            page_links: Cache::builder()
                .max_capacity(sixth)
                .weigher(|_, l: &Arc<quire_content::links::PageLinks>| {
                    u32::try_from(l.weight()).unwrap_or(u32::MAX)
                })
                .build(),
            links: Cache::builder()
                .max_capacity(sixth)
                .weigher(|k: &String, l: &Arc<quire_content::links::RevisionLinks>| {
                    u32::try_from(k.len() + l.weight()).unwrap_or(u32::MAX)
                })
                .build(),
            loads: Flights::default(),
            tree_reads: Flights::default(),
            warm_trees: Cache::builder()
                .max_capacity(sixth)
                .weigher(|_, r: &Arc<Revision>| {
                    u32::try_from(Revisions::weight_alone(r)).unwrap_or(u32::MAX)
                })
                .time_to_live(std::time::Duration::from_secs(60))
                .build(),
            decoded: Arc::default(),
            warned_heavy: Arc::default(),
        }
    }

    /// Caches a revision this node decoded whole. One heavier than the revisions' share of
    /// the cache cannot stay, and would be read and decoded again for every use: say so
    /// once, since only the operator can fix it (with `--cache-mb`).
    pub fn keep_decoded(&self, space_id: &str, root: &str, rev: Arc<Revision>) {
        if self.revisions.insert(root.to_string(), rev.clone()) {
            return;
        }
        if !self.warned_heavy.swap(true, Ordering::Relaxed) {
            let share = self.revisions.capacity();
            let heavy = Revisions::weight_alone(&rev);
            tracing::warn!(
                space = space_id,
                root,
                decoded_mib = heavy >> 20,
                share_mib = share >> 20,
                "a revision is heavier than the third of --cache-mb that holds decoded \
                 revisions, so it is decoded again for each use; set --cache-mb to at \
                 least three times its weight"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ContentCache, Flights, Rounds, Stamped};
    use crate::db::Stamp;
    use quire_content::model::{Page, Revision};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_stamped_value_holds_on_every_thread_until_the_stamp_moves() {
        let stamped = std::sync::Arc::new(Stamped::default());
        let (one, two) = (Stamp::made_up(1), Stamp::made_up(2));
        assert_eq!(stamped.get(&one, "space"), None);
        stamped.put(one, "space", 7);
        assert_eq!(stamped.get(&one, "space"), Some(7));
        assert_eq!(stamped.get(&two, "space"), None);
        // Another thread finds it in the shared map, then in its own copy.
        let other = stamped.clone();
        std::thread::spawn(move || {
            assert_eq!(other.get(&one, "space"), Some(7));
            assert_eq!(other.get(&one, "space"), Some(7));
            assert_eq!(other.get(&one, "elsewhere"), None);
            // A value read at a newer stamp replaces the older stamp's everywhere.
            other.put(two, "space", 8);
        })
        .join()
        .unwrap();
        // This thread's copy is still at the old stamp: asked at the new one, it is not
        // used, and the shared map answers.
        assert_eq!(stamped.get(&two, "space"), Some(8));
        assert_eq!(stamped.get(&one, "space"), None);
        // Another map's values are its own, on the same thread.
        let second = Stamped::default();
        assert_eq!(second.get(&two, "space"), None);
    }

    fn held(f: &Flights<u32>) -> usize {
        f.running.lock().unwrap().len()
    }

    fn revision(text_bytes: usize) -> Arc<Revision> {
        Arc::new(Revision {
            pages: vec![Page::document(
                "p",
                "P",
                "p",
                &"word ".repeat(text_bytes / 5),
            )],
            ..Revision::default()
        })
    }

    #[test]
    fn a_revision_heavier_than_its_share_is_reported_once_and_a_light_one_is_kept() {
        // 3 KiB in all: a third, 1 KiB, holds decoded revisions.
        let cache = ContentCache::with_capacity(3 * 1024);
        cache.keep_decoded("space", "light", revision(100));
        assert!(!cache.warned_heavy.load(Ordering::Relaxed));
        assert!(cache.revisions.get("light").is_some());
        cache.keep_decoded("space", "heavy", revision(4096));
        assert!(cache.warned_heavy.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn callers_at_the_same_time_share_one_run_and_nothing_is_held_after() {
        let flights = Flights::<u32>::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Notify::new());
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let (flights, runs, gate) = (flights.clone(), runs.clone(), gate.clone());
                tokio::spawn(async move {
                    let work = || async {
                        runs.fetch_add(1, Ordering::SeqCst);
                        gate.notified().await;
                        Ok::<_, ()>(7)
                    };
                    flights.run("k", work).await
                })
            })
            .collect();
        // Every caller is waiting on the one run before it may finish.
        while runs.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(held(&flights), 1);
        gate.notify_one();
        for c in callers {
            assert_eq!(c.await.unwrap(), Ok(7));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(held(&flights), 0);
        // A later call runs again: results are not kept here.
        assert_eq!(flights.run("k", || async { Ok::<_, ()>(8) }).await, Ok(8));
        assert_eq!(held(&flights), 0);
    }

    #[tokio::test]
    async fn a_waiter_takes_over_when_the_running_caller_goes_away_or_fails() {
        let flights = Flights::<u32>::default();
        let started = Arc::new(tokio::sync::Notify::new());
        let leader = {
            let (flights, started) = (flights.clone(), started.clone());
            tokio::spawn(async move {
                let work = || async {
                    started.notify_one();
                    std::future::pending::<Result<u32, ()>>().await
                };
                flights.run("k", work).await
            })
        };
        started.notified().await;
        let waiter = {
            let flights = flights.clone();
            tokio::spawn(async move { flights.run("k", || async { Ok::<_, ()>(3) }).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        leader.abort();
        assert_eq!(waiter.await.unwrap(), Ok(3));
        assert_eq!(held(&flights), 0);
        // A failed run is not remembered: the next caller runs the work again.
        assert_eq!(
            flights.run("k", || async { Err::<u32, _>("no") }).await,
            Err("no")
        );
        assert_eq!(flights.run("k", || async { Ok::<_, &str>(4) }).await, Ok(4));
        assert_eq!(held(&flights), 0);
    }

    /// A read whose number is its order; each waits for the gate to let it finish.
    fn counted(
        reads: &Arc<AtomicUsize>,
        gate: &Arc<tokio::sync::Semaphore>,
    ) -> impl FnOnce() -> futures_util::future::BoxFuture<'static, Result<usize, std::io::Error>>
           + Send
           + 'static {
        let (reads, gate) = (reads.clone(), gate.clone());
        move || {
            Box::pin(async move {
                let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
                gate.acquire().await.unwrap().forget();
                Ok(n)
            })
        }
    }

    #[tokio::test]
    async fn callers_share_only_a_read_that_started_after_they_asked() {
        let rounds = Rounds::<usize>::default();
        let reads = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let call = |rounds: &Rounds<usize>| {
            let (rounds, work) = (rounds.clone(), counted(&reads, &gate));
            tokio::spawn(async move { rounds.read("space", true, || work).await.unwrap() })
        };
        let first = call(&rounds);
        while reads.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // Three callers come while read 1 runs: none may get it, and they share read 2.
        let later: Vec<_> = (0..3).map(|_| call(&rounds)).collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(reads.load(Ordering::SeqCst), 1, "read 2 waits for read 1");
        gate.add_permits(1);
        assert_eq!(first.await.unwrap(), 1);
        gate.add_permits(1);
        for caller in later {
            assert_eq!(caller.await.unwrap(), 2);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2);
        assert!(rounds.slots.lock().unwrap().is_empty());
    }

    /// A read that takes no wait (SQLite, on the request's thread) is shared only when its
    /// round gathers: the callers polled together join it; without gathering each reads.
    #[tokio::test]
    async fn a_gathering_round_is_joined_by_the_callers_polled_with_it() {
        for (gather, expected) in [(true, 1), (false, 5)] {
            let rounds = Rounds::<usize>::default();
            let reads = Arc::new(AtomicUsize::new(0));
            let callers: Vec<_> = (0..5)
                .map(|_| {
                    let (rounds, reads) = (rounds.clone(), reads.clone());
                    tokio::spawn(async move {
                        rounds
                            .read("space", gather, || {
                                move || async move {
                                    Ok::<_, std::io::Error>(
                                        reads.fetch_add(1, Ordering::SeqCst) + 1,
                                    )
                                }
                            })
                            .await
                            .unwrap()
                    })
                })
                .collect();
            for caller in callers {
                caller.await.unwrap();
            }
            assert_eq!(reads.load(Ordering::SeqCst), expected, "gather: {gather}");
            assert!(rounds.slots.lock().unwrap().is_empty());
        }
    }

    #[tokio::test]
    async fn a_read_everyone_left_is_finished_by_the_next_caller() {
        let rounds = Rounds::<usize>::default();
        let reads = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let (r, work) = (rounds.clone(), counted(&reads, &gate));
        let left = tokio::spawn(async move { r.read("space", true, || work).await });
        while reads.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        left.abort();
        let _ = left.await;
        gate.add_permits(2);
        let got = tokio::time::timeout(
            Duration::from_secs(5),
            rounds.read("space", false, || counted(&reads, &gate)),
        )
        .await
        .expect("not stuck behind the abandoned read")
        .unwrap();
        assert_eq!(got, 2, "its own read, started after it asked");
        assert!(rounds.slots.lock().unwrap().is_empty());
    }
}
