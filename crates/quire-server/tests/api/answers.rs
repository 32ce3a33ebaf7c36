//! Kept answers (`quire_server::answers`): the reads of spaces, pages, change requests and
//! listings are served again from memory, with the edge's own headers, and never once what
//! they rest on has changed: on the node that made the change at once, on another node
//! within the access cache's bound. (Every revoked access is covered by `access_cache.rs`,
//! whose reads go through kept answers too; writes to listings by `listings.rs`.)

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

/// A space holding one page, with an open change request and a comment.
struct World {
    admin: Persona,
    reader: Persona,
    space: String,
    page: String,
    /// The change request whose merge made the space's current revision.
    merged: String,
    reads: Vec<String>,
}

async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let reader = app.persona("reader").await;
    let org = app.org(&admin, "Acme").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    let space = app.space(&admin, &org, "Docs", None).await;
    let cr = app.open_change_request(&admin, &space, "Start").await;
    app.edit_change_request(
        &admin,
        &space,
        &cr,
        json!([{ "operation": "insert_page", "title": "Guide",
                 "document": { "markdown": "First words." } }]),
    )
    .await;
    app.merge_change_request(&admin, &space, &cr).await;
    let pages = app
        .get(&admin, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let page = pages["pages"][0]["id"].as_str().unwrap().to_string();
    let revision = app
        .get(&admin, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .as_str()
        .unwrap()
        .to_string();
    let open = app.open_change_request(&admin, &space, "Open").await;
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/comments"),
        json!({ "body": { "markdown": "Hello" } }),
    )
    .await
    .expect(200);
    let s = format!("/v1/spaces/{space}");
    let reads = vec![
        s.clone(),
        format!("{s}/content"),
        format!("{s}/revisions/{revision}"),
        format!("{s}/content/page/{page}?format=markdown"),
        format!("{s}/content/page/{page}?format=document"),
        format!("{s}/content/path/guide"),
        format!("{s}/content/pages"),
        format!("{s}/revisions/{revision}/page/{page}"),
        format!("{s}/revisions/{revision}/page/{page}/document"),
        format!("{s}/change-requests/{open}"),
        format!("{s}/change-requests"),
        format!("{s}/comments"),
    ];
    World {
        admin,
        reader,
        space,
        page,
        merged: cr,
        reads,
    }
}

fn kept_hits(app: &TestApp) -> u64 {
    app.state.answers.counts().0
}

/// A read with its headers.
async fn fetch(app: &TestApp, who: &Persona, path: &str) -> (reqwest::header::HeaderMap, Value) {
    let res = reqwest::Client::new()
        .get(format!("{}{path}", app.base))
        .bearer_auth(&who.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{path}");
    let headers = res.headers().clone();
    (headers, res.json().await.unwrap())
}

#[tokio::test]
async fn reads_are_served_again_with_the_edges_headers_and_counted() {
    let app = TestApp::start_with(|c| c.metrics_token = Some("scrape".into())).await;
    let w = world(&app).await;
    for path in &w.reads {
        // The first read fills the caches, the second is made from them and kept.
        let (made, first) = fetch(&app, &w.admin, path).await;
        let (_, second) = fetch(&app, &w.admin, path).await;
        let before = kept_hits(&app);
        let (headers, third) = fetch(&app, &w.admin, path).await;
        assert_eq!(kept_hits(&app), before + 1, "{path} is served from memory");
        assert_eq!(third, first, "{path}");
        assert_eq!(second, first, "{path}");
        assert!(headers.contains_key("x-request-id"), "{path}");
        for name in ["content-type", "ratelimit-remaining"] {
            assert_eq!(headers.get(name), made.get(name), "{path}: {name}");
        }
    }
    // Each request has its own id, kept or not.
    let path = &w.reads[0];
    let (a, _) = fetch(&app, &w.admin, path).await;
    let (b, _) = fetch(&app, &w.admin, path).await;
    assert_ne!(a["x-request-id"], b["x-request-id"]);
    // Counted in the metrics under their operation.
    let metrics = reqwest::Client::new()
        .get(format!("{}/metrics", app.base))
        .bearer_auth("scrape")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("quire_http_requests_total{")
                && l.contains("operation=\"getSpaceById\"")
                && l.contains("status=\"200\"")
        })
        .unwrap_or_else(|| panic!("getSpaceById is counted:\n{metrics}"));
    let counted: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(counted >= 5.0, "{line}");
    assert!(
        metrics
            .lines()
            .any(|l| l.contains("quire_access_cache_hits_total{name=\"kept\"}")),
        "kept answers are counted:\n{metrics}"
    );
}

#[tokio::test]
async fn each_token_has_its_own_answers() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let path = format!("/v1/spaces/{}", w.space);
    for _ in 0..3 {
        let mine = app.get(&w.admin, &path).await.expect(200);
        let theirs = app.get(&w.reader, &path).await.expect(200);
        assert_eq!(mine["permissions"]["admin"], true);
        assert_eq!(theirs["permissions"]["admin"], false);
    }
    // A token that is not known is refused, whatever another token was answered.
    let res = app
        .call(reqwest::Method::GET, &path, Some("quire_unknown"), None)
        .await;
    assert_eq!(res.status, 401);
}

#[tokio::test]
async fn a_content_change_is_read_at_once_here_and_within_the_bound_elsewhere() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let w = world(&app).await;
    let page = format!(
        "/v1/spaces/{}/content/page/{}?format=markdown",
        w.space, w.page
    );
    let text = |v: &Value| v["markdown"].as_str().unwrap_or_default().to_string();
    for node in [&app, &other] {
        for _ in 0..3 {
            let read = node.get(&w.reader, &page).await.expect(200);
            assert!(text(&read).contains("First words."), "{read}");
        }
    }
    let hits = kept_hits(&app);
    let cr = app.open_change_request(&w.admin, &w.space, "Edit").await;
    app.edit_change_request(
        &w.admin,
        &w.space,
        &cr,
        json!([{ "operation": "update_page", "page": w.page,
                 "document": { "markdown": "Second words." } }]),
    )
    .await;
    app.merge_change_request(&w.admin, &w.space, &cr).await;
    assert!(text(&app.get(&w.reader, &page).await.expect(200)).contains("Second words."));
    assert_eq!(
        kept_hits(&app),
        hits,
        "the answer kept before the merge is not served"
    );
    other
        .clock
        .advance_ms(other.config.access_cache_ms as i64 + 1);
    assert!(text(&other.get(&w.reader, &page).await.expect(200)).contains("Second words."));
}

#[tokio::test]
async fn an_answer_does_not_outlive_the_oldest_lookup_it_was_made_from() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let w = world(&app).await;
    let path = format!("/v1/spaces/{}", w.space);
    let ttl = other.config.access_cache_ms as i64;
    // The space's row is cached by another read half a bound before the answer is made
    // and kept: the answer must expire with the row, not a bound after it was made.
    other
        .get(&w.admin, &format!("{path}/content/pages"))
        .await
        .expect(200);
    other.clock.advance_ms(ttl / 2);
    for _ in 0..3 {
        assert_eq!(
            other.get(&w.admin, &path).await.expect(200)["title"],
            "Docs"
        );
    }
    app.patch(&w.admin, &path, json!({ "title": "Renamed" }))
        .await
        .expect(200);
    other.clock.advance_ms(ttl / 2 + 1);
    assert_eq!(
        other.get(&w.admin, &path).await.expect(200)["title"],
        "Renamed"
    );
}

#[tokio::test]
async fn an_answer_made_from_the_database_is_not_kept() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let path = &w.reads[1];
    for _ in 0..3 {
        app.get(&w.admin, path).await.expect(200);
    }
    // Past the bound, every lookup is read again from the database: that answer is not
    // kept, so the next read is made again (from the caches, and kept).
    app.clock.advance_ms(app.config.access_cache_ms as i64 + 1);
    let before = kept_hits(&app);
    app.get(&w.admin, path).await.expect(200);
    app.get(&w.admin, path).await.expect(200);
    assert_eq!(
        kept_hits(&app),
        before,
        "an answer that read the database is not kept"
    );
    app.get(&w.admin, path).await.expect(200);
    assert_eq!(kept_hits(&app), before + 1);
}

#[tokio::test]
async fn other_reads_are_not_looked_up() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    // A change request's content is found through its row, read every time; search reads
    // its index; a file listing is not kept. None is reusable, so none is even looked up.
    let cr = app.open_change_request(&w.admin, &w.space, "Draft").await;
    let paths = [
        format!("/v1/spaces/{}/change-requests/{cr}/content/pages", w.space),
        format!("/v1/spaces/{}/search?query=words", w.space),
        format!("/v1/spaces/{}/content/files", w.space),
    ];
    let counts = app.state.answers.counts();
    for path in &paths {
        for _ in 0..3 {
            app.get(&w.admin, path).await.expect(200);
        }
    }
    assert_eq!(app.state.answers.counts(), counts);
}

/// A merge revision shows the change request it came from, which is kept with its space's
/// listings: the answer is served again only at the listing version it was made at.
#[tokio::test]
async fn a_merge_revision_is_kept_with_its_spaces_listings() {
    // A long cache bound: only the listing version can make the answer be made again.
    let app = TestApp::start_with(|c| c.access_cache_ms = 600_000).await;
    let other = app.another_node().await;
    let w = world(&app).await;
    let content = format!("/v1/spaces/{}/content", w.space);
    let mut first = Value::Null;
    for _ in 0..3 {
        first = app.get(&w.admin, &content).await.expect(200);
        assert_eq!(first["type"], "merge", "{first}");
        assert_eq!(first["mergedFrom"]["id"], w.merged.as_str());
        assert_eq!(first["mergedFrom"]["status"], "merged");
    }
    let hits = kept_hits(&app);
    assert_eq!(app.get(&w.admin, &content).await.expect(200), first);
    assert_eq!(
        kept_hits(&app),
        hits + 1,
        "the revision is served from memory"
    );
    // A change request opened on another node moves the space's listing version: the
    // next read is made again, and shows the same.
    other.open_change_request(&w.admin, &w.space, "Later").await;
    assert_eq!(app.get(&w.admin, &content).await.expect(200), first);
    assert_eq!(
        kept_hits(&app),
        hits + 1,
        "made again after the listings moved"
    );
}

#[tokio::test]
async fn an_answer_with_signed_urls_is_not_served_past_their_period() {
    // A long cache bound: only the signatures' period can end the kept answer.
    let app = TestApp::start_with(|c| c.access_cache_ms = 7_200_000).await;
    let w = world(&app).await;
    let cr = app.open_change_request(&w.admin, &w.space, "Files").await;
    app.edit_change_request(
        &w.admin,
        &w.space,
        &cr,
        json!([{ "operation": "insert_files",
                 "files": [{ "base64": crate::harness::PNG, "name": "pixel.png" }] }]),
    )
    .await;
    app.merge_change_request(&w.admin, &w.space, &cr).await;
    let content = format!("/v1/spaces/{}/content", w.space);
    let url = |v: &Value| v["files"][0]["downloadURL"].as_str().unwrap().to_string();
    // Two seconds before a period of signatures (an hour) turns.
    let period = quire_server::blobs::DOWNLOAD_TTL_MS;
    let now = quire_server::clock::Clock::now_ms(&*app.clock);
    app.clock
        .advance_ms(period - now.rem_euclid(period) - 2_000);
    let first = url(&app.get(&w.admin, &content).await.expect(200));
    for _ in 0..2 {
        assert_eq!(url(&app.get(&w.admin, &content).await.expect(200)), first);
    }
    let hits = kept_hits(&app);
    assert_eq!(url(&app.get(&w.admin, &content).await.expect(200)), first);
    assert_eq!(kept_hits(&app), hits + 1, "kept within the period");
    app.clock.advance_ms(2_001);
    let next = url(&app.get(&w.admin, &content).await.expect(200));
    assert_ne!(next, first, "signed for the next period");
    assert_eq!(kept_hits(&app), hits + 1, "not served past its period");
}

/// A write that touches nothing a listing shows (made on another node, so that this node's
/// own cache stays as it was) makes the listing learn its version again, and the version
/// being the same, its kept answer is still served.
#[tokio::test]
async fn a_write_elsewhere_leaves_a_listing_served_from_memory() {
    let app = TestApp::start_with(|c| c.access_cache_ms = 600_000).await;
    let other = app.another_node().await;
    let w = world(&app).await;
    let listing = format!("/v1/spaces/{}/comments", w.space);
    let first = app.get(&w.admin, &listing).await.expect(200);
    for _ in 0..2 {
        assert_eq!(app.get(&w.admin, &listing).await.expect(200), first);
    }
    let org = other.org(&w.admin, "Elsewhere").await;
    let elsewhere = other.space(&w.admin, &org, "Notes", None).await;
    other
        .post(
            &w.admin,
            &format!("/v1/spaces/{elsewhere}/comments"),
            json!({ "body": { "markdown": "Unrelated" } }),
        )
        .await
        .expect(200);
    let hits = kept_hits(&app);
    assert_eq!(app.get(&w.admin, &listing).await.expect(200), first);
    assert_eq!(kept_hits(&app), hits + 1, "still served from memory");
}

/// A write costs the kept answers of what it changed only: a comment posted on one space
/// leaves the kept answers of another served from memory, while the commented space's
/// comment listing shows the comment at once.
#[tokio::test]
async fn a_write_drops_only_the_kept_answers_resting_on_what_it_changed() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let org = app
        .get(&w.admin, &format!("/v1/spaces/{}", w.space))
        .await
        .expect(200)["organization"]
        .as_str()
        .unwrap()
        .to_string();
    let other = app.space(&w.admin, &org, "Other", None).await;
    let mine = format!("/v1/spaces/{}", w.space);
    let theirs = format!("/v1/spaces/{other}/comments");
    for _ in 0..2 {
        app.get(&w.reader, &mine).await.expect(200);
        app.get(&w.reader, &theirs).await.expect(200);
    }
    let hits = kept_hits(&app);
    assert_eq!(app.get(&w.reader, &mine).await.expect(200)["title"], "Docs");
    assert_eq!(kept_hits(&app), hits + 1, "kept before the write");
    app.post(
        &w.admin,
        &theirs,
        json!({ "body": { "markdown": "Elsewhere" } }),
    )
    .await
    .expect(200);
    let hits = kept_hits(&app);
    assert_eq!(app.get(&w.reader, &mine).await.expect(200)["title"], "Docs");
    assert_eq!(
        kept_hits(&app),
        hits + 1,
        "the other space's answer is still served from memory"
    );
    let listed = app.get(&w.reader, &theirs).await.expect(200);
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        kept_hits(&app),
        hits + 1,
        "the commented space's listing is made again"
    );
}
