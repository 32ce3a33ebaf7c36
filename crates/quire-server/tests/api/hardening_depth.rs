//! Hardening: content nested thousands of levels deep, posted by an ordinary member, is
//! refused with 400 and the official error body, and the server keeps answering.
//!
//! Without the engine's nesting bound each of these requests overflowed the stack of the
//! worker thread and aborted the whole server (here, the test process).

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

/// The attack payloads: markdown nested a thousand or more levels deep (within the test
/// server's 64 KiB body limit; without the bound, a few hundred levels were enough).
fn markdown_payloads() -> Vec<(&'static str, String)> {
    vec![
        ("quotes", "> ".repeat(4000) + "deep\n"),
        ("lists", "- ".repeat(4000) + "deep\n"),
        (
            "hints",
            "{% hint style=\"info\" %}\n".repeat(1000) + "deep\n" + &"{% endhint %}\n".repeat(1000),
        ),
        (
            "details",
            "<details>\n<summary>s</summary>\n".repeat(1000)
                + "deep\n"
                + &"</details>\n".repeat(1000),
        ),
        (
            "links and images",
            "[![".repeat(3000) + "deep" + &"](u)](u)".repeat(3000) + "\n",
        ),
    ]
}

/// A JSON document of quotes nested `levels` deep, built without recursion.
fn deep_document(levels: usize) -> Value {
    let open = r#"{"object":"block","type":"blockquote","data":{},"nodes":["#;
    let leaf = r#"{"object":"block","type":"paragraph","data":{},"nodes":[{"object":"text","leaves":[{"object":"leaf","text":"deep","marks":[]}]}]}"#;
    let text = format!(
        r#"{{"object":"document","data":{{}},"nodes":[{}{leaf}{}]}}"#,
        open.repeat(levels),
        "]}".repeat(levels)
    );
    serde_json::from_str(&text).expect("within the JSON parser's limit")
}

/// The deepest quote document the JSON parser accepts: deeper than the engine allows.
fn deepest_document() -> Value {
    deep_document(55)
}

struct World {
    space: String,
    cr: String,
    alice: Persona,
    bob: Persona,
}

async fn world(app: &TestApp) -> World {
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let cr = app
        .post(
            &bob,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({}),
        )
        .await
        .expect(201);
    let cr = cr["id"].as_str().unwrap().to_string();
    World {
        space,
        cr,
        alice,
        bob,
    }
}

/// The server still answers, and still accepts ordinary content.
async fn still_answers(app: &TestApp, w: &World) {
    app.get(&w.alice, "/v1/user").await.expect(200);
    app.post(
        &w.bob,
        &format!("/v1/spaces/{}/comments", w.space),
        json!({ "body": { "markdown": "> Still *here*." } }),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn deep_comment_bodies_are_refused() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let base = format!("/v1/spaces/{}/comments", w.space);
    let cr_base = format!("/v1/spaces/{}/change-requests/{}/comments", w.space, w.cr);
    let ok = app
        .post(&w.bob, &base, json!({ "body": { "markdown": "Fine." } }))
        .await
        .expect(200);
    let id = ok["id"].as_str().unwrap().to_string();
    let cr_ok = app
        .post(&w.bob, &cr_base, json!({ "body": { "markdown": "Fine." } }))
        .await
        .expect(200);
    let cr_id = cr_ok["id"].as_str().unwrap().to_string();
    let reply = app
        .post(
            &w.bob,
            &format!("{base}/{id}/replies"),
            json!({ "body": { "markdown": "Fine." } }),
        )
        .await
        .expect(200);
    let reply_id = reply["id"].as_str().unwrap().to_string();
    let mut bodies: Vec<(String, Value)> = markdown_payloads()
        .into_iter()
        .map(|(name, md)| (name.to_string(), json!({ "markdown": md })))
        .collect();
    bodies.push(("document".into(), json!({ "document": deepest_document() })));
    for (name, body) in bodies {
        for (method, path) in [
            ("post", base.clone()),
            ("put", format!("{base}/{id}")),
            ("post", format!("{base}/{id}/replies")),
            ("put", format!("{base}/{id}/replies/{reply_id}")),
            ("post", cr_base.clone()),
            ("put", format!("{cr_base}/{cr_id}")),
            ("post", format!("{cr_base}/{cr_id}/replies")),
        ] {
            let req = json!({ "body": body });
            let res = match method {
                "post" => app.post(&w.bob, &path, req).await,
                _ => app.put(&w.bob, &path, req).await,
            };
            let message = res.expect_error(400);
            assert!(
                message.contains("`body`") && message.contains("nested too deeply"),
                "{name} {method} {path}: {message}"
            );
        }
        still_answers(&app, &w).await;
    }
}

#[tokio::test]
async fn deep_page_content_is_refused() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let path = format!(
        "/v1/spaces/{}/change-requests/{}/content?compat=false",
        w.space, w.cr
    );
    let res = app
        .post(
            &w.bob,
            &path,
            json!({ "changes": [{ "operation": "insert_page", "ref": "p", "title": "Page", "document": { "markdown": "Fine." } }] }),
        )
        .await
        .expect(200);
    let page = res["changes"][0]["page"]["id"]
        .as_str()
        .expect("page id")
        .to_string();
    let mut documents: Vec<(String, Value, &str)> = markdown_payloads()
        .into_iter()
        .map(|(name, md)| {
            (
                name.to_string(),
                json!({ "markdown": md }),
                "document.markdown",
            )
        })
        .collect();
    documents.push((
        "document".into(),
        json!({ "document": deepest_document() }),
        "document",
    ));
    for (name, document, field) in documents {
        for change in [
            json!({ "operation": "insert_page", "title": "Deep", "document": document }),
            json!({ "operation": "update_page", "page": page, "document": document }),
        ] {
            // The deep change comes second, so the error must name its index.
            let res = app
                .post(
                    &w.bob,
                    &path,
                    json!({ "changes": [
                        { "operation": "insert_page", "title": "Other", "document": { "markdown": "x" } },
                        change,
                    ] }),
                )
                .await;
            let message = res.expect_error(400);
            assert!(
                message.contains(&format!("`changes[1].{field}`"))
                    && message.contains("nested too deeply"),
                "{name}: {message}"
            );
        }
        still_answers(&app, &w).await;
    }
    // Nothing of the refused batches was applied.
    let pages = app
        .get(
            &w.bob,
            &format!(
                "/v1/spaces/{}/change-requests/{}/content/pages",
                w.space, w.cr
            ),
        )
        .await
        .expect(200);
    assert_eq!(pages["pages"].as_array().map(Vec::len), Some(1), "{pages}");
}

#[tokio::test]
async fn content_at_the_bound_is_accepted_and_read_back() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    // Quotes 47 deep hold a paragraph at level 48: the deepest content the engine takes.
    let md = "> ".repeat(quire_content::MAX_DEPTH - 1) + "deep\n";
    let path = format!(
        "/v1/spaces/{}/change-requests/{}/content?compat=false",
        w.space, w.cr
    );
    let res = app
        .post(
            &w.bob,
            &path,
            json!({ "changes": [{ "operation": "insert_page", "title": "Deep", "document": { "markdown": md } }] }),
        )
        .await
        .expect(200);
    let page = res["changes"][0]["page"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let doc = app
        .get(
            &w.bob,
            &format!(
                "/v1/spaces/{}/change-requests/{}/content/page/{page}?format=document",
                w.space, w.cr
            ),
        )
        .await
        .expect(200);
    assert_eq!(doc["document"]["nodes"][0]["type"], "blockquote");
    let comment = app
        .post(
            &w.bob,
            &format!("/v1/spaces/{}/comments", w.space),
            json!({ "body": { "document": deep_document(quire_content::MAX_DEPTH - 1) } }),
        )
        .await
        .expect(200);
    assert!(comment["body"]["markdown"]
        .as_str()
        .is_some_and(|m| m.contains("deep")));
}

/// A long anchored string repeated by aliases in a page's frontmatter: a few hundred values
/// but tens of megabytes once expanded (megabytes of pages made gigabytes before the
/// expansion was counted in bytes). Refused with 400; nothing of the batch is applied.
#[tokio::test]
async fn frontmatter_aliases_that_expand_past_the_bound_are_refused() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let path = format!(
        "/v1/spaces/{}/change-requests/{}/content?compat=false",
        w.space, w.cr
    );
    let long = "x".repeat(32 * 1024);
    let bomb = format!(
        "---\ndescription: &s {long}\nlist: [{}]\n---\n\n# Bomb\n\nBody.\n",
        ["*s"; 800].join(", ")
    );
    let message = app
        .post(
            &w.bob,
            &path,
            json!({ "changes": [{ "operation": "insert_page", "title": "Bomb", "document": { "markdown": bomb } }] }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("aliases"), "{message}");
    still_answers(&app, &w).await;
    // An anchor used as intended is read as before.
    let fine = "---\ndescription: &d Shared words\nicon: *d\n---\n\n# Fine\n\nBody.\n";
    app.post(
        &w.bob,
        &path,
        json!({ "changes": [{ "operation": "insert_page", "title": "Fine", "document": { "markdown": fine } }] }),
    )
    .await
    .expect(200);
}
