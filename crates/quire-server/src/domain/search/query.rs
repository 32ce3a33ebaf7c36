//! Answering a query: parsing (words, "phrases", the word being typed), candidate terms
//! (exact stems, completions of the last word, one-typo neighbours), BM25F ranking of pages,
//! phrase checks on the section text, and result sections with excerpts.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::analyze::{self, fold, is_cjk, Analyzer, SectionHits, TermHits};
use super::codec;
use super::snapshot;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;
use crate::store::search::{IndexRow, PageRow, SectionRow, SpaceState};

/// Longest accepted query, in characters (the official `maxLength`).
pub const MAX_QUERY_CHARS: usize = 512;

// BM25F: saturation, field weights and length normalisation per field. K1 above the
// textbook 1.2: on the judged questions of `bench/search/`, 2.0 ranked the answering page
// higher on both corpora (MRR +0.01 to +0.02), 0.9 lower.
const K1: f32 = 2.0;
const W_TITLE: f32 = 5.0;
const W_HEAD: f32 = 2.0;
const W_BODY: f32 = 1.0;
/// What a word in a code sample counts for, against one in prose. Measured on both
/// relevance corpora (natural questions, MRR): 1.0 gave 0.909 on the SDK's docs, 0.5 gave
/// 0.922, 0.25 gave 0.927; GitBook's docs were the same at each. Leaving code out of the
/// index entirely lost 0.05 there: an SDK's answers are in its code.
const CODE_WEIGHT: f32 = 0.25;

/// Occurrences in bodies, those in code samples counting [`CODE_WEIGHT`] each.
fn body_tf(e: &codec::Entry) -> f32 {
    e.body_tf as f32 - (1.0 - CODE_WEIGHT) * e.code_tf.min(e.body_tf) as f32
}
const B_TITLE: f32 = 0.3;
const B_HEAD: f32 = 0.4;
const B_BODY: f32 = 0.75;
/// How much a completion of the word being typed (times the share of it typed: `in` counts
/// little for `integration`, `integrat` nearly fully), or a one-typo neighbour, counts
/// against the word itself.
const PREFIX_WEIGHT: f32 = 0.9;
const TYPO_WEIGHT: f32 = 0.7;
/// How much more a page scores whose title is the query (a known item): `1 + TITLE_MATCH`
/// times, less as the title and the query differ.
const TITLE_MATCH: f32 = 3.0;
/// How much a heading that holds the query's words adds to a page's title factor
/// (`1 + TITLE_MATCH * title`): `HEADING_MATCH` when it holds them all, less as it holds
/// fewer. Added, not multiplied, so that a page titled as asked stays ahead of one that
/// only has a heading of those words.
const HEADING_MATCH: f32 = 1.0;
/// The best-scoring pages of a query, whose headings [`heading_match`] reads.
const HEADING_TOP: usize = 100;
/// Terms a completion or a typo may expand to (the most frequent ones).
const MAX_EXPANSIONS: usize = 8;
/// Dictionary words read per space for a completion.
const PREFIX_SCAN: i64 = 200;
/// Words shorter than this are not corrected.
const TYPO_MIN_CHARS: usize = 5;
/// Query words considered.
const MAX_WORDS: usize = 16;
// `rank` keeps the query words a title holds as the bits of a u16.
const _: () = assert!(MAX_WORDS <= 16);
/// Pages whose text is read at once to check phrases.
const PHRASE_BATCH: usize = 50;
/// Blocks per statement when reading stop words' postings for phrases.
const IN_CHUNK_BLOCKS: usize = 400;
/// Sections shown per page.
const MAX_SECTIONS: usize = 3;
/// Excerpt size, in words, and words shown before the first match.
const EXCERPT_WORDS: usize = 30;
const EXCERPT_LEAD: usize = 6;
const EXCERPT_MAX_CHARS: usize = 320;

/// A fast hash for the integer keys of pages (`(state index, page key)`), which the
/// server assigns: ranking looks one up per posting entry, where SipHash showed in profiles.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Fx {
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }
    fn write_i64(&mut self, x: i64) {
        self.add(x as u64);
    }
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }
}

type FxBuild = std::hash::BuildHasherDefault<Fx>;
/// Maps and sets keyed by page: `(state index, page key)`.
type PageMap<V> = HashMap<(usize, i64), V, FxBuild>;
type PageSet = HashSet<(usize, i64), FxBuild>;

/// The sections a reader may not see, by page: what lies under a condition that does not
/// hold for a site's visitor. Their postings are left out as they are read, so ranking,
/// phrases, the sections shown and their excerpts all ignore that text.
type Hidden = PageMap<Vec<u32>>;

/// One part of a query: a word, or a quoted phrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    pub words: Vec<String>,
    pub phrase: bool,
    /// A run of CJK characters typed without quotes: a phrase of its bigrams, which a query
    /// that finds nothing loosens into separate words ([`Parsed::relaxed`]).
    pub run: bool,
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub clauses: Vec<Clause>,
    /// The last word is still being typed: it also matches the words it starts.
    pub prefix_last: bool,
}

/// Splits a query into words and quoted phrases. An unclosed quote counts as no quote.
///
/// Words are found as the index finds them ([`analyze::tokens`]): a run of CJK characters
/// is its bigrams, and a run of more than one bigram, typed as one word (`検索設定`), is a
/// phrase of them, so that it finds the text holding it as typed, not every text holding
/// its bigrams apart (`検索` here, `設定` there, or only the frequent `する` of `公開する`).
/// A query that finds nothing so is run again with those bigrams as separate words
/// ([`Parsed::relaxed`]): a Chinese question (`如何修改密码`), or words the text separates
/// by a particle (`パスワード変更` for `パスワードを変更する`), still find their pages.
pub fn parse(query: &str) -> Parsed {
    fn flush(out: &mut Vec<Clause>, text: &str, phrase: bool) {
        let tokens: Vec<analyze::Token<'_>> = analyze::tokens(text)
            .into_iter()
            .filter(|t| !t.part)
            .collect();
        if phrase && tokens.len() > 1 {
            out.push(Clause {
                words: tokens.iter().map(|t| t.text.to_string()).collect(),
                phrase: true,
                run: false,
            });
            return;
        }
        for piece in tokens.chunk_by(|a, b| a.piece == b.piece) {
            let run = piece.len() > 1;
            out.push(Clause {
                words: piece.iter().map(|t| t.text.to_string()).collect(),
                phrase: run,
                run,
            });
        }
    }
    let mut clauses = Vec::new();
    let mut quoted = false;
    let mut buf = String::new();
    for c in query.chars() {
        if matches!(c, '"' | '“' | '”') {
            flush(&mut clauses, &buf, quoted);
            buf.clear();
            quoted = !quoted;
        } else {
            buf.push(c);
        }
    }
    flush(&mut clauses, &buf, false);
    let trimmed_end = query.chars().last();
    let prefix_last = clauses.last().is_some_and(|c| !c.phrase)
        && trimmed_end.is_some_and(|c| !c.is_whitespace() && !matches!(c, '"' | '“' | '”'));
    Parsed {
        clauses,
        prefix_last,
    }
}

impl Parsed {
    /// The query with each CJK run typed as one word (a phrase of its bigrams, see [`parse`])
    /// split into its bigrams, each a word of its own; `None` when it has no such run.
    pub fn relaxed(&self) -> Option<Parsed> {
        if !self.clauses.iter().any(|c| c.run) {
            return None;
        }
        let clauses = self
            .clauses
            .iter()
            .flat_map(|c| {
                if c.run {
                    c.words
                        .iter()
                        .map(|w| Clause {
                            words: vec![w.clone()],
                            phrase: false,
                            run: false,
                        })
                        .collect()
                } else {
                    vec![c.clone()]
                }
            })
            .collect();
        // A query ending with a run did not end with a word being typed (a run is a phrase).
        Some(Parsed {
            clauses,
            prefix_last: self.prefix_last,
        })
    }
}

/// A word of the query that takes part in ranking.
#[derive(Debug, Clone)]
struct QWord {
    surface: String,
    term: String,
    /// A stop word (only its completions count).
    stop: bool,
    prefix: bool,
    typo: bool,
}

#[derive(Debug, Clone)]
struct PhraseQ {
    /// The terms of every word, stop words included, in order.
    terms: Vec<String>,
    /// The ranking words it contains, with their offsets in the phrase.
    words: Vec<(usize, u32)>,
    /// Its stop words' terms, with their offsets.
    stops: Vec<(String, u32)>,
    /// Every word is indexed (stop words too, for phrases), so positions in the index
    /// decide alone; otherwise the text of the pages that pass on positions is checked too.
    exact: bool,
}

#[derive(Debug, Default)]
struct Plan {
    words: Vec<QWord>,
    phrases: Vec<PhraseQ>,
}

fn plan(analyzer: &Analyzer, parsed: &Parsed) -> Plan {
    let mut p = Plan::default();
    let last = parsed.clauses.len().saturating_sub(1);
    for (ci, clause) in parsed.clauses.iter().enumerate() {
        if clause.phrase {
            let mut terms = Vec::new();
            let mut words = Vec::new();
            let mut stops = Vec::new();
            let mut exact = true;
            for (offset, raw) in clause.words.iter().enumerate() {
                let offset = u32::try_from(offset).unwrap_or(u32::MAX);
                let Some(w) = analyzer.word(raw) else {
                    terms.push(String::from("\u{0}"));
                    exact = false;
                    continue;
                };
                terms.push(w.term.clone());
                if w.stop {
                    stops.push((w.term, offset));
                    continue;
                }
                let at = match p.words.iter().position(|q| !q.prefix && q.term == w.term) {
                    Some(at) => at,
                    None => {
                        p.words.push(QWord {
                            surface: w.surface,
                            term: w.term,
                            stop: false,
                            prefix: false,
                            typo: false,
                        });
                        p.words.len() - 1
                    }
                };
                words.push((at, offset));
            }
            p.phrases.push(PhraseQ {
                terms,
                words,
                stops,
                exact,
            });
            continue;
        }
        let Some(w) = clause.words.first().and_then(|raw| analyzer.word(raw)) else {
            continue;
        };
        let prefix = ci == last && parsed.prefix_last;
        if w.stop && !prefix {
            continue;
        }
        if !prefix && p.words.iter().any(|q| !q.prefix && q.term == w.term) {
            continue;
        }
        // CJK bigrams are not corrected: one edit of two characters is another word.
        let typo = w.surface.chars().count() >= TYPO_MIN_CHARS && !w.surface.starts_with(is_cjk);
        p.words.push(QWord {
            surface: w.surface,
            term: w.term,
            stop: w.stop,
            prefix,
            typo,
        });
    }
    p.words.truncate(MAX_WORDS);
    let n = p.words.len();
    p.phrases
        .retain(|ph| !ph.words.is_empty() && ph.words.iter().all(|(w, _)| *w < n));
    p
}

/// The words one edit away from `word` (deletion, insertion, substitution, transposition).
pub fn one_edit(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut alphabet: Vec<char> = ('a'..='z').chain('0'..='9').collect();
    for c in &chars {
        if !alphabet.contains(c) {
            alphabet.push(*c);
        }
    }
    let mut out: HashSet<String> = HashSet::new();
    let n = chars.len();
    let make = |v: &[char]| v.iter().collect::<String>();
    for i in 0..n {
        let mut v = chars.clone();
        v.remove(i);
        out.insert(make(&v));
        if i + 1 < n && chars[i] != chars[i + 1] {
            let mut v = chars.clone();
            v.swap(i, i + 1);
            out.insert(make(&v));
        }
        for &c in &alphabet {
            if c != chars[i] {
                let mut v = chars.clone();
                v[i] = c;
                out.insert(make(&v));
            }
        }
    }
    for i in 0..=n {
        for &c in &alphabet {
            let mut v = chars.clone();
            v.insert(i, c);
            out.insert(make(&v));
        }
    }
    out.remove(word);
    let mut out: Vec<String> = out.into_iter().collect();
    out.sort_unstable();
    out
}

/// A candidate term of a query word.
#[derive(Debug, Clone)]
struct Alt {
    word: usize,
    /// Its weight times its idf.
    weight: f32,
}

/// The query as run over the spaces of one analysis (one language).
struct Group {
    analyzer: Analyzer,
    /// Indices into the states.
    spaces: Vec<usize>,
    plan: Plan,
    /// Candidate terms and the words they stand for.
    alts: HashMap<String, Vec<Alt>>,
    /// Ranking words with at least one candidate term.
    live_words: usize,
    /// Pages of the most frequent candidate term (capped): how much ranking should reserve.
    pages_hint: usize,
    /// Average field lengths: title, headings, body.
    avg: [f32; 3],
    /// Posting blocks read.
    rows: Vec<Row>,
}

/// A ranked page.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    group: usize,
    /// Index into the states.
    pub space: usize,
    pub page_key: i64,
    pub score: f32,
    /// BM25F times the share of query words matched, before the title and heading matches.
    base: f32,
    /// How much the title is what was asked (0 to 1).
    title: f32,
}

/// The ranked answer to a query over some spaces.
pub struct Ranked {
    groups: Vec<Group>,
    /// Sections the reader may not see.
    hidden: Hidden,
    /// Pages, best first (those with phrases checked up to `checked`).
    pub hits: Vec<Hit>,
    /// Hits before this index passed their phrase checks (all of them without phrases).
    checked: usize,
}

fn idf(n: f32, df: f32) -> f32 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln().max(0.01)
}

fn norm(len: u32, avg: f32, b: f32) -> f32 {
    1.0 - b + b * (len as f32) / avg
}

fn saturate(x: f32) -> f32 {
    x * (K1 + 1.0) / (x + K1)
}

/// A posting row: `(state index, term, block)`; a delta entry is a block of one.
type Row = (usize, Arc<str>, Bytes);

/// The postings of one term in one space (or in one block of it), superseded pages left
/// out, as read and as cached.
#[derive(Default)]
struct TermPostings {
    blocks: Vec<Bytes>,
    /// Pages they hold.
    pages: i64,
    bytes: usize,
}

impl TermPostings {
    fn push(&mut self, block: Vec<u8>, pages: i64) {
        self.pages += pages;
        self.bytes += block.len() + 32;
        self.blocks.push(Bytes::from(block));
    }
}

/// Whether an index may have delta postings or superseded pages: only while changes wait
/// to be folded (an index with none costs no read for them).
fn has_pending(ix: &IndexRow) -> bool {
    ix.delta_from < ix.next_key || ix.pending > 0
}

/// One row read by [`Sink::fetch`]: the space (index into the group's), the term, the block
/// (`None` for a delta entry) and the postings.
type Fetched = (usize, String, Option<i64>, Vec<u8>, i64);

/// Where the postings read by one query go, with what excludes and counts them. Reads go
/// through the index snapshot cache ([`snapshot`]); what it lacks is read in one statement.
struct Sink<'a> {
    state: &'a AppState,
    /// The group's spaces: state index and index state.
    spaces: &'a [(usize, &'a IndexRow)],
    /// Superseded pages, left out.
    dead: &'a PageSet,
    rows: &'a mut Vec<Row>,
    /// Pages per term.
    counts: &'a mut HashMap<String, i64>,
    /// Sections the reader may not see: their hits are left out of what is read.
    hidden: &'a Hidden,
}

impl Sink<'_> {
    fn add(&mut self, i: usize, term: &str, p: &TermPostings) {
        if p.blocks.is_empty() {
            return;
        }
        let term: Arc<str> = Arc::from(term);
        if self.hidden.is_empty() {
            *self.counts.entry(term.to_string()).or_default() += p.pages;
            for b in &p.blocks {
                self.rows.push((i, term.clone(), b.clone()));
            }
            return;
        }
        let mut pages = 0;
        for b in &p.blocks {
            let block = if codec::entries(b).any(|(k, _)| self.hidden.contains_key(&(i, k))) {
                let kept: Vec<(i64, Vec<u8>)> = codec::entries(b)
                    .filter_map(|(k, e)| match self.hidden.get(&(i, k)) {
                        Some(idx) => codec::without_sections(e, idx).map(|e| (k, e)),
                        None => Some((k, e.to_vec())),
                    })
                    .collect();
                Bytes::from(codec::encode_block(
                    kept.iter().map(|(k, e)| (*k, e.as_slice())),
                ))
            } else {
                b.clone()
            };
            let n = codec::entries(&block).count() as i64;
            if n > 0 {
                pages += n;
                self.rows.push((i, term.clone(), block));
            }
        }
        if pages > 0 {
            *self.counts.entry(term.to_string()).or_default() += pages;
        }
    }

    /// Reads, for the spaces `sis` (indices into the group's), the blocks of `terms` (only
    /// `blocks` when given) and, with `delta`, their delta entries.
    async fn fetch(
        &self,
        sis: &BTreeSet<usize>,
        terms: &[&str],
        blocks: Option<&[i64]>,
        delta: bool,
    ) -> ApiResult<Vec<Fetched>> {
        let ids: Vec<&str> = sis
            .iter()
            .map(|si| self.spaces[*si].1.space_id.as_str())
            .collect();
        let delta = delta && sis.iter().any(|si| has_pending(self.spaces[*si].1));
        let found =
            store::search::postings_with_delta(&self.state.db, &ids, terms, blocks, delta).await?;
        let mut out = Vec::with_capacity(found.len());
        for (space, term, key, data) in found {
            let Some(&si) = sis.iter().find(|si| self.spaces[**si].1.space_id == space) else {
                continue;
            };
            let i = self.spaces[si].0;
            if key != store::search::FROM_BLOCK {
                let block = codec::encode_block([(key, data.as_slice())]);
                out.push((si, term, None, block, 1));
                continue;
            }
            let block = codec::entries(&data)
                .next()
                .map(|(k, _)| codec::block_of(k));
            let dead = self.dead;
            let data = if dead.is_empty()
                || !codec::entries(&data).any(|(k, _)| dead.contains(&(i, k)))
            {
                data
            } else {
                codec::encode_block(codec::entries(&data).filter(|(k, _)| !dead.contains(&(i, *k))))
            };
            let pages = codec::entries(&data).count() as i64;
            out.push((si, term, block.or(Some(0)), data, pages));
        }
        Ok(out)
    }

    /// Reads every posting of `terms`.
    async fn all(&mut self, terms: &[&str]) -> ApiResult<()> {
        let mut missing: Vec<(usize, &str)> = Vec::new();
        for (si, (i, ix)) in self.spaces.iter().enumerate() {
            for t in terms {
                match snapshot::get::<TermPostings>(self.state, &snapshot::key(ix, "term", t)) {
                    Some(p) => self.add(*i, t, &p),
                    None => missing.push((si, t)),
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let sis: BTreeSet<usize> = missing.iter().map(|(si, _)| *si).collect();
        let ts: Vec<&str> = missing
            .iter()
            .map(|(_, t)| *t)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut read: HashMap<(usize, String), TermPostings> = HashMap::new();
        for (si, term, _, data, pages) in self.fetch(&sis, &ts, None, true).await? {
            read.entry((si, term)).or_default().push(data, pages);
        }
        // The statement read every pair of those spaces and terms: all of them are kept.
        for si in &sis {
            let (i, ix) = self.spaces[*si];
            for t in &ts {
                let p = Arc::new(read.remove(&(*si, t.to_string())).unwrap_or_default());
                if missing.contains(&(*si, *t)) {
                    self.add(i, t, &p);
                }
                let bytes = p.bytes;
                snapshot::put(self.state, snapshot::key(ix, "term", t), p, bytes);
            }
        }
        Ok(())
    }

    /// Reads the postings of `terms` in `blocks` only, and their delta entries.
    async fn in_blocks(&mut self, terms: &[&str], blocks: &[i64]) -> ApiResult<()> {
        let block_key = |b: i64, t: &str| format!("{b}:{t}");
        let mut missing: Vec<(usize, &str, Option<i64>)> = Vec::new();
        for (si, (i, ix)) in self.spaces.iter().enumerate() {
            for t in terms {
                let parts = blocks
                    .iter()
                    .map(|b| (Some(*b), snapshot::key(ix, "block", &block_key(*b, t))))
                    .chain(has_pending(ix).then(|| (None, snapshot::key(ix, "delta", t))));
                for (b, key) in parts {
                    match snapshot::get::<TermPostings>(self.state, &key) {
                        Some(p) => self.add(*i, t, &p),
                        None => missing.push((si, t, b)),
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let sis: BTreeSet<usize> = missing.iter().map(|(si, _, _)| *si).collect();
        let ts: Vec<&str> = missing
            .iter()
            .map(|(_, t, _)| *t)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let bs: Vec<i64> = missing
            .iter()
            .filter_map(|(_, _, b)| *b)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let delta = missing.iter().any(|(_, _, b)| b.is_none());
        let mut read: HashMap<(usize, String, Option<i64>), TermPostings> = HashMap::new();
        if bs.is_empty() {
            for (si, term, b, data, pages) in self.fetch(&sis, &ts, Some(&[]), delta).await? {
                read.entry((si, term, b)).or_default().push(data, pages);
            }
        }
        for (n, chunk) in bs.chunks(IN_CHUNK_BLOCKS).enumerate() {
            let with_delta = delta && n == 0;
            for (si, term, b, data, pages) in self.fetch(&sis, &ts, Some(chunk), with_delta).await?
            {
                read.entry((si, term, b)).or_default().push(data, pages);
            }
        }
        // Every (space, term, block) read is kept, found or not; so is each delta read.
        for si in &sis {
            let (i, ix) = self.spaces[*si];
            for t in &ts {
                let parts = bs
                    .iter()
                    .map(|b| Some(*b))
                    .chain((delta && has_pending(ix)).then_some(None));
                for b in parts {
                    let p = Arc::new(read.remove(&(*si, t.to_string(), b)).unwrap_or_default());
                    if missing.contains(&(*si, *t, b)) {
                        self.add(i, t, &p);
                    }
                    let key = match b {
                        Some(b) => snapshot::key(ix, "block", &block_key(b, t)),
                        None => snapshot::key(ix, "delta", t),
                    };
                    let bytes = p.bytes;
                    snapshot::put(self.state, key, p, bytes);
                }
            }
        }
        Ok(())
    }
}

/// The superseded pages of the group's spaces (none without pending changes).
async fn dead_pages(state: &AppState, spaces: &[(usize, &IndexRow)]) -> ApiResult<PageSet> {
    let mut out = PageSet::default();
    let mut missing: Vec<(usize, &IndexRow)> = Vec::new();
    for (i, ix) in spaces.iter().filter(|(_, ix)| ix.pending > 0) {
        match snapshot::get::<Vec<i64>>(state, &snapshot::key(ix, "dead", "")) {
            Some(keys) => out.extend(keys.iter().map(|k| (*i, *k))),
            None => missing.push((*i, ix)),
        }
    }
    if missing.is_empty() {
        return Ok(out);
    }
    let ids: Vec<&str> = missing.iter().map(|(_, ix)| ix.space_id.as_str()).collect();
    let mut by_space: HashMap<String, Vec<i64>> = HashMap::new();
    for (s, k) in store::search::dead_keys(&state.db, &ids).await? {
        by_space.entry(s).or_default().push(k);
    }
    for (i, ix) in missing {
        let keys = Arc::new(by_space.remove(&ix.space_id).unwrap_or_default());
        out.extend(keys.iter().map(|k| (i, *k)));
        let bytes = keys.len() * 8;
        snapshot::put(state, snapshot::key(ix, "dead", ""), keys, bytes);
    }
    Ok(out)
}

/// The `limit` most frequent of `terms` (by the dictionary's document frequencies, which
/// the last compaction brought up to date).
async fn most_frequent(
    state: &AppState,
    ids: &[&str],
    mut terms: Vec<String>,
    limit: usize,
) -> ApiResult<Vec<String>> {
    terms.sort_unstable();
    terms.dedup();
    if terms.len() > limit {
        let refs: Vec<&str> = terms.iter().map(String::as_str).collect();
        let df: HashMap<String, i64> = store::search::df(&state.db, ids, &refs)
            .await?
            .into_iter()
            .collect();
        terms.sort_by_key(|t| std::cmp::Reverse(df.get(t).copied().unwrap_or(0)));
        terms.truncate(limit);
    }
    Ok(terms)
}

/// The terms completing `w`, the word being typed (its own term aside): the most frequent
/// of the first dictionary words it starts. One space reads its words and their frequencies
/// in one statement (and keeps the answer in the snapshot cache); several sum their
/// frequencies as [`most_frequent`] does.
async fn completions(
    state: &AppState,
    spaces: &[(usize, &IndexRow)],
    w: &QWord,
) -> ApiResult<Vec<String>> {
    if let [(_, ix)] = spaces {
        let key = snapshot::key(ix, "complete", &w.surface);
        if let Some(terms) = snapshot::get::<Vec<String>>(state, &key) {
            return Ok(terms.to_vec());
        }
        let found =
            store::search::prefixed_df(&state.db, &ix.space_id, &w.surface, PREFIX_SCAN).await?;
        let mut terms: Vec<(String, i64)> = found
            .into_iter()
            .filter(|(_, t, _)| *t != w.term)
            .map(|(_, t, df)| (t, df))
            .collect();
        // As `most_frequent`: in term order, then by frequency (stable), the first few.
        terms.sort_unstable();
        terms.dedup_by(|a, b| a.0 == b.0);
        if terms.len() > MAX_EXPANSIONS {
            terms.sort_by_key(|(_, df)| std::cmp::Reverse(*df));
            terms.truncate(MAX_EXPANSIONS);
        }
        let terms: Vec<String> = terms.into_iter().map(|(t, _)| t).collect();
        let bytes = terms.iter().map(|t| t.len() + 24).sum();
        snapshot::put(state, key, Arc::new(terms.clone()), bytes);
        return Ok(terms);
    }
    let ids: Vec<&str> = spaces.iter().map(|(_, ix)| ix.space_id.as_str()).collect();
    let found = store::search::prefixed(&state.db, &ids, &w.surface, PREFIX_SCAN).await?;
    let terms: Vec<String> = found
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| *t != w.term)
        .collect();
    most_frequent(state, &ids, terms, MAX_EXPANSIONS).await
}

/// The most frequent terms one typo away from `w` (kept in the snapshot cache for one space).
async fn corrections_of(
    state: &AppState,
    spaces: &[(usize, &IndexRow)],
    w: &QWord,
) -> ApiResult<Vec<String>> {
    let key = match spaces {
        [(_, ix)] => Some(snapshot::key(ix, "typo", &w.surface)),
        _ => None,
    };
    if let Some(terms) = key
        .as_ref()
        .and_then(|k| snapshot::get::<Vec<String>>(state, k))
    {
        return Ok(terms.to_vec());
    }
    let ids: Vec<&str> = spaces.iter().map(|(_, ix)| ix.space_id.as_str()).collect();
    let variants = one_edit(&w.surface);
    let terms: Vec<String> = store::search::words(&state.db, &ids, &variants)
        .await?
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let terms = most_frequent(state, &ids, terms, MAX_EXPANSIONS).await?;
    if let Some(key) = key {
        let bytes = terms.iter().map(|t| t.len() + 24).sum();
        snapshot::put(state, key, Arc::new(terms.clone()), bytes);
    }
    Ok(terms)
}

async fn prepare(
    state: &AppState,
    states: &[SpaceState],
    spaces: Vec<usize>,
    analyzer: Analyzer,
    parsed: &Parsed,
    hidden: &Hidden,
) -> ApiResult<Group> {
    let plan = plan(&analyzer, parsed);
    let (mut pages, mut lens) = (0i64, [0i64; 3]);
    for i in &spaces {
        if let Some(ix) = &states[*i].index {
            pages += ix.pages;
            lens[0] += ix.title_len;
            lens[1] += ix.head_len;
            lens[2] += ix.body_len;
        }
    }
    let n = pages.max(1) as f32;
    let avg = lens.map(|l| ((l as f32) / n).max(1.0));
    let mut group = Group {
        analyzer,
        spaces,
        plan,
        alts: HashMap::new(),
        live_words: 0,
        pages_hint: 0,
        avg,
        rows: Vec::new(),
    };
    if group.plan.words.is_empty() || pages == 0 {
        return Ok(group);
    }
    let indexes: Vec<(usize, &IndexRow)> = group
        .spaces
        .iter()
        .filter_map(|i| states[*i].index.as_ref().map(|ix| (*i, ix)))
        .collect();
    let dead = dead_pages(state, &indexes).await?;

    // Candidate terms: each word's own term, and completions of the word being typed.
    let mut candidates: Vec<(usize, String, f32)> = Vec::new();
    for (wi, w) in group.plan.words.iter().enumerate() {
        if !w.stop {
            candidates.push((wi, w.term.clone(), 1.0));
        }
        // A CJK character being typed completes to the bigrams it starts.
        if w.prefix && (w.surface.chars().count() >= 2 || w.surface.starts_with(is_cjk)) {
            let typed = w.surface.chars().count() as f32;
            for t in completions(state, &indexes, w).await? {
                let share = (typed / t.chars().count() as f32).min(1.0);
                candidates.push((wi, t, PREFIX_WEIGHT * share));
            }
        }
    }
    let mut terms: Vec<&str> = candidates.iter().map(|(_, t, _)| t.as_str()).collect();
    terms.sort_unstable();
    terms.dedup();
    let mut counts: HashMap<String, i64> = HashMap::new();
    let mut rows = Vec::new();
    let mut sink = Sink {
        state,
        spaces: &indexes,
        dead: &dead,
        rows: &mut rows,
        counts: &mut counts,
        hidden,
    };
    sink.all(&terms).await?;

    // Long words found nowhere: their neighbours one typo away.
    let mut corrections: Vec<(usize, String, f32)> = Vec::new();
    for (wi, w) in group.plan.words.iter().enumerate() {
        let found = candidates
            .iter()
            .any(|(cw, t, _)| *cw == wi && sink.counts.get(t).copied().unwrap_or(0) > 0);
        if found || !w.typo {
            continue;
        }
        for t in corrections_of(state, &indexes, w).await? {
            corrections.push((wi, t, TYPO_WEIGHT));
        }
    }
    if !corrections.is_empty() {
        let terms: Vec<&str> = corrections
            .iter()
            .map(|(_, t, _)| t.as_str())
            .filter(|t| !sink.counts.contains_key(*t))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        sink.all(&terms).await?;
        candidates.extend(corrections);
    }

    // Stop words of phrases (indexed for phrases only, and frequent): read only in the
    // blocks where each phrase's rarest word is.
    let stops: Vec<&str> = group
        .plan
        .phrases
        .iter()
        .flat_map(|ph| ph.stops.iter().map(|(t, _)| t.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !stops.is_empty() {
        let rarest: HashSet<&str> = group
            .plan
            .phrases
            .iter()
            .filter(|ph| !ph.stops.is_empty())
            .filter_map(|ph| {
                ph.words
                    .iter()
                    .map(|(w, _)| group.plan.words[*w].term.as_str())
                    .min_by_key(|t| sink.counts.get(*t).copied().unwrap_or(0))
            })
            .collect();
        let blocks: Vec<i64> = sink
            .rows
            .iter()
            .filter(|(_, t, _)| rarest.contains(&**t))
            .flat_map(|(_, _, data)| codec::entries(data).map(|(k, _)| codec::block_of(k)))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        sink.in_blocks(&stops, &blocks).await?;
    }
    group.rows = rows;

    let mut live = vec![false; group.plan.words.len()];
    for (wi, term, weight) in candidates {
        let d = counts.get(&term).copied().unwrap_or(0);
        if d <= 0 {
            continue;
        }
        live[wi] = true;
        let weight = weight * idf(n, d as f32);
        let list = group.alts.entry(term).or_default();
        match list.iter_mut().find(|a| a.word == wi) {
            Some(a) => a.weight = a.weight.max(weight),
            None => list.push(Alt { word: wi, weight }),
        }
    }
    group.live_words = live.iter().filter(|l| **l).count();
    group.pages_hint = group
        .alts
        .keys()
        .filter_map(|t| counts.get(t))
        .max()
        .map_or(0, |n| usize::try_from(*n).unwrap_or(0).min(1 << 20));
    Ok(group)
}

/// Ranks the pages of `group` (phrases aside): BM25F per page, each query word counting
/// with its best candidate term, scaled by the share of query words the page matches.
fn rank(gi: usize, group: &Group, out: &mut Vec<Hit>) {
    let n_words = group.plan.words.len();
    if n_words == 0 || group.live_words == 0 {
        return;
    }
    // At least as many pages as the most frequent candidate term holds.
    let mut slots: PageMap<usize> =
        PageMap::with_capacity_and_hasher(group.pages_hint, FxBuild::default());
    let mut best: Vec<f32> = Vec::with_capacity(group.pages_hint * n_words);
    // Per page, which query words its title holds (a bit each: at most MAX_WORDS), and how
    // many ranked words the title has.
    let mut titled: Vec<u16> = Vec::with_capacity(group.pages_hint);
    let mut title_len: Vec<u32> = Vec::with_capacity(group.pages_hint);
    for (space, term, data) in &group.rows {
        let Some(alts) = group.alts.get(&**term) else {
            continue;
        };
        for (key, bytes) in codec::entries(data) {
            let e = codec::decode_entry(bytes, None);
            let tfn = W_TITLE * e.title_tf as f32 / norm(e.title_len, group.avg[0], B_TITLE)
                + W_HEAD * e.head_tf as f32 / norm(e.head_len, group.avg[1], B_HEAD)
                + W_BODY * body_tf(&e) / norm(e.body_len, group.avg[2], B_BODY);
            if tfn <= 0.0 {
                continue;
            }
            let sat = saturate(tfn);
            let slot = *slots.entry((*space, key)).or_insert_with(|| {
                best.resize(best.len() + n_words, 0.0);
                titled.push(0);
                title_len.push(e.title_len);
                best.len() / n_words - 1
            });
            for a in alts {
                let v = a.weight * sat;
                let cell = &mut best[slot * n_words + a.word];
                if v > *cell {
                    *cell = v;
                }
                if e.title_tf > 0 {
                    titled[slot] |= 1 << a.word;
                }
            }
        }
    }
    let live = group.live_words as f32;
    let first = out.len();
    // Phrases: pages holding every word of each phrase, then the words at the right
    // distances in one field of one section (or in the title), by their positions.
    let mut phrase_ok: Option<PageSet> = None;
    if !group.plan.phrases.is_empty() {
        let candidates: PageSet = slots
            .iter()
            .filter(|(_, slot)| {
                let cells = &best[**slot * n_words..(**slot + 1) * n_words];
                group
                    .plan
                    .phrases
                    .iter()
                    .all(|ph| ph.words.iter().all(|(w, _)| cells[*w] > 0.0))
            })
            .map(|(k, _)| *k)
            .collect();
        phrase_ok = Some(phrase_pages(group, &candidates));
    }
    for ((space, page_key), slot) in slots {
        let cells = &best[slot * n_words..(slot + 1) * n_words];
        if phrase_ok
            .as_ref()
            .is_some_and(|ok| !ok.contains(&(space, page_key)))
        {
            continue;
        }
        let matched = cells.iter().filter(|c| **c > 0.0).count() as f32;
        let sum: f32 = cells.iter().sum();
        let coverage = (matched / live).min(1.0);
        // A title that is what was asked for: the share of the query's words in the title
        // times the share of the title's words the query holds (both 1 for the very title).
        let in_title = titled[slot].count_ones() as f32;
        let title =
            (in_title / live).min(1.0) * (in_title / title_len[slot].max(1) as f32).min(1.0);
        let title = title * title;
        out.push(Hit {
            group: gi,
            space,
            page_key,
            score: sum * coverage * (1.0 + TITLE_MATCH * title),
            base: sum * coverage,
            title,
        });
    }
    heading_match(group, &mut out[first..]);
}

/// Scores the best [`HEADING_TOP`] of `hits` higher by the share of the query's words one
/// of their headings holds (squared): the heading that names what was asked leads to the
/// page, and its section, as a title does. Only the best pages are read again with their
/// positions (the postings already read, decoded in full), so a question's cost does not
/// grow with the pages that hold one of its words.
fn heading_match(group: &Group, hits: &mut [Hit]) {
    let live = group.live_words as f32;
    if group.live_words < 2 || hits.is_empty() {
        return;
    }
    let k = hits.len().min(HEADING_TOP);
    if k < hits.len() {
        hits.select_nth_unstable_by(k - 1, by_score);
    }
    let top = &mut hits[..k];
    let at: PageMap<usize> = top
        .iter()
        .enumerate()
        .map(|(i, h)| ((h.space, h.page_key), i))
        .collect();
    // `(top page, section, query words in its heading)`, one per term and section.
    let mut headed: Vec<(usize, u32, u16)> = Vec::new();
    let mut decoded = TermHits::default();
    for (space, term, data) in &group.rows {
        let Some(alts) = group.alts.get(&**term) else {
            continue;
        };
        let words = alts.iter().fold(0u16, |m, a| m | 1 << a.word);
        for (key, bytes) in codec::entries(data) {
            let Some(&i) = at.get(&(*space, key)) else {
                continue;
            };
            codec::decode_entry(bytes, Some(&mut decoded));
            headed.extend(
                decoded
                    .sections
                    .iter()
                    .filter(|s| !s.head.is_empty())
                    .map(|s| (i, s.idx, words)),
            );
        }
    }
    headed.sort_unstable_by_key(|(i, idx, _)| (*i, *idx));
    let mut best = vec![0u32; k];
    for run in headed.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let words = run.iter().fold(0u16, |m, (_, _, w)| m | w);
        best[run[0].0] = best[run[0].0].max(words.count_ones());
    }
    for (h, n) in top.iter_mut().zip(best) {
        let share = (n as f32 / live).min(1.0);
        h.score = h.base * (1.0 + TITLE_MATCH * h.title + HEADING_MATCH * share * share);
    }
}

/// The `candidates` whose postings place every phrase's words at their offsets in one
/// field (the title, or a heading or body of one section).
fn phrase_pages(group: &Group, candidates: &PageSet) -> PageSet {
    // Each phrase as `(term index, offset)`s over the distinct terms of all phrases.
    fn index<'a>(t: &'a str, terms: &mut Vec<&'a str>) -> usize {
        match terms.iter().position(|x| *x == t) {
            Some(i) => i,
            None => {
                terms.push(t);
                terms.len() - 1
            }
        }
    }
    let mut terms: Vec<&str> = Vec::new();
    let mut phrases: Vec<Vec<(usize, u32)>> = Vec::new();
    for ph in &group.plan.phrases {
        let mut parts = Vec::new();
        for (w, off) in &ph.words {
            parts.push((index(&group.plan.words[*w].term, &mut terms), *off));
        }
        for (t, off) in &ph.stops {
            parts.push((index(t, &mut terms), *off));
        }
        phrases.push(parts);
    }
    let k = terms.len();
    // The entries of those terms, per candidate page.
    let mut slots: PageMap<usize> =
        PageMap::with_capacity_and_hasher(candidates.len(), FxBuild::default());
    let mut cells: Vec<Option<&[u8]>> = Vec::new();
    for (space, term, data) in &group.rows {
        let Some(ti) = terms.iter().position(|t| *t == &**term) else {
            continue;
        };
        for (key, bytes) in codec::entries(data) {
            if !candidates.contains(&(*space, key)) {
                continue;
            }
            let slot = *slots.entry((*space, key)).or_insert_with(|| {
                cells.resize(cells.len() + k, None);
                cells.len() / k - 1
            });
            cells[slot * k + ti] = Some(bytes);
        }
    }
    let mut ok = PageSet::default();
    let mut decoded: Vec<TermHits> = vec![TermHits::default(); k];
    let mut have = vec![false; k];
    let mut order: Vec<(usize, u32)> = Vec::new();
    for (page, slot) in slots {
        let row = &cells[slot * k..(slot + 1) * k];
        have.iter_mut().for_each(|h| *h = false);
        let all = phrases.iter().all(|parts| {
            if parts.iter().any(|(ti, _)| row[*ti].is_none()) {
                return false;
            }
            // The two words with the shortest entries first: most pages fail there, and
            // when two words cannot line up the phrase cannot, so the others (often stop
            // words, with many positions) need not be decoded.
            order.clear();
            order.extend_from_slice(parts);
            order.sort_by_key(|(ti, _)| row[*ti].map_or(0, <[u8]>::len));
            let first = order.len().min(2);
            for end in [first, order.len()] {
                for (ti, _) in &order[..end] {
                    if !have[*ti] {
                        codec::decode_entry(row[*ti].unwrap_or_default(), Some(&mut decoded[*ti]));
                        have[*ti] = true;
                    }
                }
                let hits: Vec<(&TermHits, u32)> = order[..end]
                    .iter()
                    .map(|(ti, off)| (&decoded[*ti], *off))
                    .collect();
                if !phrase_in_hits(&hits) {
                    return false;
                }
                if end == order.len() {
                    break;
                }
            }
            true
        });
        if all {
            ok.insert(page);
        }
    }
    ok
}

/// Whether the words (their hits, each with its offset in the phrase) line up in one field.
fn phrase_in_hits(words: &[(&TermHits, u32)]) -> bool {
    if aligned_with(words.len(), |j| (words[j].0.title.as_slice(), words[j].1)) {
        return true;
    }
    let Some((first, _)) = words.first() else {
        return false;
    };
    first.sections.iter().any(|s| section_aligned(words, s.idx))
}

/// Whether the words line up in the heading or in the body of section `idx`.
fn section_aligned(words: &[(&TermHits, u32)], idx: u32) -> bool {
    // Sections are decoded in index order.
    fn find(h: &TermHits, idx: u32) -> Option<&SectionHits> {
        h.sections
            .binary_search_by_key(&idx, |s| s.idx)
            .ok()
            .map(|i| &h.sections[i])
    }
    // Each word's section, looked up once (phrases are short: no allocation up to 8 words).
    const INLINE: usize = 8;
    let mut inline: [Option<&SectionHits>; INLINE] = [None; INLINE];
    let mut spilled: Vec<Option<&SectionHits>> = Vec::new();
    let found: &mut [Option<&SectionHits>] = if words.len() <= INLINE {
        &mut inline[..words.len()]
    } else {
        spilled.resize(words.len(), None);
        &mut spilled
    };
    for (slot, (h, _)) in found.iter_mut().zip(words) {
        *slot = find(h, idx);
        if slot.is_none() {
            return false;
        }
    }
    let found: &[Option<&SectionHits>] = found;
    let field = |j: usize, head: bool| -> (&[u32], u32) {
        let off = words[j].1;
        match found[j] {
            Some(s) if head => (s.head.as_slice(), off),
            Some(s) => (s.body.as_slice(), off),
            None => (&[], off),
        }
    };
    aligned_with(words.len(), |j| field(j, true)) || aligned_with(words.len(), |j| field(j, false))
}

/// Whether some position of the first field's word has every other word at its offset;
/// field `j` (its positions, and its word's offset in the phrase) is given by `field(j)`.
fn aligned_with<'a>(n: usize, field: impl Fn(usize) -> (&'a [u32], u32)) -> bool {
    if n == 0 {
        return false;
    }
    let (first, first_off) = field(0);
    first.iter().any(|&p| {
        (1..n).all(|j| {
            let (positions, off) = field(j);
            p.checked_add(off)
                .and_then(|x| x.checked_sub(first_off))
                .is_some_and(|want| positions.binary_search(&want).is_ok())
        })
    })
}

/// Orders hits best first; ties go to the earlier space, then the older page.
fn by_score(a: &Hit, b: &Hit) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then(a.space.cmp(&b.space))
        .then(a.page_key.cmp(&b.page_key))
}

/// Runs a query over `states` (live spaces with fresh indexes). Hits are ordered as far as
/// `upto` (the end of the page of results asked for); the rest only count, unless phrases
/// need their text checked, which walks the ranking in order.
pub async fn run(
    state: &AppState,
    states: &[SpaceState],
    parsed: &Parsed,
    upto: usize,
) -> ApiResult<Ranked> {
    run_for(state, states, parsed, upto, None).await
}

/// [`run`] for one visitor of a published site (`visitor`: the context conditions read),
/// or for a member, who reads everything (`None`): text under a condition that does not
/// hold for the visitor counts for nothing, nor shows.
pub async fn run_for(
    state: &AppState,
    states: &[SpaceState],
    parsed: &Parsed,
    upto: usize,
    visitor: Option<&serde_json::Value>,
) -> ApiResult<Ranked> {
    let hidden = match visitor {
        Some(visitor) => hidden_sections(state, states, visitor).await?,
        None => Hidden::default(),
    };
    // One group per analysis: the query is analysed as each space's text was.
    let mut by_analyzer: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in states.iter().enumerate() {
        if s.index.as_ref().is_some_and(|ix| ix.pages > 0) {
            let key = Analyzer::for_language(s.language.as_deref()).key();
            by_analyzer.entry(key).or_default().push(i);
        }
    }
    let mut groups = Vec::new();
    let mut hits = Vec::new();
    // CJK runs typed as one word are phrases; when nothing holds them as typed, their
    // bigrams count as separate words ([`parse`]).
    let mut parsed = std::borrow::Cow::Borrowed(parsed);
    loop {
        for spaces in by_analyzer.values() {
            let analyzer = Analyzer::for_language(states[spaces[0]].language.as_deref());
            let spaces = spaces.clone();
            groups.push(prepare(state, states, spaces, analyzer, &parsed, &hidden).await?);
        }
        for (gi, g) in groups.iter().enumerate() {
            rank(gi, g, &mut hits);
        }
        match parsed.relaxed() {
            Some(relaxed) if hits.is_empty() => {
                groups.clear();
                parsed = std::borrow::Cow::Owned(relaxed);
            }
            _ => break,
        }
    }
    // Phrases with stop words are checked on the text too, as far as results are shown.
    let checked = if groups
        .iter()
        .any(|g| g.plan.phrases.iter().any(|p| !p.exact))
    {
        hits.sort_by(by_score);
        0
    } else {
        // Only the hits shown need an order: a partial selection, then a small sort.
        if upto < hits.len() {
            hits.select_nth_unstable_by(upto, by_score);
            hits[..upto].sort_by(by_score);
        } else {
            hits.sort_by(by_score);
        }
        hits.len()
    };
    Ok(Ranked {
        groups,
        hidden,
        hits,
        checked,
    })
}

/// The sections of `states`' indexes that `visitor` may not see: those under a condition
/// that does not hold for them. Which sections lie under which conditions is read once per
/// index generation (kept in the snapshot cache).
async fn hidden_sections(
    state: &AppState,
    states: &[SpaceState],
    visitor: &serde_json::Value,
) -> ApiResult<Hidden> {
    let mut hidden = Hidden::default();
    let mut verdicts: HashMap<String, bool> = HashMap::new();
    for (i, s) in states.iter().enumerate() {
        let Some(ix) = s.index.as_ref() else {
            continue;
        };
        let key = snapshot::key(ix, "guards", "");
        let guards = match snapshot::get::<Vec<(i64, i64, String)>>(state, &key) {
            Some(found) => found,
            None => {
                let read = Arc::new(store::search::guards(&state.db, &ix.space_id).await?);
                let bytes = read.iter().map(|(_, _, g)| g.len() + 40).sum();
                snapshot::put(state, key, read.clone(), bytes);
                read
            }
        };
        for (page_key, idx, guard) in guards.iter() {
            let shown = *verdicts.entry(guard.clone()).or_insert_with(|| {
                // A guard that does not read as conditions hides its text.
                serde_json::from_str::<Vec<String>>(guard).is_ok_and(|conditions| {
                    conditions
                        .iter()
                        .all(|c| crate::domain::published::visible(Some(c.as_str()), visitor))
                })
            });
            if !shown {
                hidden
                    .entry((i, *page_key))
                    .or_default()
                    .push(u32::try_from(*idx).unwrap_or(u32::MAX));
            }
        }
    }
    Ok(hidden)
}

/// The terms of each word of `text` (one per position, as indexed), stop words included,
/// with byte ranges.
fn tokens(analyzer: &Analyzer, text: &str) -> Vec<(usize, usize, String)> {
    analyze::tokens(text)
        .into_iter()
        .filter(|t| !t.part)
        .map(|t| {
            let term = analyzer
                .word(t.text)
                .map(|w| w.term)
                .unwrap_or_else(|| String::from("\u{1}"));
            (t.start, t.start + t.text.len(), term)
        })
        .collect()
}

fn contains_phrase(tokens: &[(usize, usize, String)], phrase: &[String]) -> bool {
    !phrase.is_empty()
        && tokens.len() >= phrase.len()
        && tokens
            .windows(phrase.len())
            .any(|w| w.iter().zip(phrase).all(|(t, p)| t.2 == *p))
}

/// A page's record with all its sections, in order, as read and as cached.
struct PageText {
    page: PageRow,
    sections: Vec<SectionRow>,
    /// Per section, the byte range of each word of its body, found once when an excerpt of
    /// it is first cut (word segmentation was a third of a frequent word's answer).
    words: Vec<OnceLock<WordRanges>>,
}

/// The byte range of each word of a text.
type WordRanges = Box<[(u32, u32)]>;

impl PageText {
    fn new(page: PageRow, mut sections: Vec<SectionRow>) -> Self {
        sections.sort_by_key(|r| r.idx);
        let words = sections.iter().map(|_| OnceLock::new()).collect();
        Self {
            page,
            sections,
            words,
        }
    }

    /// The byte ranges of the words of section `i`'s body.
    fn words(&self, i: usize) -> &[(u32, u32)] {
        match (self.words.get(i), self.sections.get(i)) {
            (Some(cell), Some(s)) => cell.get_or_init(|| word_ranges(&s.body)),
            _ => &[],
        }
    }
}

/// The byte range of each word of `text`, by position, as the index counts words
/// ([`analyze::tokens`]): a CJK bigram's range is its two characters, overlapping the next.
fn word_ranges(text: &str) -> WordRanges {
    let at = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    analyze::tokens(text)
        .into_iter()
        .filter(|t| !t.part)
        .map(|t| (at(t.start), at(t.start + t.text.len())))
        .collect()
}

impl PageText {
    fn bytes(&self) -> usize {
        let p = &self.page;
        let page = p.page_id.len() + p.title.len() + p.description.len() + p.path.len();
        let sections: usize = self
            .sections
            .iter()
            // The text, and about as much again for its word ranges once found.
            .map(|s| 64 + s.anchor.len() + s.title.len() + s.body.len() * 2)
            .sum();
        64 + page + p.ancestors.len() + sections
    }
}

/// The text of some pages: `(state index, page key)` to its record and sections.
type Texts = PageMap<Arc<PageText>>;

/// The records of pages `wanted`, each with all its sections, from the snapshot cache or
/// in one statement per space.
async fn load_texts(
    state: &AppState,
    states: &[SpaceState],
    wanted: &[(usize, i64)],
) -> ApiResult<Texts> {
    let mut out: Texts = PageMap::default();
    let mut missing: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    for (s, k) in wanted {
        let Some(ix) = states[*s].index.as_ref() else {
            continue;
        };
        match snapshot::get::<PageText>(state, &snapshot::key(ix, "page", &k.to_string())) {
            Some(text) => {
                out.insert((*s, *k), text);
            }
            None => missing.entry(*s).or_default().push(*k),
        }
    }
    for (s, keys) in missing {
        let Some(ix) = states[s].index.as_ref() else {
            continue;
        };
        let mut read: HashMap<i64, (PageRow, Vec<SectionRow>)> = HashMap::new();
        for row in store::search::texts(&state.db, &ix.space_id, &keys).await? {
            let text = read
                .entry(row.page.page_key)
                .or_insert_with(|| (row.page, Vec::new()));
            text.1.extend(row.section);
        }
        for (key, (page, sections)) in read {
            let text = Arc::new(PageText::new(page, sections));
            let bytes = text.bytes();
            snapshot::put(
                state,
                snapshot::key(ix, "page", &key.to_string()),
                text.clone(),
                bytes,
            );
            out.insert((s, key), text);
        }
    }
    Ok(out)
}

fn page_has_phrases(group: &Group, page: &PageRow, sections: &[SectionRow]) -> bool {
    let texts: Vec<Vec<(usize, usize, String)>> = std::iter::once(page.title.as_str())
        .chain(
            sections
                .iter()
                .flat_map(|s| [s.title.as_str(), s.body.as_str()]),
        )
        .map(|t| tokens(&group.analyzer, t))
        .collect();
    group
        .plan
        .phrases
        .iter()
        .all(|ph| texts.iter().any(|t| contains_phrase(t, &ph.terms)))
}

/// One section shown in a result (`SearchSectionResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct FoundSection {
    /// Its heading's anchor; empty for the text before the first heading.
    pub id: String,
    /// Its heading, or the page title for the text before the first heading.
    pub title: String,
    /// The page's path.
    pub path: String,
    /// An excerpt of its text around the matches.
    pub body: String,
    pub score: f64,
    /// Its address in the app.
    pub url: String,
}

/// One page of the results (`SearchPageResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct FoundPage {
    /// Index of its space in the states.
    pub space: usize,
    /// Its position in the ranking, from zero.
    pub position: usize,
    pub id: String,
    pub title: String,
    pub description: String,
    pub path: String,
    pub score: f64,
    /// `page` when its title matched or no section did, `section` otherwise.
    pub result_type: &'static str,
    /// Titles of its ancestors, top-level first.
    pub ancestors: Vec<String>,
    /// Its best sections, best first.
    pub sections: Vec<FoundSection>,
    /// Its address in the app.
    pub url: String,
}

/// The decoded postings of one shown page: `(term, hits)` for each term it holds among those
/// read (candidates of query words, and stop words of phrases).
type PageTerms<'a> = Vec<(&'a str, TermHits)>;

/// The hits of `term` in a page, if it holds it.
fn hits_of<'a>(terms: &'a PageTerms<'_>, term: &str) -> Option<&'a TermHits> {
    terms.iter().find(|(t, _)| *t == term).map(|(_, h)| h)
}

/// Whether some phrase of the query lies in the heading or body of section `idx`, by the
/// positions the index holds (stop words included). Phrases with a word the index does not
/// hold never matched a section's text, so they do not count here either.
fn section_has_phrase(group: &Group, terms: &PageTerms<'_>, idx: u32) -> bool {
    group.plan.phrases.iter().filter(|p| p.exact).any(|ph| {
        let parts: Option<Vec<(&TermHits, u32)>> = ph
            .words
            .iter()
            .map(|(w, off)| (group.plan.words[*w].term.as_str(), *off))
            .chain(ph.stops.iter().map(|(t, off)| (t.as_str(), *off)))
            .map(|(t, off)| hits_of(terms, t).map(|h| (h, off)))
            .collect();
        parts.is_some_and(|parts| section_aligned(&parts, idx))
    })
}

/// The positions of the matching words in the body of section `idx`, in order, each with
/// the index of its term in `terms` (one term per position: `snake_case` and its parts
/// share theirs).
fn body_matches(group: &Group, terms: &PageTerms<'_>, idx: u32) -> Vec<(u32, usize)> {
    let mut out: Vec<(u32, usize)> = Vec::new();
    for (ti, (t, h)) in terms.iter().enumerate() {
        if !group.alts.contains_key(*t) {
            continue;
        }
        if let Some(s) = h.sections.iter().find(|s| s.idx == idx) {
            out.extend(s.body.iter().map(|p| (*p, ti)));
        }
    }
    out.sort_unstable();
    out.dedup_by_key(|(p, _)| *p);
    out
}

impl Ranked {
    /// Makes sure the first `upto` hits (or all there are) passed their phrase checks,
    /// reading page texts in batches; hits that fail are dropped.
    pub async fn check_phrases(
        &mut self,
        state: &AppState,
        states: &[SpaceState],
        upto: usize,
    ) -> ApiResult<()> {
        while self.checked < upto.min(self.hits.len()) {
            let end = (self.checked + PHRASE_BATCH).min(self.hits.len());
            let batch: Vec<(usize, i64)> = self.hits[self.checked..end]
                .iter()
                .map(|h| (h.space, h.page_key))
                .collect();
            let texts = load_texts(state, states, &batch).await?;
            let mut kept = Vec::with_capacity(end - self.checked);
            for h in &self.hits[self.checked..end] {
                let group = &self.groups[h.group];
                let hidden = self.hidden.get(&(h.space, h.page_key));
                let ok = group.plan.phrases.iter().all(|p| p.exact)
                    || texts.get(&(h.space, h.page_key)).is_some_and(|t| {
                        let seen: Vec<SectionRow> = t
                            .sections
                            .iter()
                            .filter(|s| !is_hidden(hidden, s.idx))
                            .cloned()
                            .collect();
                        page_has_phrases(group, &t.page, &seen)
                    });
                if ok {
                    kept.push(*h);
                }
            }
            let n = kept.len();
            self.hits.splice(self.checked..end, kept);
            self.checked += n;
        }
        Ok(())
    }

    /// How many pages match: exact once every phrase is checked, otherwise an upper bound.
    pub fn count(&self) -> usize {
        self.hits.len()
    }

    /// The results of `hits[from..to]`, in ranking order. Everything but the excerpts comes
    /// from the postings read for ranking: section scores, the phrase bonus and where the
    /// matches are. The shown sections' text is cut at the word positions the index holds,
    /// without analysing it again.
    pub async fn render(
        &self,
        state: &AppState,
        states: &[SpaceState],
        from: usize,
        to: usize,
    ) -> ApiResult<Vec<FoundPage>> {
        let from = from.min(self.hits.len());
        let hits = &self.hits[from..to.min(self.hits.len()).max(from)];
        let slots: PageMap<usize> = hits
            .iter()
            .enumerate()
            .map(|(i, h)| ((h.space, h.page_key), i))
            .collect();
        let blocks: PageSet = hits
            .iter()
            .map(|h| (h.space, codec::block_of(h.page_key)))
            .collect();
        // The postings of the shown pages, decoded with their positions.
        let mut found: Vec<PageTerms<'_>> = vec![Vec::new(); hits.len()];
        for group in &self.groups {
            for (space, term, data) in &group.rows {
                // Every entry of a row lies in one block: skip rows of other blocks whole.
                let first = codec::entries(data).next().map(|(k, _)| k);
                if first.is_none_or(|k| !blocks.contains(&(*space, codec::block_of(k)))) {
                    continue;
                }
                for (key, bytes) in codec::entries(data) {
                    let Some(&slot) = slots.get(&(*space, key)) else {
                        continue;
                    };
                    let mut h = TermHits::default();
                    codec::decode_entry(bytes, Some(&mut h));
                    found[slot].push((&**term, h));
                }
            }
        }
        // Per page, its best sections by the postings: `(score, index)`, best first.
        let mut chosen: Vec<(bool, Vec<(f32, u32)>)> = Vec::with_capacity(hits.len());
        for (h, terms) in hits.iter().zip(&found) {
            let group = &self.groups[h.group];
            let n_words = group.plan.words.len();
            let mut title_hit = false;
            let mut cells: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
            for (t, th) in terms {
                let Some(alts) = group.alts.get(*t) else {
                    continue;
                };
                title_hit |= !th.title.is_empty();
                for s in &th.sections {
                    let x = saturate(W_HEAD * s.head.len() as f32 + W_BODY * s.body.len() as f32);
                    let row = cells.entry(s.idx).or_insert_with(|| vec![0.0; n_words]);
                    for a in alts {
                        let v = a.weight * x;
                        if v > row[a.word] {
                            row[a.word] = v;
                        }
                    }
                }
            }
            let mut scored: Vec<(f32, u32)> = cells
                .iter()
                .filter_map(|(idx, row)| {
                    let mut score: f32 = row.iter().sum();
                    if !group.plan.phrases.is_empty() && section_has_phrase(group, terms, *idx) {
                        score *= 2.0;
                    }
                    (score > 0.0).then_some((score, *idx))
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            scored.truncate(MAX_SECTIONS);
            chosen.push((title_hit, scored));
        }
        let wanted: Vec<(usize, i64)> = hits.iter().map(|h| (h.space, h.page_key)).collect();
        let texts = load_texts(state, states, &wanted).await?;
        let mut out = Vec::with_capacity(hits.len());
        for (i, ((h, terms), (title_hit, scored))) in
            hits.iter().zip(&found).zip(chosen).enumerate()
        {
            let Some(text) = texts.get(&(h.space, h.page_key)) else {
                continue;
            };
            let (page, sections) = (&text.page, &text.sections);
            let group = &self.groups[h.group];
            let space_id = &states[h.space].space_id;
            let result_type = if title_hit || scored.is_empty() {
                "page"
            } else {
                "section"
            };
            // Without a matching section, the page shows its first one the reader may see.
            let hidden = self.hidden.get(&(h.space, h.page_key));
            let shown: Vec<(f32, usize)> = if scored.is_empty() {
                sections
                    .iter()
                    .position(|s| !is_hidden(hidden, s.idx))
                    .map(|at| (0.0, at))
                    .into_iter()
                    .collect()
            } else {
                scored
                    .iter()
                    .filter_map(|(score, idx)| {
                        let at = sections.iter().position(|s| s.idx == i64::from(*idx))?;
                        Some((*score, at))
                    })
                    .collect()
            };
            let page_url = state.url(&format!("/s/{space_id}/{}", page.path));
            let sections_out = shown
                .iter()
                .map(|(score, at)| {
                    let s = &sections[*at];
                    let matches = u32::try_from(s.idx)
                        .map(|idx| body_matches(group, terms, idx))
                        .unwrap_or_default();
                    FoundSection {
                        id: s.anchor.clone(),
                        title: if s.title.is_empty() {
                            page.title.clone()
                        } else {
                            s.title.clone()
                        },
                        path: page.path.clone(),
                        body: excerpt(&s.body, text.words(*at), &matches),
                        score: round(*score),
                        url: if s.anchor.is_empty() {
                            page_url.clone()
                        } else {
                            format!("{page_url}#{}", s.anchor)
                        },
                    }
                })
                .collect();
            let ancestors: Vec<String> =
                serde_json::from_str(&page.ancestors).map_err(crate::error::ApiError::internal)?;
            out.push(FoundPage {
                space: h.space,
                position: from + i,
                id: page.page_id.clone(),
                title: page.title.clone(),
                description: page.description.clone(),
                path: page.path.clone(),
                score: round(h.score),
                result_type,
                ancestors,
                sections: sections_out,
                url: page_url,
            });
        }
        Ok(out)
    }
}

/// Whether section `idx` is among a page's `hidden` ones.
fn is_hidden(hidden: Option<&Vec<u32>>, idx: i64) -> bool {
    hidden.is_some_and(|h| u32::try_from(idx).is_ok_and(|idx| h.contains(&idx)))
}

fn round(x: f32) -> f64 {
    (f64::from(x.max(0.0)) * 1000.0).round() / 1000.0
}

/// A plain-text excerpt of `body` (whose words lie at the byte ranges `words`) around its
/// densest cluster of matching words, given as `(word position, term)` in order.
fn excerpt(body: &str, words: &[(u32, u32)], matches: &[(u32, usize)]) -> String {
    let mut start = 0;
    let mut best = 0;
    let mut distinct: Vec<usize> = Vec::new();
    for (mi, (i, _)) in matches.iter().enumerate() {
        let i = *i as usize;
        distinct.clear();
        for (_, t) in matches[mi..]
            .iter()
            .take_while(|(j, _)| (*j as usize) < i + EXCERPT_WORDS - EXCERPT_LEAD)
        {
            if !distinct.contains(t) {
                distinct.push(*t);
            }
        }
        if distinct.len() > best {
            best = distinct.len();
            start = i.saturating_sub(EXCERPT_LEAD);
        }
    }
    if words.is_empty() {
        return String::new();
    }
    if start >= words.len() {
        // Positions beyond the text (an index out of step with it): show its start.
        start = 0;
    }
    let end_word = (start + EXCERPT_WORDS).min(words.len()) - 1;
    let from = if start == 0 {
        0
    } else {
        words[start].0 as usize
    };
    let mut cut = end_word + 1 < words.len();
    let to = if cut {
        words[end_word].1 as usize
    } else {
        body.len()
    };
    // Ranges come from this very text; a mismatch (never expected) shows nothing.
    let Some(slice) = body.get(from..to) else {
        return String::new();
    };
    let mut text = slice.replace('\n', " ");
    // Bytes bound characters: only a long excerpt needs counting them.
    if text.len() > EXCERPT_MAX_CHARS {
        if let Some((at, _)) = text.char_indices().nth(EXCERPT_MAX_CHARS) {
            text.truncate(at);
            cut = true;
        }
    }
    let mut out = String::new();
    if start > 0 {
        out.push_str("… ");
    }
    out.push_str(text.trim());
    if cut {
        out.push_str(" …");
    }
    out
}

/// Folded, lower-case form of a query for cursors and logs.
pub fn normalized(query: &str) -> String {
    fold(&query.trim().to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_phrases_and_the_word_being_typed() {
        let p = parse("install \"retry policy\" web");
        assert_eq!(p.clauses.len(), 3);
        assert!(p.clauses[1].phrase);
        assert_eq!(p.clauses[1].words, vec!["retry", "policy"]);
        assert!(p.prefix_last);
        assert!(!parse("install web ").prefix_last);
        assert!(!parse("\"retry policy\"").prefix_last);
        let open = parse("\"retry pol");
        assert!(open.clauses.iter().all(|c| !c.phrase));
        assert!(open.prefix_last);
    }

    #[test]
    fn parses_cjk_runs_as_phrases_of_their_bigrams() {
        let p = parse("検索設定 API 公開");
        let words: Vec<(Vec<&str>, bool, bool)> = p
            .clauses
            .iter()
            .map(|c| {
                (
                    c.words.iter().map(String::as_str).collect(),
                    c.phrase,
                    c.run,
                )
            })
            .collect();
        assert_eq!(
            words,
            vec![
                (vec!["検索", "索設", "設定"], true, true),
                (vec!["API"], false, false),
                (vec!["公開"], false, false),
            ]
        );
        assert!(p.prefix_last);
        // A run typed last is a phrase, not a word being typed; one character is.
        assert!(!parse("公開設定").prefix_last);
        assert!(parse("検").prefix_last);
        // Quoted: one phrase of every bigram and word.
        let q = parse("\"ページを公開 API\"");
        assert_eq!(q.clauses.len(), 1);
        assert!(q.clauses[0].phrase && !q.clauses[0].run);
        assert_eq!(
            q.clauses[0].words,
            vec!["ペー", "ージ", "ジを", "を公", "公開", "API"]
        );
        assert_eq!(q.relaxed(), None);
        // Relaxed: each run's bigrams are words of their own.
        let r = p.relaxed().unwrap();
        let words: Vec<&str> = r.clauses.iter().map(|c| c.words[0].as_str()).collect();
        assert_eq!(words, vec!["検索", "索設", "設定", "API", "公開"]);
        assert!(r
            .clauses
            .iter()
            .all(|c| !c.phrase && !c.run && c.words.len() == 1));
        assert!(r.prefix_last);
    }

    #[test]
    fn cjk_excerpts_cut_at_characters() {
        let body = format!(
            "{}ウェブフックの再試行は三日間続きます。{}",
            "これは長い説明です。".repeat(10),
            "終わりの文です。".repeat(10)
        );
        let ranges = word_ranges(&body);
        let at = analyze::tokens(&body)
            .iter()
            .find(|t| t.text == "再試")
            .map(|t| t.at)
            .unwrap();
        // Positions are bigrams: one range per position, two characters each.
        assert_eq!(
            &body[ranges[at as usize].0 as usize..ranges[at as usize].1 as usize],
            "再試"
        );
        let e = excerpt(&body, &ranges, &[(at, 0), (at + 1, 0)]);
        assert!(e.starts_with("… "), "{e}");
        assert!(e.ends_with(" …"), "{e}");
        assert!(e.contains("の再試行は三日間続きます。"), "{e}");
        // Thirty bigrams from six before the match (punctuation ends runs, between them).
        assert_eq!(
            e,
            "… ェブフックの再試行は三日間続きます。終わりの文です。終わりの文です。終わり …"
        );
    }

    #[test]
    fn one_edit_neighbours() {
        let v = one_edit("webhok");
        assert!(v.contains(&"webhook".to_string()));
        assert!(v.contains(&"wbehok".to_string()));
        assert!(v.contains(&"webhk".to_string()));
        assert!(v.contains(&"webhox".to_string()));
        assert!(!v.contains(&"webhok".to_string()));
    }

    #[test]
    fn excerpts_center_on_matches() {
        let body = (0..100)
            .map(|i| {
                if i == 60 {
                    "webhooks".to_string()
                } else {
                    format!("w{i}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let cut = |body: &str, matches: &[(u32, usize)]| excerpt(body, &word_ranges(body), matches);
        let e = cut(&body, &[(60, 0)]);
        assert!(e.starts_with("… w54"), "{e}");
        assert!(e.contains("webhooks"));
        assert!(e.ends_with(" …"));
        assert_eq!(cut("Short text.", &[]), "Short text.");
        assert_eq!(cut("Two\nlines.", &[]), "Two lines.");
        // Positions past the text (an index out of step with it) show its start.
        assert_eq!(cut("Short text.", &[(90, 0)]), "Short text.");
        assert_eq!(cut("", &[(3, 0)]), "");
        // Ranges that do not fit the text show nothing rather than panic.
        // Long words: the excerpt stops at 320 characters (not bytes).
        let long = vec!["é".repeat(20); 40].join(" ");
        let e = cut(&long, &[(0, 0)]);
        assert_eq!(e.chars().count(), EXCERPT_MAX_CHARS + 2);
        assert!(e.ends_with(" …"));
        let fake: Vec<(u32, u32)> = (0..40).map(|i| (i * 10, i * 10 + 1)).collect();
        assert_eq!(excerpt("ab", &fake, &[(20, 0)]), "");
    }
}
