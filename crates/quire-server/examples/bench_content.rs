//! Content benchmarks on a generated 10,000-page space, through HTTP against an in-process
//! server on SQLite (or PostgreSQL with `QUIRE_BENCH_DATABASE_URL`):
//! - bytes stored by a one-page change, against the space's content bytes;
//! - `POST CR/content` with one page (latency);
//! - merging a 10-page change request: fast-forward, and three-way after main moved;
//! - `GET SPACE/content/pages` (cached revision, and first read after a restart).
//!
//! Run: `cargo run --release -p quire-server --example bench_content [-- PAGES]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use quire_content::model::{Page, Revision};
use quire_server::clock::SystemClock;
use quire_server::server::Server;
use quire_server::ServerConfig;
use serde_json::{json, Value};

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

struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Client {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.expect("request");
        let status = res.status().as_u16();
        let v = res.json::<Value>().await.unwrap_or(Value::Null);
        (status, v)
    }
    /// Fetches a body without parsing it: what is timed is the server and the transfer.
    async fn bytes(&self, path: &str) -> usize {
        let res = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .expect("request");
        assert!(res.status().is_success(), "{path}: {}", res.status());
        res.bytes().await.expect("body").len()
    }

    async fn ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.call(method, path, body).await;
        assert!(status < 300, "{path}: {status} {v}");
        v
    }
}

fn pct(mut xs: Vec<Duration>, p: f64) -> f64 {
    xs.sort();
    let i = ((xs.len() as f64 - 1.0) * p).round() as usize;
    xs[i].as_secs_f64() * 1000.0
}

fn report(name: &str, xs: Vec<Duration>) {
    println!(
        "{name:<52} n={:<3} p50={:>8.1} ms  p95={:>8.1} ms",
        xs.len(),
        pct(xs.clone(), 0.5),
        pct(xs, 0.95)
    );
}

async fn start(config: ServerConfig) -> (Server, String) {
    let server = Server::bind_with_clock(config, Arc::new(SystemClock))
        .await
        .expect("server");
    let base = format!("http://{}", server.local_addr());
    (server, base)
}

#[tokio::main]
async fn main() {
    let pages: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let config = ServerConfig {
        bind: ([127, 0, 0, 1], 0).into(),
        data_dir: dir.path().to_path_buf(),
        database_url: std::env::var("QUIRE_BENCH_DATABASE_URL").ok(),
        ..ServerConfig::default()
    };
    let (server, base) = start(config.clone()).await;
    let state = server.state().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let token = quire_server::admin::create_token(&config, "bench@example.com", None)
        .await
        .unwrap();
    let c = Client {
        http: reqwest::Client::new(),
        base,
        token,
    };
    let org = c
        .ok(
            reqwest::Method::POST,
            "/v1/orgs",
            Some(json!({ "title": "Bench" })),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let space = c
        .ok(
            reqwest::Method::POST,
            &format!("/v1/orgs/{org}/spaces"),
            Some(json!({ "title": "Big" })),
        )
        .await;
    let space_id = space["id"].as_str().unwrap().to_string();

    // Seed: the generated revision becomes the space's content, through the content store.
    let t = Instant::now();
    let rev = generated(pages);
    let content_bytes: usize = rev
        .flatten()
        .iter()
        .map(|p| p.page.markdown().map_or(0, str::len))
        .sum();
    let mut tx = state.db.begin().await.unwrap();
    let saved = quire_server::domain::content::save(&state, &mut tx, &space_id, rev)
        .await
        .unwrap();
    let revision_id = quire_server::ids::new_id();
    let old: String = sqlx::query_scalar("SELECT revision_id FROM spaces WHERE id = $1")
        .bind(&space_id)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    quire_server::store::revisions::insert(
        &mut tx,
        &quire_server::store::revisions::NewRevision {
            id: &revision_id,
            space_id: &space_id,
            parents: std::slice::from_ref(&old),
            kind: quire_server::values::RevisionType::Edits,
            root: &saved.root,
            created_by: None,
            created_at: 0,
        },
    )
    .await
    .unwrap();
    quire_server::store::revisions::advance_space(&mut tx, &space_id, &old, &revision_id, 0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    quire_server::domain::content::remember(&state, saved);
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
    let _ = stop.send(());
    running.await.unwrap().unwrap();
    let (server, base) = start(config.clone()).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let c = Client { base, ..c };
    let t = Instant::now();
    c.bytes(&format!("/v1/spaces/{space_id}/content/pages"))
        .await;
    report(
        "GET SPACE/content/pages (first read after restart)",
        vec![t.elapsed()],
    );
    let _ = stop.send(());
    running.await.unwrap().unwrap();
}
