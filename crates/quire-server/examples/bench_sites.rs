//! Docs-site benchmark: `GET SITE/published` of a published site with 5 sections and 50
//! site spaces (10 per section, one space each), through HTTP against an in-process server
//! on SQLite (or PostgreSQL with `QUIRE_BENCH_DATABASE_URL`). Prints latency percentiles.
//!
//! Run: `cargo run --release -p quire-server --example bench_sites [-- REQUESTS]`

mod support;

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;
use support::{pct, Bench};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SECTIONS: usize = 5;
const PER_SECTION: usize = 10;

#[tokio::main]
async fn main() {
    let requests: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let dir = tempfile::tempdir().expect("temp dir");
    let bench = Bench::start(dir.path()).await;
    let c = &bench.client;
    let org = &bench.org;
    let mut spaces = Vec::new();
    for i in 0..SECTIONS * PER_SECTION {
        let s = c
            .ok(
                Method::POST,
                &format!("/v1/orgs/{org}/spaces"),
                Some(json!({ "title": format!("Space {i}") })),
            )
            .await;
        spaces.push(s["id"].as_str().unwrap().to_string());
    }
    let site = c
        .ok(
            Method::POST,
            &format!("/v1/orgs/{org}/sites"),
            Some(json!({ "title": "Bench docs" })),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let base = format!("/v1/orgs/{org}/sites/{site}");
    for (n, chunk) in spaces.chunks(PER_SECTION).enumerate() {
        let section = c
            .ok(
                Method::POST,
                &format!("{base}/sections"),
                Some(json!({ "spaceId": chunk[0], "title": format!("Section {n}") })),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        for space in &chunk[1..] {
            c.ok(
                Method::POST,
                &format!("{base}/site-spaces"),
                Some(json!({ "spaceId": space, "sectionId": section })),
            )
            .await;
        }
    }
    c.ok(Method::POST, &format!("{base}/publish"), Some(json!({})))
        .await;
    let site_row = c.ok(Method::GET, &base, None).await;
    assert_eq!(site_row["siteSpaces"], (SECTIONS * PER_SECTION) as u64);

    let path = format!("{base}/published");
    let size = c.bytes(&path).await;
    for _ in 0..100 {
        c.bytes(&path).await;
    }
    let mut times: Vec<Duration> = Vec::with_capacity(requests);
    for _ in 0..requests {
        let t = Instant::now();
        c.bytes(&path).await;
        times.push(t.elapsed());
    }
    println!(
        "GET SITE/published ({SECTIONS} sections, {} site spaces, {size} bytes): p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms over {requests} requests",
        SECTIONS * PER_SECTION,
        pct(times.clone(), 0.50),
        pct(times.clone(), 0.95),
        pct(times, 0.99),
    );
    bench.stop().await;
}
