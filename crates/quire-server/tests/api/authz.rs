//! The authorization matrix: each persona × each space and collection operation, with the
//! expected answer, checked through HTTP.
//!
//! The space under test lives in a collection. Personas: org admin, creator, editor and
//! reader (organization roles), a guest with no grant, an outsider, a guest granted `edit`
//! on the space through a team, and a guest granted `edit` on the parent collection.
//! These are the ways a grant reaches a user; `authz_matrix.rs` holds the matrix of every
//! operation of the route table against the organization roles.

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

struct World {
    org: String,
    coll: String,
    space: String,
}

async fn world(app: &TestApp) -> (World, Vec<(&'static str, Persona)>) {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let coll = app.collection(&admin, &org, "Docs", None).await;
    let space = app.space(&admin, &org, "Guide", Some(&coll)).await;
    let mut people = vec![("admin", admin.clone())];
    for (name, role) in [
        ("creator", json!("create")),
        ("editor", json!("edit")),
        ("reader", json!("read")),
        ("guest", json!(null)),
    ] {
        let p = app.persona(name).await;
        app.add_member(&admin, &org, &p, role).await;
        people.push((name, p));
    }
    let outsider = app.persona("outsider").await;
    people.push(("outsider", outsider));
    let team_editor = app.persona("teamed").await;
    app.add_member(&admin, &org, &team_editor, json!(null))
        .await;
    let team = app
        .put(
            &admin,
            &format!("/v1/orgs/{org}/teams"),
            json!({ "title": "Writers", "members": [team_editor.id] }),
        )
        .await
        .expect(201);
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/permissions"),
        json!({ "role": "edit", "teams": [team["id"]] }),
    )
    .await
    .expect(204);
    people.push(("team-granted", team_editor));
    let coll_editor = app.persona("inherited").await;
    app.add_member(&admin, &org, &coll_editor, json!(null))
        .await;
    app.post(
        &admin,
        &format!("/v1/collections/{coll}/permissions"),
        json!({ "role": "edit", "users": [coll_editor.id] }),
    )
    .await
    .expect(204);
    people.push(("collection-inherited", coll_editor));
    (World { org, coll, space }, people)
}

/// `(operation, method, path, body)`; paths use `{org}`, `{coll}`, `{space}`.
fn operations() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    vec![
        ("getSpaceById", "GET", "/v1/spaces/{space}", Value::Null),
        (
            "updateSpaceById:title",
            "PATCH",
            "/v1/spaces/{space}",
            json!({ "title": "Renamed" }),
        ),
        (
            "updateSpaceById:defaultLevel",
            "PATCH",
            "/v1/spaces/{space}",
            json!({ "defaultLevel": "inherit" }),
        ),
        (
            "listUserPermissionsInSpace",
            "GET",
            "/v1/spaces/{space}/permissions/users",
            Value::Null,
        ),
        (
            "listPermissionsAggregateInSpace",
            "GET",
            "/v1/spaces/{space}/permissions/aggregate",
            Value::Null,
        ),
        (
            "inviteToSpace",
            "POST",
            "/v1/spaces/{space}/permissions",
            json!({ "role": "read", "teams": [] , "users": ["{admin}"] }),
        ),
        (
            "duplicateSpace",
            "POST",
            "/v1/spaces/{space}/duplicate",
            json!({}),
        ),
        (
            "moveSpace",
            "POST",
            "/v1/spaces/{space}/move",
            json!({ "parent": "{coll}" }),
        ),
        (
            "getCollectionById",
            "GET",
            "/v1/collections/{coll}",
            Value::Null,
        ),
        (
            "listSpacesInCollectionById",
            "GET",
            "/v1/collections/{coll}/spaces",
            Value::Null,
        ),
        (
            "updateCollectionById",
            "PATCH",
            "/v1/collections/{coll}",
            json!({ "title": "Docs" }),
        ),
        (
            "createSpace:root",
            "POST",
            "/v1/orgs/{org}/spaces",
            json!({ "title": "New" }),
        ),
        (
            "createSpace:inCollection",
            "POST",
            "/v1/orgs/{org}/spaces",
            json!({ "title": "New", "parent": "{coll}" }),
        ),
        (
            "createCollection",
            "POST",
            "/v1/orgs/{org}/collections",
            json!({ "title": "New" }),
        ),
    ]
}

/// Expected status per persona, in the order of `world`'s personas:
/// admin, creator, editor, reader, guest, outsider, team-granted, collection-inherited.
fn expected(op: &str) -> [u16; 8] {
    match op {
        "getSpaceById" => [200, 200, 200, 200, 404, 404, 200, 200],
        "updateSpaceById:title" => [200, 200, 200, 403, 404, 404, 200, 200],
        "updateSpaceById:defaultLevel" => [200, 403, 403, 403, 404, 404, 403, 403],
        // Guests (the last two personas) never list people, whatever their grants.
        "listUserPermissionsInSpace" => [200, 200, 200, 200, 404, 404, 403, 403],
        "listPermissionsAggregateInSpace" => [200, 200, 200, 200, 404, 404, 403, 403],
        "inviteToSpace" => [204, 403, 403, 403, 404, 404, 403, 403],
        "duplicateSpace" => [201, 201, 403, 403, 404, 404, 403, 403],
        "moveSpace" => [200, 403, 403, 403, 404, 404, 403, 403],
        "getCollectionById" => [200, 200, 200, 200, 404, 404, 404, 200],
        "listSpacesInCollectionById" => [200, 200, 200, 200, 404, 404, 404, 200],
        "updateCollectionById" => [200, 403, 403, 403, 404, 404, 404, 403],
        "createSpace:root" => [201, 201, 403, 403, 403, 404, 403, 403],
        "createSpace:inCollection" => [201, 201, 403, 403, 400, 404, 400, 403],
        "createCollection" => [201, 201, 403, 403, 403, 404, 403, 403],
        other => panic!("no expectation for {other}"),
    }
}

#[tokio::test]
async fn authorization_matrix() {
    let app = TestApp::start().await;
    let (w, people) = world(&app).await;
    let admin_id = people[0].1.id.clone();
    let mut failures = Vec::new();
    for (op, method, path, body) in operations() {
        let fill = |s: &str| {
            s.replace("{org}", &w.org)
                .replace("{coll}", &w.coll)
                .replace("{space}", &w.space)
                .replace("{admin}", &admin_id)
        };
        let path = fill(path);
        let body = if body.is_null() {
            None
        } else {
            Some(serde_json::from_str(&fill(&body.to_string())).unwrap())
        };
        for ((who, persona), want) in people.iter().zip(expected(op)) {
            let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            let res = app
                .call(method, &path, Some(&persona.token), body.clone())
                .await;
            if res.status != want {
                failures.push(format!(
                    "{op} as {who}: expected {want}, got {} {}",
                    res.status, res.body
                ));
            } else if want >= 400 {
                assert_eq!(res.body["error"]["code"], json!(want));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "authorization mismatches:\n{}",
        failures.join("\n")
    );
}

#[tokio::test]
async fn permissions_booleans_match_what_the_server_allows() {
    let app = TestApp::start().await;
    let (w, people) = world(&app).await;
    for (who, persona) in &people {
        let res = app.get(persona, &format!("/v1/spaces/{}", w.space)).await;
        if res.status != 200 {
            continue;
        }
        let perms = res.body["permissions"].clone();
        // `edit` says whether a title change is allowed; `admin` whether settings are.
        let title = app
            .patch(
                persona,
                &format!("/v1/spaces/{}", w.space),
                json!({ "title": "Check" }),
            )
            .await
            .status;
        assert_eq!(
            perms["edit"] == json!(true),
            title == 200,
            "{who}: edit={} but PATCH title answered {title}",
            perms["edit"]
        );
        let level = app
            .patch(
                persona,
                &format!("/v1/spaces/{}", w.space),
                json!({ "defaultLevel": "inherit" }),
            )
            .await
            .status;
        assert_eq!(
            perms["admin"] == json!(true),
            level == 200,
            "{who}: admin={} but PATCH defaultLevel answered {level}",
            perms["admin"]
        );
    }
}

#[tokio::test]
async fn permission_endpoints_grant_list_update_and_remove() {
    let app = TestApp::start().await;
    let (w, people) = world(&app).await;
    let admin = &people[0].1;
    let guest = &people[4].1;
    let base = format!("/v1/spaces/{}/permissions", w.space);
    app.get(guest, &format!("/v1/spaces/{}", w.space))
        .await
        .expect_error(404);
    app.post(
        admin,
        &base,
        json!({ "role": "comment", "users": [guest.id] }),
    )
    .await
    .expect(204);
    let users = app.get(admin, &format!("{base}/users")).await.expect(200);
    assert_eq!(users["count"], 1);
    assert_eq!(users["items"][0]["permission"], "comment");
    assert_eq!(users["items"][0]["user"]["id"], guest.id.as_str());
    let seen = app
        .get(guest, &format!("/v1/spaces/{}", w.space))
        .await
        .expect(200);
    assert_eq!(seen["permissions"]["comment"], true);
    assert_eq!(seen["permissions"]["edit"], false);
    app.patch(
        admin,
        &format!("{base}/users/{}", guest.id),
        json!({ "role": "edit" }),
    )
    .await
    .expect(204);
    assert_eq!(
        app.get(guest, &format!("/v1/spaces/{}", w.space))
            .await
            .expect(200)["permissions"]["edit"],
        true
    );
    let agg = app
        .get(admin, &format!("{base}/aggregate?role=edit"))
        .await
        .expect(200);
    let agg_ids: Vec<&str> = agg["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["user"]["id"].as_str().unwrap())
        .collect();
    assert!(agg_ids.contains(&guest.id.as_str()), "{agg}");
    let teams = app.get(admin, &format!("{base}/teams")).await.expect(200);
    assert_eq!(teams["count"], 1);
    assert_eq!(teams["items"][0]["permission"], "edit");
    assert_eq!(teams["items"][0]["team"]["spaces"], 1);
    app.delete(admin, &format!("{base}/users/{}", guest.id))
        .await
        .expect(204);
    app.delete(admin, &format!("{base}/users/{}", guest.id))
        .await
        .expect(204);
    app.get(guest, &format!("/v1/spaces/{}", w.space))
        .await
        .expect_error(404);
    app.post(
        admin,
        &base,
        json!({ "role": "read", "users": ["stranger"] }),
    )
    .await
    .expect_error(404);
    app.post(admin, &base, json!({ "users": [guest.id] }))
        .await
        .expect_error(400);
    app.patch(
        admin,
        &format!("{base}/users/nobody"),
        json!({ "role": "read" }),
    )
    .await
    .expect_error(404);
}

#[tokio::test]
async fn grants_leave_with_their_member_or_team() {
    let app = TestApp::start().await;
    let (w, people) = world(&app).await;
    let admin = &people[0].1;
    let guest = &people[4].1;
    let base = format!("/v1/spaces/{}/permissions", w.space);
    app.post(admin, &base, json!({ "role": "edit", "users": [guest.id] }))
        .await
        .expect(204);
    app.delete(admin, &format!("/v1/orgs/{}/members/{}", w.org, guest.id))
        .await
        .expect(204);
    let users = app.get(admin, &format!("{base}/users")).await.expect(200);
    assert_eq!(users["count"], 0, "{users}");
    app.add_member(admin, &w.org, guest, json!(null)).await;
    app.get(guest, &format!("/v1/spaces/{}", w.space))
        .await
        .expect_error(404);

    let teams = app.get(admin, &format!("{base}/teams")).await.expect(200);
    let team = teams["items"][0]["team"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.delete(admin, &format!("/v1/orgs/{}/teams/{team}", w.org))
        .await
        .expect(204);
    let teams = app.get(admin, &format!("{base}/teams")).await.expect(200);
    assert_eq!(
        (teams["count"].clone(), teams["items"].clone()),
        (json!(0), json!([]))
    );
}
