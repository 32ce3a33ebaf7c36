//! `listChangeRequestsForOrganization`: change requests of the spaces the caller can read,
//! across the organization, with filters, sorting and keyset paging.

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

/// Opens a change request; the clock moves on first so that every row has its own time.
async fn open_cr(app: &TestApp, who: &Persona, space: &str, subject: &str) -> String {
    app.clock.advance_ms(10);
    let cr = app
        .post(
            who,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": subject }),
        )
        .await
        .expect(201);
    cr["id"].as_str().unwrap().to_string()
}

/// The subjects of a listing, in order.
fn subjects(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|c| c["subject"].as_str().unwrap().to_string())
        .collect()
}

async fn listed(app: &TestApp, who: &Persona, org: &str, query: &str) -> Value {
    app.get(who, &format!("/v1/orgs/{org}/change-requests{query}"))
        .await
        .expect(200)
}

#[tokio::test]
async fn lists_what_the_caller_can_read_with_the_official_filters() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let gwen = app.persona("gwen").await;
    let olga = app.persona("olga").await;
    let org = app.org(&alice, "Acme").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    app.add_member(&alice, &org, &gwen, json!(null)).await;
    let a = app.space(&alice, &org, "A", None).await;
    let b = app.space(&alice, &org, "B", None).await;
    let c = app.space(&alice, &org, "C", None).await;
    // The guest reads A only.
    app.post(
        &alice,
        &format!("/v1/spaces/{a}/permissions"),
        json!({ "role": "read", "users": [gwen.id] }),
    )
    .await
    .expect(204);
    // Another organization's change requests never show.
    let other = app.org(&olga, "Elsewhere").await;
    let elsewhere = app.space(&olga, &other, "Theirs", None).await;
    open_cr(&app, &olga, &elsewhere, "theirs").await;

    let a1 = open_cr(&app, &alice, &a, "a1").await;
    let a2 = open_cr(&app, &bob, &a, "a2").await;
    let b1 = open_cr(&app, &bob, &b, "b1").await;
    open_cr(&app, &alice, &c, "c1").await;
    // A deleted space's change requests leave the listing with it.
    app.delete(&alice, &format!("/v1/spaces/{c}"))
        .await
        .expect(204);
    app.clock.advance_ms(10);
    app.patch(
        &bob,
        &format!("/v1/spaces/{a}/change-requests/{a2}"),
        json!({ "status": "draft" }),
    )
    .await
    .expect(200);
    // Alice contributes to Bob's b1, then a1 is touched last.
    app.clock.advance_ms(10);
    app.post(
        &alice,
        &format!("/v1/spaces/{b}/change-requests/{b1}/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "P", "document": { "markdown": "x" } }] }),
    )
    .await
    .expect(200);
    app.clock.advance_ms(10);
    app.patch(
        &alice,
        &format!("/v1/spaces/{a}/change-requests/{a1}"),
        json!({ "subject": "a1" }),
    )
    .await
    .expect(200);

    // Default: open ones, most recently updated first.
    let all = listed(&app, &alice, &org, "").await;
    assert_eq!(subjects(&all), ["a1", "b1"], "{all}");
    assert_eq!(all["count"], 2);
    assert!(all.get("next").is_none(), "{all}");
    assert_eq!(all["items"][0]["object"], "change-request");
    assert_eq!(all["items"][0]["space"], a.as_str());
    assert_eq!(all["items"][0]["createdBy"]["id"], alice.id.as_str());
    assert_eq!(all["items"][0]["outdated"], false);
    // Members with any role read every space; the guest reads A only.
    assert_eq!(subjects(&listed(&app, &bob, &org, "").await), ["a1", "b1"]);
    let guest = listed(&app, &gwen, &org, "?status=open&status=draft").await;
    assert_eq!(subjects(&guest), ["a1", "a2"], "{guest}");
    assert_eq!(guest["count"], 2);
    app.get(&olga, &format!("/v1/orgs/{org}/change-requests"))
        .await
        .expect_error(404);

    // Statuses (repeated), creator, contributor, space.
    assert_eq!(
        subjects(&listed(&app, &alice, &org, "?status=draft").await),
        ["a2"]
    );
    let both = listed(&app, &alice, &org, "?status=open&status=draft&status=open").await;
    assert_eq!(subjects(&both), ["a1", "b1", "a2"]);
    assert_eq!(both["count"], 3);
    assert_eq!(
        subjects(&listed(&app, &alice, &org, "?status=merged&status=archived").await),
        Vec::<String>::new()
    );
    assert_eq!(
        subjects(&listed(&app, &alice, &org, &format!("?creator={}", bob.id)).await),
        ["b1"]
    );
    assert_eq!(
        subjects(
            &listed(
                &app,
                &alice,
                &org,
                &format!("?creator={}&status=draft&status=open", bob.id)
            )
            .await
        ),
        ["b1", "a2"]
    );
    assert_eq!(
        subjects(&listed(&app, &alice, &org, &format!("?contributor={}", alice.id)).await),
        ["b1"]
    );
    assert_eq!(
        subjects(&listed(&app, &alice, &org, &format!("?space={b}")).await),
        ["b1"]
    );
    // A space the caller cannot read, or of another organization, filters everything out.
    let hidden = listed(&app, &gwen, &org, &format!("?space={b}")).await;
    assert_eq!(
        (subjects(&hidden).len(), hidden["count"].clone()),
        (0, json!(0))
    );
    assert_eq!(
        subjects(&listed(&app, &alice, &org, &format!("?space={elsewhere}")).await).len(),
        0
    );

    // Sorting.
    assert_eq!(
        subjects(&listed(&app, &alice, &org, "?orderBy=createdAt").await),
        ["b1", "a1"]
    );
    assert_eq!(
        subjects(&listed(&app, &alice, &org, "?orderBy=updatedAt").await),
        ["a1", "b1"]
    );

    // Quire links no change request to reviewers, sites, topics or style guide runs.
    for filter in ["requestedReviewer", "site", "topic", "styleguideRun"] {
        let none = listed(&app, &alice, &org, &format!("?{filter}=x")).await;
        assert_eq!(
            (subjects(&none).len(), none["count"].clone()),
            (0, json!(0)),
            "{filter}"
        );
    }
    for finding in ["none", "all"] {
        assert_eq!(
            subjects(&listed(&app, &alice, &org, &format!("?finding={finding}")).await),
            ["a1", "b1"]
        );
    }
    for bad in [
        "?status=closed",
        "?orderBy=title",
        "?finding=some",
        "?limit=1001",
    ] {
        let msg = app
            .get(&alice, &format!("/v1/orgs/{org}/change-requests{bad}"))
            .await
            .expect_error(400);
        let name = bad[1..].split('=').next().unwrap();
        assert!(msg.contains(name), "{bad}: {msg}");
    }
}

#[tokio::test]
async fn pages_walk_every_change_request_once() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let a = app.space(&alice, &org, "A", None).await;
    let b = app.space(&alice, &org, "B", None).await;
    let mut expected = Vec::new();
    for i in 0..5 {
        let space = if i % 2 == 0 { &a } else { &b };
        open_cr(&app, &alice, space, &format!("cr{i}")).await;
        expected.insert(0, format!("cr{i}"));
    }
    for order in ["updatedAt", "createdAt"] {
        let mut seen = Vec::new();
        let mut query = format!("?limit=2&orderBy={order}");
        let mut pages = 0;
        loop {
            let page = listed(&app, &alice, &org, &query).await;
            // The count is the list's size when the page is served.
            let total = expected.len() + usize::from(pages > 0);
            assert_eq!(page["count"], total, "{page}");
            assert!(page["items"].as_array().unwrap().len() <= 2);
            seen.extend(subjects(&page));
            pages += 1;
            // A change request opened mid-walk sorts before the cursor: never served here.
            if pages == 1 {
                open_cr(&app, &alice, &a, &format!("late-{order}")).await;
            }
            match page["next"]["page"].as_str() {
                Some(next) => query = format!("?limit=2&orderBy={order}&page={next}"),
                None => break,
            }
        }
        assert_eq!(seen, expected, "{order}");
        assert_eq!(pages, 3);
        expected.insert(0, format!("late-{order}"));
    }

    // A cursor belongs to its list and sort.
    let first = listed(&app, &alice, &org, "?limit=1").await;
    let cursor = first["next"]["page"].as_str().unwrap();
    app.get(
        &alice,
        &format!("/v1/orgs/{org}/change-requests?limit=1&orderBy=createdAt&page={cursor}"),
    )
    .await
    .expect_error(400);
    app.get(
        &alice,
        &format!("/v1/spaces/{a}/change-requests?limit=1&page={cursor}"),
    )
    .await
    .expect_error(400);
    let space_list = app
        .get(&alice, &format!("/v1/spaces/{a}/change-requests?limit=1"))
        .await
        .expect(200);
    let foreign = space_list["next"]["page"].as_str().unwrap();
    app.get(
        &alice,
        &format!("/v1/orgs/{org}/change-requests?page={foreign}"),
    )
    .await
    .expect_error(400);
}
