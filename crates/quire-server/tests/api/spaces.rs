//! Spaces: creation, settings, lifecycle (delete, restore, purge), duplicate, move, transfer.

use serde_json::{json, Value};

use crate::harness::TestApp;

const DAY_MS: i64 = 24 * 3600 * 1000;

#[tokio::test]
async fn spaces_are_created_listed_and_updated() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let created = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/spaces"),
            json!({ "title": "Handbook", "emoji": "📘", "language": "fr" }),
        )
        .await
        .expect(201);
    assert_eq!(created["object"], "space");
    assert_eq!(created["organization"], org.as_str());
    assert_eq!(created["visibility"], "private");
    assert_eq!(created["editMode"], "live");
    assert_eq!(created["defaultLevel"], "inherit");
    assert!(created["revision"].is_string());
    assert_eq!(
        (
            created["comments"].clone(),
            created["changeRequests"].clone()
        ),
        (json!(0), json!(0))
    );
    assert_eq!(created["permissions"]["admin"], true);
    let id = created["id"].as_str().unwrap();
    let path = format!("/v1/spaces/{id}");
    assert_eq!(app.get(&alice, &path).await.expect(200), created);

    let updated = app
        .patch(&alice, &path, json!({ "title": "Guide", "emoji": "🧭", "defaultLevel": "read", "editMode": "locked", "visibility": "unlisted" }))
        .await
        .expect(200);
    assert_eq!(updated["title"], "Guide");
    assert_eq!(updated["defaultLevel"], "read");
    assert_eq!(updated["visibility"], "unlisted");
    assert_eq!(updated["editMode"], "locked");
    assert_eq!(
        updated["permissions"]["edit"], false,
        "a locked space refuses edits"
    );
    let back = app
        .patch(
            &alice,
            &path,
            json!({ "editMode": "live", "defaultLevel": null }),
        )
        .await
        .expect(200);
    assert_eq!(back["permissions"]["edit"], true);
    assert_eq!(back["defaultLevel"], Value::Null);

    for (body, field) in [
        (json!({ "title": "t".repeat(51) }), "title"),
        (json!({ "emoji": "e".repeat(51) }), "emoji"),
        (json!({ "editMode": "frozen" }), "editMode"),
        (json!({ "visibility": "secret" }), "visibility"),
        (json!({ "visibility": "in-collection" }), "visibility"),
        (json!({ "language": "xx" }), "language"),
        (json!({ "language": "zh-tw" }), "language"),
        (json!({ "defaultLevel": "owner" }), "defaultLevel"),
    ] {
        let msg = app
            .patch(&alice, &path, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
    let list = app
        .get(&alice, &format!("/v1/orgs/{org}/spaces"))
        .await
        .expect(200);
    assert_eq!(list["count"], 1);
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/spaces"),
        json!({ "title": "x", "parent": "nope" }),
    )
    .await
    .expect_error(400);
}

#[tokio::test]
async fn delete_restore_delete_then_purge_after_seven_days() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let id = app.space(&alice, &org, "Doomed", None).await;
    let keep = app.space(&alice, &org, "Kept", None).await;
    let path = format!("/v1/spaces/{id}");
    // Content and files in the doomed space; one file is also used by the kept space.
    let shared_png = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZBwEEq5ZtpAAAAABJRU5ErkJggg==";
    let own = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        b"only in the doomed space",
    );
    for (space, files) in [
        (&id, vec![shared_png.to_string(), own.clone()]),
        (&keep, vec![shared_png.to_string()]),
    ] {
        let cr = app
            .post(
                &alice,
                &format!("/v1/spaces/{space}/change-requests"),
                json!({}),
            )
            .await
            .expect(201);
        let cr = cr["id"].as_str().unwrap();
        let files: Vec<Value> = files
            .iter()
            .enumerate()
            .map(|(i, b)| json!({ "base64": b, "name": format!("f{i}.bin") }))
            .collect();
        app.post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
            json!({ "changes": [
                { "operation": "insert_page", "title": "Secret", "document": { "markdown": "Private words." } },
                { "operation": "insert_files", "files": files }
            ] }),
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
    }

    // Listing the pages stores the rendered listing beside the files.
    app.get(&alice, &format!("{path}/content/pages"))
        .await
        .expect(200);
    let derived = app.config.data_dir.join("blobs/derived").join(&id);
    crate::content::eventually_stored(&derived).await;
    app.post(&alice, &format!("{path}/restore"), json!({}))
        .await
        .expect_error(400);
    app.delete(&alice, &path).await.expect(204);
    let gone = app.get(&alice, &path).await.expect(200);
    assert!(gone["deletedAt"].is_string());
    assert_eq!(gone["permissions"]["edit"], false);
    let list = app
        .get(&alice, &format!("/v1/orgs/{org}/spaces"))
        .await
        .expect(200);
    assert_eq!(list["count"], 1, "a deleted space leaves lists");
    app.patch(&alice, &path, json!({ "title": "no" }))
        .await
        .expect_error(409);
    app.delete(&alice, &path).await.expect(204);

    let restored = app
        .post(&alice, &format!("{path}/restore"), json!({}))
        .await
        .expect(200);
    assert!(restored.get("deletedAt").is_none());
    assert_eq!(
        app.get(&alice, &format!("/v1/orgs/{org}/spaces"))
            .await
            .expect(200)["count"],
        2
    );

    app.delete(&alice, &path).await.expect(204);
    // Six days on, nothing is purged and the space can still be restored later.
    app.clock.advance_ms(6 * DAY_MS);
    quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    assert!(app.get(&alice, &path).await.expect(200)["deletedAt"].is_string());
    // Past seven days the job removes it for good.
    app.clock.advance_ms(DAY_MS + 1000);
    let ran = quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    assert!(ran >= 1);
    assert!(
        std::fs::read_dir(&derived).map_or(true, |mut d| d.next().is_none()),
        "stored page listings of the purged space are deleted"
    );
    app.post(&alice, &format!("{path}/restore"), json!({}))
        .await
        .expect_error(404);
    app.get(&alice, &path).await.expect_error(404);
    app.delete(&alice, &path).await.expect(204);
    for (table, column) in [
        ("spaces", "id"),
        ("revisions", "space_id"),
        ("content_permissions", "target_id"),
        ("content_objects", "space_id"),
        ("search_postings", "space_id"),
        ("search_sections", "space_id"),
        ("blob_refs", "space_id"),
        ("change_requests", "space_id"),
    ] {
        let n: i64 =
            sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE {column} = $1"))
                .bind(&id)
                .fetch_one(app.state.db.pool())
                .await
                .unwrap();
        assert_eq!(n, 0, "{table} rows of the purged space");
    }
    assert_eq!(
        quire_server::store::jobs::count(&app.state.db, "purge-space")
            .await
            .unwrap(),
        0
    );
    app.get(&alice, &format!("/v1/spaces/{keep}"))
        .await
        .expect(200);
    // The doomed space's own file bytes are gone; the shared file stays for the kept space.
    let blobs: Vec<String> = sqlx::query_scalar("SELECT hash FROM blobs")
        .fetch_all(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(blobs.len(), 1, "only the shared blob remains: {blobs:?}");
    assert!(app.state.blobs.get(&blobs[0]).await.unwrap().is_some());
    let own_hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(b"only in the doomed space"))
    };
    assert!(
        app.state.blobs.get(&own_hash).await.unwrap().is_none(),
        "the purged space's own bytes are deleted"
    );
    let files = app
        .get(&alice, &format!("/v1/spaces/{keep}/content/files"))
        .await
        .expect(200);
    let url = files["items"][0]["downloadURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(reqwest::get(&url).await.unwrap().status().as_u16(), 200);
}

#[tokio::test]
async fn duplicate_copies_metadata_and_content() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let coll = app.collection(&alice, &org, "Docs", None).await;
    let id = app.space(&alice, &org, "Original", Some(&coll)).await;
    app.patch(
        &alice,
        &format!("/v1/spaces/{id}"),
        json!({ "emoji": "🔥", "visibility": "in-collection" }),
    )
    .await
    .expect(200);
    let copy = app
        .post(&alice, &format!("/v1/spaces/{id}/duplicate"), json!({}))
        .await
        .expect(201);
    assert_ne!(copy["id"], json!(id));
    assert_eq!(copy["title"], "Original (copy)");
    assert_eq!(copy["emoji"], "🔥");
    assert_eq!(copy["parent"], coll.as_str());
    assert_eq!(copy["visibility"], "in-collection");
    assert_ne!(
        copy["revision"],
        app.get(&alice, &format!("/v1/spaces/{id}"))
            .await
            .expect(200)["revision"]
    );
    assert_eq!(
        app.get(&alice, &format!("/v1/collections/{coll}/spaces"))
            .await
            .expect(200)["count"],
        2
    );
}

/// A duplicate's content is its own: content is read by space, so the copy must hold every
/// object its revisions name, and reads and edits it on a node that has cached nothing
/// once the original is purged.
#[tokio::test]
async fn a_duplicate_keeps_its_content_once_the_original_is_purged() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let pages = [("One", "First words."), ("Two", "Second words.")];
    let original = app.space_with_pages(&alice, &org, "Original", &pages).await;
    let copy = app
        .post(
            &alice,
            &format!("/v1/spaces/{original}/duplicate"),
            json!({}),
        )
        .await
        .expect(201);
    let copy = copy["id"].as_str().unwrap().to_string();
    app.delete(&alice, &format!("/v1/spaces/{original}"))
        .await
        .expect(204);
    app.clock.advance_ms(8 * DAY_MS);
    quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    app.get(&alice, &format!("/v1/spaces/{original}"))
        .await
        .expect_error(404);

    let cold = app.another_node().await;
    let listed = cold
        .get(&alice, &format!("/v1/spaces/{copy}/content/pages"))
        .await
        .expect(200);
    let listed = listed["pages"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    let second = listed[1]["id"].as_str().unwrap();
    let page = cold
        .get(
            &alice,
            &format!("/v1/spaces/{copy}/content/page/{second}?format=markdown"),
        )
        .await
        .expect(200);
    assert!(page["markdown"].as_str().unwrap().contains("Second words."));
    let cr = cold
        .open_change_request(&alice, &copy, "Edit the copy")
        .await;
    cold.edit_change_request(
        &alice,
        &copy,
        &cr,
        json!([{ "operation": "update_page", "page": second, "document": { "markdown": "Changed words." } }]),
    )
    .await;
    cold.merge_change_request(&alice, &copy, &cr).await;
    let page = app
        .get(
            &alice,
            &format!("/v1/spaces/{copy}/content/page/{second}?format=markdown"),
        )
        .await
        .expect(200);
    assert!(page["markdown"]
        .as_str()
        .unwrap()
        .contains("Changed words."));
}

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn moving_persists_sibling_order() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let a = app.space(&alice, &org, "A", None).await;
    let b = app.space(&alice, &org, "B", None).await;
    let c = app.space(&alice, &org, "C", None).await;
    let list = format!("/v1/orgs/{org}/spaces");
    assert_eq!(
        ids(&app.get(&alice, &list).await.expect(200)),
        vec![a.clone(), b.clone(), c.clone()]
    );
    app.post(
        &alice,
        &format!("/v1/spaces/{c}/move"),
        json!({ "position": { "before": { "type": "space", "space": a } } }),
    )
    .await
    .expect(200);
    assert_eq!(
        ids(&app.get(&alice, &list).await.expect(200)),
        vec![c.clone(), a.clone(), b.clone()]
    );
    app.post(
        &alice,
        &format!("/v1/spaces/{c}/move"),
        json!({ "position": { "after": { "type": "space", "space": b } } }),
    )
    .await
    .expect(200);
    assert_eq!(
        ids(&app.get(&alice, &list).await.expect(200)),
        vec![a.clone(), b.clone(), c.clone()]
    );

    // Into a collection, then back to the root.
    let coll = app.collection(&alice, &org, "Docs", None).await;
    let moved = app
        .post(
            &alice,
            &format!("/v1/spaces/{a}/move"),
            json!({ "parent": coll }),
        )
        .await
        .expect(200);
    assert_eq!(moved["parent"], coll.as_str());
    assert_eq!(
        ids(&app
            .get(&alice, &format!("/v1/collections/{coll}/spaces"))
            .await
            .expect(200)),
        vec![a.clone()]
    );
    let back = app
        .post(
            &alice,
            &format!("/v1/spaces/{a}/move"),
            json!({ "parent": null, "position": { "before": { "type": "space", "space": b } } }),
        )
        .await
        .expect(200);
    assert!(back.get("parent").is_none());
    assert_eq!(
        ids(&app.get(&alice, &list).await.expect(200)),
        vec![a.clone(), b.clone(), c.clone()]
    );

    app.post(&alice, &format!("/v1/spaces/{a}/move"), json!({}))
        .await
        .expect_error(400);
    app.post(
        &alice,
        &format!("/v1/spaces/{a}/move"),
        json!({ "parent": "nope" }),
    )
    .await
    .expect_error(400);
    app.post(
        &alice,
        &format!("/v1/spaces/{a}/move"),
        json!({ "parent": coll, "position": { "before": { "type": "space", "space": b } } }),
    )
    .await
    .expect_error(400);
}

#[tokio::test]
async fn transfer_needs_admin_on_both_sides() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    let other = app.org(&alice, "Other").await;
    let foreign = app.org(&bob, "Bob's").await;
    let coll = app.collection(&alice, &other, "Inbox", None).await;
    let id = app.space(&alice, &org, "Travelling", None).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{id}/transfer"),
        json!({ "organization": foreign }),
    )
    .await
    .expect_error(404);
    app.add_member(&bob, &foreign, &alice, json!("edit")).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{id}/transfer"),
        json!({ "organization": foreign }),
    )
    .await
    .expect_error(403);
    // A transfer to where the space already is changes nothing: 409.
    app.post(
        &alice,
        &format!("/v1/spaces/{id}/transfer"),
        json!({ "organization": org }),
    )
    .await
    .expect_error(409);
    let moved = app
        .post(
            &alice,
            &format!("/v1/spaces/{id}/transfer"),
            json!({ "organization": other, "parent": coll }),
        )
        .await
        .expect(200);
    assert_eq!(moved["organization"], other.as_str());
    assert_eq!(moved["parent"], coll.as_str());
    assert_eq!(
        app.get(&alice, &format!("/v1/orgs/{org}/spaces"))
            .await
            .expect(200)["count"],
        0
    );
    assert_eq!(
        app.get(&alice, &format!("/v1/orgs/{other}/spaces"))
            .await
            .expect(200)["count"],
        1
    );
}

#[tokio::test]
async fn space_counters_start_at_zero_and_members_list_their_spaces() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!(null)).await;
    let shared = app.space(&alice, &org, "Shared", None).await;
    app.space(&alice, &org, "Private", None).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{shared}/permissions"),
        json!({ "role": "comment", "users": [bob.id] }),
    )
    .await
    .expect(204);
    let list = app
        .get(&alice, &format!("/v1/orgs/{org}/members/{}/spaces", bob.id))
        .await
        .expect(200);
    assert_eq!(list["count"], 1);
    assert_eq!(list["items"][0]["permission"], "comment");
    assert_eq!(list["items"][0]["space"]["id"], shared.as_str());
    let member = app
        .get(&alice, &format!("/v1/orgs/{org}/members/{}", bob.id))
        .await
        .expect(200);
    assert_eq!(member["spaces"], 1);
    let all = app
        .get(
            &alice,
            &format!("/v1/orgs/{org}/members/{}/spaces", alice.id),
        )
        .await
        .expect(200);
    assert_eq!(all["count"], 2);
    assert_eq!(all["items"][0]["permission"], "admin");
}

/// `--deleted-space-retention-ms` sets the restore window and when the purge comes due.
#[tokio::test]
async fn the_retention_setting_bounds_restore_and_purge() {
    let app = TestApp::start_with(|c| c.deleted_space_retention_ms = 60_000).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let id = app.space(&alice, &org, "Short-lived", None).await;
    let path = format!("/v1/spaces/{id}");
    app.delete(&alice, &path).await.expect(204);
    // Within the minute: restorable, and the purge is not due.
    app.clock.advance_ms(59_000);
    assert_eq!(
        quire_server::domain::jobs::run_due(&app.state)
            .await
            .unwrap(),
        0
    );
    app.post(&alice, &format!("{path}/restore"), json!({}))
        .await
        .expect(200);
    app.delete(&alice, &path).await.expect(204);
    // Past it: not restorable, and the job removes the space.
    app.clock.advance_ms(60_001);
    app.post(&alice, &format!("{path}/restore"), json!({}))
        .await
        .expect_error(404);
    assert!(
        quire_server::domain::jobs::run_due(&app.state)
            .await
            .unwrap()
            >= 1
    );
    app.get(&alice, &path).await.expect_error(404);
}

/// A purge deletes a space's bulk rows a batch at a time: no batch deletes more rows than
/// asked for, and the batches end with none left.
#[tokio::test]
async fn a_purge_deletes_bulk_rows_a_batch_at_a_time() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let id = app.space(&alice, &org, "Doomed", None).await;
    let cr = app.open_change_request(&alice, &id, "Pages").await;
    let pages: Vec<Value> = (0..4)
        .map(|i| {
            json!({ "operation": "insert_page", "title": format!("Page {i}"),
                    "document": { "markdown": format!("Words of page {i}.") } })
        })
        .collect();
    app.edit_change_request(&alice, &id, &cr, json!(pages))
        .await;
    app.merge_change_request(&alice, &id, &cr).await;
    let objects = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM content_objects WHERE space_id = $1")
            .bind(&id)
            .fetch_one(app.state.db.pool())
            .await
            .unwrap()
    };
    let before = objects().await;
    assert!(before >= 4, "{before} objects");
    let mut batches = 0;
    loop {
        let mut tx = app.state.db.begin().await.unwrap();
        tx.touches(&[]);
        let removed = quire_server::store::spaces::purge_some(&mut tx, &id, 2)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert!(removed <= 2, "a batch of {removed} rows");
        if removed == 0 {
            break;
        }
        batches += 1;
    }
    assert_eq!(objects().await, 0);
    assert!(
        2 * batches >= before,
        "{batches} batches for {before} objects"
    );
}
