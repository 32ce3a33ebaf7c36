//! Benchmarks on a generated 10,000-page revision: store delta after a one-page change,
//! a 10-page merge, and applying a one-page edit batch.
//!
//! Run with `cargo bench -p quire-content --bench engine`. A plain harness keeps the
//! dependency tree small; each measurement reports the median of several runs.
//!
//! The three operations the server's change-request endpoints run are measured twice: on
//! revisions derived in memory from one another (as after an edit in the same process), and
//! on revisions decoded separately from the object store (as the server loads them), which
//! share nothing. Inputs are prepared outside the timed region, fresh for every run, so that
//! nothing one run computes can help the next. The `root` lines print the content hash of
//! each result, so that a change to the engine can be checked not to change any result.
//! `cargo bench -p quire-content --bench engine -- merge` runs only the lines naming `merge`;
//! `QUIRE_BENCH_RUNS` sets the number of runs (9 by default).
//!
//! Medians on the shared 2-core machine (noisy: other builds ran alongside), before and
//! after making the engine incremental (shared documents remembering their hashes, merge on
//! integer keys, lazy link index); the before column is the previous engine measured with
//! this same harness, right before the after column. Every `root` line is identical.
//!
//! | operation (10,000 pages, 17.3 MB)     | before  | after   |
//! |---------------------------------------|---------|---------|
//! | encode_delta, one page changed         | 52.2 ms | 6.3 ms  |
//! | encode_missing, one page changed       | —       | 4.2 ms  |
//! | merge, 10 pages changed                | 84.4 ms | 5.1 ms  |
//! | apply, one-page batch                  | 21.0 ms | 2.3 ms  |
//! | decoded: encode_delta                  | 36.4 ms | 7.4 ms  |
//! | decoded: encode_missing                | —       | 5.0 ms  |
//! | decoded: merge                         | 73.9 ms | 7.2 ms  |
//! | decoded: apply                         | 23.1 ms | 3.2 ms  |
//! | decoded: apply + encode_delta          | 62.5 ms | 10.9 ms |
//! | decoded: apply + encode_missing        | —       | 8.5 ms  |
//! | encode, whole revision (cold)          | 61.3 ms | 30.1 ms |

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::time::{Duration, Instant};

use quire_content::edit::{apply_changes, ApplyContext, Change};
use quire_content::merge::merge;
use quire_content::model::{Page, PageKind, Revision};
use quire_content::store::{decode, encode, encode_delta, encode_missing, load_page, ObjectHash};

fn body(s: usize, i: usize) -> String {
    let mut out = format!("Overview of topic {s}.{i}.\n\n## Details\n\n");
    for k in 0..12 {
        out.push_str(&format!(
            "Paragraph {k} of page {s}.{i} explains one more aspect of the product in plain words, with `code` and a [link](https://example.com/{s}/{i}/{k}).\n\n"
        ));
    }
    out.push_str("```sh\nquire serve --port 8080\n```\n");
    out
}

fn revision() -> Revision {
    let pages = (0..100)
        .map(|s| {
            let mut section = Page::document(
                &format!("sec{s:03}"),
                &format!("Section {s}"),
                &format!("section-{s}"),
                &body(s, 999),
            );
            section.pages = (0..99)
                .map(|i| {
                    Page::document(
                        &format!("p{s:03}x{i:03}"),
                        &format!("Page {i}"),
                        &format!("page-{i}"),
                        &body(s, i),
                    )
                })
                .collect();
            section
        })
        .collect();
    Revision {
        pages,
        ..Revision::default()
    }
}

fn set_body(rev: &mut Revision, id: &str, text: &str) {
    if let PageKind::Document(d) = &mut rev.page_mut(id).unwrap().kind {
        d.markdown = text.to_string();
    }
}

fn edit(rev: &mut Revision, id: &str, from: &str, to: &str) {
    let t = rev
        .page(id)
        .unwrap()
        .markdown()
        .unwrap()
        .replacen(from, to, 1);
    set_body(rev, id, &t);
}

/// The one-page change of the delta benchmark.
fn one_page_change(rev: &Revision) -> Revision {
    let mut changed = rev.clone();
    let mut text = changed
        .page("p042x017")
        .unwrap()
        .markdown()
        .unwrap()
        .to_string();
    text.push_str("\nOne more sentence.\n");
    set_body(&mut changed, "p042x017", &text);
    changed
}

/// Ten pages: five edited on each side, one of them on both sides in different regions.
fn ten_page_sides(rev: &Revision) -> (Revision, Revision) {
    let mut ours = rev.clone();
    let mut theirs = rev.clone();
    for k in 0..5 {
        edit(
            &mut ours,
            &format!("p{:03}x010", k * 7),
            "Paragraph 1 ",
            "Paragraph one ",
        );
        edit(
            &mut theirs,
            &format!("p{:03}x020", k * 7 + 1),
            "Paragraph 2 ",
            "Paragraph two ",
        );
    }
    edit(&mut theirs, "p000x010", "Paragraph 9 ", "Paragraph nine ");
    (ours, theirs)
}

/// The median and the fastest of several runs. The median is the figure to quote; the
/// fastest shows what the code costs when nothing else competes for the machine.
struct Timing {
    median: Duration,
    min: Duration,
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let median = format!("{:.2?}", self.median);
        write!(f, "{median:>10} (min {:.2?})", self.min)
    }
}

/// Timings of `runs` runs of `f`, each on a fresh input made by `setup` (not timed).
fn time_with<I, T>(runs: usize, mut setup: impl FnMut() -> I, mut f: impl FnMut(I) -> T) -> Timing {
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let input = setup();
            let start = Instant::now();
            let out = f(input);
            let elapsed = start.elapsed();
            drop(black_box(out));
            elapsed
        })
        .collect();
    samples.sort();
    Timing {
        median: samples[runs / 2],
        min: samples[0],
    }
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Timing {
    time_with(runs, || (), |()| f())
}

type Store = HashMap<ObjectHash, Vec<u8>>;

/// A revision as the server gets it: encoded into the store, then decoded on its own.
fn stored(store: &mut Store, rev: &Revision) -> Revision {
    let enc = encode(rev);
    store.extend(enc.objects);
    decode(&enc.root, |h| store.get(h).cloned()).unwrap()
}

fn apply_one(rev: &Revision, batch: &[Change]) -> Revision {
    let mut next = || "unused".to_string();
    let mut ctx = ApplyContext {
        base: Some(rev),
        revisions: HashMap::new(),
        new_id: &mut next,
    };
    apply_changes(rev, batch, &mut ctx).unwrap().revision
}

fn main() {
    // `cargo bench -p quire-content --bench engine -- merge` runs the lines naming `merge`.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let on = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let runs: usize = std::env::var("QUIRE_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(9);
    let rev = revision();
    let pages = rev.page_count();
    let content_bytes: usize = rev
        .flatten()
        .iter()
        .map(|f| f.page.markdown().map_or(0, str::len))
        .sum();
    println!("revision: {pages} pages, {content_bytes} bytes of markdown");

    let full = encode(&rev);
    let mut store: Store = full.objects.iter().cloned().collect();
    if on("encode") {
        println!(
            "encode (all objects):        {}  {} objects, {} bytes",
            time_with(5, revision, |r| encode(&r)),
            full.objects.len(),
            full.total_bytes
        );
        println!("  root {}", full.root);
    }

    let known: HashSet<ObjectHash> = store.keys().copied().collect();
    if on("encode_delta") {
        let delta = encode_delta(&one_page_change(&rev), |h| known.contains(h));
        println!(
            "encode_delta (1 page):       {}  {} new objects, {} new bytes = {:.3}% of content, {:.3}% of stored bytes",
            time_with(runs, || one_page_change(&rev), |c| encode_delta(&c, |h| known.contains(h))),
            delta.objects.len(),
            delta.new_bytes,
            100.0 * delta.new_bytes as f64 / content_bytes as f64,
            100.0 * delta.new_bytes as f64 / full.total_bytes as f64
        );
        println!("  root {}", delta.root);
        let missing = encode_missing(&one_page_change(&rev), |h| known.contains(h));
        assert_eq!(
            (missing.root, missing.objects.len()),
            (delta.root, delta.objects.len())
        );
        println!(
            "encode_missing (1 page):     {}",
            time_with(
                runs,
                || one_page_change(&rev),
                |c| encode_missing(&c, |h| known.contains(h))
            )
        );
    }
    if on("decode") {
        println!(
            "decode (whole):              {}",
            time(3, || decode(&full.root, |h| store.get(h).cloned()).unwrap())
        );
    }
    if on("layout") {
        // What a clone's commit costs besides decoding: every file of the Git Sync layout,
        // and the page blobs the API shows (`git` of pages).
        println!(
            "gitsync layout (whole):      {}",
            time(3, || quire_content::gitsync::layout(&rev))
        );
        println!(
            "gitsync page_blobs (whole):  {}",
            time(3, || quire_content::gitsync::page_blobs(&rev, None))
        );
    }
    if on("load_page") {
        println!(
            "load_page (one):             {}",
            time(21, || load_page(&full.root, "p077x050", |h| store
                .get(h)
                .cloned())
            .unwrap())
        );
    }

    let (ours, theirs) = ten_page_sides(&rev);
    let merged = merge(&rev, &ours, &theirs).expect("no conflicts");
    let text = merged.page("p000x010").unwrap().markdown().unwrap();
    assert!(text.contains("Paragraph one ") && text.contains("Paragraph nine "));
    if on("merge") {
        println!(
            "merge (10 pages):            {}",
            time_with(
                runs,
                || ten_page_sides(&rev),
                |(o, t)| merge(&rev, &o, &t).unwrap()
            )
        );
        println!("  root {}", encode(&merged).root);
    }

    let batch: Vec<Change> = serde_json::from_value(serde_json::json!([{
        "operation": "update_page",
        "page": "p050x050",
        "document": {"markdown": "---\ndescription: Updated\n---\n# Page 50\n\nNew body with a [link](../section-1/page-2.md).\n"}
    }]))
    .unwrap();
    if on("apply") {
        let applied = apply_one(&rev, &batch);
        println!(
            "apply (1-page batch):        {}",
            time(runs, || apply_one(&rev, &batch))
        );
        println!("  root {}", encode(&applied).root);
    }

    // As the server runs them: every revision decoded on its own from the store.
    if !["decoded encode_delta", "decoded merge", "decoded apply"]
        .iter()
        .any(|n| on(n))
    {
        return;
    }
    println!("decoded inputs (as the server loads them):");
    let decoded = decode(&full.root, |h| store.get(h).cloned()).unwrap();
    if on("decoded encode_delta") {
        println!(
            "  encode_delta (1 page):     {}",
            time_with(
                runs,
                || one_page_change(&decoded),
                |c| encode_delta(&c, |h| known.contains(h))
            )
        );
        println!(
            "  encode_missing (1 page):   {}",
            time_with(
                runs,
                || one_page_change(&decoded),
                |c| encode_missing(&c, |h| known.contains(h))
            )
        );
    }
    if on("decoded merge") {
        let (o, t) = ten_page_sides(&rev);
        let (base, o, t) = (
            stored(&mut store, &rev),
            stored(&mut store, &o),
            stored(&mut store, &t),
        );
        assert_eq!(merge(&base, &o, &t).unwrap(), merged);
        println!(
            "  merge (10 pages):          {}",
            time(runs, || merge(&base, &o, &t).unwrap())
        );
    }
    if on("decoded apply") {
        println!(
            "  apply (1-page batch):      {}",
            time(runs, || apply_one(&decoded, &batch))
        );
        let known: HashSet<ObjectHash> = store.keys().copied().collect();
        println!(
            "  apply + encode_delta:      {}",
            time(runs, || {
                let next = apply_one(&decoded, &batch);
                encode_delta(&next, |h| known.contains(h))
            })
        );
        println!(
            "  apply + encode_missing:    {}",
            time(runs, || {
                let next = apply_one(&decoded, &batch);
                encode_missing(&next, |h| known.contains(h))
            })
        );
    }
}
