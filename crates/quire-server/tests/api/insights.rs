//! Site insights through HTTP: events tracked (through the API and the site's own
//! `~insights` path, on Quire's address and a site's hostname), counted per day, read back
//! by `aggregateSiteEvents`; every refusal; the bounds of a day; the retention.

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

struct World {
    admin: Persona,
    reader: Persona,
    org: String,
    space: String,
    site: String,
    site_space: String,
    intro: String,
    install: String,
}

/// A published site (with `settings`) of a space with the pages Intro and Install.
async fn world(app: &TestApp, settings: Value) -> World {
    let admin = app.persona("admin").await;
    let reader = app.persona("reader").await;
    let org = app.org(&admin, "Acme").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    let pages = [("Intro", "Welcome."), ("Install", "Install it.")];
    let space = app.space_with_pages(&admin, &org, "Guide", &pages).await;
    let page = |path: &'static str| {
        let (app, admin, space) = (&app, &admin, &space);
        async move {
            id(&app
                .get(admin, &format!("/v1/spaces/{space}/content/path/{path}"))
                .await
                .expect(200))
        }
    };
    let (intro, install) = (page("intro").await, page("install").await);
    let sites = format!("/v1/orgs/{org}/sites");
    let site = id(&app
        .post(
            &admin,
            &sites,
            json!({ "title": "Docs", "spaces": [space] }),
        )
        .await
        .expect(201));
    app.patch(&admin, &format!("{sites}/{site}"), settings.clone())
        .await
        .expect(200);
    if let Some(host) = settings["hostname"].as_str() {
        crate::dns::prove(app, &admin, &site, host).await;
    }
    app.post(&admin, &format!("{sites}/{site}/publish"), json!({}))
        .await
        .expect(200);
    let site_space = id(&app
        .get(&admin, &format!("{sites}/{site}/site-spaces"))
        .await
        .expect(200)["items"][0]);
    World {
        admin,
        reader,
        org,
        space,
        site,
        site_space,
        intro,
        install,
    }
}

impl World {
    fn base(&self) -> String {
        format!("/v1/orgs/{}/sites/{}/insights", self.org, self.site)
    }

    /// An event of `type` on `page` (none: the site space's root), with `extra` fields.
    fn event(&self, ty: &str, page: Option<&str>, extra: Value) -> Value {
        let mut e = json!({
            "type": ty,
            "session": {
                "visitorId": "", "sessionId": "", "cookies": {}, "userAgent": "",
                "language": null, "referrer": null
            },
            "location": {
                "url": "http://docs.example.com/intro",
                "siteSection": null, "siteSpace": self.site_space, "siteShareKey": null,
                "space": self.space, "revision": null, "page": page
            }
        });
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        e
    }
}

/// Events sent without a token; the status.
async fn track(app: &TestApp, w: &World, events: Vec<Value>) -> u16 {
    app.call(
        Method::POST,
        &format!("{}/events", w.base()),
        None,
        Some(json!({ "events": events })),
    )
    .await
    .status
}

async fn aggregate(app: &TestApp, w: &World, who: &Persona, query: Value) -> Value {
    app.post(who, &format!("{}/events/aggregate", w.base()), query)
        .await
        .expect(200)
}

/// The answer's columns as `{name: values}`.
fn columns(v: &Value) -> serde_json::Map<String, Value> {
    v["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["column"].as_str().unwrap().to_string(),
                c["values"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn tracked_events_add_up_when_aggregated() {
    let app = TestApp::start().await;
    let w = world(&app, json!({})).await;
    // Before any event: no count, and a total of none.
    let none = aggregate(&app, &w, &w.reader, json!({ "range": "last7Days" })).await;
    assert_eq!(columns(&none)["eventsCount"], json!([0]), "{none}");
    let none = aggregate(
        &app,
        &w,
        &w.reader,
        json!({ "range": "last7Days", "groupBy": [{ "column": "page" }] }),
    )
    .await;
    assert_eq!(columns(&none)["page"], json!([]), "{none}");
    let mut events = Vec::new();
    for _ in 0..3 {
        events.push(w.event("page_view", Some(&w.intro), json!({})));
    }
    events.push(w.event("page_view", Some(&w.install), json!({})));
    events.push(w.event("page_view", Some(&w.install), json!({})));
    events.push(w.event(
        "search_type_query",
        None,
        json!({ "query": "Install  Guide" }),
    ));
    events.push(w.event(
        "search_type_query",
        None,
        json!({ "query": " install guide" }),
    ));
    events.push(w.event("search_type_query", None, json!({ "query": "setup" })));
    events.push(w.event(
        "link_click",
        Some(&w.intro),
        json!({ "link": { "target": { "kind": "url", "url": "https://example.org/x" }, "position": "content" } }),
    ));
    events.push(w.event(
        "page_post_feedback",
        Some(&w.intro),
        json!({ "feedback": { "rating": "good" } }),
    ));
    events.push(w.event(
        "page_post_feedback_comment",
        Some(&w.install),
        json!({ "feedback": { "rating": "bad", "comment": "Not clear" } }),
    ));
    // Not counted: a page the space does not have, a site space of no site of this one.
    events.push(w.event("page_view", Some("nosuchpage"), json!({})));
    let mut stray = w.event("page_view", None, json!({}));
    stray["location"]["siteSpace"] = json!("sitesp_elsewhere");
    events.push(stray);
    assert_eq!(track(&app, &w, events).await, 204);

    // By type: the numbers add up to what was counted.
    let by_type = aggregate(
        &app,
        &w,
        &w.reader,
        json!({ "range": "last7Days", "groupBy": [{ "column": "eventType" }] }),
    )
    .await;
    let cols = columns(&by_type);
    let pairs: Vec<(Value, Value)> = cols["eventType"]
        .as_array()
        .unwrap()
        .iter()
        .cloned()
        .zip(cols["eventsCount"].as_array().unwrap().iter().cloned())
        .collect();
    assert_eq!(
        pairs,
        vec![
            (json!("page_view"), json!(5)),
            (json!("search_type_query"), json!(3)),
            (json!("link_click"), json!(1)),
            (json!("page_post_feedback"), json!(1)),
            (json!("page_post_feedback_comment"), json!(1)),
        ],
        "{by_type}"
    );

    // Top pages of page views, and a day's total.
    let pages = aggregate(
        &app,
        &w,
        &w.admin,
        json!({
            "range": "last30Days",
            "select": [{ "column": "page" }, { "column": "eventsCount" }],
            "where": [{ "column": "eventType", "values": ["page_view"] }],
            "order": { "by": { "column": "eventsCount" }, "direction": "desc" },
            "limit": 1
        }),
    )
    .await;
    assert_eq!(
        pages,
        json!({ "columns": [
            { "column": "page", "values": [{ "page": w.intro, "space": w.space }] },
            { "column": "eventsCount", "values": [3] }
        ] })
    );
    let days = aggregate(
        &app,
        &w,
        &w.admin,
        json!({ "range": "last24Hours", "groupBy": [{ "column": "datetime", "interval": "day" }] }),
    )
    .await;
    let cols = columns(&days);
    assert_eq!(cols["eventsCount"], json!([11]), "{days}");
    let today = app.state.now() / 86_400_000 * 86_400_000;
    assert_eq!(
        cols["datetime"],
        json!([quire_server::clock::iso(today)]),
        "{days}"
    );

    // Searches fold their spacing and case; feedback counts by rating; links by domain.
    let searches = aggregate(
        &app,
        &w,
        &w.admin,
        json!({ "range": "last7Days", "groupBy": [{ "column": "eventSearchQuery" }] }),
    )
    .await;
    let cols = columns(&searches);
    assert_eq!(cols["eventSearchQuery"], json!(["install guide", "setup"]));
    assert_eq!(cols["eventsCount"], json!([2, 1]));
    let ratings = aggregate(
        &app,
        &w,
        &w.admin,
        json!({ "range": "last7Days", "select": [{ "column": "pageFeedbackRating" }] }),
    )
    .await;
    assert_eq!(
        columns(&ratings)["pageFeedbackRating"],
        json!([{ "bad": 1, "ok": 0, "good": 1 }])
    );
    let links = aggregate(
        &app,
        &w,
        &w.admin,
        json!({ "range": "last7Days", "groupBy": [
            { "column": "eventLinkTargetDomain" }, { "column": "eventLinkPosition" }
        ] }),
    )
    .await;
    let cols = columns(&links);
    assert_eq!(cols["eventLinkTargetDomain"], json!(["example.org"]));
    assert_eq!(cols["eventLinkPosition"], json!(["content"]));
    // Filters: notIn, and a comparison on the count.
    let filtered = aggregate(
        &app,
        &w,
        &w.admin,
        json!({
            "range": "last7Days",
            "groupBy": [{ "column": "eventType" }],
            "where": [
                { "column": "eventType", "operator": "notIn", "values": ["page_view"] },
                { "column": "eventsCount", "operator": "greaterThan", "values": [1] }
            ]
        }),
    )
    .await;
    assert_eq!(
        columns(&filtered)["eventType"],
        json!(["search_type_query"])
    );
    // A page named in a filter, its fields in any order.
    let intro = aggregate(
        &app,
        &w,
        &w.admin,
        json!({
            "range": "last7Days",
            "where": [
                { "column": "page", "values": [{ "space": w.space, "page": w.intro }] },
                { "column": "eventType", "values": ["page_view"] }
            ]
        }),
    )
    .await;
    assert_eq!(columns(&intro)["eventsCount"], json!([3]), "{intro}");
    // Weeks, ordered by their start whatever interval `order.by` names.
    let weeks = aggregate(
        &app,
        &w,
        &w.admin,
        json!({
            "range": "last7Days",
            "select": [{ "column": "datetime", "interval": "week" }, { "column": "eventsCount" }],
            "order": { "by": { "column": "datetime" }, "direction": "desc" }
        }),
    )
    .await;
    assert_eq!(columns(&weeks)["eventsCount"], json!([11]), "{weeks}");
    // A range before anything was counted is empty.
    let empty = aggregate(
        &app,
        &w,
        &w.admin,
        json!({ "range": { "from": "2020-01-01T00:00:00Z", "to": "2020-01-02T00:00:00Z" } }),
    )
    .await;
    assert_eq!(
        empty,
        json!({ "columns": [{ "column": "eventsCount", "values": [] }] })
    );

    // No visitor segments: Quire keeps nothing to segment visitors by.
    let segments = app
        .get(&w.reader, &format!("{}/visitor-segments", w.base()))
        .await
        .expect(200);
    assert_eq!(segments, json!({ "items": [], "count": 0 }));
}

#[tokio::test]
async fn every_refusal_names_its_field() {
    let app = TestApp::start().await;
    let w = world(&app, json!({})).await;
    let events = format!("{}/events", w.base());
    let view = w.event("page_view", Some(&w.intro), json!({}));
    let with = |path: &str, value: Value| {
        let mut e = view.clone();
        let mut at = &mut e;
        let parts: Vec<&str> = path.split('.').collect();
        for p in &parts[..parts.len() - 1] {
            at = &mut at[*p];
        }
        match value {
            Value::Null if path != "location.page" => {
                at.as_object_mut().unwrap().remove(parts[parts.len() - 1]);
            }
            v => at[parts[parts.len() - 1]] = v,
        }
        e
    };
    let stale = quire_server::clock::iso(app.state.now() - 10 * 60_000);
    for (body, field) in [
        (json!({}), "`events`"),
        (json!({ "events": {} }), "`events`"),
        (json!({ "events": vec![view.clone(); 101] }), "`events`"),
        (
            json!({ "events": [with("type", json!("page_scroll"))] }),
            "`events[0].type`",
        ),
        (
            json!({ "events": [view.clone(), with("type", Value::Null)] }),
            "`events[1].type`",
        ),
        (
            json!({ "events": [with("session", Value::Null)] }),
            "`events[0].session`",
        ),
        (
            json!({ "events": [with("session.sessionId", json!(3))] }),
            "`events[0].session.sessionId`",
        ),
        (
            json!({ "events": [with("session.cookies", json!({ "a": 1 }))] }),
            "`events[0].session.cookies`",
        ),
        (
            json!({ "events": [with("location.url", json!("not a url"))] }),
            "`events[0].location.url`",
        ),
        (
            json!({ "events": [with("location.siteSpace", Value::Null)] }),
            "`events[0].location.siteSpace`",
        ),
        (
            json!({ "events": [with("timestamp", json!(stale))] }),
            "`events[0].timestamp`",
        ),
        (
            json!({ "events": [w.event("search_type_query", None, json!({}))] }),
            "`events[0].query`",
        ),
        (
            json!({ "events": [w.event("page_post_feedback", None, json!({ "feedback": { "rating": "great" } }))] }),
            "`events[0].feedback.rating`",
        ),
        (
            json!({ "events": [w.event("link_click", None, json!({ "link": { "target": { "kind": "url" }, "position": "content" } }))] }),
            "`events[0].link.target.url`",
        ),
    ] {
        let res = app
            .call(Method::POST, &events, None, Some(body.clone()))
            .await;
        let msg = res.expect_error(400);
        assert!(msg.contains(field), "{field}: {msg}");
    }
    // Nothing of a refused body was counted.
    assert_eq!(
        quire_server::store::insights::count_rows(&app.state.db, &w.site)
            .await
            .unwrap(),
        0
    );
    // A site that is not published, or not in that organization, is not found.
    let ok = json!({ "events": [view.clone()] });
    let other = app.org(&w.admin, "Other").await;
    let res = app
        .call(
            Method::POST,
            &format!("/v1/orgs/{other}/sites/{}/insights/events", w.site),
            None,
            Some(ok.clone()),
        )
        .await;
    res.expect_error(404);
    app.post(
        &w.admin,
        &format!("/v1/orgs/{}/sites/{}/unpublish", w.org, w.site),
        json!({}),
    )
    .await
    .expect(200);
    app.call(Method::POST, &events, None, Some(ok))
        .await
        .expect_error(404);
    // The body is bounded.
    let huge = json!({ "events": [with("session.userAgent", json!("x".repeat(300 * 1024)))] });
    app.call(Method::POST, &events, None, Some(huge))
        .await
        .expect_error(413);

    // The aggregation's refusals.
    let aggregate = format!("{}/events/aggregate", w.base());
    for (body, field) in [
        (json!({}), "`range`"),
        (json!({ "range": "lastDecade" }), "`range`"),
        (
            json!({ "range": { "from": "2026-02-01T00:00:00Z", "to": "2026-01-01T00:00:00Z" } }),
            "`range.from`",
        ),
        (
            json!({ "range": { "from": "yesterday", "to": "2026-01-01T00:00:00Z" } }),
            "`range.from`",
        ),
        (
            json!({ "range": "last7Days", "groupBy": [{ "column": "datetime", "interval": "hour" }] }),
            "`groupBy[0].interval`",
        ),
        (
            json!({ "range": "last7Days", "groupBy": [{ "column": "eventsCount" }] }),
            "`groupBy[0].column`",
        ),
        (
            json!({ "range": "last7Days", "select": [{ "column": "sessionsCount" }] }),
            "`select[0].column`",
        ),
        (
            json!({ "range": "last7Days", "select": [{ "column": "eventType" }, { "column": "visitorBrowser" }] }),
            "`select[1].column`",
        ),
        (
            json!({ "range": "last7Days", "select": [{ "column": "nonsense" }] }),
            "`select[0].column`",
        ),
        (json!({ "range": "last7Days", "limit": 0 }), "`limit`"),
        (json!({ "range": "last7Days", "limit": 1001 }), "`limit`"),
        (
            json!({ "range": "last7Days", "order": { "by": { "column": "page" }, "direction": "asc" } }),
            "`order.by`",
        ),
        (
            json!({ "range": "last7Days", "order": { "by": { "column": "eventsCount" }, "direction": "up" } }),
            "`order.direction`",
        ),
        (
            json!({ "range": "last7Days", "where": [{ "column": "eventType", "operator": "greaterThan", "values": ["page_view"] }] }),
            "`where[0].operator`",
        ),
        (
            json!({ "range": "last7Days", "where": [{ "column": "eventType", "values": ["page_scroll"] }] }),
            "`where[0].values[0]`",
        ),
        (
            json!({ "range": "last7Days", "where": [{ "column": "eventType" }] }),
            "`where[0].values`",
        ),
    ] {
        let msg = app
            .post(&w.admin, &aggregate, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
}

#[tokio::test]
async fn the_sites_own_path_counts_its_events_on_its_hostname_too() {
    let app = TestApp::start().await;
    let w = world(&app, json!({ "hostname": "docs.example.com" })).await;
    let client = reqwest::Client::new();
    let body = json!({ "events": [w.event("page_view", Some(&w.intro), json!({}))] });
    // On the site's own address, and under Quire's.
    for (path, host) in [
        ("/~insights".to_string(), Some("docs.example.com")),
        (format!("/sites/{}/~insights", w.site), None),
    ] {
        let mut req = client.post(format!("{}{path}", app.base)).json(&body);
        if let Some(host) = host {
            req = req.header("host", host);
        }
        let res = req.send().await.unwrap();
        assert_eq!(
            res.status().as_u16(),
            204,
            "{path}: {}",
            res.text().await.unwrap()
        );
    }
    // A refusal there is the API's.
    let res = client
        .post(format!("{}/~insights", app.base))
        .header("host", "docs.example.com")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    let got = aggregate(&app, &w, &w.admin, json!({ "range": "last7Days" })).await;
    assert_eq!(columns(&got)["eventsCount"], json!([2]));
    // The page tells its script where to send them, and under which ids.
    let page = client
        .get(format!("{}/intro", app.base))
        .header("host", "docs.example.com")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-insights=\"/~insights\""), "{page}");
    assert!(
        page.contains(&format!("data-site-space=\"{}\"", w.site_space)),
        "{page}"
    );
    assert!(
        page.contains(&format!("data-page=\"{}\"", w.intro)),
        "{page}"
    );
    // Anything else posted under the site is still not allowed.
    let res = client
        .post(format!("{}/sites/{}/intro", app.base, w.site))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 405);
}

#[tokio::test]
async fn a_day_keeps_its_first_free_texts_and_counts_the_rest_by_type() {
    let app = TestApp::start().await;
    let w = world(&app, json!({})).await;
    let limit = quire_server::domain::insights::TEXTS_PER_DAY as usize;
    let queries: Vec<Value> = (0..limit + 5)
        .map(|i| {
            w.event(
                "search_type_query",
                None,
                json!({ "query": format!("query {i}") }),
            )
        })
        .collect();
    for chunk in queries.chunks(100) {
        assert_eq!(track(&app, &w, chunk.to_vec()).await, 204);
    }
    let by_query = aggregate(
        &app,
        &w,
        &w.admin,
        json!({ "range": "last7Days", "groupBy": [{ "column": "eventSearchQuery" }] }),
    )
    .await;
    assert_eq!(
        columns(&by_query)["eventSearchQuery"]
            .as_array()
            .unwrap()
            .len(),
        limit
    );
    // Every event is counted all the same.
    let total = aggregate(&app, &w, &w.admin, json!({ "range": "last7Days" })).await;
    assert_eq!(columns(&total)["eventsCount"], json!([limit + 5]));
    let rows = quire_server::store::insights::count_rows(&app.state.db, &w.site)
        .await
        .unwrap();
    assert_eq!(rows as usize, limit + 1);
}

#[tokio::test]
async fn days_past_the_retention_are_pruned() {
    let app = TestApp::start().await;
    let w = world(&app, json!({})).await;
    let view = || vec![w.event("page_view", Some(&w.intro), json!({}))];
    assert_eq!(track(&app, &w, view()).await, 204);
    quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    let rows = || quire_server::store::insights::count_rows(&app.state.db, &w.site);
    assert_eq!(rows().await.unwrap(), 1);
    // A later day's first event has the days past the retention deleted.
    let retention = quire_server::domain::insights::RETENTION_DAYS;
    app.clock.advance_ms((retention + 1) * 86_400_000);
    assert_eq!(track(&app, &w, view()).await, 204);
    // The node's worker is woken when the job is enqueued, and may be running it: wait.
    let mut left = 0;
    for _ in 0..100 {
        quire_server::domain::jobs::run_due(&app.state)
            .await
            .unwrap();
        left = rows().await.unwrap();
        if left == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(left, 1);
    let all = aggregate(&app, &w, &w.admin, json!({ "range": "lastYear" })).await;
    assert_eq!(columns(&all)["eventsCount"], json!([1]));
    // Deleting the site deletes its counts.
    app.delete(&w.admin, &format!("/v1/orgs/{}/sites/{}", w.org, w.site))
        .await
        .expect(204);
    assert_eq!(rows().await.unwrap(), 0);
}

#[tokio::test]
async fn the_apps_site_screen_shows_views_per_day_top_pages_and_searches() {
    let app = TestApp::start().await;
    let w = world(&app, json!({})).await;
    let mut events = vec![w.event("page_view", Some(&w.install), json!({})); 3];
    events.push(w.event("page_view", Some(&w.intro), json!({})));
    events.push(w.event(
        "search_type_query",
        None,
        json!({ "query": "<b>walrus</b>" }),
    ));
    assert_eq!(track(&app, &w, events).await, 204);
    // The reader signs in to the app with a password.
    quire_server::admin::set_password(
        &app.config,
        &w.reader.email,
        Some("Reader"),
        "a fine passphrase",
        false,
    )
    .await
    .unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = client
        .post(format!("{}/signin", app.base))
        .header("origin", app.base.clone())
        .form(&[
            ("email", w.reader.email.as_str()),
            ("password", "a fine passphrase"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    let cookie = res.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let html = client
        .get(format!("{}/o/{}/sites/{}", app.base, w.org, w.site))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("<h2>Insights</h2>"), "{html}");
    assert!(html.contains("4 page views in the last 30 days."), "{html}");
    let today = &quire_server::clock::iso(app.state.now())[..10];
    // Page views and searches per day as charts drawn on the server, each named for screen
    // readers, today's bar holding its count, and the numbers in a table.
    assert_eq!(
        html.matches("<svg class=\"bars\" role=\"img\"").count(),
        2,
        "{html}"
    );
    assert!(
        html.contains(&format!("<title>{today}: 4 page views</title>")),
        "{html}"
    );
    assert!(
        html.contains(&format!("<tr><td>{today}</td><td>4</td></tr>")),
        "{html}"
    );
    assert!(html.contains("1 search in the last 30 days."), "{html}");
    // Top pages by title, most viewed first, each with a decorative bar; searches escaped.
    let install =
        html.find("<span class=\"name\">Install</span> <span class=\"count\">3 views</span>");
    let intro = html.find("<span class=\"name\">Intro</span> <span class=\"count\">1 view</span>");
    assert!(install.is_some() && install < intro, "{html}");
    assert!(
        html.contains("<svg class=\"bar\" aria-hidden=\"true\""),
        "{html}"
    );
    assert!(!html.contains("<meter"), "{html}");
    assert!(html.contains("&lt;b&gt;walrus&lt;/b&gt;"), "{html}");
    assert!(!html.contains("<b>walrus"), "{html}");
}

#[tokio::test]
async fn concurrent_requests_of_one_day_all_land() {
    let app = TestApp::start().await;
    let w = world(&app, json!({})).await;
    let view = w.event("page_view", Some(&w.intro), json!({}));
    assert_eq!(track(&app, &w, vec![view.clone()]).await, 204);
    // Each request counts an existing key and a new one, before or after it in key order,
    // so that writers once locked the day's row and the counts in opposite orders.
    let mut sending = Vec::new();
    for i in 0..24 {
        let fresh = match i % 2 {
            0 => w.event(
                "link_click",
                None,
                json!({ "link": { "target": { "kind": "url", "url": format!("https://example.org/{i}") }, "position": "footer" } }),
            ),
            _ => w.event("search_type_query", None, json!({ "query": format!("query {i}") })),
        };
        let events = vec![view.clone(), fresh];
        let (app, w) = (&app, &w);
        sending.push(async move { track(app, w, events).await });
    }
    let statuses = futures_util::future::join_all(sending).await;
    assert!(statuses.iter().all(|s| *s == 204), "{statuses:?}");
    let total = aggregate(&app, &w, &w.admin, json!({ "range": "last7Days" })).await;
    assert_eq!(columns(&total)["eventsCount"], json!([49]));
}
