//! Listings of a space's change requests and comments, and its change requests one by one,
//! answered from the node's memory while nothing they show has changed.
//!
//! Why: a listing costs its queries, and building and serializing twenty items, several
//! times what a point read costs; people read far more often than they write. A change
//! request alone costs one read either way, but answering from memory skips decoding its
//! row, building and serializing the answer (a third of its cost on SQLite). Correctness:
//! every write to a space's change requests, comments, replies or reactions moves the
//! space's listing version of what it changes (change requests, or comments: see
//! [`Listing`]) in its own transaction (`store::spaces::touch_listings`), and each listing
//! learns the current version before it answers, so a write on any node is seen by the next
//! listing on every node (see [`version`]). What else an answer shows
//! (authors' names, whether a change request is behind the space) is read fresh when it is
//! built and kept no longer than the access cache keeps those lookups. Access is decided
//! before, on every request.

use std::future::Future;

use bytes::Bytes;
use serde::Serialize;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
pub use crate::store::spaces::Listing;

/// The serialized answer of a read of `space_id`'s change requests or comments: from
/// memory when `key` (everything the answer depends on besides the space's `listing`
/// version: the request's path and query, and the caller where it shows) was answered at
/// the current version, else the answer of the future `build` makes, kept.
///
/// `build` is called, and its future boxed, only when the answer is built: an unpolled
/// future is as large as everything it would await, and the handlers' futures, moved for
/// every request, carried kilobytes of reads that a cached answer never makes.
pub async fn answer<T, F, Fut>(
    state: &AppState,
    space_id: &str,
    listing: Listing,
    key: String,
    build: F,
) -> ApiResult<Bytes>
where
    T: Serialize,
    F: FnOnce() -> Fut,
    Fut: Future<Output = ApiResult<T>>,
{
    if !state.cache.enabled() {
        return serialize(&Box::pin(build()).await?);
    }
    // Both read before the answer's own reads: a write that lands meanwhile makes the
    // answer one that is never served again.
    let generation = state
        .cache
        .generation_of(crate::cache::Scope::Space(space_id));
    let version = self::version(state, space_id, listing).await?;
    let now = state.clock.now_ms();
    if let Some(body) = state.cache.listing(space_id, &key, version, now) {
        return Ok(body);
    }
    // Built from the database rather than from cached lookups, so that what it shows is no
    // older than the entry's own lifetime.
    let body = serialize(&crate::cache::bypassed(Box::pin(build())).await?)?;
    state
        .cache
        .put_listing(key, version, body.clone(), now, generation);
    Ok(body)
}

/// The space's `listing` version, as a read made after this call would find it. On SQLite,
/// a version read since the database's last commit is still the version (nothing was
/// committed by any connection since: [`crate::db::Db::stamp`]), which costs no read at
/// all while no writes come. Otherwise the listings asking at once share reads
/// (`cache::Rounds`): one per space at a time instead of one each. On PostgreSQL each read
/// is a round trip; on SQLite, read on the request's thread, each took its own read
/// transaction and file locks, about a fifth of a cached listing's time.
pub async fn version(state: &AppState, space_id: &str, listing: Listing) -> ApiResult<i64> {
    // The versions of one space are told apart by their keys' ends.
    let comments_key;
    let key = match listing {
        Listing::ChangeRequests => space_id,
        Listing::Comments => {
            comments_key = format!("{space_id}\ncomments");
            &comments_key
        }
    };
    // Taken before the read, so that the version read is no older than the stamp.
    let stamp = state.db.stamp();
    if let Some(version) = stamp.and_then(|s| state.cache.stamped_versions.get(&s, key)) {
        return Ok(version);
    }
    // Others are served meanwhile: wait for them to join (see `cache::Rounds`).
    let gather = state.metrics.in_flight() > 1;
    let read = state.cache.listing_versions.read(key, gather, || {
        let (db, id) = (state.db.clone(), space_id.to_string());
        move || async move { store::spaces::listings_version(&db, &id, listing).await }
    });
    let version = read
        .await
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("reading a listing version: {e:#}")))?;
    if let Some(stamp) = stamp {
        state.cache.stamped_versions.put(stamp, key, version);
    }
    Ok(version)
}

/// The request's path and query, as a listing's key names them.
pub fn request_line(uri: &axum::http::Uri) -> &str {
    uri.path_and_query().map_or("/", |pq| pq.as_str())
}

fn serialize<T: Serialize>(value: &T) -> ApiResult<Bytes> {
    let mut buf = Vec::with_capacity(16 * 1024);
    serde_json::to_writer(&mut buf, value).map_err(ApiError::internal)?;
    Ok(Bytes::from(buf))
}
