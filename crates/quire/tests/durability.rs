//! Durability: a write storm (change-request batches, merges, comments), the server killed
//! with SIGKILL in the middle of it, a restart on the same storage: every write the server
//! acknowledged is there, every revision reads, and the counters match what is stored.
//! Runs on SQLite, and on PostgreSQL too when `QUIRE_TEST_DATABASE_URL` is set.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const QUIRE: &str = env!("CARGO_BIN_EXE_quire");

/// Storage flags: the data dir, and a fresh PostgreSQL schema when one is configured.
async fn storage(dir: &std::path::Path) -> Vec<String> {
    let mut args = vec!["--data-dir".to_string(), dir.display().to_string()];
    if let Some(base) = std::env::var("QUIRE_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        // One schema per test: the tests of this file run at once in one process.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let schema = format!("durability_{}_{n}", std::process::id());
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&base)
            .await
            .expect("connect to QUIRE_TEST_DATABASE_URL");
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query(&format!("CREATE SCHEMA {schema}"))
            .execute(&mut conn)
            .await
            .unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        args.push("--database-url".into());
        args.push(format!("{base}{sep}options[search_path]={schema}"));
    }
    args
}

/// Starts `quire serve` and returns it with its base URL.
fn serve(storage: &[String]) -> (Child, String) {
    serve_with(storage, &[])
}

/// [`serve`] with these environment variables.
fn serve_with(storage: &[String], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(QUIRE)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(storage)
        .env("QUIRE_LOG", "info,quire::http=warn")
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("quire serve starts");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("the server says where it listens")
            .unwrap();
        if let Some(at) = line.find("listening on ") {
            break line[at + "listening on ".len()..].trim().to_string();
        }
    };
    // Keep draining the server's log so that it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, base)
}

fn token(storage: &[String]) -> String {
    let out = Command::new(QUIRE)
        .args(["admin", "create-token", "--email", "storm@example.com"])
        .args(storage)
        .output()
        .expect("create-token runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[derive(Clone)]
struct Api {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Api {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Option<Value> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.ok()?;
        if !res.status().is_success() {
            return None;
        }
        res.json().await.ok()
    }
    async fn post(&self, path: &str, body: Value) -> Option<Value> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
    async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None)
            .await
            .unwrap_or_else(|| panic!("GET {path} failed"))
    }
}

/// What the server acknowledged during the storm.
#[derive(Default)]
struct Acknowledged {
    comments: Vec<String>,
    change_requests: Vec<String>,
    /// Pages written into a change request: (change request, page title).
    pages: Vec<(String, String)>,
    merged: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_a_kill_mid_storm() {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage(dir.path()).await;
    let (mut server, base) = serve(&storage);
    let api = Api {
        base,
        token: token(&storage),
        http: reqwest::Client::new(),
    };
    let org = api
        .post("/v1/orgs", json!({ "title": "Storm" }))
        .await
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let space = api
        .post(
            &format!("/v1/orgs/{org}/spaces"),
            json!({ "title": "Storm" }),
        )
        .await
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    let acked = Arc::new(Mutex::new(Acknowledged::default()));
    let mut workers = Vec::new();
    for w in 0..2 {
        // Comment writers.
        let (api, space, acked) = (api.clone(), space.clone(), acked.clone());
        workers.push(tokio::spawn(async move {
            for n in 0..400 {
                let body = json!({ "body": { "markdown": format!("comment {w}-{n}") } });
                match api
                    .post(&format!("/v1/spaces/{space}/comments"), body)
                    .await
                {
                    Some(c) => acked
                        .lock()
                        .unwrap()
                        .comments
                        .push(c["id"].as_str().unwrap().into()),
                    None => return,
                }
            }
        }));
    }
    for w in 0..2 {
        // Change-request writers: open, write a page, merge every other one.
        let (api, space, acked) = (api.clone(), space.clone(), acked.clone());
        workers.push(tokio::spawn(async move {
            for n in 0..200 {
                let Some(cr) = api
                    .post(
                        &format!("/v1/spaces/{space}/change-requests"),
                        json!({ "subject": format!("cr {w}-{n}") }),
                    )
                    .await
                else {
                    return;
                };
                let cr = cr["id"].as_str().unwrap().to_string();
                acked.lock().unwrap().change_requests.push(cr.clone());
                let title = format!("Page {w}-{n}");
                let batch = json!({ "changes": [{ "operation": "insert_page", "title": title,
                    "document": { "markdown": format!("Body of {title}.\n") } }] });
                if api
                    .post(
                        &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
                        batch,
                    )
                    .await
                    .is_none()
                {
                    return;
                }
                acked.lock().unwrap().pages.push((cr.clone(), title));
                if n % 2 == 0 {
                    if api
                        .post(
                            &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
                            json!({}),
                        )
                        .await
                        .is_none()
                    {
                        return;
                    }
                    acked.lock().unwrap().merged.push(cr);
                }
            }
        }));
    }
    // Let the storm build up, then kill the server without warning.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let a = acked.lock().unwrap();
        if a.comments.len() >= 60 && a.merged.len() >= 6 {
            break;
        }
    }
    server.kill().expect("SIGKILL");
    server.wait().unwrap();
    for w in workers {
        w.await.unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    assert!(
        acked.comments.len() >= 10 && !acked.merged.is_empty(),
        "the storm wrote too little"
    );

    let (mut server, base) = serve(&storage);
    let api = Api { base, ..api };
    for id in &acked.comments {
        api.get(&format!("/v1/spaces/{space}/comments/{id}")).await;
    }
    for cr in &acked.change_requests {
        let c = api
            .get(&format!("/v1/spaces/{space}/change-requests/{cr}"))
            .await;
        if acked.merged.contains(cr) {
            assert_eq!(c["status"], "merged", "{c}");
        }
        // Every change request's revision reads.
        let rev = c["revision"].as_str().unwrap();
        api.get(&format!("/v1/spaces/{space}/revisions/{rev}"))
            .await;
    }
    let listed = api.get(&format!("/v1/spaces/{space}/content/pages")).await;
    let text = listed.to_string();
    for (cr, title) in &acked.pages {
        if acked.merged.contains(cr) {
            assert!(
                text.contains(&format!("\"{title}\"")),
                "merged page {title} is missing"
            );
        } else {
            let pages = api
                .get(&format!(
                    "/v1/spaces/{space}/change-requests/{cr}/content/pages"
                ))
                .await;
            assert!(
                pages.to_string().contains(&format!("\"{title}\"")),
                "page {title} of {cr} is missing"
            );
        }
    }
    // Counters match what is stored.
    let s = api.get(&format!("/v1/spaces/{space}")).await;
    let open_comments = api
        .get(&format!("/v1/spaces/{space}/comments?status=open&limit=1"))
        .await;
    assert_eq!(s["comments"], open_comments["count"], "{s}");
    let mut all = 0;
    for status in ["draft", "open", "archived", "merged"] {
        let l = api
            .get(&format!(
                "/v1/spaces/{space}/change-requests?status={status}&limit=1"
            ))
            .await;
        if status == "open" {
            assert_eq!(s["changeRequestsOpen"], l["count"], "{s}");
        }
        if status == "draft" {
            assert_eq!(s["changeRequestsDraft"], l["count"], "{s}");
        }
        all += l["count"].as_i64().unwrap();
    }
    assert_eq!(s["changeRequests"].as_i64().unwrap(), all, "{s}");
    assert!(all >= acked.change_requests.len() as i64);
    server.kill().unwrap();
    server.wait().unwrap();
}

/// SIGTERM: the server stops accepting, finishes the request in flight (here one whose body
/// is still arriving), then exits cleanly; what that request wrote is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_request_in_flight_then_exits() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let dir = tempfile::tempdir().unwrap();
    let storage = storage(dir.path()).await;
    let (mut server, base) = serve(&storage);
    let token = token(&storage);
    let addr = base.trim_start_matches("http://").to_string();

    // A request in flight: its head and half of its body sent.
    let body = json!({ "title": "Created across a SIGTERM" }).to_string();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /v1/orgs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(first.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let signalled = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(signalled.success());

    // New connections are refused once the server stops accepting.
    let waited = Instant::now();
    while tokio::net::TcpStream::connect(&addr).await.is_ok() {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the server still accepts connections after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The server is still there, waiting for the request in flight.
    assert!(
        server.try_wait().unwrap().is_none(),
        "exited before finishing the request"
    );

    // The rest of the body arrives: the request is answered, then the connection closes.
    conn.write_all(rest.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), conn.read_to_end(&mut answer))
        .await
        .expect("the answer and the close come")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let created: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or(""))
        .unwrap_or_else(|_| panic!("a JSON body: {answer}"));
    let org = created["id"].as_str().unwrap().to_string();

    // Then the process exits by itself, cleanly.
    let waited = Instant::now();
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(40),
            "the server did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");

    // The organization it created is stored.
    let (mut again, base) = serve(&storage);
    let api = Api {
        base,
        token,
        http: reqwest::Client::new(),
    };
    let got = api.get(&format!("/v1/orgs/{org}")).await;
    assert_eq!(got["title"], "Created across a SIGTERM");
    again.kill().unwrap();
    again.wait().unwrap();
}

/// A server whose machine has no `git` program answers the git endpoints 501, saying so,
/// and everything else as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_git_the_git_endpoints_answer_501() {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage(dir.path()).await;
    let token = token(&storage);
    let (mut server, base) = serve_with(&storage, &[("PATH", "/nonexistent")]);
    let http = reqwest::Client::new();
    let res = http
        .get(format!(
            "{base}/git/any.git/info/refs?service=git-upload-pack"
        ))
        .basic_auth("git", Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 501);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], 501, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("`git`"),
        "{body}"
    );
    let api = Api { base, token, http };
    assert_eq!(api.get("/v1/user").await["object"], "user");
    server.kill().unwrap();
    server.wait().unwrap();
}
