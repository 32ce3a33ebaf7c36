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
