//! Invitations by e-mail and invite links.

use reqwest::Method;
use serde_json::json;

use crate::harness::TestApp;

#[tokio::test]
async fn existing_users_join_at_once_and_unknown_emails_on_first_authentication() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    let res = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/invites"),
            json!({ "emails": [bob.email, "New.Person@Example.com"], "role": "edit" }),
        )
        .await
        .expect(200);
    assert_eq!(res["invited"], 2);
    assert_eq!(res["users"], json!([bob.id]));
    let m = app
        .get(&alice, &format!("/v1/orgs/{org}/members/{}", bob.id))
        .await
        .expect(200);
    assert_eq!(m["role"], "edit");
    assert_eq!(
        app.get(&alice, &format!("/v1/orgs/{org}/members"))
            .await
            .expect(200)["count"],
        2
    );

    // The pending address becomes a member on that user's first authenticated request.
    let token = quire_server::admin::create_token(&app.config, "new.person@example.com", None)
        .await
        .unwrap();
    let me = app
        .call(Method::GET, "/v1/user", Some(&token), None)
        .await
        .expect(200);
    let orgs = app
        .call(Method::GET, "/v1/orgs", Some(&token), None)
        .await
        .expect(200);
    assert_eq!(orgs["count"], 1);
    let m = app
        .get(
            &alice,
            &format!("/v1/orgs/{org}/members/{}", me["id"].as_str().unwrap()),
        )
        .await
        .expect(200);
    assert_eq!(m["role"], "edit");

    // Invites without a role use the organization's default role; validation names entries.
    let carol = app.persona("carol").await;
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/invites"),
        json!({ "emails": [carol.email] }),
    )
    .await
    .expect(200);
    assert_eq!(
        app.get(&alice, &format!("/v1/orgs/{org}/members/{}", carol.id))
            .await
            .expect(200)["role"],
        "read"
    );
    let msg = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/invites"),
            json!({ "emails": ["x@y.z", "nope"] }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("emails[1]"), "{msg}");
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/invites"),
        json!({ "emails": [] }),
    )
    .await
    .expect_error(400);
    app.post(
        &bob,
        &format!("/v1/orgs/{org}/invites"),
        json!({ "emails": ["z@y.z"] }),
    )
    .await
    .expect_error(403);
}

#[tokio::test]
async fn invite_links_are_managed_by_admins_and_let_users_join() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    let links = format!("/v1/orgs/{org}/link-invites");
    let link = app
        .post(&alice, &links, json!({ "role": "comment" }))
        .await
        .expect(201);
    assert_eq!(link["object"], "invite");
    assert_eq!(link["role"], "comment");
    let id = link["id"].as_str().unwrap().to_string();
    assert_eq!(app.get(&alice, &links).await.expect(200)["count"], 1);
    assert_eq!(
        app.get(&alice, &format!("{links}/{id}")).await.expect(200),
        link
    );
    let updated = app
        .patch(&alice, &format!("{links}/{id}"), json!({ "role": "edit" }))
        .await
        .expect(200);
    assert_eq!(updated["role"], "edit");
    app.post(&alice, &links, json!({ "role": "wizard" }))
        .await
        .expect_error(400);
    app.post(&alice, &links, json!({ "level": "read", "space": "nope" }))
        .await
        .expect_error(404);

    // Bob, an outsider, joins through the link.
    app.post(&bob, &format!("/v1/orgs/{org}/invites/{id}"), json!({}))
        .await
        .expect(200);
    assert_eq!(
        app.get(&alice, &format!("/v1/orgs/{org}/members/{}", bob.id))
            .await
            .expect(200)["role"],
        "edit"
    );
    app.get(&bob, &links).await.expect_error(403);
    app.post(&bob, &format!("/v1/orgs/{org}/invites/unknown"), json!({}))
        .await
        .expect_error(404);

    app.delete(&alice, &format!("{links}/{id}"))
        .await
        .expect(204);
    app.delete(&alice, &format!("{links}/{id}"))
        .await
        .expect(204);
    app.get(&alice, &format!("{links}/{id}"))
        .await
        .expect_error(404);

    // Disabled invite links cannot be created.
    app.patch(
        &alice,
        &format!("/v1/orgs/{org}"),
        json!({ "inviteLinks": false }),
    )
    .await
    .expect(200);
    let msg = app
        .post(&alice, &links, json!({ "role": "read" }))
        .await
        .expect_error(400);
    assert!(msg.contains("inviteLinks"), "{msg}");
}
