//! Link previews (`getEmbedByUrl`, `getEmbedByUrlInSpace`) of pages served on loopback.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::harness::TestApp;
use crate::loopback::{self, Reply};

const PAGE: &str = r#"<!doctype html><html><head><title>Walrus guide</title>
<meta property="og:site_name" content="Walrus Docs">
<link rel="icon" href="/icon.png"></head><body><p>Tusks.</p></body></html>"#;

#[tokio::test]
async fn a_url_is_previewed_by_what_its_page_says() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let base = loopback::serve(move |req| match req.path.as_str() {
        "/guide" => {
            counted.fetch_add(1, Ordering::SeqCst);
            Reply::ok("text/html; charset=utf-8", PAGE)
        }
        "/data.json" => Reply::ok("application/json", "{}"),
        _ => Reply::not_found(),
    })
    .await;
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.0/8".parse().unwrap()]).await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Guide", None).await;
    let outsider = app.persona("outsider").await;

    let q = |url: &str| url::form_urlencoded::byte_serialize(url.as_bytes()).collect::<String>();
    let guide = format!("{base}/guide");
    let got = app
        .get(&admin, &format!("/v1/urls/embed?url={}", q(&guide)))
        .await
        .expect(200);
    assert_eq!(
        got,
        json!({ "type": "link", "title": "Walrus guide", "site": "Walrus Docs", "icon": format!("{base}/icon.png") })
    );
    // Kept: the same URL again reads nothing.
    let again = app
        .get(
            &admin,
            &format!("/v1/spaces/{space}/embed?url={}", q(&guide)),
        )
        .await
        .expect(200);
    assert_eq!(again, got);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    app.get(
        &outsider,
        &format!("/v1/spaces/{space}/embed?url={}", q(&guide)),
    )
    .await
    .expect_error(404);

    // What is not an HTML page, or not there, is previewed by its address.
    let data = format!("{base}/data.json");
    let got = app
        .get(&admin, &format!("/v1/urls/embed?url={}", q(&data)))
        .await
        .expect(200);
    assert_eq!(got["title"], json!(data));
    assert_eq!(got["site"], json!("127.0.0.1"));
    assert!(got.get("icon").is_none());
    let gone = format!("{base}/gone");
    let got = app
        .get(&admin, &format!("/v1/urls/embed?url={}", q(&gone)))
        .await
        .expect(200);
    assert_eq!(got["title"], json!(gone));

    let message = app
        .get(&admin, "/v1/urls/embed?url=file%3A%2F%2F%2Fetc%2Fpasswd")
        .await
        .expect_error(400);
    assert!(message.contains("`url`"), "{message}");
    app.get(&admin, "/v1/urls/embed").await.expect_error(400);
}

#[tokio::test]
async fn private_addresses_are_not_read_without_being_allowed() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let base = loopback::serve(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Reply::ok("text/html", PAGE)
    })
    .await;
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let url = url::form_urlencoded::byte_serialize(format!("{base}/guide").as_bytes())
        .collect::<String>();
    let got = app
        .get(&admin, &format!("/v1/urls/embed?url={url}"))
        .await
        .expect(200);
    assert_eq!(got["site"], json!("127.0.0.1"));
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the fetcher refused loopback"
    );
}

#[tokio::test]
async fn previews_read_only_so_many_pages_at_once() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let base = loopback::serve(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Reply::ok("text/html", PAGE)
    })
    .await;
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.0/8".parse().unwrap()]).await;
    let admin = app.persona("admin").await;
    let url = url::form_urlencoded::byte_serialize(format!("{base}/guide").as_bytes())
        .collect::<String>();
    // Every turn at reading pages is taken: the URL is previewed by its address, unread
    // and not kept.
    let all = app.state.embed_reads.available_permits() as u32;
    let held = app.state.embed_reads.acquire_many(all).await.unwrap();
    let got = app
        .get(&admin, &format!("/v1/urls/embed?url={url}"))
        .await
        .expect(200);
    assert_eq!(got["site"], json!("127.0.0.1"));
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    drop(held);
    let got = app
        .get(&admin, &format!("/v1/urls/embed?url={url}"))
        .await
        .expect(200);
    assert_eq!(got["title"], json!("Walrus guide"));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

/// GitBook's renderer draws a page's embedded links with the token that
/// `resolvePublishedContentByUrl` hands it: that token reads their previews, in its own space
/// only.
#[tokio::test]
async fn the_published_content_token_reads_the_previews_of_links() {
    let base = loopback::serve(|req| match req.path.as_str() {
        "/guide" => Reply::ok("text/html; charset=utf-8", PAGE),
        _ => Reply::not_found(),
    })
    .await;
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.0/8".parse().unwrap()]).await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Guide", None).await;
    let other = app.space(&admin, &org, "Other", None).await;
    let sites = format!("/v1/orgs/{org}/sites");
    let site = app
        .post(
            &admin,
            &sites,
            json!({ "title": "Docs", "spaces": [space] }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let published = app
        .post(&admin, &format!("{sites}/{site}/publish"), json!({}))
        .await
        .expect(200);
    let url = published["urls"]["published"].as_str().unwrap();
    let token = app
        .post(&admin, "/v1/urls/published", json!({ "url": url }))
        .await
        .expect(200)["apiToken"]
        .as_str()
        .unwrap()
        .to_string();
    let q = |url: &str| url::form_urlencoded::byte_serialize(url.as_bytes()).collect::<String>();
    let guide = q(&format!("{base}/guide"));
    for path in [
        format!("/v1/urls/embed?url={guide}"),
        format!("/v1/spaces/{space}/embed?url={guide}"),
    ] {
        let got = app
            .call(reqwest::Method::GET, &path, Some(&token), None)
            .await
            .expect(200);
        assert_eq!(got["title"], "Walrus guide", "{path}: {got}");
    }
    app.call(
        reqwest::Method::GET,
        &format!("/v1/spaces/{other}/embed?url={guide}"),
        Some(&token),
        None,
    )
    .await
    .expect_error(403);
}
