//! `/v1/user`, `/v1/users/{userId}`.

use serde_json::json;

use crate::harness::TestApp;

#[tokio::test]
async fn users_read_and_edit_their_own_profile() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let me = app.get(&alice, "/v1/user").await.expect(200);
    assert_eq!(me["object"], "user");
    assert_eq!(me["email"], "alice@example.com");
    assert!(me["urls"]["location"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));

    // Strangers are invisible; co-members are visible.
    app.get(&alice, &format!("/v1/users/{}", bob.id))
        .await
        .expect_error(404);
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let seen = app
        .get(&alice, &format!("/v1/users/{}", bob.id))
        .await
        .expect(200);
    assert_eq!(seen["displayName"], "bob");

    let updated = app
        .patch(
            &alice,
            &format!("/v1/users/{}", alice.id),
            json!({ "displayName": "Alice A.", "photoURL": "https://img.example.com/a.png" }),
        )
        .await
        .expect(200);
    assert_eq!(updated["displayName"], "Alice A.");
    assert_eq!(updated["photoURL"], "https://img.example.com/a.png");
    assert_eq!(
        app.get(&alice, "/v1/user").await.expect(200)["displayName"],
        "Alice A."
    );

    app.patch(
        &alice,
        &format!("/v1/users/{}", bob.id),
        json!({ "displayName": "x" }),
    )
    .await
    .expect_error(403);
    app.patch(&alice, &format!("/v1/users/{}", alice.id), json!({}))
        .await
        .expect_error(400);
    let msg = app
        .patch(
            &alice,
            &format!("/v1/users/{}", alice.id),
            json!({ "displayName": "y".repeat(65) }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("displayName"), "{msg}");
    let msg = app
        .patch(
            &alice,
            &format!("/v1/users/{}", alice.id),
            json!({ "photoURL": "not a url" }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("photoURL"), "{msg}");
}

#[tokio::test]
async fn api_information_answers_version() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let info = app.get(&alice, "/v1/").await.expect(200);
    assert!(info["version"].is_string() && info["build"].is_string());
}
