//! `getContentByUrl`: the app URLs the API hands out, resolved for whoever may read them.

use serde_json::Value;

use crate::harness::TestApp;

fn q(url: &str) -> String {
    url::form_urlencoded::byte_serialize(url.as_bytes()).collect()
}

#[tokio::test]
async fn app_urls_resolve_to_their_collection_space_and_change_request() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let outsider = app.persona("outsider").await;
    let org = app.org(&admin, "Acme").await;
    let coll = app.collection(&admin, &org, "Guides", None).await;
    let space = app.space(&admin, &org, "Handbook", Some(&coll)).await;
    let cr = app.open_change_request(&admin, &space, "Edit").await;

    let app_url = |v: &Value| v["urls"]["app"].as_str().unwrap().to_string();
    let c = app
        .get(&admin, &format!("/v1/collections/{coll}"))
        .await
        .expect(200);
    let got = app
        .get(&admin, &format!("/v1/urls/content?url={}", q(&app_url(&c))))
        .await
        .expect(200);
    assert_eq!(got["collection"]["id"], c["id"]);
    assert!(got.get("space").is_none());

    let s = app
        .get(&admin, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    let got = app
        .get(&admin, &format!("/v1/urls/content?url={}", q(&app_url(&s))))
        .await
        .expect(200);
    assert_eq!(got["space"]["id"], s["id"]);
    assert!(got.get("changeRequest").is_none());

    let c = app
        .get(&admin, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200);
    let url = app_url(&c);
    assert!(url.contains("/~/changes/"), "{url}");
    let got = app
        .get(&admin, &format!("/v1/urls/content?url={}", q(&url)))
        .await
        .expect(200);
    assert_eq!(got["space"]["id"], s["id"]);
    assert_eq!(got["changeRequest"]["id"], c["id"]);

    // Someone who may not read it, another host, an unknown path: nothing there.
    app.get(&outsider, &format!("/v1/urls/content?url={}", q(&url)))
        .await
        .expect_error(404);
    app.get(
        &admin,
        &format!(
            "/v1/urls/content?url={}",
            q("https://elsewhere.example/s/x")
        ),
    )
    .await
    .expect_error(404);
    app.get(
        &admin,
        &format!(
            "/v1/urls/content?url={}",
            q(&format!("{}/nowhere", app.base))
        ),
    )
    .await
    .expect_error(404);
    let missing = format!("{}/~/changes/999", app_url(&s));
    app.get(&admin, &format!("/v1/urls/content?url={}", q(&missing)))
        .await
        .expect_error(404);
}

/// A page's app URL resolves to its space and the page itself, as `getPageById` gives it;
/// a path that names no page gives the space alone.
#[tokio::test]
async fn a_page_url_resolves_to_its_page() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Handbook", None).await;
    let cr = app.open_change_request(&admin, &space, "Pages").await;
    app.edit_change_request(
        &admin,
        &space,
        &cr,
        serde_json::json!([
            { "operation": "insert_page", "ref": "g", "title": "Guide", "document": { "markdown": "Read on.\n" } },
            { "operation": "insert_page", "into": "g", "title": "Setup", "document": { "markdown": "Install it.\n" } }
        ]),
    )
    .await;
    app.merge_change_request(&admin, &space, &cr).await;
    let pages = app
        .get(&admin, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let setup = &pages["pages"][0]["pages"][0];
    let url = setup["urls"]["app"].as_str().unwrap();
    let got = app
        .get(&admin, &format!("/v1/urls/content?url={}", q(url)))
        .await
        .expect(200);
    assert_eq!(got["space"]["id"], space.as_str());
    assert_eq!(got["page"]["id"], setup["id"]);
    assert_eq!(got["page"]["path"], "guide/setup");
    assert_eq!(got["page"]["document"]["object"], "document");
    for nothing in ["nope", "guide/nope"] {
        let url = format!("{}/s/{space}/{nothing}", app.base);
        let got = app
            .get(&admin, &format!("/v1/urls/content?url={}", q(&url)))
            .await
            .expect(200);
        assert_eq!(got["space"]["id"], space.as_str());
        assert!(got.get("page").is_none(), "{got}");
    }
}
