//! Answers kept whole. A read whose operation says its answers may be served again
//! ([`crate::http::operation::Operation::reusable`]) is answered, for the same token and
//! the same path and query, from the answer it gave before, without routing, access check
//! or handler, while nothing that answer rests on has changed.
//!
//! Why: with every lookup cached, a space, page or change-request read still spent most of
//! its time finding its route, decoding its path, checking access from four cached
//! lookups and finding its answer; the HTTP exchange around it costs a fraction of that
//! (BENCHMARKS.md, issue 11).
//!
//! Correctness: an answer is kept only when the request that made it records what it
//! rested on (see [`crate::provenance`]), and it is served again only while all of that
//! still holds:
//! - it read nothing from the database: each lookup it made was answered by the access
//!   cache (the oldest of those entries is noted) or by the content caches, which hold only
//!   immutable things (a request that had to read the database is not kept; the next one,
//!   answered from the caches, is);
//! - no write served by this node since has moved a scope that one of its lookups rested
//!   on (its space, organization, user, the tokens): read-your-writes on a node, as for
//!   the cache itself, while writes to anything else leave it served (the first request
//!   after such a write checks its scopes, and notes the generation it found them at);
//! - the oldest access-cache entry it used has not yet expired: an answer never outlives
//!   the lookups it was made from, so a change made on another node is seen within the
//!   same bound as before;
//! - a listing, or a change request, names its space's listing version, which is read
//!   fresh before each reuse exactly as the listing itself reads it;
//! - an answer with signed URLs is not served past the end of the period they were made
//!   for (a handler signing in the next period would sign differently).
//!
//! Only `200` answers of `GET` requests with a bearer token and no body are kept, and only
//! requests whose path is a reusable operation's are looked up, so that others do not pay
//! for a lookup. The request id, rate-limit headers and metrics are still the edge's,
//! for every request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::{Body, HttpBody};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use bytes::Bytes;

use crate::cache::{with_pair, AccessCache, FastCache};
use crate::clock::Clock;
use crate::encoding::{self, Effort};
use crate::keys::TokenDigest;
use crate::per_thread::{PerThread, Tally};

/// Bytes of answers kept per node.
const KEPT_BYTES: u64 = 64 << 20;

/// The largest answer kept (larger ones are rare, and cost their size to copy anyway).
const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// A kept answer and what it was made at.
pub struct Kept {
    /// The operation that made it, for the metrics.
    pub operation: &'static str,
    plain: Variant,
    /// The answer gzip-compressed, made when a client first accepts that (`None`: not
    /// worth it, see [`encoding::worth`]).
    gzipped: OnceLock<Option<Variant>>,
    /// An access-cache generation at which it was last found to hold: seen before it was
    /// made, or by a later request that found every scope it rests on unmoved.
    generation: AtomicU64,
    /// The scopes of the access-cache entries it was made from, at their generations.
    rests_on: Vec<crate::provenance::Rested>,
    /// When the request that made it began (ms).
    made_at: i64,
    /// When the oldest lookup it rests on expires (ms).
    expires_at: i64,
    /// The space and listing version it must still be at, if it is a listing's.
    pub listing: Option<(String, i64)>,
}

/// One encoding of a kept answer: its headers and body.
#[derive(Clone, PartialEq)]
struct Variant {
    headers: HeaderMap,
    body: Bytes,
}

impl Kept {
    /// A kept answer of `headers` and `body`, which names `Accept-Encoding` in `Vary` when
    /// it is sent compressed to some clients.
    fn new(operation: &'static str, mut headers: HeaderMap, body: Bytes) -> Self {
        if encoding::worth(&headers, body.len() as u64) {
            encoding::vary(&mut headers);
        }
        Kept {
            operation,
            plain: Variant { headers, body },
            gzipped: OnceLock::new(),
            generation: AtomicU64::new(0),
            rests_on: Vec::new(),
            made_at: 0,
            expires_at: 0,
            listing: None,
        }
    }

    /// The answer again, compressed for a client that accepts gzip (`gzip`) when worth it.
    pub fn response(&self, gzip: bool) -> Response {
        let v = self.variant(gzip);
        response_with(&v.headers, v.body.clone())
    }

    /// The encoding sent to a client that accepts gzip (`gzip`) or not.
    fn variant(&self, gzip: bool) -> &Variant {
        match gzip.then(|| self.gzipped()).flatten() {
            Some(v) => v,
            None => &self.plain,
        }
    }

    /// The compressed encoding, made on first use (once: a client that asks meanwhile
    /// waits for it rather than compressing again).
    fn gzipped(&self) -> Option<&Variant> {
        self.gzipped
            .get_or_init(|| {
                let plain = &self.plain;
                if !encoding::worth(&plain.headers, plain.body.len() as u64) {
                    return None;
                }
                Some(Variant {
                    headers: encoding::gzipped_headers(&plain.headers),
                    body: encoding::gzip(&plain.body, Effort::Kept)?,
                })
            })
            .as_ref()
    }

    /// Whether it can be served to a client that accepts gzip (`gzip`) without
    /// compressing a large body on an async worker: a large answer kept for a client that
    /// did not ask is made again, and compressed off the workers.
    fn ready(&self, gzip: bool) -> bool {
        !gzip || self.plain.body.len() <= encoding::INLINE_BYTES || self.gzipped.get().is_some()
    }

    /// What it weighs in the kept answers' bound: its body, twice when a compressed copy
    /// may be made (which is smaller than the body).
    fn weight(&self) -> usize {
        let plain = &self.plain;
        let copies = if encoding::worth(&plain.headers, plain.body.len() as u64) {
            2
        } else {
            1
        };
        plain.body.len() * copies
    }

    /// Whether it may still be served at `now` to a request that saw the access cache at
    /// `generation` (its listing version aside): a write served since on this node leaves
    /// it served unless it moved a scope the answer rests on.
    fn holds(&self, generation: u64, now: i64, cache: &AccessCache) -> bool {
        if now < self.made_at || now >= self.expires_at {
            return false;
        }
        if self.generation.load(Ordering::Acquire) == generation {
            return true;
        }
        let holds = cache.still(&self.rests_on);
        if holds {
            self.generation.store(generation, Ordering::Release);
        }
        holds
    }
}

/// An answer as it is served: `headers` and `body`.
fn response_with(headers: &HeaderMap, body: Bytes) -> Response {
    let mut res = Response::new(Body::from(body));
    *res.headers_mut() = headers.clone();
    res
}

/// Kept answers a thread served lately, each with its own copies of the bodies.
#[derive(Default)]
struct Near {
    answers: HashMap<String, NearCopy, foldhash::fast::RandomState>,
    /// Bytes of the bodies held.
    bytes: usize,
    /// When answers that no longer hold were last dropped (ms).
    swept_at: i64,
    /// The key being looked up (reused: a lookup that finds its answer allocates nothing).
    key: String,
}

/// A thread's copy of a kept answer: the plain body, and the compressed one once a client
/// of the thread asked for it.
struct NearCopy {
    kept: Arc<Kept>,
    plain: Bytes,
    gzipped: Option<Bytes>,
}

impl NearCopy {
    /// Bytes of the bodies it holds.
    fn bytes(&self) -> usize {
        self.plain.len() + self.gzipped.as_ref().map_or(0, Bytes::len)
    }
}

/// Bytes of bodies a thread keeps near at most; past that it keeps no more until some
/// stop holding.
const NEAR_BYTES: usize = 4 << 20;

/// How often a full thread looks for answers that no longer hold, at most (ms).
const NEAR_SWEEP_MS: i64 = 100;

/// The largest body kept near a thread: a larger one costs far more to send than its shared
/// counts do, and each copy is memory a thread holds.
const NEAR_BODY_BYTES: usize = 64 << 10;

/// A request that may be answered from, or make, a kept answer.
pub struct Candidate {
    /// Its token's digest and its URI (shared, not copied): its answer's key, made only
    /// when an answer is kept.
    digest: TokenDigest,
    uri: Uri,
    /// The access cache's generation before anything was looked up.
    generation: u64,
    /// When it began (ms).
    started: i64,
    /// Whether its client accepts gzip.
    gzip: bool,
    /// Set when it makes the answer that others with its key wait for: held until it is
    /// dropped, once its answer is kept or not (boxed: most requests have none).
    _maker: Option<Box<Maker>>,
}

/// An answer being made, which requests with its key wait for rather than make it too
/// (once a kept answer expires, every connection asking for it would otherwise make it at
/// once: for a revision of 700 KB, 64 connections made and compressed 64 copies).
struct Making {
    /// The access cache's generation its maker saw: a request that saw another (a write
    /// was served since) does not wait for it.
    generation: u64,
    /// Changes (its sender is dropped) once the maker is done, kept or not.
    done: tokio::sync::watch::Receiver<()>,
}

/// The answers being made, by key.
type MakingMap = Arc<Mutex<HashMap<String, Making, foldhash::fast::RandomState>>>;

/// What a request that makes an answer others wait for holds: dropped when it is done (its
/// answer kept or not, or the request dropped), which wakes them.
struct Maker {
    making: MakingMap,
    key: String,
    /// Dropped last, after the entry is gone.
    _done: tokio::sync::watch::Sender<()>,
    mine: tokio::sync::watch::Receiver<()>,
}

impl Drop for Maker {
    fn drop(&mut self) {
        let mut making = self.making.lock().unwrap_or_else(|e| e.into_inner());
        // Only its own: a request that saw a later generation may have replaced it.
        if making
            .get(&self.key)
            .is_some_and(|m| m.done.same_channel(&self.mine))
        {
            making.remove(&self.key);
        }
    }
}

/// What a request waits for before it looks its answer up again.
pub struct Wait(tokio::sync::watch::Receiver<()>);

impl Wait {
    /// Until the answer's maker is done.
    pub async fn done(mut self) {
        // Nothing is ever sent: this returns once the sender is dropped.
        let _ = self.0.changed().await;
    }
}

impl Candidate {
    /// Whether its client accepts gzip.
    pub fn gzip(&self) -> bool {
        self.gzip
    }

    /// The key of its answer: token digest and request line.
    fn key(&self) -> String {
        [self.digest.as_str(), request_line(&self.uri)].join("\n")
    }
}

/// A request's path and query, as answers' keys name them.
pub fn request_line(uri: &Uri) -> &str {
    uri.path_and_query().map_or("/", |pq| pq.as_str())
}

/// The kept answers of one node.
pub struct Answers {
    kept: FastCache<String, Arc<Kept>>,
    /// What this thread served lately, with a copy of each body of its own: served from
    /// the shared cache, every request wrote the entry's and the body's reference counts,
    /// lines that every core then trades (BENCHMARKS.md, issue 11).
    near: PerThread<Near>,
    /// The paths of the reusable operations, set once the router is built: other requests
    /// are not looked up.
    paths: std::sync::OnceLock<matchit::Router<()>>,
    /// Answers being made (see [`Making`]); touched only by requests whose answer is not
    /// kept.
    making: MakingMap,
    ttl_ms: i64,
    hits: Tally,
    misses: Tally,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers")
            .field("ttl_ms", &self.ttl_ms)
            .finish()
    }
}

/// Where a request stands: answered from memory, to be checked against its listing
/// version first, or to be answered by its handler (and maybe kept).
pub enum Found {
    /// Served from memory, made by this operation.
    Kept(&'static str, Response),
    /// Kept, but its listing version must be read again first.
    Check(Arc<Kept>, Candidate),
    /// Not kept, or no longer valid.
    Missing(Candidate),
    /// Being made by another request that saw what this one saw: look it up again once
    /// that is done.
    Wait(Wait),
}

impl Answers {
    /// Kept answers that live at most `ttl_ms` (the access cache's bound; 0: none kept).
    pub fn new(ttl_ms: u64) -> Self {
        Self {
            kept: moka::sync::Cache::builder()
                .max_capacity(KEPT_BYTES)
                .weigher(|k: &String, a: &Arc<Kept>| {
                    u32::try_from(k.len() + a.weight()).unwrap_or(u32::MAX)
                })
                .build_with_hasher(Default::default()),
            near: PerThread::default(),
            paths: std::sync::OnceLock::new(),
            making: MakingMap::default(),
            ttl_ms: i64::try_from(ttl_ms).unwrap_or(i64::MAX),
            hits: Tally::default(),
            misses: Tally::default(),
        }
    }

    /// Sets the paths (as routed, with `{param}` segments) of the operations whose answers
    /// may be kept; only the first call counts.
    pub fn reusable_paths<'a>(&self, paths: impl IntoIterator<Item = &'a str>) {
        let mut router = matchit::Router::new();
        for path in paths {
            // Two methods of one path are one route; the router refuses only a repeat.
            let _ = router.insert(path, ());
        }
        let _ = self.paths.set(router);
    }

    /// Answers served from memory, and requests that could have been but were not.
    pub fn counts(&self) -> (u64, u64) {
        (self.hits.get(), self.misses.get())
    }

    /// Looks `req` up: `None` when it is not a request whose answer may be kept. `gzip`:
    /// whether its client accepts gzip; `may_wait`: whether it may wait for another request
    /// making its answer; `cache`: the access cache the answers rest on.
    pub fn find<B: HttpBody>(
        &self,
        req: &axum::http::Request<B>,
        gzip: bool,
        may_wait: bool,
        cache: &AccessCache,
        clock: &dyn Clock,
        known: impl Fn(&str) -> Option<i64>,
    ) -> Option<Found> {
        let reusable = |path| self.paths.get().is_some_and(|r| r.at(path).is_ok());
        if self.ttl_ms <= 0
            || req.method() != Method::GET
            || !req.body().is_end_stream()
            || !reusable(req.uri().path())
        {
            return None;
        }
        let token = crate::keys::bearer(req.headers())?;
        // Both before anything is looked up: what the answer is made from is no older.
        let generation = cache.generation();
        let now = clock.now_ms();
        let digest = TokenDigest::of(token);
        let candidate = move |maker| Candidate {
            digest,
            uri: req.uri().clone(),
            generation,
            started: now,
            gzip,
            _maker: maker,
        };
        let line = request_line(req.uri());
        // What this thread served lately first, then the shared cache.
        let settle = |kept: &Arc<Kept>, headers: &HeaderMap, body: Bytes| match &kept.listing {
            Some((space_id, version)) if known(space_id) != Some(*version) => Err(kept.clone()),
            _ => Ok((kept.operation, response_with(headers, body))),
        };
        let near = self.near.with(|near| {
            let Near {
                answers,
                bytes,
                key,
                ..
            } = near;
            // In a buffer of its own rather than `with_pair`'s: `settle` may look up keys.
            key.clear();
            key.push_str(digest.as_str());
            key.push('\n');
            key.push_str(line);
            let copy = answers.get_mut(key.as_str())?;
            if !copy.kept.holds(generation, now, cache) {
                *bytes -= copy.bytes();
                answers.remove(key.as_str());
                return None;
            }
            if let Some(packed) = gzip.then(|| copy.kept.gzipped()).flatten() {
                if copy.gzipped.is_none() && *bytes + packed.body.len() <= NEAR_BYTES {
                    *bytes += packed.body.len();
                    copy.gzipped = Some(Bytes::copy_from_slice(&packed.body));
                }
                // Past the bound, the shared body (counted, not copied).
                let body = copy.gzipped.as_ref().unwrap_or(&packed.body).clone();
                return Some(settle(&copy.kept, &packed.headers, body));
            }
            Some(settle(
                &copy.kept,
                &copy.kept.plain.headers,
                copy.plain.clone(),
            ))
        });
        let settled = match near {
            Some(settled) => settled,
            None => {
                let kept = with_pair(digest.as_str(), line, |key| self.kept.get(key))
                    .filter(|kept| kept.holds(generation, now, cache) && kept.ready(gzip));
                let Some(kept) = kept else {
                    let key = [digest.as_str(), line].join("\n");
                    return Some(match self.wait_or_make(key, generation, may_wait) {
                        // Counted once it is looked up again.
                        Ok(wait) => Found::Wait(wait),
                        Err(maker) => {
                            self.misses.add();
                            Found::Missing(candidate(maker))
                        }
                    });
                };
                // Compressed first, if asked for, so that the copy holds it too.
                let v = kept.variant(gzip);
                self.keep_near(digest.as_str(), line, &kept, (generation, now, cache));
                settle(&kept, &v.headers, v.body.clone())
            }
        };
        Some(match settled {
            Ok((operation, res)) => {
                self.hits.add();
                Found::Kept(operation, res)
            }
            Err(kept) => Found::Check(kept, candidate(None)),
        })
    }

    /// For a request whose answer (under `key`) is not kept: what to wait for, if another
    /// request that saw the same `generation` is making it (and this one `may_wait`), else
    /// what to hold while making it (`None`: another is making it, but this one does not
    /// wait).
    fn wait_or_make(
        &self,
        key: String,
        generation: u64,
        may_wait: bool,
    ) -> Result<Wait, Option<Box<Maker>>> {
        let mut making = self.making.lock().unwrap_or_else(|e| e.into_inner());
        match making.get(&key) {
            Some(m) if m.generation == generation && may_wait => return Ok(Wait(m.done.clone())),
            Some(m) if m.generation == generation => return Err(None),
            _ => {}
        }
        let (done, mine) = tokio::sync::watch::channel(());
        making.insert(
            key.clone(),
            Making {
                generation,
                done: mine.clone(),
            },
        );
        Err(Some(Box::new(Maker {
            making: self.making.clone(),
            key,
            _done: done,
            mine,
        })))
    }

    /// Keeps a copy of `kept` near this thread, under the key of `digest` and `line`.
    fn keep_near(
        &self,
        digest: &str,
        line: &str,
        kept: &Arc<Kept>,
        (generation, now, cache): (u64, i64, &AccessCache),
    ) {
        if kept.plain.body.len() > NEAR_BODY_BYTES {
            return;
        }
        let copy = NearCopy {
            kept: kept.clone(),
            plain: Bytes::copy_from_slice(&kept.plain.body),
            gzipped: kept
                .gzipped
                .get()
                .and_then(Option::as_ref)
                .map(|v| Bytes::copy_from_slice(&v.body)),
        };
        self.near.with(|near| {
            let room = |near: &Near| near.bytes + copy.bytes() <= NEAR_BYTES;
            // Full: drop what no longer holds, at most once per `NEAR_SWEEP_MS`. Still full,
            // the answer is served from the shared ones, uncopied: with more answers in use
            // than a thread can hold, starting again would copy a body on every request.
            if !room(near) && now - near.swept_at >= NEAR_SWEEP_MS {
                near.swept_at = now;
                near.answers
                    .retain(|_, c| c.kept.holds(generation, now, cache));
                near.bytes = near.answers.values().map(NearCopy::bytes).sum();
            }
            if !room(near) {
                return;
            }
            near.bytes += copy.bytes();
            let old = near.answers.insert([digest, line].join("\n"), copy);
            if let Some(old) = old {
                near.bytes -= old.bytes();
            }
        });
    }

    /// Counts a kept answer whose listing version was checked: served (`true`) or not.
    pub fn checked(&self, served: bool) {
        let counter = if served { &self.hits } else { &self.misses };
        counter.add();
    }

    /// Answers `serve` (the handler's way) with what it rests on recorded, and keeps the
    /// answer if it may be served again: a `200` of an operation that allows it, that read
    /// nothing from the database.
    pub async fn record<F>(&self, candidate: Candidate, serve: F) -> Response
    where
        F: std::future::Future<Output = Response>,
    {
        let (res, reading) = crate::provenance::recorded(serve).await;
        let operation = match res.extensions().get::<crate::metrics::Answered>() {
            Some(a) if a.reusable => a.operation,
            _ => return res,
        };
        let small = res
            .body()
            .size_hint()
            .exact()
            .is_some_and(|n| n <= MAX_ANSWER_BYTES);
        if res.status() != StatusCode::OK || reading.database || !small {
            return res;
        }
        let (mut parts, body) = res.into_parts();
        let plain = match encoding::whole(body, "keep").await {
            Ok(plain) => plain,
            Err(failed) => return failed,
        };
        let expires_at = reading
            .oldest
            .unwrap_or(candidate.started)
            .min(candidate.started)
            .saturating_add(self.ttl_ms)
            .min(reading.until.unwrap_or(i64::MAX));
        let kept = Arc::new(Kept {
            generation: AtomicU64::new(candidate.generation),
            rests_on: reading.rests_on,
            made_at: candidate.started,
            expires_at,
            listing: reading.listing,
            ..Kept::new(operation, parts.headers.clone(), plain)
        });
        let key = candidate.key();
        // The same answer kept meanwhile by another request that saw the same state (many
        // that did not wait), held as long: that one serves, so that its compressed form is
        // made once.
        let kept = match self.kept.get(&key) {
            Some(same)
                if same.generation.load(Ordering::Acquire) == candidate.generation
                    && same.rests_on == kept.rests_on
                    && same.expires_at >= kept.expires_at
                    && same.listing == kept.listing
                    && same.plain == kept.plain =>
            {
                same
            }
            earlier => {
                // Made again with the same bytes (an answer expires with the lookups it
                // rests on, every second by default, though it rarely changes): its
                // compressed form is the earlier one's.
                if let Some(earlier) = earlier.filter(|e| e.plain == kept.plain) {
                    if let Some(Some(packed)) = earlier.gzipped.get() {
                        let _ = kept.gzipped.set(Some(packed.clone()));
                    }
                }
                self.kept.insert(key, kept.clone());
                kept
            }
        };
        if !kept.ready(candidate.gzip) {
            let made = kept.clone();
            // Off the async workers; those that ask meanwhile wait for it (`OnceLock`).
            let _ = tokio::task::spawn_blocking(move || made.gzipped().is_some()).await;
        }
        let v = kept.variant(candidate.gzip);
        parts.headers = v.headers.clone();
        Response::from_parts(parts, Body::from(v.body.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;

    fn kept(body_bytes: usize, expires_at: i64) -> Arc<Kept> {
        Arc::new(Kept {
            expires_at,
            ..Kept::new(
                "listSpaces",
                HeaderMap::new(),
                Bytes::from(vec![b'x'; body_bytes]),
            )
        })
    }

    #[test]
    fn a_kept_text_answer_is_compressed_once_and_weighs_both_copies() {
        let mut headers = HeaderMap::new();
        headers.insert(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        );
        let body = Bytes::from(r#"{"id":"x"},"#.repeat(200));
        let json = Arc::new(Kept::new("listSpaces", headers, body.clone()));
        assert_eq!(json.weight(), 2 * body.len());
        assert_eq!(json.variant(false).body, body);
        assert_eq!(json.plain.headers["vary"], "accept-encoding");
        assert!(json.gzipped.get().is_none(), "made on first use only");
        let packed = json.variant(true);
        assert_eq!(packed.headers["content-encoding"], "gzip");
        assert!(packed.body.len() < body.len() / 10);
        assert!(std::ptr::eq(json.variant(true), packed), "made once");
        assert_eq!(json.variant(false).body, body);
        // A thread's copy holds both bodies once both were made.
        let answers = Answers::new(1000);
        let cache = AccessCache::new(1000, Default::default());
        answers.keep_near("d", "/s", &json, (0, 0, &cache));
        assert_eq!(near(&answers), (1, body.len() + packed.body.len()));
        // Not text, or too small: one copy, never compressed.
        assert_eq!(kept(4096, 1).weight(), 4096);
        assert!(kept(4096, 1)
            .variant(true)
            .headers
            .get("content-encoding")
            .is_none());
    }

    #[tokio::test]
    async fn one_request_makes_an_answer_that_those_which_saw_the_same_wait_for() {
        let answers = Answers::new(1000);
        let entries = |answers: &Answers| answers.making.lock().unwrap().len();
        let Err(Some(maker)) = answers.wait_or_make("k".into(), 1, true) else {
            panic!("the first makes it");
        };
        let Ok(wait) = answers.wait_or_make("k".into(), 1, true) else {
            panic!("the next waits");
        };
        assert!(
            matches!(answers.wait_or_make("k".into(), 1, false), Err(None)),
            "one that may not wait makes it without taking the maker's place"
        );
        // One that saw a write since makes its own, in the first's place.
        let Err(Some(later)) = answers.wait_or_make("k".into(), 2, true) else {
            panic!("a later generation makes its own");
        };
        let waiting = tokio::spawn(wait.done());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(maker);
        waiting.await.unwrap();
        assert_eq!(
            entries(&answers),
            1,
            "the first's end leaves the later one's entry"
        );
        drop(later);
        assert_eq!(entries(&answers), 0);
    }

    #[tokio::test]
    async fn an_answer_kept_meanwhile_from_the_same_state_is_used_rather_than_made_again() {
        let answers = Answers::new(1000);
        let candidate = |started| Candidate {
            digest: TokenDigest::of("token"),
            uri: Uri::from_static("/v1/spaces/s/content"),
            generation: 3,
            started,
            gzip: true,
            _maker: None,
        };
        let made = || async {
            let mut res =
                axum::Json(serde_json::json!({ "pages": vec!["same words"; 200] })).into_response();
            res.extensions_mut().insert(crate::metrics::Answered {
                operation: "getCurrentRevision",
                reusable: true,
            });
            res
        };
        let key = candidate(0).key();
        let res = answers.record(candidate(10), made()).await;
        assert_eq!(res.headers()["content-encoding"], "gzip");
        let first = answers.kept.get(&key).unwrap();
        // Made again by a request that began as early: the kept one (and its compressed
        // form) serves it.
        answers.record(candidate(10), made()).await;
        assert!(Arc::ptr_eq(&answers.kept.get(&key).unwrap(), &first));
        // One that holds longer takes its place, with the same compressed form.
        answers.record(candidate(20), made()).await;
        let later = answers.kept.get(&key).unwrap();
        assert!(!Arc::ptr_eq(&later, &first));
        assert_eq!(later.expires_at, 1020);
        let packed = |k: &Kept| k.gzipped.get().unwrap().as_ref().unwrap().body.clone();
        assert_eq!(
            packed(&later).as_ptr(),
            packed(&first).as_ptr(),
            "not compressed again"
        );
    }

    fn near(answers: &Answers) -> (usize, usize) {
        answers.near.with(|near| (near.answers.len(), near.bytes))
    }

    #[test]
    fn a_thread_keeps_small_answers_near_within_its_bound() {
        let answers = Answers::new(1000);
        let cache = AccessCache::new(1000, Default::default());
        let keep = |path: &str, kept: &Arc<Kept>, now| {
            answers.keep_near("d", path, kept, (0, now, &cache))
        };
        keep("/a", &kept(10, i64::MAX), 0);
        keep("/a", &kept(20, i64::MAX), 0);
        assert_eq!(
            near(&answers),
            (1, 20),
            "a key kept again replaces its copy"
        );
        // Too large to copy: served from the shared answers only.
        keep("/big", &kept(NEAR_BODY_BYTES + 1, i64::MAX), 0);
        assert_eq!(near(&answers), (1, 20));
        // Up to the bound; these stop holding at 500 ms.
        let count = NEAR_BYTES / NEAR_BODY_BYTES - 1;
        for i in 0..count {
            keep(&format!("/{i}"), &kept(NEAR_BODY_BYTES, 500), 0);
        }
        assert_eq!(near(&answers), (count + 1, 20 + count * NEAR_BODY_BYTES));
        // Full, and everything still holds: nothing is dropped, and the answer is not kept.
        keep("/late", &kept(NEAR_BODY_BYTES, i64::MAX), 450);
        assert_eq!(near(&answers).0, count + 1);
        // Full, with answers that stopped holding, but the last sweep was 70 ms ago.
        keep("/later", &kept(NEAR_BODY_BYTES, i64::MAX), 520);
        assert_eq!(near(&answers).0, count + 1);
        // Once a sweep is due, what stopped holding goes, and the answer is kept.
        keep("/later", &kept(NEAR_BODY_BYTES, i64::MAX), 560);
        assert_eq!(near(&answers), (2, 20 + NEAR_BODY_BYTES));
        // Another thread keeps its own.
        let answers = Arc::new(answers);
        let other = answers.clone();
        assert_eq!(
            std::thread::spawn(move || near(&other)).join().unwrap(),
            (0, 0)
        );
    }
}
