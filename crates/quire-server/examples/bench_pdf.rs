//! PDF benchmark: a 200-page space (headings, prose, a code block, a table, a list and a
//! hint on every page) printed through `GET SPACE/pdf`, three times, each after a one-page
//! change so that every run typesets the whole space (a PDF is kept per revision).
//!
//! Run: `cargo run --release -p quire-server --example bench_pdf [-- PAGES]`

mod support;

use std::time::Instant;

use quire_content::model::{PageKind, Revision};
use support::{pct, Bench};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn body(i: usize, salt: usize) -> String {
    format!(
        "## Overview of topic {i}\n\nThis page explains topic {i} (revision {salt}). It has a few \
         sentences of prose so that paragraphs wrap over several lines, as real documentation \
         does, with **bold**, *italic* and `code` runs.\n\n## Usage\n\n```rust\nfn topic_{i}() -> u32 {{\n    {i}\n}}\n```\n\n\
         | Option | Default | Meaning |\n| --- | --- | --- |\n| alpha | 1 | The first option |\n| beta | 2 | The second option |\n\n\
         - first point\n- second point\n- third point\n\n{{% hint style=\"info\" %}}\nA hint about topic {i}.\n{{% endhint %}}\n"
    )
}

fn generated(pages: usize) -> Revision {
    support::chapters(pages, 20, |i| body(i, 0))
}

#[tokio::main]
async fn main() {
    let pages: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let bench = Bench::start(dir.path()).await;
    let mut rev = generated(pages);
    let path = format!("/v1/spaces/{}/pdf", bench.space);
    let mut times = Vec::new();
    let mut size = 0;
    for round in 0..3 {
        if let PageKind::Document(d) = &mut rev.pages[0].kind {
            d.markdown = body(0, round);
        }
        bench.seed(rev.clone()).await;
        let t = Instant::now();
        let res = bench.client.ok(reqwest::Method::GET, &path, None).await;
        times.push(t.elapsed());
        // The signed URL names the public URL; fetch its path and query from the server's
        // own address, without the token.
        let url = res["url"].as_str().unwrap();
        let local = url.replacen("http://quire.bench", &bench.client.base, 1);
        let bytes = reqwest::get(local).await.unwrap().bytes().await.unwrap();
        assert!(bytes.starts_with(b"%PDF-"));
        size = bytes.len();
    }
    let t = Instant::now();
    bench.client.ok(reqwest::Method::GET, &path, None).await;
    let cached = t.elapsed();
    println!("pages: {pages}; PDF size: {} KiB", size / 1024);
    println!(
        "GET SPACE/pdf, whole space typeset: p50 {:.0} ms, max {:.0} ms (3 runs)",
        pct(times.clone(), 0.5),
        pct(times, 1.0)
    );
    println!(
        "GET SPACE/pdf again (stored PDF): {:.1} ms",
        cached.as_secs_f64() * 1000.0
    );
    bench.stop().await;
}
