//! What an operator runs Quire with: liveness and readiness, metrics, rate limits.

use reqwest::Method;

use crate::harness::TestApp;

async fn get(app: &TestApp, path: &str, token: Option<&str>) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(format!("{}{path}", app.base));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    req.send().await.expect("request")
}

fn header(res: &reqwest::Response, name: &str) -> Option<String> {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
}

#[tokio::test]
async fn health_and_readiness_answer() {
    let app = TestApp::start().await;
    let live = get(&app, "/healthz", None).await;
    assert_eq!(live.status(), 200);
    let ready = get(&app, "/readyz", None).await;
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body["status"], "ok");
}

#[tokio::test]
async fn readiness_fails_without_every_migration_or_without_the_database() {
    let app = TestApp::start().await;
    let versions = quire_server::db::known_versions();
    let latest = *versions.last().unwrap();
    let pool = app.state.db.pool();
    sqlx::query("DELETE FROM quire_migrations WHERE version = $1")
        .bind(latest)
        .execute(pool)
        .await
        .unwrap();
    let ready = get(&app, "/readyz", None).await;
    assert_eq!(ready.status(), 503);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body["error"]["code"], 503);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("Migrations not applied") && message.contains(&latest.to_string()),
        "{message}"
    );
    // Liveness is not readiness: the node still answers that it is alive.
    assert_eq!(get(&app, "/healthz", None).await.status(), 200);

    sqlx::query("INSERT INTO quire_migrations (version, name, applied_at) VALUES ($1, 'back', 0)")
        .bind(latest)
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(get(&app, "/readyz", None).await.status(), 200);

    // A database that no longer answers.
    app.state.db.close().await;
    let ready = get(&app, "/readyz", None).await;
    assert_eq!(ready.status(), 503);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("The database does not answer"),
        "{body}"
    );
}

#[tokio::test]
async fn metrics_need_their_token_and_count_operations_by_status() {
    let plain = TestApp::start().await;
    let res = get(&plain, "/metrics", None).await;
    assert_eq!(res.status(), 404, "no metrics without a configured token");

    let app = TestApp::start_with(|c| c.metrics_token = Some("scrape-secret".into())).await;
    assert_eq!(get(&app, "/metrics", None).await.status(), 401);
    assert_eq!(get(&app, "/metrics", Some("wrong")).await.status(), 401);

    let admin = app.persona("admin").await;
    let org = app
        .call(
            Method::POST,
            "/v1/orgs",
            Some(&admin.token),
            Some(serde_json::json!({"title": "Metrics"})),
        )
        .await
        .expect(201);
    let org_id = org["id"].as_str().unwrap();
    let space = app
        .call(
            Method::POST,
            &format!("/v1/orgs/{org_id}/spaces"),
            Some(&admin.token),
            Some(serde_json::json!({"title": "Counted"})),
        )
        .await
        .expect(201);
    let space_id = space["id"].as_str().unwrap();
    for _ in 0..3 {
        app.call(
            Method::GET,
            &format!("/v1/spaces/{space_id}"),
            Some(&admin.token),
            None,
        )
        .await
        .expect(200);
    }
    app.call(
        Method::GET,
        "/v1/spaces/nosuchspace",
        Some(&admin.token),
        None,
    )
    .await
    .expect(404);

    let res = get(&app, "/metrics", Some("scrape-secret")).await;
    assert_eq!(res.status(), 200);
    assert!(header(&res, "content-type")
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let text = res.text().await.unwrap();
    assert!(
        text.contains(r#"quire_http_requests_total{operation="getSpaceById",status="200"} 3"#),
        "{text}"
    );
    assert!(
        text.contains(r#"quire_http_requests_total{operation="getSpaceById",status="404"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"quire_http_request_duration_seconds_count{operation="getSpaceById"} 4"#)
    );
    assert!(text.contains(r#"quire_http_requests_total{operation="other",status="401"} 2"#));
    // Every earlier request has ended; the scrape itself is being served.
    assert!(
        text.contains("\nquire_http_requests_in_flight 1\n"),
        "{text}"
    );
    assert!(
        text.contains("quire_db_connections{state=\"idle\"}"),
        "{text}"
    );
    assert!(
        text.contains("quire_access_cache_hits_total{name=\"tokens\"}"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("# EOF"));
}

#[tokio::test]
async fn past_a_token_budget_requests_get_429_with_when_to_retry() {
    let app = TestApp::start_with(|c| {
        c.rate_limit_loopback = true;
        c.rate_limit_token = 3;
        c.rate_limit_address = 0;
    })
    .await;
    let a = app.persona("alice").await; // one request spent by `persona`
    let b = app.persona("bob").await;
    let first = get(&app, "/v1/user", Some(&a.token)).await;
    assert_eq!(first.status(), 200);
    assert_eq!(header(&first, "ratelimit-limit").as_deref(), Some("3"));
    assert_eq!(header(&first, "ratelimit-remaining").as_deref(), Some("1"));
    assert_eq!(get(&app, "/v1/user", Some(&a.token)).await.status(), 200);
    let refused = get(&app, "/v1/user", Some(&a.token)).await;
    assert_eq!(refused.status(), 429);
    let retry: u64 = header(&refused, "retry-after").unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "retry after {retry} s");
    assert_eq!(
        header(&refused, "ratelimit-remaining").as_deref(),
        Some("0")
    );
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], 429);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("3 a minute"));
    // Another token has its own budget.
    assert_eq!(get(&app, "/v1/user", Some(&b.token)).await.status(), 200);
}

#[tokio::test]
async fn a_token_spends_one_budget_however_its_header_is_spelt() {
    let app = TestApp::start_with(|c| {
        c.rate_limit_loopback = true;
        c.rate_limit_token = 3;
        c.rate_limit_address = 0;
    })
    .await;
    let a = app.persona("alice").await; // one request spent by `persona`
    let spellings = [
        format!("Bearer {}", a.token),
        format!("bearer {}", a.token),
        format!("BEARER   {} ", a.token),
        format!("  Bearer  {}", a.token),
    ];
    let mut statuses = Vec::new();
    for spelling in &spellings {
        let res = reqwest::Client::new()
            .get(format!("{}/v1/user", app.base))
            .header("authorization", spelling)
            .send()
            .await
            .unwrap();
        statuses.push(res.status().as_u16());
    }
    // Each spelling authenticates, so each must count against the token's one budget.
    assert_eq!(statuses, vec![200, 200, 429, 429]);
}

#[tokio::test]
async fn an_address_budget_counts_requests_with_or_without_a_token() {
    let app = TestApp::start_with(|c| {
        c.rate_limit_loopback = true;
        c.rate_limit_token = 0;
        c.rate_limit_address = 2;
    })
    .await;
    assert_eq!(get(&app, "/healthz", None).await.status(), 200);
    assert_eq!(get(&app, "/v1/user", Some("anything")).await.status(), 401);
    assert_eq!(get(&app, "/healthz", None).await.status(), 429);
}

#[tokio::test]
async fn loopback_clients_are_not_limited_by_default() {
    let app = TestApp::start_with(|c| {
        c.rate_limit_token = 1;
        c.rate_limit_address = 1;
    })
    .await;
    for _ in 0..5 {
        let res = get(&app, "/healthz", None).await;
        assert_eq!(res.status(), 200);
        assert!(header(&res, "ratelimit-limit").is_none());
    }
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_address_has_its_own_budget() {
    let app = TestApp::start_with(|c| {
        c.rate_limit_loopback = true;
        c.rate_limit_token = 0;
        c.rate_limit_address = 1;
        c.trust_forwarded_for = true;
    })
    .await;
    let from = |addr: &'static str| {
        reqwest::Client::new()
            .get(format!("{}/healthz", app.base))
            // The proxy appends the client it saw last: that hop is the one counted.
            .header("x-forwarded-for", format!("198.51.100.9, {addr}"))
            .send()
    };
    assert_eq!(from("192.0.2.1").await.unwrap().status(), 200);
    assert_eq!(from("192.0.2.1").await.unwrap().status(), 429);
    assert_eq!(from("192.0.2.2").await.unwrap().status(), 200);
}

#[tokio::test]
async fn the_tightest_of_the_token_and_address_budgets_is_reported() {
    let app = TestApp::start_with(|c| {
        c.rate_limit_loopback = true;
        c.rate_limit_token = 10;
        c.rate_limit_address = 50;
    })
    .await;
    let res = get(&app, "/healthz", Some("some-token")).await;
    assert_eq!(header(&res, "ratelimit-limit").as_deref(), Some("10"));
    assert_eq!(header(&res, "ratelimit-remaining").as_deref(), Some("9"));
    let res = get(&app, "/healthz", None).await;
    assert_eq!(header(&res, "ratelimit-limit").as_deref(), Some("50"));
}
