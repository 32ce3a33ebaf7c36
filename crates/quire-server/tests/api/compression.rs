//! Compressed answers (`quire_server::encoding`): reads of text are sent gzip-compressed to a
//! client that accepts it, whether made by their handler, kept, or served from a thread's
//! copy, and decode to exactly the plain answer; small answers and writes are sent as they
//! are. (Site pages and their weak tags: `site_pages.rs`.)

use std::io::Read;

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

/// What a client that accepts gzip sends (Node's `fetch`, as the official client uses it).
const NODE: &str = "gzip, deflate";

/// A read as sent: status, headers and the bytes on the wire.
async fn read(
    app: &TestApp,
    who: &Persona,
    path: &str,
    accept: Option<&str>,
) -> (HeaderMap, Vec<u8>) {
    let mut req = reqwest::Client::new()
        .get(format!("{}{path}", app.base))
        .bearer_auth(&who.token);
    if let Some(accept) = accept {
        req = req.header("accept-encoding", accept);
    }
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), 200, "{path}");
    let headers = res.headers().clone();
    (headers, res.bytes().await.unwrap().to_vec())
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("a gzip stream");
    out
}

fn varies(headers: &HeaderMap) -> bool {
    headers.get_all("vary").iter().any(|v| {
        v.to_str()
            .unwrap()
            .to_ascii_lowercase()
            .contains("accept-encoding")
    })
}

/// A space of five pages, with change requests and comments to list; its reads (first)
/// and the organization's spaces.
async fn world(app: &TestApp) -> (Persona, Vec<String>, String) {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Docs", None).await;
    let cr = app.open_change_request(&admin, &space, "Start").await;
    let text = "Words that a reader of the guide reads, again and again. ".repeat(20);
    let pages: Vec<Value> = (0..5)
        .map(|i| {
            json!({ "operation": "insert_page", "title": format!("Page {i}"),
                    "document": { "markdown": text } })
        })
        .collect();
    app.edit_change_request(&admin, &space, &cr, json!(pages))
        .await;
    app.merge_change_request(&admin, &space, &cr).await;
    for i in 0..3 {
        app.space(&admin, &org, &format!("More {i}"), None).await;
    }
    for i in 0..6 {
        app.open_change_request(&admin, &space, &format!("Draft {i}"))
            .await;
        app.post(
            &admin,
            &format!("/v1/spaces/{space}/comments"),
            json!({ "body": { "markdown": format!("Comment {i}.") } }),
        )
        .await
        .expect(200);
    }
    let page = app
        .get(&admin, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200)["pages"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let s = format!("/v1/spaces/{space}");
    let reads = vec![
        format!("{s}/content"),
        format!("{s}/content/pages"),
        format!("{s}/content/page/{page}?format=document"),
        format!("{s}/change-requests"),
        format!("{s}/comments"),
    ];
    (admin, reads, format!("/v1/orgs/{org}/spaces"))
}

#[tokio::test]
async fn reads_are_sent_gzipped_to_clients_that_accept_it_however_they_are_made() {
    let app = TestApp::start().await;
    let (admin, mut reads, spaces) = world(&app).await;
    reads.push(spaces);
    for path in &reads {
        let (plain_headers, plain) = read(&app, &admin, path, None).await;
        assert!(
            plain.len() as u64 >= quire_server::encoding::MIN_BYTES,
            "{path} is large enough to compress ({} bytes)",
            plain.len()
        );
        assert!(!plain_headers.contains_key("content-encoding"), "{path}");
        assert!(varies(&plain_headers), "{path}: Vary names Accept-Encoding");
        let plain: Value = serde_json::from_slice(&plain).unwrap();
        // Made from the database, then from the caches, then compressed once for all
        // (`encoding::Recent`, for large answers): each the plain answer once decoded.
        for round in 0..4 {
            let (headers, wire) = read(&app, &admin, path, Some(NODE)).await;
            assert_eq!(headers["content-encoding"], "gzip", "{path}, round {round}");
            assert!(varies(&headers), "{path}, round {round}");
            let got: Value = serde_json::from_slice(&gunzip(&wire)).unwrap();
            assert_eq!(got, plain, "{path}, round {round}");
            assert!(wire.len() < serde_json::to_vec(&plain).unwrap().len());
        }
        // A client that refuses gzip gets the plain answer.
        for refused in ["gzip;q=0", "identity", "br"] {
            let (headers, wire) = read(&app, &admin, path, Some(refused)).await;
            assert!(
                !headers.contains_key("content-encoding"),
                "{path}: {refused}"
            );
            assert_eq!(serde_json::from_slice::<Value>(&wire).unwrap(), plain);
        }
    }
}

#[tokio::test]
async fn small_answers_and_writes_are_sent_as_they_are() {
    let app = TestApp::start().await;
    let (admin, reads, _) = world(&app).await;
    let (headers, _) = read(&app, &admin, "/v1/user", Some(NODE)).await;
    assert!(!headers.contains_key("content-encoding"));
    assert!(!varies(&headers), "never compressed, so it does not vary");
    // A write's answer, however large, is sent as it is.
    let space = reads[0].trim_end_matches("/content");
    let res = reqwest::Client::new()
        .post(format!("{}{space}/comments", app.base))
        .bearer_auth(&admin.token)
        .header("accept-encoding", NODE)
        .json(&json!({ "body": { "markdown": "A long comment. ".repeat(200) } }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(!res.headers().contains_key("content-encoding"));
    let body: Value = res.json().await.unwrap();
    assert!(body["body"]["markdown"].as_str().unwrap().len() > 2000);
}

#[tokio::test]
async fn a_revision_past_the_inline_bound_is_compressed_off_the_workers_alike() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Big", None).await;
    let cr = app.open_change_request(&admin, &space, "Start").await;
    // Eight pages of about 40 KB, one a request (a body is at most 64 KB): the revision is
    // past `INLINE_BYTES`.
    for i in 0..8 {
        let text: String = (0..4500).map(|w| format!("w{i}x{w} ")).collect();
        let page = json!({ "operation": "insert_page", "title": format!("Page {i}"),
                           "document": { "markdown": text } });
        app.edit_change_request(&admin, &space, &cr, json!([page]))
            .await;
    }
    app.merge_change_request(&admin, &space, &cr).await;
    let path = format!("/v1/spaces/{space}/content");
    let (_, plain) = read(&app, &admin, &path, None).await;
    assert!(plain.len() > quire_server::encoding::INLINE_BYTES);
    let plain: Value = serde_json::from_slice(&plain).unwrap();
    // Made, kept (compressed on a blocking thread), then served from memory.
    for round in 0..4 {
        let (headers, wire) = read(&app, &admin, &path, Some(NODE)).await;
        assert_eq!(headers["content-encoding"], "gzip", "round {round}");
        let got: Value = serde_json::from_slice(&gunzip(&wire)).unwrap();
        assert_eq!(got, plain, "round {round}");
    }
}

/// API reads carry an `ETag` made from their answer: a client that holds it is answered
/// `304` without a body while the answer is unchanged, however the answer is made (by its
/// handler, kept, compressed), and `200` with a new tag once it changed.
#[tokio::test]
async fn reads_answer_304_to_a_client_holding_the_same_answer() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Tagged", None).await;
    let url = format!("{}/v1/spaces/{space}", app.base);
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    let get = |inm: Option<String>, gzip: bool| {
        let mut req = client.get(&url).bearer_auth(&admin.token);
        if let Some(tag) = inm {
            req = req.header("if-none-match", tag);
        }
        if gzip {
            req = req.header("accept-encoding", "gzip");
        }
        req.send()
    };
    let first = get(None, false).await.unwrap();
    assert_eq!(first.status(), 200);
    let tag = first.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(first.headers()["cache-control"], "private, no-cache");
    // Made again, then kept and served from the edge: the same tag, and 304 each time.
    for _ in 0..3 {
        let again = get(Some(tag.clone()), false).await.unwrap();
        assert_eq!(again.status(), 304);
        assert_eq!(again.headers()["etag"].to_str().unwrap(), tag);
        assert!(again.bytes().await.unwrap().is_empty());
    }
    let weak = get(Some(format!("W/{tag}")), true).await.unwrap();
    assert_eq!(weak.status(), 304);
    let other = get(Some("\"something-else\"".into()), false).await.unwrap();
    assert_eq!(other.status(), 200);
    // Once the space changes, the held answer is no longer it.
    app.patch(
        &admin,
        &format!("/v1/spaces/{space}"),
        serde_json::json!({ "title": "Renamed" }),
    )
    .await
    .expect(200);
    let changed = get(Some(tag.clone()), false).await.unwrap();
    assert_eq!(changed.status(), 200);
    assert_ne!(changed.headers()["etag"].to_str().unwrap(), tag);
}
