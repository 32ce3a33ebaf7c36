//! Revisions as the server stores them: the content engine's objects in the database,
//! with bounded caches of objects and decoded revisions. Both are immutable (named by their
//! content), so the caches never need invalidating, on one node or many.
//! Engine work (encode, decode, apply, merge) runs on the blocking pool, off the request
//! threads.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use quire_content::model::Revision;
use quire_content::store::{self as objects, ObjectHash};

use serde_json::value::RawValue;

use crate::db::Tx;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::revisions::RevisionRow;

/// The content of a revision of `space_id`: as [`load`], and every object walked is then
/// known to be stored for that space (so that later saves skip it).
pub async fn load_in(state: &AppState, space_id: &str, root: &str) -> ApiResult<Arc<Revision>> {
    load_walk(state, None, Some(space_id), root).await
}

/// The content of the revision whose root object is `root` (empty root: empty content).
pub async fn load(state: &AppState, root: &str) -> ApiResult<Arc<Revision>> {
    load_walk(state, None, None, root).await
}

/// As [`load`], reading through `tx`: a transaction holding locks reads on its own
/// connection, never waiting for another from the pool while others wait for it.
pub async fn load_tx(state: &AppState, tx: &mut Tx, root: &str) -> ApiResult<Arc<Revision>> {
    load_walk(state, Some(tx), None, root).await
}

async fn load_walk(
    state: &AppState,
    mut tx: Option<&mut Tx>,
    space_id: Option<&str>,
    root: &str,
) -> ApiResult<Arc<Revision>> {
    if root.is_empty() {
        return Ok(Arc::new(Revision::default()));
    }
    if let Some(rev) = state.content.revisions.get(root) {
        return Ok(rev);
    }
    let root_hash = ObjectHash::from_hex(root)
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("stored root `{root}` is not a hash")))?;
    // Walk the object graph level by level: one query per level for what is not cached.
    let mut collected: HashMap<ObjectHash, Arc<Vec<u8>>> = HashMap::new();
    let mut seen: HashSet<ObjectHash> = HashSet::from([root_hash]);
    let mut frontier = vec![root_hash];
    while !frontier.is_empty() {
        // Take what the cache holds now, and keep what is fetched in hand: the cache may
        // evict or refuse an entry at any moment (a revision larger than the cache).
        let level: Vec<(ObjectHash, Option<Arc<Vec<u8>>>)> = frontier
            .iter()
            .map(|h| (*h, state.content.objects.get(h)))
            .collect();
        let missing: Vec<String> = level
            .iter()
            .filter(|(_, cached)| cached.is_none())
            .map(|(h, _)| h.to_hex())
            .collect();
        let mut fetched: HashMap<ObjectHash, Arc<Vec<u8>>> = HashMap::new();
        if !missing.is_empty() {
            let found = match tx.as_deref_mut() {
                Some(tx) => store::objects::get_many_tx(tx, &missing).await?,
                None => store::objects::get_many(&state.db, &missing).await?,
            };
            for (hash, data) in found {
                if let Some(h) = ObjectHash::from_hex(&hash) {
                    let data = Arc::new(data);
                    state.content.objects.insert(h, data.clone());
                    fetched.insert(h, data);
                }
            }
        }
        let mut next = Vec::new();
        for (h, cached) in level {
            let bytes = cached.or_else(|| fetched.remove(&h)).ok_or_else(|| {
                ApiError::internal(anyhow::anyhow!("content object {h} is missing"))
            })?;
            for r in objects::references(&bytes).map_err(ApiError::internal)? {
                if seen.insert(r) {
                    next.push(r);
                }
            }
            if let Some(space) = space_id {
                state.content.stored.insert((space.to_string(), h), ());
            }
            collected.insert(h, bytes);
        }
        frontier = next;
    }
    let rev = tokio::task::spawn_blocking(move || {
        objects::decode(&root_hash, |h| collected.get(h).map(|b| b.as_ref().clone()))
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    let rev = Arc::new(rev);
    state
        .content
        .revisions
        .insert(root.to_string(), rev.clone());
    Ok(rev)
}

/// Objects written by a transaction, to remember once it has committed.
pub struct Saved {
    space_id: String,
    /// Root hash of the saved revision.
    pub root: String,
    objects: Vec<(ObjectHash, Vec<u8>)>,
    revision: Arc<Revision>,
    /// Bytes of the objects this save wrote.
    pub new_bytes: usize,
}

/// Encodes `rev` as content of `space_id` and writes the objects that space lacks, inside `tx`.
pub async fn save(
    state: &AppState,
    tx: &mut Tx,
    space_id: &str,
    rev: Revision,
) -> ApiResult<Saved> {
    let stored = state.content.stored.clone();
    let space = space_id.to_string();
    let (encoded, rev) = tokio::task::spawn_blocking(move || {
        // Only objects reachable through missing ones are asked about: a space's table always
        // holds everything its stored objects refer to (they are written together).
        let encoded = objects::encode_missing(&rev, |h| stored.contains_key(&(space.clone(), *h)));
        (encoded, rev)
    })
    .await
    .map_err(ApiError::internal)?;
    let rows: Vec<(String, Vec<u8>)> = encoded
        .objects
        .iter()
        .map(|(h, b)| (h.to_hex(), b.clone()))
        .collect();
    store::objects::put_many(tx, space_id, &rows).await?;
    Ok(Saved {
        space_id: space_id.to_string(),
        root: encoded.root.to_hex(),
        objects: encoded.objects,
        revision: Arc::new(rev),
        new_bytes: encoded.new_bytes,
    })
}

impl Saved {
    /// The saved content.
    pub fn revision(&self) -> &Arc<Revision> {
        &self.revision
    }
}

/// After the transaction of a [`save`] committed: its objects are known to exist.
pub fn remember(state: &AppState, saved: Saved) {
    for (h, bytes) in saved.objects {
        state.content.stored.insert((saved.space_id.clone(), h), ());
        state.content.objects.insert(h, Arc::new(bytes));
    }
    state.content.revisions.insert(saved.root, saved.revision);
}

/// The page tree of a revision of `space_id` as serialised JSON (an array), built by
/// `render` on first use: a revision never changes, and the tree holds no expiring URLs.
pub fn listing(
    state: &AppState,
    space_id: &str,
    root: &str,
    render: impl FnOnce() -> serde_json::Value,
) -> ApiResult<Arc<RawValue>> {
    let key = format!("{space_id}:{root}");
    if let Some(raw) = state.content.listings.get(&key) {
        return Ok(raw);
    }
    let raw: Arc<RawValue> = serde_json::value::to_raw_value(&render())
        .map_err(ApiError::internal)?
        .into();
    state.content.listings.insert(key, raw.clone());
    Ok(raw)
}

/// A serialised body of one page of a revision (`key` names the revision, the page and the
/// format), built by `render` on first use. Errors are not kept.
pub fn page_body(
    state: &AppState,
    key: String,
    render: impl FnOnce() -> ApiResult<serde_json::Value>,
) -> ApiResult<bytes::Bytes> {
    if let Some(bytes) = state.content.pages.get(&key) {
        return Ok(bytes);
    }
    let bytes = bytes::Bytes::from(serde_json::to_vec(&render()?).map_err(ApiError::internal)?);
    state.content.pages.insert(key, bytes.clone());
    Ok(bytes)
}

/// A revision's row, from the cache of immutable rows when it is there.
pub async fn revision_row(
    state: &AppState,
    space_id: &str,
    revision_id: &str,
) -> ApiResult<Option<Arc<RevisionRow>>> {
    let key = (space_id.to_string(), revision_id.to_string());
    if let Some(row) = state.content.revision_rows.get(&key) {
        return Ok(Some(row));
    }
    let Some(row) = store::revisions::get(&state.db, space_id, revision_id).await? else {
        return Ok(None);
    };
    let row = Arc::new(row);
    state.content.revision_rows.insert(key, row.clone());
    Ok(Some(row))
}
