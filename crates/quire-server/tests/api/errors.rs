//! The error model: every failure answers the official body with the right status.

use reqwest::Method;
use serde_json::json;

use crate::harness::TestApp;

#[tokio::test]
async fn missing_or_unknown_token_is_401() {
    let app = TestApp::start().await;
    app.call(Method::GET, "/v1/user", None, None)
        .await
        .expect_error(401);
    app.call(Method::GET, "/v1/user", Some("quire_notatoken"), None)
        .await
        .expect_error(401);
    let res = app.call(Method::GET, "/v1/orgs/x", Some("bad"), None).await;
    res.expect_error(401);
}

#[tokio::test]
async fn unknown_route_is_404_and_wrong_method_is_405() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let msg = app.get(&alice, "/v1/nothing-here").await.expect_error(404);
    assert!(msg.contains("/v1/nothing-here"), "{msg}");
    app.call(Method::GET, "/nothing", None, None)
        .await
        .expect_error(404);
    app.delete(&alice, "/v1/user").await.expect_error(405);
    app.put(&alice, "/v1/orgs", json!({}))
        .await
        .expect_error(405);
}

#[tokio::test]
async fn malformed_json_and_wrong_types_name_the_field() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let msg = app
        .raw(
            Method::POST,
            "/v1/orgs",
            &alice.token,
            b"{\"title\": ".to_vec(),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("Malformed JSON"), "{msg}");
    let msg = app
        .post(&alice, "/v1/orgs", json!({ "title": 12 }))
        .await
        .expect_error(400);
    assert!(msg.contains("title"), "{msg}");
    let msg = app
        .post(&alice, "/v1/orgs", json!({}))
        .await
        .expect_error(400);
    assert!(msg.contains("title"), "{msg}");
    let msg = app
        .raw(Method::POST, "/v1/orgs", &alice.token, Vec::new())
        .await
        .expect_error(400);
    assert!(msg.contains("body"), "{msg}");
    let org = app.org(&alice, "Acme").await;
    let msg = app
        .patch(
            &alice,
            &format!("/v1/orgs/{org}"),
            json!({ "defaultRole": "owner" }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("defaultRole"), "{msg}");
    let msg = app
        .get(&alice, &format!("/v1/orgs/{org}/members?sort=name"))
        .await
        .expect_error(400);
    assert!(msg.contains("sort"), "{msg}");
}

#[tokio::test]
async fn oversized_body_is_413() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let big = "x".repeat(100 * 1024);
    let body = serde_json::to_vec(&json!({ "title": big })).unwrap();
    app.raw(Method::POST, "/v1/orgs", &alice.token, body)
        .await
        .expect_error(413);
}

#[tokio::test]
async fn bad_limits_and_forged_cursors_are_400() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    for query in [
        "limit=1001",
        "limit=-1",
        "limit=abc",
        "limit=1.5",
        "page=forged",
        "page=eyJ4Ijo.AAAA",
    ] {
        let msg = app
            .get(&alice, &format!("/v1/orgs?{query}"))
            .await
            .expect_error(400);
        assert!(
            msg.contains("limit") || msg.contains("page"),
            "{query}: {msg}"
        );
    }
    app.get(&alice, "/v1/orgs?limit=1000").await.expect(200);
    app.get(&alice, "/v1/orgs?limit=0").await.expect(200);
    // A cursor from one list is refused by another.
    let org = app.org(&alice, "Acme").await;
    app.org(&alice, "Beta").await;
    let page = app.get(&alice, "/v1/orgs?limit=1").await.expect(200);
    let cursor = page["next"]["page"].as_str().unwrap().to_string();
    app.get(&alice, &format!("/v1/orgs/{org}/teams?page={cursor}"))
        .await
        .expect_error(400);
    // A cursor whose payload was altered is refused.
    let (payload, sig) = cursor.split_once('.').unwrap();
    let mut altered = payload.to_string();
    altered.replace_range(0..1, if payload.starts_with('A') { "B" } else { "A" });
    app.get(&alice, &format!("/v1/orgs?page={altered}.{sig}"))
        .await
        .expect_error(400);
}

#[tokio::test]
async fn outsiders_get_404_and_members_without_right_get_403() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    app.get(&bob, &format!("/v1/orgs/{org}"))
        .await
        .expect_error(404);
    app.get(&bob, &format!("/v1/orgs/{org}/members"))
        .await
        .expect_error(404);
    app.get(&alice, "/v1/orgs/doesnotexist")
        .await
        .expect_error(404);
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    app.get(&bob, &format!("/v1/orgs/{org}")).await.expect(200);
    app.patch(&bob, &format!("/v1/orgs/{org}"), json!({ "title": "Mine" }))
        .await
        .expect_error(403);
}

#[tokio::test]
async fn health_needs_no_token() {
    let app = TestApp::start().await;
    let res = app
        .call(Method::GET, "/healthz", None, None)
        .await
        .expect(200);
    assert_eq!(res["status"], "ok");
}

/// Stored values are decoded strictly: corrupt JSON or a value outside a closed set is an
/// internal error (logged, answered with the generic message), never a silent default.
#[tokio::test]
async fn corrupt_stored_values_are_errors_not_defaults() {
    // No access cache: the organization row is read from the database on every request.
    let app = TestApp::start_with(|c| c.access_cache_ms = 0).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let pool = app.state.db.pool();
    sqlx::query("UPDATE revisions SET parents = 'not json' WHERE space_id = $1")
        .bind(&space)
        .execute(pool)
        .await
        .unwrap();
    let message = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect_error(500);
    assert!(message.contains("Internal error"), "{message}");
    sqlx::query("UPDATE spaces SET visibility = 'secret' WHERE id = $1")
        .bind(&space)
        .execute(pool)
        .await
        .unwrap();
    app.get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect_error(500);
    sqlx::query("UPDATE organizations SET email_domains = '{' WHERE id = $1")
        .bind(&org)
        .execute(pool)
        .await
        .unwrap();
    app.get(&alice, &format!("/v1/orgs/{org}"))
        .await
        .expect_error(500);
}

#[tokio::test]
async fn every_answer_carries_its_request_id() {
    let app = TestApp::start().await;
    let client = reqwest::Client::new();
    for path in ["/v1/user", "/v1/no-such-thing", "/healthz"] {
        let res = client
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        let id = res.headers().get("x-request-id").expect("a request id");
        assert_eq!(id.len(), 36, "{path}: {id:?}");
    }
    let res = client
        .get(format!("{}/v1/user", app.base))
        .header("x-request-id", "from-the-proxy")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "from-the-proxy");
}
