//! Reads of spaces, pages, revisions and their change requests, answered through the
//! node's caches, never show what has changed: on the node that made the change at once,
//! on another node within the access cache's bound; signed URLs are signed anew for each
//! period. (Revoked access is covered by `access_cache.rs`, listings by `listings.rs`.)

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

/// A space holding one page, made by merging a change request.
struct World {
    admin: Persona,
    reader: Persona,
    space: String,
    page: String,
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
    World {
        admin,
        reader,
        space,
        page,
    }
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
    other
        .clock
        .advance_ms(other.config.access_cache_ms as i64 + 1);
    assert!(text(&other.get(&w.reader, &page).await.expect(200)).contains("Second words."));
}

/// A value cached half a bound before it is read again expires with its own age, not a
/// bound after that read.
#[tokio::test]
async fn a_read_does_not_outlive_the_oldest_lookup_it_was_made_from() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let w = world(&app).await;
    let path = format!("/v1/spaces/{}", w.space);
    let ttl = other.config.access_cache_ms as i64;
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
async fn signed_urls_are_signed_anew_once_their_period_turns() {
    // A long cache bound: only the signatures' period can change the answer.
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
    app.clock.advance_ms(2_001);
    let next = url(&app.get(&w.admin, &content).await.expect(200));
    assert_ne!(next, first, "signed for the next period");
    // The new URL serves the file.
    let res = reqwest::get(&next).await.unwrap();
    assert_eq!(res.status(), 200);
}

/// The count of open comments, cached apart from the space's row, follows each comment.
#[tokio::test]
async fn a_space_shows_a_new_comment_count_at_once_here_and_within_the_bound_elsewhere() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let w = world(&app).await;
    let space = format!("/v1/spaces/{}", w.space);
    for node in [&app, &other] {
        assert_eq!(node.get(&w.reader, &space).await.expect(200)["comments"], 0);
    }
    let posted = app
        .post(
            &w.admin,
            &format!("{space}/comments"),
            json!({ "body": { "markdown": "A question." } }),
        )
        .await
        .expect(200);
    assert_eq!(app.get(&w.reader, &space).await.expect(200)["comments"], 1);
    other
        .clock
        .advance_ms(other.config.access_cache_ms as i64 + 1);
    assert_eq!(
        other.get(&w.reader, &space).await.expect(200)["comments"],
        1
    );
    // Resolved, it is no longer counted open.
    let id = posted["id"].as_str().unwrap();
    app.put(
        &w.admin,
        &format!("{space}/comments/{id}"),
        json!({ "resolved": true }),
    )
    .await
    .expect(200);
    assert_eq!(app.get(&w.reader, &space).await.expect(200)["comments"], 0);
    // The organization's listing of spaces shows the same count.
    let org = app.get(&w.reader, &space).await.expect(200)["organization"].clone();
    let org = org.as_str().unwrap();
    app.post(
        &w.admin,
        &format!("{space}/comments"),
        json!({ "body": { "markdown": "Another." } }),
    )
    .await
    .expect(200);
    let listed = app
        .get(&w.reader, &format!("/v1/orgs/{org}/spaces"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["comments"], 1, "{listed}");
    // So do a member's spaces and a site's spaces.
    let theirs = app
        .get(
            &w.admin,
            &format!("/v1/orgs/{org}/members/{}/spaces", w.reader.id),
        )
        .await
        .expect(200);
    assert_eq!(theirs["items"][0]["space"]["comments"], 1, "{theirs}");
    let site = app
        .post(
            &w.admin,
            &format!("/v1/orgs/{org}/sites"),
            json!({ "title": "Docs", "spaces": [w.space] }),
        )
        .await
        .expect(201);
    let published = app
        .get(
            &w.admin,
            &format!(
                "/v1/orgs/{org}/sites/{}/site-spaces",
                site["id"].as_str().unwrap()
            ),
        )
        .await
        .expect(200);
    assert_eq!(published["items"][0]["space"]["comments"], 1, "{published}");
}
