//! Visitor authentication of published sites through HTTP: the site's settings
//! (`SITE/publishing/auth`), their validation, the key's rotation, and visitor tokens opening
//! `visitor-auth` sites in `resolvePublishedContentByUrl`.

use base64::Engine;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

struct World {
    admin: Persona,
    reader: Persona,
    guest: Persona,
    outsider: Persona,
    org: String,
}

async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let reader = app.persona("reader").await;
    let guest = app.persona("guest").await;
    let outsider = app.persona("outsider").await;
    let org = app.org(&admin, "Acme").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    app.add_member(&admin, &org, &guest, Value::Null).await;
    World {
        admin,
        reader,
        guest,
        outsider,
        org,
    }
}

/// A site publishing `spaces` at its root; returns its API path.
async fn site_with(app: &TestApp, w: &World, spaces: &[&str], visibility: &str) -> String {
    let site = id(&app
        .post(
            &w.admin,
            &format!("/v1/orgs/{}/sites", w.org),
            json!({ "title": "Docs", "spaces": spaces, "visibility": visibility }),
        )
        .await
        .expect(201));
    format!("/v1/orgs/{}/sites/{site}", w.org)
}

/// Seconds since the epoch by the server's clock.
fn now(app: &TestApp) -> i64 {
    app.state.now() / 1000
}

fn sign(alg: Algorithm, key: &str, claims: Value) -> String {
    encode(
        &Header::new(alg),
        &claims,
        &EncodingKey::from_secret(key.as_bytes()),
    )
    .unwrap()
}

/// The site's current private key, read by its admin.
async fn key_of(app: &TestApp, w: &World, base: &str) -> String {
    app.get(&w.admin, &format!("{base}/publishing/auth"))
        .await
        .expect(200)["privateKey"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Checks a `SitePublishingAuth` body: the official fields and nothing else.
fn check_shape(body: &Value) {
    let obj = body.as_object().unwrap();
    for key in obj.keys() {
        assert!(
            [
                "object",
                "privateKey",
                "fallbackURL",
                "integration",
                "backend"
            ]
            .contains(&key.as_str()),
            "unexpected field {key} in {body}"
        );
    }
    assert_eq!(body["object"], "publishing-auth");
    assert!(["custom", "integration"].contains(&body["backend"].as_str().unwrap()));
    let key = body["privateKey"].as_str().unwrap();
    assert!(key.len() >= 32, "{key}");
    assert!(
        key.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "{key}"
    );
}

#[tokio::test]
async fn publishing_auth_settings_are_the_admins() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let base = site_with(&app, &w, &[], "visitor-auth").await;
    let path = format!("{base}/publishing/auth");

    let first = app.get(&w.admin, &path).await.expect(200);
    check_shape(&first);
    assert_eq!(first["backend"], "custom");
    assert!(first.get("fallbackURL").is_none(), "{first}");
    // The key is made once: reads agree.
    let again = app.get(&w.admin, &path).await.expect(200);
    assert_eq!(again["privateKey"], first["privateKey"]);

    // Members read sites, but not this secret; guests and outsiders not at all.
    for who in [&w.reader, &w.guest] {
        app.get(who, &path).await.expect_error(403);
        app.patch(who, &path, json!({ "backend": "custom" }))
            .await
            .expect_error(403);
        app.post(who, &format!("{path}/regenerate"), json!({}))
            .await
            .expect_error(403);
    }
    app.get(&w.outsider, &path).await.expect_error(404);
    app.post(&w.outsider, &format!("{path}/regenerate"), json!({}))
        .await
        .expect_error(404);
    app.get(
        &w.admin,
        &format!("/v1/orgs/{}/sites/nope/publishing/auth", w.org),
    )
    .await
    .expect_error(404);

    // PATCH changes what it names, and `null` unsets the fallback URL.
    let set = app
        .patch(
            &w.admin,
            &path,
            json!({ "backend": "custom", "fallbackURL": "https://login.example.com/docs?from=quire" }),
        )
        .await
        .expect(200);
    check_shape(&set);
    assert_eq!(
        set["fallbackURL"],
        "https://login.example.com/docs?from=quire"
    );
    assert_eq!(set["privateKey"], first["privateKey"]);
    let kept = app
        .patch(&w.admin, &path, json!({ "backend": "custom" }))
        .await
        .expect(200);
    assert_eq!(kept["fallbackURL"], set["fallbackURL"]);
    let unset = app
        .patch(
            &w.admin,
            &path,
            json!({ "backend": "custom", "fallbackURL": null }),
        )
        .await
        .expect(200);
    assert!(unset.get("fallbackURL").is_none(), "{unset}");

    // Regenerating replaces the key.
    let fresh = app
        .post(&w.admin, &format!("{path}/regenerate"), json!({}))
        .await
        .expect(200);
    check_shape(&fresh);
    assert_ne!(fresh["privateKey"], first["privateKey"]);
    assert_eq!(app.get(&w.admin, &path).await.expect(200), fresh);
}

#[tokio::test]
async fn publishing_auth_updates_are_validated() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let base = site_with(&app, &w, &[], "visitor-auth").await;
    let path = format!("{base}/publishing/auth");
    let before = app.get(&w.admin, &path).await.expect(200);
    let refused = [
        (json!({}), "backend"),
        (json!({ "fallbackURL": "https://a.example.com" }), "backend"),
        (json!({ "backend": "oauth" }), "backend"),
        (json!({ "backend": 3 }), "backend"),
        // No integration is installed on the site.
        (json!({ "backend": "integration" }), "backend"),
        (
            json!({ "backend": "custom", "fallbackURL": "/login" }),
            "fallbackURL",
        ),
        (
            json!({ "backend": "custom", "fallbackURL": "ftp://example.com/x" }),
            "fallbackURL",
        ),
        (
            json!({ "backend": "custom", "fallbackURL": "javascript:alert(1)" }),
            "fallbackURL",
        ),
        (
            json!({ "backend": "custom", "fallbackURL": "https://" }),
            "fallbackURL",
        ),
        (
            json!({ "backend": "custom", "fallbackURL": format!("https://example.com/{}", "a".repeat(2100)) }),
            "fallbackURL",
        ),
        (
            json!({ "backend": "custom", "fallbackURL": 7 }),
            "fallbackURL",
        ),
        (
            json!({ "backend": "custom", "privateKey": "mine" }),
            "privateKey",
        ),
        (
            json!({ "backend": "custom", "integration": "x" }),
            "integration",
        ),
    ];
    for (body, field) in refused {
        let msg = app
            .patch(&w.admin, &path, body.clone())
            .await
            .expect_error(400);
        assert!(msg.contains(field), "{body}: {msg}");
    }
    // Nothing changed.
    assert_eq!(app.get(&w.admin, &path).await.expect(200), before);
}

/// A published `visitor-auth` site with two site spaces, the second (`beta`) shown only to
/// visitors whose signed claim `beta` is true. Returns (API path, published root, guide, beta).
async fn protected_site(app: &TestApp, w: &World) -> (String, String, String, String) {
    let guide = app.space(&w.admin, &w.org, "Guide", None).await;
    let beta = app.space(&w.admin, &w.org, "Beta", None).await;
    let base = site_with(app, w, &[&guide, &beta], "visitor-auth").await;
    let site_spaces = app
        .get(&w.admin, &format!("{base}/site-spaces"))
        .await
        .expect(200);
    let beta_ss = id(&site_spaces["items"][1]);
    app.patch(
        &w.admin,
        &format!("{base}/site-spaces/{beta_ss}"),
        json!({ "condition": "visitor.claims.beta === true && visitor.claims.unsigned.lang == 'en'" }),
    )
    .await
    .expect(200);
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let site = base.rsplit('/').next().unwrap();
    let root = format!("{}/sites/{site}/", app.base);
    (base, root, guide, beta)
}

async fn resolve(app: &TestApp, who: &Persona, body: Value) -> crate::harness::Res {
    app.post(who, "/v1/urls/published", body).await
}

#[tokio::test]
async fn visitor_tokens_open_visitor_auth_sites() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (base, root, guide, beta) = protected_site(&app, &w).await;
    let key = key_of(&app, &w, &base).await;
    let url = format!("{root}beta/intro");
    let exp = now(&app) + 600;

    // Without a token the site answers as an unknown one would.
    resolve(&app, &w.reader, json!({ "url": url }))
        .await
        .expect_error(404);
    resolve(&app, &w.reader, json!({ "url": url, "visitor": {} }))
        .await
        .expect_error(404);

    // A valid token opens the site; its claims decide what shows.
    let plain = sign(Algorithm::HS256, &key, json!({ "exp": exp, "sub": "v1" }));
    let found = resolve(
        &app,
        &w.reader,
        json!({ "url": url, "visitor": { "jwtToken": plain, "unsignedClaims": { "lang": "en" } } }),
    )
    .await
    .expect(200);
    assert_eq!(found["space"], json!(guide), "{found}");
    assert_eq!(found["pathname"], "beta/intro");
    assert!(found["apiToken"].is_string());

    let pro = sign(Algorithm::HS256, &key, json!({ "exp": exp, "beta": true }));
    let shown = resolve(
        &app,
        &w.reader,
        json!({ "url": url, "visitor": { "jwtToken": pro, "unsignedClaims": { "lang": "en" } } }),
    )
    .await
    .expect(200);
    assert_eq!(shown["space"], json!(beta), "{shown}");
    assert_eq!(shown["pathname"], "intro");
    // Both parts of the condition count: signed and unsigned claims.
    let other_lang = resolve(
        &app,
        &w.reader,
        json!({ "url": url, "visitor": { "jwtToken": pro, "unsignedClaims": { "lang": "fr" } } }),
    )
    .await
    .expect(200);
    assert_eq!(other_lang["space"], json!(guide));
    // An unsigned claim cannot stand in for a signed one.
    let forged = resolve(
        &app,
        &w.reader,
        json!({ "url": url, "visitor": { "jwtToken": plain,
                                         "unsignedClaims": { "lang": "en", "beta": true } } }),
    )
    .await
    .expect(200);
    assert_eq!(forged["space"], json!(guide));

    // The renderer's token reads the content it names.
    let token = shown["apiToken"].as_str().unwrap();
    let res = app
        .call(
            reqwest::Method::GET,
            &format!("/v1/spaces/{beta}"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
}

#[tokio::test]
async fn bad_visitor_tokens_are_refused() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (base, root, guide, _) = protected_site(&app, &w).await;
    let key = key_of(&app, &w, &base).await;
    let exp = now(&app) + 600;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let good = sign(Algorithm::HS256, &key, json!({ "exp": exp }));
    let stripped = good[..=good.rfind('.').unwrap()].to_string();
    let none = format!(
        "{}.{}.",
        b64.encode(r#"{"alg":"none","typ":"JWT"}"#),
        b64.encode(json!({ "exp": exp, "beta": true }).to_string())
    );
    let bad = [
        (
            "expired",
            sign(Algorithm::HS256, &key, json!({ "exp": now(&app) - 1 })),
        ),
        (
            "no exp",
            sign(Algorithm::HS256, &key, json!({ "beta": true })),
        ),
        (
            "wrong key",
            sign(
                Algorithm::HS256,
                "some-other-key-of-decent-length-000000",
                json!({ "exp": exp }),
            ),
        ),
        ("HS512", sign(Algorithm::HS512, &key, json!({ "exp": exp }))),
        ("alg none", none),
        ("no signature", stripped),
        ("garbage", "not-a-token".to_string()),
    ];
    for (what, token) in bad {
        let res = resolve(
            &app,
            &w.reader,
            json!({ "url": root, "visitor": { "jwtToken": token } }),
        )
        .await;
        assert_eq!(res.status, 404, "{what}: {}", res.body);
    }
    // The good token works, until the server's clock passes its `exp`; so does the
    // renderer's token it earned (well before its usual hour).
    let found = resolve(
        &app,
        &w.reader,
        json!({ "url": root, "visitor": { "jwtToken": good } }),
    )
    .await
    .expect(200);
    let api_token = found["apiToken"].as_str().unwrap().to_string();
    let space_path = format!("/v1/spaces/{guide}");
    app.call(reqwest::Method::GET, &space_path, Some(&api_token), None)
        .await
        .expect(200);
    app.clock.advance_ms(601_000);
    app.call(reqwest::Method::GET, &space_path, Some(&api_token), None)
        .await
        .expect_error(401);
    resolve(
        &app,
        &w.reader,
        json!({ "url": root, "visitor": { "jwtToken": good } }),
    )
    .await
    .expect_error(404);
}

#[tokio::test]
async fn regenerating_the_key_refuses_old_tokens_at_once() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (base, root, _, _) = protected_site(&app, &w).await;
    let old_key = key_of(&app, &w, &base).await;
    let exp = now(&app) + 600;
    let old = sign(Algorithm::HS256, &old_key, json!({ "exp": exp }));
    let body = |t: &str| json!({ "url": root, "visitor": { "jwtToken": t } });
    resolve(&app, &w.reader, body(&old)).await.expect(200);
    let fresh = app
        .post(
            &w.admin,
            &format!("{base}/publishing/auth/regenerate"),
            json!({}),
        )
        .await
        .expect(200);
    let new_key = fresh["privateKey"].as_str().unwrap();
    resolve(&app, &w.reader, body(&old)).await.expect_error(404);
    let new = sign(Algorithm::HS256, new_key, json!({ "exp": exp }));
    resolve(&app, &w.reader, body(&new)).await.expect(200);
}

#[tokio::test]
async fn unauthenticated_visitors_are_sent_to_the_fallback_url() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (base, root, _, _) = protected_site(&app, &w).await;
    let ask = json!({ "url": root, "redirectOnError": true, "visitor": { "jwtToken": "x.y.z" } });
    // No fallback URL: nowhere to send them.
    resolve(&app, &w.reader, ask.clone())
        .await
        .expect_error(404);
    app.patch(
        &w.admin,
        &format!("{base}/publishing/auth"),
        json!({ "backend": "custom", "fallbackURL": "https://login.example.com/" }),
    )
    .await
    .expect(200);
    let redirect = resolve(&app, &w.reader, ask).await.expect(200);
    assert_eq!(
        redirect,
        json!({ "target": "external", "redirect": "https://login.example.com/" })
    );
    // Without `redirectOnError`, still 404.
    resolve(&app, &w.reader, json!({ "url": root }))
        .await
        .expect_error(404);
    // Public sites never redirect, and a bad token there is only ignored.
    let guide = app.space(&w.admin, &w.org, "Open", None).await;
    let open = site_with(&app, &w, &[&guide], "public").await;
    app.post(&w.admin, &format!("{open}/publish"), json!({}))
        .await
        .expect(200);
    let open_root = format!("{}/sites/{}/", app.base, open.rsplit('/').next().unwrap());
    let found = resolve(
        &app,
        &w.reader,
        json!({ "url": open_root, "redirectOnError": true, "visitor": { "jwtToken": "x.y.z" } }),
    )
    .await
    .expect(200);
    assert_eq!(found["space"], json!(guide));
}

#[tokio::test]
async fn signed_claims_count_on_public_sites_too() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let guide = app.space(&w.admin, &w.org, "Guide", None).await;
    let beta = app.space(&w.admin, &w.org, "Beta", None).await;
    let base = site_with(&app, &w, &[&guide, &beta], "public").await;
    let site_spaces = app
        .get(&w.admin, &format!("{base}/site-spaces"))
        .await
        .expect(200);
    app.patch(
        &w.admin,
        &format!("{base}/site-spaces/{}", id(&site_spaces["items"][1])),
        json!({ "condition": "visitor.claims.beta === true" }),
    )
    .await
    .expect(200);
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let key = key_of(&app, &w, &base).await;
    let url = format!(
        "{}/sites/{}/beta/",
        app.base,
        base.rsplit('/').next().unwrap()
    );
    let token = sign(
        Algorithm::HS256,
        &key,
        json!({ "exp": now(&app) + 60, "beta": true }),
    );
    let shown = resolve(
        &app,
        &w.reader,
        json!({ "url": url, "visitor": { "jwtToken": token } }),
    )
    .await
    .expect(200);
    assert_eq!(shown["space"], json!(beta));
    let hidden = resolve(&app, &w.reader, json!({ "url": url }))
        .await
        .expect(200);
    assert_eq!(hidden["space"], json!(guide));
}
