//! Organization members.

use serde_json::{json, Value};

use crate::harness::TestApp;

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn members_list_filters_sorts_and_orders() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    let org = app.org(&alice, "Acme").await;
    app.clock.advance_ms(10);
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    app.clock.advance_ms(10);
    app.add_member(&alice, &org, &carol, json!(null)).await;
    let base = format!("/v1/orgs/{org}/members");

    let all = app.get(&alice, &base).await.expect(200);
    assert_eq!(all["count"], 3);
    assert_eq!(
        ids(&all),
        vec![carol.id.clone(), bob.id.clone(), alice.id.clone()],
        "default: joinedAt desc"
    );
    let asc = app
        .get(&alice, &format!("{base}?order=asc"))
        .await
        .expect(200);
    assert_eq!(
        ids(&asc),
        vec![alice.id.clone(), bob.id.clone(), carol.id.clone()]
    );

    let guests = app
        .get(&alice, &format!("{base}?role=guest"))
        .await
        .expect(200);
    assert_eq!(ids(&guests), vec![carol.id.clone()]);
    assert_eq!(guests["items"][0]["role"], json!(null));
    let editors = app
        .get(&alice, &format!("{base}?role=edit"))
        .await
        .expect(200);
    assert_eq!(ids(&editors), vec![bob.id.clone()]);

    let search = app
        .get(&alice, &format!("{base}?search=BO"))
        .await
        .expect(200);
    assert_eq!(ids(&search), vec![bob.id.clone()]);
    let by_mail = app
        .get(&alice, &format!("{base}?search=carol%40example"))
        .await
        .expect(200);
    assert_eq!(ids(&by_mail), vec![carol.id.clone()]);
    let literal = app
        .get(&alice, &format!("{base}?search=%25"))
        .await
        .expect(200);
    assert_eq!(literal["count"], 0, "LIKE wildcards are matched literally");

    // lastSeenAt lists only members who have been seen.
    let seen = app
        .get(&alice, &format!("{base}?sort=lastSeenAt"))
        .await
        .expect(200);
    assert_eq!(seen["count"], 0);
    app.post(&bob, &format!("/v1/orgs/{org}/ping"), json!({}))
        .await
        .expect(200);
    let seen = app
        .get(&alice, &format!("{base}?sort=lastSeenAt"))
        .await
        .expect(200);
    assert_eq!(ids(&seen), vec![bob.id.clone()]);
    assert!(seen["items"][0]["lastSeenAt"].is_string());

    // Guests cannot list members.
    app.get(&carol, &base).await.expect_error(403);
}

#[tokio::test]
async fn roles_change_and_the_last_admin_stays() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let bob_path = format!("/v1/orgs/{org}/members/{}", bob.id);
    let m = app
        .patch(&alice, &bob_path, json!({ "role": "create" }))
        .await
        .expect(200);
    assert_eq!(m["role"], "create");
    assert_eq!(m["object"], "member");
    assert_eq!(m["user"]["id"], bob.id.as_str());
    let m = app
        .patch(&alice, &bob_path, json!({ "role": null }))
        .await
        .expect(200);
    assert_eq!(m["role"], json!(null));
    app.patch(&alice, &bob_path, json!({ "role": "boss" }))
        .await
        .expect_error(400);
    // Only admins change roles.
    app.patch(&alice, &bob_path, json!({ "role": "read" }))
        .await
        .expect(200);
    app.patch(
        &bob,
        &format!("/v1/orgs/{org}/members/{}", alice.id),
        json!({ "role": "read" }),
    )
    .await
    .expect_error(403);
    // The last admin can be neither demoted nor removed.
    let alice_path = format!("/v1/orgs/{org}/members/{}", alice.id);
    app.patch(&alice, &alice_path, json!({ "role": "read" }))
        .await
        .expect_error(400);
    app.delete(&alice, &alice_path).await.expect_error(400);
    app.patch(
        &alice,
        &format!("/v1/orgs/{org}/members/nobody"),
        json!({ "role": "read" }),
    )
    .await
    .expect_error(404);
}

#[tokio::test]
async fn members_are_removed_by_admins_or_leave_themselves() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    app.add_member(&alice, &org, &carol, json!("edit")).await;
    app.delete(&bob, &format!("/v1/orgs/{org}/members/{}", carol.id))
        .await
        .expect_error(403);
    app.delete(&bob, &format!("/v1/orgs/{org}/members/{}", bob.id))
        .await
        .expect(204);
    app.get(&bob, &format!("/v1/orgs/{org}"))
        .await
        .expect_error(404);
    app.delete(&alice, &format!("/v1/orgs/{org}/members/{}", carol.id))
        .await
        .expect(204);
    app.delete(&alice, &format!("/v1/orgs/{org}/members/{}", carol.id))
        .await
        .expect(204);
    app.get(&alice, &format!("/v1/orgs/{org}/members/{}", carol.id))
        .await
        .expect_error(404);
    assert_eq!(
        app.get(&alice, &format!("/v1/orgs/{org}/members"))
            .await
            .expect(200)["count"],
        1
    );
}

#[tokio::test]
async fn ping_returns_signed_claims_and_sso_marks_members() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let res = app
        .post(&bob, &format!("/v1/orgs/{org}/ping"), json!({}))
        .await
        .expect(200);
    let jwt = res["serviceVisitorClaims"].as_str().unwrap();
    assert_eq!(jwt.split('.').count(), 3);
    let claims: Value =
        serde_json::from_slice(&quire_server::keys::unb64(jwt.split('.').nth(1).unwrap()).unwrap())
            .unwrap();
    assert_eq!(claims["sub"], bob.id.as_str());
    assert_eq!(claims["org"], org.as_str());
    let m = app
        .get(&alice, &format!("/v1/orgs/{org}/members/{}", bob.id))
        .await
        .expect(200);
    assert!(m["lastSeenAt"].is_string());
    assert_eq!(m["sso"], false);

    let m = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/members/{}/sso", bob.id),
            json!({}),
        )
        .await
        .expect(200);
    assert_eq!(m["sso"], true);
    app.post(
        &bob,
        &format!("/v1/orgs/{org}/members/{}/sso", bob.id),
        json!({}),
    )
    .await
    .expect_error(403);
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/members/nobody/sso"),
        json!({}),
    )
    .await
    .expect_error(404);
}

#[tokio::test]
async fn member_spaces_and_teams() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let spaces = app
        .get(&alice, &format!("/v1/orgs/{org}/members/{}/spaces", bob.id))
        .await
        .expect(200);
    assert_eq!(spaces["count"], 0);
    for title in ["Writers", "Reviewers", "Designers"] {
        app.put(
            &alice,
            &format!("/v1/orgs/{org}/teams"),
            json!({ "title": title, "members": [bob.id] }),
        )
        .await
        .expect(201);
    }
    let teams = app
        .get(&alice, &format!("/v1/orgs/{org}/members/{}/teams", bob.id))
        .await
        .expect(200);
    assert_eq!(teams["count"], 3);
    assert_eq!(teams["items"][0]["member"]["role"], "member");
    assert_eq!(teams["items"][0]["team"]["object"], "team");
    let filtered = app
        .get(
            &alice,
            &format!("/v1/orgs/{org}/members/{}/teams?title=RITE", bob.id),
        )
        .await
        .expect(200);
    assert_eq!(filtered["count"], 1);
    assert_eq!(filtered["items"][0]["team"]["title"], "Writers");
    let m = app
        .get(&alice, &format!("/v1/orgs/{org}/members/{}", bob.id))
        .await
        .expect(200);
    assert_eq!(m["teams"], 3);
}
