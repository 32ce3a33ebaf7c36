//! Scale-out: two `quire serve` nodes on one PostgreSQL database and one S3-compatible
//! bucket (a real S3 server, `s3s-fs`), behind a real load balancer (nginx). Checks that
//! what one node writes the other reads (within the access-cache bound for cached
//! decisions), that file bytes live in the shared bucket, that concurrent writes spread
//! over both nodes lose nothing, that every background job runs to its end once, and that
//! a job whose node dies is taken over after its lease.
//!
//! Needs `QUIRE_TEST_DATABASE_URL` (PostgreSQL), `QUIRE_S3_SERVER` (the `s3s-fs` binary)
//! and `nginx` on the PATH; `scripts/test.sh` installs them and runs it with `--ignored`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const QUIRE: &str = env!("CARGO_BIN_EXE_quire");
/// How long a node may reuse cached access decisions (`--access-cache-ms`).
const ACCESS_CACHE_MS: u64 = 1000;
/// Job lease (`--job-lease-ms`): short, so that a dead node's job is taken over quickly.
const LEASE_MS: u64 = 3000;
/// Retention of deleted spaces (`--deleted-space-retention-ms`): short, so that their purge
/// jobs come due during the test.
const RETENTION_MS: u64 = 2000;
const S3_KEY: &str = "quire-test";
const S3_SECRET: &str = "quire-test-secret";

/// A child process killed when dropped, so that a failing assertion leaves nothing running.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_for(url: &str) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if reqwest::get(url).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} did not answer");
}

/// A fresh schema of the test database, as a database URL.
async fn fresh_schema(base: &str) -> String {
    let schema = format!("scale_out_{}", std::process::id());
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(base)
        .await
        .expect("connect to QUIRE_TEST_DATABASE_URL");
    for sql in [
        format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
        format!("CREATE SCHEMA {schema}"),
    ] {
        sqlx::query(&sql).execute(&mut conn).await.unwrap();
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options[search_path]={schema}")
}

/// One `quire serve` node: its process, its base URL and its JSON log lines.
struct Node {
    process: Running,
    base: String,
    log: Arc<Mutex<Vec<Value>>>,
}

fn node(storage: &[String], env: &[(String, String)]) -> Node {
    let mut child = Command::new(QUIRE)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(storage)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("QUIRE_LOG", "info,quire::http=warn,sqlx=warn")
        .env("QUIRE_LOG_FORMAT", "json")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("quire serve starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("the server says where it listens")
            .unwrap();
        let entry: Value = serde_json::from_str(&line).expect("log lines are JSON");
        if let Some(at) = entry["message"]
            .as_str()
            .and_then(|m| m.strip_prefix("quire listening on "))
        {
            break at.trim().to_string();
        }
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if let Ok(entry) = serde_json::from_str::<Value>(&line) {
                kept.lock().unwrap().push(entry);
            }
        }
    });
    Node {
        process: Running(child),
        base,
        log,
    }
}

/// Ids of the jobs a node logged with `message`, with their kinds.
fn jobs_logged(node: &Node, message: &str) -> Vec<(String, String)> {
    node.log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e["message"] == message)
        .map(|e| {
            (
                e["job"].as_str().unwrap_or_default().to_string(),
                e["kind"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[derive(Clone)]
struct Api {
    token: String,
    http: reqwest::Client,
}

impl Api {
    async fn send(&self, method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.http.request(method, url).bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.expect("the request is answered");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }
    async fn get(&self, url: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, url, None).await
    }
    async fn post(&self, url: &str, body: Value) -> Value {
        let (status, v) = self.send(reqwest::Method::POST, url, Some(body)).await;
        assert!((200..300).contains(&status), "POST {url}: {status} {v}");
        v
    }
}

/// A LibreTranslate-speaking provider. Once armed, the next request it gets never
/// completes (its node is killed while waiting for it); others are answered at once.
#[derive(Clone, Default)]
struct Provider {
    armed: Arc<AtomicBool>,
    hanging: Arc<AtomicBool>,
}

async fn provider() -> (String, Provider) {
    use axum::routing::post;
    let p = Provider::default();
    let state = p.clone();
    let app = axum::Router::new().route(
        "/translate",
        post(move |axum::Json(body): axum::Json<Value>| {
            let p = state.clone();
            async move {
                if p.armed.swap(false, Ordering::SeqCst) {
                    p.hanging.store(true, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(600)).await;
                }
                let q: Vec<String> = body["q"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|s| format!("[tr] {}", s.as_str().unwrap_or_default()))
                            .collect()
                    })
                    .unwrap_or_default();
                axum::Json(json!({ "translatedText": q }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), p)
}

fn nginx(dir: &Path, port: u16, upstreams: &[&str]) -> Running {
    let servers: String = upstreams
        .iter()
        .map(|u| format!("server {};", u.trim_start_matches("http://")))
        .collect();
    // Running as root, nginx's workers would switch to an unprivileged user that cannot
    // write the temporary folders in the test's directory.
    let user = if std::env::var("USER").as_deref() == Ok("root")
        || Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
    {
        "user root;"
    } else {
        ""
    };
    let d = dir.display();
    let conf = format!(
        "{user}\nworker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 512; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
           fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
           client_max_body_size 32m;\n\
           upstream quire {{ {servers} keepalive 16; }}\n\
           server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      proxy_pass http://quire;\n\
               proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
               proxy_set_header Host $http_host;\n      proxy_next_upstream error timeout;\n\
               proxy_connect_timeout 2s;\n    }}\n  }}\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new("nginx")
        .args(["-p", &d.to_string(), "-c"])
        .arg(dir.join("nginx.conf"))
        .stdout(Stdio::null())
        .spawn()
        .expect("nginx starts");
    Running(child)
}

/// A 2×3 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZBwEEq5ZtpAAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL, an S3 server and nginx: scripts/test.sh runs it"]
async fn two_nodes_behind_a_load_balancer_share_everything() {
    let pg = std::env::var("QUIRE_TEST_DATABASE_URL").expect("QUIRE_TEST_DATABASE_URL");
    let s3_server = std::env::var("QUIRE_S3_SERVER").expect("QUIRE_S3_SERVER");
    let dir = tempfile::tempdir().unwrap();

    // The object store: a real S3 server on loopback, one bucket.
    let s3_root = dir.path().join("s3");
    std::fs::create_dir_all(s3_root.join("quire")).unwrap();
    let s3_port = free_port();
    let _s3 = Running(
        Command::new(&s3_server)
            .args(["--host", "127.0.0.1", "--port", &s3_port.to_string()])
            .args(["--access-key", S3_KEY, "--secret-key", S3_SECRET])
            .arg(&s3_root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the S3 server starts"),
    );
    let s3_url = format!("http://127.0.0.1:{s3_port}");
    wait_for(&s3_url).await;

    let (provider_url, provider) = provider().await;
    let lb_port = free_port();
    let lb = format!("http://127.0.0.1:{lb_port}");
    let database = fresh_schema(&pg).await;
    let storage = |name: &str| -> Vec<String> {
        [
            "--data-dir",
            &dir.path().join(name).display().to_string(),
            "--database-url",
            &database,
            "--blob-url",
            "s3://quire/blobs",
        ]
        .map(String::from)
        .to_vec()
    };
    let env: Vec<(String, String)> = [
        ("AWS_ENDPOINT", s3_url.as_str()),
        ("AWS_ACCESS_KEY_ID", S3_KEY),
        ("AWS_SECRET_ACCESS_KEY", S3_SECRET),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ALLOW_HTTP", "true"),
        ("QUIRE_PUBLIC_URL", lb.as_str()),
        ("QUIRE_ACCESS_CACHE_MS", &ACCESS_CACHE_MS.to_string()),
        ("QUIRE_JOB_LEASE_MS", &LEASE_MS.to_string()),
        (
            "QUIRE_DELETED_SPACE_RETENTION_MS",
            &RETENTION_MS.to_string(),
        ),
        ("QUIRE_FETCH_ALLOW", "127.0.0.0/8"),
        (
            "QUIRE_TRANSLATION_LIBRETRANSLATE_URL",
            provider_url.as_str(),
        ),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .to_vec();
    let a = node(&storage("a"), &env);
    let b = node(&storage("b"), &env);
    let lb_dir = dir.path().join("nginx");
    std::fs::create_dir_all(&lb_dir).unwrap();
    let _lb = nginx(&lb_dir, lb_port, &[&a.base, &b.base]);
    wait_for(&format!("{lb}/healthz")).await;

    let out = Command::new(QUIRE)
        .args(["admin", "create-token", "--email", "ops@example.com"])
        .args(storage("a"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let api = Api {
        token: String::from_utf8(out.stdout).unwrap().trim().to_string(),
        http: reqwest::Client::new(),
    };

    // A write through one node is read through the other.
    let org = api
        .post(&format!("{}/v1/orgs", a.base), json!({ "title": "Scale" }))
        .await;
    let org = org["id"].as_str().unwrap().to_string();
    let space = api
        .post(
            &format!("{}/v1/orgs/{org}/spaces", a.base),
            json!({ "title": "Shared" }),
        )
        .await;
    let space = space["id"].as_str().unwrap().to_string();
    let (status, got) = api.get(&format!("{}/v1/spaces/{space}", b.base)).await;
    assert_eq!((status, got["title"].clone()), (200, json!("Shared")));
    // A change to a cached row is seen by the other node within the cache bound.
    let changed = Instant::now();
    let (status, _) = api
        .send(
            reqwest::Method::PATCH,
            &format!("{}/v1/spaces/{space}", a.base),
            Some(json!({ "title": "Renamed" })),
        )
        .await;
    assert_eq!(status, 200);
    loop {
        let (_, got) = api.get(&format!("{}/v1/spaces/{space}", b.base)).await;
        if got["title"] == "Renamed" {
            break;
        }
        assert!(
            changed.elapsed() < Duration::from_millis(ACCESS_CACHE_MS + 1000),
            "node b still reads the old title"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A file uploaded through one node downloads through the other, from the bucket.
    let cr = api
        .post(
            &format!("{}/v1/spaces/{space}/change-requests", a.base),
            json!({ "subject": "files" }),
        )
        .await;
    let cr = cr["id"].as_str().unwrap().to_string();
    let batch = api
        .post(
            &format!(
                "{}/v1/spaces/{space}/change-requests/{cr}/content?compat=false",
                a.base
            ),
            json!({ "changes": [{ "operation": "insert_files",
                "files": [{ "base64": PNG, "name": "pixel.png" }] }] }),
        )
        .await;
    let file_id = batch["insertedFiles"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, file) = api
        .get(&format!(
            "{}/v1/spaces/{space}/change-requests/{cr}/content/files/{file_id}",
            b.base
        ))
        .await;
    let url = file["downloadURL"]
        .as_str()
        .expect("a download URL")
        .to_string();
    assert!(url.starts_with(&lb), "URLs are the public URL's: {url}");
    for base in [&a.base, &b.base] {
        let res = reqwest::get(url.replacen(&lb, base, 1)).await.unwrap();
        assert_eq!(res.status().as_u16(), 200, "download through {base}");
        use base64::Engine;
        let png = base64::engine::general_purpose::STANDARD
            .decode(PNG)
            .unwrap();
        assert_eq!(res.bytes().await.unwrap().as_ref(), png.as_slice());
    }
    let stored = walk(&s3_root.join("quire"));
    assert!(
        stored.iter().any(|p| p.contains("blobs")),
        "the bytes are in the bucket: {stored:?}"
    );

    // Concurrent comments and merges through the load balancer lose nothing.
    let comments = Arc::new(Mutex::new(Vec::new()));
    let merged = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for w in 0..2 {
        let (api, lb, space, comments) = (api.clone(), lb.clone(), space.clone(), comments.clone());
        workers.push(tokio::spawn(async move {
            for n in 0..40 {
                let c = api
                    .post(
                        &format!("{lb}/v1/spaces/{space}/comments"),
                        json!({ "body": { "markdown": format!("comment {w}-{n}") } }),
                    )
                    .await;
                comments
                    .lock()
                    .unwrap()
                    .push(c["id"].as_str().unwrap().to_string());
            }
        }));
    }
    for w in 0..2 {
        let (api, lb, space, merged) = (api.clone(), lb.clone(), space.clone(), merged.clone());
        workers.push(tokio::spawn(async move {
            for n in 0..8 {
                let cr = api
                    .post(
                        &format!("{lb}/v1/spaces/{space}/change-requests"),
                        json!({ "subject": format!("cr {w}-{n}") }),
                    )
                    .await;
                let cr = cr["id"].as_str().unwrap().to_string();
                let title = format!("Page {w}-{n}");
                api.post(
                    &format!("{lb}/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
                    json!({ "changes": [{ "operation": "insert_page", "title": title,
                        "document": { "markdown": format!("Body of {title}.\n") } }] }),
                )
                .await;
                api.post(
                    &format!("{lb}/v1/spaces/{space}/change-requests/{cr}/merge"),
                    json!({}),
                )
                .await;
                merged.lock().unwrap().push(title);
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let comments = comments.lock().unwrap().clone();
    let merged = merged.lock().unwrap().clone();
    tokio::time::sleep(Duration::from_millis(ACCESS_CACHE_MS + 200)).await;
    for base in [&a.base, &b.base] {
        let (_, s) = api.get(&format!("{base}/v1/spaces/{space}")).await;
        assert_eq!(s["comments"], json!(comments.len()), "{s}");
        assert_eq!(s["changeRequests"], json!(merged.len() + 1), "{s}");
        let (_, listed) = api
            .get(&format!("{base}/v1/spaces/{space}/comments?limit=100"))
            .await;
        let ids: Vec<&str> = listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        for id in &comments {
            assert!(
                ids.contains(&id.as_str()),
                "comment {id} is missing through {base}"
            );
        }
        let (_, pages) = api
            .get(&format!("{base}/v1/spaces/{space}/content/pages"))
            .await;
        let text = pages.to_string();
        for title in &merged {
            assert!(
                text.contains(&format!("\"{title}\"")),
                "{title} is missing through {base}"
            );
        }
    }

    // The space's repository is the same through either node: each made its own copy from
    // the database and the object store, and the commit ids agree.
    let mut heads = Vec::new();
    for (name, base) in [("clone-a", &a.base), ("clone-b", &b.base)] {
        let host = base.trim_start_matches("http://");
        let url = format!("http://git:{}@{host}/git/{space}.git", api.token);
        let git = |args: &[&str], cwd: &Path| {
            let out = Command::new("git")
                .args(args)
                .current_dir(cwd)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_TERMINAL_PROMPT", "0")
                .output()
                .expect("git runs");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["clone", "-q", &url, name], dir.path());
        let clone = dir.path().join(name);
        git(&["fsck", "--strict", "--no-dangling"], &clone);
        heads.push((
            git(&["rev-parse", "HEAD"], &clone),
            git(
                &[
                    "for-each-ref",
                    "--format=%(objectname) %(refname)",
                    "refs/remotes",
                ],
                &clone,
            ),
        ));
    }
    assert_eq!(heads[0], heads[1]);
    // A push through one node is a change request whose branch the other serves, at the
    // pushed commit.
    let git = |args: &[&str], cwd: &Path| {
        let out = Command::new("git")
            .args(args)
            .current_dir(cwd)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "Ops")
            .env("GIT_AUTHOR_EMAIL", "ops@example.com")
            .env("GIT_COMMITTER_NAME", "Ops")
            .env("GIT_COMMITTER_EMAIL", "ops@example.com")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let clone = dir.path().join("clone-a");
    let readme = std::fs::read_to_string(clone.join("README.md")).unwrap();
    std::fs::write(
        clone.join("README.md"),
        format!("{readme}\nPushed through one node.\n"),
    )
    .unwrap();
    git(&["commit", "-qam", "Through node a"], &clone);
    let pushed = git(&["rev-parse", "HEAD"], &clone);
    git(
        &["push", "-q", "origin", "HEAD:refs/heads/through-a"],
        &clone,
    );
    let b_url = format!(
        "http://git:{}@{}/git/{space}.git",
        api.token,
        b.base.trim_start_matches("http://")
    );
    let remote = git(&["ls-remote", &b_url], dir.path());
    assert!(
        remote
            .lines()
            .any(|l| l.starts_with(pushed.trim()) && l.contains("refs/heads/change-requests/")),
        "{remote}"
    );

    // Every job runs to its end once, wherever it runs: translations and OpenAPI
    // specifications created through the load balancer, each run as a job by one node or
    // the other.
    let mut translations = Vec::new();
    for language in ["fr", "de", "es", "it", "ja", "nl"] {
        let t = api
            .post(
                &format!("{lb}/v1/orgs/{org}/translations"),
                json!({ "source": { "space": space, "language": "en" }, "language": language }),
            )
            .await;
        translations.push(t["id"].as_str().unwrap().to_string());
    }
    // OpenAPI specifications, each processed by a job.
    for n in 0..4 {
        let text = format!(
            "openapi: 3.0.3\ninfo:\n  title: API {n}\n  version: '1'\npaths:\n  /items:\n    get:\n      responses:\n        '200':\n          description: ok\n"
        );
        api.post(
            &format!("{lb}/v1/orgs/{org}/openapi"),
            json!({ "slug": format!("api-{n}"), "source": { "text": text } }),
        )
        .await;
    }
    // Search folding: a merge that adds 70 pages to an indexed space leaves them in the
    // index's delta, and a job folds the delta into the index's blocks.
    let searched = api
        .post(
            &format!("{lb}/v1/orgs/{org}/spaces"),
            json!({ "title": "Searched" }),
        )
        .await;
    let searched = searched["id"].as_str().unwrap().to_string();
    for round in 0..2 {
        let cr = api
            .post(
                &format!("{lb}/v1/spaces/{searched}/change-requests"),
                json!({ "subject": format!("search {round}") }),
            )
            .await;
        let cr = cr["id"].as_str().unwrap().to_string();
        let pages = if round == 0 { 1 } else { 70 };
        for chunk in (0..pages).collect::<Vec<_>>().chunks(35) {
            let changes: Vec<Value> = chunk
                .iter()
                .map(|n| {
                    json!({ "operation": "insert_page", "title": format!("Found {round}-{n}"),
                        "document": { "markdown": format!("Findable text number {n}.\n") } })
                })
                .collect();
            api.post(
                &format!("{lb}/v1/spaces/{searched}/change-requests/{cr}/content?compat=false"),
                json!({ "changes": changes }),
            )
            .await;
        }
        api.post(
            &format!("{lb}/v1/spaces/{searched}/change-requests/{cr}/merge"),
            json!({}),
        )
        .await;
    }

    // Deleted spaces, each purged by a job once their retention (set short) has passed.
    let mut deleted = Vec::new();
    for n in 0..3 {
        let doomed = api
            .post(
                &format!("{lb}/v1/orgs/{org}/spaces"),
                json!({ "title": format!("Doomed {n}") }),
            )
            .await;
        let doomed = doomed["id"].as_str().unwrap().to_string();
        let (status, _) = api
            .send(
                reqwest::Method::DELETE,
                &format!("{lb}/v1/spaces/{doomed}"),
                None,
            )
            .await;
        assert_eq!(status, 204);
        deleted.push(doomed);
    }
    let jobs_left = || async {
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&database)
            .await
            .unwrap();
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM jobs WHERE run_at <= $1")
            .bind(i64::MAX / 2)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        n
    };
    let waited = Instant::now();
    while jobs_left().await > 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(90),
            "jobs are left undone"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for id in &translations {
        let (_, t) = api
            .get(&format!("{lb}/v1/orgs/{org}/translations/{id}"))
            .await;
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(t["stats"]["runs"], 1, "{t}");
    }
    let finished: Vec<(String, String)> = jobs_logged(&a, "job finished")
        .into_iter()
        .chain(jobs_logged(&b, "job finished"))
        .collect();
    let translated = finished
        .iter()
        .filter(|(_, kind)| kind == "translate")
        .count();
    assert_eq!(translated, translations.len(), "{finished:?}");
    let kind = |k: &str| finished.iter().filter(|(_, kind)| kind == k).count();
    assert_eq!(kind("openapi-process"), 4, "{finished:?}");
    assert_eq!(kind("purge-space"), deleted.len(), "{finished:?}");
    assert!(kind("search-index") >= 1, "{finished:?}");
    // Every merge schedules the pruning of derived bytes in the shared object store.
    assert!(kind("prune-derived") >= 1, "{finished:?}");
    let (_, found) = api
        .get(&format!("{lb}/v1/spaces/{searched}/search?query=findable"))
        .await;
    assert!(
        found["items"].as_array().is_some_and(|i| !i.is_empty()),
        "{found}"
    );
    // Each deleted space was purged, by one node, once.
    let purged: Vec<String> = [&a, &b]
        .iter()
        .flat_map(|n| {
            n.log
                .lock()
                .unwrap()
                .iter()
                .filter(|e| e["message"] == "purged deleted space")
                .map(|e| e["space"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut sorted = purged.clone();
    sorted.sort();
    let mut expected = deleted.clone();
    expected.sort();
    assert_eq!(sorted, expected, "purged: {purged:?}");
    for n in 0..4 {
        let (_, spec) = api
            .get(&format!("{lb}/v1/orgs/{org}/openapi/api-{n}"))
            .await;
        assert_eq!(spec["processingState"], "complete", "{spec}");
    }
    let mut times: HashMap<&str, usize> = HashMap::new();
    for (id, _) in &finished {
        *times.entry(id).or_default() += 1;
    }
    assert!(
        times.values().all(|n| *n == 1),
        "a job finished twice: {finished:?}"
    );

    // A job whose node dies mid-run is taken over after its lease, and finishes once.
    provider.armed.store(true, Ordering::SeqCst);
    let translation = api
        .post(
            &format!("{lb}/v1/orgs/{org}/translations"),
            json!({ "source": { "space": space, "language": "en" }, "language": "pt" }),
        )
        .await;
    let translation = translation["id"].as_str().unwrap().to_string();
    let waited = Instant::now();
    while !provider.hanging.load(Ordering::SeqCst) {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the run never reached the provider"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let running = |n: &Node| {
        jobs_logged(n, "job started")
            .into_iter()
            .find(|(id, kind)| kind == "translate" && !times.contains_key(id.as_str()))
            .map(|(id, _)| id)
    };
    let (job, mut dying, survivor) = match (running(&a), running(&b)) {
        (Some(job), None) => (job, a, b),
        (None, Some(job)) => (job, b, a),
        other => panic!("one node runs the translation: {other:?}"),
    };
    dying.process.0.kill().unwrap();
    dying.process.0.wait().unwrap();
    let killed = Instant::now();
    loop {
        if jobs_logged(&survivor, "job finished")
            .iter()
            .any(|(id, _)| *id == job)
        {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(60),
            "the surviving node did not take the job over"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        killed.elapsed() >= Duration::from_millis(LEASE_MS / 2),
        "the job was taken over before its lease could have run out"
    );
    let (_, t) = api
        .get(&format!(
            "{}/v1/orgs/{org}/translations/{translation}",
            survivor.base
        ))
        .await;
    assert_eq!(t["status"], "completed", "{t}");
    assert!(t["result"]["space"].is_string(), "{t}");
    let finishes = jobs_logged(&survivor, "job finished")
        .into_iter()
        .chain(jobs_logged(&dying, "job finished"))
        .filter(|(id, _)| *id == job)
        .count();
    assert_eq!(finishes, 1);
    // Through the load balancer, with one node gone, everything still reads.
    let (status, _) = api.get(&format!("{lb}/v1/spaces/{space}")).await;
    assert_eq!(status, 200);
}

/// Every file under `root`, as paths relative to it.
fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out
}
