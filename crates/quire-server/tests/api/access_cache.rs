//! The access cache never outlives a change: every decision it caches (a membership, a
//! space's row, a user's grants on spaces and collections, directly, through a team or
//! through a collection) is honoured by the next request on the node that made the change,
//! and by another node on the same storage once the cache's bound has passed.

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

/// One decision to change, and how to change it.
struct Case {
    name: &'static str,
    /// Who reads the space (after `setup`, they can).
    reader: Persona,
    space: String,
    /// An open change request of the space.
    cr: String,
    /// The write that takes their access away (method, path, body).
    revoke: (&'static str, String, Value),
}

async fn send(app: &TestApp, who: &Persona, (method, path, body): &(&'static str, String, Value)) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let body = (!body.is_null()).then(|| body.clone());
    let res = app.call(method, path, Some(&who.token), body).await;
    assert!(res.status < 300, "{path}: {} {}", res.status, res.body);
}

/// Builds one organization with a space per way of reaching it, each read by its own guest
/// or member; returns the admin and the cases.
async fn world(app: &TestApp) -> (Persona, Vec<Case>) {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let mut cases = Vec::new();

    // A guest with a grant on the space.
    let guest = app.persona("guest").await;
    app.add_member(&admin, &org, &guest, Value::Null).await;
    let space = app.space(&admin, &org, "Granted", None).await;
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/permissions"),
        json!({ "role": "read", "users": [guest.id] }),
    )
    .await
    .expect(204);
    cases.push(Case {
        name: "user grant removed",
        revoke: (
            "DELETE",
            format!("/v1/spaces/{space}/permissions/users/{}", guest.id),
            Value::Null,
        ),
        reader: guest,
        cr: app.open_change_request(&admin, &space, "Draft").await,
        space,
    });

    // A guest reaching a space through a team.
    let teamed = app.persona("teamed").await;
    app.add_member(&admin, &org, &teamed, Value::Null).await;
    let team = app
        .put(
            &admin,
            &format!("/v1/orgs/{org}/teams"),
            json!({ "title": "Writers", "members": [teamed.id] }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let space = app.space(&admin, &org, "Team space", None).await;
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/permissions"),
        json!({ "role": "read", "teams": [team] }),
    )
    .await
    .expect(204);
    cases.push(Case {
        name: "removed from the team",
        revoke: (
            "DELETE",
            format!("/v1/orgs/{org}/teams/{team}/members/{}", teamed.id),
            Value::Null,
        ),
        reader: teamed,
        cr: app.open_change_request(&admin, &space, "Draft").await,
        space,
    });

    // A guest granted a collection; the space leaves the collection (its row changes).
    let inherits = app.persona("inherits").await;
    app.add_member(&admin, &org, &inherits, Value::Null).await;
    let coll = app.collection(&admin, &org, "Docs", None).await;
    app.post(
        &admin,
        &format!("/v1/collections/{coll}/permissions"),
        json!({ "role": "read", "users": [inherits.id] }),
    )
    .await
    .expect(204);
    let space = app.space(&admin, &org, "Inside", Some(&coll)).await;
    cases.push(Case {
        name: "space moved out of the granted collection",
        revoke: (
            "POST",
            format!("/v1/spaces/{space}/move"),
            json!({ "parent": null }),
        ),
        reader: inherits,
        cr: app.open_change_request(&admin, &space, "Draft").await,
        space,
    });

    // A guest granted a collection; the grant on the collection is removed.
    let collected = app.persona("collected").await;
    app.add_member(&admin, &org, &collected, Value::Null).await;
    let coll = app.collection(&admin, &org, "Guides", None).await;
    app.post(
        &admin,
        &format!("/v1/collections/{coll}/permissions"),
        json!({ "role": "read", "users": [collected.id] }),
    )
    .await
    .expect(204);
    let space = app.space(&admin, &org, "Guide", Some(&coll)).await;
    cases.push(Case {
        name: "collection grant removed",
        revoke: (
            "DELETE",
            format!("/v1/collections/{coll}/permissions/users/{}", collected.id),
            Value::Null,
        ),
        reader: collected,
        cr: app.open_change_request(&admin, &space, "Draft").await,
        space,
    });

    // A member of the organization, removed from it.
    let member = app.persona("member").await;
    app.add_member(&admin, &org, &member, json!("read")).await;
    let space = app.space(&admin, &org, "Everyone", None).await;
    cases.push(Case {
        name: "member removed",
        revoke: (
            "DELETE",
            format!("/v1/orgs/{org}/members/{}", member.id),
            Value::Null,
        ),
        reader: member,
        cr: app.open_change_request(&admin, &space, "Draft").await,
        space,
    });

    (admin, cases)
}

/// The reads of a case's space checked: its row, its content, its listings and a change
/// request.
fn reads(case: &Case) -> Vec<String> {
    let s = format!("/v1/spaces/{}", case.space);
    vec![
        s.clone(),
        format!("{s}/content"),
        format!("{s}/content/pages"),
        format!("{s}/change-requests"),
        format!("{s}/change-requests/{}", case.cr),
        format!("{s}/comments"),
    ]
}

/// Lookups the node's access cache answered since start.
fn cache_hits(app: &TestApp) -> u64 {
    app.state
        .cache
        .lookups()
        .iter()
        .map(|(_, (hits, _))| hits)
        .sum()
}

/// Reads the case's space until every lookup it makes is answered from the access cache.
async fn warm(app: &TestApp, case: &Case) {
    for round in 0..3 {
        let hits = cache_hits(app);
        for path in reads(case) {
            app.get(&case.reader, &path).await.expect(200);
        }
        if round == 2 {
            // Each read looks up at least its caller's token and the space's row.
            assert!(
                cache_hits(app) >= hits + 12,
                "{}: the reads are answered from the access cache",
                case.name
            );
        }
    }
}

async fn refused(app: &TestApp, case: &Case) {
    for path in reads(case) {
        let res = app.get(&case.reader, &path).await;
        assert_eq!(
            res.status, 404,
            "{}: {path} still answers {}",
            case.name, res.body
        );
    }
}

#[tokio::test]
async fn the_node_that_changed_access_honours_it_at_once() {
    let app = TestApp::start().await;
    let (admin, cases) = world(&app).await;
    for case in &cases {
        warm(&app, case).await;
        send(&app, &admin, &case.revoke).await;
        refused(&app, case).await;
    }
}

#[tokio::test]
async fn other_nodes_honour_a_change_within_the_cache_bound() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let (admin, cases) = world(&app).await;
    for case in &cases {
        warm(&other, case).await;
        send(&app, &admin, &case.revoke).await;
        refused(&app, case).await;
    }
    other
        .clock
        .advance_ms(other.config.access_cache_ms as i64 + 1);
    for case in &cases {
        refused(&other, case).await;
    }
}

#[tokio::test]
async fn deleted_spaces_are_seen_deleted_by_the_next_request() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app.space(&admin, &org, "Doomed", None).await;
    let path = format!("/v1/spaces/{space}");
    for node in [&app, &other] {
        assert!(node.get(&admin, &path).await.expect(200)["deletedAt"].is_null());
    }
    app.delete(&admin, &path).await.expect(204);
    assert!(app.get(&admin, &path).await.expect(200)["deletedAt"].is_string());
    // A deleted space takes no edits, on this node at once.
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/change-requests"),
        json!({ "subject": "Too late" }),
    )
    .await
    .expect_error(409);
    other
        .clock
        .advance_ms(other.config.access_cache_ms as i64 + 1);
    assert!(other.get(&admin, &path).await.expect(200)["deletedAt"].is_string());
}

#[tokio::test]
async fn a_write_reads_what_it_wrote() {
    // The space's row is cached by the first read; the move must answer with the new parent,
    // and the next read must see it.
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let coll = app.collection(&admin, &org, "Docs", None).await;
    let space = app.space(&admin, &org, "Moving", None).await;
    let path = format!("/v1/spaces/{space}");
    assert!(app.get(&admin, &path).await.expect(200)["parent"].is_null());
    let moved = app
        .post(&admin, &format!("{path}/move"), json!({ "parent": coll }))
        .await
        .expect(200);
    assert_eq!(moved["parent"], coll.as_str());
    assert_eq!(
        app.get(&admin, &path).await.expect(200)["parent"],
        coll.as_str()
    );
}

/// `GET SPACE` answers are rendered once per space row and caller's role: each role sees
/// its own permissions however the reads interleave, and a change to the space is shown by
/// the next read on the node that made it, and on another node within the cache's bound.
#[tokio::test]
async fn space_answers_are_kept_per_role_and_never_outlive_the_row() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let admin = app.persona("admin").await;
    let reader = app.persona("reader").await;
    let org = app.org(&admin, "Acme").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    let space = app.space(&admin, &org, "Kept", None).await;
    let path = format!("/v1/spaces/{space}");
    for node in [&app, &other] {
        for _ in 0..3 {
            let mine = node.get(&admin, &path).await.expect(200);
            let theirs = node.get(&reader, &path).await.expect(200);
            assert_eq!(mine["permissions"]["admin"], true);
            assert_eq!(mine["permissions"]["edit"], true);
            assert_eq!(theirs["permissions"]["admin"], false);
            assert_eq!(theirs["permissions"]["edit"], false);
            assert_eq!(theirs["title"], "Kept");
        }
    }
    app.patch(&admin, &path, json!({ "title": "Renamed" }))
        .await
        .expect(200);
    for who in [&admin, &reader] {
        assert_eq!(app.get(who, &path).await.expect(200)["title"], "Renamed");
    }
    other
        .clock
        .advance_ms(other.config.access_cache_ms as i64 + 1);
    for who in [&admin, &reader] {
        assert_eq!(other.get(who, &path).await.expect(200)["title"], "Renamed");
    }

    // An answer kept longer than the row it was rendered from is not served once the row
    // is read again: here the row is cached by another read half a bound before the
    // answer is rendered, so the row expires first.
    let ttl = other.config.access_cache_ms as i64;
    other.clock.advance_ms(ttl + 1);
    other
        .get(&admin, &format!("{path}/change-requests"))
        .await
        .expect(200);
    other.clock.advance_ms(ttl / 2);
    assert_eq!(
        other.get(&admin, &path).await.expect(200)["title"],
        "Renamed"
    );
    app.patch(&admin, &path, json!({ "title": "Third" }))
        .await
        .expect(200);
    other.clock.advance_ms(ttl / 2 + 1);
    assert_eq!(other.get(&admin, &path).await.expect(200)["title"], "Third");
}

/// Misses of the access cache's maps so far, by name.
fn misses(app: &TestApp) -> std::collections::HashMap<&'static str, u64> {
    app.state
        .cache
        .lookups()
        .into_iter()
        .map(|(name, (_, missed))| (name, missed))
        .collect()
}

/// A write costs the cached lookups of what it changed: a comment in one space leaves the
/// token, membership, grants, row and comment count of another space cached, and the
/// commented space's row too, while its count of open comments is read again.
#[tokio::test]
async fn a_write_drops_only_the_entries_of_what_it_changed() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let busy = app.space(&admin, &org, "Busy", None).await;
    let quiet = app.space(&admin, &org, "Quiet", None).await;
    for space in [&busy, &quiet] {
        app.get(&admin, &format!("/v1/spaces/{space}"))
            .await
            .expect(200);
    }
    let before = misses(&app);
    app.post(
        &admin,
        &format!("/v1/spaces/{busy}/comments"),
        json!({ "body": { "markdown": "Hello." } }),
    )
    .await
    .expect(200);
    let quiet_space = app
        .get(&admin, &format!("/v1/spaces/{quiet}"))
        .await
        .expect(200);
    assert_eq!(quiet_space["comments"], json!(0));
    let after = misses(&app);
    for name in [
        "tokens",
        "memberships",
        "grants",
        "spaces",
        "comment_counts",
    ] {
        assert_eq!(
            after[name], before[name],
            "`{name}` was looked up again after a write elsewhere: {before:?} → {after:?}"
        );
    }
    // The commented space is read again, and shows its comment at once.
    let busy_space = app
        .get(&admin, &format!("/v1/spaces/{busy}"))
        .await
        .expect(200);
    assert_eq!(busy_space["comments"], json!(1));
    assert_eq!(misses(&app)["spaces"], before["spaces"]);
    assert_eq!(misses(&app)["comment_counts"], before["comment_counts"] + 1);
}
