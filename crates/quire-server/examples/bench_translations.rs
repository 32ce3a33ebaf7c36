//! Translation benchmark: a 1,000-page space translated once, then run again after a
//! one-page change, against a loopback LibreTranslate-speaking provider that answers at
//! once (its own time is measured and reported apart). The figure is Quire's own time for
//! the incremental run: from `POST .../run` to the translation reading `completed`.
//!
//! Run: `cargo run --release -p quire-server --example bench_translations [-- PAGES]`

mod support;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use quire_content::model::{Page, PageKind, Revision, SharedDocument};
use quire_server::config::TranslationProvider;
use serde_json::{json, Value};
use support::{pct, Bench};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WORDS: &[&str] = &[
    "server", "content", "revision", "merge", "branch", "page", "space", "team", "search", "index",
    "quire", "document", "change", "request", "review", "publish", "import", "export", "layout",
];

fn body(i: usize, salt: usize) -> String {
    let mut s = format!("# Page {i}\n\n");
    let mut n = i * 7919 + salt;
    for p in 0..6 {
        for w in 0..40 {
            n = n
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407 + w);
            s.push_str(WORDS[(n >> 33) % WORDS.len()]);
            s.push(' ');
        }
        s.push_str("\n\n");
        if p == 2 {
            s.push_str("```rust\nfn main() { println!(\"untouched\"); }\n```\n\n");
        }
    }
    s
}

fn generated(pages: usize) -> Revision {
    let mut rev = Revision::default();
    let per = (pages / 10).max(1);
    for g in 0..pages.div_ceil(per) {
        let mut parent = Page::document(
            &format!("p{g}"),
            &format!("Chapter {g}"),
            &format!("chapter-{g}"),
            &body(g * per, 0),
        );
        for c in 1..per.min(pages - g * per) {
            let i = g * per + c;
            parent.pages.push(Page::document(
                &format!("p{g}-{c}"),
                &format!("Topic {i}"),
                &format!("topic-{i}"),
                &body(i, 0),
            ));
        }
        rev.pages.push(parent);
    }
    rev
}

#[derive(Clone, Default)]
struct Provider {
    nanos: Arc<AtomicU64>,
    texts: Arc<AtomicUsize>,
}

async fn translate(State(p): State<Provider>, Json(body): Json<Value>) -> Json<Value> {
    let t = Instant::now();
    let q: Vec<String> = body["q"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| format!("FR {}", v.as_str().unwrap()))
        .collect();
    p.texts.fetch_add(q.len(), Ordering::Relaxed);
    let out = Json(json!({ "translatedText": q }));
    p.nanos
        .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    out
}

async fn until_completed(bench: &Bench, id: &str) -> Duration {
    let t = Instant::now();
    loop {
        let row = quire_server::store::translations::get(&bench.state.db, &bench.org, id)
            .await
            .unwrap()
            .unwrap();
        if row.status == "completed" {
            return t.elapsed();
        }
        assert_ne!(row.status, "failed", "{:?}", row.failure);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::main]
async fn main() {
    let pages: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000);
    let provider = Provider::default();
    let app = Router::new()
        .route("/translate", post(translate))
        .with_state(provider.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let bench = Bench::start_with(dir.path(), |c| {
        c.fetch_allow = vec!["127.0.0.0/8".parse().unwrap()];
        c.translation.budget_chars = usize::MAX;
        c.translation.provider = Some(TranslationProvider::LibreTranslate {
            url: format!("http://{addr}"),
            key: None,
        });
    })
    .await;
    let mut rev = generated(pages);
    let count = rev.page_count();
    bench.seed(rev.clone()).await;

    // The first run translates everything.
    let t = Instant::now();
    let created = bench
        .client
        .ok(
            reqwest::Method::POST,
            &format!("/v1/orgs/{}/translations", bench.org),
            Some(json!({ "source": { "space": bench.space, "language": "en" }, "language": "fr" })),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    until_completed(&bench, &id).await;
    println!(
        "first run: {count} pages, {} texts, {:.0} ms (provider {:.1} ms)",
        provider.texts.load(Ordering::Relaxed),
        t.elapsed().as_secs_f64() * 1000.0,
        provider.nanos.load(Ordering::Relaxed) as f64 / 1e6
    );

    // Then one page changes before each run.
    let mut times = Vec::new();
    let mut provider_ms = Vec::new();
    for round in 1..=10 {
        let target = format!("p{}-{}", round % 10, 1 + round % 5);
        let page = rev.page_mut(&target).expect("page");
        if let PageKind::Document(doc) = &page.kind {
            let mut fields = doc.clone().into_inner();
            fields.markdown = body(round, round);
            page.kind = PageKind::Document(SharedDocument::new(fields));
        }
        bench.seed(rev.clone()).await;
        provider.nanos.store(0, Ordering::Relaxed);
        provider.texts.store(0, Ordering::Relaxed);
        let t = Instant::now();
        bench
            .client
            .call(
                reqwest::Method::POST,
                &format!("/v1/orgs/{}/translations/{id}/run", bench.org),
                Some(json!({})),
            )
            .await;
        until_completed(&bench, &id).await;
        let total = t.elapsed();
        let spent = Duration::from_nanos(provider.nanos.load(Ordering::Relaxed));
        assert!(
            provider.texts.load(Ordering::Relaxed) < 100,
            "only one page is sent"
        );
        times.push(total - spent);
        provider_ms.push(spent);
    }
    println!(
        "incremental run after a one-page change ({count} pages), Quire's own time: p50 {:.1} ms, max {:.1} ms (provider p50 {:.2} ms)",
        pct(times.clone(), 0.5),
        pct(times, 1.0),
        pct(provider_ms, 0.5)
    );
    bench.stop().await;
}
