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
//! - the access cache's generation is the one seen before it was made, so no write has
//!   been served by this node since (read-your-writes on a node, as for the cache itself);
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
use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use bytes::Bytes;

use crate::cache::{with_pair, AccessCache, FastCache};
use crate::clock::Clock;
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
    headers: HeaderMap,
    body: Bytes,
    /// The access cache's generation seen before it was made.
    generation: u64,
    /// When the request that made it began (ms).
    made_at: i64,
    /// When the oldest lookup it rests on expires (ms).
    expires_at: i64,
    /// The space and listing version it must still be at, if it is a listing's.
    pub listing: Option<(String, i64)>,
}

impl Kept {
    /// The answer again.
    pub fn response(&self) -> Response {
        self.response_with(self.body.clone())
    }

    /// The answer again, with `body` (the same bytes).
    fn response_with(&self, body: Bytes) -> Response {
        let mut res = Response::new(Body::from(body));
        *res.headers_mut() = self.headers.clone();
        res
    }

    /// Whether it may still be served at `now` to a request that saw `generation` (its
    /// listing version aside).
    fn holds(&self, generation: u64, now: i64) -> bool {
        self.generation == generation && now >= self.made_at && now < self.expires_at
    }
}

/// Kept answers a thread served lately, each with its own copy of the body.
#[derive(Default)]
struct Near {
    answers: HashMap<String, (Arc<Kept>, Bytes), foldhash::fast::RandomState>,
    bytes: usize,
    /// When answers that no longer hold were last dropped (ms).
    swept_at: i64,
    /// The key being looked up (reused: a lookup that finds its answer allocates nothing).
    key: String,
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
}

impl Candidate {
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
}

impl Answers {
    /// Kept answers that live at most `ttl_ms` (the access cache's bound; 0: none kept).
    pub fn new(ttl_ms: u64) -> Self {
        Self {
            kept: moka::sync::Cache::builder()
                .max_capacity(KEPT_BYTES)
                .weigher(|k: &String, a: &Arc<Kept>| {
                    u32::try_from(k.len() + a.body.len()).unwrap_or(u32::MAX)
                })
                .build_with_hasher(Default::default()),
            near: PerThread::default(),
            paths: std::sync::OnceLock::new(),
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

    /// Looks `req` up: `None` when it is not a request whose answer may be kept. `cache`
    /// is the access cache the answers rest on.
    pub fn find<B: HttpBody>(
        &self,
        req: &axum::http::Request<B>,
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
        let candidate = move || Candidate {
            digest,
            uri: req.uri().clone(),
            generation,
            started: now,
        };
        let line = request_line(req.uri());
        // What this thread served lately first, then the shared cache.
        let settle = |kept: &Arc<Kept>, body: &Bytes| match &kept.listing {
            Some((space_id, version)) if known(space_id) != Some(*version) => Err(kept.clone()),
            _ => Ok((kept.operation, kept.response_with(body.clone()))),
        };
        let near = self.near.with(|near| {
            // In a buffer of its own rather than `with_pair`'s: `settle` may look up keys.
            let key = &mut near.key;
            key.clear();
            key.push_str(digest.as_str());
            key.push('\n');
            key.push_str(line);
            let (kept, body) = near.answers.get(key.as_str())?;
            if kept.holds(generation, now) {
                return Some(settle(kept, body));
            }
            near.bytes -= body.len();
            near.answers.remove(key.as_str());
            None
        });
        let settled = match near {
            Some(settled) => settled,
            None => {
                let kept = with_pair(digest.as_str(), line, |key| self.kept.get(key))
                    .filter(|kept| kept.holds(generation, now));
                let Some(kept) = kept else {
                    self.misses.add();
                    return Some(Found::Missing(candidate()));
                };
                self.keep_near(digest.as_str(), line, &kept, generation, now);
                settle(&kept, &kept.body)
            }
        };
        Some(match settled {
            Ok((operation, res)) => {
                self.hits.add();
                Found::Kept(operation, res)
            }
            Err(kept) => Found::Check(kept, candidate()),
        })
    }

    /// Keeps a copy of `kept` near this thread, under the key of `digest` and `line`.
    fn keep_near(&self, digest: &str, line: &str, kept: &Arc<Kept>, generation: u64, now: i64) {
        if kept.body.len() > NEAR_BODY_BYTES {
            return;
        }
        self.near.with(|near| {
            let room = |near: &Near| near.bytes + kept.body.len() <= NEAR_BYTES;
            // Full: drop what no longer holds, at most once per `NEAR_SWEEP_MS`. Still full,
            // the answer is served from the shared ones, uncopied: with more answers in use
            // than a thread can hold, starting again would copy a body on every request.
            if !room(near) && now - near.swept_at >= NEAR_SWEEP_MS {
                near.swept_at = now;
                near.answers.retain(|_, (k, _)| k.holds(generation, now));
                near.bytes = near.answers.values().map(|(_, b)| b.len()).sum();
            }
            if !room(near) {
                return;
            }
            let copy = Bytes::copy_from_slice(&kept.body);
            near.bytes += copy.len();
            let old = near
                .answers
                .insert([digest, line].join("\n"), (kept.clone(), copy));
            if let Some((_, body)) = old {
                near.bytes -= body.len();
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
        let (parts, body) = res.into_parts();
        // A body of known, bounded size is whole already: collecting it does not wait.
        let collected = match http_body_util::BodyExt::collect(body).await {
            Ok(collected) => collected,
            Err(err) => {
                tracing::error!(error = %err, "reading an answer to keep it failed");
                return crate::error::error_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal error; see the server log for details.",
                );
            }
        };
        let body = collected.to_bytes();
        let expires_at = reading
            .oldest
            .unwrap_or(candidate.started)
            .min(candidate.started)
            .saturating_add(self.ttl_ms)
            .min(reading.until.unwrap_or(i64::MAX));
        self.kept.insert(
            candidate.key(),
            Arc::new(Kept {
                operation,
                headers: parts.headers.clone(),
                body: body.clone(),
                generation: candidate.generation,
                made_at: candidate.started,
                expires_at,
                listing: reading.listing,
            }),
        );
        Response::from_parts(parts, Body::from(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(body_bytes: usize, expires_at: i64) -> Arc<Kept> {
        Arc::new(Kept {
            operation: "listSpaces",
            headers: HeaderMap::new(),
            body: Bytes::from(vec![b'x'; body_bytes]),
            generation: 0,
            made_at: 0,
            expires_at,
            listing: None,
        })
    }

    fn near(answers: &Answers) -> (usize, usize) {
        answers.near.with(|near| (near.answers.len(), near.bytes))
    }

    #[test]
    fn a_thread_keeps_small_answers_near_within_its_bound() {
        let answers = Answers::new(1000);
        let keep = |path: &str, kept: &Arc<Kept>, now| answers.keep_near("d", path, kept, 0, now);
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
