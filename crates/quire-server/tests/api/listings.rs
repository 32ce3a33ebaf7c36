//! Listings of change requests and comments, and change requests, answered from a node's
//! memory: every write, on any node, is seen by the next read; each caller sees their own
//! permissions.

use crate::harness::{Persona, TestApp};
use reqwest::Method;
use serde_json::{json, Value};

/// How many listings a node answered from memory.
fn listing_hits(app: &TestApp) -> u64 {
    let (_, (hits, _)) = app
        .state
        .cache
        .lookups()
        .into_iter()
        .find(|(name, _)| *name == "listings")
        .expect("listings are counted");
    hits
}

async fn list_all(app: &TestApp, who: &Persona, paths: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for path in paths {
        out.push(app.get(who, path).await.expect(200));
    }
    out
}

#[tokio::test]
async fn listings_from_memory_show_every_write_made_on_another_node() {
    // A long cache bound, so that only the listing version can make a node build again.
    let app = TestApp::start_with(|c| c.access_cache_ms = 600_000).await;
    let other = app.another_node().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Docs", None).await;
    let crs = format!("/v1/spaces/{space}/change-requests");
    let comments = format!("/v1/spaces/{space}/comments");
    let cr = app.open_change_request(&admin, &space, "First").await;
    let second = app.open_change_request(&admin, &space, "Second").await;
    let comment = app
        .post(
            &admin,
            &comments,
            json!({ "body": { "markdown": "Hello" } }),
        )
        .await
        .expect(200)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let doomed = app
        .post(
            &admin,
            &comments,
            json!({ "body": { "markdown": "Doomed" } }),
        )
        .await
        .expect(200)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let reply = app
        .post(
            &admin,
            &format!("{comments}/{comment}/replies"),
            json!({ "body": { "markdown": "First reply" } }),
        )
        .await
        .expect(200)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let lists = [
        crs.clone(),
        format!("{crs}?status=archived"),
        comments.clone(),
        format!("{crs}/{cr}/comments"),
        format!("/v1/spaces/{space}/comments?format=markdown"),
        format!("{crs}/{cr}"),
        format!("{crs}/1"),
    ];
    let insert_page = json!({ "changes": [{ "operation": "insert_page", "title": "New",
        "document": { "markdown": "Text." } }] });
    let writes: Vec<(&str, Method, String, Value)> = vec![
        (
            "create a change request",
            Method::POST,
            crs.clone(),
            json!({ "subject": "Third" }),
        ),
        (
            "rename a change request",
            Method::PATCH,
            format!("{crs}/{cr}"),
            json!({ "subject": "Renamed" }),
        ),
        (
            "edit a change request's content",
            Method::POST,
            format!("{crs}/{cr}/content?compat=false"),
            insert_page,
        ),
        (
            "archive a change request",
            Method::PATCH,
            format!("{crs}/{second}"),
            json!({ "status": "archived" }),
        ),
        (
            "post a comment",
            Method::POST,
            comments.clone(),
            json!({ "body": { "markdown": "Another" } }),
        ),
        (
            "edit a comment",
            Method::PUT,
            format!("{comments}/{comment}"),
            json!({ "body": { "markdown": "Edited" } }),
        ),
        (
            "resolve a comment",
            Method::PUT,
            format!("{comments}/{comment}"),
            json!({ "resolved": true }),
        ),
        (
            "react to a comment",
            Method::PUT,
            format!("{comments}/{comment}"),
            json!({ "addedReactions": ["👍"] }),
        ),
        (
            "reply to a comment",
            Method::POST,
            format!("{comments}/{comment}/replies"),
            json!({ "body": { "markdown": "More" } }),
        ),
        (
            "delete a reply",
            Method::DELETE,
            format!("{comments}/{comment}/replies/{reply}"),
            Value::Null,
        ),
        (
            "comment on a change request",
            Method::POST,
            format!("{crs}/{cr}/comments"),
            json!({ "body": { "markdown": "On the CR" } }),
        ),
        (
            "delete a comment",
            Method::DELETE,
            format!("{comments}/{doomed}"),
            Value::Null,
        ),
        (
            "merge a change request",
            Method::POST,
            format!("{crs}/{cr}/merge"),
            json!({}),
        ),
    ];
    for (what, method, path, body) in writes {
        let before = list_all(&app, &admin, &lists).await;
        let hits = listing_hits(&app);
        assert_eq!(list_all(&app, &admin, &lists).await, before, "{what}");
        assert_eq!(
            listing_hits(&app),
            hits + lists.len() as u64,
            "{what}: the second listings come from memory"
        );
        let body = (!body.is_null()).then_some(body);
        let res = other.call(method, &path, Some(&admin.token), body).await;
        assert!(res.status < 300, "{what}: {} {}", res.status, res.body);
        let after = list_all(&app, &admin, &lists).await;
        assert!(after != before, "{what}: the next listing shows the write");
        // What the node answers once its cache has expired is what it answered at once.
        app.clock.advance_ms(600_001);
        assert_eq!(list_all(&app, &admin, &lists).await, after, "{what}");
    }
}

/// The answers of `paths`, and how many of them the node answered from memory.
async fn read_counting(app: &TestApp, who: &Persona, paths: &[String]) -> (Vec<Value>, u64) {
    let hits = listing_hits(app);
    let answers = list_all(app, who, paths).await;
    (answers, listing_hits(app) - hits)
}

/// A comment on the space changes nothing its change requests show: their answers stay in
/// memory on every node while its comment listing is built again. A comment on a change
/// request changes that change request's count: its answer is built again too. An edit of
/// a change request's content changes nothing its comments show.
#[tokio::test]
async fn a_write_has_built_again_only_the_answers_that_show_it() {
    let app = TestApp::start_with(|c| c.access_cache_ms = 600_000).await;
    let other = app.another_node().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Docs", None).await;
    let cr = app.open_change_request(&admin, &space, "First").await;
    let crs = format!("/v1/spaces/{space}/change-requests");
    let comments = format!("/v1/spaces/{space}/comments");
    let cr_comments = format!("{crs}/{cr}/comments");
    let of_crs = [crs.clone(), format!("{crs}/{cr}")];
    let of_comments = [comments.clone(), cr_comments.clone()];
    list_all(&app, &admin, &of_crs).await;
    let before = list_all(&app, &admin, &of_comments).await;

    let on_space = json!({ "body": { "markdown": "On the space" } });
    other.post(&admin, &comments, on_space).await.expect(200);
    let (cr_answers, kept) = read_counting(&app, &admin, &of_crs).await;
    assert_eq!(kept, 2, "the change requests' answers come from memory");
    assert_eq!(cr_answers[1]["comments"], 0);
    let (after, kept) = read_counting(&app, &admin, &of_comments).await;
    assert_eq!(kept, 0, "the comment listings are built again");
    assert_eq!(after[0]["count"], 1);
    assert_eq!(
        after[1], before[1],
        "the change request's thread is unchanged"
    );

    let on_cr = json!({ "body": { "markdown": "On the change" } });
    other.post(&admin, &cr_comments, on_cr).await.expect(200);
    let (cr_answers, kept) = read_counting(&app, &admin, &of_crs).await;
    assert_eq!(kept, 0, "the change requests' answers are built again");
    assert_eq!(cr_answers[1]["comments"], 1);
    assert_eq!(cr_answers[0]["items"][0]["comments"], 1);
    let (after, _) = read_counting(&app, &admin, &of_comments).await;
    assert_eq!(after[1]["count"], 1);

    let edit = json!({ "changes": [{ "operation": "insert_page", "title": "New",
        "document": { "markdown": "Text." } }] });
    other
        .post(&admin, &format!("{crs}/{cr}/content"), edit)
        .await
        .expect(200);
    let (unchanged, kept) = read_counting(&app, &admin, &of_comments).await;
    assert_eq!(kept, 2, "the comment listings come from memory");
    assert_eq!(unchanged, after);
    let (edited, kept) = read_counting(&app, &admin, &of_crs).await;
    assert_eq!(kept, 0, "the change requests' answers are built again");
    assert_ne!(edited[1]["revision"], cr_answers[1]["revision"]);
}

#[tokio::test]
async fn each_caller_sees_their_own_permissions_in_a_comment_listing() {
    let app = TestApp::start_with(|c| c.access_cache_ms = 600_000).await;
    let admin = app.persona("admin").await;
    let reader = app.persona("reader").await;
    let org = app.org(&admin, "Acme").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    let space = app.space(&admin, &org, "Docs", None).await;
    let comments = format!("/v1/spaces/{space}/comments");
    app.post(&admin, &comments, json!({ "body": { "markdown": "Mine" } }))
        .await
        .expect(200);
    for _ in 0..2 {
        let mine = app.get(&admin, &comments).await.expect(200);
        assert_eq!(
            mine["items"][0]["permissions"],
            json!({ "view": true, "edit": true, "reply": true, "delete": true })
        );
        let theirs = app.get(&reader, &comments).await.expect(200);
        assert_eq!(
            theirs["items"][0]["permissions"],
            json!({ "view": true, "edit": false, "reply": false, "delete": false })
        );
    }
    assert!(
        listing_hits(&app) >= 2,
        "the second round comes from memory"
    );
}

/// While many listings of a space are read at once (they share reads of the space's listing
/// version), a listing asked for after a write on another node has returned shows it: no
/// reader is handed a version read before it asked.
#[tokio::test]
async fn a_listing_read_after_a_write_shows_it_while_many_read_at_once() {
    let app = TestApp::start_with(|c| c.access_cache_ms = 600_000).await;
    let other = app.another_node().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Docs", None).await;
    let comments = format!("/v1/spaces/{space}/comments");
    let count = |body: Value| body["items"].as_array().expect("items").len();
    let done = std::sync::atomic::AtomicBool::new(false);
    let background = async {
        let mut reads = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let batch = (0..8).map(|_| app.get(&admin, &comments));
            for read in futures_util::future::join_all(batch).await {
                read.expect(200);
                reads += 1;
            }
        }
        reads
    };
    let writes_then_reads = async {
        for written in 1..=12 {
            other
                .post(
                    &admin,
                    &comments,
                    json!({ "body": { "markdown": format!("Comment {written}") } }),
                )
                .await
                .expect(200);
            let seen = (0..4).map(|_| app.get(&admin, &comments));
            for read in futures_util::future::join_all(seen).await {
                assert_eq!(count(read.expect(200)), written, "after write {written}");
            }
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
    };
    let (reads, ()) = tokio::join!(background, writes_then_reads);
    assert!(reads > 0);
}
