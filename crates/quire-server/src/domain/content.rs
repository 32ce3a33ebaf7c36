//! Revisions as the server stores them: the content engine's objects in the database,
//! with bounded caches of objects and decoded revisions. Both are immutable (named by their
//! content), so the caches never need invalidating, on one node or many.
//! Engine work (encode, decode, apply, merge) runs on the blocking pool, off the request
//! threads.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use quire_content::model::{Page, Revision};
use quire_content::store::{self as objects, ObjectHash};
use quire_content::tree_file;

use crate::cache;
use crate::db::Tx;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::revisions::RevisionRow;

/// The content of the revision of `space_id` whose root object is `root` (empty root: empty
/// content); every object walked is then known to be stored for that space (so that later
/// saves skip it).
pub async fn load_in(state: &AppState, space_id: &str, root: &str) -> ApiResult<Arc<Revision>> {
    load_walk(state, None, space_id, root).await
}

/// As [`load_in`], reading through `tx`: a transaction holding locks reads on its own
/// connection, never waiting for another from the pool while others wait for it.
pub async fn load_tx(
    state: &AppState,
    tx: &mut Tx,
    space_id: &str,
    root: &str,
) -> ApiResult<Arc<Revision>> {
    load_walk(state, Some(tx), space_id, root).await
}

/// The markdown of the body `document_id` names (a page's or a reusable content's body
/// object, as `documentId` gives it) if `space_id` stores it; `None` for any other id.
pub async fn document_markdown(
    state: &AppState,
    space_id: &str,
    document_id: &str,
) -> ApiResult<Option<String>> {
    // Only lower-case hex names an object: anything else is not one, without a query.
    let Some(hash) = ObjectHash::from_hex(document_id).filter(|h| h.to_hex() == document_id) else {
        return Ok(None);
    };
    let bytes = store::objects::get_in_space(&state.db, space_id, document_id).await?;
    Ok(bytes.and_then(|b| objects::body_text(&hash, &b)))
}

async fn load_walk(
    state: &AppState,
    tx: Option<&mut Tx>,
    space_id: &str,
    root: &str,
) -> ApiResult<Arc<Revision>> {
    if root.is_empty() {
        return Ok(Arc::new(Revision::default()));
    }
    if let Some(rev) = state.content.revisions.get(root) {
        return Ok(rev);
    }
    match tx {
        // A transaction reads on its own connection (see `load_tx`), never waiting for others.
        Some(tx) => walk(state, Some(tx), space_id, root).await,
        // A burst of first reads (after a restart) reads and decodes the revision once.
        None => {
            let work = || async {
                match state.content.revisions.get(root) {
                    Some(rev) => Ok(rev),
                    None => walk(state, None, space_id, root).await,
                }
            };
            state.content.loads.run(root, work).await
        }
    }
}

/// Reads every object of the revision `root` not cached, decodes it and caches it.
async fn walk(
    state: &AppState,
    tx: Option<&mut Tx>,
    space_id: &str,
    root: &str,
) -> ApiResult<Arc<Revision>> {
    let root_hash = root_hash(root)?;
    let collected = fetch(state, tx, space_id, true, root_hash, &objects::references).await?;
    state.content.count_decode(false);
    let rev = tokio::task::spawn_blocking(move || {
        objects::decode(&root_hash, |h| collected.get(h).map(|b| b.as_ref().clone()))
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    let rev = Arc::new(rev);
    state.content.keep_decoded(space_id, root, rev.clone());
    Ok(rev)
}

/// The revision `root`, decoded with what `decoded` kept from the revision decoded before
/// it (see [`objects::Decoded`]): a space's history decoded one revision after another
/// (its git commits) costs what changed between them. Taken from the revision cache when
/// it holds it (a revision just written), and not kept there otherwise.
pub async fn load_next(
    state: &AppState,
    space_id: &str,
    root: &str,
    decoded: objects::Decoded,
) -> ApiResult<(Arc<Revision>, objects::Decoded)> {
    if root.is_empty() {
        return Ok((Arc::new(Revision::default()), decoded));
    }
    if let Some(rev) = state.content.revisions.get(root) {
        return Ok((rev, decoded));
    }
    let root_hash = root_hash(root)?;
    let refs = |bytes: &[u8]| decoded.references(bytes);
    // A history walk notes nothing as stored: it would crowd out what saves ask about.
    let collected = fetch(state, None, space_id, false, root_hash, &refs).await?;
    let mut decoded = decoded;
    let (rev, decoded) = tokio::task::spawn_blocking(move || {
        let get = |h: &ObjectHash| collected.get(h).map(|b| b.as_ref().clone());
        let rev = objects::decode_with(&root_hash, get, &mut decoded);
        (rev, decoded)
    })
    .await
    .map_err(ApiError::internal)?;
    Ok((Arc::new(rev.map_err(ApiError::internal)?), decoded))
}

fn root_hash(root: &str) -> ApiResult<ObjectHash> {
    ObjectHash::from_hex(root)
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("stored root `{root}` is not a hash")))
}

/// What an object (its bytes) points to that a decoding will read.
type References<'a> = dyn Fn(&[u8]) -> Result<Vec<ObjectHash>, objects::StoreError> + Sync + 'a;

/// Reads the objects of the revision `root` of `space_id` that `refs` leads to (from the
/// object cache, else from the space's objects, one query per level of the graph); with
/// `note`, each is then known to be stored for the space.
async fn fetch(
    state: &AppState,
    mut tx: Option<&mut Tx>,
    space_id: &str,
    note: bool,
    root_hash: ObjectHash,
    refs: &References<'_>,
) -> ApiResult<HashMap<ObjectHash, Arc<Vec<u8>>>> {
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
                Some(tx) => store::objects::get_many_tx(tx, space_id, &missing).await?,
                None => store::objects::get_many(&state.db, space_id, &missing).await?,
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
            for r in refs(&bytes).map_err(ApiError::internal)? {
                if seen.insert(r) {
                    next.push(r);
                }
            }
            if note {
                state.content.stored.insert((space_id.to_string(), h), ());
            }
            collected.insert(h, bytes);
        }
        frontier = next;
    }
    Ok(collected)
}

/// Job kind that removes a space's derived bytes (stored page trees, page listings, PDFs)
/// that no longer serve it; enqueued each time the space moves to a new revision.
pub const PRUNE_JOB: &str = "prune-derived";

/// The job that removes what was derived from a space's earlier revisions.
pub const PRUNE_KIND: crate::state::JobKind = crate::state::JobKind {
    name: PRUNE_JOB,
    run: |state, job| Box::pin(async move { prune_derived(state, &job.payload).await.map(drop) }),
    given_up: None,
};

/// Derived bytes younger than this are kept whatever revision they belong to: change
/// requests and PDF links in use read them, and they cost only storage.
pub const DERIVED_GRACE_MS: i64 = 24 * 60 * 60 * 1000;

/// Moves a space to the revision `revision` if it is still at `expected` (see
/// [`store::revisions::advance_space`]), and schedules the pruning of what was derived
/// from its earlier revisions, in the same transaction.
pub async fn advance_space(
    tx: &mut Tx,
    space_id: &str,
    expected: &str,
    revision: &str,
    now: i64,
) -> sqlx::Result<bool> {
    if !store::revisions::advance_space(tx, space_id, expected, revision, now).await? {
        return Ok(false);
    }
    // One waiting pruning serves every move made before it runs.
    store::jobs::enqueue_once(tx, PRUNE_JOB, space_id, now, now).await?;
    Ok(true)
}

/// Removes the derived bytes of `space_id` older than [`DERIVED_GRACE_MS`], except the page
/// tree and listing of its current revision (which sites and first reads use); returns how
/// many were removed. Derived bytes can always be made again, so removing too much would
/// cost only work.
pub async fn prune_derived(state: &AppState, space_id: &str) -> anyhow::Result<usize> {
    let Some(space) = store::spaces::get(&state.db, space_id).await? else {
        return Ok(0);
    };
    let mut keep = Vec::new();
    if let Some(row) = revision_row(state, space_id, &space.revision_id).await? {
        keep.push(tree_name(space_id, &row.root));
        keep.push(listing_name(state, space_id, &row.root));
    }
    let before = state.now() - DERIVED_GRACE_MS;
    let removed = state.blobs.prune_derived(space_id, &keep, before).await?;
    if removed > 0 {
        tracing::info!(space = %space_id, removed, "pruned derived bytes of earlier revisions");
    }
    Ok(removed)
}

/// Bumped when the stored page tree's shape changes, so that an older build's is not read.
const TREE_FORMAT: u32 = 2;

/// The stored name of a revision's page tree.
fn tree_name(space_id: &str, root: &str) -> String {
    use sha2::Digest;
    let id = format!(
        "tree\n{TREE_FORMAT}\n{}\n{space_id}\n{root}",
        env!("CARGO_PKG_VERSION")
    );
    format!("tree-{}", hex::encode(sha2::Sha256::digest(id.as_bytes())))
}

/// Whether the revision whose root is `root` is decoded in this node's memory.
pub fn is_loaded(state: &AppState, root: &str) -> bool {
    root.is_empty() || state.content.revisions.contains_key(root)
}

/// Stores the page tree of a space's current or published revision beside the files, unless
/// this node did already: its pages with their properties and children but no bodies, its
/// files and reusable content (`quire_content::tree_file`). A first published page after a
/// restart reads that and one page's body (see [`stored_tree`]) instead of every page of the
/// revision.
pub fn keep_tree(state: &AppState, space_id: &str, root: &str, rev: &Arc<Revision>) {
    if root.is_empty() || !state.content.start_tree(root) {
        return;
    }
    let (state, space, root, rev) = (
        state.clone(),
        space_id.to_string(),
        root.to_string(),
        rev.clone(),
    );
    tokio::spawn(async move {
        let name = tree_name(&space, &root);
        if let Ok(Some(_)) = state.blobs.get_derived(&space, &name).await {
            return;
        }
        match tokio::task::spawn_blocking(move || tree_file::encode_tree(&rev)).await {
            Ok(Ok(bytes)) => {
                if let Err(err) = state.blobs.put_derived(&space, &name, bytes.into()).await {
                    tracing::warn!(error = %err, "page tree not stored");
                }
            }
            Ok(Err(err)) => tracing::warn!(error = %err, "page tree not serialised"),
            Err(err) => tracing::warn!(error = %err, "page tree not serialised"),
        }
    });
}

/// The page tree of a revision as [`keep_tree`] stored it (document bodies empty), or `None`
/// when it is not stored or cannot be read. Never to be cached or edited as the revision.
/// Visits that ask at the same time (a burst after a restart) share one reading, and the
/// tree is kept for a minute (`warm_trees`) for the visits that come while the revision
/// itself loads in the background.
pub async fn stored_tree(state: &AppState, space_id: &str, root: &str) -> Option<Arc<Revision>> {
    let key = format!("{space_id}:{root}");
    if let Some(tree) = state.content.warm_trees.get(&key) {
        return Some(tree);
    }
    let read = || async {
        let tree = read_tree(state, space_id, root).await;
        if let Some(tree) = &tree {
            state.content.warm_trees.insert(key.clone(), tree.clone());
        }
        Ok::<_, std::convert::Infallible>(tree)
    };
    match state.content.tree_reads.run(&key, read).await {
        Ok(tree) => tree,
        Err(never) => match never {},
    }
}

/// Reads and decodes the stored page tree, for [`stored_tree`].
async fn read_tree(state: &AppState, space_id: &str, root: &str) -> Option<Arc<Revision>> {
    let bytes = match state
        .blobs
        .get_derived(space_id, &tree_name(space_id, root))
        .await
    {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return None,
        Err(err) => {
            tracing::warn!(error = %err, "stored page tree unreadable");
            return None;
        }
    };
    state.content.count_decode(true);
    tokio::task::spawn_blocking(move || tree_file::decode_tree(&bytes).ok().map(Arc::new))
        .await
        .ok()
        .flatten()
}

/// One page of a revision of `space_id` with its body (not its children), read through the
/// revision's id index: a few objects instead of the whole revision.
pub async fn page_of(
    state: &AppState,
    space_id: &str,
    root: &str,
    page_id: &str,
) -> ApiResult<Option<Page>> {
    let root_hash = ObjectHash::from_hex(root)
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("stored root `{root}` is not a hash")))?;
    let mut fetched: HashMap<ObjectHash, Arc<Vec<u8>>> = HashMap::new();
    // Each pass reads what the walk reached and lacked: the index is a few levels deep.
    for _ in 0..16 {
        let get = |h: &ObjectHash| {
            fetched
                .get(h)
                .cloned()
                .or_else(|| state.content.objects.get(h))
                .map(|b| b.as_ref().clone())
        };
        match objects::load_page(&root_hash, page_id, get) {
            Ok(page) => return Ok(page),
            Err(objects::StoreError::Missing(h)) => {
                let found = store::objects::get_many(&state.db, space_id, &[h.to_hex()]).await?;
                let Some((_, data)) = found.into_iter().next() else {
                    return Err(ApiError::internal(anyhow::anyhow!(
                        "content object {h} is missing"
                    )));
                };
                let data = Arc::new(data);
                state.content.objects.insert(h, data.clone());
                fetched.insert(h, data);
            }
            Err(err) => return Err(ApiError::internal(err)),
        }
    }
    Err(ApiError::internal(anyhow::anyhow!(
        "the id index of {root} is deeper than expected"
    )))
}

/// A revision encoded as objects ([`encode`]): written inside a transaction ([`write`]),
/// remembered once that has committed ([`remember`]).
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
    let saved = encode(state, space_id, rev).await?;
    write(tx, &saved).await?;
    Ok(saved)
}

/// Encodes `rev` as content of `space_id`: the objects that space lacks, hashed off the async
/// workers. Writers call it before their transaction begins, so that the database's write
/// lock is not held while a whole revision is hashed; an object stored meanwhile by another
/// writer is written again harmlessly (objects are named by their hash).
pub async fn encode(state: &AppState, space_id: &str, rev: Revision) -> ApiResult<Saved> {
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
    Ok(Saved {
        space_id: space_id.to_string(),
        root: encoded.root.to_hex(),
        objects: encoded.objects,
        revision: Arc::new(rev),
        new_bytes: encoded.new_bytes,
    })
}

/// Writes the objects of an [`encode`] inside `tx`.
pub async fn write(tx: &mut Tx, saved: &Saved) -> ApiResult<()> {
    let rows: Vec<(String, &[u8])> = saved
        .objects
        .iter()
        .map(|(h, b)| (h.to_hex(), b.as_slice()))
        .collect();
    store::objects::put_many(tx, &saved.space_id, &rows).await?;
    Ok(())
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

/// Bumped whenever the rendering of page listings changes, so that listings stored by an
/// older build are never served.
const LISTING_FORMAT: u32 = 2;

/// The serialised page listing (`{"pages": [...]}`) of a revision of `space_id`, built by
/// `render` on first use. A revision never changes and a listing holds no expiring URLs, so
/// it is kept in memory and, for the first read after a restart (or on another node), in
/// the blob store beside the space's files.
pub async fn listing(
    state: &AppState,
    space_id: &str,
    root: &str,
    render: impl std::future::Future<Output = ApiResult<serde_json::Value>>,
) -> ApiResult<bytes::Bytes> {
    let key = format!("{space_id}:{root}");
    if let Some(bytes) = state.content.listings.get(&key) {
        return Ok(bytes);
    }
    let name = listing_name(state, space_id, root);
    match state.blobs.get_derived(space_id, &name).await {
        // A stored copy is checked once here, since its tree is later sent unparsed.
        Ok(Some(bytes)) if is_listing(&bytes) => {
            state.content.listings.insert(key, bytes.clone());
            return Ok(bytes);
        }
        Ok(Some(_)) => tracing::warn!("stored page listing malformed: rendering it again"),
        Ok(None) => {}
        // The stored copy only saves work: render instead.
        Err(err) => tracing::warn!(error = %err, "stored page listing unreadable"),
    }
    let bytes = bytes::Bytes::from(
        serde_json::to_vec(&serde_json::json!({ "pages": render.await? }))
            .map_err(ApiError::internal)?,
    );
    state.content.listings.insert(key, bytes.clone());
    let (blobs, space, stored) = (state.blobs.clone(), space_id.to_string(), bytes.clone());
    tokio::spawn(async move {
        if let Err(err) = blobs.put_derived(&space, &name, stored).await {
            tracing::warn!(error = %err, "page listing not stored");
        }
    });
    Ok(bytes)
}

/// The stored name of a listing: it depends on the revision, on the public URL (pages carry
/// their app URLs) and on the build's rendering.
fn listing_name(state: &AppState, space_id: &str, root: &str) -> String {
    use sha2::Digest;
    let id = format!(
        "listing\n{LISTING_FORMAT}\n{}\n{}\n{space_id}\n{root}",
        env!("CARGO_PKG_VERSION"),
        state.public_url
    );
    format!(
        "listing-{}",
        hex::encode(sha2::Sha256::digest(id.as_bytes()))
    )
}

/// The page tree inside a listing made by [`listing`], as raw JSON, without copying it.
/// Not parsed again: [`listing`] keeps only listings it rendered or checked.
pub fn page_tree(listing: &bytes::Bytes) -> ApiResult<bytes::Bytes> {
    const PREFIX: &[u8] = b"{\"pages\":";
    if listing.len() < PREFIX.len() + 1 || !listing.starts_with(PREFIX) || !listing.ends_with(b"}")
    {
        return Err(ApiError::internal(anyhow::anyhow!(
            "page listing of an unknown shape"
        )));
    }
    Ok(listing.slice(PREFIX.len()..listing.len() - 1))
}

/// Whether stored bytes are a listing as [`listing`] writes them: `{"pages": [...]}`.
fn is_listing(bytes: &bytes::Bytes) -> bool {
    page_tree(bytes)
        .is_ok_and(|tree| serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(&tree).is_ok())
}

/// A serialised body of one page of a revision (`key` names the revision, the page and the
/// format), built by `render` on first use. Errors are not kept.
pub async fn page_body(
    state: &AppState,
    key: &[&str],
    render: impl std::future::Future<Output = ApiResult<serde_json::Value>>,
) -> ApiResult<bytes::Bytes> {
    if let Some(bytes) = cache::with_parts(key, |k| state.content.pages.get(k)) {
        return Ok(bytes);
    }
    let bytes = bytes::Bytes::from(serde_json::to_vec(&render.await?).map_err(ApiError::internal)?);
    state.content.pages.insert(key.join("\n"), bytes.clone());
    Ok(bytes)
}

/// A revision's row, from the cache of immutable rows when it is there.
pub async fn revision_row(
    state: &AppState,
    space_id: &str,
    revision_id: &str,
) -> ApiResult<Option<Arc<RevisionRow>>> {
    if let Some(row) = cache::with_pair(space_id, revision_id, |k| {
        state.content.revision_rows.get(k)
    }) {
        return Ok(Some(row));
    }
    let Some(row) = store::revisions::get(&state.db, space_id, revision_id).await? else {
        return Ok(None);
    };
    let row = Arc::new(row);
    state
        .content
        .revision_rows
        .insert([space_id, revision_id].join("\n"), row.clone());
    Ok(Some(row))
}
