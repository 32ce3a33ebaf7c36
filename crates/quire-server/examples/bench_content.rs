//! Content benchmarks on a generated 10,000-page space, through HTTP against an in-process
//! server on SQLite (or PostgreSQL with `QUIRE_BENCH_DATABASE_URL`):
//! - bytes stored by a one-page change, against the space's content bytes;
//! - `POST CR/content` with one page (latency);
//! - merging a 10-page change request (its search index update included, the index built
//!   once before): fast-forward, and three-way after main moved;
//! - `GET SPACE/content/pages` (cached revision, and first read after a restart).
//!
//! Run: `cargo run --release -p quire-server --example bench_content [-- PAGES]`

mod support;

use std::time::{Duration, Instant};

use quire_content::model::{Page, Revision};
use serde_json::{json, Value};
use support::{pct, Bench};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WORDS: &[&str] = &[
    "server", "content", "revision", "merge", "branch", "page", "space", "team", "search", "index",
    "quire", "document", "change", "request", "review", "publish", "import", "export", "layout",
    "markdown", "token", "cursor", "schema", "client", "storage", "engine", "tree", "node",
    "section", "heading",
];

fn body(i: usize) -> String {
    let mut s = format!("# Page {i}\n\n");
    let mut n = i;
    for p in 0..6 {
        if p == 3 {
            s.push_str(&format!("## Part {i}.{p}\n\n"));
        }
        for w in 0..40 {
            n = n
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407 + w);
            s.push_str(WORDS[(n >> 33) % WORDS.len()]);
            s.push(' ');
        }
        s.push_str("\n\n");
    }
    s
}

fn generated(pages: usize) -> Revision {
    let mut rev = Revision::default();
    // 100 top-level pages with children, so that the tree has depth.
    let per = pages / 100;
    for g in 0..100 {
        let mut parent = Page::document(
            &format!("p{g}"),
            &format!("Chapter {g}"),
            &format!("chapter-{g}"),
            &body(g * 100_000),
        );
        for c in 0..per.saturating_sub(1) {
            let i = g * per + c;
            parent.pages.push(Page::document(
                &format!("p{g}-{c}"),
                &format!("Topic {i}"),
                &format!("topic-{i}"),
                &body(i),
            ));
        }
        rev.pages.push(parent);
    }
    rev
}

fn report(name: &str, xs: Vec<Duration>) {
    println!(
        "{name:<52} n={:<3} p50={:>8.1} ms  p95={:>8.1} ms",
        xs.len(),
        pct(xs.clone(), 0.5),
        pct(xs, 0.95)
    );
}

#[tokio::main]
async fn main() {
    let pages: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let bench = Bench::start(dir.path()).await;
    let (state, c, space_id) = (bench.state.clone(), &bench.client, bench.space.clone());

    // Seed: the generated revision becomes the space's content, through the content store.
    let t = Instant::now();
    let rev = generated(pages);
    let content_bytes: usize = rev
        .flatten()
        .iter()
        .map(|p| p.page.markdown().map_or(0, str::len))
        .sum();
    bench.seed(rev).await;
    let total_pages = c
        .ok(
            reqwest::Method::GET,
            &format!("/v1/spaces/{space_id}/content/pages"),
            None,
        )
        .await;
    let count = total_pages["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| 1 + p["pages"].as_array().map_or(0, Vec::len))
        .sum::<usize>();
    println!(
        "seeded {count} pages, {content_bytes} bytes of markdown, in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let stored = || async {
        let n: i64 = sqlx::query_scalar("SELECT COALESCE(SUM(size), 0) FROM content_objects")
            .fetch_one(state.db.pool())
            .await
            .unwrap();
        n
    };

    // One-page batches: latency, and bytes stored per change.
    let cr = c
        .ok(
            reqwest::Method::POST,
            &format!("/v1/spaces/{space_id}/change-requests"),
            Some(json!({})),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut lat = Vec::new();
    let mut added = Vec::new();
    for i in 0..30 {
        let before = stored().await;
        let change = json!({ "changes": [{ "operation": "update_page", "page": format!("p{}-{}", i % 100, i % 99), "document": { "markdown": format!("{}\nEdited {i}.\n", body(i)) } }] });
        let t = Instant::now();
        c.ok(
            reqwest::Method::POST,
            &format!("/v1/spaces/{space_id}/change-requests/{cr}/content"),
            Some(change),
        )
        .await;
        lat.push(t.elapsed());
        added.push(stored().await - before);
    }
    added.sort();
    let median = added[added.len() / 2];
    println!(
        "bytes stored by a one-page change: median {median} bytes = {:.3}% of {content_bytes} content bytes",
        100.0 * median as f64 / content_bytes as f64
    );
    report("POST CR/content, one page", lat);

    // A space's search index is built once (by a job, or by its first search); every merge
    // then updates it for the pages it changes. Merges are measured in that steady state,
    // not while the one-time build of 10,000 pages competes for the cores and the writer.
    let t = Instant::now();
    quire_server::domain::search::sync(&state, &space_id)
        .await
        .unwrap();
    println!(
        "search index of the seeded space built once, in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // Merges of 10-page change requests: fast-forward, and three-way (main moved meanwhile).
    let mut ff = Vec::new();
    let mut three_way = Vec::new();
    for round in 0..12 {
        let mut crs = Vec::new();
        for side in 0..2 {
            let id = c
                .ok(
                    reqwest::Method::POST,
                    &format!("/v1/spaces/{space_id}/change-requests"),
                    Some(json!({})),
                )
                .await["id"]
                .as_str()
                .unwrap()
                .to_string();
            let changes: Vec<Value> = (0..10)
                .map(|k| {
                    let i = 40 + round * 20 + side * 10 + k;
                    json!({ "operation": "update_page", "page": format!("p{}-{}", i % 100, i % 99), "document": { "markdown": format!("{}\nRound {round}.\n", body(i)) } })
                })
                .collect();
            c.ok(
                reqwest::Method::POST,
                &format!("/v1/spaces/{space_id}/change-requests/{id}/content"),
                Some(json!({ "changes": changes })),
            )
            .await;
            crs.push(id);
        }
        let t = Instant::now();
        c.ok(
            reqwest::Method::POST,
            &format!("/v1/spaces/{space_id}/change-requests/{}/merge", crs[0]),
            Some(json!({})),
        )
        .await;
        ff.push(t.elapsed());
        let t = Instant::now();
        c.ok(
            reqwest::Method::POST,
            &format!("/v1/spaces/{space_id}/change-requests/{}/merge", crs[1]),
            Some(json!({})),
        )
        .await;
        three_way.push(t.elapsed());
    }
    report("merge a 10-page change request (fast-forward)", ff);
    report("merge a 10-page change request (three-way)", three_way);

    let mut reads = Vec::new();
    let mut size = 0;
    for _ in 0..30 {
        let t = Instant::now();
        size = c
            .bytes(&format!("/v1/spaces/{space_id}/content/pages"))
            .await;
        reads.push(t.elapsed());
    }
    println!("GET SPACE/content/pages answers {size} bytes (every page carries its markdown, as the official schema requires)");
    report("GET SPACE/content/pages (revision cached)", reads);

    // First read after a restart: the revision is loaded from the database and decoded.
    let bench = bench.restart().await;
    let t = Instant::now();
    bench
        .client
        .bytes(&format!("/v1/spaces/{space_id}/content/pages"))
        .await;
    report(
        "GET SPACE/content/pages (first read after restart)",
        vec![t.elapsed()],
    );
    bench.stop().await;
}
