//! Templates through HTTP: a built-in template applied as one new revision of the space,
//! file slots filled from `params.contentRefs`, and every bad request a 400 that changes
//! nothing.

use serde_json::{json, Value};

use crate::harness::{TestApp, PNG};

fn titles(pages: &Value) -> Vec<String> {
    pages
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn templates_add_their_pages_as_one_revision() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    // A file in the space, for the logo slot.
    let cr = app.open_change_request(&alice, &space, "Logo").await;
    let res = app
        .edit_change_request(
            &alice,
            &space,
            &cr,
            json!([{ "operation": "insert_files", "files": [{ "base64": PNG, "name": "logo.png" }] }]),
        )
        .await;
    let file = res["insertedFiles"][0]["id"].as_str().unwrap().to_string();
    app.merge_change_request(&alice, &space, &cr).await;
    let before = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);

    // Bad requests: unknown template, unknown slot, a slot that is not a file, a file the
    // space does not hold. Each is a 400 naming the field, and the space does not move.
    let bad = [
        (json!({ "id": "nope" }), "id"),
        (
            json!({ "id": "product-docs", "params": { "contentRefs": { "banner": { "kind": "file", "file": file } } } }),
            "params.contentRefs.banner",
        ),
        (
            json!({ "id": "product-docs", "params": { "contentRefs": { "logo": { "kind": "url", "url": "https://example.com/x.png" } } } }),
            "params.contentRefs.logo",
        ),
        (
            json!({ "id": "product-docs", "params": { "contentRefs": { "logo": { "kind": "file", "file": "missing" } } } }),
            "params.contentRefs.logo",
        ),
        (json!({ "params": {} }), "id"),
    ];
    for (body, field) in bad {
        let msg = app
            .post(
                &alice,
                &format!("/v1/spaces/{space}/content/template"),
                body.clone(),
            )
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
    let still = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    assert_eq!(still["id"], before["id"]);

    let res = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/content/template"),
            json!({ "id": "product-docs", "params": { "contentRefs": { "logo": { "kind": "file", "file": file } } } }),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    let after = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    assert_ne!(after["id"], before["id"]);
    assert_eq!(after["parents"], json!([before["id"]]));
    assert_eq!(
        titles(&after["pages"]),
        ["Welcome", "Quickstart", "Guides", "FAQ"]
    );
    let welcome = after["pages"][0]["id"].as_str().unwrap();
    let page = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/page/{welcome}?format=markdown"),
        )
        .await
        .expect(200);
    let md = page["markdown"].as_str().unwrap();
    assert!(md.contains(&format!("/files/{file}")), "{md}");
    // The template's links point at its own pages: none is broken.
    let links = app
        .get(&alice, &format!("/v1/spaces/{space}/links"))
        .await
        .expect(200);
    assert!(links["stats"]["total"].as_u64().unwrap() >= 4, "{links}");
    assert_eq!(links["stats"]["broken"]["total"], 0, "{links}");
    // The file is used by the welcome page.
    let back = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/files/{file}/backlinks"),
        )
        .await
        .expect(200);
    assert_eq!(back["items"][0]["page"]["id"], json!(welcome));

    // Applying again appends, with slugs kept unique.
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/content/template"),
        json!({ "id": "changelog" }),
    )
    .await
    .expect(201);
    let last = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    assert_eq!(
        titles(&last["pages"]),
        ["Welcome", "Quickstart", "Guides", "FAQ", "Changelog"]
    );
}
