//! Organizations.

use serde_json::json;

use crate::harness::TestApp;

#[tokio::test]
async fn creating_an_org_makes_the_creator_admin() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app
        .post(
            &alice,
            "/v1/orgs",
            json!({ "title": "Acme", "emailDomains": ["Example.COM"] }),
        )
        .await
        .expect(201);
    assert_eq!(org["object"], "organization");
    assert_eq!(org["title"], "Acme");
    assert_eq!(org["emailDomains"], json!(["example.com"]));
    assert_eq!(org["permissions"]["admin"], true);
    let id = org["id"].as_str().unwrap();
    let member = app
        .get(&alice, &format!("/v1/orgs/{id}/members/{}", alice.id))
        .await
        .expect(200);
    assert_eq!(member["role"], "admin");
    let listed = app.get(&alice, "/v1/orgs").await.expect(200);
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["items"][0]["id"], id);
    let got = app.get(&alice, &format!("/v1/orgs/{id}")).await.expect(200);
    assert_eq!(got, org);

    app.post(&alice, "/v1/orgs", json!({ "title": "A" }))
        .await
        .expect_error(400);
    app.post(
        &alice,
        "/v1/orgs",
        json!({ "title": "Ok", "emailDomains": ["not a domain"] }),
    )
    .await
    .expect_error(400);
}

#[tokio::test]
async fn admins_update_every_org_field() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let path = format!("/v1/orgs/{org}");
    let updated = app
        .patch(
            &alice,
            &path,
            json!({
                "title": "Acme Docs",
                "hostname": "acme-docs",
                "emailDomains": ["example.com", "EXAMPLE.com"],
                "defaultRole": "edit",
                "defaultContent": { "type": "site", "site": "site_1" },
                "logo": "https://acme.test/logo.png",
                "sso": true,
                "ai": true,
                "inviteLinks": false
            }),
        )
        .await
        .expect(200);
    assert_eq!(updated["title"], "Acme Docs");
    assert_eq!(updated["hostname"], "acme-docs");
    assert_eq!(updated["defaultRole"], "edit");
    assert_eq!(
        updated["defaultContent"],
        json!({ "type": "site", "site": "site_1" })
    );
    assert_eq!(updated["urls"]["logo"], "https://acme.test/logo.png");
    assert_eq!(
        (
            updated["sso"].clone(),
            updated["ai"].clone(),
            updated["inviteLinks"].clone()
        ),
        (json!(true), json!(true), json!(false))
    );
    assert_eq!(app.get(&alice, &path).await.expect(200), updated);

    // null clears nullable fields; defaultRole null means guests by default.
    let cleared = app
        .patch(
            &alice,
            &path,
            json!({ "defaultRole": null, "logo": null, "defaultContent": null }),
        )
        .await
        .expect(200);
    assert_eq!(cleared["defaultRole"], json!(null));
    assert!(cleared["urls"].get("logo").is_none());
    assert!(cleared.get("defaultContent").is_none());

    // Validation names the field.
    for (body, field) in [
        (json!({ "title": "" }), "title"),
        (json!({ "hostname": "ab" }), "hostname"),
        (json!({ "hostname": "Has Space" }), "hostname"),
        (json!({ "logo": "ftp://x" }), "logo"),
        (json!({ "sso": "yes" }), "sso"),
        (json!({ "emailDomains": "acme.test" }), "emailDomains"),
    ] {
        let msg = app
            .patch(&alice, &path, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }

    // Hostnames are unique.
    let other = app.org(&alice, "Other").await;
    let message = app
        .patch(
            &alice,
            &format!("/v1/orgs/{other}"),
            json!({ "hostname": "acme-docs" }),
        )
        .await
        .expect_error(409);
    assert!(
        message.contains("`hostname`"),
        "the conflict names what exists: {message}"
    );
}

#[tokio::test]
async fn email_domain_lookup_shows_what_the_caller_may_know() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app
        .post(
            &alice,
            "/v1/orgs",
            json!({ "title": "Example", "emailDomains": ["example.com"] }),
        )
        .await
        .expect(201);
    let bob = app.persona("bob").await; // bob@example.com: same domain, not a member
    let found = app
        .get(&bob, "/v1/email-domains/example.com/orgs")
        .await
        .expect(200);
    assert_eq!(found["organizations"][0]["id"], org["id"]);
    let token = quire_server::admin::create_token(&app.config, "carol@elsewhere.test", None)
        .await
        .unwrap();
    let carol = crate::harness::Persona {
        id: String::new(),
        email: "carol@elsewhere.test".into(),
        token,
    };
    let none = app
        .get(&carol, "/v1/email-domains/example.com/orgs")
        .await
        .expect(200);
    assert_eq!(none["organizations"], json!([]));
}

/// `PATCH ORG` writes only the fields it names: a node that read the organization before
/// another node renamed it, then changes another field, leaves the new name as it is.
#[tokio::test]
async fn a_patch_writes_only_the_fields_it_names() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let path = format!("/v1/orgs/{org}");
    other.get(&alice, &path).await.expect(200);
    app.patch(&alice, &path, json!({ "title": "Acme Corp" }))
        .await
        .expect(200);
    let patched = other
        .patch(&alice, &path, json!({ "ai": false }))
        .await
        .expect(200);
    assert_eq!(
        patched["title"], "Acme Corp",
        "the answer shows the row as written"
    );
    let now = app.get(&alice, &path).await.expect(200);
    assert_eq!(
        (now["title"].as_str(), now["ai"].as_bool()),
        (Some("Acme Corp"), Some(false))
    );

    // The store's write names only the columns it is given: a column another writer set
    // after the caller read the row stays as that writer left it.
    sqlx::query("UPDATE organizations SET title = 'Set elsewhere' WHERE id = $1")
        .bind(&org)
        .execute(app.state.db.pool())
        .await
        .unwrap();
    let mut tx = app.state.db.begin().await.unwrap();
    let patch = quire_server::store::orgs::OrgPatch {
        ai: Some(true),
        ..Default::default()
    };
    assert!(quire_server::store::orgs::patch(&mut tx, &org, &patch, 1)
        .await
        .unwrap());
    let row = quire_server::store::orgs::get_tx(&mut tx, &org)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.title.as_str(), row.ai), ("Set elsewhere", 1));
}
