//! What the benchmark examples share: an in-process server with one organization and one
//! space, a small HTTP client, seeding a generated revision, and percentiles.

#![allow(dead_code)] // each example uses part of it

use std::sync::Arc;
use std::time::{Duration, Instant};

use quire_content::model::{Page, Revision};
use quire_server::clock::SystemClock;
use quire_server::server::Server;
use quire_server::state::AppState;
use quire_server::ServerConfig;
use serde_json::{json, Value};

/// An authenticated client of the benchmark server.
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

impl Client {
    /// One request; the status and the parsed body (`null` when not JSON).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
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

    /// As [`Client::call`], asserting success.
    pub async fn ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.call(method, path, body).await;
        assert!(status < 300, "{path}: {status} {v}");
        v
    }

    /// Fetches a body without parsing it: what is timed is the server and the transfer.
    pub async fn bytes(&self, path: &str) -> usize {
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
}

/// A running server with an organization and an empty space called "Big".
pub struct Bench {
    pub config: ServerConfig,
    pub state: AppState,
    pub client: Client,
    pub org: String,
    pub space: String,
    stop: tokio::sync::oneshot::Sender<()>,
    running: Running,
}

impl Bench {
    /// Starts a server on `data_dir` (SQLite, or PostgreSQL with `QUIRE_BENCH_DATABASE_URL`).
    pub async fn start(data_dir: &std::path::Path) -> Bench {
        Self::start_with(data_dir, |_| {}).await
    }

    /// As [`Bench::start`], with the benchmark's changes to the configuration.
    #[allow(dead_code)]
    pub async fn start_with(
        data_dir: &std::path::Path,
        configure: impl FnOnce(&mut ServerConfig),
    ) -> Bench {
        let mut config = ServerConfig {
            bind: ([127, 0, 0, 1], 0).into(),
            data_dir: data_dir.to_path_buf(),
            database_url: std::env::var("QUIRE_BENCH_DATABASE_URL").ok(),
            // Fixed, as a deployment's is: a restart must not change the URLs in answers.
            public_url: Some("http://quire.bench".into()),
            ..ServerConfig::default()
        };
        configure(&mut config);
        let (state, base, stop, running) = launch(&config).await;
        let token = quire_server::admin::create_token(&config, "bench@example.com", None)
            .await
            .unwrap();
        let client = Client {
            http: reqwest::Client::new(),
            base,
            token,
        };
        let org = client
            .ok(
                reqwest::Method::POST,
                "/v1/orgs",
                Some(json!({ "title": "Bench" })),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let space = client
            .ok(
                reqwest::Method::POST,
                &format!("/v1/orgs/{org}/spaces"),
                Some(json!({ "title": "Big" })),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        Bench {
            config,
            state,
            client,
            org,
            space,
            stop,
            running,
        }
    }

    /// Makes `rev` the content of the space, through the content store (one revision).
    pub async fn seed(&self, rev: Revision) -> Duration {
        let t = Instant::now();
        let state = &self.state;
        let old = quire_server::store::spaces::get(&state.db, &self.space)
            .await
            .unwrap()
            .expect("space")
            .revision_id;
        let mut tx = state.db.begin().await.unwrap();
        let saved = quire_server::domain::content::save(state, &mut tx, &self.space, rev)
            .await
            .unwrap();
        let revision_id = quire_server::ids::new_id();
        quire_server::store::revisions::insert(
            &mut tx,
            &quire_server::store::revisions::NewRevision {
                id: &revision_id,
                space_id: &self.space,
                parents: std::slice::from_ref(&old),
                kind: quire_server::values::RevisionType::Edits,
                root: &saved.root,
                created_by: None,
                created_at: 0,
            },
        )
        .await
        .unwrap();
        quire_server::store::revisions::advance_space(&mut tx, &self.space, &old, &revision_id, 0)
            .await
            .unwrap();
        // As every write the API serves: the cached space row names the old revision.
        tx.touches(&[quire_server::cache::Scope::Space(&self.space)]);
        tx.commit().await.unwrap();
        quire_server::domain::content::remember(state, saved);
        t.elapsed()
    }

    /// Stops the server and starts a new one on the same storage: nothing is cached.
    pub async fn restart(self) -> Bench {
        let _ = self.stop.send(());
        self.running.await.unwrap().unwrap();
        let (state, base, stop, running) = launch(&self.config).await;
        Bench {
            state,
            client: Client {
                base,
                ..self.client
            },
            stop,
            running,
            ..self
        }
    }

    /// Stops the server and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.running.await.unwrap().unwrap();
    }
}

type Running = tokio::task::JoinHandle<anyhow::Result<()>>;

/// Binds and runs a server: its state, base URL, stop signal and task.
async fn launch(
    config: &ServerConfig,
) -> (AppState, String, tokio::sync::oneshot::Sender<()>, Running) {
    let server = Server::bind_with_clock(config.clone(), Arc::new(SystemClock))
        .await
        .expect("server");
    let base = format!("http://{}", server.local_addr());
    let state = server.state().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    (state, base, stop, running)
}

/// The `p` percentile of `xs`, in milliseconds.
pub fn pct(mut xs: Vec<Duration>, p: f64) -> f64 {
    xs.sort();
    let i = ((xs.len() as f64 - 1.0) * p).round() as usize;
    xs[i].as_secs_f64() * 1000.0
}

/// A revision of `pages` pages in chapters of `per`: a top-level page `p{first}` ("Chapter g")
/// holding the next `per - 1` pages `p{i}` ("Topic i"); page `i`'s body is `body(i)`.
pub fn chapters(pages: usize, per: usize, body: impl Fn(usize) -> String) -> Revision {
    let mut rev = Revision::default();
    for g in 0..pages.div_ceil(per) {
        let first = g * per;
        let mut parent = Page::document(
            &format!("p{first}"),
            &format!("Chapter {g}"),
            &format!("chapter-{g}"),
            &body(first),
        );
        for i in first + 1..(first + per).min(pages) {
            parent.pages.push(Page::document(
                &format!("p{i}"),
                &format!("Topic {i}"),
                &format!("topic-{i}"),
                &body(i),
            ));
        }
        rev.pages.push(parent);
    }
    rev
}
