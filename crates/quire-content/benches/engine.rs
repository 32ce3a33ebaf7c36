//! Benchmarks on a generated 10,000-page revision: store delta after a one-page change,
//! a 10-page merge, and applying a one-page edit batch.
//!
//! Run with `cargo bench -p quire-content --bench engine`. A plain harness keeps the
//! dependency tree small; each measurement reports the median of several runs.

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::time::{Duration, Instant};

use quire_content::edit::{apply_changes, ApplyContext, Change};
use quire_content::merge::merge;
use quire_content::model::{Page, PageKind, Revision};
use quire_content::store::{decode, encode, encode_delta, load_page, ObjectHash};

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

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples[runs / 2]
}

fn main() {
    let rev = revision();
    let pages = rev.page_count();
    let content_bytes: usize = rev
        .flatten()
        .iter()
        .map(|f| f.page.markdown().map_or(0, str::len))
        .sum();
    println!("revision: {pages} pages, {content_bytes} bytes of markdown");

    let full = encode(&rev);
    let store: HashMap<ObjectHash, Vec<u8>> = full.objects.iter().cloned().collect();
    println!(
        "encode (all objects):   {:>10.2?}  {} objects, {} bytes",
        time(5, || encode(&rev)),
        full.objects.len(),
        full.total_bytes
    );

    let mut changed = rev.clone();
    let mut text = changed
        .page("p042x017")
        .unwrap()
        .markdown()
        .unwrap()
        .to_string();
    text.push_str("\nOne more sentence.\n");
    set_body(&mut changed, "p042x017", &text);
    let known: HashSet<ObjectHash> = store.keys().copied().collect();
    let delta = encode_delta(&changed, |h| known.contains(h));
    println!(
        "encode_delta (1 page):  {:>10.2?}  {} new objects, {} new bytes = {:.3}% of content, {:.3}% of stored bytes",
        time(5, || encode_delta(&changed, |h| known.contains(h))),
        delta.objects.len(),
        delta.new_bytes,
        100.0 * delta.new_bytes as f64 / content_bytes as f64,
        100.0 * delta.new_bytes as f64 / full.total_bytes as f64
    );
    println!(
        "decode (whole):         {:>10.2?}",
        time(3, || decode(&full.root, |h| store.get(h).cloned()).unwrap())
    );
    println!(
        "load_page (one):        {:>10.2?}",
        time(21, || load_page(&full.root, "p077x050", |h| store
            .get(h)
            .cloned())
        .unwrap())
    );

    // Ten pages: five edited on each side, one of them on both sides in different regions.
    let mut ours = rev.clone();
    let mut theirs = rev.clone();
    for k in 0..5 {
        let id = format!("p{:03}x010", k * 7);
        let t = ours.page(&id).unwrap().markdown().unwrap().replacen(
            "Paragraph 1 ",
            "Paragraph one ",
            1,
        );
        set_body(&mut ours, &id, &t);
        let id = format!("p{:03}x020", k * 7 + 1);
        let t = theirs.page(&id).unwrap().markdown().unwrap().replacen(
            "Paragraph 2 ",
            "Paragraph two ",
            1,
        );
        set_body(&mut theirs, &id, &t);
    }
    let t = theirs
        .page("p000x010")
        .unwrap()
        .markdown()
        .unwrap()
        .replacen("Paragraph 9 ", "Paragraph nine ", 1);
    set_body(&mut theirs, "p000x010", &t);
    let merged = merge(&rev, &ours, &theirs).expect("no conflicts");
    assert!(merged
        .page("p000x010")
        .unwrap()
        .markdown()
        .unwrap()
        .contains("Paragraph one "));
    assert!(merged
        .page("p000x010")
        .unwrap()
        .markdown()
        .unwrap()
        .contains("Paragraph nine "));
    println!(
        "merge (10 pages):       {:>10.2?}",
        time(5, || merge(&rev, &ours, &theirs).unwrap())
    );

    let batch: Vec<Change> = serde_json::from_value(serde_json::json!([{
        "operation": "update_page",
        "page": "p050x050",
        "document": {"markdown": "---\ndescription: Updated\n---\n# Page 50\n\nNew body with a [link](../section-1/page-2.md).\n"}
    }]))
    .unwrap();
    println!(
        "apply (1-page batch):   {:>10.2?}",
        time(5, || {
            let mut next = || "unused".to_string();
            let mut ctx = ApplyContext {
                base: Some(&rev),
                revisions: HashMap::new(),
                new_id: &mut next,
            };
            apply_changes(&rev, &batch, &mut ctx).unwrap()
        })
    );
}
