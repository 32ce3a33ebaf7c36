//! Keeping a space's index on its current revision: incremental updates (only the pages
//! whose text or place changed) inside the transaction that moves the space, and full
//! builds when no usable index exists.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use quire_content::model::{Page, PageKind, Revision};

use siphasher::sip128::{Hasher128, SipHasher13};
use std::hash::Hasher;

use super::analyze::{indexable, indexable_pages, page_doc, Analyzer, PageDoc, PageRef, Tree};
use super::codec::{self, block_of, Source};
use crate::db::Tx;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::search::{IndexRow, NewPage, StoredPage};

/// Maps keyed by page id, over every page of a space on each update, hash with foldhash
/// (randomly seeded per map), several times faster than the default SipHash.
type FastHash = foldhash::fast::RandomState;

/// Above this many changed pages (and a quarter of the space), a full build is cheaper.
const INCREMENTAL_MAX: usize = 500;
/// Changed pages after which the delta is folded into the blocks (by the job).
const COMPACT_AT: i64 = 64;
/// A full build of more pages than this does not run inside the transaction of a merge:
/// a durable job does it (and a search that comes first does it itself).
const FULL_INLINE_MAX: usize = 1000;

/// What an update did, for logs and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// `unchanged`, `incremental`, `full`, or `deferred` (to a job).
    pub kind: &'static str,
    /// Pages (re)analysed.
    pub analysed: usize,
    /// Pages removed from the index.
    pub removed: usize,
    /// Pages whose place alone changed.
    pub moved: usize,
}

/// Brings the index of `space_id` to `revision_id` (whose content is `rev`) inside `tx`.
/// From the revision the index holds, only changed pages are rewritten; without a usable
/// index (none yet, another analysis, a vanished revision) the whole space is indexed,
/// here for small spaces and by a durable job ([`super::JOB`]) for large ones.
pub async fn reindex(
    state: &AppState,
    tx: &mut Tx,
    space_id: &str,
    revision_id: &str,
    rev: &Arc<Revision>,
) -> ApiResult<Outcome> {
    reindex_with(state, tx, space_id, revision_id, rev, false).await
}

/// As [`reindex`]; `inline` runs full builds of any size here.
pub async fn reindex_with(
    state: &AppState,
    tx: &mut Tx,
    space_id: &str,
    revision_id: &str,
    rev: &Arc<Revision>,
    inline: bool,
) -> ApiResult<Outcome> {
    let started = Instant::now();
    let space = store::spaces::get_tx(tx, space_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Space not found."))?;
    let language = space.language.clone();
    let analyzer_key = Analyzer::for_language(language.as_deref()).key();
    let current = store::search::lock_index(tx, space_id).await?;
    let outcome = match current {
        Some(ix) if ix.revision_id == revision_id && ix.analyzer == analyzer_key => Outcome {
            kind: "unchanged",
            ..Outcome::default()
        },
        Some(ix) if ix.analyzer == analyzer_key => {
            match incremental(state, tx, ix, revision_id, language.clone(), rev).await? {
                Some(outcome) => outcome,
                None => full(state, tx, space_id, revision_id, language, rev, inline).await?,
            }
        }
        _ => full(state, tx, space_id, revision_id, language, rev, inline).await?,
    };
    tracing::debug!(
        space = %space_id,
        kind = outcome.kind,
        analysed = outcome.analysed,
        removed = outcome.removed,
        moved = outcome.moved,
        "search index updated in {:.1} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    Ok(outcome)
}

/// The prints of the indexable pages of `tree`, in its order: `(id, text, place)`. The
/// text print covers what a page is analysed from (title, description, body object); the
/// place print covers its slug and its ancestors' slugs and titles (its path and
/// ancestors in results). 128-bit SipHash: stable across builds and nodes, and an
/// accidental collision (which would leave a page's entry as it was) is beyond reach.
fn prints<'a>(tree: &Tree<'a>) -> Vec<(&'a str, u128, u128)> {
    fn hash(parts: &[&[u8]]) -> u128 {
        let mut h = SipHasher13::new();
        for p in parts {
            // Length-prefixed, so that no part can run into the next.
            h.write(&(p.len() as u64).to_le_bytes());
            h.write(p);
        }
        h.finish128().as_u128()
    }
    // Per page, the print of the chain of slugs and titles down to it (parents first).
    let mut chain: HashMap<&str, u128, FastHash> =
        HashMap::with_capacity_and_hasher(tree.order.len(), FastHash::default());
    let mut out = Vec::with_capacity(tree.order.len());
    for id in &tree.order {
        let node = tree.nodes[id];
        let above = node.parent.and_then(|p| chain.get(p)).copied().unwrap_or(0);
        let page = node.page;
        let place = hash(&[&above.to_le_bytes(), page.slug.as_bytes()]);
        chain.insert(id, hash(&[&place.to_le_bytes(), page.title.as_bytes()]));
        if let (true, PageKind::Document(doc)) = (indexable(page), &page.kind) {
            let description = page.description.as_deref().unwrap_or("");
            let body = quire_content::store::body_hash(doc);
            let text = hash(&[page.title.as_bytes(), description.as_bytes(), &body.0]);
            out.push((*id, text, place));
        }
    }
    out
}

/// Writes the manifest of the pages `prints`, each under the key `key_of` gives it.
async fn write_manifest(
    tx: &mut Tx,
    space_id: &str,
    prints: &[(&str, u128, u128)],
    key_of: impl Fn(&str) -> Option<i64>,
) -> ApiResult<()> {
    let pages: Vec<(&str, Source)> = prints
        .iter()
        .filter_map(|(id, text, place)| {
            let key = key_of(id)?;
            Some((
                *id,
                Source {
                    key,
                    text: *text,
                    place: *place,
                },
            ))
        })
        .collect();
    let data = codec::encode_manifest(pages.into_iter());
    store::search::put_manifest(tx, space_id, &data).await?;
    Ok(())
}

/// An owned page to analyse off the request threads.
struct Job {
    page: Page,
    path: String,
    ancestors: Vec<String>,
}

fn job(r: &PageRef<'_>) -> Job {
    Job {
        page: r.page.without_children(),
        path: r.path.clone(),
        ancestors: r.ancestors.clone(),
    }
}

async fn analyse(language: Option<String>, jobs: Vec<Job>) -> ApiResult<Vec<PageDoc>> {
    // A few pages are analysed in place; a trip to the blocking pool costs more.
    let inline = jobs.len() <= 16;
    let run = move || {
        let analyzer = Analyzer::for_language(language.as_deref());
        jobs.into_iter()
            .map(|j| page_doc(&analyzer, &j.page, &j.path, j.ancestors))
            .collect::<Vec<_>>()
    };
    if inline {
        return Ok(run());
    }
    tokio::task::spawn_blocking(run)
        .await
        .map_err(ApiError::internal)
}

fn ancestors_json(ancestors: &[String]) -> String {
    serde_json::to_string(ancestors).unwrap_or_else(|_| "[]".into())
}

fn terms_text(doc: &PageDoc) -> String {
    let mut out = String::new();
    for t in doc.terms.keys() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

fn new_page(key: i64, doc: &PageDoc) -> NewPage<'_> {
    NewPage {
        page_key: key,
        page_id: &doc.page_id,
        title: &doc.title,
        description: &doc.description,
        path: &doc.path,
        ancestors: ancestors_json(&doc.ancestors),
        terms: terms_text(doc),
        title_len: i64::from(doc.title_len),
        head_len: i64::from(doc.head_len),
        body_len: i64::from(doc.body_len),
        sections: doc
            .sections
            .iter()
            .map(|s| {
                let guard = if s.guard.is_empty() {
                    String::new()
                } else {
                    serde_json::to_string(&s.guard).unwrap_or_default()
                };
                (s.anchor.as_str(), s.title.as_str(), s.body.as_str(), guard)
            })
            .collect(),
    }
}

/// Brings the index `ix` to the revision `new` by rewriting only the pages whose text
/// changed and moving those whose place alone did, comparing `new` with what the index
/// records of each page (not with the revision it was built on, which may be costly to
/// read). `None` when a full build is due instead.
async fn incremental(
    state: &AppState,
    tx: &mut Tx,
    mut ix: IndexRow,
    revision_id: &str,
    language: Option<String>,
    new: &Revision,
) -> ApiResult<Option<Outcome>> {
    let space_id = ix.space_id.clone();
    let manifest = store::search::manifest(tx, &space_id).await?;
    // An index built before manifests were kept, or a corrupt one: rebuild it.
    let Some(mut was) = manifest.as_deref().and_then(codec::decode_manifest) else {
        return Ok(None);
    };
    let new = Tree::of(new);
    let prints = prints(&new);
    let mut changed: Vec<&str> = Vec::new();
    let mut added: Vec<&str> = Vec::new();
    let mut moved: Vec<(&str, i64)> = Vec::new();
    // The key of each page in the new manifest: kept for the pages not rewritten.
    let mut keys: HashMap<&str, i64, FastHash> =
        HashMap::with_capacity_and_hasher(prints.len(), FastHash::default());
    for (id, text, place) in &prints {
        match was.remove(*id) {
            None => added.push(id),
            Some(old) if old.text != *text => changed.push(id),
            Some(old) => {
                if old.place != *place {
                    moved.push((id, old.key));
                }
                keys.insert(id, old.key);
            }
        }
    }
    // What the index holds and the revision no longer does (or no longer indexes).
    let mut removed: Vec<&str> = was.into_keys().collect();
    // Page keys are given in id order, as a full build gives them.
    removed.sort_unstable();
    changed.sort_unstable();
    added.sort_unstable();
    let work = removed.len() + changed.len() + added.len();
    if work > INCREMENTAL_MAX && work * 4 > prints.len() {
        return Ok(None);
    }
    let lookup: Vec<&str> = removed.iter().chain(&changed).copied().collect();
    let stored: HashMap<String, StoredPage> = store::search::pages_by_id(tx, &space_id, &lookup)
        .await?
        .into_iter()
        .map(|p| (p.page_id.clone(), p))
        .collect();
    if stored.len() != lookup.len() {
        // The index lost track of some page: rebuild it rather than guess.
        return Ok(None);
    }
    let jobs: Vec<Job> = changed
        .iter()
        .chain(&added)
        .filter_map(|id| new.page_ref(id))
        .map(|r| job(&r))
        .collect();
    let docs = analyse(language, jobs).await?;
    let pending_before = ix.pending;

    // The old versions of removed and changed pages go: from the delta when they are
    // there, otherwise they are marked superseded in the blocks (until a compaction).
    let mut dead: Vec<(i64, &str)> = Vec::new();
    let mut drop_keys: Vec<i64> = Vec::new();
    for id in &lookup {
        let s = &stored[*id];
        if s.page_key >= ix.delta_from {
            store::search::delete_delta(tx, &space_id, s.page_key, s.page_key + 1).await?;
        } else {
            dead.push((s.page_key, &s.terms));
            ix.pending += 1;
        }
        drop_keys.push(s.page_key);
        ix.pages -= 1;
        ix.title_len -= s.title_len;
        ix.head_len -= s.head_len;
        ix.body_len -= s.body_len;
    }
    store::search::insert_dead(tx, &space_id, &dead).await?;

    // New versions of changed pages, and added pages, take new keys in the delta.
    let mut keyed: Vec<(i64, &PageDoc)> = Vec::with_capacity(docs.len());
    let mut entries: Vec<(&str, i64, Vec<u8>)> = Vec::new();
    for doc in &docs {
        let key = ix.next_key;
        ix.next_key += 1;
        ix.pending += 1;
        for (t, hits) in &doc.terms {
            entries.push((t, key, codec::entry(doc, hits)));
        }
        ix.pages += 1;
        ix.title_len += i64::from(doc.title_len);
        ix.head_len += i64::from(doc.head_len);
        ix.body_len += i64::from(doc.body_len);
        keyed.push((key, doc));
    }
    let rows: Vec<(&str, i64, &[u8])> = entries
        .iter()
        .map(|(t, k, e)| (*t, *k, e.as_slice()))
        .collect();
    store::search::insert_delta(tx, &space_id, &rows).await?;

    // Page and section records.
    store::search::delete_pages(tx, &space_id, &drop_keys).await?;
    let pages: Vec<NewPage> = keyed.iter().map(|(k, d)| new_page(*k, d)).collect();
    store::search::insert_pages(tx, &space_id, &pages).await?;
    for (id, key) in &moved {
        let Some(place) = new.page_ref(id) else {
            continue;
        };
        let ancestors = ancestors_json(&place.ancestors);
        store::search::update_page_place(tx, &space_id, *key, &place.path, &ancestors).await?;
    }

    // The word dictionary only grows; words no page holds any more lead to no postings.
    let mut words: BTreeMap<&str, &str> = BTreeMap::new();
    for doc in &docs {
        for (w, t) in &doc.words {
            words.insert(w, t);
        }
    }
    let words: Vec<(&str, &str)> = words.into_iter().collect();
    store::search::insert_words(tx, &space_id, &words, false).await?;

    for (key, doc) in &keyed {
        keys.insert(doc.page_id.as_str(), *key);
    }
    write_manifest(tx, &space_id, &prints, |id| keys.get(id).copied()).await?;

    ix.revision_id = revision_id.to_string();
    store::search::put_index(tx, &ix, state.now()).await?;
    if pending_before < COMPACT_AT && ix.pending >= COMPACT_AT {
        let now = state.now();
        store::jobs::enqueue(tx, super::JOB, &space_id, now, now).await?;
    }
    Ok(Some(Outcome {
        kind: "incremental",
        analysed: docs.len(),
        removed: removed.len(),
        moved: moved.len(),
    }))
}

/// One step of folding a space's delta into its blocks, in `tx`: the entries of up to
/// `max_pages` superseded pages leave the blocks, and the delta postings of up to
/// `max_pages` page keys move into them; document frequencies follow. Small steps keep
/// each transaction short. Returns whether more remains to fold.
pub async fn compact(
    state: &AppState,
    tx: &mut Tx,
    space_id: &str,
    max_pages: i64,
) -> ApiResult<bool> {
    let Some(mut ix) = store::search::lock_index(tx, space_id).await? else {
        return Ok(false);
    };
    let dead = store::search::some_dead(tx, space_id, max_pages).await?;
    let fold_to = ix.next_key.min(ix.delta_from + max_pages);
    let delta = store::search::delta_range(tx, space_id, ix.delta_from, fold_to).await?;
    let mut blocks: BTreeMap<i64, BlockWork<'_>> = BTreeMap::new();
    let mut df: BTreeMap<&str, i64> = BTreeMap::new();
    for (key, terms) in &dead {
        let w = blocks.entry(block_of(*key)).or_default();
        w.dirty.insert(*key);
        for t in terms.split(' ').filter(|t| !t.is_empty()) {
            w.terms.insert(t);
            *df.entry(t).or_default() -= 1;
        }
    }
    for (term, key, data) in &delta {
        let w = blocks.entry(block_of(*key)).or_default();
        w.terms.insert(term);
        w.entries.entry(term).or_default().push((*key, data));
        *df.entry(term).or_default() += 1;
    }
    rewrite_blocks(tx, space_id, &blocks).await?;
    let deltas: Vec<(&str, i64)> = df
        .iter()
        .filter(|(_, d)| **d != 0)
        .map(|(t, d)| (*t, *d))
        .collect();
    store::search::add_df(tx, space_id, &deltas).await?;
    let fallen: Vec<&str> = deltas
        .iter()
        .filter(|(_, d)| *d < 0)
        .map(|(t, _)| *t)
        .collect();
    store::search::prune_df(tx, space_id, &fallen).await?;
    let dead_keys: Vec<i64> = dead.iter().map(|(k, _)| *k).collect();
    store::search::delete_dead(tx, space_id, &dead_keys).await?;
    store::search::delete_delta(tx, space_id, ix.delta_from, fold_to).await?;
    let folded = dead.len() as i64 + (fold_to - ix.delta_from);
    ix.delta_from = fold_to;
    let more = (dead.len() as i64) == max_pages || ix.delta_from < ix.next_key;
    ix.pending = if more {
        (ix.pending - folded).max(1)
    } else {
        0
    };
    store::search::put_index(tx, &ix, state.now()).await?;
    Ok(more)
}

/// Changes to one block of postings: entries of `dirty` pages go, `entries` come in.
#[derive(Default)]
struct BlockWork<'a> {
    dirty: HashSet<i64>,
    terms: BTreeSet<&'a str>,
    entries: BTreeMap<&'a str, Vec<(i64, &'a [u8])>>,
}

/// Rewrites the posting blocks of each block's terms (read, drop, add, write back).
async fn rewrite_blocks(
    tx: &mut Tx,
    space_id: &str,
    blocks: &BTreeMap<i64, BlockWork<'_>>,
) -> ApiResult<()> {
    for (block, w) in blocks {
        let terms: Vec<&str> = w.terms.iter().copied().collect();
        let existing: HashMap<String, Vec<u8>> =
            store::search::blocks(tx, space_id, *block, &terms)
                .await?
                .into_iter()
                .collect();
        let mut put: Vec<(&str, i64, Vec<u8>)> = Vec::new();
        let mut gone: Vec<&str> = Vec::new();
        for t in &terms {
            let mut items: Vec<(i64, &[u8])> = existing
                .get(*t)
                .map(|data| {
                    codec::entries(data)
                        .filter(|(k, _)| !w.dirty.contains(k))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(new) = w.entries.get(t) {
                items.extend(new.iter().copied());
                items.sort_by_key(|(k, _)| *k);
                items.dedup_by_key(|(k, _)| *k);
            }
            if items.is_empty() {
                if existing.contains_key(*t) {
                    gone.push(t);
                }
            } else {
                put.push((t, *block, codec::encode_block(items)));
            }
        }
        if !gone.is_empty() {
            store::search::delete_blocks(tx, space_id, *block, &gone).await?;
        }
        let rows: Vec<(&str, i64, &[u8])> =
            put.iter().map(|(t, b, d)| (*t, *b, d.as_slice())).collect();
        store::search::put_blocks(tx, space_id, &rows, true).await?;
    }
    Ok(())
}

async fn full(
    state: &AppState,
    tx: &mut Tx,
    space_id: &str,
    revision_id: &str,
    language: Option<String>,
    rev: &Revision,
    inline: bool,
) -> ApiResult<Outcome> {
    // Every page's path and ancestors, built once for the size check and the analysis.
    let pages = indexable_pages(rev);
    if !inline && pages.len() > FULL_INLINE_MAX {
        let now = state.now();
        store::jobs::enqueue(tx, super::JOB, space_id, now, now).await?;
        return Ok(Outcome {
            kind: "deferred",
            ..Outcome::default()
        });
    }
    store::search::clear(tx, space_id).await?;
    let analyzer_key = Analyzer::for_language(language.as_deref()).key();
    let jobs: Vec<Job> = pages.values().map(job).collect();
    let docs = analyse(language, jobs).await?;
    let mut ix = IndexRow {
        space_id: space_id.to_string(),
        revision_id: revision_id.to_string(),
        analyzer: analyzer_key,
        pages: 0,
        title_len: 0,
        head_len: 0,
        body_len: 0,
        next_key: 0,
        delta_from: 0,
        pending: 0,
        // A new record starts at 0; an existing one is bumped by `put_index`.
        generation: 0,
    };
    // Blocks are built in page-key order, so entries are appended in order.
    let mut blocks: HashMap<(&str, i64), (i64, Vec<u8>)> = HashMap::new();
    let mut df: BTreeMap<&str, i64> = BTreeMap::new();
    let mut words: BTreeMap<&str, &str> = BTreeMap::new();
    let mut pages = Vec::with_capacity(docs.len());
    for doc in &docs {
        let key = ix.next_key;
        ix.next_key += 1;
        for (t, hits) in &doc.terms {
            let entry = codec::entry(doc, hits);
            let (last, buf) = blocks
                .entry((t.as_str(), block_of(key)))
                .or_insert_with(|| (0, Vec::new()));
            let mut one = codec::encode_block([(key - *last, entry.as_slice())]);
            buf.append(&mut one);
            *last = key;
            *df.entry(t).or_default() += 1;
        }
        for (w, t) in &doc.words {
            words.insert(w, t);
        }
        ix.pages += 1;
        ix.title_len += i64::from(doc.title_len);
        ix.head_len += i64::from(doc.head_len);
        ix.body_len += i64::from(doc.body_len);
        pages.push(new_page(key, doc));
    }
    let mut rows: Vec<(&str, i64, &[u8])> = blocks
        .iter()
        .map(|((t, b), (_, data))| (*t, *b, data.as_slice()))
        .collect();
    rows.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    store::search::put_blocks(tx, space_id, &rows, false).await?;
    let deltas: Vec<(&str, i64)> = df.into_iter().collect();
    store::search::add_df(tx, space_id, &deltas).await?;
    let words: Vec<(&str, &str)> = words.into_iter().collect();
    store::search::insert_words(tx, space_id, &words, true).await?;
    store::search::insert_pages(tx, space_id, &pages).await?;
    let keys: HashMap<&str, i64> = docs
        .iter()
        .zip(0..)
        .map(|(d, key)| (d.page_id.as_str(), key))
        .collect();
    write_manifest(tx, space_id, &prints(&Tree::of(rev)), |id| {
        keys.get(id).copied()
    })
    .await?;
    ix.delta_from = ix.next_key;
    store::search::put_index(tx, &ix, state.now()).await?;
    Ok(Outcome {
        kind: "full",
        analysed: docs.len(),
        removed: 0,
        moved: 0,
    })
}
