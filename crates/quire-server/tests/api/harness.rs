//! The test app: a server per test with personas and a small HTTP client.

use std::sync::Arc;

use quire_server::clock::OffsetClock;
use quire_server::server::Server;
use quire_server::ServerConfig;
use reqwest::Method;
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// A running server on its own database.
pub struct TestApp {
    pub base: String,
    /// The server's state, for reaching past HTTP (running due jobs, inspecting rows).
    pub state: quire_server::AppState,
    pub config: ServerConfig,
    #[allow(dead_code)]
    pub clock: Arc<OffsetClock>,
    client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    _dir: Arc<tempfile::TempDir>,
}

/// A user with a token.
#[derive(Clone, Debug)]
pub struct Persona {
    pub id: String,
    pub email: String,
    pub token: String,
}

/// A response: status and JSON body (`Value::Null` when empty).
#[derive(Debug)]
pub struct Res {
    pub status: u16,
    pub body: Value,
}

impl Res {
    /// Asserts the status, printing the body on mismatch.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.body
        );
        self.body
    }

    /// Asserts an error answer with the official body.
    #[track_caller]
    pub fn expect_error(self, status: u16) -> String {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.body
        );
        assert_eq!(
            self.body["error"]["code"],
            json!(status),
            "error body: {}",
            self.body
        );
        let message = self.body["error"]["message"]
            .as_str()
            .expect("error message")
            .to_string();
        assert!(!message.is_empty());
        message
    }
}

async fn database_url(dir: &tempfile::TempDir) -> Option<String> {
    let base = std::env::var("QUIRE_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())?;
    // A fresh schema per test keeps tests independent on one PostgreSQL database.
    let schema = format!("t_{}", quire_server::ids::random_string(12).to_lowercase());
    let _ = dir;
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&base)
        .await
        .expect("connect to QUIRE_TEST_DATABASE_URL");
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut conn)
        .await
        .expect("create schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    Some(format!("{base}{sep}options[search_path]={schema}"))
}

impl TestApp {
    /// Starts a server on a fresh database.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a server on a fresh database, with the test's changes to the configuration.
    pub async fn start_with(configure: impl FnOnce(&mut ServerConfig)) -> Self {
        // Server logs go to the test's captured output, shown when a test fails.
        let _ = tracing_subscriber::fmt()
            .with_env_filter("warn,quire=info")
            .with_test_writer()
            .event_format(quire_server::http::WithRequestId(
                tracing_subscriber::fmt::format(),
            ))
            .try_init();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = ServerConfig {
            bind: ([127, 0, 0, 1], 0).into(),
            data_dir: dir.path().to_path_buf(),
            database_url: database_url(&dir).await,
            public_url: None,
            max_body_bytes: 64 * 1024,
            // The hostnames' proofs are asked of the tests' own DNS server, never the
            // system's.
            dns_server: Some(crate::dns::server()),
            ..ServerConfig::default()
        };
        configure(&mut config);
        Self::launch(config, Arc::new(dir)).await
    }

    /// Starts another node on this server's storage (as a second process of a scale-out
    /// deployment would be), with its own caches and clock.
    pub async fn another_node(&self) -> Self {
        Self::launch(self.config.clone(), self._dir.clone()).await
    }

    /// As [`Self::another_node`], with the test's changes to that node's configuration.
    pub async fn another_node_with(&self, configure: impl FnOnce(&mut ServerConfig)) -> Self {
        let mut config = self.config.clone();
        configure(&mut config);
        Self::launch(config, self._dir.clone()).await
    }

    async fn launch(config: ServerConfig, dir: Arc<tempfile::TempDir>) -> Self {
        let clock = Arc::new(OffsetClock::default());
        let server = Server::bind_with_clock(config.clone(), clock.clone())
            .await
            .expect("server starts");
        let base = format!("http://{}", server.local_addr());
        let state = server.state().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        TestApp {
            base,
            state,
            config,
            clock,
            client: reqwest::Client::new(),
            stop: Some(stop),
            _dir: dir,
        }
    }

    /// Creates a user (through the admin path, as `quire admin create-token` does).
    pub async fn persona(&self, name: &str) -> Persona {
        let email = format!("{name}@example.com");
        let token = quire_server::admin::create_token(&self.config, &email, Some(name))
            .await
            .expect("create token");
        let me = self
            .call(Method::GET, "/v1/user", Some(&token), None)
            .await
            .expect(200);
        Persona {
            id: me["id"].as_str().unwrap().to_string(),
            email,
            token,
        }
    }

    /// Sends a request; `body` is sent as JSON when given.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Res {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base, path));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.expect("request sent");
        let status = res.status().as_u16();
        let text = res.text().await.expect("body read");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)
                .unwrap_or_else(|_| panic!("non-JSON body ({status}): {text}"))
        };
        Res { status, body }
    }

    /// Sends raw bytes with a content type.
    pub async fn raw(&self, method: Method, path: &str, token: &str, body: Vec<u8>) -> Res {
        let res = self
            .client
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("request sent");
        let status = res.status().as_u16();
        let text = res.text().await.unwrap_or_default();
        Res {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }

    pub async fn get(&self, who: &Persona, path: &str) -> Res {
        self.call(Method::GET, path, Some(&who.token), None).await
    }
    pub async fn post(&self, who: &Persona, path: &str, body: Value) -> Res {
        self.call(Method::POST, path, Some(&who.token), Some(body))
            .await
    }
    pub async fn put(&self, who: &Persona, path: &str, body: Value) -> Res {
        self.call(Method::PUT, path, Some(&who.token), Some(body))
            .await
    }
    pub async fn patch(&self, who: &Persona, path: &str, body: Value) -> Res {
        self.call(Method::PATCH, path, Some(&who.token), Some(body))
            .await
    }
    pub async fn delete(&self, who: &Persona, path: &str) -> Res {
        self.call(Method::DELETE, path, Some(&who.token), None)
            .await
    }

    /// Creates an organization owned by `admin`; returns its id.
    pub async fn org(&self, admin: &Persona, title: &str) -> String {
        let org = self
            .post(admin, "/v1/orgs", json!({ "title": title }))
            .await
            .expect(201);
        org["id"].as_str().unwrap().to_string()
    }

    /// Creates a space in `org` (optionally in a collection); returns its id.
    pub async fn space(
        &self,
        who: &Persona,
        org: &str,
        title: &str,
        parent: Option<&str>,
    ) -> String {
        let mut body = json!({ "title": title });
        if let Some(parent) = parent {
            body["parent"] = json!(parent);
        }
        let s = self
            .post(who, &format!("/v1/orgs/{org}/spaces"), body)
            .await
            .expect(201);
        s["id"].as_str().unwrap().to_string()
    }

    /// Creates a collection in `org` (optionally nested); returns its id.
    pub async fn collection(
        &self,
        who: &Persona,
        org: &str,
        title: &str,
        parent: Option<&str>,
    ) -> String {
        let mut body = json!({ "title": title });
        if let Some(parent) = parent {
            body["parent"] = json!(parent);
        }
        let c = self
            .post(who, &format!("/v1/orgs/{org}/collections"), body)
            .await
            .expect(201);
        c["id"].as_str().unwrap().to_string()
    }

    /// Makes `who` a member of `org` with `role` (`null` = guest), by invitation.
    pub async fn add_member(&self, admin: &Persona, org: &str, who: &Persona, role: Value) {
        let res = self
            .post(
                admin,
                &format!("/v1/orgs/{org}/invites"),
                json!({ "emails": [{ "email": who.email, "role": role }] }),
            )
            .await
            .expect(200);
        assert_eq!(res["invited"], json!(1), "{res}");
    }

    /// Opens a change request in `space`; returns its id.
    pub async fn open_change_request(&self, who: &Persona, space: &str, subject: &str) -> String {
        let cr = self
            .post(
                who,
                &format!("/v1/spaces/{space}/change-requests"),
                json!({ "subject": subject }),
            )
            .await
            .expect(201);
        cr["id"].as_str().unwrap().to_string()
    }

    /// Applies a batch of content `changes` to a change request; returns the answer.
    pub async fn edit_change_request(
        &self,
        who: &Persona,
        space: &str,
        cr: &str,
        changes: Value,
    ) -> Value {
        self.post(
            who,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
            json!({ "changes": changes }),
        )
        .await
        .expect(200)
    }

    /// A space of `org` whose main content holds `pages` (title, markdown), merged from a
    /// change request; its id.
    pub async fn space_with_pages(
        &self,
        who: &Persona,
        org: &str,
        title: &str,
        pages: &[(&str, &str)],
    ) -> String {
        let space = self.space(who, org, title, None).await;
        let cr = self.open_change_request(who, &space, "Write").await;
        let changes: Vec<Value> = pages
            .iter()
            .map(|(title, markdown)| {
                json!({ "operation": "insert_page", "title": title, "document": { "markdown": markdown } })
            })
            .collect();
        self.edit_change_request(who, &space, &cr, Value::Array(changes))
            .await;
        self.merge_change_request(who, &space, &cr).await;
        space
    }

    /// Merges a change request into its space.
    pub async fn merge_change_request(&self, who: &Persona, space: &str, cr: &str) {
        self.post(
            who,
            &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
            json!({}),
        )
        .await
        .expect(200);
    }
}

/// The `id` of an answer.
pub fn id(v: &Value) -> String {
    v["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_string()
}

/// A 2×3 RGB PNG, base64-encoded, for `insert_files`.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZBwEEq5ZtpAAAAABJRU5ErkJggg==";

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Every write a test made said what it changed: one that did not moved every cached
        // lookup of the node (safe, but the cost of a forgotten `Tx::touches`; the log names
        // where it was begun).
        let undeclared = self.state.db.generations().undeclared();
        if undeclared > 0 && !std::thread::panicking() {
            panic!("{undeclared} write transaction(s) did not say what they changed (see the log)");
        }
    }
}

/// Makes a stored file look written `ms` milliseconds ago (the blob store dates what it
/// holds by the files' modification times).
pub fn age_file(path: &std::path::Path, ms: i64) {
    let then = std::time::SystemTime::now()
        - std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .set_modified(then)
        .unwrap();
}

/// The dialect's corpus (`quire-content/tests/corpus`): each page's file name and markdown,
/// by name.
pub fn corpus() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../quire-content/tests/corpus");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| {
            let text = std::fs::read_to_string(format!("{dir}/{n}")).unwrap();
            (n, text)
        })
        .collect();
    pages.sort();
    pages
}
