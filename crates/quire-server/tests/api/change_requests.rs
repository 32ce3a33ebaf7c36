//! Change requests: numbering, listing and filters, status changes and space counters.

use serde_json::{json, Value};

use crate::harness::TestApp;

fn counters(space: &Value) -> (i64, i64, i64) {
    (
        space["changeRequests"].as_i64().unwrap(),
        space["changeRequestsOpen"].as_i64().unwrap(),
        space["changeRequestsDraft"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn change_requests_are_numbered_listed_and_counted() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let base = format!("/v1/spaces/{space}/change-requests");
    let space_rev = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .clone();

    let first = app
        .post(&alice, &base, json!({ "subject": "First" }))
        .await
        .expect(201);
    assert_eq!(first["object"], "change-request");
    assert_eq!(first["number"], 1);
    assert_eq!(first["status"], "open");
    assert_eq!(first["revisionInitial"], space_rev);
    assert_eq!(first["revision"], space_rev);
    assert_eq!(first["outdated"], false);
    assert_eq!(first["createdBy"]["id"], alice.id.as_str());
    let second = app.post(&bob, &base, json!({})).await.expect(201);
    assert_eq!(second["number"], 2);
    assert_eq!(second["subject"], "");
    app.post(&alice, &base, json!({ "subject": "s".repeat(101) }))
        .await
        .expect_error(400);

    // By id and by number.
    let id = first["id"].as_str().unwrap();
    assert_eq!(
        app.get(&alice, &format!("{base}/{id}")).await.expect(200)["id"],
        id
    );
    assert_eq!(
        app.get(&alice, &format!("{base}/1")).await.expect(200)["id"],
        id
    );
    app.get(&alice, &format!("{base}/99"))
        .await
        .expect_error(404);

    assert_eq!(
        counters(
            &app.get(&alice, &format!("/v1/spaces/{space}"))
                .await
                .expect(200)
        ),
        (2, 2, 0)
    );
    let drafted = app
        .patch(
            &alice,
            &format!("{base}/1"),
            json!({ "status": "draft", "subject": "Renamed" }),
        )
        .await
        .expect(200);
    assert_eq!(
        (drafted["status"].clone(), drafted["subject"].clone()),
        (json!("draft"), json!("Renamed"))
    );
    assert_eq!(
        counters(
            &app.get(&alice, &format!("/v1/spaces/{space}"))
                .await
                .expect(200)
        ),
        (2, 1, 1)
    );
    app.patch(
        &alice,
        &format!("{base}/2"),
        json!({ "status": "archived" }),
    )
    .await
    .expect(200);
    assert_eq!(
        counters(
            &app.get(&alice, &format!("/v1/spaces/{space}"))
                .await
                .expect(200)
        ),
        (2, 0, 1)
    );
    app.patch(&alice, &format!("{base}/2"), json!({ "status": "merged" }))
        .await
        .expect_error(400);

    let open = app.get(&alice, &base).await.expect(200);
    assert_eq!(open["count"], 0, "the default status filter is open");
    let drafts = app
        .get(&alice, &format!("{base}?status=draft"))
        .await
        .expect(200);
    assert_eq!(drafts["count"], 1);
    let archived = app
        .get(&alice, &format!("{base}?status=archived"))
        .await
        .expect(200);
    assert_eq!(archived["items"][0]["number"], 2);
    app.get(&alice, &format!("{base}?status=closed"))
        .await
        .expect_error(400);
}

#[tokio::test]
async fn readers_cannot_open_change_requests() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let reader = app.persona("reader").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &reader, json!("read")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    app.post(
        &reader,
        &format!("/v1/spaces/{space}/change-requests"),
        json!({}),
    )
    .await
    .expect_error(403);
    app.get(&reader, &format!("/v1/spaces/{space}/change-requests"))
        .await
        .expect(200);
}

#[tokio::test]
async fn change_requests_created_at_once_get_distinct_numbers() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let base = format!("/v1/spaces/{space}/change-requests");
    let created = futures_util::future::join_all(
        (0..16).map(|n| app.post(&alice, &base, json!({ "subject": format!("at once {n}") }))),
    )
    .await;
    let mut numbers: Vec<i64> = created
        .into_iter()
        .map(|res| res.expect(201)["number"].as_i64().unwrap())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=16).collect::<Vec<_>>());
    let s = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert_eq!(counters(&s), (16, 16, 0));
}
