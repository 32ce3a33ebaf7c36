//! Import benchmark: a zip of 1,000 markdown pages in GitBook's Git Sync layout (a
//! `SUMMARY.md`, 50 folders of 20 pages, links between neighbours and 20 images), served on
//! loopback, imported into an empty space with `POST SPACE/content/import`. The figure is the
//! whole request: download, conversion, link resolution, files, one new revision and its
//! search index. Target: under 10 s.
//!
//! Run: `cargo run --release -p quire-server --example bench_import [-- PAGES [RUNS]]`

mod support;

use std::io::Write;
use std::time::Instant;

use axum::routing::get;
use axum::Router;
use serde_json::json;
use support::Bench;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WORDS: &[&str] = &[
    "server", "content", "revision", "merge", "branch", "page", "space", "team", "search", "index",
    "quire", "document", "change", "request", "review", "publish", "import", "export", "layout",
];

/// A page body of about 2 KB: paragraphs, a list, a code block, links to its neighbours.
fn body(i: usize, pages: usize) -> String {
    let mut s = format!("# Page {i}\n\n");
    let mut n = i * 7919;
    for p in 0..5 {
        for w in 0..50 {
            n = n
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407 + w);
            s.push_str(WORDS[(n >> 33) % WORDS.len()]);
            s.push(' ');
        }
        s.push_str("\n\n");
        if p == 1 {
            s.push_str("- one item\n- another item\n\n```rust\nfn main() {}\n```\n\n");
        }
    }
    let next = (i + 1) % pages;
    s.push_str(&format!(
        "See [the next page](../section-{}/page-{next}.md) and [a missing one](nowhere.md).\n",
        next / 20
    ));
    if i.checked_rem(50) == Some(0) {
        s.push_str(&format!(
            "\n![diagram](../.gitbook/assets/image-{}.png)\n",
            i / 50
        ));
    }
    s
}

fn archive(pages: usize) -> Vec<u8> {
    let png = include_bytes!("../tests/fixtures/imports/red.png");
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        let mut summary = String::from("# Table of contents\n\n");
        for i in 0..pages {
            let section = i / 20;
            if i.checked_rem(20) == Some(0) {
                summary.push_str(&format!(
                    "\n## Section {section}\n\n* [Section {section}](section-{section}/README.md)\n"
                ));
                w.start_file(format!("section-{section}/README.md"), opts)
                    .unwrap();
                w.write_all(format!("# Section {section}\n\nIntro.\n").as_bytes())
                    .unwrap();
            }
            summary.push_str(&format!("  * [Page {i}](section-{section}/page-{i}.md)\n"));
            w.start_file(format!("section-{section}/page-{i}.md"), opts)
                .unwrap();
            w.write_all(body(i, pages).as_bytes()).unwrap();
        }
        for k in 0..pages.div_ceil(50) {
            w.start_file(format!(".gitbook/assets/image-{k}.png"), opts)
                .unwrap();
            w.write_all(png).unwrap();
        }
        w.start_file("SUMMARY.md", opts).unwrap();
        w.write_all(summary.as_bytes()).unwrap();
        w.finish().unwrap();
    }
    out.into_inner()
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let pages: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let zip = archive(pages);
    println!(
        "archive: {pages} pages (+{} section pages), {} KiB",
        pages.div_ceil(20),
        zip.len() / 1024
    );
    let app = Router::new().route("/docs.zip", get(move || async move { zip.clone() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let source = format!("http://{}/docs.zip", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let bench = Bench::start_with(dir.path(), |c| {
        c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    let mut times = Vec::new();
    for run in 0..runs {
        // Each run into a fresh space: the same work every time.
        let space = bench
            .client
            .ok(
                reqwest::Method::POST,
                &format!("/v1/orgs/{}/spaces", bench.org),
                Some(json!({ "title": format!("Import {run}") })),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let t = Instant::now();
        let res = bench
            .client
            .ok(
                reqwest::Method::POST,
                &format!("/v1/spaces/{space}/content/import"),
                Some(json!({ "url": source, "source": "zip" })),
            )
            .await;
        let took = t.elapsed();
        println!(
            "run {run}: {:.2} s ({} of {} resources imported)",
            took.as_secs_f64(),
            res["importedResources"],
            res["totalResources"]
        );
        times.push(took.as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "import of {pages} pages: best {:.2} s, median {:.2} s (target < 10 s)",
        times[0],
        times[times.len() / 2]
    );
    bench.stop().await;
}
