//! Site redirects through HTTP (their checks, their life, a published site following them)
//! and the people and changes of content: change-request contributors, commenters, and a
//! revision's semantic changes.

use reqwest::Method;
use serde_json::json;

use crate::harness::{id, Persona, TestApp};

struct World {
    admin: Persona,
    editor: Persona,
    reader: Persona,
    org: String,
}

async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let editor = app.persona("editor").await;
    let reader = app.persona("reader").await;
    let org = app.org(&admin, "Acme").await;
    app.add_member(&admin, &org, &editor, json!("edit")).await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    World {
        admin,
        editor,
        reader,
        org,
    }
}

/// A space with the pages Intro and Usage, written through a merged change request.
async fn guide(app: &TestApp, w: &World) -> String {
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let cr = app.open_change_request(&w.admin, &space, "Write").await;
    app.edit_change_request(
        &w.admin,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "title": "Intro", "document": { "markdown": "Welcome." } },
            { "operation": "insert_page", "title": "Usage", "document": { "markdown": "Use it." } }
        ]),
    )
    .await;
    app.merge_change_request(&w.admin, &space, &cr).await;
    space
}

/// A GET that does not follow redirects: status, `Location` and `Cache-Control`.
async fn visit(app: &TestApp, path: &str) -> (u16, Option<String>, Option<String>) {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = client
        .get(format!("{}{path}", app.base))
        .send()
        .await
        .expect("request sent");
    let header = |name| {
        res.headers()
            .get(name)
            .map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_string())
    };
    (
        res.status().as_u16(),
        header(reqwest::header::LOCATION),
        header(reqwest::header::CACHE_CONTROL),
    )
}

#[tokio::test]
async fn site_redirects_are_checked_kept_and_followed() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w).await;
    let usage = app
        .get(&w.admin, &format!("/v1/spaces/{space}/content/path/usage"))
        .await
        .expect(200);
    let usage = id(&usage);
    let sites = format!("/v1/orgs/{}/sites", w.org);
    let site = id(&app
        .post(
            &w.admin,
            &sites,
            json!({ "title": "Docs", "spaces": [space] }),
        )
        .await
        .expect(201));
    let base = format!("{sites}/{site}");
    let site_space = id(&app
        .get(&w.admin, &format!("{base}/site-spaces"))
        .await
        .expect(200)["items"][0]);
    let redirects = format!("{base}/redirects");
    let to_usage = json!({ "kind": "site-page", "siteSpaceId": site_space, "pageId": usage });

    // Checks: each refusal names its field.
    for (body, field) in [
        (
            json!({ "source": "old/usage", "destination": to_usage }),
            "source",
        ),
        (
            json!({ "source": "/old//usage", "destination": to_usage }),
            "source",
        ),
        (
            json!({ "source": "/old/usage/", "destination": to_usage }),
            "source",
        ),
        (
            json!({ "source": "/caf%C", "destination": to_usage }),
            "source",
        ),
        (
            json!({ "source": format!("/{}", "a".repeat(512)), "destination": to_usage }),
            "source",
        ),
        (
            json!({ "source": "/old", "destination": { "kind": "site-space", "siteSpaceId": "nope" } }),
            "destination.siteSpaceId",
        ),
        (
            json!({ "source": "/old", "destination": { "kind": "site-section", "siteSectionId": "nope" } }),
            "destination.siteSectionId",
        ),
        (
            json!({ "source": "/old", "destination": { "kind": "site-page", "siteSpaceId": site_space, "pageId": "nope" } }),
            "destination.pageId",
        ),
        (
            json!({ "source": "/old", "destination": { "kind": "space", "spaceId": space } }),
            "destination",
        ),
    ] {
        let msg = app
            .post(&w.admin, &redirects, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
    // Members read redirects; only admins change them.
    app.post(
        &w.reader,
        &redirects,
        json!({ "source": "/old/usage", "destination": to_usage }),
    )
    .await
    .expect_error(403);

    let made = app
        .post(
            &w.admin,
            &redirects,
            json!({ "source": "/old/usage", "destination": to_usage }),
        )
        .await
        .expect(201);
    assert_eq!(made["object"], json!("site-redirect"));
    assert_eq!(made["destination"], to_usage);
    let redirect = id(&made);
    let msg = app
        .post(
            &w.admin,
            &redirects,
            json!({ "source": "/old/usage", "destination": { "kind": "site-space", "siteSpaceId": site_space } }),
        )
        .await
        .expect_error(409);
    assert!(msg.contains("source"), "{msg}");
    app.post(
        &w.admin,
        &redirects,
        json!({ "source": "/intro", "destination": to_usage }),
    )
    .await
    .expect(201);
    let listed = app.get(&w.reader, &redirects).await.expect(200);
    assert_eq!(listed["count"], json!(2), "{listed}");
    let first = app
        .get(&w.reader, &format!("{redirects}?limit=1"))
        .await
        .expect(200);
    let next = first["next"]["page"].as_str().unwrap().to_string();
    let second = app
        .get(&w.reader, &format!("{redirects}?limit=1&page={next}"))
        .await
        .expect(200);
    assert_eq!(second["items"][0]["source"], json!("/intro"), "{second}");

    let found = app
        .get(&w.reader, &format!("{base}/redirect?source=/old/usage"))
        .await
        .expect(200);
    assert_eq!(found["redirect"]["id"], json!(redirect));
    let target = found["target"].as_str().unwrap().to_string();
    assert!(
        target.ends_with(&format!("/sites/{site}/usage")),
        "{target}"
    );
    app.get(&w.reader, &format!("{base}/redirect?source=/nothing"))
        .await
        .expect_error(404);
    let msg = app
        .get(&w.reader, &format!("{base}/redirect?source=nothing"))
        .await
        .expect_error(400);
    assert!(msg.contains("source"), "{msg}");

    // A published site follows a redirect where it has no page, and only there.
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let (status, location, cache) = visit(&app, &format!("/sites/{site}/old/usage")).await;
    assert_eq!(status, 301);
    assert_eq!(location.as_deref(), Some(target.as_str()));
    assert!(cache.unwrap().contains("max-age"));
    let (status, location, _) = visit(&app, &format!("/sites/{site}/old/usage/")).await;
    assert_eq!((status, location.as_deref()), (301, Some(target.as_str())));
    let (status, _, _) = visit(&app, &format!("/sites/{site}/intro")).await;
    assert_eq!(status, 200, "a page wins over a redirect from its path");
    let (status, _, _) = visit(&app, &format!("/sites/{site}/old/other")).await;
    assert_eq!(status, 404);
    // The token a renderer gets for the site reads its redirects by source, and no more.
    let resolved = app
        .post(
            &w.reader,
            "/v1/urls/published",
            json!({ "url": format!("{}/sites/{site}/old/usage", app.base) }),
        )
        .await
        .expect(200);
    let renderer = resolved["apiToken"].as_str().unwrap().to_string();
    let as_renderer = |path: String| {
        let (app, renderer) = (&app, renderer.clone());
        async move { app.call(Method::GET, &path, Some(&renderer), None).await }
    };
    let found = as_renderer(format!("{base}/redirect?source=/old/usage"))
        .await
        .expect(200);
    assert_eq!(found["target"], json!(target));
    as_renderer(redirects.clone()).await.expect_error(403);

    // Changes: the source (not onto another's), the destination; then it is gone.
    let msg = app
        .patch(
            &w.admin,
            &format!("{redirects}/{redirect}"),
            json!({ "source": "/intro" }),
        )
        .await
        .expect_error(409);
    assert!(msg.contains("source"), "{msg}");
    app.patch(&w.admin, &format!("{redirects}/{redirect}"), json!({}))
        .await
        .expect_error(400);
    let changed = app
        .patch(
            &w.admin,
            &format!("{redirects}/{redirect}"),
            json!({ "source": "/older", "destination": { "kind": "site-space", "siteSpaceId": site_space } }),
        )
        .await
        .expect(200);
    assert_eq!(changed["source"], json!("/older"));
    assert_eq!(changed["destination"]["kind"], json!("site-space"));
    let (status, location, _) = visit(&app, &format!("/sites/{site}/older")).await;
    assert_eq!(status, 301);
    assert!(location.unwrap().ends_with(&format!("/sites/{site}/")));
    let (status, _, _) = visit(&app, &format!("/sites/{site}/old/usage")).await;
    assert_eq!(status, 404);
    app.patch(
        &w.admin,
        &format!("{redirects}/nope"),
        json!({ "source": "/x" }),
    )
    .await
    .expect_error(404);
    let res = app
        .call(
            Method::DELETE,
            &format!("{redirects}/{redirect}"),
            Some(&w.admin.token),
            None,
        )
        .await;
    assert_eq!(res.status, 205);
    let res = app
        .call(
            Method::DELETE,
            &format!("{redirects}/{redirect}"),
            Some(&w.admin.token),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    let (status, _, _) = visit(&app, &format!("/sites/{site}/older")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn change_requests_count_contributors_and_discussions_list_commenters() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let cr = app.open_change_request(&w.admin, &space, "Write").await;
    let page = |title: &str| json!([{ "operation": "insert_page", "title": title, "document": { "markdown": "Text." } }]);
    app.edit_change_request(&w.editor, &space, &cr, page("One"))
        .await;
    app.edit_change_request(&w.editor, &space, &cr, page("Two"))
        .await;
    app.edit_change_request(&w.admin, &space, &cr, page("Three"))
        .await;
    let path = format!("/v1/spaces/{space}/change-requests/{cr}/contributors");
    let people = app.get(&w.reader, &path).await.expect(200);
    assert_eq!(people["count"], json!(2), "{people}");
    let by = |user: &str| {
        people["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["user"]["id"] == json!(user))
            .cloned()
            .unwrap_or_else(|| panic!("{user} not in {people}"))
    };
    assert_eq!(by(&w.editor.id)["count"], json!(2));
    assert_eq!(by(&w.admin.id)["count"], json!(1));
    assert!(by(&w.editor.id)["updatedAt"].is_string());
    app.get(
        &w.reader,
        &format!("/v1/spaces/{space}/change-requests/nope/contributors"),
    )
    .await
    .expect_error(404);

    // Commenters: of the space's own discussion, and of the change request's, apart.
    let comments = format!("/v1/spaces/{space}/comments");
    let comment = id(&app
        .post(
            &w.editor,
            &comments,
            json!({ "body": { "markdown": "Hi" } }),
        )
        .await
        .expect(200));
    app.post(
        &w.admin,
        &format!("{comments}/{comment}/replies"),
        json!({ "body": { "markdown": "Hello" } }),
    )
    .await
    .expect(200);
    app.post(
        &w.editor,
        &comments,
        json!({ "body": { "markdown": "Again" } }),
    )
    .await
    .expect(200);
    app.post(
        &w.admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/comments"),
        json!({ "body": { "markdown": "On the change" } }),
    )
    .await
    .expect(200);
    let in_space = app
        .get(&w.reader, &format!("/v1/spaces/{space}/commenters"))
        .await
        .expect(200);
    assert_eq!(in_space["count"], json!(2), "{in_space}");
    let mut ids: Vec<&str> = in_space["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["user"]["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let mut expected = vec![w.admin.id.as_str(), w.editor.id.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected);
    assert_eq!(in_space["items"][0]["object"], json!("member"));
    let first = app
        .get(&w.reader, &format!("/v1/spaces/{space}/commenters?limit=1"))
        .await
        .expect(200);
    let next = first["next"]["page"].as_str().unwrap().to_string();
    let second = app
        .get(
            &w.reader,
            &format!("/v1/spaces/{space}/commenters?limit=1&page={next}"),
        )
        .await
        .expect(200);
    assert_ne!(first["items"][0]["id"], second["items"][0]["id"]);
    let in_cr = app
        .get(
            &w.reader,
            &format!("/v1/spaces/{space}/change-requests/{cr}/commenters"),
        )
        .await
        .expect(200);
    assert_eq!(in_cr["count"], json!(1), "{in_cr}");
    assert_eq!(in_cr["items"][0]["user"]["id"], json!(w.admin.id));
}

#[tokio::test]
async fn a_revision_shows_its_changes_from_its_parent() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let before = app
        .get(&w.admin, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    let cr = app.open_change_request(&w.admin, &space, "Write").await;
    app.edit_change_request(
        &w.admin,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "title": "One", "document": { "markdown": "Text." } },
            { "operation": "insert_page", "title": "Two", "document": { "markdown": "Text." } },
            { "operation": "insert_page", "title": "Three", "document": { "markdown": "Text." } }
        ]),
    )
    .await;
    app.merge_change_request(&w.admin, &space, &cr).await;
    let merged = id(&app
        .get(&w.admin, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200));
    let path = format!("/v1/spaces/{space}/revisions/{merged}/changes");
    let changes = app.get(&w.reader, &path).await.expect(200);
    let kinds: Vec<&str> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["page_created"; 3], "{changes}");
    assert_eq!(changes["mergedFrom"]["id"], json!(cr), "{changes}");
    assert!(changes.get("more").is_none(), "{changes}");
    let limited = app
        .get(&w.reader, &format!("{path}?limit=1"))
        .await
        .expect(200);
    assert_eq!(limited["changes"].as_array().unwrap().len(), 1);
    assert_eq!(limited["more"], json!(2));
    let msg = app
        .get(&w.reader, &format!("{path}?limit=-1"))
        .await
        .expect_error(400);
    assert!(msg.contains("limit"), "{msg}");
    // The space's first revision has no parent: nothing came before it.
    let first = app
        .get(
            &w.reader,
            &format!("/v1/spaces/{space}/revisions/{}/changes", id(&before)),
        )
        .await
        .expect(200);
    assert!(first.get("mergedFrom").is_none(), "{first}");
    app.get(
        &w.reader,
        &format!("/v1/spaces/{space}/revisions/nope/changes"),
    )
    .await
    .expect_error(404);
}
