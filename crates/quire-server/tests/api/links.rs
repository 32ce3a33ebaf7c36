//! Links and backlinks through HTTP: statuses, stats, the status filter, page links, page
//! and file backlinks, change-request scope (stats of links broken by the change request),
//! recomputation after a change of one page, and paging.

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp, PNG};

fn ids_by_title(pages: &Value, out: &mut Vec<(String, String)>) {
    for p in pages.as_array().into_iter().flatten() {
        out.push((
            p["title"].as_str().unwrap().to_string(),
            p["id"].as_str().unwrap().to_string(),
        ));
        ids_by_title(&p["pages"], out);
    }
}

async fn page_id(app: &TestApp, who: &Persona, space: &str, title: &str) -> String {
    let pages = app
        .get(who, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let mut all = Vec::new();
    ids_by_title(&pages["pages"], &mut all);
    all.into_iter()
        .find(|(t, _)| t == title)
        .unwrap_or_else(|| panic!("no page {title}"))
        .1
}

struct Fixture {
    alice: Persona,
    space: String,
    home: String,
    guide: String,
    file: String,
}

/// A space with a file and two pages: Home links to Guide, to a missing page, to an anchor
/// of Guide that exists and one that does not, to its own heading, to the web, to the app
/// itself, and shows the file and a missing file; Guide links back to Home.
async fn fixture(app: &TestApp) -> Fixture {
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    let cr = app.open_change_request(&alice, &space, "links").await;
    let res = app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([{ "operation": "insert_files", "files": [{ "base64": PNG, "name": "pixel.png" }] }]),
    )
    .await;
    let file = res["insertedFiles"][0]["id"].as_str().unwrap().to_string();
    let app_url = app.base.clone();
    let home = format!(
        "## Overview\n\nRead [the guide](/pages/guide), [a lost page](/pages/nowhere), \
         [setup](/pages/guide#setup), [a lost section](/pages/guide#missing), \
         [up](#overview), [the web](https://example.com/a) and [the app]({app_url}/s/x).\n\n\
         ![pixel](/files/{file})\n\n![gone](/files/nofile)\n"
    );
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "ref": "home", "title": "Home", "document": { "markdown": home } },
            { "operation": "insert_page", "ref": "guide", "title": "Guide", "document": { "markdown": "## Setup\n\nBack [home](/pages/home).\n" } }
        ]),
    )
    .await;
    app.merge_change_request(&alice, &space, &cr).await;
    let home = page_id(app, &alice, &space, "Home").await;
    let guide = page_id(app, &alice, &space, "Guide").await;
    Fixture {
        alice,
        space,
        home,
        guide,
        file,
    }
}

fn statuses(list: &Value) -> Vec<String> {
    let mut s: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["status"].as_str().unwrap().to_string())
        .collect();
    s.sort();
    s
}

fn location_pages(item: &Value) -> Vec<String> {
    item["locationReferences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            assert_eq!(l["kind"], "page");
            assert_eq!(l["organization"]["object"], "organization");
            assert_eq!(l["space"]["object"], "space");
            l["page"]["id"].as_str().unwrap().to_string()
        })
        .collect()
}

#[tokio::test]
async fn space_links_with_statuses_stats_and_filter() {
    let app = TestApp::start().await;
    let f = fixture(&app).await;
    let all = app
        .get(&f.alice, &format!("/v1/spaces/{}/links", f.space))
        .await
        .expect(200);
    // Targets: guide, nowhere, guide#setup, guide#missing, home#overview, example.com,
    // the app, the file, the missing file, and Guide's link to home.
    assert_eq!(all["count"], 10, "{all}");
    assert_eq!(all["stats"]["total"], 10);
    assert_eq!(all["stats"]["broken"]["total"], 3);
    assert!(all["stats"]["broken"].get("changeRequest").is_none());
    assert_eq!(
        statuses(&all),
        ["broken", "broken", "broken", "in-app", "ok", "ok", "ok", "ok", "ok", "ok"]
    );
    let broken = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/links?status=broken", f.space),
        )
        .await
        .expect(200);
    assert_eq!(broken["count"], 3);
    // Stats stay those of the whole list.
    assert_eq!(broken["stats"]["total"], 10);
    for item in broken["items"].as_array().unwrap() {
        assert_eq!(item["status"], "broken");
        assert_eq!(location_pages(item), vec![f.home.clone()]);
    }
    // The broken anchor is located in its (existing) page.
    let anchor = broken["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["targetReference"]["internalLocation"]["anchor"] == "missing")
        .expect("broken anchor listed");
    assert_eq!(anchor["targetReference"]["page"]["id"], json!(f.guide));
    let in_app = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/links?status=in-app", f.space),
        )
        .await
        .expect(200);
    assert_eq!(in_app["count"], 1);
    assert_eq!(in_app["items"][0]["targetReference"]["kind"], "url");
    let ok = app
        .get(&f.alice, &format!("/v1/spaces/{}/links?status=ok", f.space))
        .await
        .expect(200);
    let file_item = ok["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["targetReference"]["kind"] == "file")
        .expect("file link");
    assert_eq!(file_item["relation"], "dependsOn");
    assert_eq!(file_item["targetReference"]["file"]["id"], json!(f.file));
    let msg = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/links?status=dead", f.space),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("status"), "{msg}");
    // Paging walks every link once.
    let mut seen = Vec::new();
    let mut path = format!("/v1/spaces/{}/links?limit=4", f.space);
    loop {
        let page = app.get(&f.alice, &path).await.expect(200);
        seen.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next"]["page"].as_str() {
            Some(next) => path = format!("/v1/spaces/{}/links?limit=4&page={next}", f.space),
            None => break,
        }
    }
    assert_eq!(seen.len(), 10);
}

#[tokio::test]
async fn page_links_and_backlinks_of_pages_and_files() {
    let app = TestApp::start().await;
    let f = fixture(&app).await;
    let from_guide = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/content/page/{}/links", f.space, f.guide),
        )
        .await
        .expect(200);
    assert_eq!(from_guide["count"], 1, "{from_guide}");
    assert_eq!(from_guide["stats"]["total"], 1);
    assert_eq!(
        from_guide["items"][0]["targetReference"]["page"]["id"],
        json!(f.home)
    );
    let from_home = app
        .get(
            &f.alice,
            &format!(
                "/v1/spaces/{}/content/page/{}/links?status=broken",
                f.space, f.home
            ),
        )
        .await
        .expect(200);
    assert_eq!(from_home["count"], 3);
    assert_eq!(from_home["stats"]["total"], 9);
    // Backlinks: Guide is linked from Home (directly and through its anchors, once).
    let back = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/content/page/{}/backlinks", f.space, f.guide),
        )
        .await
        .expect(200);
    assert_eq!(back["count"], 1);
    assert_eq!(back["items"][0]["kind"], "page");
    assert_eq!(back["items"][0]["page"]["id"], json!(f.home));
    // Home links to itself (its own heading) and Guide links to it: in navigation order.
    let back = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/content/page/{}/backlinks", f.space, f.home),
        )
        .await
        .expect(200);
    let ids: Vec<&str> = back["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["page"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [f.home.as_str(), f.guide.as_str()]);
    let files = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/content/files/{}/backlinks", f.space, f.file),
        )
        .await
        .expect(200);
    assert_eq!(files["count"], 1);
    assert_eq!(files["items"][0]["page"]["id"], json!(f.home));
    // Unknown pages and files are 404.
    app.get(
        &f.alice,
        &format!("/v1/spaces/{}/content/page/nope/backlinks", f.space),
    )
    .await
    .expect_error(404);
    app.get(
        &f.alice,
        &format!("/v1/spaces/{}/content/page/nope/links", f.space),
    )
    .await
    .expect_error(404);
    app.get(
        &f.alice,
        &format!("/v1/spaces/{}/content/files/nope/backlinks", f.space),
    )
    .await
    .expect_error(404);
}

#[tokio::test]
async fn change_request_scope_counts_links_it_broke() {
    let app = TestApp::start().await;
    let f = fixture(&app).await;
    let cr = app.open_change_request(&f.alice, &f.space, "links").await;
    // The change request deletes Guide: Home's links to it (page and the good anchor) break,
    // and Guide's own link to Home goes away.
    app.edit_change_request(
        &f.alice,
        &f.space,
        &cr,
        json!([{ "operation": "delete_page", "page": f.guide }]),
    )
    .await;
    let in_cr = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/links", f.space),
        )
        .await
        .expect(200);
    assert_eq!(in_cr["stats"]["total"], 9, "{in_cr}");
    assert_eq!(in_cr["stats"]["broken"]["total"], 5);
    assert_eq!(in_cr["stats"]["broken"]["changeRequest"], 2);
    let introduced = app
        .get(
            &f.alice,
            &format!(
                "/v1/spaces/{}/change-requests/{cr}/links?status=broken&brokenContext=change-request",
                f.space
            ),
        )
        .await
        .expect(200);
    assert_eq!(introduced["count"], 2);
    // The space itself is unchanged.
    let space = app
        .get(&f.alice, &format!("/v1/spaces/{}/links", f.space))
        .await
        .expect(200);
    assert_eq!(space["stats"]["broken"]["total"], 3);
    // Backlinks in the change request: Home is no longer linked from Guide.
    let back = app
        .get(
            &f.alice,
            &format!(
                "/v1/spaces/{}/change-requests/{cr}/content/page/{}/backlinks",
                f.space, f.home
            ),
        )
        .await
        .expect(200);
    assert_eq!(back["count"], 1);
    let page_links = app
        .get(
            &f.alice,
            &format!(
                "/v1/spaces/{}/change-requests/{cr}/content/page/{}/links",
                f.space, f.home
            ),
        )
        .await
        .expect(200);
    assert_eq!(page_links["stats"]["broken"]["total"], 5);
    let files = app
        .get(
            &f.alice,
            &format!(
                "/v1/spaces/{}/change-requests/{cr}/content/files/{}/backlinks",
                f.space, f.file
            ),
        )
        .await
        .expect(200);
    assert_eq!(files["count"], 1);
    app.get(
        &f.alice,
        &format!("/v1/spaces/{}/change-requests/nope/links", f.space),
    )
    .await
    .expect_error(404);
}

#[tokio::test]
async fn a_changed_page_updates_the_links() {
    let app = TestApp::start().await;
    let f = fixture(&app).await;
    let before = app
        .get(&f.alice, &format!("/v1/spaces/{}/links", f.space))
        .await
        .expect(200);
    assert_eq!(before["stats"]["broken"]["total"], 3);
    // Fix Home's broken links and add one to a new missing page, in one changed page.
    let cr = app.open_change_request(&f.alice, &f.space, "links").await;
    app.edit_change_request(
        &f.alice,
        &f.space,
        &cr,
        json!([{ "operation": "update_page", "page": f.home, "document": { "markdown": "## Overview\n\nRead [the guide](/pages/guide-missing).\n" } }]),
    )
    .await;
    app.merge_change_request(&f.alice, &f.space, &cr).await;
    let after = app
        .get(&f.alice, &format!("/v1/spaces/{}/links", f.space))
        .await
        .expect(200);
    // Guide → Home, and Home → the missing page.
    assert_eq!(after["stats"]["total"], 2, "{after}");
    assert_eq!(after["stats"]["broken"]["total"], 1);
    let from_guide = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/content/page/{}/links", f.space, f.guide),
        )
        .await
        .expect(200);
    assert_eq!(from_guide["items"][0]["status"], "ok");
}
