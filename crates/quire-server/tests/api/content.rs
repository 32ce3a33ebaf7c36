//! Content through HTTP: authoring batches, reads in both formats, update from main, merge,
//! conflicts, changes, files, and concurrent writers.

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

struct Space {
    id: String,
}

async fn setup(app: &TestApp) -> (Persona, Space) {
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let id = app.space(&alice, &org, "Guide", None).await;
    (alice, Space { id })
}

async fn open_cr(app: &TestApp, who: &Persona, space: &Space, subject: &str) -> String {
    let cr = app
        .post(
            who,
            &format!("/v1/spaces/{}/change-requests", space.id),
            json!({ "subject": subject }),
        )
        .await
        .expect(201);
    cr["id"].as_str().unwrap().to_string()
}

async fn batch(
    app: &TestApp,
    who: &Persona,
    space: &Space,
    cr: &str,
    changes: Value,
) -> crate::harness::Res {
    app.post(
        who,
        &format!(
            "/v1/spaces/{}/change-requests/{cr}/content?compat=false",
            space.id
        ),
        json!({ "changes": changes }),
    )
    .await
}

fn page_ids_by_title(pages: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<(String, String)>) {
        for p in v.as_array().unwrap_or(&Vec::new()) {
            out.push((
                p["title"].as_str().unwrap_or("").to_string(),
                p["id"].as_str().unwrap_or("").to_string(),
            ));
            walk(&p["pages"], out);
        }
    }
    walk(pages, &mut out);
    out
}

fn id_of(pages: &Value, title: &str) -> String {
    page_ids_by_title(pages)
        .into_iter()
        .find(|(t, _)| t == title)
        .unwrap_or_else(|| panic!("no page titled {title} in {pages}"))
        .1
}

#[tokio::test]
async fn author_read_merge_cycle() {
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let cr = open_cr(&app, &alice, &space, "Write the guide").await;
    let res = batch(
        &app,
        &alice,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "ref": "intro", "title": "Introduction", "document": { "markdown": "---\ndescription: Start here\n---\n\n# Introduction\n\nWelcome to **Quire**.\n\n## Install\n\nRun it.\n" } },
            { "operation": "insert_page", "into": "intro", "title": "Details", "document": { "markdown": "See [the intro](/pages/intro).\n" } }
        ]),
    )
    .await
    .expect(200);
    assert_eq!(res["changes"].as_array().unwrap().len(), 2, "{res}");
    assert_eq!(res["changes"][0]["object"], "created_page");
    assert_eq!(res["changes"][0]["ref"], "intro");
    assert_eq!(res["changeRequest"]["object"], "change-request");

    let cr_pages = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/content/pages", space.id),
        )
        .await
        .expect(200);
    let intro = id_of(&cr_pages["pages"], "Introduction");
    let details = id_of(&cr_pages["pages"], "Details");
    let md = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{}/change-requests/{cr}/content/page/{intro}?format=markdown",
                space.id
            ),
        )
        .await
        .expect(200);
    assert!(
        md["markdown"]
            .as_str()
            .unwrap()
            .contains("Welcome to **Quire**."),
        "{md}"
    );
    assert_eq!(md["description"], "Start here");
    let doc = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{}/change-requests/{cr}/content/page/{intro}?format=document",
                space.id
            ),
        )
        .await
        .expect(200);
    assert_eq!(doc["document"]["object"], "document", "{doc}");
    let by_path = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{}/change-requests/{cr}/content/path/introduction/details",
                space.id
            ),
        )
        .await
        .expect(200);
    assert_eq!(by_path["id"], details.as_str());

    // The space's own content has not changed yet.
    let main = app
        .get(&alice, &format!("/v1/spaces/{}/content/pages", space.id))
        .await
        .expect(200);
    assert_eq!(main["pages"], json!([]));

    let changes = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/changes", space.id),
        )
        .await
        .expect(200);
    let kinds: Vec<&str> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["page_created", "page_created"], "{changes}");

    let merged = app
        .post(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/merge", space.id),
            json!({}),
        )
        .await
        .expect(200);
    assert_eq!(merged["result"], "merge");
    let space_json = app
        .get(&alice, &format!("/v1/spaces/{}", space.id))
        .await
        .expect(200);
    assert_eq!(space_json["revision"], merged["revision"]);
    assert_eq!(
        (
            space_json["changeRequests"].clone(),
            space_json["changeRequestsOpen"].clone()
        ),
        (json!(1), json!(0))
    );
    let c = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}", space.id),
        )
        .await
        .expect(200);
    assert_eq!(c["status"], "merged");
    assert_eq!(c["revisionMerged"], merged["revision"]);
    let main = app
        .get(&alice, &format!("/v1/spaces/{}/content/pages", space.id))
        .await
        .expect(200);
    assert_eq!(id_of(&main["pages"], "Introduction"), intro);
    let rev = app
        .get(&alice, &format!("/v1/spaces/{}/content", space.id))
        .await
        .expect(200);
    assert_eq!(rev["object"], "revision");
    assert_eq!(rev["type"], "merge");
    assert_eq!(rev["mergedFrom"]["id"], cr.as_str());
    let page = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{}/content/page/{details}?format=markdown",
                space.id
            ),
        )
        .await
        .expect(200);
    assert!(
        page["markdown"].as_str().unwrap().contains("the intro"),
        "{page}"
    );
    let by_rev = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{}/revisions/{}/page/{intro}",
                space.id,
                merged["revision"].as_str().unwrap()
            ),
        )
        .await
        .expect(200);
    assert_eq!(by_rev["title"], "Introduction");
    app.post(
        &alice,
        &format!("/v1/spaces/{}/change-requests/{cr}/merge", space.id),
        json!({}),
    )
    .await
    .expect_error(409);
}

/// Merges the change request `cr` of `space`.
async fn merge(app: &TestApp, who: &Persona, space: &Space, cr: &str) {
    app.post(
        who,
        &format!("/v1/spaces/{}/change-requests/{cr}/merge", space.id),
        json!({}),
    )
    .await
    .expect(200);
}

async fn seed(app: &TestApp, who: &Persona, space: &Space, body: &str) -> String {
    let cr = open_cr(app, who, space, "seed").await;
    batch(
        app,
        who,
        space,
        &cr,
        json!([{ "operation": "insert_page", "title": "Page", "document": { "markdown": body } }]),
    )
    .await
    .expect(200);
    merge(app, who, space, &cr).await;
    let main = app
        .get(who, &format!("/v1/spaces/{}/content/pages", space.id))
        .await
        .expect(200);
    id_of(&main["pages"], "Page")
}

async fn main_markdown(app: &TestApp, who: &Persona, space: &Space, page: &str) -> String {
    let p = app
        .get(
            who,
            &format!(
                "/v1/spaces/{}/content/page/{page}?format=markdown",
                space.id
            ),
        )
        .await
        .expect(200);
    p["markdown"].as_str().unwrap().to_string()
}

const BODY: &str = "Line one.\n\nLine two.\n\nLine three.\n\nLine four.\n\nLine five.\n";

#[tokio::test]
async fn update_from_main_and_non_overlapping_edits_both_survive() {
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let page = seed(&app, &alice, &space, BODY).await;
    let a = open_cr(&app, &alice, &space, "top").await;
    let b = open_cr(&app, &alice, &space, "bottom").await;
    let edit = |body: &str| json!([{ "operation": "update_page", "page": page, "document": { "markdown": body } }]);
    batch(
        &app,
        &alice,
        &space,
        &a,
        edit(&BODY.replace("Line one.", "Line ONE.")),
    )
    .await
    .expect(200);
    batch(
        &app,
        &alice,
        &space,
        &b,
        edit(&BODY.replace("Line five.", "Line FIVE.")),
    )
    .await
    .expect(200);
    merge(&app, &alice, &space, &a).await;

    let b_json = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{b}", space.id),
        )
        .await
        .expect(200);
    assert_eq!(b_json["outdated"], true, "main moved past b's base");
    let updated = app
        .post(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{b}/update", space.id),
            json!({}),
        )
        .await
        .expect(200);
    assert_eq!(updated["result"], "update");
    let b_json = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{b}", space.id),
        )
        .await
        .expect(200);
    assert_eq!(b_json["outdated"], false);
    assert_eq!(b_json["revision"], updated["revision"]);
    let b_page = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{}/change-requests/{b}/content/page/{page}?format=markdown",
                space.id
            ),
        )
        .await
        .expect(200);
    let text = b_page["markdown"].as_str().unwrap();
    assert!(
        text.contains("Line ONE.") && text.contains("Line FIVE."),
        "{text}"
    );

    merge(&app, &alice, &space, &b).await;
    let text = main_markdown(&app, &alice, &space, &page).await;
    assert!(
        text.contains("Line ONE.") && text.contains("Line FIVE."),
        "{text}"
    );
}

#[tokio::test]
async fn overlapping_edits_conflict_and_change_nothing() {
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let page = seed(&app, &alice, &space, BODY).await;
    let a = open_cr(&app, &alice, &space, "a").await;
    let b = open_cr(&app, &alice, &space, "b").await;
    let edit = |body: &str| json!([{ "operation": "update_page", "page": page, "document": { "markdown": body } }]);
    batch(
        &app,
        &alice,
        &space,
        &a,
        edit(&BODY.replace("Line three.", "Line three, by A.")),
    )
    .await
    .expect(200);
    batch(
        &app,
        &alice,
        &space,
        &b,
        edit(&BODY.replace("Line three.", "Line three, by B.")),
    )
    .await
    .expect(200);
    merge(&app, &alice, &space, &a).await;
    let before = app
        .get(&alice, &format!("/v1/spaces/{}", space.id))
        .await
        .expect(200)["revision"]
        .clone();
    let b_before = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{b}", space.id),
        )
        .await
        .expect(200);

    let msg = app
        .post(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{b}/merge", space.id),
            json!({}),
        )
        .await
        .expect_error(409);
    assert!(msg.contains(&page), "the conflict names the page: {msg}");
    let msg = app
        .post(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{b}/update", space.id),
            json!({}),
        )
        .await
        .expect_error(409);
    assert!(msg.contains(&page), "{msg}");
    assert_eq!(
        app.get(&alice, &format!("/v1/spaces/{}", space.id))
            .await
            .expect(200)["revision"],
        before
    );
    let b_after = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{b}", space.id),
        )
        .await
        .expect(200);
    assert_eq!(b_after["revision"], b_before["revision"]);
    assert_eq!(b_after["status"], "open");
    assert!(main_markdown(&app, &alice, &space, &page)
        .await
        .contains("by A."));
}

#[tokio::test]
async fn invalid_batches_are_rejected_whole() {
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let cr = open_cr(&app, &alice, &space, "x").await;
    let before = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}", space.id),
        )
        .await
        .expect(200)["revision"]
        .clone();
    let msg = batch(
        &app,
        &alice,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "title": "Fine", "document": { "markdown": "ok" } },
            { "operation": "delete_page", "page": "no-such-page" }
        ]),
    )
    .await
    .expect_error(400);
    assert!(msg.contains("changes[1]"), "{msg}");
    let msg = batch(
        &app,
        &alice,
        &space,
        &cr,
        json!([{ "operation": "explode" }]),
    )
    .await
    .expect_error(400);
    assert!(msg.contains("changes[0]"), "{msg}");
    batch(&app, &alice, &space, &cr, json!([]))
        .await
        .expect_error(400);
    let too_many: Vec<Value> = (0..51).map(|i| json!({ "operation": "insert_page", "title": format!("P{i}"), "document": { "markdown": "x" } })).collect();
    batch(&app, &alice, &space, &cr, json!(too_many))
        .await
        .expect_error(400);
    let after = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}", space.id),
        )
        .await
        .expect(200)["revision"]
        .clone();
    assert_eq!(before, after, "a rejected batch changes nothing");
    let pages = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/content/pages", space.id),
        )
        .await
        .expect(200);
    assert_eq!(pages["pages"], json!([]));
}

#[tokio::test]
async fn locked_spaces_refuse_merges() {
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let cr = open_cr(&app, &alice, &space, "x").await;
    batch(
        &app,
        &alice,
        &space,
        &cr,
        json!([{ "operation": "insert_page", "title": "P", "document": { "markdown": "x" } }]),
    )
    .await
    .expect(200);
    app.patch(
        &alice,
        &format!("/v1/spaces/{}", space.id),
        json!({ "editMode": "locked" }),
    )
    .await
    .expect(200);
    let msg = app
        .post(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/merge", space.id),
            json!({}),
        )
        .await
        .expect_error(403);
    assert!(msg.contains("locked"), "{msg}");
    app.patch(
        &alice,
        &format!("/v1/spaces/{}", space.id),
        json!({ "editMode": "live" }),
    )
    .await
    .expect(200);
    merge(&app, &alice, &space, &cr).await;
}

#[tokio::test]
async fn concurrent_batches_and_merges_all_land() {
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let cr = open_cr(&app, &alice, &space, "parallel").await;
    let mut tasks = Vec::new();
    for i in 0..6 {
        let body = json!({ "changes": [{ "operation": "insert_page", "title": format!("Parallel {i}"), "document": { "markdown": format!("Body {i}") } }] });
        let path = format!("/v1/spaces/{}/change-requests/{cr}/content", space.id);
        let (base, token) = (app.base.clone(), alice.token.clone());
        tasks.push(tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{base}{path}"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    let pages = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/content/pages", space.id),
        )
        .await
        .expect(200);
    assert_eq!(
        page_ids_by_title(&pages["pages"]).len(),
        6,
        "every batch landed: {pages}"
    );

    // Two change requests touching different pages, merged at the same time.
    let mut crs = Vec::new();
    for name in ["left", "right"] {
        let c = open_cr(&app, &alice, &space, name).await;
        batch(&app, &alice, &space, &c, json!([{ "operation": "insert_page", "title": name, "document": { "markdown": name } }])).await.expect(200);
        crs.push(c);
    }
    let mut tasks = Vec::new();
    for c in &crs {
        let path = format!("/v1/spaces/{}/change-requests/{c}/merge", space.id);
        let (base, token) = (app.base.clone(), alice.token.clone());
        tasks.push(tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{base}{path}"))
                .bearer_auth(token)
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    let main = app
        .get(&alice, &format!("/v1/spaces/{}/content/pages", space.id))
        .await
        .expect(200);
    let titles: Vec<String> = page_ids_by_title(&main["pages"])
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert!(
        titles.contains(&"left".to_string()) && titles.contains(&"right".to_string()),
        "{titles:?}"
    );
}

/// Writers editing different pages of one change request at once, on two nodes, with
/// comments posted beside them: every edit is acknowledged (the server serialises or
/// retries its own races, never handing them to the client as 409), and each page ends with
/// the last text its writer was told was saved.
#[tokio::test]
async fn writers_of_one_change_request_all_land_without_conflicts() {
    const WRITERS: usize = 32;
    const ROUNDS: usize = 3;
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let (alice, space) = setup(&app).await;
    let cr = open_cr(&app, &alice, &space, "busy").await;
    let inserts: Vec<Value> = (0..WRITERS)
        .map(|i| json!({ "operation": "insert_page", "title": format!("Page {i}"), "document": { "markdown": "Start." } }))
        .collect();
    batch(&app, &alice, &space, &cr, json!(inserts))
        .await
        .expect(200);
    let pages = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/content/pages", space.id),
        )
        .await
        .expect(200);
    let ids: Vec<String> = page_ids_by_title(&pages["pages"])
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    assert_eq!(ids.len(), WRITERS);
    let mut tasks = Vec::new();
    for (i, page) in ids.iter().enumerate() {
        // Half the writers go through each node.
        let base = if i % 2 == 0 {
            app.base.clone()
        } else {
            other.base.clone()
        };
        let (token, space, cr, page) = (
            alice.token.clone(),
            space.id.clone(),
            cr.clone(),
            page.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut statuses = Vec::new();
            for round in 0..ROUNDS {
                let body = json!({ "changes": [{ "operation": "update_page", "page": page, "document": { "markdown": format!("Writer {i}, round {round}.") } }] });
                let res = client
                    .post(format!("{base}/v1/spaces/{space}/change-requests/{cr}/content"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                statuses.push(res.status().as_u16());
                if i % 4 == 0 {
                    let res = client
                        .post(format!("{base}/v1/spaces/{space}/comments"))
                        .bearer_auth(&token)
                        .json(&json!({ "body": { "markdown": format!("Comment {i}.{round}") } }))
                        .send()
                        .await
                        .unwrap();
                    statuses.push(res.status().as_u16());
                }
            }
            (page, statuses)
        }));
    }
    for task in tasks {
        let (page, statuses) = task.await.unwrap();
        assert!(statuses.iter().all(|s| *s == 200), "{page}: {statuses:?}");
        let body = app
            .get(
                &alice,
                &format!(
                    "/v1/spaces/{}/change-requests/{cr}/content/page/{page}?format=markdown",
                    space.id
                ),
            )
            .await
            .expect(200);
        assert!(
            body["markdown"]
                .as_str()
                .unwrap()
                .contains(&format!("round {}.", ROUNDS - 1)),
            "{page}: {body}"
        );
    }
    let comments = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/comments?limit=100", space.id),
        )
        .await
        .expect(200);
    assert_eq!(
        comments["items"].as_array().unwrap().len(),
        WRITERS / 4 * ROUNDS
    );
}

/// A 2×3 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZBwEEq5ZtpAAAAABJRU5ErkJggg==";

#[tokio::test]
async fn files_are_stored_and_downloaded_by_signed_url() {
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let cr = open_cr(&app, &alice, &space, "files").await;
    let res = batch(
        &app,
        &alice,
        &space,
        &cr,
        json!([{ "operation": "insert_files", "files": [{ "base64": PNG, "name": "pixel.png" }] }]),
    )
    .await
    .expect(200);
    let file = &res["insertedFiles"][0];
    assert_eq!(file["contentType"], "image/png");
    assert_eq!(file["dimensions"], json!({ "width": 2, "height": 3 }));
    let file_id = file["id"].as_str().unwrap();
    let listed = app
        .get(
            &alice,
            &format!("/v1/spaces/{}/change-requests/{cr}/content/files", space.id),
        )
        .await
        .expect(200);
    assert_eq!(listed["count"], 1);
    let got = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{}/change-requests/{cr}/content/files/{file_id}",
                space.id
            ),
        )
        .await
        .expect(200);
    let url = got["downloadURL"].as_str().unwrap().to_string();
    let bytes = reqwest::get(&url).await.unwrap();
    assert_eq!(bytes.status().as_u16(), 200);
    assert_eq!(bytes.headers()["content-type"], "image/png");
    let body = bytes.bytes().await.unwrap();
    use base64::Engine;
    assert_eq!(
        body.as_ref(),
        base64::engine::general_purpose::STANDARD
            .decode(PNG)
            .unwrap()
            .as_slice()
    );
    // A tampered signature is refused.
    let tampered = url.replace("signature=", "signature=x");
    assert_eq!(
        reqwest::get(&tampered).await.unwrap().status().as_u16(),
        403
    );
    batch(
        &app,
        &alice,
        &space,
        &cr,
        json!([{ "operation": "insert_files", "files": [{ "base64": "%%%", "name": "bad.bin" }] }]),
    )
    .await
    .expect_error(400);
}

/// The one file in `dir`, once a background write has put it there.
pub async fn eventually_stored(dir: &std::path::Path) -> std::path::PathBuf {
    derived_files(dir, 1).await.remove(0)
}

/// The files in `dir`, once there are `n` (they are written in the background). The blob
/// store writes a staging file (its name holds `#`) and renames it: that one is not counted.
pub async fn derived_files(dir: &std::path::Path, n: usize) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for _ in 0..300 {
        found = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| !p.to_string_lossy().contains('#'))
                    .collect()
            })
            .unwrap_or_default();
        if found.len() == n {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{} files in {}, not {n}", found.len(), dir.display());
}

#[tokio::test]
async fn page_listings_are_stored_for_the_first_read_after_a_restart() {
    // Nodes of one deployment share their public URL (pages carry app URLs).
    let app = TestApp::start_with(|c| c.public_url = Some("http://docs.example.com".into())).await;
    let (alice, space) = setup(&app).await;
    seed(&app, &alice, &space, "Stored once.\n").await;
    let path = format!("/v1/spaces/{}/content/pages", space.id);
    let listed = app.get(&alice, &path).await.expect(200);
    let dir = app.config.data_dir.join("blobs/derived").join(&space.id);
    let stored = eventually_stored(&dir).await;
    let bytes = std::fs::read(&stored).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), listed);
    // A node that never rendered the listing serves the stored one: replaced here by another
    // listing to tell the two apart.
    std::fs::write(&stored, br#"{"pages":[]}"#).unwrap();
    let fresh = app.another_node().await;
    assert_eq!(
        fresh.get(&alice, &path).await.expect(200)["pages"],
        json!([])
    );
    // The revision's own answer embeds the same stored tree.
    let revision = fresh
        .get(&alice, &format!("/v1/spaces/{}/content", space.id))
        .await
        .expect(200);
    assert_eq!(revision["pages"], json!([]));
    // The node that rendered it keeps serving its own copy.
    assert_eq!(app.get(&alice, &path).await.expect(200), listed);
}

/// A revision's answer appends its stored page tree unparsed, so a stored listing that is not
/// whole (a torn or foreign file) is never used: the listing is rendered again.
#[tokio::test]
async fn a_malformed_stored_listing_is_rendered_again() {
    let app = TestApp::start_with(|c| c.public_url = Some("http://docs.example.com".into())).await;
    let (alice, space) = setup(&app).await;
    seed(&app, &alice, &space, "Stored once.\n").await;
    let path = format!("/v1/spaces/{}/content/pages", space.id);
    let revision_path = format!("/v1/spaces/{}/content", space.id);
    let listed = app.get(&alice, &path).await.expect(200);
    let revision = app.get(&alice, &revision_path).await.expect(200);
    assert_eq!(revision["pages"], listed["pages"]);
    let dir = app.config.data_dir.join("blobs/derived").join(&space.id);
    let stored = eventually_stored(&dir).await;
    for torn in [
        &br#"{"pages":[{"id":"x"}"#[..],
        br#"{"pages":{}}"#,
        b"{\"pages\":[]}]}",
    ] {
        std::fs::write(&stored, torn).unwrap();
        let fresh = app.another_node().await;
        assert_eq!(fresh.get(&alice, &path).await.expect(200), listed);
        let again = fresh.get(&alice, &revision_path).await.expect(200);
        assert_eq!(again["pages"], listed["pages"]);
        // The node stores its rendering again; wait for it, so the next round's file stays.
        for _ in 0..300 {
            let now = std::fs::read(&stored).unwrap_or_default();
            if serde_json::from_slice::<Value>(&now).ok().as_ref() == Some(&listed) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}

/// A burst of first reads of a revision on a node that holds none of it (as after a
/// restart) reads and decodes it once; every read gets the same answer.
#[tokio::test]
async fn a_burst_of_first_reads_decodes_the_revision_once() {
    let app = TestApp::start_with(|c| c.public_url = Some("http://docs.example.com".into())).await;
    let (alice, space) = setup(&app).await;
    let cr = open_cr(&app, &alice, &space, "many").await;
    let pages: Vec<Value> = (0..50)
        .map(|i| {
            json!({ "operation": "insert_page", "title": format!("Page {i}"),
                          "document": { "markdown": format!("Body {i}.\n\n- a\n- b\n") } })
        })
        .collect();
    batch(&app, &alice, &space, &cr, Value::Array(pages))
        .await
        .expect(200);
    merge(&app, &alice, &space, &cr).await;
    let path = format!("/v1/spaces/{}/content/files", space.id);
    let expected = app.get(&alice, &path).await.expect(200);
    let fresh = app.another_node().await;
    assert_eq!(fresh.state.content.decodes(false), 0);
    let reads = (0..12).map(|_| fresh.get(&alice, &path));
    for read in futures_util::future::join_all(reads).await {
        assert_eq!(read.expect(200), expected);
    }
    assert_eq!(fresh.state.content.decodes(false), 1);
}

/// A merge reads the change request's base, both sides and the revision the search index
/// holds. They share all but their changed page bodies, and the cache weighs a shared body
/// once: with room for little more than one of them weighed whole, a three-way merge still
/// finds them all cached and decodes nothing from the database.
#[tokio::test]
async fn revisions_sharing_their_bodies_stay_cached_together_through_a_merge() {
    // A third of 1 MiB (about 349 KB) holds decoded revisions; this space's text is 200 KB.
    let app = TestApp::start_with(|c| c.cache_mb = 1).await;
    let (alice, space) = setup(&app).await;
    let cr = open_cr(&app, &alice, &space, "pages").await;
    // In batches of ten, under the test server's body limit.
    for start in (0..40).step_by(10) {
        let pages: Vec<Value> = (start..start + 10)
            .map(|i| {
                json!({ "operation": "insert_page", "title": format!("Page {i}"),
                        "document": { "markdown": format!("Body {i}: {}\n", "text ".repeat(1000)) } })
            })
            .collect();
        batch(&app, &alice, &space, &cr, Value::Array(pages))
            .await
            .expect(200);
    }
    merge(&app, &alice, &space, &cr).await;
    let listed = app
        .get(&alice, &format!("/v1/spaces/{}/content/pages", space.id))
        .await
        .expect(200);
    let ids: Vec<String> = listed["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    // Two change requests from the same revision, each changing one page.
    let mut crs = Vec::new();
    for (n, id) in ids.iter().take(2).enumerate() {
        let cr = open_cr(&app, &alice, &space, &format!("edit {n}")).await;
        let change = json!([{ "operation": "update_page", "page": id,
                              "document": { "markdown": format!("Edited {n}.\n") } }]);
        batch(&app, &alice, &space, &cr, change).await.expect(200);
        crs.push(cr);
    }
    let before = app.state.content.decodes(false);
    merge(&app, &alice, &space, &crs[0]).await;
    merge(&app, &alice, &space, &crs[1]).await;
    assert_eq!(app.state.content.decodes(false), before);
    assert!(app.state.content.revisions.len() >= 3);
    let content = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{}/content/page/{}?format=markdown",
                space.id, ids[1]
            ),
        )
        .await
        .expect(200);
    assert_eq!(content["markdown"], "Edited 1.\n");
}

/// What was derived from a space's earlier revisions (here their stored page listings) is
/// removed when the space next moves, once older than a day; its current revision's stays,
/// and so does anything younger.
#[tokio::test]
async fn derived_bytes_of_earlier_revisions_are_pruned_after_a_day() {
    use quire_server::domain::{content::DERIVED_GRACE_MS, jobs};
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let dir = app.config.data_dir.join("blobs/derived").join(&space.id);
    // Each seed merges a change request and reads the listing, which stores it.
    seed(&app, &alice, &space, "First.\n").await;
    derived_files(&dir, 1).await;
    seed(&app, &alice, &space, "Second.\n").await;
    derived_files(&dir, 2).await;
    jobs::run_due(&app.state).await.unwrap();
    // Both are younger than a day: kept.
    let young = derived_files(&dir, 2).await;

    // A day later (their files aged by a day), the next move prunes both.
    for file in &young {
        crate::harness::age_file(file, DERIVED_GRACE_MS + 60_000);
    }
    // (The job worker may run the pruning before this node stores the new listing, or
    // after: the new listing is kept either way.)
    seed(&app, &alice, &space, "Third.\n").await;
    jobs::run_due(&app.state).await.unwrap();
    // The worker may hold the job instead of `run_due`: wait for its deletions.
    for _ in 0..300 {
        if young.iter().all(|p| !p.exists()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(young.iter().all(|p| !p.exists()), "{young:?}");
    let left = derived_files(&dir, 1).await;
    let listing = app
        .get(&alice, &format!("/v1/spaces/{}/content/pages", space.id))
        .await
        .expect(200);
    let kept: Value = serde_json::from_slice(&std::fs::read(&left[0]).unwrap()).unwrap();
    assert_eq!(kept, listing);
    assert!(listing.to_string().contains("Page"), "{listing}");
}

#[tokio::test]
async fn a_space_waiting_to_be_pruned_is_queued_once() {
    use quire_server::{domain::content::PRUNE_JOB, store::jobs};
    let app = TestApp::start().await;
    // Due tomorrow, so that no worker claims them while the test looks.
    let later = app.state.now() + 86_400_000;
    let mut tx = app.state.db.begin().await.unwrap();
    tx.touches(&[]);
    let queued = [
        ("space-a", later),
        ("space-a", later),
        ("space-b", later),
        // Due before the waiting one: it would not run in time, so it is queued.
        ("space-a", later - 1),
    ];
    let mut added = Vec::new();
    for (space, run_at) in queued {
        added.push(
            jobs::enqueue_once(&mut tx, PRUNE_JOB, space, run_at, run_at)
                .await
                .unwrap(),
        );
    }
    tx.commit().await.unwrap();
    assert_eq!(added, [true, false, true, true]);
    assert_eq!(jobs::count(&app.state.db, PRUNE_JOB).await.unwrap(), 3);
}

/// `listRevisionPageMetaLinks`: a page of a space no translation links answers no meta
/// links (`{}`: Quire keeps no canonical address of a page); an unknown page, revision or
/// space answers 404 with the official error body.
#[tokio::test]
async fn a_page_s_meta_links_in_a_revision() {
    let app = TestApp::start().await;
    let (alice, space) = setup(&app).await;
    let page = seed(&app, &alice, &space, "Some text.\n").await;
    let revision = app
        .get(&alice, &format!("/v1/spaces/{}", space.id))
        .await
        .expect(200)["revision"]
        .as_str()
        .unwrap()
        .to_string();
    let at = format!("/v1/spaces/{}/revisions/{revision}", space.id);
    let links = app
        .get(&alice, &format!("{at}/page/{page}/meta-links"))
        .await
        .expect(200);
    assert_eq!(links, json!({}));
    // A later revision without the page answers 404 for it; the older one still has it.
    let cr = open_cr(&app, &alice, &space, "Remove").await;
    batch(
        &app,
        &alice,
        &space,
        &cr,
        json!([{ "operation": "delete_page", "page": page }]),
    )
    .await
    .expect(200);
    merge(&app, &alice, &space, &cr).await;
    let later = app
        .get(&alice, &format!("/v1/spaces/{}", space.id))
        .await
        .expect(200)["revision"]
        .as_str()
        .unwrap()
        .to_string();
    app.get(
        &alice,
        &format!(
            "/v1/spaces/{}/revisions/{later}/page/{page}/meta-links",
            space.id
        ),
    )
    .await
    .expect_error(404);
    app.get(&alice, &format!("{at}/page/{page}/meta-links"))
        .await
        .expect(200);
    app.get(&alice, &format!("{at}/page/nosuchpage/meta-links"))
        .await
        .expect_error(404);
    app.get(
        &alice,
        &format!(
            "/v1/spaces/{}/revisions/nosuchrev/page/{page}/meta-links",
            space.id
        ),
    )
    .await
    .expect_error(404);
    app.get(
        &alice,
        &format!("/v1/spaces/nosuchspace/revisions/{revision}/page/{page}/meta-links"),
    )
    .await
    .expect_error(404);
}
