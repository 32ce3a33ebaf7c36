//! Reviews of change requests: requesting reviewers, submitting reviews (which fulfil the
//! requests), listing both, and who may do what.

use serde_json::json;

use crate::harness::TestApp;

#[tokio::test]
async fn reviewers_are_requested_then_review_and_the_request_is_fulfilled() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    let org = app.org(&alice, "Reviewed").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    app.add_member(&alice, &org, &bob, json!("review")).await;
    app.add_member(&alice, &org, &carol, json!("read")).await;
    let cr = app.open_change_request(&alice, &space, "Please look").await;
    let base = format!("/v1/spaces/{space}/change-requests/{cr}");

    // Only users who may review the space can be requested.
    let refused = app
        .post(
            &alice,
            &format!("{base}/requested-reviewers"),
            json!({ "users": [carol.id] }),
        )
        .await
        .expect_error(400);
    assert!(refused.contains("users"), "{refused}");
    app.post(
        &alice,
        &format!("{base}/requested-reviewers"),
        json!({ "users": [] }),
    )
    .await
    .expect_error(400);
    // A reader cannot request reviewers.
    app.post(
        &carol,
        &format!("{base}/requested-reviewers"),
        json!({ "users": [bob.id] }),
    )
    .await
    .expect_error(403);

    let sent = app
        .post(
            &alice,
            &format!("{base}/requested-reviewers"),
            json!({ "users": [bob.id], "subject": "Please review" }),
        )
        .await
        .expect(200);
    assert_eq!(
        sent["users"][0]["object"],
        "change-request-requested-reviewer"
    );
    assert_eq!(sent["users"][0]["kind"], "user");
    assert_eq!(sent["users"][0]["user"]["id"], bob.id.as_str());
    assert_eq!(sent["users"][0]["requestedBy"]["id"], alice.id.as_str());
    let got = app.get(&alice, &base).await.expect(200);
    assert_eq!(got["subject"], "Please review");
    let listed = app
        .get(&carol, &format!("{base}/requested-reviewers"))
        .await
        .expect(200);
    assert_eq!(listed["count"], 1);

    // A reader cannot review; a bad status is named.
    app.post(
        &carol,
        &format!("{base}/reviews"),
        json!({ "status": "approved" }),
    )
    .await
    .expect_error(403);
    let bad = app
        .post(
            &bob,
            &format!("{base}/reviews"),
            json!({ "status": "lgtm" }),
        )
        .await
        .expect_error(400);
    assert!(bad.contains("status"), "{bad}");

    let review = app
        .post(
            &bob,
            &format!("{base}/reviews"),
            json!({ "status": "approved" }),
        )
        .await
        .expect(201);
    assert_eq!(review["object"], "change-request-review");
    assert_eq!(review["status"], "approved");
    assert_eq!(review["reviewer"]["id"], bob.id.as_str());
    assert_eq!(review["requestedBy"]["id"], alice.id.as_str());
    assert_eq!(review["revision"], got["revision"]);
    // The request is fulfilled; the review is listed.
    let listed = app
        .get(&alice, &format!("{base}/requested-reviewers"))
        .await
        .expect(200);
    assert_eq!(listed["count"], 0);
    let reviews = app
        .get(&carol, &format!("{base}/reviews"))
        .await
        .expect(200);
    assert_eq!(reviews["count"], 1);
    assert_eq!(reviews["items"][0]["id"], review["id"]);

    // An unrequested review has no requester; withdrawing a request answers 205, then 204.
    let second = app
        .post(
            &alice,
            &format!("{base}/reviews"),
            json!({ "status": "changes-requested" }),
        )
        .await
        .expect(201);
    assert!(second.get("requestedBy").is_none(), "{second}");
    app.post(
        &alice,
        &format!("{base}/requested-reviewers"),
        json!({ "users": [bob.id] }),
    )
    .await
    .expect(200);
    let removed = app
        .delete(&alice, &format!("{base}/requested-reviewers/{}", bob.id))
        .await;
    assert_eq!(removed.status, 205);
    let again = app
        .delete(&alice, &format!("{base}/requested-reviewers/{}", bob.id))
        .await;
    assert_eq!(again.status, 204);

    // A merged change request can no longer be reviewed.
    app.merge_change_request(&alice, &space, &cr).await;
    app.post(
        &bob,
        &format!("{base}/reviews"),
        json!({ "status": "approved" }),
    )
    .await
    .expect_error(400);
}

#[tokio::test]
async fn a_review_with_words_posts_them_in_the_change_requests_discussion() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Reviewed").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    app.add_member(&alice, &org, &bob, json!("review")).await;
    let cr = app.open_change_request(&alice, &space, "Please look").await;
    let base = format!("/v1/spaces/{space}/change-requests/{cr}");
    let words = json!({
        "object": "document",
        "nodes": [{ "object": "block", "type": "paragraph",
            "nodes": [{ "object": "text", "leaves": [{ "object": "leaf", "text": "Tighten the intro.", "marks": [] }] }] }]
    });
    app.post(
        &bob,
        &format!("{base}/reviews"),
        json!({ "status": "changes-requested", "comment": words }),
    )
    .await
    .expect(201);
    let listed = app
        .get(&alice, &format!("{base}/comments"))
        .await
        .expect(200);
    assert_eq!(listed["count"], 1, "{listed}");
    assert_eq!(listed["items"][0]["postedBy"]["id"], bob.id.as_str());
    assert_eq!(
        listed["items"][0]["body"]["markdown"]
            .as_str()
            .map(str::trim),
        Some("Tighten the intro.")
    );
    // An empty comment is refused, and no review is left behind.
    let empty = json!({ "object": "document", "nodes": [] });
    let refused = app
        .post(
            &bob,
            &format!("{base}/reviews"),
            json!({ "status": "approved", "comment": empty }),
        )
        .await
        .expect_error(400);
    assert!(refused.contains("comment"), "{refused}");
    let reviews = app
        .get(&alice, &format!("{base}/reviews"))
        .await
        .expect(200);
    assert_eq!(reviews["count"], 1);
}
