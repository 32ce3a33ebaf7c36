//! Collections: nesting, listing, updating, moving, transferring, deleting.

use serde_json::{json, Value};

use crate::harness::TestApp;

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn collections_nest_and_list() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let top = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/collections"),
            json!({ "title": "Product" }),
        )
        .await
        .expect(201);
    assert_eq!(top["object"], "collection");
    assert_eq!(top["defaultLevel"], "inherit");
    assert_eq!(top["permissions"]["admin"], true);
    let top = top["id"].as_str().unwrap().to_string();
    let child = app.collection(&alice, &org, "API", Some(&top)).await;
    let grandchild = app.collection(&alice, &org, "v2", Some(&child)).await;
    let list = format!("/v1/orgs/{org}/collections");
    assert_eq!(
        ids(&app.get(&alice, &list).await.expect(200)),
        vec![top.clone(), child.clone(), grandchild.clone()]
    );
    assert_eq!(
        ids(&app
            .get(&alice, &format!("{list}?nested=false"))
            .await
            .expect(200)),
        vec![top.clone()]
    );
    app.get(&alice, &format!("{list}?nested=maybe"))
        .await
        .expect_error(400);
    let got = app
        .get(&alice, &format!("/v1/collections/{child}"))
        .await
        .expect(200);
    assert_eq!(got["parent"], top.as_str());

    let updated = app
        .patch(
            &alice,
            &format!("/v1/collections/{child}"),
            json!({ "title": "APIs", "description": "All of them", "defaultLevel": "comment" }),
        )
        .await
        .expect(200);
    assert_eq!(
        (
            updated["title"].clone(),
            updated["description"].clone(),
            updated["defaultLevel"].clone()
        ),
        (json!("APIs"), json!("All of them"), json!("comment"))
    );
    app.patch(
        &alice,
        &format!("/v1/collections/{child}"),
        json!({ "description": "d".repeat(101) }),
    )
    .await
    .expect_error(400);
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/collections"),
        json!({ "title": "t".repeat(51) }),
    )
    .await
    .expect_error(400);
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/collections"),
        json!({ "parent": "nope" }),
    )
    .await
    .expect_error(400);
}

#[tokio::test]
async fn collections_cannot_move_under_their_descendants() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let a = app.collection(&alice, &org, "A", None).await;
    let b = app.collection(&alice, &org, "B", Some(&a)).await;
    let c = app.collection(&alice, &org, "C", Some(&b)).await;
    app.post(
        &alice,
        &format!("/v1/collections/{a}/move"),
        json!({ "parent": c }),
    )
    .await
    .expect_error(400);
    app.post(
        &alice,
        &format!("/v1/collections/{a}/move"),
        json!({ "parent": a }),
    )
    .await
    .expect_error(400);
    let moved = app
        .post(
            &alice,
            &format!("/v1/collections/{c}/move"),
            json!({ "parent": null }),
        )
        .await
        .expect(200);
    assert!(moved.get("parent").is_none());
    let top = app
        .get(&alice, &format!("/v1/orgs/{org}/collections?nested=false"))
        .await
        .expect(200);
    assert_eq!(ids(&top), vec![a.clone(), c.clone()]);
    app.post(
        &alice,
        &format!("/v1/collections/{c}/move"),
        json!({ "position": { "before": { "type": "collection", "collection": a } } }),
    )
    .await
    .expect(200);
    let top = app
        .get(&alice, &format!("/v1/orgs/{org}/collections?nested=false"))
        .await
        .expect(200);
    assert_eq!(ids(&top), vec![c.clone(), a.clone()]);
}

#[tokio::test]
async fn deleting_a_collection_keeps_its_content() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let outer = app.collection(&alice, &org, "Outer", None).await;
    let inner = app.collection(&alice, &org, "Inner", Some(&outer)).await;
    let space = app.space(&alice, &org, "Kept", Some(&inner)).await;
    app.delete(&alice, &format!("/v1/collections/{inner}"))
        .await
        .expect(204);
    app.delete(&alice, &format!("/v1/collections/{inner}"))
        .await
        .expect(204);
    app.get(&alice, &format!("/v1/collections/{inner}"))
        .await
        .expect_error(404);
    let s = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert_eq!(
        s["parent"],
        outer.as_str(),
        "the space moved up to the deleted collection's parent"
    );
}

#[tokio::test]
async fn transferring_a_collection_moves_its_subtree() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let other = app.org(&alice, "Other").await;
    let outer = app.collection(&alice, &org, "Outer", None).await;
    let inner = app.collection(&alice, &org, "Inner", Some(&outer)).await;
    let space = app.space(&alice, &org, "Deep", Some(&inner)).await;
    let moved = app
        .post(
            &alice,
            &format!("/v1/collections/{outer}/transfer"),
            json!({ "organization": other }),
        )
        .await
        .expect(200);
    assert_eq!(moved["organization"], other.as_str());
    assert_eq!(
        app.get(&alice, &format!("/v1/collections/{inner}"))
            .await
            .expect(200)["organization"],
        other.as_str()
    );
    assert_eq!(
        app.get(&alice, &format!("/v1/spaces/{space}"))
            .await
            .expect(200)["organization"],
        other.as_str()
    );
    assert_eq!(
        app.get(&alice, &format!("/v1/orgs/{org}/collections"))
            .await
            .expect(200)["count"],
        0
    );
    app.post(
        &alice,
        &format!("/v1/collections/{outer}/transfer"),
        json!({}),
    )
    .await
    .expect_error(400);
}

#[tokio::test]
async fn in_collection_spaces_moved_to_the_root_become_private() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let coll = app.collection(&alice, &org, "Top", None).await;
    let space = app.space(&alice, &org, "Inside", Some(&coll)).await;
    app.patch(
        &alice,
        &format!("/v1/spaces/{space}"),
        json!({ "visibility": "in-collection" }),
    )
    .await
    .expect(200);
    app.delete(&alice, &format!("/v1/collections/{coll}"))
        .await
        .expect(204);
    let s = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert!(s.get("parent").is_none());
    assert_eq!(s["visibility"], "private");
}
