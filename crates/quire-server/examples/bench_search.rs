//! Search benchmarks on a generated space of 10,000 pages (~5 million words), through HTTP
//! against an in-process server on SQLite (or PostgreSQL with `QUIRE_BENCH_DATABASE_URL`):
//! - building the whole index once (what a first search after an upgrade costs);
//! - `GET SPACE/search` latency, p50 and p95, over a mix of queries (frequent, rare and
//!   mid-frequency words, two and three words, completions, typos, phrases);
//! - the index update after a one-page and a 10-page change: measured alone (`search::reindex` in a
//!   transaction), and the whole `mergeChangeRequest` that includes it;
//! - the background job that folds changed pages into the posting blocks.
//!
//! Run: `cargo run --release -p quire-server --example bench_search [-- PAGES]`; set
//! `QUIRE_BENCH_CACHE_MB` to run with a content cache of that size instead of the default
//! (this space's decoded revision weighs about 36 MB, more than the third of the default
//! 96 MB that holds decoded revisions).

mod support;

use std::sync::Arc;

use std::time::{Duration, Instant};

use quire_content::model::{Page, PageKind, Revision};
use serde_json::{json, Value};
use support::{pct, Bench};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const STOP: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "for", "that", "with", "on", "as", "are", "be",
    "this", "by", "it", "or", "from", "at", "an", "can", "you", "your", "when", "which",
];

/// Pseudo-words (consonant-vowel syllables), `VOCAB` of them, ranked by frequency.
const VOCAB: usize = 30_000;

/// Word `i`: one syllable in two before three syllables that spell `i` (6 or 8 letters,
/// all distinct).
fn word(i: usize) -> String {
    const C: &[u8] = b"bdfgklmnprstvz";
    const V: &[u8] = b"aeiou";
    let syllable = |k: usize| [C[k / V.len() % C.len()] as char, V[k % V.len()] as char];
    let mut s = String::new();
    if i.wrapping_mul(2654435761) % 2 == 1 {
        s.extend(syllable(i.wrapping_mul(40503) % 70));
    }
    // A bijection of 0..70³ (7919 is prime to 70³), so that words do not share endings.
    let mut n = i * 7919 % (70 * 70 * 70);
    for _ in 0..3 {
        s.extend(syllable(n % 70));
        n /= 70;
    }
    s
}

/// Zipf (s = 1) over the vocabulary.
struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Self {
        let mut acc = 0.0;
        let cumulative = (1..=n)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect();
        Zipf { cumulative }
    }
    fn sample(&self, rng: &mut Rng) -> usize {
        let x = rng.unit() * self.cumulative.last().unwrap();
        self.cumulative.partition_point(|c| *c < x)
    }
}

struct Gen {
    rng: Rng,
    zipf: Zipf,
    words: Vec<String>,
}

impl Gen {
    fn token(&mut self) -> String {
        if self.rng.below(100) < 35 {
            STOP[self.rng.below(STOP.len())].to_string()
        } else {
            self.words[self.zipf.sample(&mut self.rng)].clone()
        }
    }
    fn words(&mut self, n: usize) -> Vec<String> {
        (0..n).map(|_| self.token()).collect()
    }
    fn title(&mut self, n: usize) -> String {
        let mut w: Vec<String> = (0..n)
            .map(|_| self.words[50 + self.rng.below(5000)].clone())
            .collect();
        w[0][..1].make_ascii_uppercase();
        w.join(" ")
    }
    /// About 500 words: an introduction and five sections.
    fn markdown(&mut self) -> String {
        let mut md = String::new();
        md.push_str(&self.words(45).join(" "));
        md.push_str(".\n\n");
        for _ in 0..5 {
            let n = 2 + self.rng.below(3);
            let h = self.title(n);
            md.push_str(&format!("## {h}\n\n"));
            for _ in 0..2 {
                md.push_str(&self.words(45).join(" "));
                md.push_str(".\n\n");
            }
        }
        md
    }
}

fn generated(g: &mut Gen, pages: usize) -> Revision {
    let mut rev = Revision::default();
    let chapters = 100.min(pages);
    let per = pages / chapters;
    for c in 0..chapters {
        let title = g.title(3);
        let md = g.markdown();
        let mut parent = Page::document(&format!("p{c}"), &title, &format!("chapter-{c}"), &md);
        for k in 0..per.saturating_sub(1) {
            let n = 3 + g.rng.below(3);
            let title = g.title(n);
            let md = g.markdown();
            parent.pages.push(Page::document(
                &format!("p{c}-{k}"),
                &title,
                &format!("topic-{c}-{k}"),
                &md,
            ));
        }
        rev.pages.push(parent);
    }
    rev
}

fn report(name: &str, xs: &[Duration]) {
    println!(
        "{name:<56} n={:<4} p50={:>7.1} ms  p95={:>7.1} ms  max={:>7.1} ms",
        xs.len(),
        pct(xs.to_vec(), 0.5),
        pct(xs.to_vec(), 0.95),
        pct(xs.to_vec(), 1.0)
    );
}

fn enc(q: &str) -> String {
    url::form_urlencoded::byte_serialize(q.as_bytes()).collect()
}

fn mid(g: &mut Gen) -> String {
    g.words[200 + g.rng.below(3000)].clone()
}

/// The query mix: `(kind, query)`.
fn queries(g: &mut Gen, rev: &Revision) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for _ in 0..20 {
        let frequent = g.words[g.rng.below(50)].clone();
        out.push(("one frequent word", frequent));
        let w = mid(g);
        out.push(("one mid-frequency word", w));
        let rare = g.words[10_000 + g.rng.below(VOCAB - 10_000)].clone();
        out.push(("one rare word", rare));
        let (a, b) = (mid(g), mid(g));
        out.push(("two words", format!("{a} {b} ")));
        let (a, b, c) = (g.words[g.rng.below(100)].clone(), mid(g), mid(g));
        out.push(("three words", format!("{a} {b} {c} ")));
        let w = mid(g);
        let typed: String = w.chars().take(w.len().clamp(3, 5) - 1).collect();
        let first = mid(g);
        out.push(("completion of the last word", format!("{first} {typed}")));
        let w = mid(g);
        let m = w.len() / 2;
        out.push(("one typo", format!("{}{} ", &w[..m], &w[m + 1..])));
        // Three consecutive words of some page, as a phrase.
        let flat = rev.flatten();
        let page = flat[g.rng.below(flat.len())].page;
        let text = page.markdown().unwrap_or("");
        let words: Vec<&str> = text
            .split_whitespace()
            .filter(|w| !w.starts_with('#'))
            .collect();
        let at = g.rng.below(words.len().saturating_sub(3).max(1));
        let phrase = words[at..(at + 3).min(words.len())]
            .iter()
            .map(|w| w.trim_end_matches('.'))
            .collect::<Vec<_>>()
            .join(" ");
        out.push(("phrase", format!("\"{phrase}\"")));
    }
    out
}

#[tokio::main]
async fn main() {
    let pages: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let cache_mb = std::env::var("QUIRE_BENCH_CACHE_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let bench = Bench::start_with(dir.path(), |c| {
        if let Some(mb) = cache_mb {
            c.cache_mb = mb;
        }
    })
    .await;
    println!("content cache: {} MiB", bench.config.cache_mb);
    let (state, c) = (bench.state.clone(), &bench.client);
    let (org, space) = (bench.org.clone(), bench.space.clone());

    // Seed: the generated revision becomes the space's content through the content store.
    let t = Instant::now();
    let mut g = Gen {
        rng: Rng(0x9e37_79b9_7f4a_7c15),
        zipf: Zipf::new(VOCAB),
        words: (0..VOCAB).map(word).collect(),
    };
    let rev = generated(&mut g, pages);
    let word_count: usize = rev
        .flatten()
        .iter()
        .map(|p| {
            p.page.title.split_whitespace().count()
                + p.page
                    .markdown()
                    .map_or(0, |m| m.split_whitespace().count())
        })
        .sum();
    let bytes: usize = rev
        .flatten()
        .iter()
        .map(|p| p.page.markdown().map_or(0, str::len))
        .sum();
    bench.seed(rev.clone()).await;
    println!(
        "seeded {} pages, {word_count} words, {bytes} bytes of markdown, in {:.1} s",
        rev.flatten().len(),
        t.elapsed().as_secs_f64()
    );

    // The whole index, once.
    let t = Instant::now();
    quire_server::domain::search::sync(&state, &space)
        .await
        .unwrap();
    println!("full index build: {:.1} s", t.elapsed().as_secs_f64());
    for table in [
        "search_pages",
        "search_sections",
        "search_postings",
        "search_terms",
        "search_words",
    ] {
        let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(state.db.pool())
            .await
            .unwrap();
        println!("  {table}: {n} rows");
    }

    // Queries. The search itself is measured: the cache of whole answers (which serves a
    // repeated question without searching) is off, then measured on its own below.
    quire_server::domain::search::results::set_enabled(&state, false);
    let qs = queries(&mut g, &rev);
    // `QUIRE_BENCH_HOLD=SECONDS`: keep the server up that long for a profiler, after
    // printing how to reach it and the queries.
    if let Some(secs) = std::env::var("QUIRE_BENCH_HOLD")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        println!(
            "holding {secs} s: base {} token {} space {space}",
            c.base, c.token
        );
        for (kind, q) in &qs {
            println!("query\t{kind}\t{q}");
        }
        tokio::time::sleep(Duration::from_secs(secs)).await;
    }
    let verbose = std::env::var_os("QUIRE_BENCH_VERBOSE").is_some();
    for (kind, q) in &qs {
        let t = Instant::now();
        c.ok(
            reqwest::Method::GET,
            &format!("/v1/spaces/{space}/search?query={}&limit=10", enc(q)),
            None,
        )
        .await;
        if verbose {
            println!(
                "{:>8.1} ms  {kind}: {q}",
                t.elapsed().as_secs_f64() * 1000.0
            );
        }
    }
    for limit in [10, 100] {
        let mut all = Vec::new();
        let mut by_kind: Vec<(&str, Vec<Duration>)> = Vec::new();
        let mut empty = 0;
        for round in 0..3 {
            for (kind, q) in &qs {
                let t = Instant::now();
                let res = c
                    .ok(
                        reqwest::Method::GET,
                        &format!("/v1/spaces/{space}/search?query={}&limit={limit}", enc(q)),
                        None,
                    )
                    .await;
                let d = t.elapsed();
                if round == 0 && res["items"].as_array().is_none_or(Vec::is_empty) {
                    empty += 1;
                }
                all.push(d);
                match by_kind.iter_mut().find(|(k, _)| k == kind) {
                    Some((_, v)) => v.push(d),
                    None => by_kind.push((kind, vec![d])),
                }
            }
        }
        println!(
            "GET SPACE/search?limit={limit} ({} queries x 3, {empty} without results)",
            qs.len()
        );
        report("  all queries", &all);
        for (kind, v) in &by_kind {
            report(&format!("  {kind}"), v);
        }
    }
    // The same questions again with the answer cache on: the first pass fills it, the
    // next ones are served from it (what repeated questions cost).
    quire_server::domain::search::results::set_enabled(&state, true);
    let mut cached = Vec::new();
    for round in 0..4 {
        for (_, q) in &qs {
            let t = Instant::now();
            c.ok(
                reqwest::Method::GET,
                &format!("/v1/spaces/{space}/search?query={}&limit=10", enc(q)),
                None,
            )
            .await;
            if round > 0 {
                cached.push(t.elapsed());
            }
        }
    }
    report(
        "GET SPACE/search?limit=10, answers cached (repeats)",
        &cached,
    );
    quire_server::domain::search::results::set_enabled(&state, false);
    // And with nothing of the index kept in memory: every read from the database (what the
    // first searches after a change of the space cost).
    quire_server::domain::search::snapshot::set_enabled(&state, false);
    let mut cold = Vec::new();
    let mut cold_by_kind: Vec<(&str, Vec<Duration>)> = Vec::new();
    for (kind, q) in &qs {
        let t = Instant::now();
        c.ok(
            reqwest::Method::GET,
            &format!("/v1/spaces/{space}/search?query={}&limit=10", enc(q)),
            None,
        )
        .await;
        let d = t.elapsed();
        cold.push(d);
        match cold_by_kind.iter_mut().find(|(k, _)| k == kind) {
            Some((_, v)) => v.push(d),
            None => cold_by_kind.push((kind, vec![d])),
        }
    }
    report("GET SPACE/search?limit=10, index cache off", &cold);
    for (kind, v) in &cold_by_kind {
        report(&format!("  {kind}"), v);
    }
    quire_server::domain::search::snapshot::set_enabled(&state, true);
    let mut org_lat = Vec::new();
    for (_, q) in qs.iter().take(80) {
        let t = Instant::now();
        c.ok(
            reqwest::Method::GET,
            &format!("/v1/orgs/{org}/search?query={}&limit=10", enc(q)),
            None,
        )
        .await;
        org_lat.push(t.elapsed());
    }
    report("GET ORG/search?limit=10 (one space)", &org_lat);

    // The index update for a one-page and a 10-page change, alone: `search::reindex` inside
    // a transaction (rolled back), from the indexed revision to one with those pages edited.
    for changed in [1, 10] {
        let mut alone = Vec::new();
        for round in 0..12 {
            let mut next = rev.clone();
            for k in 0..changed {
                let c = (round * 7 + k * 9) % next.pages.len();
                let i = (round * 3 + k) % next.pages[c].pages.len().max(1);
                let md = g.markdown();
                if let PageKind::Document(d) = &mut next.pages[c].pages[i].kind {
                    d.markdown = md;
                }
            }
            let next = Arc::new(next);
            let mut tx = state.db.begin().await.unwrap();
            tx.touches(&[]);
            let t = Instant::now();
            let out =
                quire_server::domain::search::reindex(&state, &mut tx, &space, "bench", &next)
                    .await
                    .unwrap();
            alone.push(t.elapsed());
            assert_eq!((out.kind, out.analysed), ("incremental", changed));
            drop(tx);
        }
        report(
            &format!("index update after a {changed}-page change (reindex alone)"),
            &alone,
        );
    }

    // Through HTTP: merging 10-page change requests, index update included.
    let children = (pages / 100).saturating_sub(1).max(1);
    let mut merges = Vec::new();
    let mut after = Vec::new();
    for round in 0..10 {
        let cr = c
            .ok(
                reqwest::Method::POST,
                &format!("/v1/spaces/{space}/change-requests"),
                Some(json!({})),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let marker = format!("zqx{round}marker");
        let changes: Vec<Value> = (0..10)
            .map(|k| {
                let c = (round * 11 + k * 7) % 100;
                json!({
                    "operation": "update_page",
                    "page": format!("p{c}-{}", (50 + round) % children),
                    "document": { "markdown": format!("{}\n\nNew: {marker}.\n", g.markdown()) }
                })
            })
            .collect();
        c.ok(
            reqwest::Method::POST,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
            Some(json!({ "changes": changes })),
        )
        .await;
        let t = Instant::now();
        c.ok(
            reqwest::Method::POST,
            &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
            Some(json!({})),
        )
        .await;
        merges.push(t.elapsed());
        let t = Instant::now();
        let res = c
            .ok(
                reqwest::Method::GET,
                &format!("/v1/spaces/{space}/search?query={marker}&limit=20"),
                None,
            )
            .await;
        after.push(t.elapsed());
        assert_eq!(res["count"], 10, "the merged text is searchable at once");
    }
    report(
        "merge a 10-page change request (index update included)",
        &merges,
    );
    report("search right after the merge (finds the 10 pages)", &after);

    // The job that folds changed pages into the blocks, one short transaction per step.
    // Let the job the merges above started finish, change 30 more pages (below the job's
    // threshold, so that no job runs meanwhile), and fold them step by step.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let s = quire_server::store::spaces::get(&state.db, &space)
        .await
        .unwrap()
        .unwrap();
    let row = quire_server::store::revisions::get(&state.db, &space, &s.revision_id)
        .await
        .unwrap()
        .unwrap();
    let mut next = (*quire_server::domain::content::load_in(&state, &row.space_id, &row.root)
        .await
        .unwrap())
    .clone();
    for k in 0..30 {
        let c = (k * 13) % next.pages.len();
        let i = k % next.pages[c].pages.len().max(1);
        let md = g.markdown();
        if let PageKind::Document(d) = &mut next.pages[c].pages[i].kind {
            d.markdown = md;
        }
    }
    let mut tx = state.db.begin().await.unwrap();
    tx.touches(&[]);
    quire_server::domain::search::reindex(&state, &mut tx, &space, "fold", &Arc::new(next))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let mut steps = Vec::new();
    loop {
        let mut tx = state.db.begin().await.unwrap();
        tx.touches(&[]);
        let t = Instant::now();
        let more = quire_server::domain::search::index::compact(&state, &mut tx, &space, 8)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        steps.push(t.elapsed());
        if !more {
            break;
        }
    }
    report(
        "fold job: one transaction (8 superseded + 8 new pages)",
        &steps,
    );

    bench.stop().await;
}
