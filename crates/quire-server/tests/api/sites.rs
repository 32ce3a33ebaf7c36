//! Docs sites through HTTP: the site's own fields and limits, the rules of its structure,
//! share links, adaptive schemas, and the renderer path with its scoped token.

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

struct World {
    admin: Persona,
    reader: Persona,
    org: String,
}

async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let reader = app.persona("reader").await;
    let org = app.org(&admin, "Acme").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    World { admin, reader, org }
}

fn sites(w: &World) -> String {
    format!("/v1/orgs/{}/sites", w.org)
}

/// A site publishing `spaces` at its root.
async fn site_with(app: &TestApp, w: &World, spaces: &[&str]) -> String {
    id(&app
        .post(
            &w.admin,
            &sites(w),
            json!({ "title": "Docs", "spaces": spaces }),
        )
        .await
        .expect(201))
}

#[tokio::test]
async fn sites_have_defaults_limits_and_a_lifecycle() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let res = app.post(&w.admin, &sites(&w), json!({})).await;
    let site = res.expect(201);
    assert_eq!(site["type"], "basic");
    assert_eq!(site["published"], false);
    assert_eq!(site["siteSpaces"], 0);
    assert!(site["urls"].get("published").is_none());
    let base = format!("{}/{}", sites(&w), id(&site));

    for (body, field) in [
        (json!({ "title": "x" }), "title"),
        (json!({ "title": "y".repeat(129) }), "title"),
        (json!({ "basename": "" }), "basename"),
        (json!({ "hostname": "localhost" }), "hostname"),
        (json!({ "hostname": "Docs.Example.com" }), "hostname"),
        (json!({ "proxy": "example.com" }), "proxy"),
        (
            json!({ "proxy": format!("example.com/{}", "a".repeat(510)) }),
            "proxy",
        ),
        (json!({ "agentsContext": "sometimes" }), "agentsContext"),
        (
            json!({ "defaultSiteSection": "nope" }),
            "defaultSiteSection",
        ),
    ] {
        let msg = app
            .patch(&w.admin, &base, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
    let msg = app
        .post(&w.admin, &sites(&w), json!({ "spaces": ["nosuchspace"] }))
        .await
        .expect_error(400);
    assert!(msg.contains("spaces"), "{msg}");

    let patched = app
        .patch(
            &w.admin,
            &base,
            json!({ "title": "Handbook", "hostname": "docs.example.com", "proxy": "example.com/docs",
                    "adaptiveContent": { "enabled": true }, "agentsContext": "excluded" }),
        )
        .await
        .expect(200);
    assert_eq!(patched["title"], "Handbook");
    assert_eq!(patched["proxy"]["origin"], "example.com/docs");
    assert_eq!(patched["adaptiveContent"]["enabled"], true);
    let cleared = app
        .patch(&w.admin, &base, json!({ "proxy": null }))
        .await
        .expect(200);
    assert!(cleared.get("proxy").is_none());
    assert_eq!(
        cleared["title"], "Handbook",
        "a PATCH changes only what it names"
    );

    // Readers read; only admins change.
    app.get(&w.reader, &base).await.expect(200);
    app.patch(&w.reader, &base, json!({ "title": "Mine" }))
        .await
        .expect_error(403);

    let published = app
        .post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    // On its custom hostname (set above), which serves it (`hostnames.rs`).
    let url = published["urls"]["published"].as_str().unwrap().to_string();
    assert_eq!(url, "http://docs.example.com/");
    let listed = app
        .get(&w.admin, &format!("{}?published=true", sites(&w)))
        .await
        .expect(200);
    assert_eq!(listed["count"], 1);
    app.post(&w.admin, &format!("{base}/unpublish"), json!({}))
        .await
        .expect(200);
    // Its admin still previews it; visitors are refused (`adaptive_views`).
    app.get(&w.admin, &format!("{base}/published"))
        .await
        .expect(200);

    app.delete(&w.admin, &base).await.expect(204);
    app.get(&w.admin, &base).await.expect_error(404);
    app.delete(&w.admin, &base).await.expect(204);
}

#[tokio::test]
async fn the_structure_keeps_its_rules() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let guide = app.space(&w.admin, &w.org, "Guide", None).await;
    let api = app.space(&w.admin, &w.org, "API", None).await;
    let site = site_with(&app, &w, &[&guide, &api]).await;
    let base = format!("{}/{site}", sites(&w));

    let listed = app
        .get(&w.admin, &format!("{base}/site-spaces"))
        .await
        .expect(200);
    let paths: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["guide", "api"]);
    assert_eq!(listed["items"][0]["default"], true);
    let default_only = app
        .get(&w.admin, &format!("{base}/site-spaces?default=true"))
        .await
        .expect(200);
    assert_eq!(default_only["count"], 1);
    let api_ss = id(&listed["items"][1]);

    // Paths are unique among siblings; conditions must parse and yield a boolean.
    let guide_ss = id(&listed["items"][0]);
    app.patch(
        &w.admin,
        &format!("{base}/site-spaces/{api_ss}"),
        json!({ "path": "guide" }),
    )
    .await
    .expect_error(409);
    let msg = app
        .patch(
            &w.admin,
            &format!("{base}/site-spaces/{api_ss}"),
            json!({ "condition": "visitor.claims.(" }),
        )
        .await
        .expect_error(400);
    assert!(
        msg.contains("condition") && msg.contains("position"),
        "{msg}"
    );
    let msg = app
        .patch(
            &w.admin,
            &format!("{base}/site-spaces/{api_ss}"),
            json!({ "condition": "\"beta\"" }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("boolean"), "{msg}");
    let ok = app
        .patch(
            &w.admin,
            &format!("{base}/site-spaces/{api_ss}"),
            json!({ "condition": "visitor.claims.unsigned.beta === true && !visitor.claims.isInternal" }),
        )
        .await
        .expect(200);
    assert_eq!(
        ok["condition"],
        "visitor.claims.unsigned.beta === true && !visitor.claims.isInternal"
    );

    // The first section: the root's site spaces move into a default section of their own.
    let reference = app.space(&w.admin, &w.org, "Reference", None).await;
    let section = app
        .post(
            &w.admin,
            &format!("{base}/sections"),
            json!({ "spaceId": reference, "title": "Reference" }),
        )
        .await
        .expect(201);
    let structure = app
        .get(&w.admin, &format!("{base}/structure"))
        .await
        .expect(200);
    assert_eq!(structure["type"], "sections");
    let items = structure["structure"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["default"], true);
    assert_eq!(items[0]["siteSpaces"].as_array().unwrap().len(), 2);
    assert_eq!(items[1]["id"], section["id"]);
    let first = id(&items[0]);
    let site_row = app.get(&w.admin, &base).await.expect(200);
    assert_eq!(site_row["siteSpaces"], 3);

    // A space added without a section goes to the default section.
    let more = app.space(&w.admin, &w.org, "More", None).await;
    let added = app
        .post(
            &w.admin,
            &format!("{base}/site-spaces"),
            json!({ "spaceId": more }),
        )
        .await
        .expect(201);
    assert_eq!(added["section"], json!(first));

    // Groups hold sections; sort moves any item; removing from a group keeps the section.
    let group = app
        .post(
            &w.admin,
            &format!("{base}/section-groups"),
            json!({ "title": "Guides", "sections": [first] }),
        )
        .await
        .expect(201);
    assert_eq!(group["sections"][0]["id"], json!(first));
    let many: Vec<&str> = vec![first.as_str(); 501];
    let msg = app
        .post(
            &w.admin,
            &format!("{base}/section-groups"),
            json!({ "title": "Too many", "sections": many }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("sections"), "{msg}");
    let sorted = app
        .patch(
            &w.admin,
            &format!("{base}/structure/sort"),
            json!({ "item": { "type": "site-section", "id": section["id"] },
                    "position": { "before": { "type": "site-section-group", "id": group["id"] } } }),
        )
        .await
        .expect(200);
    assert_eq!(sorted["id"], section["id"]);
    let structure = app
        .get(&w.admin, &format!("{base}/structure"))
        .await
        .expect(200);
    assert_eq!(structure["structure"][0]["id"], section["id"]);
    assert_eq!(structure["structure"][1]["object"], "site-section-group");
    app.patch(
        &w.admin,
        &format!("{base}/structure/sort"),
        json!({ "item": { "type": "site-section-group", "id": group["id"] },
                "position": { "before": { "type": "site-space", "id": guide_ss } } }),
    )
    .await
    .expect_error(400);
    app.delete(
        &w.admin,
        &format!("{base}/section-groups/{}/sections/{first}", id(&group)),
    )
    .await
    .expect(204);
    let groups = app
        .get(&w.admin, &format!("{base}/section-groups"))
        .await
        .expect(200);
    assert_eq!(groups["items"][0]["sections"], json!([]));
    let sections = app
        .get(&w.admin, &format!("{base}/sections"))
        .await
        .expect(200);
    assert_eq!(sections["count"], 2);

    // Deleting a section takes its site spaces with it.
    app.delete(&w.admin, &format!("{base}/sections/{}", id(&section)))
        .await
        .expect(204);
    let site_row = app.get(&w.admin, &base).await.expect(200);
    assert_eq!(site_row["siteSpaces"], 3);

    // Deleting a space takes it out of every site.
    app.delete(&w.admin, &format!("/v1/spaces/{guide}"))
        .await
        .expect(204);
    let site_row = app.get(&w.admin, &base).await.expect(200);
    assert_eq!(site_row["siteSpaces"], 2);
    let filtered = app
        .get(&w.admin, &format!("{}?space={guide}", sites(&w)))
        .await
        .expect(200);
    assert_eq!(filtered["count"], 0);
}

#[tokio::test]
async fn share_links_open_share_link_sites() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let site = site_with(&app, &w, &[&space]).await;
    let base = format!("{}/{site}", sites(&w));
    app.patch(&w.admin, &base, json!({ "visibility": "share-link" }))
        .await
        .expect(200);
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let msg = app
        .post(
            &w.admin,
            &format!("{base}/share-links"),
            json!({ "name": "n".repeat(51) }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("name"), "{msg}");
    let link = app
        .post(
            &w.admin,
            &format!("{base}/share-links"),
            json!({ "name": "Partners" }),
        )
        .await
        .expect(201);
    let url = link["urls"]["published"].as_str().unwrap().to_string();
    let key = url
        .split("/~share/")
        .nth(1)
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    assert_eq!(key.len(), 32, "{url}");
    app.get(&w.reader, &format!("{base}/share-links"))
        .await
        .expect_error(403);

    let with = |k: &str| format!("{base}/site-spaces?shareKey={k}");
    let listed = app.get(&w.admin, &with(&key)).await.expect(200);
    assert!(listed["items"][0]["urls"]["published"]
        .as_str()
        .unwrap()
        .contains(&key));
    // `GET SPACE?shareKey=` resolves the space's published URL under the key.
    let shared = app
        .get(&w.reader, &format!("/v1/spaces/{space}?shareKey={key}"))
        .await
        .expect(200);
    assert_eq!(shared["urls"]["published"], json!(url));
    let plain = app
        .get(&w.reader, &format!("/v1/spaces/{space}?shareKey=nosuchkey"))
        .await
        .expect(200);
    assert!(plain["urls"].get("published").is_none(), "{plain}");
    let unknown = app.get(&w.admin, &with("nosuchkey")).await.expect(200);
    assert!(!unknown["items"][0]["urls"]["published"]
        .as_str()
        .unwrap()
        .contains("~share"));

    // The renderer resolves a share-link site only through an active key.
    let resolve = |url: String| {
        let app = &app;
        let admin = &w.admin;
        async move {
            app.post(admin, "/v1/urls/published", json!({ "url": url }))
                .await
        }
    };
    resolve(format!("{}/sites/{site}/", app.base))
        .await
        .expect_error(404);
    let found = resolve(url.clone()).await.expect(200);
    assert_eq!(found["shareKey"], json!(key));
    app.patch(
        &w.admin,
        &format!("{base}/share-links/{}", id(&link)),
        json!({ "active": false }),
    )
    .await
    .expect(200);
    resolve(url).await.expect_error(404);
    let inactive = app.get(&w.admin, &with(&key)).await.expect(200);
    assert!(!inactive["items"][0]["urls"]["published"]
        .as_str()
        .unwrap()
        .contains(&key));
    app.delete(&w.admin, &format!("{base}/share-links/{}", id(&link)))
        .await
        .expect(204);
    app.delete(&w.admin, &format!("{base}/share-links/{}", id(&link)))
        .await
        .expect(204);
}

#[tokio::test]
async fn adaptive_schemas_hold_boolean_claims() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let site = site_with(&app, &w, &[]).await;
    let url = format!("{}/{site}/adaptive-schema", sites(&w));
    app.get(&w.admin, &url).await.expect_error(404);
    for bad in [
        json!({ "type": "object", "properties": { "plan": { "type": "string" } } }),
        json!({ "type": "object", "properties": { "beta": { "type": 7 } } }),
        json!({ "type": "array" }),
        json!({ "type": "object", "properties": { "unsigned": { "type": "object", "properties": { "x": { "type": "number" } } } } }),
        // Nothing outside the schema is ever loaded.
        json!({ "type": "object", "properties": { "beta": { "$ref": "file:///etc/passwd" } } }),
    ] {
        let msg = app
            .put(&w.admin, &url, json!({ "jsonSchema": bad }))
            .await
            .expect_error(400);
        assert!(msg.contains("jsonSchema"), "{msg}");
        assert!(!msg.contains("root:"), "{msg}");
    }
    // The message says where the schema is wrong.
    let msg = app
        .put(
            &w.admin,
            &url,
            json!({ "jsonSchema": { "type": "object", "properties": { "beta": { "type": 7 } } } }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("/properties/beta/type"), "{msg}");
    let stored = app
        .put(
            &w.admin,
            &url,
            json!({ "jsonSchema": { "type": "object", "properties": {
                "isBeta": { "type": "boolean" },
                "unsigned": { "type": "object", "properties": { "my-plan": { "type": "boolean" } } }
            } } }),
        )
        .await
        .expect(200);
    assert_eq!(stored["object"], "site-adaptive-schema");
    assert_eq!(stored["jsonSchema"]["additionalProperties"], false);
    let conditions = app
        .get(&w.reader, &format!("{url}/template-conditions"))
        .await
        .expect(200);
    let conditions: Vec<&str> = conditions["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["condition"].as_str().unwrap())
        .collect();
    assert_eq!(
        conditions,
        [
            "visitor.claims.isBeta === true",
            "visitor.claims.unsigned[\"my-plan\"] === true"
        ]
    );
}

#[tokio::test]
async fn the_renderer_token_reads_only_its_published_content() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let guide = app.space(&w.admin, &w.org, "Guide", None).await;
    let beta = app.space(&w.admin, &w.org, "Beta", None).await;
    // Content in the guide: one merged page.
    let cr = id(&app
        .post(
            &w.admin,
            &format!("/v1/spaces/{guide}/change-requests"),
            json!({}),
        )
        .await
        .expect(201));
    app.post(
        &w.admin,
        &format!("/v1/spaces/{guide}/change-requests/{cr}/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "Install",
                              "document": { "markdown": "# Install\n\n{% hint style=\"info\" %}\nRun it.\n{% endhint %}\n" } }] }),
    )
    .await
    .expect(200);
    app.post(
        &w.admin,
        &format!("/v1/spaces/{guide}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
    let site = site_with(&app, &w, &[&guide, &beta]).await;
    let base = format!("{}/{site}", sites(&w));
    let site_spaces = app
        .get(&w.admin, &format!("{base}/site-spaces"))
        .await
        .expect(200);
    let beta_ss = id(&site_spaces["items"][1]);
    app.patch(
        &w.admin,
        &format!("{base}/site-spaces/{beta_ss}"),
        json!({ "condition": "visitor.claims.unsigned.beta === true" }),
    )
    .await
    .expect(200);
    let root = format!("{}/sites/{site}/", app.base);
    let resolve = |url: String, claims: Value| {
        let app = &app;
        let reader = &w.reader;
        async move {
            app.post(
                reader,
                "/v1/urls/published",
                json!({ "url": url, "visitor": { "unsignedClaims": claims } }),
            )
            .await
        }
    };
    // Unpublished: nothing to resolve.
    resolve(root.clone(), json!({})).await.expect_error(404);
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let found = resolve(format!("{root}install"), json!({}))
        .await
        .expect(200);
    assert_eq!(found["space"], json!(guide));
    assert_eq!(found["pathname"], "install");
    assert_eq!(found["organization"], json!(w.org));
    // The beta site space shows only to visitors whose claims pass its condition.
    let hidden = resolve(format!("{root}beta/intro"), json!({}))
        .await
        .expect(200);
    assert_eq!(hidden["space"], json!(guide), "{hidden}");
    assert_eq!(hidden["pathname"], "beta/intro");
    let shown = resolve(format!("{root}beta/intro"), json!({ "beta": true }))
        .await
        .expect(200);
    assert_eq!(shown["space"], json!(beta));
    assert_eq!(shown["pathname"], "intro");

    let token = found["apiToken"].as_str().unwrap().to_string();
    let revision = found["revision"].as_str().unwrap().to_string();
    let call = |method: Method, path: String| {
        let app = &app;
        let token = token.clone();
        async move { app.call(method, &path, Some(&token), None).await }
    };
    let published = call(Method::GET, format!("{base}/published"))
        .await
        .expect(200);
    assert_eq!(published["object"], "published-content-site");
    call(Method::GET, format!("/v1/spaces/{guide}"))
        .await
        .expect(200);
    let rev = call(
        Method::GET,
        format!("/v1/spaces/{guide}/revisions/{revision}"),
    )
    .await
    .expect(200);
    let page = id(&rev["pages"][0]);
    let document = call(
        Method::GET,
        format!("/v1/spaces/{guide}/revisions/{revision}/page/{page}/document"),
    )
    .await
    .expect(200);
    assert_eq!(document["object"], "document");
    assert!(document.to_string().contains("\"hint\""), "{document}");
    // Anything else is refused.
    for (method, path) in [
        (Method::GET, format!("/v1/spaces/{beta}")),
        (Method::GET, format!("/v1/spaces/{guide}/content/pages")),
        (Method::GET, format!("{base}/site-spaces")),
        (Method::GET, format!("/v1/orgs/{}", w.org)),
        (Method::GET, "/v1/user".to_string()),
        (Method::DELETE, format!("/v1/spaces/{guide}")),
    ] {
        let res = call(method.clone(), path.clone()).await;
        assert!(
            res.status == 403 || res.status == 401,
            "{method} {path}: {} {}",
            res.status,
            res.body
        );
    }
    // A forged token is no token.
    let forged = format!("{}x", &token[..token.len() - 1]);
    let res = app
        .call(
            Method::GET,
            &format!("/v1/spaces/{guide}"),
            Some(&forged),
            None,
        )
        .await;
    assert_eq!(res.status, 401, "{}", res.body);
    // Tokens expire.
    app.clock.advance_ms(2 * 3600 * 1000);
    let res = call(Method::GET, format!("/v1/spaces/{guide}")).await;
    assert_eq!(res.status, 401, "{}", res.body);
}

/// An answer kept for a published-content token (`answers`) is never served past the
/// token's end, even while every lookup it rests on is still fresh in the access cache.
#[tokio::test]
async fn reads_with_a_published_token_end_with_the_token() {
    use base64::Engine;
    let app = TestApp::start_with(|c| c.access_cache_ms = 600_000).await;
    let w = world(&app).await;
    let guide = app.space(&w.admin, &w.org, "Guide", None).await;
    let cr = app.open_change_request(&w.admin, &guide, "Start").await;
    app.edit_change_request(
        &w.admin,
        &guide,
        &cr,
        json!([{ "operation": "insert_page", "title": "Install",
                 "document": { "markdown": "Run it." } }]),
    )
    .await;
    app.merge_change_request(&w.admin, &guide, &cr).await;
    let site = site_with(&app, &w, &[&guide]).await;
    let base = format!("{}/{site}", sites(&w));
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let found = app
        .post(
            &w.reader,
            "/v1/urls/published",
            json!({ "url": format!("{}/sites/{site}/install", app.base) }),
        )
        .await
        .expect(200);
    let token = found["apiToken"].as_str().unwrap().to_string();
    let payload = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    let ends_at = claims["exp"].as_i64().unwrap() * 1000;
    // Five seconds before the token's end: read, its lookups cached.
    app.clock.advance_ms(ends_at - app.state.now() - 5_000);
    let path = format!("/v1/spaces/{guide}");
    let read = || app.call(Method::GET, &path, Some(&token), None);
    read().await.expect(200);
    read().await.expect(200);
    // Past its end, within the access cache's bound: refused.
    app.clock.advance_ms(10_000);
    let res = read().await;
    assert_eq!(res.status, 401, "{}", res.body);
}

#[tokio::test]
async fn page_conditions_must_parse() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let cr = id(&app
        .post(
            &w.admin,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({}),
        )
        .await
        .expect(201));
    let url = format!("/v1/spaces/{space}/change-requests/{cr}/content");
    for markdown in [
        "---\nif: visitor.claims.(\n---\n\n# Beta\n",
        "---\nif: \"'text'\"\n---\n\n# Beta\n",
    ] {
        let msg = app
            .post(
                &w.admin,
                &url,
                json!({ "changes": [{ "operation": "insert_page", "title": "Beta",
                                      "document": { "markdown": markdown } }] }),
            )
            .await
            .expect_error(400);
        assert!(
            msg.contains("condition") && msg.contains("position"),
            "{msg}"
        );
    }
    app.post(
        &w.admin,
        &url,
        json!({ "changes": [{ "operation": "insert_page", "title": "Beta",
                              "document": { "markdown": "---\nif: visitor.claims.beta === true\n---\n\n# Beta\n" } }] }),
    )
    .await
    .expect(200);
}
