//! Answering a query: parsing (words, "phrases", the word being typed), candidate terms
//! (exact stems, completions of the last word, one-typo neighbours), BM25F ranking of pages,
//! phrase checks on the section text, and result sections with excerpts.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{json, Value};
use unicode_segmentation::UnicodeSegmentation;

use super::analyze::{fold, Analyzer, TermHits};
use super::codec;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;
use crate::store::search::{PageRow, SectionRow, SpaceState};

/// Longest accepted query, in characters (the official `maxLength`).
pub const MAX_QUERY_CHARS: usize = 512;

// BM25F: saturation, field weights and length normalisation per field.
const K1: f32 = 1.2;
const W_TITLE: f32 = 5.0;
const W_HEAD: f32 = 2.0;
const W_BODY: f32 = 1.0;
const B_TITLE: f32 = 0.3;
const B_HEAD: f32 = 0.4;
const B_BODY: f32 = 0.75;
/// How much a completion of the word being typed, or a one-typo neighbour, counts
/// against the word itself.
const PREFIX_WEIGHT: f32 = 0.9;
const TYPO_WEIGHT: f32 = 0.7;
/// Terms a completion or a typo may expand to (the most frequent ones).
const MAX_EXPANSIONS: usize = 8;
/// Dictionary words read per space for a completion.
const PREFIX_SCAN: i64 = 200;
/// Words shorter than this are not corrected.
const TYPO_MIN_CHARS: usize = 5;
/// Query words considered.
const MAX_WORDS: usize = 16;
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

/// One part of a query: a word, or a quoted phrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    pub words: Vec<String>,
    pub phrase: bool,
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub clauses: Vec<Clause>,
    /// The last word is still being typed: it also matches the words it starts.
    pub prefix_last: bool,
}

/// Splits a query into words and quoted phrases. An unclosed quote counts as no quote.
pub fn parse(query: &str) -> Parsed {
    fn flush(out: &mut Vec<Clause>, text: &str, phrase: bool) {
        let words: Vec<String> = text.unicode_words().map(str::to_string).collect();
        if phrase && words.len() > 1 {
            out.push(Clause {
                words,
                phrase: true,
            });
        } else {
            out.extend(words.into_iter().map(|w| Clause {
                words: vec![w],
                phrase: false,
            }));
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
        let typo = w.surface.chars().count() >= TYPO_MIN_CHARS;
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
    /// Average field lengths: title, headings, body.
    avg: [f32; 3],
    /// Posting blocks read: `(state index, term, data)`.
    rows: Vec<(usize, String, Vec<u8>)>,
}

/// A ranked page.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    group: usize,
    /// Index into the states.
    pub space: usize,
    pub page_key: i64,
    pub score: f32,
}

/// The ranked answer to a query over some spaces.
pub struct Ranked {
    groups: Vec<Group>,
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

/// Where the postings read by one query go, with what excludes and counts them.
struct Sink<'a> {
    rows: &'a mut Vec<(usize, String, Vec<u8>)>,
    ids: &'a [&'a str],
    by_id: &'a HashMap<&'a str, usize>,
    /// Superseded pages, left out.
    dead: &'a HashSet<(usize, i64)>,
    /// Pages per term.
    counts: &'a mut HashMap<String, i64>,
}

impl Sink<'_> {
    /// Reads the posting blocks of `terms` (only `blocks` when given).
    async fn blocks(
        &mut self,
        state: &AppState,
        terms: &[&str],
        blocks: Option<&[i64]>,
    ) -> ApiResult<()> {
        if terms.is_empty() {
            return Ok(());
        }
        let found = store::search::postings(&state.db, self.ids, terms, blocks).await?;
        for (space, term, data) in found {
            let Some(&i) = self.by_id.get(space.as_str()) else {
                continue;
            };
            let dead = self.dead;
            let data = if dead.is_empty()
                || !codec::entries(&data).any(|(k, _)| dead.contains(&(i, k)))
            {
                data
            } else {
                codec::encode_block(codec::entries(&data).filter(|(k, _)| !dead.contains(&(i, *k))))
            };
            *self.counts.entry(term.clone()).or_default() += codec::entries(&data).count() as i64;
            self.rows.push((i, term, data));
        }
        Ok(())
    }

    /// Reads the delta postings of `terms`.
    async fn delta(&mut self, state: &AppState, terms: &[&str]) -> ApiResult<()> {
        if terms.is_empty() {
            return Ok(());
        }
        for (space, term, key, entry) in
            store::search::delta_postings(&state.db, self.ids, terms).await?
        {
            let Some(&i) = self.by_id.get(space.as_str()) else {
                continue;
            };
            *self.counts.entry(term.clone()).or_default() += 1;
            self.rows
                .push((i, term, codec::encode_block([(key, entry.as_slice())])));
        }
        Ok(())
    }

    /// Reads every posting of `terms`.
    async fn all(&mut self, state: &AppState, terms: &[&str]) -> ApiResult<()> {
        self.blocks(state, terms, None).await?;
        self.delta(state, terms).await
    }
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

async fn prepare(
    state: &AppState,
    states: &[SpaceState],
    spaces: Vec<usize>,
    analyzer: Analyzer,
    parsed: &Parsed,
) -> ApiResult<Group> {
    let plan = plan(&analyzer, parsed);
    let ids: Vec<&str> = spaces
        .iter()
        .map(|i| states[*i].space_id.as_str())
        .collect();
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
        avg,
        rows: Vec::new(),
    };
    if group.plan.words.is_empty() || pages == 0 {
        return Ok(group);
    }
    let by_id: HashMap<&str, usize> = group
        .spaces
        .iter()
        .map(|i| (states[*i].space_id.as_str(), *i))
        .collect();
    let dead: HashSet<(usize, i64)> = store::search::dead_keys(&state.db, &ids)
        .await?
        .into_iter()
        .filter_map(|(s, k)| by_id.get(s.as_str()).map(|i| (*i, k)))
        .collect();

    // Candidate terms: each word's own term, and completions of the word being typed.
    let mut candidates: Vec<(usize, String, f32)> = Vec::new();
    for (wi, w) in group.plan.words.iter().enumerate() {
        if !w.stop {
            candidates.push((wi, w.term.clone(), 1.0));
        }
        if w.prefix && w.surface.chars().count() >= 2 {
            let found = store::search::prefixed(&state.db, &ids, &w.surface, PREFIX_SCAN).await?;
            let terms: Vec<String> = found
                .into_iter()
                .map(|(_, t)| t)
                .filter(|t| *t != w.term)
                .collect();
            for t in most_frequent(state, &ids, terms, MAX_EXPANSIONS).await? {
                candidates.push((wi, t, PREFIX_WEIGHT));
            }
        }
    }
    let mut terms: Vec<&str> = candidates.iter().map(|(_, t, _)| t.as_str()).collect();
    terms.sort_unstable();
    terms.dedup();
    let mut counts: HashMap<String, i64> = HashMap::new();
    let mut rows = Vec::new();
    let mut sink = Sink {
        rows: &mut rows,
        ids: &ids,
        by_id: &by_id,
        dead: &dead,
        counts: &mut counts,
    };
    sink.all(state, &terms).await?;

    // Long words found nowhere: their neighbours one typo away.
    let mut corrections: Vec<(usize, String, f32)> = Vec::new();
    for (wi, w) in group.plan.words.iter().enumerate() {
        let found = candidates
            .iter()
            .any(|(cw, t, _)| *cw == wi && sink.counts.get(t).copied().unwrap_or(0) > 0);
        if found || !w.typo {
            continue;
        }
        let variants = one_edit(&w.surface);
        let terms: Vec<String> = store::search::words(&state.db, &ids, &variants)
            .await?
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        for t in most_frequent(state, &ids, terms, MAX_EXPANSIONS).await? {
            corrections.push((wi, t, TYPO_WEIGHT));
        }
    }
    if !corrections.is_empty() {
        let terms: Vec<&str> = corrections
            .iter()
            .map(|(_, t, _)| t.as_str())
            .filter(|t| !sink.counts.contains_key(*t))
            .collect();
        sink.all(state, &terms).await?;
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
            .filter(|(_, t, _)| rarest.contains(t.as_str()))
            .flat_map(|(_, _, data)| codec::entries(data).map(|(k, _)| codec::block_of(k)))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for chunk in blocks.chunks(IN_CHUNK_BLOCKS) {
            sink.blocks(state, &stops, Some(chunk)).await?;
        }
        sink.delta(state, &stops).await?;
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
    Ok(group)
}

/// Ranks the pages of `group` (phrases aside): BM25F per page, each query word counting
/// with its best candidate term, scaled by the share of query words the page matches.
fn rank(gi: usize, group: &Group, out: &mut Vec<Hit>) {
    let n_words = group.plan.words.len();
    if n_words == 0 || group.live_words == 0 {
        return;
    }
    let mut slots: HashMap<(usize, i64), usize> = HashMap::new();
    let mut best: Vec<f32> = Vec::new();
    for (space, term, data) in &group.rows {
        let Some(alts) = group.alts.get(term) else {
            continue;
        };
        for (key, bytes) in codec::entries(data) {
            let e = codec::decode_entry(bytes, None);
            let tfn = W_TITLE * e.title_tf as f32 / norm(e.title_len, group.avg[0], B_TITLE)
                + W_HEAD * e.head_tf as f32 / norm(e.head_len, group.avg[1], B_HEAD)
                + W_BODY * e.body_tf as f32 / norm(e.body_len, group.avg[2], B_BODY);
            if tfn <= 0.0 {
                continue;
            }
            let sat = saturate(tfn);
            let slot = *slots.entry((*space, key)).or_insert_with(|| {
                best.resize(best.len() + n_words, 0.0);
                best.len() / n_words - 1
            });
            for a in alts {
                let v = a.weight * sat;
                let cell = &mut best[slot * n_words + a.word];
                if v > *cell {
                    *cell = v;
                }
            }
        }
    }
    let live = group.live_words as f32;
    // Phrases: pages holding every word of each phrase, then the words at the right
    // distances in one field of one section (or in the title), by their positions.
    let mut phrase_ok: Option<HashSet<(usize, i64)>> = None;
    if !group.plan.phrases.is_empty() {
        let candidates: HashSet<(usize, i64)> = slots
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
        out.push(Hit {
            group: gi,
            space,
            page_key,
            score: sum * coverage * coverage,
        });
    }
}

/// The `candidates` whose postings place every phrase's words at their offsets in one
/// field (the title, or a heading or body of one section).
fn phrase_pages(group: &Group, candidates: &HashSet<(usize, i64)>) -> HashSet<(usize, i64)> {
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
    let mut slots: HashMap<(usize, i64), usize> = HashMap::new();
    let mut cells: Vec<Option<&[u8]>> = Vec::new();
    for (space, term, data) in &group.rows {
        let Some(ti) = terms.iter().position(|t| *t == term.as_str()) else {
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
    let mut ok = HashSet::new();
    let mut decoded: Vec<TermHits> = vec![TermHits::default(); k];
    let mut have = vec![false; k];
    for (page, slot) in slots {
        let row = &cells[slot * k..(slot + 1) * k];
        have.iter_mut().for_each(|h| *h = false);
        let all = phrases.iter().all(|parts| {
            if parts.iter().any(|(ti, _)| row[*ti].is_none()) {
                return false;
            }
            for (ti, _) in parts {
                if !have[*ti] {
                    codec::decode_entry(row[*ti].unwrap_or_default(), Some(&mut decoded[*ti]));
                    have[*ti] = true;
                }
            }
            let hits: Vec<(&TermHits, u32)> = parts
                .iter()
                .map(|(ti, off)| (&decoded[*ti], *off))
                .collect();
            phrase_in_hits(&hits)
        });
        if all {
            ok.insert(page);
        }
    }
    ok
}

/// Whether the words (their hits, each with its offset in the phrase) line up in one field.
fn phrase_in_hits(words: &[(&TermHits, u32)]) -> bool {
    let aligned = |fields: &[(&[u32], u32)]| -> bool {
        let (first, first_off) = fields[0];
        first.iter().any(|&p| {
            fields[1..].iter().all(|(positions, off)| {
                (p + off)
                    .checked_sub(first_off)
                    .is_some_and(|want| positions.binary_search(&want).is_ok())
            })
        })
    };
    let titles: Vec<(&[u32], u32)> = words
        .iter()
        .map(|(h, o)| (h.title.as_slice(), *o))
        .collect();
    if aligned(&titles) {
        return true;
    }
    let (first, _) = words[0];
    first.sections.iter().any(|s| {
        let mut heads = Vec::with_capacity(words.len());
        let mut bodies = Vec::with_capacity(words.len());
        for (h, off) in words {
            match h.sections.iter().find(|x| x.idx == s.idx) {
                Some(x) => {
                    heads.push((x.head.as_slice(), *off));
                    bodies.push((x.body.as_slice(), *off));
                }
                None => return false,
            }
        }
        aligned(&heads) || aligned(&bodies)
    })
}

/// Runs a query over `states` (live spaces with fresh indexes).
pub async fn run(state: &AppState, states: &[SpaceState], parsed: &Parsed) -> ApiResult<Ranked> {
    // One group per analysis: the query is analysed as each space's text was.
    let mut by_analyzer: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in states.iter().enumerate() {
        if s.index.as_ref().is_some_and(|ix| ix.pages > 0) {
            let key = Analyzer::for_language(s.language.as_deref()).key();
            by_analyzer.entry(key).or_default().push(i);
        }
    }
    let mut groups = Vec::new();
    for spaces in by_analyzer.into_values() {
        let analyzer = Analyzer::for_language(states[spaces[0]].language.as_deref());
        groups.push(prepare(state, states, spaces, analyzer, parsed).await?);
    }
    let mut hits = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        rank(gi, g, &mut hits);
    }
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.space.cmp(&b.space))
            .then(a.page_key.cmp(&b.page_key))
    });
    // Phrases with stop words are checked on the text too, as far as results are shown.
    let checked = if groups
        .iter()
        .any(|g| g.plan.phrases.iter().any(|p| !p.exact))
    {
        0
    } else {
        hits.len()
    };
    Ok(Ranked {
        groups,
        hits,
        checked,
    })
}

/// The terms of each word of `text`, stop words included, with byte ranges.
fn tokens(analyzer: &Analyzer, text: &str) -> Vec<(usize, usize, String)> {
    text.unicode_word_indices()
        .map(|(at, w)| {
            let term = analyzer
                .word(w)
                .map(|w| w.term)
                .unwrap_or_else(|| String::from("\u{1}"));
            (at, at + w.len(), term)
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

/// Per section of a page, each query word's best score; and whether its title matched.
type SectionScores = (BTreeMap<u32, Vec<f32>>, bool);

/// The text of some pages: `(state index, page key)` to its record and sections.
type Texts = HashMap<(usize, i64), (PageRow, Vec<SectionRow>)>;

async fn load_texts(
    state: &AppState,
    states: &[SpaceState],
    wanted: &[(usize, i64)],
) -> ApiResult<Texts> {
    let mut by_space: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    for (s, k) in wanted {
        by_space.entry(*s).or_default().push(*k);
    }
    let mut out: Texts = HashMap::new();
    for (s, keys) in by_space {
        let id = &states[s].space_id;
        let mut sections: HashMap<i64, Vec<SectionRow>> = HashMap::new();
        for row in store::search::sections(&state.db, id, &keys).await? {
            sections.entry(row.page_key).or_default().push(row);
        }
        for page in store::search::pages(&state.db, id, &keys).await? {
            let mut secs = sections.remove(&page.page_key).unwrap_or_default();
            secs.sort_by_key(|r| r.idx);
            out.insert((s, page.page_key), (page, secs));
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
                let ok = group.plan.phrases.iter().all(|p| p.exact)
                    || texts
                        .get(&(h.space, h.page_key))
                        .is_some_and(|(p, s)| page_has_phrases(group, p, s));
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

    /// The result objects (`SearchPageResult`) of `hits[from..to]`, each with its position
    /// in the ranking and its state index; ranks are one-based positions in the ranking.
    pub async fn render(
        &self,
        state: &AppState,
        states: &[SpaceState],
        from: usize,
        to: usize,
    ) -> ApiResult<Vec<(usize, usize, Value)>> {
        let from = from.min(self.hits.len());
        let hits = &self.hits[from..to.min(self.hits.len())];
        let wanted: Vec<(usize, i64)> = hits.iter().map(|h| (h.space, h.page_key)).collect();
        let texts = load_texts(state, states, &wanted).await?;
        let wanted_set: HashSet<(usize, i64)> = wanted.iter().copied().collect();
        // Per page: per section, per word, the best score; and whether a title matched.
        let mut detail: HashMap<(usize, i64), SectionScores> = HashMap::new();
        for group in &self.groups {
            let n_words = group.plan.words.len();
            let mut secs = TermHits::default();
            for (space, term, data) in &group.rows {
                let Some(alts) = group.alts.get(term) else {
                    continue;
                };
                for (key, bytes) in codec::entries(data) {
                    if !wanted_set.contains(&(*space, key)) {
                        continue;
                    }
                    let e = codec::decode_entry(bytes, Some(&mut secs));
                    let d = detail.entry((*space, key)).or_default();
                    d.1 |= e.title_tf > 0;
                    for s in &secs.sections {
                        let x =
                            saturate(W_HEAD * s.head.len() as f32 + W_BODY * s.body.len() as f32);
                        let cells = d.0.entry(s.idx).or_insert_with(|| vec![0.0; n_words]);
                        for a in alts {
                            let v = a.weight * x;
                            if v > cells[a.word] {
                                cells[a.word] = v;
                            }
                        }
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(hits.len());
        for (i, h) in hits.iter().enumerate() {
            let Some((page, sections)) = texts.get(&(h.space, h.page_key)) else {
                continue;
            };
            let group = &self.groups[h.group];
            let space_id = &states[h.space].space_id;
            let (by_section, title_hit) = detail.remove(&(h.space, h.page_key)).unwrap_or_default();
            let mut scored: Vec<(f32, &SectionRow)> = sections
                .iter()
                .filter_map(|s| {
                    let idx = u32::try_from(s.idx).ok()?;
                    let cells = by_section.get(&idx)?;
                    let mut score: f32 = cells.iter().sum();
                    if !group.plan.phrases.is_empty() {
                        let t: Vec<_> = [s.title.as_str(), s.body.as_str()]
                            .iter()
                            .flat_map(|x| tokens(&group.analyzer, x))
                            .collect();
                        if group
                            .plan
                            .phrases
                            .iter()
                            .any(|p| contains_phrase(&t, &p.terms))
                        {
                            score *= 2.0;
                        }
                    }
                    (score > 0.0).then_some((score, s))
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.idx.cmp(&b.1.idx)));
            scored.truncate(MAX_SECTIONS);
            let result_type = if title_hit || scored.is_empty() {
                "page"
            } else {
                "section"
            };
            if scored.is_empty() {
                if let Some(first) = sections.first() {
                    scored.push((0.0, first));
                }
            }
            let page_url = state.url(&format!("/s/{space_id}/{}", page.path));
            let match_terms: HashSet<&str> = group.alts.keys().map(String::as_str).collect();
            let sections_json: Vec<Value> = scored
                .iter()
                .map(|(score, s)| {
                    let url = if s.anchor.is_empty() {
                        page_url.clone()
                    } else {
                        format!("{page_url}#{}", s.anchor)
                    };
                    json!({
                        "id": s.anchor,
                        "title": if s.title.is_empty() { page.title.as_str() } else { s.title.as_str() },
                        "path": page.path,
                        "body": excerpt(&group.analyzer, &s.body, &match_terms),
                        "score": round(*score),
                        "resultType": "section",
                        "urls": { "app": url },
                    })
                })
                .collect();
            let ancestors: Vec<String> =
                serde_json::from_str(&page.ancestors).map_err(crate::error::ApiError::internal)?;
            out.push((
                from + i,
                h.space,
                json!({
                    "id": page.page_id,
                    "title": page.title,
                    "description": page.description,
                    "path": page.path,
                    "score": round(h.score),
                    "rank": from + i + 1,
                    "resultType": result_type,
                    "ancestors": ancestors.iter().map(|t| json!({ "title": t })).collect::<Vec<_>>(),
                    "sections": sections_json,
                    "urls": { "app": page_url },
                }),
            ));
        }
        Ok(out)
    }
}

fn round(x: f32) -> f64 {
    (f64::from(x.max(0.0)) * 1000.0).round() / 1000.0
}

/// A plain-text excerpt of `body` around its densest cluster of matching words.
fn excerpt(analyzer: &Analyzer, body: &str, terms: &HashSet<&str>) -> String {
    let words: Vec<(usize, &str)> = body.unicode_word_indices().collect();
    if words.is_empty() {
        return String::new();
    }
    let matches: Vec<(usize, String)> = words
        .iter()
        .enumerate()
        .filter_map(|(i, (_, w))| {
            let a = analyzer.word(w)?;
            terms.contains(a.term.as_str()).then_some((i, a.term))
        })
        .collect();
    let mut start = 0;
    let mut best = 0;
    for (mi, (i, _)) in matches.iter().enumerate() {
        let distinct: HashSet<&str> = matches[mi..]
            .iter()
            .take_while(|(j, _)| *j < i + EXCERPT_WORDS - EXCERPT_LEAD)
            .map(|(_, t)| t.as_str())
            .collect();
        if distinct.len() > best {
            best = distinct.len();
            start = i.saturating_sub(EXCERPT_LEAD);
        }
    }
    let end_word = (start + EXCERPT_WORDS).min(words.len()) - 1;
    let from = if start == 0 { 0 } else { words[start].0 };
    let (last_at, last) = words[end_word];
    let mut cut = end_word + 1 < words.len();
    let to = if cut {
        last_at + last.len()
    } else {
        body.len()
    };
    let mut text: String = body[from..to]
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if text.chars().count() > EXCERPT_MAX_CHARS {
        text = text.chars().take(EXCERPT_MAX_CHARS).collect();
        cut = true;
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
        let a = Analyzer::for_language(None);
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
        let terms: HashSet<&str> = ["webhook"].into_iter().collect();
        let e = excerpt(&a, &body, &terms);
        assert!(e.starts_with("… w54"), "{e}");
        assert!(e.contains("webhooks"));
        assert!(e.ends_with(" …"));
        assert_eq!(excerpt(&a, "Short text.", &terms), "Short text.");
        assert_eq!(excerpt(&a, "Two\nlines.", &terms), "Two lines.");
    }
}
