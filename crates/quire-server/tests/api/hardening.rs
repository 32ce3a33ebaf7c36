//! Hardening through HTTP: what an ordinary account must not be able to do to the server or
//! to other tenants (lost writes, amplification, transfers out, member listings, bad text).

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

fn titles(pages: &Value, out: &mut Vec<String>) {
    for p in pages.as_array().into_iter().flatten() {
        out.push(p["title"].as_str().unwrap_or_default().to_string());
        titles(&p["pages"], out);
    }
}

/// A batch racing a merge of the same change request either lands before the merge takes it
/// (and is merged) or is refused with 409: an acknowledged batch is never stranded.
#[tokio::test]
async fn batches_racing_a_merge_are_merged_or_refused() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let mut acknowledged = Vec::new();
    for round in 0..4 {
        let cr = app
            .post(
                &alice,
                &format!("/v1/spaces/{space}/change-requests"),
                json!({ "subject": format!("round {round}") }),
            )
            .await
            .expect(201)["id"]
            .as_str()
            .unwrap()
            .to_string();
        let content = format!("/v1/spaces/{space}/change-requests/{cr}/content");
        let merge = format!("/v1/spaces/{space}/change-requests/{cr}/merge");
        // One batch lands first, so that the merge has something of its own to take.
        let first = format!("R{round} P0");
        let body = json!({ "changes": [{ "operation": "insert_page", "title": first, "document": { "markdown": "Body 0" } }] });
        app.post(&alice, &content, body).await.expect(200);
        acknowledged.push(first);
        let mut tasks = Vec::new();
        for i in 1..12 {
            let title = format!("R{round} P{i}");
            let body = json!({ "changes": [{ "operation": "insert_page", "title": title, "document": { "markdown": format!("Body {i}") } }] });
            let task = tokio::spawn(send(
                app.base.clone(),
                alice.token.clone(),
                reqwest::Method::POST,
                content.clone(),
                body,
            ));
            tasks.push((Some(title), task));
            if i == 4 {
                let task = tokio::spawn(send(
                    app.base.clone(),
                    alice.token.clone(),
                    reqwest::Method::POST,
                    merge.clone(),
                    json!({}),
                ));
                tasks.push((None, task));
            }
        }
        for (title, task) in tasks {
            let status = task.await.unwrap();
            match title {
                None => assert_eq!(status, 200, "the merge succeeds"),
                Some(title) => {
                    assert!(
                        status == 200 || status == 409,
                        "a batch is merged or refused, got {status}"
                    );
                    if status == 200 {
                        acknowledged.push(title);
                    }
                }
            }
        }
    }
    let main = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let mut present = Vec::new();
    titles(&main["pages"], &mut present);
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|t| !present.contains(t))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged batches missing from the merged content: {lost:?}"
    );
}

async fn comment(app: &TestApp, who: &Persona, space: &str) -> String {
    app.post(
        who,
        &format!("/v1/spaces/{space}/comments"),
        json!({ "body": { "markdown": "Looks good" } }),
    )
    .await
    .expect(200)["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Reactions are bounded per request and per user and comment: one writer cannot grow the
/// list everyone reads.
#[tokio::test]
async fn reactions_are_bounded() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let id = comment(&app, &alice, &space).await;
    let path = format!("/v1/spaces/{space}/comments/{id}");
    let many: Vec<String> = (0..21).map(|i| format!("e{i}")).collect();
    let message = app
        .put(&alice, &path, json!({ "addedReactions": many }))
        .await
        .expect_error(400);
    assert!(message.contains("addedReactions"), "{message}");
    let twenty: Vec<String> = (0..20).map(|i| format!("e{i}")).collect();
    app.put(&alice, &path, json!({ "addedReactions": twenty }))
        .await
        .expect(200);
    // One more on top of twenty is refused, and nothing of that request is kept.
    app.put(&alice, &path, json!({ "addedReactions": ["🎉"] }))
        .await
        .expect_error(400);
    let c = app.get(&alice, &path).await.expect(200);
    let total: usize = c["reactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap_or(0) as usize)
        .sum();
    assert_eq!(total, 20, "{c}");
    // Removing one makes room again.
    app.put(
        &alice,
        &path,
        json!({ "removedReactions": ["e0"], "addedReactions": ["🎉"] }),
    )
    .await
    .expect(200);
    let message = app
        .put(&alice, &path, json!({ "addedReactions": ["a b"] }))
        .await
        .expect_error(400);
    assert!(message.contains("addedReactions[0]"), "{message}");
}

/// Comment targets are short identifiers, not megabytes of text.
#[tokio::test]
async fn comment_targets_are_bounded() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let path = format!("/v1/spaces/{space}/comments");
    let big = "n".repeat(60 * 1024);
    let message = app
        .post(
            &alice,
            &path,
            json!({ "body": { "markdown": "Hi" }, "node": big }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("`node`"), "{message}");
    app.post(
        &alice,
        &path,
        json!({ "body": { "markdown": "Hi" }, "node": "<script>" }),
    )
    .await
    .expect_error(400);
    app.post(
        &alice,
        &path,
        json!({ "body": { "markdown": "Hi" }, "node": "node-1_a" }),
    )
    .await
    .expect(200);
}

/// Giving a space or a collection to another organization needs admin of the organization
/// it leaves; a space admin who only reads in the organization cannot take it away.
#[tokio::test]
async fn transfers_out_need_organization_admin() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let mallory = app.persona("mallory").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &mallory, json!("read")).await;
    let theirs = app.org(&mallory, "Mallory Inc").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let collection = app.collection(&alice, &org, "Docs", None).await;
    for (kind, id) in [("spaces", &space), ("collections", &collection)] {
        app.post(
            &alice,
            &format!("/v1/{kind}/{id}/permissions"),
            json!({ "role": "admin", "users": [mallory.id] }),
        )
        .await
        .expect(204);
        let message = app
            .post(
                &mallory,
                &format!("/v1/{kind}/{id}/transfer"),
                json!({ "organization": theirs }),
            )
            .await
            .expect_error(403);
        assert!(message.contains("organization"), "{message}");
    }
    let s = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert_eq!(s["organization"], json!(org), "the space stayed: {s}");
    // An admin of both organizations may.
    let second = app.org(&alice, "Acme Two").await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/transfer"),
        json!({ "organization": second }),
    )
    .await
    .expect(200);
}

/// Guests see what they were granted, never the organization's people: every listing of who
/// has access answers them 403, as `GET ORG/members` does.
#[tokio::test]
async fn guests_cannot_list_people() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let guest = app.persona("guest").await;
    let reader = app.persona("reader").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &guest, json!(null)).await;
    app.add_member(&alice, &org, &reader, json!("read")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let collection = app.collection(&alice, &org, "Docs", None).await;
    for (kind, id) in [("spaces", &space), ("collections", &collection)] {
        app.post(
            &alice,
            &format!("/v1/{kind}/{id}/permissions"),
            json!({ "role": "comment", "users": [guest.id] }),
        )
        .await
        .expect(204);
        for list in ["aggregate", "users", "teams"] {
            let path = format!("/v1/{kind}/{id}/permissions/{list}");
            app.get(&guest, &path).await.expect_error(403);
            let seen = app.get(&reader, &path).await.expect(200);
            assert!(seen["items"].is_array(), "{seen}");
        }
    }
    app.get(&guest, &format!("/v1/orgs/{org}/members"))
        .await
        .expect_error(403);
}

/// NUL characters are refused wherever text enters: JSON bodies, paths and queries.
#[tokio::test]
async fn nul_characters_are_refused() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let message = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/spaces"),
            json!({ "title": "bad\u{0}title" }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("`title`"), "{message}");
    let space = app.space(&alice, &org, "Guide", None).await;
    let message = app
        .patch(
            &alice,
            &format!("/v1/spaces/{space}"),
            json!({ "title": "x\u{0}" }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("`title`"), "{message}");
    // An escaped backslash before `u0000` is ordinary text.
    app.patch(
        &alice,
        &format!("/v1/spaces/{space}"),
        json!({ "title": "a\\u0000b" }),
    )
    .await
    .expect(200);
    app.get(&alice, "/v1/spaces/ab%00cd")
        .await
        .expect_error(400);
    app.get(&alice, &format!("/v1/orgs/{org}/spaces?limit=1%00"))
        .await
        .expect_error(400);
}

/// A path parameter that is not UTF-8 once percent-decoded is refused with a 400 naming it,
/// on every kind of access check and scoped extractor (it was an internal error).
#[tokio::test]
async fn a_path_parameter_that_is_not_utf8_is_a_400_naming_it() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    for (path, name) in [
        ("/v1/spaces/%FF".to_string(), "spaceId"),
        ("/v1/spaces/ab%C3/content".to_string(), "spaceId"),
        ("/v1/orgs/%FE%FF/members".to_string(), "organizationId"),
        (format!("/v1/spaces/{space}/content/page/%FF"), "pageId"),
        (format!("/v1/spaces/{space}/comments/%FF"), "commentId"),
        (
            format!("/v1/spaces/{space}/change-requests/%FF"),
            "changeRequestId",
        ),
    ] {
        let message = app.get(&alice, &path).await.expect_error(400);
        assert!(message.contains(&format!("`{name}`")), "{path}: {message}");
    }
    // Without a token the answer is the same: the path is read before who asks.
    let message = app
        .call(reqwest::Method::GET, "/v1/spaces/%FF", None, None)
        .await
        .expect_error(400);
    assert!(message.contains("`spaceId`"), "{message}");
}

/// An organization can claim only the e-mail domain of its creator's own address, and
/// people who share a domain see no permissions on organizations they are not in.
#[tokio::test]
async fn email_domains_need_an_address_in_them() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let message = app
        .post(
            &alice,
            "/v1/orgs",
            json!({ "title": "Acme", "emailDomains": ["gmail.com"] }),
        )
        .await
        .expect_error(403);
    assert!(message.contains("emailDomains[0]"), "{message}");
    let org = app
        .post(
            &alice,
            "/v1/orgs",
            json!({ "title": "Acme", "emailDomains": ["example.com"] }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.patch(
        &alice,
        &format!("/v1/orgs/{org}"),
        json!({ "emailDomains": ["example.com", "gmail.com"] }),
    )
    .await
    .expect_error(403);
    // Keeping a domain already claimed is fine.
    app.patch(
        &alice,
        &format!("/v1/orgs/{org}"),
        json!({ "emailDomains": ["example.com"] }),
    )
    .await
    .expect(200);
    let found = app
        .get(&bob, "/v1/email-domains/example.com/orgs")
        .await
        .expect(200);
    let o = &found["organizations"][0];
    assert_eq!(o["id"], json!(org), "{found}");
    for (name, value) in o["permissions"].as_object().unwrap() {
        assert_eq!(value, &json!(false), "{name} for an outsider: {o}");
    }
}

/// Sends raw bytes on a new connection and returns everything the server answers until it
/// closes the connection (or `wait` passes).
async fn raw_exchange(base: &str, bytes: &[u8], wait: std::time::Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn json_error_of(answer: &str) -> Value {
    let (_, body) = answer.split_once("\r\n\r\n").expect("a full answer");
    serde_json::from_str(body).unwrap_or_else(|_| panic!("non-JSON body: {answer}"))
}

/// Requests hyper refuses before any handler runs still get the official error body.
#[tokio::test]
async fn oversized_heads_get_json_errors() {
    let app = TestApp::start().await;
    let wait = std::time::Duration::from_secs(5);
    let long_uri = format!(
        "GET /v1/{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(70 * 1024)
    );
    let answer = raw_exchange(&app.base, long_uri.as_bytes(), wait).await;
    let status: u16 = answer[9..12].parse().unwrap();
    assert!(status == 414 || status == 431, "{answer:.200}");
    assert_eq!(json_error_of(&answer)["error"]["code"], json!(status));
    let big_header = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "b".repeat(80 * 1024)
    );
    let answer = raw_exchange(&app.base, big_header.as_bytes(), wait).await;
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer:.200}");
    assert_eq!(json_error_of(&answer)["error"]["code"], json!(431));
    let garbage = raw_exchange(&app.base, b"NOT HTTP AT ALL\r\n\r\n", wait).await;
    assert!(garbage.starts_with("HTTP/1.1 400 "), "{garbage:.200}");
    assert_eq!(json_error_of(&garbage)["error"]["code"], json!(400));
}

/// A client that never finishes its headers is cut off after the header deadline, and one
/// that never finishes its body gets a 408.
#[tokio::test]
async fn slow_clients_are_cut_off() {
    let app = TestApp::start_with(|c| {
        c.header_timeout_ms = 300;
        c.body_timeout_ms = 300;
    })
    .await;
    let started = std::time::Instant::now();
    let answer = raw_exchange(
        &app.base,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ",
        std::time::Duration::from_secs(10),
    )
    .await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the connection was held open: {answer}"
    );
    let alice = app.persona("alice").await;
    let request = format!(
        "POST /v1/orgs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"title\":",
        alice.token
    );
    let answer = raw_exchange(
        &app.base,
        request.as_bytes(),
        std::time::Duration::from_secs(10),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert_eq!(json_error_of(&answer)["error"]["code"], json!(408));
}

/// Past the connection cap, new clients wait instead of being served; they are served as soon
/// as a connection closes.
#[tokio::test]
async fn connections_are_capped() {
    let app = TestApp::start_with(|c| c.max_connections = 2).await;
    let addr = app.base.trim_start_matches("http://").to_string();
    let idle1 = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let idle2 = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let health = format!("{}/healthz", app.base);
    let client = reqwest::Client::new();
    let waited = client
        .get(&health)
        .timeout(std::time::Duration::from_millis(500))
        .send()
        .await;
    assert!(
        waited.is_err(),
        "a third connection was served past the cap"
    );
    drop(idle1);
    let served = client
        .get(&health)
        .timeout(std::time::Duration::from_secs(5))
        .send()
        .await
        .expect("served once a connection closed");
    assert_eq!(served.status(), 200);
    drop(idle2);
}

async fn send(
    base: String,
    token: String,
    method: reqwest::Method,
    path: String,
    body: Value,
) -> u16 {
    reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("request sent")
        .status()
        .as_u16()
}

/// A `PATCH` or a transfer racing a `DELETE` of the same space never brings the deleted
/// space back: each writes only its own columns, and only while the space is live.
#[tokio::test]
async fn writes_racing_delete_keep_the_space_deleted() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let other = app.org(&alice, "Elsewhere").await;
    for round in 0..12 {
        let space = app.space(&alice, &org, &format!("S{round}"), None).await;
        let path = format!("/v1/spaces/{space}");
        let (method, target, body) = if round % 2 == 0 {
            (
                reqwest::Method::PATCH,
                path.clone(),
                json!({ "title": format!("Renamed {round}") }),
            )
        } else {
            (
                reqwest::Method::POST,
                format!("{path}/transfer"),
                json!({ "organization": other }),
            )
        };
        let write = tokio::spawn(send(
            app.base.clone(),
            alice.token.clone(),
            method,
            target,
            body,
        ));
        let delete = tokio::spawn(send(
            app.base.clone(),
            alice.token.clone(),
            reqwest::Method::DELETE,
            path.clone(),
            json!({}),
        ));
        let written = write.await.unwrap();
        assert_eq!(delete.await.unwrap(), 204);
        assert!(
            written == 200 || written == 409,
            "round {round}: the write answered {written}"
        );
        let s = app.get(&alice, &path).await.expect(200);
        assert!(
            s["deletedAt"].is_string(),
            "round {round}: the deleted space came back: {s}"
        );
    }
}

/// A comment body and a page document each have a size bound, checked before any work is
/// done on them.
#[tokio::test]
async fn bodies_and_documents_are_bounded() {
    let app = TestApp::start_with(|c| c.max_body_bytes = 8 * 1024 * 1024).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let long = "word ".repeat(14 * 1024);
    let message = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/comments"),
            json!({ "body": { "markdown": long } }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("`body`"), "{message}");
    // Comment operations take bodies of at most 1 MiB: larger ones are not even read.
    let huge = "word ".repeat(300 * 1024);
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/comments"),
        json!({ "body": { "markdown": huge } }),
    )
    .await
    .expect_error(413);
    let cr = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "big" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let page = "Lorem ipsum dolor sit amet.\n\n".repeat(80 * 1024);
    let message = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
            json!({ "changes": [
                { "operation": "insert_page", "title": "Small", "document": { "markdown": "ok" } },
                { "operation": "insert_page", "title": "Huge", "document": { "markdown": page } }
            ] }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("changes[1].document"), "{message}");
    // Documents under the page bound can still add up past the batch bound.
    let big = "Lorem ipsum dolor sit amet.\n\n".repeat(50 * 1024);
    let three: Vec<Value> = (0..3)
        .map(|i| json!({ "operation": "insert_page", "title": format!("Big {i}"), "document": { "markdown": big } }))
        .collect();
    let message = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
            json!({ "changes": three }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("`changes`"), "{message}");
    let pages = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content/pages"),
        )
        .await
        .expect(200);
    assert_eq!(pages["pages"], json!([]), "nothing of the batch landed");
}
