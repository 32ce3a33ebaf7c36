//! Comments and replies: counters kept exact, rights, reactions, targets, filters.

use serde_json::json;

use crate::harness::{Persona, TestApp};

struct World {
    space: String,
    page: String,
    alice: Persona,
    bob: Persona,
    reader: Persona,
}

async fn world(app: &TestApp) -> World {
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let reader = app.persona("reader").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("comment")).await;
    app.add_member(&alice, &org, &reader, json!("read")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let cr = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({}),
        )
        .await
        .expect(201);
    let cr = cr["id"].as_str().unwrap().to_string();
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "Intro", "document": { "markdown": "Hello." } }] }),
    )
    .await
    .expect(200);
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
    let pages = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let page = pages["pages"][0]["id"].as_str().unwrap().to_string();
    World {
        space,
        page,
        alice,
        bob,
        reader,
    }
}

async fn open_comments(app: &TestApp, who: &Persona, space: &str) -> i64 {
    app.get(who, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["comments"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn counters_stay_exact_through_posts_resolves_reopens_and_deletes() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let base = format!("/v1/spaces/{}/comments", w.space);
    let mut ids = Vec::new();
    for (i, who) in [&w.alice, &w.bob, &w.bob].iter().enumerate() {
        let c = app
            .post(
                who,
                &base,
                json!({ "body": { "markdown": format!("Comment {i}") } }),
            )
            .await
            .expect(200);
        assert_eq!(c["object"], "comment");
        assert_eq!(c["status"], "open");
        ids.push(c["id"].as_str().unwrap().to_string());
    }
    assert_eq!(open_comments(&app, &w.alice, &w.space).await, 3);
    let resolved = app
        .put(
            &w.bob,
            &format!("{base}/{}", ids[0]),
            json!({ "resolved": true }),
        )
        .await
        .expect(200);
    assert_eq!(resolved["status"], "resolved");
    assert_eq!(resolved["resolvedBy"]["id"], w.bob.id.as_str());
    assert!(resolved["resolvedAt"].is_string());
    assert_eq!(open_comments(&app, &w.alice, &w.space).await, 2);
    // Resolving twice changes nothing.
    app.put(
        &w.bob,
        &format!("{base}/{}", ids[0]),
        json!({ "resolved": true }),
    )
    .await
    .expect(200);
    assert_eq!(open_comments(&app, &w.alice, &w.space).await, 2);
    let reopened = app
        .put(
            &w.alice,
            &format!("{base}/{}", ids[0]),
            json!({ "resolved": false }),
        )
        .await
        .expect(200);
    assert_eq!(reopened["status"], "open");
    assert!(reopened.get("resolvedAt").is_none());
    assert_eq!(open_comments(&app, &w.alice, &w.space).await, 3);
    app.put(
        &w.alice,
        &format!("{base}/{}", ids[1]),
        json!({ "resolved": true }),
    )
    .await
    .expect(200);
    assert_eq!(open_comments(&app, &w.alice, &w.space).await, 2);
    // Deleting a resolved comment leaves the open count alone; deleting an open one lowers it.
    app.delete(&w.alice, &format!("{base}/{}", ids[1]))
        .await
        .expect(204);
    assert_eq!(open_comments(&app, &w.alice, &w.space).await, 2);
    app.delete(&w.bob, &format!("{base}/{}", ids[2]))
        .await
        .expect(204);
    assert_eq!(open_comments(&app, &w.alice, &w.space).await, 1);
    app.delete(&w.bob, &format!("{base}/{}", ids[2]))
        .await
        .expect(204);
    let all = app.get(&w.alice, &base).await.expect(200);
    assert_eq!(all["count"], 1);
}

#[tokio::test]
async fn rights_authors_edit_admins_delete_readers_read() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let base = format!("/v1/spaces/{}/comments", w.space);
    app.post(&w.reader, &base, json!({ "body": { "markdown": "no" } }))
        .await
        .expect_error(403);
    let c = app
        .post(&w.bob, &base, json!({ "body": { "markdown": "Bob's" } }))
        .await
        .expect(200);
    let id = c["id"].as_str().unwrap();
    assert_eq!(
        c["permissions"],
        json!({ "view": true, "edit": true, "reply": true, "delete": true })
    );
    let seen_by_reader = app
        .get(&w.reader, &format!("{base}/{id}"))
        .await
        .expect(200);
    assert_eq!(
        seen_by_reader["permissions"],
        json!({ "view": true, "edit": false, "reply": false, "delete": false })
    );
    let seen_by_admin = app.get(&w.alice, &format!("{base}/{id}")).await.expect(200);
    assert_eq!(seen_by_admin["permissions"]["edit"], false);
    assert_eq!(seen_by_admin["permissions"]["delete"], true);

    app.put(
        &w.alice,
        &format!("{base}/{id}"),
        json!({ "body": { "markdown": "hijack" } }),
    )
    .await
    .expect_error(403);
    let edited = app
        .put(
            &w.bob,
            &format!("{base}/{id}"),
            json!({ "body": { "markdown": "Bob's, edited" } }),
        )
        .await
        .expect(200);
    assert!(edited["editedAt"].is_string());
    assert_eq!(
        edited["body"]["markdown"].as_str().unwrap().trim(),
        "Bob's, edited"
    );
    let alice_comment = app
        .post(
            &w.alice,
            &base,
            json!({ "body": { "markdown": "Alice's" } }),
        )
        .await
        .expect(200);
    app.delete(
        &w.bob,
        &format!("{base}/{}", alice_comment["id"].as_str().unwrap()),
    )
    .await
    .expect_error(403);
    app.delete(&w.alice, &format!("{base}/{id}"))
        .await
        .expect(204);
    app.post(&w.bob, &base, json!({ "body": { "markdown": "  " } }))
        .await
        .expect_error(400);
    app.post(&w.bob, &base, json!({})).await.expect_error(400);
}

#[tokio::test]
async fn replies_reactions_and_formats() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let base = format!("/v1/spaces/{}/comments", w.space);
    let c = app
        .post(
            &w.alice,
            &base,
            json!({ "body": { "markdown": "Look at **this**" } }),
        )
        .await
        .expect(200);
    let id = c["id"].as_str().unwrap();
    let r1 = app
        .post(
            &w.bob,
            &format!("{base}/{id}/replies"),
            json!({ "body": { "markdown": "Seen" } }),
        )
        .await
        .expect(200);
    assert_eq!(r1["object"], "comment-reply");
    app.post(
        &w.alice,
        &format!("{base}/{id}/replies"),
        json!({ "body": { "markdown": "Thanks" } }),
    )
    .await
    .expect(200);
    app.post(
        &w.reader,
        &format!("{base}/{id}/replies"),
        json!({ "body": { "markdown": "no" } }),
    )
    .await
    .expect_error(403);
    assert_eq!(
        app.get(&w.alice, &format!("{base}/{id}")).await.expect(200)["replies"],
        2
    );
    let replies = app
        .get(&w.alice, &format!("{base}/{id}/replies"))
        .await
        .expect(200);
    assert_eq!(replies["count"], 2);
    let r1_id = r1["id"].as_str().unwrap();
    app.put(
        &w.alice,
        &format!("{base}/{id}/replies/{r1_id}"),
        json!({ "body": { "markdown": "x" } }),
    )
    .await
    .expect_error(403);
    let reacted = app
        .put(
            &w.alice,
            &format!("{base}/{id}/replies/{r1_id}"),
            json!({ "addedReactions": ["👍"] }),
        )
        .await
        .expect(200);
    assert_eq!(reacted["reactions"][0]["count"], 1);
    app.delete(&w.bob, &format!("{base}/{id}/replies/{r1_id}"))
        .await
        .expect(204);
    assert_eq!(
        app.get(&w.alice, &format!("{base}/{id}")).await.expect(200)["replies"],
        1
    );

    app.put(
        &w.alice,
        &format!("{base}/{id}"),
        json!({ "addedReactions": ["👍", "🎉"] }),
    )
    .await
    .expect(200);
    let r = app
        .put(
            &w.bob,
            &format!("{base}/{id}"),
            json!({ "addedReactions": ["👍"] }),
        )
        .await
        .expect(200);
    let thumbs = r["reactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["emoji"] == "👍")
        .unwrap()
        .clone();
    assert_eq!(thumbs["count"], 2);
    assert_eq!(thumbs["users"].as_array().unwrap().len(), 2);
    assert!(thumbs["users"][0]["reactedAt"].is_string());
    let r = app
        .put(
            &w.alice,
            &format!("{base}/{id}"),
            json!({ "removedReactions": ["👍", "🎉"] }),
        )
        .await
        .expect(200);
    assert_eq!(
        r["reactions"],
        json!([{ "emoji": "👍", "count": 1, "users": [{ "user": r["reactions"][0]["users"][0]["user"].clone(), "reactedAt": r["reactions"][0]["users"][0]["reactedAt"].clone() }] }])
    );
    assert_eq!(
        r["reactions"][0]["users"][0]["user"]["id"],
        w.bob.id.as_str()
    );

    let doc = app
        .get(&w.alice, &format!("{base}/{id}?format=document"))
        .await
        .expect(200);
    assert_eq!(doc["body"]["document"]["object"], "document", "{doc}");
    let md = app.get(&w.alice, &format!("{base}/{id}")).await.expect(200);
    assert!(md["body"]["markdown"]
        .as_str()
        .unwrap()
        .contains("**this**"));
    app.get(&w.alice, &format!("{base}/{id}?format=html"))
        .await
        .expect_error(400);
}

#[tokio::test]
async fn page_targets_become_outdated_and_filters_apply() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let base = format!("/v1/spaces/{}/comments", w.space);
    let on_page = app
        .post(
            &w.bob,
            &base,
            json!({ "body": { "markdown": "About intro" }, "page": w.page, "node": "n1" }),
        )
        .await
        .expect(200);
    assert_eq!(on_page["target"]["page"]["id"], w.page.as_str());
    assert_eq!(on_page["target"]["page"]["title"], "Intro");
    assert_eq!(on_page["target"]["page"]["outdated"], false);
    assert_eq!(on_page["target"]["node"]["id"], "n1");
    app.post(
        &w.bob,
        &base,
        json!({ "body": { "markdown": "x" }, "page": "missing" }),
    )
    .await
    .expect_error(400);
    app.clock.advance_ms(5);
    app.post(
        &w.alice,
        &base,
        json!({ "body": { "markdown": "General" } }),
    )
    .await
    .expect(200);

    let only_page = app
        .get(&w.alice, &format!("{base}?targetPage={}", w.page))
        .await
        .expect(200);
    assert_eq!(only_page["count"], 1);
    let by_alice = app
        .get(&w.alice, &format!("{base}?authors={}", w.alice.id))
        .await
        .expect(200);
    assert_eq!(by_alice["count"], 1);
    let both = app
        .get(
            &w.alice,
            &format!("{base}?authors={}&authors={}", w.alice.id, w.bob.id),
        )
        .await
        .expect(200);
    assert_eq!(both["count"], 2);
    let asc = app
        .get(&w.alice, &format!("{base}?order=asc"))
        .await
        .expect(200);
    assert_eq!(asc["items"][0]["id"], on_page["id"]);
    let desc = app.get(&w.alice, &base).await.expect(200);
    assert_eq!(desc["items"][1]["id"], on_page["id"]);
    app.put(
        &w.alice,
        &format!("{base}/{}", on_page["id"].as_str().unwrap()),
        json!({ "resolved": true }),
    )
    .await
    .expect(200);
    assert_eq!(
        app.get(&w.alice, &format!("{base}?status=open"))
            .await
            .expect(200)["count"],
        1
    );
    assert_eq!(
        app.get(&w.alice, &format!("{base}?status=resolved"))
            .await
            .expect(200)["count"],
        1
    );

    // The page changes after the comment: the comment is outdated.
    let cr = app
        .post(
            &w.alice,
            &format!("/v1/spaces/{}/change-requests", w.space),
            json!({}),
        )
        .await
        .expect(201);
    let cr = cr["id"].as_str().unwrap();
    app.post(
        &w.alice,
        &format!("/v1/spaces/{}/change-requests/{cr}/content", w.space),
        json!({ "changes": [{ "operation": "update_page", "page": w.page, "document": { "markdown": "Hello, changed." } }] }),
    )
    .await
    .expect(200);
    app.post(
        &w.alice,
        &format!("/v1/spaces/{}/change-requests/{cr}/merge", w.space),
        json!({}),
    )
    .await
    .expect(200);
    let later = app
        .get(
            &w.alice,
            &format!("{base}/{}", on_page["id"].as_str().unwrap()),
        )
        .await
        .expect(200);
    assert_eq!(later["target"]["page"]["outdated"], true);
}

#[tokio::test]
async fn change_request_comments_count_on_the_change_request() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let cr = app
        .post(
            &w.alice,
            &format!("/v1/spaces/{}/change-requests", w.space),
            json!({ "subject": "Review me" }),
        )
        .await
        .expect(201);
    let number = cr["number"].as_i64().unwrap();
    let base = format!("/v1/spaces/{}/change-requests/{number}/comments", w.space);
    let c = app
        .post(
            &w.bob,
            &base,
            json!({ "body": { "markdown": "Nit" }, "page": w.page }),
        )
        .await
        .expect(200);
    assert_eq!(c["target"]["changeRequest"], cr["id"]);
    let id = c["id"].as_str().unwrap();
    let cr_now = app
        .get(
            &w.alice,
            &format!("/v1/spaces/{}/change-requests/{number}", w.space),
        )
        .await
        .expect(200);
    assert_eq!(cr_now["comments"], 1);
    assert_eq!(
        open_comments(&app, &w.alice, &w.space).await,
        0,
        "change-request comments are not space comments"
    );
    assert_eq!(
        app.get(&w.alice, &format!("/v1/spaces/{}/comments", w.space))
            .await
            .expect(200)["count"],
        0
    );
    app.get(&w.alice, &format!("/v1/spaces/{}/comments/{id}", w.space))
        .await
        .expect_error(404);
    app.put(
        &w.alice,
        &format!("{base}/{id}"),
        json!({ "resolved": true }),
    )
    .await
    .expect(200);
    assert_eq!(
        app.get(
            &w.alice,
            &format!("/v1/spaces/{}/change-requests/{number}", w.space)
        )
        .await
        .expect(200)["comments"],
        0
    );
    let reply = app
        .post(
            &w.alice,
            &format!("{base}/{id}/replies"),
            json!({ "body": { "markdown": "Fixed" } }),
        )
        .await
        .expect(200);
    let got = app
        .get(
            &w.bob,
            &format!("{base}/{id}/replies/{}", reply["id"].as_str().unwrap()),
        )
        .await
        .expect(200);
    assert_eq!(got["id"], reply["id"]);
    assert_eq!(
        app.get(&w.bob, &format!("{base}/{id}/replies"))
            .await
            .expect(200)["count"],
        1
    );
    app.delete(&w.bob, &format!("{base}/{id}"))
        .await
        .expect(204);
    assert_eq!(
        app.get(
            &w.alice,
            &format!("/v1/spaces/{}/change-requests/{number}", w.space)
        )
        .await
        .expect(200)["comments"],
        0
    );
}

/// The items of a comment listing, walked two at a time, and the `count` each page showed.
async fn walk(app: &TestApp, who: &Persona, base: &str, status: &str) -> (i64, Vec<i64>) {
    let (mut items, mut counts, mut cursor) = (0, Vec::new(), None::<String>);
    loop {
        let mut url = format!("{base}?status={status}&limit=2");
        if let Some(c) = &cursor {
            url.push_str(&format!("&page={c}"));
        }
        let res = app.get(who, &url).await.expect(200);
        items += res["items"].as_array().unwrap().len() as i64;
        counts.push(res["count"].as_i64().unwrap());
        match res["next"]["page"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return (items, counts),
        }
    }
}

/// Checks that each status's listing in `base` shows as its `count`, on every page, the
/// number of its items, and that these are `(all, open)`.
async fn assert_totals(app: &TestApp, who: &Persona, base: &str, all: i64, open: i64) {
    for (status, expected) in [("all", all), ("open", open), ("resolved", all - open)] {
        let (items, counts) = walk(app, who, base, status).await;
        assert_eq!(items, expected, "{status} items of {base}");
        assert!(
            counts.iter().all(|c| *c == expected),
            "{status} counts of {base}: {counts:?}, expected {expected}"
        );
    }
}

#[tokio::test]
async fn listing_totals_follow_posts_resolutions_and_deletions() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let cr = app.open_change_request(&w.alice, &w.space, "Totals").await;
    for base in [
        format!("/v1/spaces/{}/comments", w.space),
        format!("/v1/spaces/{}/change-requests/{cr}/comments", w.space),
    ] {
        assert_totals(&app, &w.alice, &base, 0, 0).await;
        let mut ids = Vec::new();
        for n in 0..5 {
            let c = app
                .post(
                    &w.bob,
                    &base,
                    json!({ "body": { "markdown": format!("Note {n}.") } }),
                )
                .await
                .expect(200);
            ids.push(c["id"].as_str().unwrap().to_string());
        }
        assert_totals(&app, &w.alice, &base, 5, 5).await;
        for id in &ids[..2] {
            app.put(&w.bob, &format!("{base}/{id}"), json!({ "resolved": true }))
                .await
                .expect(200);
        }
        assert_totals(&app, &w.alice, &base, 5, 3).await;
        app.put(
            &w.bob,
            &format!("{base}/{}", ids[0]),
            json!({ "resolved": false }),
        )
        .await
        .expect(200);
        assert_totals(&app, &w.alice, &base, 5, 4).await;
        // A resolved one and an open one deleted; deleting one again changes nothing.
        for id in [&ids[1], &ids[2], &ids[2]] {
            app.delete(&w.bob, &format!("{base}/{id}"))
                .await
                .expect(204);
        }
        assert_totals(&app, &w.alice, &base, 3, 3).await;
        // Filters beyond the status count their rows.
        let mine = app
            .get(&w.alice, &format!("{base}?authors={}", w.bob.id))
            .await
            .expect(200);
        assert_eq!(mine["count"], 3);
    }
    // The space's comments and the change request's are counted apart.
    let space = app
        .get(&w.alice, &format!("/v1/spaces/{}", w.space))
        .await
        .expect(200);
    assert_eq!(space["comments"], 3);
}

#[tokio::test]
async fn the_totals_of_comments_written_before_they_were_kept_are_counted_on_upgrade() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let cr = app.open_change_request(&w.alice, &w.space, "Older").await;
    let space_base = format!("/v1/spaces/{}/comments", w.space);
    let cr_base = format!("/v1/spaces/{}/change-requests/{cr}/comments", w.space);
    for (base, n) in [(&space_base, 3), (&cr_base, 2)] {
        for i in 0..n {
            let c = app
                .post(
                    &w.bob,
                    base,
                    json!({ "body": { "markdown": format!("Old {i}.") } }),
                )
                .await
                .expect(200);
            if i == 0 {
                let id = c["id"].as_str().unwrap();
                app.put(&w.bob, &format!("{base}/{id}"), json!({ "resolved": true }))
                    .await
                    .expect(200);
            }
        }
    }
    // The database as the build before the totals left it: no totals, the migration not run.
    for sql in [
        "ALTER TABLE spaces DROP COLUMN comments_all",
        "ALTER TABLE change_requests DROP COLUMN comments_all",
        "DELETE FROM quire_migrations WHERE version = 30",
    ] {
        sqlx::query(sql).execute(app.state.db.pool()).await.unwrap();
    }
    let upgraded = app.another_node().await;
    assert_totals(&upgraded, &w.alice, &space_base, 3, 2).await;
    assert_totals(&upgraded, &w.alice, &cr_base, 2, 1).await;
}
