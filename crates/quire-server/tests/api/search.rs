//! Search through HTTP: results and their shape, validation, pagination, freshness after
//! merges, deleted and restored spaces, duplicates, organization search and visibility,
//! languages, purging, and a relevance test set scored by mean reciprocal rank.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

async fn open_cr(app: &TestApp, who: &Persona, space: &str) -> String {
    let cr = app
        .post(
            who,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "Docs" }),
        )
        .await
        .expect(201);
    cr["id"].as_str().unwrap().to_string()
}

async fn apply(app: &TestApp, who: &Persona, space: &str, cr: &str, changes: Vec<Value>) {
    for chunk in changes.chunks(10) {
        app.post(
            who,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
            json!({ "changes": chunk }),
        )
        .await
        .expect(200);
    }
}

async fn merge(app: &TestApp, who: &Persona, space: &str, cr: &str) {
    app.post(
        who,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
}

/// Merges a change request made of `changes` into the space.
async fn change(app: &TestApp, who: &Persona, space: &str, changes: Vec<Value>) {
    let cr = open_cr(app, who, space).await;
    apply(app, who, space, &cr, changes).await;
    merge(app, who, space, &cr).await;
}

fn insert(title: &str, markdown: &str) -> Value {
    json!({ "operation": "insert_page", "title": title, "document": { "markdown": markdown } })
}

/// `q` encoded for a query string.
pub(crate) fn enc(q: &str) -> String {
    url::form_urlencoded::byte_serialize(q.as_bytes()).collect()
}

async fn search(app: &TestApp, who: &Persona, space: &str, q: &str) -> Value {
    app.get(who, &format!("/v1/spaces/{space}/search?query={}", enc(q)))
        .await
        .expect(200)
}

fn titles(res: &Value) -> Vec<String> {
    res["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap().to_string())
        .collect()
}

async fn pages_by_title(app: &TestApp, who: &Persona, space: &str) -> Vec<(String, String)> {
    let pages = app
        .get(who, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<(String, String)>) {
        for p in v.as_array().unwrap() {
            out.push((
                p["title"].as_str().unwrap().to_string(),
                p["id"].as_str().unwrap().to_string(),
            ));
            walk(&p["pages"], out);
        }
    }
    walk(&pages["pages"], &mut out);
    out
}

async fn setup(app: &TestApp) -> (Persona, String, String) {
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    (alice, org, space)
}

const GUIDE: &[(&str, &str)] = &[
    (
        "Getting started",
        "Welcome to the product. This guide walks through installation.\n\n## Install the CLI\n\nDownload the binary and run the installer. Installing takes a minute.\n\n## First project\n\nCreate a project from the dashboard.\n",
    ),
    (
        "Webhooks",
        "Webhooks notify your server about events.\n\n## Retry policy\n\nFailed deliveries are retried with exponential backoff for three days.\n\n## Signatures\n\nEvery delivery carries a signature header you should verify.\n",
    ),
    (
        "Billing",
        "Invoices are issued monthly.\n\n## Payment methods\n\nPay by card or bank transfer. Webhooks are not involved in billing.\n",
    ),
];

async fn seed_guide(app: &TestApp, who: &Persona, space: &str) {
    change(
        app,
        who,
        space,
        GUIDE.iter().map(|(t, md)| insert(t, md)).collect(),
    )
    .await;
}

/// Checks a `SearchPageResult` against the official shape (0.137.0, and the fields
/// 0.202.0 adds); the conformance suite validates the same with the official schemas.
fn assert_page_shape(p: &Value) {
    for key in ["id", "title", "path", "description"] {
        assert!(p[key].is_string(), "{key} in {p}");
    }
    assert!(
        p["urls"]["app"].as_str().unwrap().starts_with("http"),
        "{p}"
    );
    assert!(p["score"].as_f64().unwrap() >= 0.0);
    assert!(p["rank"].as_u64().unwrap() >= 1);
    assert!(p["ancestors"].is_array());
    for s in p["sections"].as_array().unwrap() {
        for key in ["id", "title", "path", "body"] {
            assert!(s[key].is_string(), "{key} in {s}");
        }
        assert!(
            s["urls"]["app"].as_str().unwrap().starts_with("http"),
            "{s}"
        );
    }
}

#[tokio::test]
async fn results_have_sections_excerpts_and_urls() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    seed_guide(&app, &alice, &space).await;

    let res = search(&app, &alice, &space, "retry").await;
    assert_eq!(titles(&res), vec!["Webhooks"], "{res}");
    assert_eq!(res["count"], 1);
    let page = &res["items"][0];
    assert_page_shape(page);
    assert_eq!(page["path"], "webhooks");
    assert_eq!(page["rank"], 1);
    assert_eq!(
        page["urls"]["app"],
        format!("{}/s/{space}/webhooks", app.base)
    );
    let section = &page["sections"][0];
    assert_eq!(section["id"], "retry-policy", "{page}");
    assert_eq!(section["title"], "Retry policy");
    assert_eq!(section["path"], "webhooks");
    assert!(
        section["body"]
            .as_str()
            .unwrap()
            .contains("retried with exponential backoff"),
        "{section}"
    );
    assert_eq!(
        section["urls"]["app"],
        format!("{}/s/{space}/webhooks#retry-policy", app.base)
    );

    // Title matches rank above body matches.
    let res = search(&app, &alice, &space, "webhooks").await;
    assert_eq!(titles(&res), vec!["Webhooks", "Billing"], "{res}");
    // Stems: "installing" finds "install" and "installation".
    let res = search(&app, &alice, &space, "installing ").await;
    assert_eq!(titles(&res), vec!["Getting started"]);
    assert_eq!(res["items"][0]["sections"][0]["id"], "install-the-cli");
    // Stop words alone match nothing, and are ignored next to real words.
    assert_eq!(titles(&search(&app, &alice, &space, "the ").await).len(), 0);
    assert_eq!(
        titles(&search(&app, &alice, &space, "the invoices ").await),
        vec!["Billing"]
    );
    // Nothing found is an empty list.
    let res = search(&app, &alice, &space, "zeppelin ").await;
    assert_eq!(res["items"], json!([]));
    assert_eq!(res["count"], 0);
}

#[tokio::test]
async fn phrases_prefixes_and_typos() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    seed_guide(&app, &alice, &space).await;
    change(
        &app,
        &alice,
        &space,
        vec![insert(
            "Policies",
            "Each retry of a request follows the policy of its team.\n",
        )],
    )
    .await;

    // Both pages hold both words; only one holds the phrase.
    let loose = search(&app, &alice, &space, "retry policy ").await;
    assert_eq!(titles(&loose).len(), 2, "{loose}");
    let phrase = search(&app, &alice, &space, "\"retry policy\"").await;
    assert_eq!(titles(&phrase), vec!["Webhooks"], "{phrase}");
    assert_eq!(phrase["count"], 1);
    // Stop words inside a phrase must be there too.
    let res = search(&app, &alice, &space, "\"retry of a request\"").await;
    assert_eq!(titles(&res), vec!["Policies"], "{res}");
    let res = search(&app, &alice, &space, "\"retry of request\"").await;
    assert_eq!(titles(&res).len(), 0, "{res}");

    // The last word is completed as it is typed.
    for typed in ["web", "webh", "webhoo", "getting sta", "exponential back"] {
        let res = search(&app, &alice, &space, typed).await;
        assert!(!titles(&res).is_empty(), "{typed}: {res}");
    }
    assert_eq!(
        titles(&search(&app, &alice, &space, "getting sta").await)[0],
        "Getting started"
    );
    // A finished word (trailing space) is not completed.
    assert!(titles(&search(&app, &alice, &space, "webh ").await).is_empty());

    // One typo in a word of five letters or more.
    for (typo, want) in [
        ("webhoks ", "Webhooks"),
        ("wbehooks ", "Webhooks"),
        ("invoiecs ", "Billing"),
        ("signatrue ", "Webhooks"),
        ("exponentail backof", "Webhooks"),
    ] {
        let res = search(&app, &alice, &space, typo).await;
        assert_eq!(
            titles(&res).first().map(String::as_str),
            Some(want),
            "{typo}: {res}"
        );
    }
    // Not two typos, and not in short words.
    assert!(titles(&search(&app, &alice, &space, "wbehoks ").await).is_empty());
    assert!(titles(&search(&app, &alice, &space, "cadr ").await).is_empty());
}

#[tokio::test]
async fn invalid_queries_are_refused() {
    let app = TestApp::start().await;
    let (alice, org, space) = setup(&app).await;
    for base in [
        format!("/v1/spaces/{space}/search"),
        format!("/v1/orgs/{org}/search"),
    ] {
        let msg = app.get(&alice, &base).await.expect_error(400);
        assert!(msg.contains("`query`"), "{msg}");
        for q in ["", "%20%20"] {
            let msg = app
                .get(&alice, &format!("{base}?query={q}"))
                .await
                .expect_error(400);
            assert!(msg.contains("`query`"), "{msg}");
        }
        let long = "a".repeat(513);
        let msg = app
            .get(&alice, &format!("{base}?query={long}"))
            .await
            .expect_error(400);
        assert!(msg.contains("`query`") && msg.contains("512"), "{msg}");
        let ok = "é".repeat(512);
        app.get(&alice, &format!("{base}?query={}", enc(&ok)))
            .await
            .expect(200);
        app.get(&alice, &format!("{base}?query=x&limit=1001"))
            .await
            .expect_error(400);
        app.get(&alice, &format!("{base}?query=x&page=forged"))
            .await
            .expect_error(400);
    }
    let bob = app.persona("bob").await;
    app.get(&bob, &format!("/v1/spaces/{space}/search?query=x"))
        .await
        .expect_error(404);
    app.get(&bob, &format!("/v1/orgs/{org}/search?query=x"))
        .await
        .expect_error(404);
}

#[tokio::test]
async fn pages_of_results_walk_the_whole_ranking() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    let changes = (0..23)
        .map(|i| {
            insert(
                &format!("Note {i}"),
                &format!("Shared words here{}.\n", " shared".repeat(i % 5)),
            )
        })
        .collect();
    change(&app, &alice, &space, changes).await;
    let mut seen = Vec::new();
    let mut ranks = Vec::new();
    let mut url = format!("/v1/spaces/{space}/search?query=shared&limit=5");
    loop {
        let res = app.get(&alice, &url).await.expect(200);
        assert_eq!(res["count"], 23);
        for p in res["items"].as_array().unwrap() {
            seen.push(p["id"].as_str().unwrap().to_string());
            ranks.push(p["rank"].as_u64().unwrap());
        }
        match res["next"]["page"].as_str() {
            Some(next) => {
                url = format!(
                    "/v1/spaces/{space}/search?query=shared&limit=5&page={}",
                    enc(next)
                )
            }
            None => break,
        }
    }
    assert_eq!(seen.len(), 23);
    let unique: std::collections::HashSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), 23);
    assert_eq!(ranks, (1..=23).collect::<Vec<u64>>());
    // A cursor is bound to its query.
    let first = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/search?query=shared&limit=5"),
        )
        .await
        .expect(200);
    let next = first["next"]["page"].as_str().unwrap();
    app.get(
        &alice,
        &format!(
            "/v1/spaces/{space}/search?query=words&limit=5&page={}",
            enc(next)
        ),
    )
    .await
    .expect_error(400);
}

#[tokio::test]
async fn the_index_follows_merges_deletes_restores_and_duplicates() {
    let app = TestApp::start().await;
    let (alice, org, space) = setup(&app).await;
    seed_guide(&app, &alice, &space).await;
    let ids = pages_by_title(&app, &alice, &space).await;
    let id_of = |t: &str| ids.iter().find(|(x, _)| x == t).unwrap().1.clone();

    // An edit, a rename with a move under another page, a deletion: a search right after
    // the merge sees exactly the merged content.
    change(
        &app,
        &alice,
        &space,
        vec![
            json!({ "operation": "update_page", "page": id_of("Webhooks"), "document": { "markdown": "Webhooks call your endpoint.\n\n## Timeouts\n\nA delivery times out after ten seconds.\n" } }),
            json!({ "operation": "update_page", "page": id_of("Billing"), "title": "Invoicing" }),
            json!({ "operation": "delete_page", "page": id_of("Getting started") }),
        ],
    )
    .await;
    assert!(titles(&search(&app, &alice, &space, "exponential ").await).is_empty());
    let res = search(&app, &alice, &space, "timeouts ").await;
    assert_eq!(titles(&res), vec!["Webhooks"]);
    assert_eq!(res["items"][0]["sections"][0]["id"], "timeouts");
    assert_eq!(
        titles(&search(&app, &alice, &space, "invoicing ").await),
        vec!["Invoicing"]
    );
    assert!(titles(&search(&app, &alice, &space, "installer ").await).is_empty());

    // The index reflects the space's revision, written in the merge's transaction.
    let current = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .as_str()
        .unwrap()
        .to_string();
    let indexed: String =
        sqlx::query_scalar("SELECT revision_id FROM search_spaces WHERE space_id = $1")
            .bind(&space)
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(indexed, current);

    // A duplicate is searchable at once, with its own URLs.
    let copy = app
        .post(&alice, &format!("/v1/spaces/{space}/duplicate"), json!({}))
        .await
        .expect(201);
    let copy_id = copy["id"].as_str().unwrap();
    let res = search(&app, &alice, copy_id, "timeouts ").await;
    assert_eq!(titles(&res), vec!["Webhooks"]);
    assert!(res["items"][0]["urls"]["app"]
        .as_str()
        .unwrap()
        .contains(copy_id));

    // Deleted spaces vanish from results; restored ones return.
    let org_hits = |res: &Value| -> Vec<String> {
        res["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let q = format!("/v1/orgs/{org}/search?query=timeouts");
    assert_eq!(org_hits(&app.get(&alice, &q).await.expect(200)).len(), 2);
    app.delete(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(204);
    assert_eq!(
        org_hits(&app.get(&alice, &q).await.expect(200)),
        vec![copy_id.to_string()]
    );
    assert!(titles(&search(&app, &alice, &space, "timeouts ").await).is_empty());
    app.post(&alice, &format!("/v1/spaces/{space}/restore"), json!({}))
        .await
        .expect(200);
    assert_eq!(org_hits(&app.get(&alice, &q).await.expect(200)).len(), 2);
    assert_eq!(
        titles(&search(&app, &alice, &space, "timeouts ").await),
        vec!["Webhooks"]
    );

    // Purging a deleted space removes its index.
    app.delete(&alice, &format!("/v1/spaces/{copy_id}"))
        .await
        .expect(204);
    app.clock.advance_ms(8 * 24 * 3600 * 1000);
    quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    for table in [
        "search_spaces",
        "search_pages",
        "search_postings",
        "search_words",
    ] {
        let n: i64 =
            sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE space_id = $1"))
                .bind(copy_id)
                .fetch_one(app.state.db.pool())
                .await
                .unwrap();
        assert_eq!(n, 0, "{table}");
    }
}

#[tokio::test]
async fn cached_answers_and_index_data_follow_every_change() {
    // Whole answers and what queries read of an index are cached per node, named by the
    // spaces' revisions and the index's generation: a change shows in the next search on the
    // node that made it, and on another node once its access cache's bound has passed (as
    // content reads do).
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let (alice, org, space) = setup(&app).await;
    seed_guide(&app, &alice, &space).await;
    let generation = || {
        let db = app.state.db.clone();
        let space = space.clone();
        async move {
            let g: i64 =
                sqlx::query_scalar("SELECT generation FROM search_spaces WHERE space_id = $1")
                    .bind(&space)
                    .fetch_one(db.pool())
                    .await
                    .unwrap();
            g
        }
    };
    for node in [&app, &other] {
        for _ in 0..2 {
            assert_eq!(
                titles(&search(node, &alice, &space, "retry ").await),
                vec!["Webhooks"]
            );
        }
    }
    let before = generation().await;
    let ids = pages_by_title(&app, &alice, &space).await;
    let webhooks = ids.iter().find(|(t, _)| t == "Webhooks").unwrap().1.clone();
    change(
        &app,
        &alice,
        &space,
        vec![json!({ "operation": "update_page", "page": webhooks, "document": { "markdown": "Deliveries are resent with backoff.\n" } })],
    )
    .await;
    assert!(generation().await > before);
    assert!(titles(&search(&app, &alice, &space, "retry ").await).is_empty());
    assert_eq!(
        titles(&search(&app, &alice, &space, "resent ").await),
        vec!["Webhooks"]
    );
    other
        .clock
        .advance_ms(other.config.access_cache_ms as i64 + 1);
    assert!(titles(&search(&other, &alice, &space, "retry ").await).is_empty());
    assert_eq!(
        titles(&search(&other, &alice, &space, "resent ").await),
        vec!["Webhooks"]
    );

    // A renamed space shows its new title in organization answers.
    let q = format!("/v1/orgs/{org}/search?query=resent");
    assert_eq!(
        app.get(&alice, &q).await.expect(200)["items"][0]["title"],
        "Guide"
    );
    app.patch(
        &alice,
        &format!("/v1/spaces/{space}"),
        json!({ "title": "Handbook" }),
    )
    .await
    .expect(200);
    assert_eq!(
        app.get(&alice, &q).await.expect(200)["items"][0]["title"],
        "Handbook"
    );

    // Folding the changed page into the blocks keeps the revision but rewrites the index:
    // a new generation, and the same answers.
    let g = generation().await;
    quire_server::domain::search::maintain(&app.state, &space)
        .await
        .unwrap();
    assert!(generation().await > g);
    assert_eq!(
        titles(&search(&app, &alice, &space, "resent ").await),
        vec!["Webhooks"]
    );
    assert!(titles(&search(&app, &alice, &space, "retry ").await).is_empty());
    assert_eq!(
        titles(&search(&app, &alice, &space, "webhooks ").await),
        vec!["Webhooks", "Billing"]
    );
}

#[tokio::test]
async fn updates_rewrite_only_changed_pages() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    let changes = (0..120)
        .map(|i| {
            insert(
                &format!("Page {i}"),
                &format!("Body of page {i} about topic{i}.\n"),
            )
        })
        .collect();
    change(&app, &alice, &space, changes).await;
    let s = quire_server::store::spaces::get(&app.state.db, &space)
        .await
        .unwrap()
        .unwrap();
    let row = quire_server::store::revisions::get(&app.state.db, &space, &s.revision_id)
        .await
        .unwrap()
        .unwrap();
    let rev = quire_server::domain::content::load_in(&app.state, &row.space_id, &row.root)
        .await
        .unwrap();

    // Same revision: nothing to do.
    let mut tx = app.state.db.begin().await.unwrap();
    let out =
        quire_server::domain::search::reindex(&app.state, &mut tx, &space, &s.revision_id, &rev)
            .await
            .unwrap();
    assert_eq!(out.kind, "unchanged");
    drop(tx);

    // Two pages edited, one moved under another: two analysed, the moved one relocated.
    let mut next = (*rev).clone();
    let ids: Vec<String> = next.pages.iter().map(|p| p.id.clone()).collect();
    next.pages[3].title = "Renamed".into();
    if let quire_content::model::PageKind::Document(d) = &mut next.pages[7].kind {
        d.markdown = "New words: zanzibar.\n".into();
    }
    let moved = next.pages.remove(10);
    next.pages[0].pages.push(moved);
    let mut tx = app.state.db.begin().await.unwrap();
    tx.touches(&[]);
    let out =
        quire_server::domain::search::reindex(&app.state, &mut tx, &space, "next", &Arc::new(next))
            .await
            .unwrap();
    assert_eq!(
        (out.kind, out.analysed, out.removed, out.moved),
        ("incremental", 2, 0, 1),
        "{ids:?}"
    );
    tx.commit().await.unwrap();
    // The index is at a revision the space is not at: a search rebuilds it from the
    // space's current revision.
    let res = search(&app, &alice, &space, "zanzibar ").await;
    assert!(titles(&res).is_empty());
    let res = search(&app, &alice, &space, "topic7 ").await;
    assert_eq!(titles(&res), vec!["Page 7"]);

    // An index without a manifest of what its pages were analysed from (built before
    // manifests were kept) is rebuilt whole rather than compared.
    sqlx::query("DELETE FROM search_manifests WHERE space_id = $1")
        .bind(&space)
        .execute(app.state.db.pool())
        .await
        .unwrap();
    let mut tx = app.state.db.begin().await.unwrap();
    let out = quire_server::domain::search::reindex(&app.state, &mut tx, &space, "again", &rev)
        .await
        .unwrap();
    assert_eq!((out.kind, out.analysed), ("full", 120));
}

#[tokio::test]
async fn organization_search_groups_by_space_and_respects_access() {
    let app = TestApp::start().await;
    let (alice, org, guide) = setup(&app).await;
    seed_guide(&app, &alice, &guide).await;
    let api = app.space(&alice, &org, "API", None).await;
    change(
        &app,
        &alice,
        &api,
        vec![
            insert("Webhook events", "Each webhook event names its type.\n"),
            insert("Rate limits", "Too many webhook calls are throttled.\n"),
        ],
    )
    .await;

    let res = app
        .get(&alice, &format!("/v1/orgs/{org}/search?query=webhook"))
        .await
        .expect(200);
    let items = res["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{res}");
    assert_eq!(res["count"], 4, "{res}");
    for s in items {
        assert_eq!(s["type"], "space");
        assert!(s["title"].is_string());
        for p in s["pages"].as_array().unwrap() {
            assert_page_shape(p);
        }
    }
    let all: Vec<u64> = items
        .iter()
        .flat_map(|s| {
            s["pages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["rank"].as_u64().unwrap())
        })
        .collect();
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![1, 2, 3, 4]);

    // A guest sees only the spaces granted to them.
    let bob = app.persona("bob").await;
    app.add_member(&alice, &org, &bob, Value::Null).await;
    let res = app
        .get(&bob, &format!("/v1/orgs/{org}/search?query=webhook"))
        .await
        .expect(200);
    assert_eq!(res["items"], json!([]));
    app.post(
        &alice,
        &format!("/v1/spaces/{api}/permissions"),
        json!({ "role": "read", "users": [bob.id] }),
    )
    .await
    .expect(204);
    let res = app
        .get(&bob, &format!("/v1/orgs/{org}/search?query=webhook"))
        .await
        .expect(200);
    let spaces: Vec<&str> = res["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(spaces, vec![api.as_str()]);
    app.get(&bob, &format!("/v1/spaces/{guide}/search?query=webhook"))
        .await
        .expect_error(404);

    // Pages are the unit of `limit`; spaces group each page of results.
    let res = app
        .get(
            &alice,
            &format!("/v1/orgs/{org}/search?query=webhook&limit=3"),
        )
        .await
        .expect(200);
    let n: usize = res["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["pages"].as_array().unwrap().len())
        .sum();
    assert_eq!(n, 3);
    assert!(res["next"]["page"].is_string());
}

#[tokio::test]
async fn stems_follow_the_space_language() {
    let app = TestApp::start().await;
    let (alice, org, _space) = setup(&app).await;
    let fr = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/spaces"),
            json!({ "title": "Guide", "language": "fr" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    change(
        &app,
        &alice,
        &fr,
        vec![
            insert("Les éléphants", "Les éléphants mangent des feuilles.\n"),
            insert("Paiements", "Les factures sont envoyées chaque mois.\n"),
        ],
    )
    .await;
    // French stems, accents folded.
    assert_eq!(
        titles(&search(&app, &alice, &fr, "elephant ").await),
        vec!["Les éléphants"]
    );
    assert_eq!(
        titles(&search(&app, &alice, &fr, "facture ").await),
        vec!["Paiements"]
    );
    // A language change re-indexes the space with the new analysis.
    app.patch(
        &alice,
        &format!("/v1/spaces/{fr}"),
        json!({ "language": "en" }),
    )
    .await
    .expect(200);
    assert_eq!(
        titles(&search(&app, &alice, &fr, "factures ").await),
        vec!["Paiements"]
    );
    let analyzer: String =
        sqlx::query_scalar("SELECT analyzer FROM search_spaces WHERE space_id = $1")
            .bind(&fr)
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    let version = quire_server::domain::search::analyze::VERSION;
    assert_eq!(analyzer, format!("en/{version}"));
}

/// A new space of `org` whose language is `language`.
async fn space_in(app: &TestApp, who: &Persona, org: &str, language: &str) -> String {
    app.post(
        who,
        &format!("/v1/orgs/{org}/spaces"),
        json!({ "title": "Guide", "language": language }),
    )
    .await
    .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The excerpt of the first section of the first result.
fn first_excerpt(res: &Value) -> String {
    res["items"][0]["sections"][0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn french_finds_other_inflections_without_accents() {
    let app = TestApp::start().await;
    let (alice, org, _space) = setup(&app).await;
    let fr = space_in(&app, &alice, &org, "fr").await;
    change(
        &app,
        &alice,
        &fr,
        vec![
            insert(
                "Publication",
                "Les pages publiées sont visibles par tous les lecteurs.\n",
            ),
            insert(
                "Équipes",
                "Chaque équipe gère ses propres espaces et réglages.\n",
            ),
        ],
    )
    .await;
    // Another inflection, typed without accents.
    for (q, want) in [
        ("publiee ", "Publication"),
        ("publier ", "Publication"),
        ("lecteur ", "Publication"),
        ("equipes ", "Équipes"),
        ("reglage ", "Équipes"),
    ] {
        let res = search(&app, &alice, &fr, q).await;
        assert_eq!(titles(&res), vec![want], "{q}: {res}");
    }
    // French stop words alone find nothing.
    assert!(titles(&search(&app, &alice, &fr, "les ").await).is_empty());
}

#[tokio::test]
async fn german_finds_other_inflections_and_folds_umlauts() {
    let app = TestApp::start().await;
    let (alice, org, _space) = setup(&app).await;
    let de = space_in(&app, &alice, &org, "de").await;
    change(
        &app,
        &alice,
        &de,
        vec![
            insert(
                "Rechnungen",
                "Rechnungen werden monatlich verschickt. Die Größe der Anhänge ist begrenzt.\n",
            ),
            insert(
                "Zahlungsarten",
                "Sie können per Karte oder per Überweisung bezahlen.\n",
            ),
        ],
    )
    .await;
    for (q, want) in [
        ("Rechnung ", "Rechnungen"),
        ("grosse ", "Rechnungen"),
        ("grösse ", "Rechnungen"),
        ("Anhang ", "Rechnungen"),
        ("uberweisungen ", "Zahlungsarten"),
        ("Karten ", "Zahlungsarten"),
    ] {
        let res = search(&app, &alice, &de, q).await;
        assert_eq!(titles(&res), vec![want], "{q}: {res}");
    }
    assert!(titles(&search(&app, &alice, &de, "und der ").await).is_empty());
}

#[tokio::test]
async fn japanese_words_are_found_as_written() {
    let app = TestApp::start().await;
    let (alice, org, english) = setup(&app).await;
    let ja = space_in(&app, &alice, &org, "ja").await;
    let pages = vec![
        insert(
            "検索の設定",
            "検索設定では、検索結果に表示するページを選べます。\n\n## 対象\n\n公開されたページだけが検索の対象になります。\n",
        ),
        insert(
            "ページの公開",
            "ページを公開すると、リンクを知っている人は誰でも読めます。公開したページは検索にも表示されます。\n\n## 公開の取り消し\n\n公開を取り消すには、ページの設定を開きます。\n",
        ),
        insert(
            "変更リクエスト",
            "変更リクエストを作成して、ページの内容を変更します。レビューが終わったらマージします。\n",
        ),
        // Holds 設 (設計) and 定 (定例), never 設定.
        insert(
            "定例会議",
            "毎週の定例会議で、新しい機能の設計を話し合います。\n",
        ),
    ];
    change(&app, &alice, &ja, pages.clone()).await;

    // A word finds the pages holding it, the one titled so first, and not a page that holds
    // its characters apart.
    let res = search(&app, &alice, &ja, "設定 ").await;
    assert_eq!(titles(&res), vec!["検索の設定", "ページの公開"], "{res}");
    let res = search(&app, &alice, &ja, "レビュー").await;
    assert_eq!(titles(&res), vec!["変更リクエスト"], "{res}");
    assert!(
        first_excerpt(&res).contains("レビューが終わったら"),
        "{res}"
    );
    // Two words typed together find the page holding them together, not one holding
    // them apart (ページの公開 has 検索 and 設定 in different sentences).
    let res = search(&app, &alice, &ja, "検索設定").await;
    assert_eq!(titles(&res), vec!["検索の設定"], "{res}");
    assert!(first_excerpt(&res).contains("検索設定では"), "{res}");
    // Several words.
    let res = search(&app, &alice, &ja, "公開 取り消す").await;
    assert_eq!(titles(&res)[0], "ページの公開", "{res}");
    let excerpt = first_excerpt(&res);
    assert!(excerpt.contains("公開を取り消す"), "{res}");
    assert_eq!(res["items"][0]["sections"][0]["title"], "公開の取り消し");
    assert_eq!(
        titles(&search(&app, &alice, &ja, "変更　マージ").await),
        vec!["変更リクエスト"]
    );
    // Words typed together that the text separates (by a particle) still find it.
    let res = search(&app, &alice, &ja, "公開取り消す").await;
    assert_eq!(
        titles(&res).first().map(String::as_str),
        Some("ページの公開"),
        "{res}"
    );
    // Quoted phrases.
    let res = search(&app, &alice, &ja, "\"ページを公開\"").await;
    assert_eq!(titles(&res), vec!["ページの公開"], "{res}");
    let res = search(&app, &alice, &ja, "\"ページの設定\"").await;
    assert_eq!(titles(&res), vec!["ページの公開"], "{res}");
    assert!(titles(&search(&app, &alice, &ja, "\"設定のページ\"").await).is_empty());
    // A character being typed finds the words it starts.
    let res = search(&app, &alice, &ja, "検").await;
    assert_eq!(titles(&res)[0], "検索の設定", "{res}");

    // The same text in a space left in English is found the same way.
    change(&app, &alice, &english, pages).await;
    let res = search(&app, &alice, &english, "設定 ").await;
    assert_eq!(titles(&res), vec!["検索の設定", "ページの公開"], "{res}");
    let res = search(&app, &alice, &english, "検索設定").await;
    assert_eq!(titles(&res), vec!["検索の設定"], "{res}");
}

#[tokio::test]
async fn chinese_words_are_found_as_written() {
    let app = TestApp::start().await;
    let (alice, org, _space) = setup(&app).await;
    let zh = space_in(&app, &alice, &org, "zh").await;
    change(
        &app,
        &alice,
        &zh,
        vec![
            insert(
                "搜索设置",
                "在搜索设置中，你可以选择哪些页面出现在搜索结果里。\n\n## 范围\n\n只有已发布的页面才能被搜索到。\n",
            ),
            insert(
                "发布页面",
                "发布页面以后，任何拥有链接的人都可以阅读。已发布的页面也会出现在搜索结果里。\n\n## 取消发布\n\n要取消发布，请打开页面的设置。\n",
            ),
            insert(
                "变更请求",
                "创建变更请求来修改页面内容。审核通过后即可合并。\n",
            ),
            // Holds 设 (设计) and 置 (放置), never 设置.
            insert(
                "每周例会",
                "我们在每周的例会上讨论新功能的设计，并把会议记录放置在共享文件夹里。\n",
            ),
        ],
    )
    .await;

    let res = search(&app, &alice, &zh, "设置 ").await;
    assert_eq!(titles(&res), vec!["搜索设置", "发布页面"], "{res}");
    let res = search(&app, &alice, &zh, "审核").await;
    assert_eq!(titles(&res), vec!["变更请求"], "{res}");
    assert!(first_excerpt(&res).contains("审核通过"), "{res}");
    // 发布页面 holds 搜索 and 设置 apart.
    let res = search(&app, &alice, &zh, "搜索设置").await;
    assert_eq!(titles(&res), vec!["搜索设置"], "{res}");
    // Several words.
    let res = search(&app, &alice, &zh, "审核 合并").await;
    assert_eq!(titles(&res), vec!["变更请求"], "{res}");
    let res = search(&app, &alice, &zh, "取消 发布").await;
    assert_eq!(titles(&res)[0], "发布页面", "{res}");
    assert_eq!(res["items"][0]["sections"][0]["title"], "取消发布", "{res}");
    assert!(first_excerpt(&res).contains("要取消发布"), "{res}");
    // A question holds its words together with others the text does not have.
    let res = search(&app, &alice, &zh, "如何修改页面内容").await;
    assert_eq!(
        titles(&res).first().map(String::as_str),
        Some("变更请求"),
        "{res}"
    );
    // Quoted phrases.
    let res = search(&app, &alice, &zh, "\"打开页面的设置\"").await;
    assert_eq!(titles(&res), vec!["发布页面"], "{res}");
    assert!(titles(&search(&app, &alice, &zh, "\"设置页面\"").await).is_empty());
}

// ---- Relevance -------------------------------------------------------------------------

/// A small deterministic generator (xorshift), so that the corpus never changes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// A topic page: title, two specific headings, its keywords, and a word only it uses.
struct Topic {
    title: &'static str,
    headings: [&'static str; 2],
    keywords: &'static [&'static str],
    rare: &'static str,
}

const fn t(
    title: &'static str,
    headings: [&'static str; 2],
    keywords: &'static [&'static str],
    rare: &'static str,
) -> Topic {
    Topic {
        title,
        headings,
        keywords,
        rare,
    }
}

const TOPICS: &[Topic] = &[
    t(
        "Webhook retry policy",
        ["Exponential backoff", "Dead letter queue"],
        &["webhook", "retry", "backoff", "delivery"],
        "jitter",
    ),
    t(
        "Rotate API keys",
        ["Key expiration", "Revoking a leaked key"],
        &["rotate", "keys", "secret", "credential"],
        "keyring",
    ),
    t(
        "Single sign-on with SAML",
        ["Identity provider metadata", "Assertion attributes"],
        &["saml", "sso", "identity", "assertion"],
        "okta",
    ),
    t(
        "Deploy to Kubernetes",
        ["Helm chart values", "Readiness probes"],
        &["kubernetes", "helm", "cluster", "pod"],
        "kubectl",
    ),
    t(
        "Invoices and receipts",
        ["Tax identification", "Downloading receipts"],
        &["invoice", "receipt", "tax", "vat"],
        "proforma",
    ),
    t(
        "Custom domains",
        ["DNS records", "TLS certificates"],
        &["domain", "dns", "cname", "certificate"],
        "apex",
    ),
    t(
        "Search analytics dashboard",
        ["Popular queries", "Queries without results"],
        &["analytics", "dashboard", "queries", "clicks"],
        "funnel",
    ),
    t(
        "Import from Confluence",
        ["Export a Confluence space", "Mapping macros"],
        &["confluence", "import", "macros", "export"],
        "atlassian",
    ),
    t(
        "Git synchronization",
        ["Branch protection", "Resolving sync conflicts"],
        &["git", "branch", "repository", "commit"],
        "rebase",
    ),
    t(
        "Audit log retention",
        ["Exporting audit events", "Retention periods"],
        &["audit", "events", "retention", "log"],
        "siem",
    ),
    t(
        "Two-factor authentication",
        ["Authenticator apps", "Recovery codes"],
        &["authentication", "factor", "totp", "recovery"],
        "yubikey",
    ),
    t(
        "Rate limiting",
        ["Request quotas", "Handling 429 responses"],
        &["rate", "limit", "quota", "throttle"],
        "bucket",
    ),
    t(
        "Password reset emails",
        ["Email templates", "Link expiry"],
        &["password", "reset", "email", "template"],
        "smtp",
    ),
    t(
        "Mobile app notifications",
        ["Push tokens", "Quiet hours"],
        &["mobile", "push", "notification", "device"],
        "apns",
    ),
    t(
        "Database backups",
        ["Point in time recovery", "Backup schedule"],
        &["backup", "database", "snapshot", "restore"],
        "pgdump",
    ),
    t(
        "Localization and translations",
        ["Translation memory", "Right to left languages"],
        &["localization", "translation", "locale", "language"],
        "gettext",
    ),
    t(
        "Embedding videos",
        ["Supported providers", "Autoplay settings"],
        &["video", "embed", "player", "youtube"],
        "vimeo",
    ),
    t(
        "Team permissions",
        ["Inheriting roles", "Guest access"],
        &["team", "permission", "role", "guest"],
        "rbac",
    ),
    t(
        "Keyboard shortcuts",
        ["Navigation shortcuts", "Editor shortcuts"],
        &["keyboard", "shortcut", "hotkey", "editor"],
        "chord",
    ),
    t(
        "Exporting to PDF",
        ["Page breaks", "Cover pages"],
        &["pdf", "export", "print", "layout"],
        "pagination",
    ),
    t(
        "Usage quotas and limits",
        ["Storage limits", "Seat limits"],
        &["storage", "seats", "usage", "plan"],
        "overage",
    ),
    t(
        "Content versioning",
        ["Comparing revisions", "Reverting a change"],
        &["version", "revision", "history", "revert"],
        "changelog",
    ),
    t(
        "OAuth applications",
        ["Redirect URIs", "Access token scopes"],
        &["oauth", "token", "scope", "redirect"],
        "pkce",
    ),
    t(
        "Markdown syntax",
        ["Code blocks", "Tables and lists"],
        &["markdown", "syntax", "heading", "table"],
        "commonmark",
    ),
    t(
        "Image optimization",
        ["Responsive images", "Lazy loading"],
        &["image", "compression", "responsive", "resize"],
        "webp",
    ),
    t(
        "Status page and incidents",
        ["Incident updates", "Scheduled maintenance"],
        &["incident", "status", "outage", "maintenance"],
        "postmortem",
    ),
    t(
        "Slack integration",
        ["Channel notifications", "Slash commands"],
        &["slack", "channel", "integration", "slash"],
        "workspace",
    ),
    t(
        "Data residency",
        ["European region", "Moving data between regions"],
        &["region", "residency", "gdpr", "hosting"],
        "frankfurt",
    ),
    t(
        "Custom fonts and themes",
        ["Brand colors", "Uploading fonts"],
        &["font", "theme", "color", "brand"],
        "typeface",
    ),
    t(
        "Command line interface",
        ["Installing the CLI", "Authentication profiles"],
        &["cli", "terminal", "command", "install"],
        "homebrew",
    ),
    t(
        "Scheduled publishing",
        ["Publishing calendar", "Embargoed pages"],
        &["schedule", "publish", "calendar", "embargo"],
        "cron",
    ),
    t(
        "Accessibility guidelines",
        ["Alternative text", "Color contrast"],
        &["accessibility", "contrast", "screen", "reader"],
        "wcag",
    ),
    t(
        "Reverse proxy setup",
        ["Nginx configuration", "Forwarded headers"],
        &["proxy", "nginx", "header", "forwarded"],
        "upstream",
    ),
    t(
        "Archiving old spaces",
        ["Archive retention", "Restoring archives"],
        &["archive", "space", "old", "unarchive"],
        "coldstorage",
    ),
    t(
        "Feedback widget",
        ["Collecting ratings", "Feedback reports"],
        &["feedback", "rating", "widget", "survey"],
        "thumbs",
    ),
    t(
        "Environment variables",
        ["Secret variables", "Per environment overrides"],
        &["environment", "variable", "override", "config"],
        "dotenv",
    ),
    // Siblings: topics that share most of their words with one above.
    t(
        "Webhook signatures",
        ["Verifying the HMAC", "Replay protection"],
        &["webhook", "signature", "hmac", "delivery"],
        "sha256",
    ),
    t(
        "API keys in CI pipelines",
        ["Storing secrets in CI", "Scoped tokens"],
        &["keys", "secret", "pipeline", "token"],
        "circleci",
    ),
    t(
        "SAML troubleshooting",
        ["Clock skew errors", "Invalid assertions"],
        &["saml", "assertion", "clock", "error"],
        "skew",
    ),
    t(
        "Kubernetes autoscaling",
        ["Horizontal pod autoscaler", "CPU targets"],
        &["kubernetes", "pod", "replicas", "cpu"],
        "hpa",
    ),
    t(
        "Refunds and credits",
        ["Partial refunds", "Account credit"],
        &["invoice", "refund", "credit", "billing"],
        "chargeback",
    ),
    t(
        "Domain verification",
        ["TXT records", "Verification failures"],
        &["domain", "dns", "txt", "verify"],
        "dkim",
    ),
    t(
        "Git branch previews",
        ["Preview deployments", "Cleaning up previews"],
        &["git", "branch", "preview", "deploy"],
        "netlify",
    ),
    t(
        "Audit log API",
        ["Listing audit events", "Pagination cursors"],
        &["audit", "events", "api", "pagination"],
        "cursor",
    ),
];

const FILLER: &[&str] = &[
    "settings",
    "users",
    "team",
    "project",
    "page",
    "content",
    "workspace",
    "click",
    "select",
    "open",
    "option",
    "feature",
    "admin",
    "access",
    "update",
    "save",
    "create",
    "manage",
    "account",
    "default",
    "enable",
    "disable",
    "information",
    "example",
    "guide",
    "step",
    "organization",
    "member",
    "link",
    "button",
    "menu",
    "list",
    "view",
    "edit",
    "change",
    "new",
    "set",
    "value",
    "field",
    "name",
    "use",
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "for",
    "with",
    "your",
    "you",
    "can",
    "is",
    "this",
    "from",
    "on",
    "by",
    "each",
    "when",
    "more",
    "also",
    "first",
    "after",
    "before",
    "other",
    "all",
    "any",
    "need",
    "make",
    "sure",
    "data",
    "time",
    "files",
    "section",
    "section",
    "details",
    "overview",
    "number",
    "type",
    "text",
    "form",
    "panel",
    "item",
    "items",
    "state",
    "request",
    "response",
    "server",
    "client",
    "app",
    "web",
    "support",
    "help",
    "check",
    "start",
    "run",
    "work",
    "works",
];

fn sentence(rng: &mut Rng, topic: Option<&Topic>) -> String {
    let len = 8 + rng.below(8);
    let mut words = Vec::with_capacity(len);
    for _ in 0..len {
        let roll = rng.below(100);
        let w = match topic {
            Some(t) if roll < 14 => rng.pick(t.keywords),
            _ if roll < 20 => {
                // A word from another topic: noise that competes with the right answer.
                let other = &TOPICS[rng.below(TOPICS.len())];
                rng.pick(other.keywords)
            }
            _ => rng.pick(FILLER),
        };
        words.push(w);
    }
    let mut s = words.join(" ");
    s[..1].make_ascii_uppercase();
    s.push('.');
    s
}

fn paragraph(rng: &mut Rng, topic: Option<&Topic>, n: usize) -> String {
    (0..n)
        .map(|_| sentence(rng, topic))
        .collect::<Vec<_>>()
        .join(" ")
}

fn topic_markdown(rng: &mut Rng, topic: &Topic) -> String {
    let mut md = paragraph(rng, Some(topic), 3);
    md.push_str(&format!(" The {} setting matters here.\n\n", topic.rare));
    md.push_str("## Overview\n\n");
    md.push_str(&paragraph(rng, Some(topic), 4));
    for h in topic.headings {
        md.push_str(&format!("\n\n## {h}\n\n"));
        md.push_str(&paragraph(rng, Some(topic), 4));
    }
    md.push_str("\n\n## Troubleshooting\n\n");
    md.push_str(&paragraph(rng, Some(topic), 3));
    md.push('\n');
    md
}

/// Release notes: several topics' words, often, in the body only.
fn notes_markdown(rng: &mut Rng) -> String {
    let mut md = String::new();
    for _ in 0..3 {
        let topic = &TOPICS[rng.below(TOPICS.len())];
        md.push_str(&format!(
            "## {}\n\n",
            rng.pick(&["Improvements", "Fixes", "Changes"])
        ));
        for _ in 0..5 {
            let s = sentence(rng, Some(topic));
            md.push_str(&s);
            md.push_str(&format!(
                " {} {}. ",
                rng.pick(topic.keywords),
                rng.pick(topic.keywords)
            ));
        }
        md.push_str("\n\n");
    }
    md
}

fn filler_markdown(rng: &mut Rng) -> String {
    let mut md = paragraph(rng, None, 4);
    for h in ["Overview", "Details", "Troubleshooting"] {
        md.push_str(&format!("\n\n## {h}\n\n"));
        md.push_str(&paragraph(rng, None, 4));
    }
    md.push('\n');
    md
}

/// The relevance test set: at least one query per topic, of six kinds, each with the page
/// that answers it best.
fn relevance_queries() -> Vec<(String, &'static str, &'static str)> {
    let mut out = Vec::new();
    for (i, topic) in TOPICS.iter().enumerate() {
        let lower = topic.title.to_lowercase();
        let (kind, q) = match i % 6 {
            // The title, as typed (the last word may be partial).
            0 => ("title", lower.clone()),
            // A specific heading, as a phrase.
            1 => (
                "phrase",
                format!("\"{}\"", topic.headings[0].to_lowercase()),
            ),
            // Two keywords in other word forms (stems).
            2 => (
                "stems",
                format!(
                    "{}s {}ing ",
                    topic.keywords[0],
                    topic.keywords[1].trim_end_matches('e')
                ),
            ),
            // A keyword with one typo (a letter dropped), and a second keyword.
            3 => {
                let k = topic
                    .keywords
                    .iter()
                    .find(|k| k.len() >= 6)
                    .unwrap_or(&topic.keywords[0]);
                let mid = k.len() / 2;
                let typo = format!("{}{}", &k[..mid], &k[mid + 1..]);
                ("typo", format!("{typo} {} ", topic.keywords[2]))
            }
            // A keyword and the start of the second heading, being typed.
            4 => {
                let h = topic.headings[1].to_lowercase();
                let first = h.split(' ').next().unwrap().to_string();
                let partial: String = first
                    .chars()
                    .take(first.chars().count().max(4) - 2)
                    .collect();
                ("prefix", format!("{} {partial}", topic.keywords[0]))
            }
            // The word only this page uses.
            _ => ("rare", format!("{} ", topic.rare)),
        };
        out.push((q, topic.title, kind));
    }
    // Questions telling siblings apart.
    for (q, want) in [
        ("webhook signature hmac", "Webhook signatures"),
        ("webhook backoff ", "Webhook retry policy"),
        ("saml clock skew error ", "SAML troubleshooting"),
        ("how do kubernetes replicas scale", "Kubernetes autoscaling"),
        ("refund an invoice ", "Refunds and credits"),
        ("verify a domain with a txt record", "Domain verification"),
        ("dns cname", "Custom domains"),
        ("preview deployments for branches ", "Git branch previews"),
        ("audit events api pagination", "Audit log API"),
        ("helm values ", "Deploy to Kubernetes"),
        ("rotate leaked keys", "Rotate API keys"),
        ("secrets in ci pipelines ", "API keys in CI pipelines"),
    ] {
        out.push((q.to_string(), want, "sibling"));
    }
    out
}

#[tokio::test]
async fn relevance_mean_reciprocal_rank() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    let mut rng = Rng(0x5eed_cafe_f00d_1234);
    let mut changes = Vec::new();
    for topic in TOPICS {
        changes.push(insert(topic.title, &topic_markdown(&mut rng, topic)));
    }
    for i in 0..12 {
        changes.push(insert(
            &format!("Release notes {i}"),
            &notes_markdown(&mut rng),
        ));
    }
    for i in 0..44 {
        let title = format!(
            "{} {} notes {i}",
            rng.pick(FILLER),
            rng.pick(&["general", "misc", "team", "product"])
        );
        changes.push(insert(&title, &filler_markdown(&mut rng)));
    }
    change(&app, &alice, &space, changes).await;

    let queries = relevance_queries();
    assert!(queries.len() >= 30);
    let mut total = 0.0;
    let mut report = String::new();
    for (q, want, kind) in &queries {
        let res = search(&app, &alice, &space, q).await;
        let got = titles(&res);
        let rank = got.iter().position(|t| t == want).map(|i| i + 1);
        let rr = rank.map_or(0.0, |r| 1.0 / r as f64);
        total += rr;
        report.push_str(&format!(
            "{kind:>8} {q:<45} -> {:?} (want {want:?}, got {:?})\n",
            rank,
            got.iter().take(3).collect::<Vec<_>>()
        ));
    }
    let mrr = total / queries.len() as f64;
    println!("{report}MRR over {} queries: {mrr:.3}", queries.len());
    assert!(mrr >= 0.9, "MRR {mrr:.3} below 0.9:\n{report}");
}

#[tokio::test]
async fn the_delta_is_folded_into_blocks_by_a_job() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    let changes = (0..80)
        .map(|i| {
            insert(
                &format!("Page {i}"),
                &format!("Old text {i} with walrus.\n"),
            )
        })
        .collect();
    change(&app, &alice, &space, changes).await;
    let ids = pages_by_title(&app, &alice, &space).await;
    let count = |table: &'static str| {
        let db = app.state.db.clone();
        let space = space.clone();
        async move {
            let n: i64 =
                sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE space_id = $1"))
                    .bind(&space)
                    .fetch_one(db.pool())
                    .await
                    .unwrap();
            n
        }
    };
    // 70 pages rewritten, 2 deleted: their new text is in the delta, the old one superseded.
    let mut edits: Vec<Value> = ids[..70]
        .iter()
        .map(|(t, id)| json!({ "operation": "update_page", "page": id, "document": { "markdown": format!("New text of {t} with narwhal.\n") } }))
        .collect();
    edits.push(json!({ "operation": "delete_page", "page": ids[70].1 }));
    edits.push(json!({ "operation": "delete_page", "page": ids[71].1 }));
    change(&app, &alice, &space, edits).await;
    assert!(count("search_delta").await > 0);
    assert_eq!(count("search_dead").await, 72);
    let before = search(&app, &alice, &space, "walrus ").await;
    assert_eq!(before["count"], 8, "{before}");
    assert_eq!(search(&app, &alice, &space, "narwhal ").await["count"], 70);

    quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    assert_eq!(count("search_delta").await, 0);
    assert_eq!(count("search_dead").await, 0);
    let after = search(&app, &alice, &space, "walrus ").await;
    assert_eq!(after["count"], 8);
    assert_eq!(titles(&after), titles(&before));
    assert_eq!(search(&app, &alice, &space, "narwhal ").await["count"], 70);
    let df: i64 =
        sqlx::query_scalar("SELECT df FROM search_terms WHERE space_id = $1 AND term = 'narwhal'")
            .bind(&space)
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(df, 70);
    // Completions rank by those frequencies.
    assert_eq!(search(&app, &alice, &space, "narw").await["count"], 70);
}

#[tokio::test]
async fn the_page_titled_as_asked_comes_first() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    // A parent whose body names its children again and again, a page whose code sample says
    // "request" many times, and the pages whose titles are what a reader types.
    let listing = "Addons extend the builder. Addons configuration sets which addons show; \
        addons configuration also orders them. See addons configuration, addons overview \
        and the addons configuration reference.\n\n## Addons configuration\n\nAddons \
        configuration, in short.\n";
    let cloudfront = "Set the origin.\n\n```js\nfunction handler(event) {\n  var request = \
        event.request;\n  request.uri = '/docs' + request.uri; // change the request\n  \
        return request;\n}\n```\n\nEvery request is forwarded; change request headers there.\n";
    change(
        &app,
        &alice,
        &space,
        vec![
            insert("Addons", listing),
            insert("Addons configuration", "Choose the addons a user sees.\n"),
            insert("Configuring a subdirectory with CloudFront", cloudfront),
            insert("Change requests", "Propose edits, then merge them.\n"),
        ],
    )
    .await;
    for (q, first) in [
        ("addons configuration", "Addons configuration"),
        ("change requests", "Change requests"),
        ("change request", "Change requests"),
        ("addons", "Addons"),
    ] {
        let got = titles(&search(&app, &alice, &space, q).await);
        assert_eq!(got.first().map(String::as_str), Some(first), "{q}: {got:?}");
    }
}

#[tokio::test]
async fn a_heading_that_names_the_question_leads_to_its_page() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    // The answer is one short section of a long page, under a heading in the question's
    // words; another page uses the same words more often, scattered through its prose.
    let mut pages_guide = String::from("Content lives in pages.\n\n");
    for topic in ["Covers", "Icons", "Layout", "Visibility", "Metadata"] {
        pages_guide.push_str(&format!(
            "## {topic}\n\nThe {topic} options of a page are set in its menu; they apply to \
             readers of the published site and to the editor alike.\n\n"
        ));
    }
    pages_guide.push_str("## Moving pages between sections\n\nDrag it to another site section.\n");
    let structure = "A site has sections. Each section shows a space; move between sections \
        with the tabs. A page of a section links to a page of another section, and a page \
        can move within its section. Sections group pages; pages move, sections stay.\n";
    change(
        &app,
        &alice,
        &space,
        vec![
            insert("Organizing content", &pages_guide),
            insert("Site structure", structure),
        ],
    )
    .await;
    let q = "move a page into a different section";
    let got = titles(&search(&app, &alice, &space, q).await);
    assert_eq!(
        got.first().map(String::as_str),
        Some("Organizing content"),
        "{q}: {got:?}"
    );
}

#[tokio::test]
async fn code_samples_weigh_less_than_prose() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    // The same length each; one page says "throttle" once in prose, the other twice, but
    // in a code sample.
    let prose = "Requests above the limit throttle the client for a minute.\n\nEach \
        answer carries the limits in its headers.\n";
    let code = "Call the client as below.\n\n```sh\nclient throttle --for 60\n\
        client throttle --off\n```\n";
    change(
        &app,
        &alice,
        &space,
        vec![insert("Limits", prose), insert("Client calls", code)],
    )
    .await;
    let got = titles(&search(&app, &alice, &space, "throttle").await);
    assert_eq!(got, ["Limits", "Client calls"]);
}

#[tokio::test]
async fn a_renamed_parent_moves_its_children_in_results() {
    let app = TestApp::start().await;
    let (alice, _org, space) = setup(&app).await;
    change(
        &app,
        &alice,
        &space,
        vec![
            json!({ "operation": "insert_page", "title": "Guides", "slug": "guides", "ref": "g",
                    "document": { "markdown": "All guides.\n" } }),
            json!({ "operation": "insert_page", "title": "Setup", "slug": "setup", "into": "g",
                    "document": { "markdown": "Feed the kangaroo first.\n" } }),
        ],
    )
    .await;
    let place = |res: &Value| {
        let hit = &res["items"][0];
        (hit["path"].clone(), hit["ancestors"][0]["title"].clone())
    };
    let res = search(&app, &alice, &space, "kangaroo ").await;
    assert_eq!(
        place(&res),
        (json!("guides/setup"), json!("Guides")),
        "{res}"
    );
    // The parent's title and slug change; the child's text does not, yet its path and
    // ancestors in results follow.
    let guides = pages_by_title(&app, &alice, &space)
        .await
        .into_iter()
        .find(|(t, _)| t == "Guides")
        .unwrap()
        .1;
    change(
        &app,
        &alice,
        &space,
        vec![
            json!({ "operation": "update_page", "page": guides, "title": "Handbooks",
                     "slug": "handbooks" }),
        ],
    )
    .await;
    let res = search(&app, &alice, &space, "kangaroo ").await;
    assert_eq!(
        place(&res),
        (json!("handbooks/setup"), json!("Handbooks")),
        "{res}"
    );
}

#[tokio::test]
async fn each_node_keeps_its_own_search_caches() {
    let (one, other) = (TestApp::start().await, TestApp::start().await);
    let (alice, _org, space) = setup(&one).await;
    seed_guide(&one, &alice, &space).await;
    search(&one, &alice, &space, "install").await;
    search(&one, &alice, &space, "install").await;
    let counts = |app: &TestApp| {
        let s = &app.state.search;
        s.answers.run_pending_tasks();
        s.reads.run_pending_tasks();
        (s.answers.entry_count(), s.reads.entry_count())
    };
    let (answers, reads) = counts(&one);
    assert!(answers > 0 && reads > 0, "{answers} answers, {reads} reads");
    // Two servers in one process share nothing.
    assert_eq!(counts(&other), (0, 0));
}
