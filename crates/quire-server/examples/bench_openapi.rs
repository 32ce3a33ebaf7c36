//! OpenAPI processing benchmark on the official GitBook API description (`@gitbook/api`
//! 0.137.0, about 1.1 MB of JSON), in the content engine alone and end to end through an
//! in-process server on SQLite (or PostgreSQL with `QUIRE_BENCH_DATABASE_URL`):
//! - reading and checking the document (JSON, and the same text read by the YAML parser);
//! - `PUT SPEC` with the document as text until the spec's processing is complete, for a new
//!   spec, an unchanged document (no new version) and a changed one (a new version);
//! - rendering one of its operations for a page.
//!
//! Run: `cargo run --release -p quire-server --example bench_openapi [-- PATH]`

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::Bench;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RUNS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// PUTs `text` into spec `slug` and waits for its processing; returns the time taken and the
/// processed spec.
async fn publish(bench: &Bench, slug: &str, text: &str) -> (Duration, Value) {
    let path = format!("/v1/orgs/{}/openapi/{slug}", bench.org);
    let t = Instant::now();
    let (status, _) = bench
        .client
        .call(
            reqwest::Method::PUT,
            &path,
            Some(json!({ "source": { "text": text } })),
        )
        .await;
    assert!(status == 200 || status == 201, "PUT answered {status}");
    loop {
        let spec = bench.client.ok(reqwest::Method::GET, &path, None).await;
        if spec["processingState"] == "complete" {
            assert!(spec.get("lastProcessErrorCode").is_none(), "{spec}");
            return (t.elapsed(), spec);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::main]
async fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../conformance/node_modules/@gitbook/api/spec/openapi.json"
        )
        .to_string()
    });
    let text =
        std::fs::read_to_string(&path).expect("the official spec (run npm ci in conformance/)");
    println!("document: {path} ({} bytes)", text.len());

    // The engine alone.
    let mut json_times = Vec::new();
    let mut yaml_times = Vec::new();
    let yaml = format!("# read as YAML\n{text}");
    let mut document = Value::Null;
    for _ in 0..RUNS {
        let t = Instant::now();
        let checked = quire_content::openapi::process(&text).expect("valid");
        let bytes = serde_json::to_vec(&checked.document).unwrap();
        json_times.push(t.elapsed());
        assert!(!bytes.is_empty());
        document = checked.document;
        let t = Instant::now();
        quire_content::openapi::process(&yaml).expect("valid as YAML");
        yaml_times.push(t.elapsed());
    }
    println!(
        "engine: read + check + serialise (JSON), median of {RUNS}: {}",
        ms(median(json_times))
    );
    println!(
        "engine: read + check (same text through the YAML parser), median of {RUNS}: {}",
        ms(median(yaml_times))
    );
    let t = Instant::now();
    let mut rendered = 0;
    for (p, item) in document["paths"].as_object().unwrap() {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                rendered += quire_content::openapi::render::operation(&document, p, method)
                    .unwrap()
                    .len();
            }
        }
    }
    let ops = document["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|i| i.as_object().unwrap().len())
        .sum::<usize>();
    println!(
        "engine: render every operation (~{ops}), {} total: {} ({} per operation)",
        ms(t.elapsed()),
        rendered,
        ms(t.elapsed() / ops as u32)
    );

    // End to end.
    let dir = tempfile::tempdir().unwrap();
    let bench = Bench::start(dir.path()).await;
    let mut new_times = Vec::new();
    let mut same_times = Vec::new();
    let mut changed_times = Vec::new();
    for i in 0..RUNS {
        let slug = format!("gitbook-{i}");
        let (d, first) = publish(&bench, &slug, &text).await;
        new_times.push(d);
        let (d, same) = publish(&bench, &slug, &text).await;
        assert_eq!(same["lastVersion"], first["lastVersion"]);
        same_times.push(d);
        let changed = text.replacen("\"version\"", "\"x-bench\": 1, \"version\"", 1);
        let (d, after) = publish(&bench, &slug, &changed).await;
        assert_ne!(after["lastVersion"], first["lastVersion"]);
        changed_times.push(d);
    }
    println!(
        "server: PUT until complete, new spec, median of {RUNS}: {}",
        ms(median(new_times))
    );
    println!(
        "server: PUT until complete, unchanged document, median of {RUNS}: {}",
        ms(median(same_times))
    );
    println!(
        "server: PUT until complete, changed document (new version), median of {RUNS}: {}",
        ms(median(changed_times))
    );
    bench.stop().await;
}
