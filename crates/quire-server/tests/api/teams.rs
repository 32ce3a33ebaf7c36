//! Teams and team members.

use serde_json::{json, Value};

use crate::harness::TestApp;

fn member_ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["organization"]["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn teams_are_created_listed_renamed_and_deleted() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let teams = format!("/v1/orgs/{org}/teams");

    let team = app
        .put(
            &alice,
            &teams,
            json!({ "title": "Writers", "members": [bob.id] }),
        )
        .await
        .expect(201);
    assert_eq!(team["object"], "team");
    assert_eq!(team["members"], 1);
    assert_eq!(team["permissions"]["admin"], true);
    let id = team["id"].as_str().unwrap().to_string();
    app.put(&alice, &teams, json!({ "title": "Designers" }))
        .await
        .expect(201);

    for bad in [
        json!({ "title": "" }),
        json!({ "title": "x".repeat(65) }),
        json!({}),
    ] {
        let msg = app.put(&alice, &teams, bad).await.expect_error(400);
        assert!(msg.contains("title"), "{msg}");
    }
    let msg = app
        .put(
            &alice,
            &teams,
            json!({ "title": "T", "members": ["stranger"] }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("members[0]"), "{msg}");
    app.put(&bob, &teams, json!({ "title": "Mine" }))
        .await
        .expect_error(403);

    let list = app.get(&bob, &teams).await.expect(200);
    assert_eq!(list["count"], 2);
    assert_eq!(list["items"][0]["permissions"]["admin"], false);
    let filtered = app
        .get(&bob, &format!("{teams}?title=WRIT"))
        .await
        .expect(200);
    assert_eq!(filtered["count"], 1);
    assert_eq!(filtered["items"][0]["id"], id.as_str());

    let got = app.get(&bob, &format!("{teams}/{id}")).await.expect(200);
    assert_eq!(got["title"], "Writers");
    app.patch(&bob, &format!("{teams}/{id}"), json!({ "title": "Nope" }))
        .await
        .expect_error(403);
    let renamed = app
        .patch(
            &alice,
            &format!("{teams}/{id}"),
            json!({ "title": "Authors" }),
        )
        .await
        .expect(200);
    assert_eq!(renamed["title"], "Authors");
    app.patch(&alice, &format!("{teams}/{id}"), json!({}))
        .await
        .expect_error(400);

    app.delete(&bob, &format!("{teams}/{id}"))
        .await
        .expect_error(403);
    app.delete(&alice, &format!("{teams}/{id}"))
        .await
        .expect(204);
    app.delete(&alice, &format!("{teams}/{id}"))
        .await
        .expect(204);
    app.get(&alice, &format!("{teams}/{id}"))
        .await
        .expect_error(404);
}

#[tokio::test]
async fn owners_manage_their_team_and_the_owner_filter_finds_it() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    app.add_member(&alice, &org, &carol, json!("read")).await;
    let teams = format!("/v1/orgs/{org}/teams");
    let id = app
        .put(&alice, &teams, json!({ "title": "Writers" }))
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.put(&alice, &teams, json!({ "title": "Other" }))
        .await
        .expect(201);
    let members = format!("{teams}/{id}/members");

    app.put(
        &alice,
        &format!("{members}/{}", bob.id),
        json!({ "role": "owner" }),
    )
    .await
    .expect(204);
    // Bob now manages the team: renames it and adds Carol (by e-mail).
    app.patch(
        &bob,
        &format!("{teams}/{id}"),
        json!({ "title": "Authors" }),
    )
    .await
    .expect(200);
    app.put(&bob, &members, json!({ "add": [carol.email] }))
        .await
        .expect(204);
    let list = app.get(&bob, &members).await.expect(200);
    assert_eq!(list["count"], 2);
    assert_eq!(member_ids(&list).len(), 2);
    let carol_item = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["organization"]["id"] == carol.id.as_str())
        .unwrap();
    assert_eq!(carol_item["team"]["role"], "member");
    assert_eq!(carol_item["permissions"]["view"], true);
    assert_eq!(carol_item["organization"]["object"], "member");
    // Carol, a plain member, cannot manage it.
    app.put(&carol, &members, json!({ "remove": [bob.id] }))
        .await
        .expect_error(403);

    let owned = app
        .get(&alice, &format!("{teams}?owner={}", bob.id))
        .await
        .expect(200);
    assert_eq!(owned["count"], 1);
    assert_eq!(owned["items"][0]["id"], id.as_str());
    let by_admin = app
        .get(&alice, &format!("{teams}?owner={}", alice.id))
        .await
        .expect(200);
    assert_eq!(by_admin["count"], 2, "admins can manage every team");
    let none = app
        .get(&alice, &format!("{teams}?owner={}", carol.id))
        .await
        .expect(200);
    assert_eq!(none["count"], 0);
}

#[tokio::test]
async fn team_membership_batch_add_wins_over_nothing_remove_wins_over_add() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    let dave = app.persona("dave").await;
    let org = app.org(&alice, "Acme").await;
    for p in [&bob, &carol, &dave] {
        app.add_member(&alice, &org, p, json!("read")).await;
    }
    let teams = format!("/v1/orgs/{org}/teams");
    let id = app
        .put(&alice, &teams, json!({ "title": "Writers" }))
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let members = format!("{teams}/{id}/members");

    app.put(
        &alice,
        &members,
        json!({
            "add": [bob.id, carol.email, dave.id],
            "remove": [dave.email],
            "memberships": { carol.id.clone(): { "role": "owner" } }
        }),
    )
    .await
    .expect(204);
    let list = app.get(&alice, &members).await.expect(200);
    let mut expected = vec![bob.id.clone(), carol.id.clone()];
    expected.sort();
    assert_eq!(
        member_ids(&list),
        expected,
        "dave was both added and removed: removed"
    );
    let carol_item = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["organization"]["id"] == carol.id.as_str())
        .unwrap();
    assert_eq!(carol_item["team"]["role"], "owner");

    // A failing entry rejects the whole batch.
    let msg = app
        .put(
            &alice,
            &members,
            json!({ "add": [dave.id, "ghost@example.com"] }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("add[1]"), "{msg}");
    assert_eq!(app.get(&alice, &members).await.expect(200)["count"], 2);

    app.delete(&alice, &format!("{members}/{}", bob.id))
        .await
        .expect(204);
    app.delete(&alice, &format!("{members}/{}", bob.id))
        .await
        .expect(204);
    app.put(&alice, &format!("{members}/{}", bob.id), json!({}))
        .await
        .expect(204);
    app.put(
        &alice,
        &format!("{members}/{}", bob.id),
        json!({ "role": "chief" }),
    )
    .await
    .expect_error(400);
    assert_eq!(
        app.get(&alice, &format!("{teams}/{id}")).await.expect(200)["members"],
        2
    );

    // Leaving the organization leaves its teams.
    app.delete(&alice, &format!("/v1/orgs/{org}/members/{}", carol.id))
        .await
        .expect(204);
    assert_eq!(
        app.get(&alice, &format!("{teams}/{id}")).await.expect(200)["members"],
        1
    );
}
