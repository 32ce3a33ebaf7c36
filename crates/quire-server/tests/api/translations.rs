//! Translations: the six operations, and runs against loopback servers that speak each
//! provider's protocol (OpenAI-compatible chat completions, LibreTranslate).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use quire_server::config::{Secret, TranslationProvider};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::harness::{Persona, TestApp};

/// What the loopback provider saw and how it behaves.
#[derive(Default)]
struct Seen {
    /// Every text received, in order.
    texts: Vec<String>,
    /// Every request body received.
    bodies: Vec<Value>,
    /// Requests answered so far.
    calls: usize,
    /// Answer 500 from this request on (counting from 1), if set.
    fail_from: Option<usize>,
}

#[derive(Clone)]
struct Provider {
    seen: Arc<Mutex<Seen>>,
    /// Requests wait for a permit when `gated` (tests that hold a run open).
    gate: Arc<Semaphore>,
    gated: Arc<std::sync::atomic::AtomicBool>,
}

impl Provider {
    fn texts(&self) -> Vec<String> {
        self.seen.lock().unwrap().texts.clone()
    }
    fn clear(&self) {
        let mut s = self.seen.lock().unwrap();
        s.texts.clear();
        s.bodies.clear();
    }
    /// The system message of the first chat request seen.
    fn first_system(&self) -> String {
        let s = self.seen.lock().unwrap();
        s.bodies[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    }
    fn fail_from(&self, n: Option<usize>) {
        let mut s = self.seen.lock().unwrap();
        s.fail_from = n.map(|n| s.calls + n);
    }
}

fn tr(text: &str) -> String {
    format!("FR {text}")
}

/// Records a request; `None` when it must fail.
async fn admit(p: &Provider, body: &Value, texts: &[String]) -> Option<()> {
    if p.gated.load(std::sync::atomic::Ordering::SeqCst) {
        p.gate.acquire().await.unwrap().forget();
    }
    let mut s = p.seen.lock().unwrap();
    s.calls += 1;
    if s.fail_from.is_some_and(|n| s.calls >= n) {
        return None;
    }
    s.bodies.push(body.clone());
    s.texts.extend(texts.iter().cloned());
    Some(())
}

async fn chat(State(p): State<Provider>, Json(body): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let user = body["messages"][1]["content"].as_str().unwrap_or("{}");
    let segments: Vec<String> = serde_json::from_str::<Value>(user).unwrap()["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    if admit(&p, &body, &segments).await.is_none() {
        return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "down").into_response();
    }
    let out: Vec<String> = segments.iter().map(|s| tr(s)).collect();
    let content = format!("```json\n{}\n```", json!({ "segments": out }));
    Json(json!({ "choices": [{ "index": 0, "message": { "role": "assistant", "content": content } }] }))
        .into_response()
}

async fn libre(State(p): State<Provider>, Json(body): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let q: Vec<String> = body["q"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    if admit(&p, &body, &q).await.is_none() {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    Json(json!({ "translatedText": q.iter().map(|s| tr(s)).collect::<Vec<_>>() })).into_response()
}

async fn provider_server() -> (Provider, SocketAddr) {
    let p = Provider {
        seen: Arc::default(),
        gate: Arc::new(Semaphore::new(0)),
        gated: Arc::default(),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/translate", post(libre))
        .with_state(p.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (p, addr)
}

#[derive(Clone, Copy)]
enum Kind {
    OpenAi,
    Libre,
    None,
}

async fn start(kind: Kind) -> (TestApp, Provider) {
    let (p, addr) = provider_server().await;
    let app = TestApp::start_with(|c| {
        c.fetch_allow = vec!["127.0.0.0/8".parse().unwrap()];
        c.translation.batch_segments = 3;
        c.translation.backoff_ms = 5;
        c.translation.attempts = 2;
        c.translation.provider = match kind {
            Kind::OpenAi => Some(TranslationProvider::OpenAi {
                base_url: format!("http://{addr}/v1"),
                model: "test-model".into(),
                key: Some(Secret::new("sk-very-secret")),
            }),
            Kind::Libre => Some(TranslationProvider::LibreTranslate {
                url: format!("http://{addr}"),
                key: Some(Secret::new("lt-very-secret")),
            }),
            Kind::None => None,
        };
    })
    .await;
    (app, p)
}

struct World {
    admin: Persona,
    org: String,
    space: String,
}

/// A space with two pages: a guide (prose, a code block, inline code, a link) and a nested
/// page under it.
async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Handbook", None).await;
    let cr = open_cr(app, &admin, &space).await;
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
        json!({ "changes": [
            { "operation": "insert_page", "ref": "g", "title": "Guide", "document": { "markdown": GUIDE } },
            { "operation": "insert_page", "into": "g", "title": "Details", "document": { "markdown": "Some details here.\n" } },
        ] }),
    )
    .await
    .expect(200);
    merge(app, &admin, &space, &cr).await;
    World { admin, org, space }
}

const GUIDE: &str = "Install the tool with `cargo install quire` and read [the manual](https://example.com/manual).\n\n```rust\nfn main() { println!(\"keep me\"); }\n```\n\n* First step\n* Second step\n";

async fn open_cr(app: &TestApp, who: &Persona, space: &str) -> String {
    app.post(
        who,
        &format!("/v1/spaces/{space}/change-requests"),
        json!({ "subject": "edit" }),
    )
    .await
    .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn merge(app: &TestApp, who: &Persona, space: &str, cr: &str) {
    app.post(
        who,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
}

/// Pages of a space as `(title, id, markdown)`, depth first.
async fn pages(app: &TestApp, who: &Persona, space: &str) -> Vec<(String, String, String)> {
    let listing = app
        .get(who, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let mut flat = Vec::new();
    fn walk(v: &Value, out: &mut Vec<(String, String)>) {
        for p in v.as_array().unwrap() {
            out.push((
                p["title"].as_str().unwrap().to_string(),
                p["id"].as_str().unwrap().to_string(),
            ));
            walk(&p["pages"], out);
        }
    }
    walk(&listing["pages"], &mut flat);
    let mut out = Vec::new();
    for (title, id) in flat {
        let page = app
            .get(
                who,
                &format!("/v1/spaces/{space}/content/page/{id}?format=markdown"),
            )
            .await
            .expect(200);
        out.push((
            title,
            id,
            page["markdown"].as_str().unwrap_or("").to_string(),
        ));
    }
    out
}

async fn create(app: &TestApp, w: &World, instructions: Option<Value>) -> Value {
    let mut body = json!({ "source": { "space": w.space, "language": "en" }, "language": "fr" });
    if let Some(i) = instructions {
        body["instructions"] = i;
    }
    app.post(&w.admin, &format!("/v1/orgs/{}/translations", w.org), body)
        .await
        .expect(201)
}

/// Runs due jobs until the translation is no longer pending or running.
async fn settle(app: &TestApp, w: &World, id: &str) -> Value {
    for _ in 0..400 {
        quire_server::domain::jobs::run_due(&app.state)
            .await
            .unwrap();
        let t = app
            .get(&w.admin, &format!("/v1/orgs/{}/translations/{id}", w.org))
            .await
            .expect(200);
        if t["status"] == "completed" {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("translation {id} did not settle");
}

fn instructions(text: &str) -> Value {
    json!({ "object": "document", "data": {}, "nodes": [
        { "object": "block", "type": "paragraph", "nodes": [
            { "object": "text", "leaves": [{ "object": "leaf", "text": text, "marks": [] }] }
        ] }
    ] })
}

async fn full_run_then_incremental(kind: Kind) {
    let (app, provider) = start(kind).await;
    let w = world(&app).await;
    let created = create(&app, &w, Some(instructions("Use a formal tone."))).await;
    assert_eq!(created["object"], "translation");
    assert_eq!(created["status"], "pending");
    assert_eq!(created["stats"]["runs"], 0);
    let id = created["id"].as_str().unwrap().to_string();
    let t = settle(&app, &w, &id).await;
    assert!(t.get("failure").is_none(), "{t}");
    assert_eq!(t["stats"]["runs"], 1);
    assert_eq!(t["stats"]["latestPages"], 2);
    assert_eq!(t["stats"]["totalPages"], 2);
    let sent = provider.texts();
    // Only prose went out: no code, no URL, no markup.
    for text in &sent {
        assert!(!text.contains("cargo install"), "{text}");
        assert!(!text.contains("println"), "{text}");
        assert!(!text.contains("example.com"), "{text}");
        assert!(
            !text.contains('`') && !text.contains('*') && !text.contains('['),
            "{text}"
        );
    }
    let words: usize = sent.iter().map(|t| t.split_whitespace().count()).sum();
    assert_eq!(t["stats"]["latestWords"], json!(words));
    assert_eq!(t["stats"]["totalWords"], json!(words));
    let result = t["result"]["space"].as_str().unwrap().to_string();
    let first_revision = t["result"]["revision"].as_str().unwrap().to_string();
    let source_pages = pages(&app, &w.admin, &w.space).await;
    let out = pages(&app, &w.admin, &result).await;
    assert_eq!(out.len(), 2);
    // Same ids, same structure; code blocks, inline code and URLs unchanged.
    assert_eq!(out[0].1, source_pages[0].1);
    assert_eq!(out[1].1, source_pages[1].1);
    assert_eq!(out[0].0, "FR Guide");
    assert_eq!(out[1].0, "FR Details");
    let guide = &out[0].2;
    assert!(guide.contains("FR Install the tool with"), "{guide}");
    assert!(guide.contains("`cargo install quire`"), "{guide}");
    assert!(
        guide.contains("[FR the manual](https://example.com/manual)"),
        "{guide}"
    );
    assert!(
        guide.contains("```rust\nfn main() { println!(\"keep me\"); }\n```"),
        "{guide}"
    );
    assert!(guide.contains("* FR First step"), "{guide}");
    if let Kind::OpenAi = kind {
        let s = provider.seen.lock().unwrap();
        let system = s.bodies[0]["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains("Use a formal tone."), "{system}");
        assert_eq!(s.bodies[0]["model"], "test-model");
    }
    // The result space is in the organization, in the target language.
    let space = app
        .get(&w.admin, &format!("/v1/spaces/{result}"))
        .await
        .expect(200);
    assert_eq!(space["language"], "fr");

    // Change one page: only its texts are sent again.
    provider.clear();
    let cr = open_cr(&app, &w.admin, &w.space).await;
    app.post(
        &w.admin,
        &format!("/v1/spaces/{}/change-requests/{cr}/content?compat=false", w.space),
        json!({ "changes": [{ "operation": "update_page", "page": source_pages[1].1, "document": { "markdown": "New details now.\n" } }] }),
    )
    .await
    .expect(200);
    merge(&app, &w.admin, &w.space, &cr).await;
    app.post(
        &w.admin,
        &format!("/v1/orgs/{}/translations/{id}/run", w.org),
        json!({}),
    )
    .await
    .expect(204);
    let t = settle(&app, &w, &id).await;
    assert_eq!(provider.texts(), vec!["Details", "New details now."]);
    assert_eq!(t["stats"]["runs"], 2);
    assert_eq!(t["stats"]["latestPages"], 1);
    assert_eq!(t["stats"]["latestWords"], 4);
    assert_eq!(t["stats"]["totalPages"], 2);
    assert_eq!(t["stats"]["totalWords"], json!(words + 4));
    assert_eq!(t["result"]["space"], json!(result));
    assert_ne!(t["result"]["revision"], json!(first_revision));
    let again = pages(&app, &w.admin, &result).await;
    assert_eq!(again[0], out[0]);
    assert_eq!(again[1].1, out[1].1);
    assert_eq!(again[1].2.trim(), "FR New details now.");

    // Nothing changed: nothing sent, no new revision.
    provider.clear();
    let before = t["result"]["revision"].clone();
    app.post(
        &w.admin,
        &format!("/v1/orgs/{}/translations/{id}/run", w.org),
        json!({}),
    )
    .await
    .expect(204);
    let t = settle(&app, &w, &id).await;
    assert!(provider.texts().is_empty());
    assert_eq!(t["result"]["revision"], before);
    assert_eq!(t["stats"]["runs"], 3);
    assert_eq!(t["stats"]["latestPages"], 0);
    // Keys never appear in answers.
    let listed = app
        .get(&w.admin, &format!("/v1/orgs/{}/translations", w.org))
        .await
        .expect(200);
    assert!(!listed.to_string().contains("very-secret"));
}

#[tokio::test]
async fn openai_full_run_then_only_the_changed_page() {
    full_run_then_incremental(Kind::OpenAi).await;
}

#[tokio::test]
async fn libretranslate_full_run_then_only_the_changed_page() {
    full_run_then_incremental(Kind::Libre).await;
}

#[tokio::test]
async fn a_provider_failing_mid_run_leaves_the_result_as_it_was() {
    let (app, provider) = start(Kind::OpenAi).await;
    let w = world(&app).await;
    let id = create(&app, &w, None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let first = settle(&app, &w, &id).await;
    let result = first["result"]["space"].as_str().unwrap().to_string();
    let before = pages(&app, &w.admin, &result).await;
    // Both pages change; the provider answers its first batch, then fails.
    let src = pages(&app, &w.admin, &w.space).await;
    let cr = open_cr(&app, &w.admin, &w.space).await;
    app.post(
        &w.admin,
        &format!("/v1/spaces/{}/change-requests/{cr}/content?compat=false", w.space),
        json!({ "changes": [
            { "operation": "update_page", "page": src[0].1, "document": { "markdown": "One two three.\n\nFour five.\n\nSix seven.\n\nEight.\n" } },
            { "operation": "update_page", "page": src[1].1, "document": { "markdown": "Changed details.\n" } },
        ] }),
    )
    .await
    .expect(200);
    merge(&app, &w.admin, &w.space, &cr).await;
    provider.fail_from(Some(2));
    app.post(
        &w.admin,
        &format!("/v1/orgs/{}/translations/{id}/run", w.org),
        json!({}),
    )
    .await
    .expect(204);
    let failed = settle(&app, &w, &id).await;
    let reason = failed["failure"]["reason"].as_str().unwrap();
    assert!(reason.contains("500"), "{reason}");
    assert!(!reason.contains("very-secret"));
    assert_eq!(failed["result"], first["result"]);
    assert_eq!(failed["stats"]["runs"], 1);
    assert_eq!(pages(&app, &w.admin, &result).await, before);
    // The provider is back: the next run completes and clears the failure.
    provider.fail_from(None);
    app.post(
        &w.admin,
        &format!("/v1/orgs/{}/translations/{id}/run", w.org),
        json!({}),
    )
    .await
    .expect(204);
    let done = settle(&app, &w, &id).await;
    assert!(done.get("failure").is_none(), "{done}");
    assert_eq!(done["stats"]["runs"], 2);
    assert_eq!(done["stats"]["latestPages"], 2);
    let after = pages(&app, &w.admin, &result).await;
    assert_eq!(after[1].2.trim(), "FR Changed details.");
}

#[tokio::test]
async fn without_a_provider_a_run_fails_at_once_and_writes_nothing() {
    let (app, _) = start(Kind::None).await;
    let w = world(&app).await;
    let id = create(&app, &w, None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let t = settle(&app, &w, &id).await;
    let reason = t["failure"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("No machine-translation provider"),
        "{reason}"
    );
    assert!(t.get("result").is_none(), "{t}");
    assert_eq!(t["stats"]["runs"], 0);
    let spaces = app
        .get(&w.admin, &format!("/v1/orgs/{}/spaces", w.org))
        .await
        .expect(200);
    assert_eq!(spaces["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_run_requested_while_one_runs_follows_it_once() {
    let (app, provider) = start(Kind::Libre).await;
    provider
        .gated
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let w = world(&app).await;
    let id = create(&app, &w, None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The worker takes the run and waits on the provider.
    let state = app.state.clone();
    let worker =
        tokio::spawn(async move { quire_server::domain::jobs::run_due(&state).await.unwrap() });
    let path = format!("/v1/orgs/{}/translations/{id}", w.org);
    for _ in 0..200 {
        if app.get(&w.admin, &path).await.expect(200)["status"] == "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        app.get(&w.admin, &path).await.expect(200)["status"],
        "running"
    );
    for _ in 0..3 {
        app.post(&w.admin, &format!("{path}/run"), json!({}))
            .await
            .expect(204);
    }
    assert_eq!(
        app.get(&w.admin, &path).await.expect(200)["status"],
        "running"
    );
    provider
        .gated
        .store(false, std::sync::atomic::Ordering::SeqCst);
    provider.gate.add_permits(1000);
    worker.await.unwrap();
    let t = settle(&app, &w, &id).await;
    // The first run and exactly one follow-up.
    assert_eq!(t["stats"]["runs"], 2, "{t}");
    // A job's row goes once its run has written its end (the worker and `settle` may both
    // be finishing the follow-up's job): none stays.
    let mut left = 1;
    for _ in 0..100 {
        left = quire_server::store::jobs::count(&app.state.db, "translate")
            .await
            .unwrap();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(left, 0);
}

#[tokio::test]
async fn the_operations_answer_with_official_shapes_and_errors() {
    let (app, _) = start(Kind::None).await;
    let w = world(&app).await;
    let base = format!("/v1/orgs/{}/translations", w.org);
    // Bad input: 400 naming the field.
    for (body, field) in [
        (
            json!({ "source": { "space": w.space, "language": "en" } }),
            "language",
        ),
        (
            json!({ "source": { "space": w.space, "language": "en" }, "language": "xx" }),
            "language",
        ),
        (
            json!({ "source": { "space": w.space, "language": "klingon" }, "language": "fr" }),
            "source.language",
        ),
        (
            json!({ "source": { "space": "nope", "language": "en" }, "language": "fr" }),
            "source.space",
        ),
        (json!({ "language": "fr" }), "source"),
        (
            json!({ "source": { "space": w.space, "language": "en" }, "language": "en" }),
            "language",
        ),
        (
            json!({ "source": { "space": w.space, "language": "en" }, "language": "fr", "instructions": { "object": "nope" } }),
            "instructions",
        ),
    ] {
        let msg = app
            .post(&w.admin, &base, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
    // Too deep instructions are refused, not a crash.
    let mut deep = json!({ "object": "text", "leaves": [] });
    for _ in 0..60 {
        deep = json!({ "object": "block", "type": "blockquote", "nodes": [deep] });
    }
    let body = json!({ "source": { "space": w.space, "language": "en" }, "language": "fr",
        "instructions": { "object": "document", "data": {}, "nodes": [deep] } });
    app.post(&w.admin, &base, body).await.expect_error(400);

    let a = create(&app, &w, None).await;
    let b = create(&app, &w, Some(instructions("Short sentences."))).await;
    let id = a["id"].as_str().unwrap();
    let got = app.get(&w.admin, &format!("{base}/{id}")).await.expect(200);
    assert_eq!(got["source"], json!({ "space": w.space, "language": "en" }));
    assert_eq!(got["permissions"], json!({ "view": true, "edit": true }));
    assert!(got["urls"]["location"]
        .as_str()
        .unwrap()
        .ends_with(&format!("{base}/{id}")));
    // Paging.
    let page = app
        .get(&w.admin, &format!("{base}?limit=1"))
        .await
        .expect(200);
    assert_eq!(page["count"], 2);
    assert_eq!(page["items"][0]["id"], a["id"]);
    let cursor = page["next"]["page"].as_str().unwrap();
    let next = app
        .get(&w.admin, &format!("{base}?limit=1&page={cursor}"))
        .await
        .expect(200);
    assert_eq!(next["items"][0]["id"], b["id"]);
    assert!(next.get("next").is_none());
    // Update.
    let updated = app
        .put(
            &w.admin,
            &format!("{base}/{id}"),
            json!({ "instructions": instructions("Be brief.") }),
        )
        .await
        .expect(200);
    assert_eq!(
        updated["instructions"]["nodes"][0]["nodes"][0]["leaves"][0]["text"],
        "Be brief."
    );
    app.put(&w.admin, &format!("{base}/{id}"), json!({}))
        .await
        .expect_error(400);
    app.put(
        &w.admin,
        &format!("{base}/nope"),
        json!({ "instructions": instructions("x") }),
    )
    .await
    .expect_error(404);
    app.get(&w.admin, &format!("{base}/nope"))
        .await
        .expect_error(404);
    app.post(&w.admin, &format!("{base}/nope/run"), json!({}))
        .await
        .expect_error(404);
    // Delete: 204, also when absent.
    assert_eq!(
        app.delete(&w.admin, &format!("{base}/{id}")).await.status,
        204
    );
    assert_eq!(
        app.delete(&w.admin, &format!("{base}/{id}")).await.status,
        204
    );
    app.get(&w.admin, &format!("{base}/{id}"))
        .await
        .expect_error(404);
    // Another organization's translations are not found.
    let other = app.persona("other").await;
    let elsewhere = app.org(&other, "Elsewhere").await;
    let b_id = b["id"].as_str().unwrap();
    app.get(&other, &format!("/v1/orgs/{elsewhere}/translations/{b_id}"))
        .await
        .expect_error(404);
}

#[tokio::test]
async fn the_glossary_is_kept_by_runs_and_changing_it_translates_again() {
    let (app, provider) = start(Kind::OpenAi).await;
    let w = world(&app).await;
    let reader = app.persona("reader").await;
    app.add_member(&w.admin, &w.org, &reader, json!("read"))
        .await;
    let glossary = format!("/v1/orgs/{}/translations-glossary", w.org);

    // A batch: two inserts; a bad one refuses the whole batch, naming the operation.
    let bad = app
        .put(
            &w.admin,
            &glossary,
            json!({ "operations": [
                { "type": "insert", "translations": { "en": "tool", "fr": "outil" } },
                { "type": "insert", "translations": { "en": "two\nlines" } }
            ] }),
        )
        .await
        .expect_error(400);
    assert!(bad.contains("operations[1]"), "{bad}");
    let bad = app
        .put(
            &w.admin,
            &glossary,
            json!({ "operations": [{ "type": "insert", "translations": { "xx": "word" } }] }),
        )
        .await
        .expect_error(400);
    assert!(bad.contains("operations[0].translations"), "{bad}");
    let bad = app
        .put(
            &w.admin,
            &glossary,
            json!({ "operations": [{ "type": "delete", "id": "nothing" }] }),
        )
        .await
        .expect_error(400);
    assert!(bad.contains("operations[0].id"), "{bad}");
    assert_eq!(app.get(&w.admin, &glossary).await.expect(200)["count"], 0);
    app.put(
        &reader,
        &glossary,
        json!({ "operations": [{ "type": "insert", "translations": { "en": "tool" } }] }),
    )
    .await
    .expect_error(403);

    app.put(
        &w.admin,
        &glossary,
        json!({ "operations": [
            { "type": "insert", "translations": { "en": "tool", "fr": "outil" } },
            { "type": "insert", "translations": { "en": "manual", "de": "Handbuch" } }
        ] }),
    )
    .await
    .expect(204);
    let listed = app.get(&reader, &glossary).await.expect(200);
    assert_eq!(listed["count"], 2);
    let entry = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["translations"]["en"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(entry["object"], "glossary-entry");
    assert_eq!(
        entry["translations"],
        json!({ "en": "tool", "fr": "outil" })
    );
    let id = entry["id"].as_str().unwrap().to_string();
    let got = app
        .get(&reader, &format!("{glossary}/{id}"))
        .await
        .expect(200);
    assert_eq!(got, entry);
    assert!(got["urls"]["location"]
        .as_str()
        .unwrap()
        .ends_with(&format!("{glossary}/{id}")));
    app.get(&w.admin, &format!("{glossary}/nothing"))
        .await
        .expect_error(404);

    // A run from English to French asks the provider to keep the pair it has (and not the
    // one without French).
    let created = create(&app, &w, None).await;
    let tid = created["id"].as_str().unwrap().to_string();
    settle(&app, &w, &tid).await;
    let system = provider.first_system();
    assert!(system.contains(r#"["tool","outil"]"#), "{system}");
    assert!(!system.contains("Handbuch"), "{system}");

    // Changing the pair translates every page again; the same glossary translates nothing.
    provider.clear();
    let t = run_again(&app, &w, &tid).await;
    assert_eq!(t["stats"]["latestPages"], 0, "{t}");
    app.put(
        &w.admin,
        &glossary,
        json!({ "operations": [
            { "type": "update", "id": id, "translations": { "en": "tool", "fr": "instrument" } }
        ] }),
    )
    .await
    .expect(204);
    let t = run_again(&app, &w, &tid).await;
    assert_eq!(t["stats"]["latestPages"], 2, "{t}");
    let system = provider.first_system();
    assert!(system.contains(r#"["tool","instrument"]"#), "{system}");

    app.put(
        &w.admin,
        &glossary,
        json!({ "operations": [{ "type": "delete", "id": id }] }),
    )
    .await
    .expect(204);
    assert_eq!(app.get(&w.admin, &glossary).await.expect(200)["count"], 1);
}

/// Requests a run of the translation `id` and waits for it to end.
async fn run_again(app: &TestApp, w: &World, id: &str) -> Value {
    app.post(
        &w.admin,
        &format!("/v1/orgs/{}/translations/{id}/run", w.org),
        json!({}),
    )
    .await
    .expect(204);
    settle(app, w, id).await
}

/// `listRevisionPageMetaLinks`: a translated page's alternates are the same page (same id)
/// in the other languages a translation links its space with, those the caller may read
/// and that hold it; a page no translation has yet has none.
#[tokio::test]
async fn a_translated_page_s_alternates_are_its_other_languages() {
    let (app, _provider) = start(Kind::Libre).await;
    let w = world(&app).await;
    let fr = create(&app, &w, None).await;
    let fr = settle(&app, &w, fr["id"].as_str().unwrap()).await["result"]["space"]
        .as_str()
        .unwrap()
        .to_string();
    let de = app
        .post(
            &w.admin,
            &format!("/v1/orgs/{}/translations", w.org),
            json!({ "source": { "space": w.space, "language": "en" }, "language": "de" }),
        )
        .await
        .expect(201);
    let de = settle(&app, &w, de["id"].as_str().unwrap()).await["result"]["space"]
        .as_str()
        .unwrap()
        .to_string();
    let guide = pages(&app, &w.admin, &w.space).await[0].1.clone();
    // A page's meta links in the current revision of `space` (as the admin reads it).
    let meta_links = |who: &Persona, space: &str, page: &str| {
        let (app, admin) = (&app, &w.admin);
        let (who, space, page) = (who.clone(), space.to_string(), page.to_string());
        async move {
            let revision = app
                .get(admin, &format!("/v1/spaces/{space}"))
                .await
                .expect(200)["revision"]
                .as_str()
                .unwrap()
                .to_string();
            app.get(
                &who,
                &format!("/v1/spaces/{space}/revisions/{revision}/page/{page}/meta-links"),
            )
            .await
        }
    };
    let to = |space: &str| json!({ "kind": "page", "page": guide, "space": space });
    // From the source: both translations, in the order they were made.
    let links = meta_links(&w.admin, &w.space, &guide).await.expect(200);
    assert_eq!(links, json!({ "alternates": [to(&fr), to(&de)] }));
    // From a translation: the source and the other translation.
    let links = meta_links(&w.admin, &fr, &guide).await.expect(200);
    assert_eq!(links, json!({ "alternates": [to(&w.space), to(&de)] }));

    // A page added to the source since the runs is in no other language yet.
    let cr = open_cr(&app, &w.admin, &w.space).await;
    app.post(
        &w.admin,
        &format!("/v1/spaces/{}/change-requests/{cr}/content?compat=false", w.space),
        json!({ "changes": [{ "operation": "insert_page", "title": "Fresh", "document": { "markdown": "New.\n" } }] }),
    )
    .await
    .expect(200);
    merge(&app, &w.admin, &w.space, &cr).await;
    let fresh = pages(&app, &w.admin, &w.space)
        .await
        .into_iter()
        .find(|(title, _, _)| title == "Fresh")
        .unwrap()
        .1;
    let links = meta_links(&w.admin, &w.space, &fresh).await.expect(200);
    assert_eq!(links, json!({}));

    // A guest who reads the source alone sees no alternates.
    let guest = app.persona("guest").await;
    app.add_member(&w.admin, &w.org, &guest, Value::Null).await;
    app.post(
        &w.admin,
        &format!("/v1/spaces/{}/permissions", w.space),
        json!({ "role": "read", "users": [guest.id] }),
    )
    .await
    .expect(204);
    let links = meta_links(&guest, &w.space, &guide).await.expect(200);
    assert_eq!(links, json!({}));
    meta_links(&guest, &fr, &guide).await.expect_error(404);

    // A deleted translation space is no alternate.
    app.delete(&w.admin, &format!("/v1/spaces/{de}"))
        .await
        .expect(204);
    let links = meta_links(&w.admin, &w.space, &guide).await.expect(200);
    assert_eq!(links, json!({ "alternates": [to(&fr)] }));
}
