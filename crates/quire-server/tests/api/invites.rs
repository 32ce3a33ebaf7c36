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

/// A client that does not follow redirects, as a browser's forms are checked.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A session of persona `name` in the app: its cookie.
async fn signed_in(app: &TestApp, name: &str) -> String {
    let email = format!("{name}@example.com");
    quire_server::admin::set_password(&app.config, &email, Some(name), "a fine passphrase", false)
        .await
        .unwrap();
    let res = browser()
        .post(format!("{}/signin", app.base))
        .header("origin", &app.base)
        .form(&[("email", email.as_str()), ("password", "a fine passphrase")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    let cookie = res.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_string()
}

/// A GET in the app (with a session's cookie, if any): status and page.
async fn open(app: &TestApp, cookie: Option<&str>, path: &str) -> (u16, String) {
    let mut req = browser().get(format!("{}{path}", app.base));
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// A form posted in the app from its own pages: status and page.
async fn submit(
    app: &TestApp,
    cookie: Option<&str>,
    path: &str,
    form: &[(&str, &str)],
) -> (u16, String) {
    let mut req = browser()
        .post(format!("{}{path}", app.base))
        .header("origin", &app.base)
        .form(form);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// Invites `email` from the organization's members screen; the invitation's link (a path).
async fn invite_link(app: &TestApp, admin: &str, org: &str, email: &str) -> String {
    let members = format!("/o/{org}/members");
    let (_, page) = open(app, Some(admin), &members).await;
    let at = page.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = page[at..at + page[at..].find('"').unwrap()].to_string();
    let form = [
        ("csrf", csrf.as_str()),
        ("op", "invite"),
        ("emails", email),
        ("role", "edit"),
    ];
    let (status, notice) = submit(app, Some(admin), &members, &form).await;
    assert_eq!(status, 200, "{notice}");
    let at = notice.find("/join/").expect("an invitation link");
    notice[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '/')
        .collect()
}

const DAY_MS: i64 = 24 * 3600 * 1000;

#[tokio::test]
async fn an_invitation_by_address_expires_and_then_lets_no_one_in() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let admin = signed_in(&app, "alice").await;
    let link = invite_link(&app, &admin, &org, "dora@example.com").await;
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/invites"),
        json!({ "emails": ["erin@example.com"], "role": "edit" }),
    )
    .await
    .expect(200);

    // Valid for fourteen days (`--invite-ttl-ms`).
    app.clock.advance_ms(14 * DAY_MS - 60_000);
    let (status, page) = open(&app, None, &link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("dora@example.com"), "{page}");

    // Then the link says it expired, and lets no one in.
    app.clock.advance_ms(120_000);
    let (status, page) = open(&app, None, &link).await;
    assert_eq!(status, 410, "{page}");
    assert!(page.contains("This invitation has expired"), "{page}");
    let form = [("name", "Dora"), ("password", "a long walk home")];
    let (status, page) = submit(&app, None, &link, &form).await;
    assert_eq!(status, 410, "{page}");
    assert!(page.contains("This invitation has expired"), "{page}");
    let signin = [
        ("email", "dora@example.com"),
        ("password", "a long walk home"),
    ];
    let (status, _) = submit(&app, None, "/signin", &signin).await;
    assert_ne!(status, 303, "no account was made");
    // Nor does the address's first authentication let its person in.
    let token = quire_server::admin::create_token(&app.config, "erin@example.com", None)
        .await
        .unwrap();
    let orgs = app
        .call(Method::GET, "/v1/orgs", Some(&token), None)
        .await
        .expect(200);
    assert_eq!(orgs["count"], 0, "{orgs}");
    let members = app
        .get(&alice, &format!("/v1/orgs/{org}/members"))
        .await
        .expect(200);
    assert_eq!(members["count"], 1, "{members}");

    // Its admins see it expired (signed in again: days passed); a week later the durable
    // job deletes it, and its link leads nowhere.
    let admin = signed_in(&app, "alice").await;
    let screen = format!("/o/{org}/members");
    let (_, page) = open(&app, Some(&admin), &screen).await;
    assert!(page.contains("dora@example.com"), "{page}");
    assert!(page.contains("· expired "), "{page}");
    quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    let (_, page) = open(&app, Some(&admin), &screen).await;
    assert!(page.contains("dora@example.com"), "kept a week: {page}");
    app.clock.advance_ms(7 * DAY_MS);
    quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    let admin = signed_in(&app, "alice").await;
    let (_, page) = open(&app, Some(&admin), &screen).await;
    assert!(!page.contains("dora@example.com"), "pruned: {page}");
    let (status, page) = open(&app, None, &link).await;
    assert_eq!(status, 404, "{page}");

    // Invited again, the address has a new link, valid again.
    let again = invite_link(&app, &admin, &org, "dora@example.com").await;
    let (status, page) = submit(&app, None, &again, &form).await;
    assert_eq!(status, 303, "{page}");
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/members?search=dora"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["role"], "edit", "{listed}");
}

#[tokio::test]
async fn how_long_an_invitation_lasts_is_the_operator_s_choice() {
    let app = TestApp::start_with(|c| c.invite_ttl_ms = 60_000).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let admin = signed_in(&app, "alice").await;
    let link = invite_link(&app, &admin, &org, "dora@example.com").await;
    assert_eq!(open(&app, None, &link).await.0, 200);
    // A new invitation of the address starts its minute again.
    app.clock.advance_ms(45_000);
    let link = invite_link(&app, &admin, &org, "dora@example.com").await;
    app.clock.advance_ms(45_000);
    assert_eq!(open(&app, None, &link).await.0, 200);
    app.clock.advance_ms(16_000);
    let (status, page) = open(&app, None, &link).await;
    assert_eq!(status, 410, "{page}");
    assert!(page.contains("expired"), "{page}");
}
