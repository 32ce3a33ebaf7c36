//! Settings hung on a site beside its structure, through HTTP: site spaces' overrides of the
//! site's customization (and what the published site shows with them).

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

/// A public, published site showing `spaces` (each given a page when it has none); returns
/// its API path and its published path.
async fn published_site(app: &TestApp, w: &World, spaces: &[&str]) -> (String, String) {
    for space in spaces {
        let content = app
            .get(&w.admin, &format!("/v1/spaces/{space}/content"))
            .await
            .expect(200);
        if content["pages"].as_array().is_none_or(Vec::is_empty) {
            write(
                app,
                w,
                space,
                json!([{ "operation": "insert_page", "title": "Welcome", "document": { "markdown": "Hello." } }]),
            )
            .await;
        }
    }
    let sites = format!("/v1/orgs/{}/sites", w.org);
    let site = id(&app
        .post(
            &w.admin,
            &sites,
            json!({ "title": "Docs", "spaces": spaces }),
        )
        .await
        .expect(201));
    let api = format!("{sites}/{site}");
    let published = app
        .post(&w.admin, &format!("{api}/publish"), json!({}))
        .await
        .expect(200);
    let url = published["urls"]["published"].as_str().unwrap();
    (api, url[url.find("/sites/").unwrap()..].to_string())
}

/// The HTML of a published page.
async fn page(app: &TestApp, path: &str) -> String {
    let res = reqwest::get(format!("{}{path}", app.base)).await.unwrap();
    assert_eq!(res.status(), 200, "{path}");
    res.text().await.unwrap()
}

/// The `<title>` of an HTML page.
fn title_of(html: &str) -> &str {
    let start = html.find("<title>").expect("a title") + "<title>".len();
    &html[start..start + html[start..].find("</title>").unwrap()]
}

#[tokio::test]
async fn a_site_space_overrides_its_site_s_customization_on_its_pages() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let first = app.space(&w.admin, &w.org, "First", None).await;
    let second = app.space(&w.admin, &w.org, "Second", None).await;
    let (api, path) = published_site(&app, &w, &[&first, &second]).await;
    let site_spaces = app
        .get(&w.admin, &format!("{api}/site-spaces"))
        .await
        .expect(200);
    let (one, two) = (id(&site_spaces["items"][0]), id(&site_spaces["items"][1]));
    let two_path = site_spaces["items"][1]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let custom = |ss: &str| format!("{api}/site-spaces/{ss}/customization");
    let site_custom = app
        .get(&w.admin, &format!("{api}/customization"))
        .await
        .expect(200);

    // Without an override, a site space shows its site's customization.
    let before = app.get(&w.reader, &custom(&one)).await.expect(200);
    assert_eq!(before, site_custom);

    let set = app
        .patch(
            &w.admin,
            &custom(&one),
            json!({ "title": "First docs",
                    "styling": { "primaryColor": { "light": "#112233", "dark": "#445566" } } }),
        )
        .await
        .expect(200);
    assert_eq!(set["title"], "First docs");
    assert_eq!(set["styling"]["primaryColor"]["light"], "#112233");
    assert_eq!(
        set["styling"]["theme"], "clean",
        "the site's, not overridden"
    );
    // Fields left out stay; a group merges field by field.
    let set = app
        .patch(
            &w.admin,
            &custom(&one),
            json!({ "styling": { "theme": "muted" } }),
        )
        .await
        .expect(200);
    assert_eq!(set["styling"]["theme"], "muted");
    assert_eq!(set["styling"]["primaryColor"]["light"], "#112233");
    assert_eq!(set["title"], "First docs");
    // `null` resets a field to the site's.
    let set = app
        .patch(
            &w.admin,
            &custom(&one),
            json!({ "styling": { "primaryColor": null } }),
        )
        .await
        .expect(200);
    assert_eq!(
        set["styling"]["primaryColor"],
        site_custom["styling"]["primaryColor"]
    );
    assert_eq!(app.get(&w.admin, &custom(&one)).await.expect(200), set);
    // The other site space is untouched.
    assert_eq!(
        app.get(&w.admin, &custom(&two)).await.expect(200),
        site_custom
    );

    // The published site shows the override on that site space's pages only.
    assert!(title_of(&page(&app, &path).await).contains("First docs"));
    let other = page(&app, &format!("{path}{two_path}")).await;
    assert!(!title_of(&other).contains("First docs"), "{other}");
    assert!(title_of(&other).contains("Docs"), "{other}");

    // A later change of the site's own settings shows where the override sets nothing.
    app.put(
        &w.admin,
        &format!("{api}/customization"),
        json!({ "title": "Handbook", "styling": { "theme": "bold" } }),
    )
    .await
    .expect(200);
    let shown = app.get(&w.admin, &custom(&one)).await.expect(200);
    assert_eq!(shown["title"], "First docs");
    assert_eq!(shown["styling"]["theme"], "muted");
    assert_eq!(
        app.get(&w.admin, &custom(&two)).await.expect(200)["title"],
        "Handbook"
    );
    assert!(title_of(&page(&app, &format!("{path}{two_path}")).await).contains("Handbook"));

    // The renderer's token reads its site space's customization, override included.
    let found = app
        .post(
            &w.admin,
            "/v1/urls/published",
            json!({ "url": format!("{}{path}", app.base) }),
        )
        .await
        .expect(200);
    assert_eq!(found["siteSpace"], one.as_str());
    let published = app
        .call(
            reqwest::Method::GET,
            &format!("{api}/published"),
            found["apiToken"].as_str(),
            None,
        )
        .await
        .expect(200);
    assert_eq!(
        published["customizations"]["siteSpaces"][&one]["title"],
        "First docs"
    );
    assert_eq!(published["customizations"]["site"]["title"], "Handbook");

    // Removing the override: 205, then 204 once there is none.
    let res = app.delete(&w.admin, &custom(&one)).await;
    assert_eq!(res.status, 205, "{}", res.body);
    let res = app.delete(&w.admin, &custom(&one)).await;
    assert_eq!(res.status, 204, "{}", res.body);
    assert_eq!(
        app.get(&w.admin, &custom(&one)).await.expect(200)["title"],
        "Handbook"
    );
    assert!(title_of(&page(&app, &path).await).contains("Handbook"));

    // An override goes with its site space.
    app.patch(&w.admin, &custom(&two), json!({ "title": "Second docs" }))
        .await
        .expect(200);
    let res = app
        .delete(&w.admin, &format!("{api}/site-spaces/{two}"))
        .await;
    assert!(res.status < 300, "{}", res.body);
    app.get(&w.admin, &custom(&two)).await.expect(404);
}

#[tokio::test]
async fn site_space_overrides_are_checked_and_for_admins() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let (api, _) = published_site(&app, &w, &[&space]).await;
    let ss = id(&app
        .get(&w.admin, &format!("{api}/site-spaces"))
        .await
        .expect(200)["items"][0]);
    let custom = format!("{api}/site-spaces/{ss}/customization");
    for (body, field) in [
        (json!({ "title": "x" }), "title"),
        (json!({ "styling": { "theme": "neon" } }), "styling.theme"),
        (
            json!({ "styling": { "primaryColor": { "light": "red", "dark": "#000000" } } }),
            "styling.primaryColor.light",
        ),
        (json!({ "styling": 3 }), "styling"),
        (
            json!({ "styling": { "sidebar": "wide" } }),
            "styling.sidebar",
        ),
        (
            json!({ "internationalization": { "locale": "xx" } }),
            "internationalization.locale",
        ),
        (json!({ "header": { "links": "none" } }), "header.links"),
        (json!({ "bogus": true }), "bogus"),
    ] {
        let msg = app
            .patch(&w.admin, &custom, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
    app.patch(&w.admin, &custom, json!([1]))
        .await
        .expect_error(400);
    // Each write is under the body's cap; together they would store more than 64 KiB.
    app.patch(
        &w.admin,
        &custom,
        json!({ "footer": { "copyright": "c".repeat(40_000) } }),
    )
    .await
    .expect(200);
    let links: Vec<Value> = (0..50)
        .map(|_| json!({ "title": "t".repeat(800), "to": { "kind": "url", "url": "https://example.com/" } }))
        .collect();
    let msg = app
        .patch(&w.admin, &custom, json!({ "header": { "links": links } }))
        .await
        .expect_error(400);
    assert!(msg.contains("64 KiB"), "{msg}");
    app.delete(&w.admin, &custom).await;
    // Nothing was stored by a refused write.
    let site_custom = app
        .get(&w.admin, &format!("{api}/customization"))
        .await
        .expect(200);
    assert_eq!(app.get(&w.admin, &custom).await.expect(200), site_custom);

    // Members read; only admins change.
    app.get(&w.reader, &custom).await.expect(200);
    app.patch(&w.reader, &custom, json!({ "title": "Mine" }))
        .await
        .expect_error(403);
    let res = app.delete(&w.reader, &custom).await;
    assert_eq!(res.status, 403, "{}", res.body);

    // A site space the site does not have.
    let nope = format!("{api}/site-spaces/nope/customization");
    app.get(&w.admin, &nope).await.expect(404);
    app.patch(&w.admin, &nope, json!({ "title": "Other" }))
        .await
        .expect(404);
    let res = app.delete(&w.admin, &nope).await;
    assert_eq!(res.status, 204, "{}", res.body);
}

#[tokio::test]
async fn a_site_names_outside_mcp_servers_for_its_admins() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let (api, path) = published_site(&app, &w, &[&space]).await;
    let servers = format!("{api}/mcp-servers");
    let empty = app.get(&w.admin, &servers).await.expect(200);
    assert_eq!(empty["items"], json!([]));

    let res = app
        .call(
            reqwest::Method::POST,
            &servers,
            Some(&w.admin.token),
            Some(
                json!({ "name": "Tickets", "url": "https://mcp.example.com/",
                         "headers": { "Authorization": "Bearer s3cret" } }),
            ),
        )
        .await;
    let created = res.expect(201);
    assert_eq!(created["object"], "site-mcp-server");
    assert_eq!(created["headers"]["Authorization"], "Bearer s3cret");
    let one = format!("{servers}/{}", id(&created));
    assert!(created["urls"]["location"]
        .as_str()
        .unwrap()
        .ends_with(&one));
    assert_eq!(app.get(&w.admin, &one).await.expect(200), created);

    // A PATCH changes what it names; `headers` is replaced whole.
    let patched = app
        .patch(&w.admin, &one, json!({ "headers": { "X-Team": "docs" } }))
        .await
        .expect(200);
    assert_eq!(patched["name"], "Tickets");
    assert_eq!(patched["headers"], json!({ "X-Team": "docs" }));
    let patched = app
        .patch(
            &w.admin,
            &one,
            json!({ "name": "Support", "url": "http://10.0.0.5:8080/mcp" }),
        )
        .await
        .expect(200);
    assert_eq!(patched["name"], "Support");
    assert_eq!(patched["headers"], json!({ "X-Team": "docs" }));
    let listed = app.get(&w.admin, &servers).await.expect(200);
    assert_eq!(listed["items"], json!([patched]));

    for (body, field) in [
        (
            json!({ "name": "", "url": "https://a.example/", "headers": {} }),
            "name",
        ),
        (
            json!({ "name": "n".repeat(101), "url": "https://a.example/", "headers": {} }),
            "name",
        ),
        (
            json!({ "name": "A", "url": "ftp://a.example/", "headers": {} }),
            "url",
        ),
        (
            json!({ "name": "A", "url": "https://a.example/" }),
            "headers",
        ),
        (
            json!({ "name": "A", "url": "https://a.example/", "headers": { "Bad Name": "x" } }),
            "headers",
        ),
        (
            json!({ "name": "A", "url": "https://a.example/", "headers": { "X-A": "" } }),
            "headers.X-A",
        ),
        (
            json!({ "name": "A", "url": "https://a.example/", "headers": { "X-A": "a\r\nb" } }),
            "headers.X-A",
        ),
        (
            json!({ "name": "A", "url": "https://a.example/", "headers": { "X-A": "v".repeat(513) } }),
            "headers.X-A",
        ),
        (
            json!({ "name": "A", "url": "https://a.example/", "headers": { "X-A": 1 } }),
            "headers",
        ),
    ] {
        let msg = app
            .post(&w.admin, &servers, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
    let many: serde_json::Map<String, Value> =
        (0..33).map(|i| (format!("X-{i}"), json!("v"))).collect();
    let msg = app
        .post(
            &w.admin,
            &servers,
            json!({ "name": "A", "url": "https://a.example/", "headers": many }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("headers"), "{msg}");
    let msg = app
        .patch(&w.admin, &one, json!({ "url": "javascript:alert(1)" }))
        .await
        .expect_error(400);
    assert!(msg.contains("url"), "{msg}");

    // The headers are credentials: members read nothing of them.
    app.get(&w.reader, &servers).await.expect_error(403);
    app.get(&w.reader, &one).await.expect_error(403);
    app.post(
        &w.reader,
        &servers,
        json!({ "name": "Mine", "url": "https://a.example/", "headers": {} }),
    )
    .await
    .expect_error(403);
    // Nor does the published site or its MCP endpoint show them.
    let html = page(&app, &path).await;
    assert!(
        !html.contains("s3cret") && !html.contains("10.0.0.5"),
        "{html}"
    );

    // At most 50 per site.
    for i in 1..50 {
        app.post(
            &w.admin,
            &servers,
            json!({ "name": format!("S{i}"), "url": "https://a.example/", "headers": {} }),
        )
        .await
        .expect(201);
    }
    let msg = app
        .post(
            &w.admin,
            &servers,
            json!({ "name": "One more", "url": "https://a.example/", "headers": {} }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("50"), "{msg}");
    let all = app
        .get(&w.admin, &format!("{servers}?limit=100"))
        .await
        .expect(200);
    assert_eq!(all["count"], 50, "{all}");

    let res = app.delete(&w.admin, &one).await;
    assert_eq!(res.status, 205, "{}", res.body);
    let res = app.delete(&w.admin, &one).await;
    assert_eq!(res.status, 204, "{}", res.body);
    app.get(&w.admin, &one).await.expect_error(404);
    app.patch(&w.admin, &one, json!({ "name": "Gone" }))
        .await
        .expect_error(404);
}

/// Writes `changes` into `space` through a change request and merges it.
async fn write(app: &TestApp, w: &World, space: &str, changes: Value) {
    let cr = id(&app
        .post(
            &w.admin,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "Write" }),
        )
        .await
        .expect(201));
    app.post(
        &w.admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
        json!({ "changes": changes }),
    )
    .await
    .expect(200);
    app.post(
        &w.admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
}

/// Titles of the pages of a `searchSiteContent` answer, per space title.
fn found(res: &Value) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = res["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["title"].as_str().unwrap().to_string(),
                g["pages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["title"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    // Equal scores rank in no set order between spaces.
    groups.sort();
    groups
}

#[tokio::test]
async fn a_site_s_search_shows_what_its_visitor_sees() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let guide = app.space(&w.admin, &w.org, "Guide", None).await;
    write(
        &app,
        &w,
        &guide,
        json!([
            { "operation": "insert_page", "title": "Open", "document": { "markdown": "Walrus for all." } },
            { "operation": "insert_page", "title": "Hidden", "hidden": true,
              "document": { "markdown": "Walrus hidden." } },
            { "operation": "insert_page", "title": "Beta", "condition": "visitor.claims.unsigned.beta === true",
              "document": { "markdown": "Walrus mode." } }
        ]),
    )
    .await;
    let extra = app.space(&w.admin, &w.org, "Extra", None).await;
    write(
        &app,
        &w,
        &extra,
        json!([{ "operation": "insert_page", "title": "More", "document": { "markdown": "Walrus again." } }]),
    )
    .await;
    let (api, path) = published_site(&app, &w, &[&guide, &extra]).await;
    let search = format!("{api}/search");
    let site_spaces = app
        .get(&w.admin, &format!("{api}/site-spaces"))
        .await
        .expect(200);
    let (ss_guide, ss_extra) = (id(&site_spaces["items"][0]), id(&site_spaces["items"][1]));

    // A member searches as an anonymous visitor: no hidden page, no page of a condition.
    let res = app
        .post(&w.reader, &search, json!({ "query": "walrus" }))
        .await
        .expect(200);
    assert_eq!(
        found(&res),
        vec![
            ("Extra".to_string(), vec!["More".to_string()]),
            ("Guide".to_string(), vec!["Open".to_string()])
        ],
        "{res}"
    );
    assert_eq!(res["count"], 2);
    let guide_group = res["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["title"] == "Guide")
        .unwrap();
    assert_eq!(guide_group["id"], guide.as_str());
    let url = guide_group["pages"][0]["urls"]["app"].as_str().unwrap();
    assert!(url.ends_with(&format!("{path}open")), "{url}");

    // Scopes.
    let only = |body: Value| {
        let app = &app;
        let w = &w;
        let search = search.clone();
        async move { found(&app.post(&w.admin, &search, body).await.expect(200)) }
    };
    assert_eq!(
        only(json!({ "query": "walrus", "scope": { "mode": "specific", "siteSpaceIds": [ss_extra] } })).await,
        vec![("Extra".to_string(), vec!["More".to_string()])]
    );
    assert_eq!(
        only(json!({ "query": "walrus", "siteSpaceIds": [ss_guide] })).await,
        vec![("Guide".to_string(), vec!["Open".to_string()])]
    );
    // Without sections, the default scope is the site's default site space.
    assert_eq!(
        only(json!({ "query": "walrus", "scope": { "mode": "default" } })).await,
        vec![("Guide".to_string(), vec!["Open".to_string()])]
    );
    assert_eq!(
        only(json!({ "query": "walrus", "scope": { "mode": "default", "includedSiteSpaces": [ss_extra] } }))
            .await
            .len(),
        2
    );
    assert_eq!(
        only(json!({ "query": "walrus", "mode": "all" }))
            .await
            .len(),
        2
    );

    // Pages of results: `limit` and `count` are in pages.
    let first = app
        .post(
            &w.admin,
            &format!("{search}?limit=1"),
            json!({ "query": "walrus", "mode": "all" }),
        )
        .await
        .expect(200);
    assert_eq!(first["count"], 2, "{first}");
    let next = first["next"]["page"].as_str().expect("a next page");
    let second = app
        .post(
            &w.admin,
            &format!("{search}?limit=1&page={next}"),
            json!({ "query": "walrus", "mode": "all" }),
        )
        .await
        .expect(200);
    assert_eq!(found(&first).len() + found(&second).len(), 2, "{second}");
    assert!(second.get("next").is_none(), "{second}");
    app.post(
        &w.admin,
        &format!("{search}?limit=1&page={next}"),
        json!({ "query": "other", "mode": "all" }),
    )
    .await
    .expect_error(400);

    // A site space whose condition fails for the visitor is not searched.
    app.patch(
        &w.admin,
        &format!("{api}/site-spaces/{ss_extra}"),
        json!({ "condition": "visitor.claims.unsigned.beta === true" }),
    )
    .await
    .expect(200);
    assert_eq!(
        only(json!({ "query": "walrus" })).await,
        vec![("Guide".to_string(), vec!["Open".to_string()])]
    );

    // The renderer's token searches as the visitor it was issued for.
    let resolved = app
        .post(
            &w.admin,
            "/v1/urls/published",
            json!({ "url": format!("{}{path}", app.base),
                    "visitor": { "unsignedClaims": { "beta": true } } }),
        )
        .await
        .expect(200);
    let token = resolved["apiToken"].as_str().unwrap();
    let res = app
        .call(
            reqwest::Method::POST,
            &search,
            Some(token),
            Some(json!({ "query": "walrus" })),
        )
        .await
        .expect(200);
    let mut titles: Vec<String> = found(&res).into_iter().flat_map(|(_, p)| p).collect();
    titles.sort();
    assert_eq!(titles, ["Beta", "More", "Open"], "{res}");
    // And nothing else of the API.
    app.call(
        reqwest::Method::GET,
        &format!("{api}/site-spaces"),
        Some(token),
        None,
    )
    .await
    .expect_error(403);

    for (body, field) in [
        (json!({ "query": "" }), "query"),
        (json!({ "query": "w".repeat(513) }), "query"),
        (json!({}), "query"),
        (
            json!({ "query": "walrus", "scope": { "mode": "specific", "siteSpaceIds": ["nope"] } }),
            "scope.siteSpaceIds",
        ),
        (
            json!({ "query": "walrus", "scope": { "mode": "specific" } }),
            "scope.siteSpaceIds",
        ),
        (
            json!({ "query": "walrus", "scope": { "mode": "everything" } }),
            "scope.mode",
        ),
        (
            json!({ "query": "walrus", "scope": { "mode": "default", "includedSiteSpaces": ["nope"] } }),
            "scope.includedSiteSpaces",
        ),
        (
            json!({ "query": "walrus", "mode": "current" }),
            "siteSpaceId",
        ),
        (
            json!({ "query": "walrus", "mode": "current", "siteSpaceId": "nope" }),
            "siteSpaceId",
        ),
        (
            json!({ "query": "walrus", "siteSpaceIds": vec!["x"; 101] }),
            "siteSpaceIds",
        ),
    ] {
        let msg = app
            .post(&w.admin, &search, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
}

#[tokio::test]
async fn a_site_s_permissions_are_its_organization_s_roles() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let guest = app.persona("guest").await;
    app.add_member(&w.admin, &w.org, &guest, Value::Null).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let (api, _) = published_site(&app, &w, &[&space]).await;
    let res = app
        .get(&w.reader, &format!("{api}/permissions/aggregate"))
        .await
        .expect(200);
    let mut seen: Vec<(String, String)> = res["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(
                p["origin"],
                json!({ "type": "organization", "organization": w.org })
            );
            (
                p["user"]["id"].as_str().unwrap().to_string(),
                p["permission"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    seen.sort();
    let mut want = vec![
        (w.admin.id.clone(), "admin".to_string()),
        (w.reader.id.clone(), "read".to_string()),
    ];
    want.sort();
    assert_eq!(seen, want, "guests do not open sites: {res}");
    assert_eq!(res["count"], 2);
    let first = app
        .get(&w.admin, &format!("{api}/permissions/aggregate?limit=1"))
        .await
        .expect(200);
    let next = first["next"]["page"].as_str().unwrap();
    let second = app
        .get(
            &w.admin,
            &format!("{api}/permissions/aggregate?limit=1&page={next}"),
        )
        .await
        .expect(200);
    assert_ne!(
        first["items"][0]["user"]["id"],
        second["items"][0]["user"]["id"]
    );
    app.get(&guest, &format!("{api}/permissions/aggregate"))
        .await
        .expect_error(403);
}

#[tokio::test]
async fn a_preview_url_opens_the_site_as_a_visitor_with_its_claims() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    write(
        &app,
        &w,
        &space,
        json!([
            { "operation": "insert_page", "title": "Open", "document": { "markdown": "For all." } },
            { "operation": "insert_page", "title": "Beta corner", "condition": "visitor.claims.beta === true",
              "document": { "markdown": "Beta only." } }
        ]),
    )
    .await;
    let (api, path) = published_site(&app, &w, &[&space]).await;
    app.patch(&w.admin, &api, json!({ "visibility": "visitor-auth" }))
        .await
        .expect(200);
    let preview = format!("{api}/publishing/preview");
    let res = app
        .get(&w.admin, &format!("{preview}?claims=(beta:!t,plan:'pro')"))
        .await
        .expect(200);
    let url = res["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}{path}?jwt_token=", app.base)),
        "{url}"
    );
    // The visitor-auth site opens to it, and its claims count.
    let html = reqwest::get(url).await.unwrap().text().await.unwrap();
    assert!(html.contains("Beta corner"), "{html}");
    let plain = app.get(&w.admin, &preview).await.expect(200);
    let html = reqwest::get(plain["url"].as_str().unwrap())
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("Open") && !html.contains("Beta corner"),
        "{html}"
    );
    // Not without its token.
    let res = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}{path}", app.base))
        .send()
        .await
        .unwrap();
    assert_ne!(res.status(), 200);

    for (query, field) in [
        ("?claims=(beta:", "claims"),
        ("?claims=!t", "claims"),
        ("?siteSpace=nope", "siteSpace"),
    ] {
        let msg = app
            .get(&w.admin, &format!("{preview}{query}"))
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{query}: {msg}");
    }
    app.get(&w.reader, &preview).await.expect_error(403);
    app.post(&w.admin, &format!("{api}/unpublish"), json!({}))
        .await
        .expect(200);
    let msg = app.get(&w.admin, &preview).await.expect_error(400);
    assert!(msg.contains("published"), "{msg}");
}

#[tokio::test]
async fn a_site_search_is_a_read_that_moves_no_cached_lookup() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let (api, _) = published_site(&app, &w, &[&space]).await;
    let read = format!("/v1/spaces/{space}");
    for _ in 0..2 {
        app.get(&w.reader, &read).await.expect(200);
    }
    // The space's row, as the node's access cache answers it.
    let kept = || {
        let lookups = app.state.cache.lookups();
        let (_, (hits, _)) = lookups.iter().find(|(name, _)| *name == "spaces").unwrap();
        *hits
    };
    let hits = kept();
    app.get(&w.reader, &read).await.expect(200);
    assert!(kept() > hits, "cached before the search");
    app.post(
        &w.reader,
        &format!("{api}/search"),
        json!({ "query": "hello" }),
    )
    .await
    .expect(200);
    let hits = kept();
    app.get(&w.reader, &read).await.expect(200);
    assert!(kept() > hits, "a search (sent with POST) changes nothing");
}

/// JSON-RPC over MCP's tools call from a site's MCP endpoint: the `result`.
async fn mcp(app: &TestApp, site_path: &str, method: &str, params: Value) -> Value {
    let res = reqwest::Client::new()
        .post(format!("{}{site_path}~gitbook/mcp", app.base))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.unwrap();
    v["result"].clone()
}

/// The outside MCP servers a site names add their tools to its MCP endpoint: listed under
/// the server's name, and called through it with the headers the admins set. One that
/// fails leaves the site's own tools working.
#[tokio::test]
async fn a_sites_mcp_endpoint_offers_its_outside_servers_tools() {
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let w = world(&app).await;
    // The outside server: another site's own MCP endpoint.
    let helpdesk = app.space(&w.admin, &w.org, "Helpdesk", None).await;
    write(
        &app,
        &w,
        &helpdesk,
        json!([{ "operation": "insert_page", "title": "Refunds", "document": { "markdown": "Refunds take a walrus week." } }]),
    )
    .await;
    let (_, helpdesk_path) = published_site(&app, &w, &[&helpdesk]).await;
    // A plain one that records the headers it is sent and has one tool.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let heard = seen.clone();
    let plain = crate::loopback::serve(move |r| {
        heard.lock().unwrap().push(r.head.to_ascii_lowercase());
        let msg: Value = serde_json::from_slice(&r.body).unwrap_or_default();
        let result = match msg["method"].as_str() {
            Some("initialize") => json!({ "protocolVersion": "2025-06-18", "capabilities": { "tools": {} }, "serverInfo": { "name": "plain", "version": "1" } }),
            Some("tools/list") => json!({ "tools": [{ "name": "ping", "description": "Ping", "inputSchema": { "type": "object" } }] }),
            Some("tools/call") => json!({ "content": [{ "type": "text", "text": format!("pong {}", msg["params"]["arguments"]["n"]) }] }),
            _ => return crate::loopback::Reply::ok("application/json", Vec::new()).with_status(202),
        };
        let body = json!({ "jsonrpc": "2.0", "id": msg["id"], "result": result });
        // As an event stream, as servers may answer.
        crate::loopback::Reply::ok("text/event-stream", format!("event: message\ndata: {body}\n\n"))
    })
    .await;

    let docs = app.space(&w.admin, &w.org, "Docs", None).await;
    let (api, path) = published_site(&app, &w, &[&docs]).await;
    let servers = format!("{api}/mcp-servers");
    for (name, url, headers) in [
        (
            "Helpdesk",
            format!("{}{helpdesk_path}~gitbook/mcp", app.base),
            json!({}),
        ),
        (
            "Plain tools",
            format!("{plain}/mcp"),
            json!({ "X-Team": "docs" }),
        ),
        ("Gone", "http://127.0.0.1:9/mcp".to_string(), json!({})),
    ] {
        app.post(
            &w.admin,
            &servers,
            json!({ "name": name, "url": url, "headers": headers }),
        )
        .await
        .expect(201);
    }
    let listed = mcp(&app, &path, "tools/list", json!({})).await;
    let mut names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "Helpdesk__list_pages",
            "Helpdesk__read_page",
            "Helpdesk__search",
            "Plain_tools__ping",
            "list_pages",
            "read_page",
            "search"
        ],
        "{listed}"
    );
    let found = mcp(
        &app,
        &path,
        "tools/call",
        json!({ "name": "Helpdesk__search", "arguments": { "query": "refunds" } }),
    )
    .await;
    assert!(found.to_string().contains("walrus week"), "{found}");
    let pong = mcp(
        &app,
        &path,
        "tools/call",
        json!({ "name": "Plain_tools__ping", "arguments": { "n": 7 } }),
    )
    .await;
    assert_eq!(pong["content"][0]["text"], "pong 7", "{pong}");
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .all(|h| h.contains("x-team: docs")),
        "the admins' headers go with every request"
    );
    // The site's own tools are its own still.
    let own = mcp(
        &app,
        &path,
        "tools/call",
        json!({ "name": "list_pages", "arguments": {} }),
    )
    .await;
    assert!(own.to_string().contains("Welcome"), "{own}");
    let unknown = mcp(
        &app,
        &path,
        "tools/call",
        json!({ "name": "Gone__anything", "arguments": {} }),
    )
    .await;
    assert!(
        unknown.is_null() || unknown["isError"] == json!(true),
        "{unknown}"
    );
}
