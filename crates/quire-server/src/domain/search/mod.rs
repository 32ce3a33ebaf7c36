//! Full-text search over the current content of spaces (`searchSpaceContent`,
//! `searchOrganizationContent`).
//!
//! # Storage: a portable inverted index in ordinary tables, ranked in Rust
//!
//! The index lives in ordinary tables (`search_spaces`, `search_pages`, `search_sections`,
//! `search_postings`, `search_terms`, `search_words` from migration 5; `search_delta` and
//! `search_dead` for updates; `search_manifests` from migration 40),
//! written and read with the same SQL on SQLite and PostgreSQL. Ranking (BM25F), stemming,
//! phrase, prefix and typo matching are computed in Rust, so both databases give the same
//! answers, and every server node sharing a PostgreSQL database sees the same index.
//!
//! Why not the engines' own full-text search: SQLite FTS5 and PostgreSQL `tsvector` differ in
//! tokenisation, stemming (FTS5 ships Porter for English only; PostgreSQL has its own
//! dictionaries) and ranking (`bm25()` versus `ts_rank`, which is not BM25), and neither
//! offers typo tolerance, so results would differ by database.
//!
//! Why not tantivy, measured side by side (`bench/search_relevance.py`, BENCHMARKS.md):
//! on the same pages and judged questions this ranking finds the answering page more often
//! than tantivy's BM25 with the same field boosts, on both corpora and both query sets; its
//! latency is within the target on 10,000 pages; and its index is rows in the database that
//! every node shares, kept current inside the merge's transaction, where tantivy's is files
//! each node would build and keep in step with every space's revision on its own. What
//! tantivy would bring (its analysis and BM25) is what this module already does, so the
//! index stays in tables.
//!
//! # Model
//!
//! - A *page* is the unit of ranking; it has fields title, headings and body, and is split
//!   into *sections* at its headings (`quire_content::sections`), which results show.
//! - Words are analysed per the space's `language` (see [`analyze`]): Snowball stems for
//!   the languages `rust-stemmers` has (English by default), stop words for the common ones.
//!   CJK text (Han, kana, Hangul), whose words no space separates, is indexed as overlapping
//!   character bigrams in every language (a space left in English may hold Japanese; no
//!   dictionary needed); Japanese, Chinese and Korean spaces get no stemming of their other
//!   words. A query's CJK run typed as one word is a phrase of its bigrams, loosened into
//!   separate words when nothing holds it as typed.
//! - Postings hold, for each term and block of 64 page keys, every page's field lengths and
//!   the word positions of the term in the title and in each section's heading and body,
//!   and how many of the body's are in code samples ([`codec`]). Reading a term costs one
//!   row per block; positions answer phrases (stop words are indexed for that purpose
//!   only).
//! - `search_terms` holds document frequencies (for choosing completions and corrections;
//!   ranking counts them exactly from the postings it reads); `search_words` maps surface
//!   words to terms, for prefix (a range scan) and typo (one-edit neighbours) look-ups.
//!
//! # Ranking
//!
//! BM25F over title (weight 5), headings (2) and body (1; a word in a code sample a
//! quarter of one in prose), each query word counting with
//! its best candidate term (itself 1; a completion of the word being typed 0.9 times the
//! share of it typed, so that a last word of two letters does not pull in every word it
//! starts; a one-typo neighbour of a word of five letters or more 0.7), scaled by the share
//! of query words the page matches, and by up to four times for a title that is what was
//! asked (the share of the query's words in the title times the share of the title's words
//! in the query, squared: a reader who types a page's title finds that page first, not the
//! parent whose body names it again and again), plus up to once more for a heading that
//! holds the query's words (the share it holds, squared; read for the best 100 pages): the
//! answer to a question is often one section of a longer page, under a heading in the
//! question's words. Quoted phrases must appear, words adjacent, in one field.
//!
//! These choices were measured on the judged questions of `bench/search/` (see
//! BENCHMARKS.md); so were three that did not help and are not used: scoring pages higher
//! whose query words share one section, weighing the share of query words matched by
//! their rarity, and leaving code out of the index entirely (it raised one corpus's MRR by
//! 0.01 and lowered the other's, an SDK's documentation, by 0.05, where counting code at a
//! quarter raised it by 0.02).
//!
//! # One search everywhere
//!
//! Every surface (the API's two searches, the app's search screens and quick find, a
//! published site's search page, API and MCP tool) accepts, parses and ranks through
//! [`ask`]: the same words over the same spaces give the same pages in the same order; a
//! site's visitor differs only by the text and pages their conditions hide.
//!
//! # Freshness
//!
//! The index follows each space's current revision: [`reindex`] runs inside the
//! transaction that moves the space (a merge), and touches only the pages whose text or
//! place changed. It finds them by comparing the new revision with the index's manifest
//! (`search_manifests`, one value per space: each page's key and 128-bit prints of its
//! title, description and body object, and of its slug under its ancestors' slugs and
//! titles), not with the revision the index was built on: reading and decoding that one
//! costs more than the update when it has left the cache. A changed page gets a new page
//! key; its postings go to a per-page delta (`search_delta`, one row per term) and its old
//! key is marked superseded (`search_dead`), so an update writes a few rows per term of
//! the changed pages and reads only the manifest and the changed pages' records. Once 64 pages have changed, a durable job ([`JOB`], [`maintain`]) folds the delta
//! into the blocks, eight pages per transaction, and brings document frequencies up to
//! date. A duplicated space copies its source's index ([`copy`]).
//!
//! A search first checks that each space's index is at its current revision and brings it
//! there if not (an index built before an upgrade, a language change, content moved by a
//! path that does not reindex). A space too large to index in a merge's transaction (first
//! indexing of more than 1,000 pages) is indexed by the job, or by the first search that
//! comes before it. Deleted spaces are filtered out at query time, so restoring one brings
//! it back as it was; purging a space removes its index by cascade.
//!
//! # Answering fast
//!
//! Ranking reads only postings: per page and term, field lengths, term frequencies and
//! word positions. Results come from the same postings (section scores, the phrase bonus,
//! where the matches are), and excerpts are cut from the section text at the indexed word
//! positions: nothing is analysed again at query time. Only the hits shown are sorted.
//!
//! Two per-node caches, which no change can leave in use:
//! - [`snapshot`] keeps what queries read of an index (postings, superseded pages,
//!   completions, corrections, page texts), named by the index's generation, which every
//!   write of the index bumps in its transaction; a search reads the generations first.
//! - [`results`] keeps whole answers, named by the spaces' revisions and analysis (as the
//!   request's space rows give them, the rows content reads use), the query and the page
//!   asked for: a repeated question costs no database round trip.

pub mod analyze;
pub mod ask;
pub mod codec;
pub mod index;
pub mod query;
pub mod results;
pub mod site;
pub mod snapshot;

pub use index::{reindex, Outcome};

/// Job kind that brings a space's index to its current revision (payload: the space id).
pub const JOB: &str = "search-index";

/// The job that builds a large space's index or folds changed pages into it.
pub const JOB_KIND: crate::state::JobKind = crate::state::JobKind {
    name: JOB,
    run: |state, job| Box::pin(async move { Ok(maintain(state, &job.payload).await?) }),
    given_up: None,
};

use crate::db::Tx;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;
use crate::store::search::SpaceState;

/// Gives a duplicated space (`to`, at `to_revision`, with the same content as `from` at
/// `from_revision`) a copy of the source's index, inside the duplicating transaction. When
/// the source's index is not at that revision, the copy is indexed on its first search.
pub async fn copy(
    state: &AppState,
    tx: &mut Tx,
    from: &str,
    from_revision: &str,
    to: &str,
    to_revision: &str,
) -> ApiResult<()> {
    store::search::copy(tx, from, from_revision, to, to_revision, state.now()).await?;
    Ok(())
}

fn is_stale(s: &SpaceState) -> bool {
    match &s.index {
        None => !s.root.is_empty(),
        Some(ix) => {
            ix.revision_id != s.revision_id
                || ix.analyzer != analyze::Analyzer::for_language(s.language.as_deref()).key()
        }
    }
}

/// Brings the index of one space to its current revision, in its own transaction (the
/// [`JOB`], and searches that find an index behind).
pub async fn sync(state: &AppState, space_id: &str) -> ApiResult<()> {
    // Load the content first, outside the transaction.
    let Some(space) = store::spaces::get(&state.db, space_id).await? else {
        return Ok(());
    };
    let Some(row) = store::revisions::get(&state.db, space_id, &space.revision_id).await? else {
        return Ok(());
    };
    let rev = crate::domain::content::load_in(state, space_id, &row.root).await?;
    // The space's current revision: its page tree serves first published pages after a restart.
    crate::domain::content::keep_tree(state, space_id, &row.root, &rev);
    let mut tx = state.db.begin().await?;
    tx.touches(&[]);
    match store::spaces::get_tx(&mut tx, space_id).await? {
        // Moved meanwhile: whoever moved it reindexed it.
        Some(now) if now.revision_id == space.revision_id => {
            index::reindex_with(state, &mut tx, space_id, &space.revision_id, &rev, true).await?;
            tx.commit().await?;
        }
        _ => {}
    }
    Ok(())
}

/// Pages folded per transaction by [`maintain`].
const FOLD_STEP: i64 = 8;

/// The [`JOB`]: brings a space's index to its current revision, then folds its delta into
/// its blocks, a few pages per transaction so that merges are never held up for long.
pub async fn maintain(state: &AppState, space_id: &str) -> ApiResult<()> {
    sync(state, space_id).await?;
    loop {
        let mut tx = state.db.begin().await?;
        tx.touches(&[]);
        let more = index::compact(state, &mut tx, space_id, FOLD_STEP).await?;
        tx.commit().await?;
        if !more {
            return Ok(());
        }
        tokio::task::yield_now().await;
    }
}

/// Whether the spaces of `states` are still as they were read: same revision, language,
/// title and index (none deleted). An answer computed from `states` is kept only then.
pub async fn unchanged(state: &AppState, states: &[SpaceState]) -> ApiResult<bool> {
    let ids: Vec<&str> = states.iter().map(|s| s.space_id.as_str()).collect();
    let now = store::search::states(&state.db, &ids).await?;
    let same = |a: &SpaceState, b: &SpaceState| {
        a.revision_id == b.revision_id
            && a.language == b.language
            && a.title == b.title
            && a.index.as_ref().map(|ix| (&ix.revision_id, &ix.analyzer))
                == b.index.as_ref().map(|ix| (&ix.revision_id, &ix.analyzer))
    };
    Ok(now.len() == states.len()
        && states.iter().all(|a| {
            now.iter()
                .find(|b| b.space_id == a.space_id)
                .is_some_and(|b| same(a, b))
        }))
}

/// The live spaces among `ids`, in the order of `ids`, each with an index at its current
/// revision (stale indexes are brought up to date first). The order is the one ranking
/// breaks ties in, so every search over the same spaces lists equal scores alike.
pub async fn fresh_states(state: &AppState, ids: &[&str]) -> ApiResult<Vec<SpaceState>> {
    let mut states = store::search::states(&state.db, ids).await?;
    let stale: Vec<String> = states
        .iter()
        .filter(|s| is_stale(s))
        .map(|s| s.space_id.clone())
        .collect();
    if !stale.is_empty() {
        for id in &stale {
            sync(state, id).await?;
        }
        let ids: Vec<&str> = stale.iter().map(String::as_str).collect();
        let again = store::search::states(&state.db, &ids).await?;
        states.retain(|s| !stale.contains(&s.space_id));
        states.extend(again);
    }
    let order: std::collections::HashMap<&str, usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    states.sort_by_key(|s| {
        order
            .get(s.space_id.as_str())
            .copied()
            .unwrap_or(usize::MAX)
    });
    Ok(states)
}
