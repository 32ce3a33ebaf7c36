//! Writes interleaved with reads on two nodes of one storage, in a seeded random order:
//! grants given and taken, role changes, members removed and added back, tokens revoked from
//! outside, spaces deleted and restored, comments, edits merged, some of the writes abandoned
//! by their client right after being sent. After each write, every user's reads through the
//! node that served it answer exactly what a node without caches answers (a node never
//! misses its own writes, even abandoned ones), and reads through the other node do so once
//! the access cache's bound has passed.

use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use crate::harness::{Persona, TestApp};

/// Steps of the random sequence.
const STEPS: usize = 60;
const SPACES: usize = 3;

struct World {
    /// The two nodes that serve writes and reads.
    nodes: [TestApp; 2],
    /// A node without caches: what is true now.
    truth: TestApp,
    admin: Persona,
    users: Vec<Persona>,
    org: String,
    spaces: Vec<String>,
    /// The page of the first space that edits change.
    page: String,
    /// Tokens revoked so far.
    revoked: Vec<String>,
}

/// What a user's reads answer, compared field by field (nodes differ in their URLs).
async fn reads(app: &TestApp, w: &World, who: &Persona) -> Vec<Value> {
    let mut seen = Vec::new();
    let get =
        |path: String| async move { app.call(Method::GET, &path, Some(&who.token), None).await };
    let res = get(format!("/v1/orgs/{}", w.org)).await;
    seen.push(json!([res.status, res.body["title"]]));
    for space in &w.spaces {
        let res = get(format!("/v1/spaces/{space}")).await;
        seen.push(json!([
            res.status,
            res.body["title"],
            res.body["comments"],
            res.body["revision"],
            res.body["deletedAt"].is_string(),
            res.body["permissions"],
        ]));
    }
    let res = get(format!("/v1/spaces/{}/comments?limit=100", w.spaces[0])).await;
    seen.push(json!([
        res.status,
        res.body["items"].as_array().map(Vec::len)
    ]));
    let res = get(format!(
        "/v1/spaces/{}/content/page/{}?format=markdown",
        w.spaces[0], w.page
    ))
    .await;
    seen.push(json!([res.status, res.body["markdown"]]));
    let res = get("/v1/orgs".into()).await;
    seen.push(json!([res.status, res.body["count"]]));
    seen
}

/// Sends a write and leaves at once, without reading the answer: the server may drop the
/// request at any point, before or after its commit.
async fn abandon(app: &TestApp, who: &Persona, method: &str, path: &str, body: &Value) {
    let addr = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        who.token,
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    drop(stream);
    // Let the server run or drop what it was given.
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
}

/// The writes the sequence picks from: method, path and body.
fn write(w: &World, rng: &mut u64) -> (&'static str, String, Value) {
    let mut pick = |n: usize| {
        // xorshift: small, seeded, good enough to vary the order.
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        (*rng % n as u64) as usize
    };
    let user = &w.users[pick(w.users.len())];
    let space = &w.spaces[pick(w.spaces.len())];
    match pick(9) {
        0 => {
            let role = ["read", "comment", "edit"][pick(3)];
            (
                "POST",
                format!("/v1/spaces/{space}/permissions"),
                json!({ "role": role, "users": [user.id] }),
            )
        }
        1 => (
            "DELETE",
            format!("/v1/spaces/{space}/permissions/users/{}", user.id),
            Value::Null,
        ),
        2 => {
            let role = [Value::Null, json!("read"), json!("edit")][pick(3)].clone();
            (
                "PATCH",
                format!("/v1/orgs/{}/members/{}", w.org, user.id),
                json!({ "role": role }),
            )
        }
        3 => (
            "DELETE",
            format!("/v1/orgs/{}/members/{}", w.org, user.id),
            Value::Null,
        ),
        4 => (
            "POST",
            format!("/v1/orgs/{}/invites", w.org),
            json!({ "emails": [{ "email": user.email, "role": Value::Null }] }),
        ),
        5 => ("DELETE", format!("/v1/spaces/{space}"), Value::Null),
        6 => ("POST", format!("/v1/spaces/{space}/restore"), json!({})),
        7 => (
            "POST",
            format!("/v1/spaces/{}/comments", w.spaces[0]),
            json!({ "body": { "markdown": format!("Comment {}.", pick(1000)) } }),
        ),
        _ => (
            "PATCH",
            format!("/v1/spaces/{space}"),
            json!({ "title": format!("Title {}", pick(1000)) }),
        ),
    }
}

/// Every user's reads through `node` answer what the truth does.
async fn agrees(node: &TestApp, w: &World) -> Result<(), String> {
    for who in w.users.iter().chain([&w.admin]) {
        let got = reads(node, w, who).await;
        let want = reads(&w.truth, w, who).await;
        if got != want {
            return Err(format!("{}: {got:?}\n  truth: {want:?}", who.email));
        }
    }
    for token in &w.revoked {
        let got = node
            .call(Method::GET, "/v1/user", Some(token), None)
            .await
            .status;
        if got != 401 {
            return Err(format!("a revoked token still reads: {got}"));
        }
    }
    Ok(())
}

async fn world() -> World {
    let a = TestApp::start().await;
    let b = a.another_node().await;
    let truth = a.another_node_with(|c| c.access_cache_ms = 0).await;
    let admin = a.persona("admin").await;
    let org = a.org(&admin, "Acme").await;
    let mut users = Vec::new();
    for name in ["ann", "ben", "cid"] {
        let p = a.persona(name).await;
        a.add_member(&admin, &org, &p, Value::Null).await;
        users.push(p);
    }
    let mut spaces = Vec::new();
    for i in 0..SPACES {
        spaces.push(a.space(&admin, &org, &format!("Space {i}"), None).await);
    }
    let cr = a
        .open_change_request(&admin, &spaces[0], "First page")
        .await;
    let made = a
        .edit_change_request(
            &admin,
            &spaces[0],
            &cr,
            json!([{ "operation": "insert_page", "title": "Page", "document": { "markdown": "Version 0." } }]),
        )
        .await;
    let page = made["changes"][0]["page"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    a.merge_change_request(&admin, &spaces[0], &cr).await;
    World {
        nodes: [a, b],
        truth,
        admin,
        users,
        org,
        spaces,
        page,
        revoked: Vec::new(),
    }
}

#[tokio::test]
async fn interleaved_writes_never_show_a_reader_what_is_no_longer_true() {
    let mut w = world().await;
    let ttl = w.nodes[0].config.access_cache_ms as i64;
    let mut rng: u64 = std::env::var("QUIRE_INTERLEAVING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_abcd);
    // Warm both nodes' caches with every reader's view.
    for node in &w.nodes {
        for who in w.users.iter().chain([&w.admin]) {
            reads(node, &w, who).await;
        }
    }
    for step in 0..STEPS {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let writer = (rng >> 33) as usize % 2;
        let kind = (rng >> 40) % 10;
        let what;
        if kind == 0 {
            // A token revoked from outside (`quire admin`), and a new one made: seen by every
            // node within the cache's bound.
            let i = (rng >> 20) as usize % w.users.len();
            let who = w.users[i].clone();
            quire_server::admin::revoke_token(&w.nodes[0].config, Some(&who.token), None)
                .await
                .unwrap();
            w.revoked.push(who.token.clone());
            w.users[i].token =
                quire_server::admin::create_token(&w.nodes[0].config, &who.email, None)
                    .await
                    .unwrap();
            what = format!("token of {} revoked outside", who.email);
        } else if kind == 1 {
            // An edit merged into the first space.
            let node = &w.nodes[writer];
            let opened = node
                .post(
                    &w.admin,
                    &format!("/v1/spaces/{}/change-requests", w.spaces[0]),
                    json!({ "subject": "Edit" }),
                )
                .await;
            // The space may be deleted at this point of the sequence.
            let cr = opened.body["id"].as_str().unwrap_or("none").to_string();
            let res = node
                .post(
                    &w.admin,
                    &format!("/v1/spaces/{}/change-requests/{cr}/content", w.spaces[0]),
                    json!({ "changes": [{ "operation": "update_page", "page": w.page, "document": { "markdown": format!("Version {step}.") } }] }),
                )
                .await;
            if res.status == 200 {
                node.merge_change_request(&w.admin, &w.spaces[0], &cr).await;
            }
            what = format!("edit merged through node {writer} ({})", res.status);
        } else {
            let (method, path, body) = write(&w, &mut rng);
            let node = &w.nodes[writer];
            if kind == 2 {
                abandon(node, &w.admin, method, &path, &body).await;
                what = format!("{method} {path} abandoned at node {writer}");
            } else {
                let m = Method::from_bytes(method.as_bytes()).unwrap();
                let body = (!body.is_null()).then_some(body);
                let res = node.call(m, &path, Some(&w.admin.token), body).await;
                assert!(
                    res.status < 500,
                    "step {step}: {method} {path}: {}",
                    res.body
                );
                what = format!("{method} {path} at node {writer}: {}", res.status);
            }
        }
        // The node that served the write sees it at once (an outside revocation is no node's).
        if kind != 0 {
            if let Err(e) = agrees(&w.nodes[writer], &w).await {
                panic!("step {step}, after {what}: the writing node missed its write\n{e}");
            }
        }
        // The other node (and both, for an outside change) within the cache's bound.
        for (i, node) in w.nodes.iter().enumerate() {
            if i == writer && kind != 0 {
                continue;
            }
            if agrees(node, &w).await.is_err() {
                node.clock.advance_ms(ttl + 1);
                if let Err(e) = agrees(node, &w).await {
                    panic!(
                        "step {step}, after {what}: node {i} is stale past the cache's bound\n{e}"
                    );
                }
            }
        }
    }
}
