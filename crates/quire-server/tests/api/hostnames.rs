//! Sites on addresses of their own (`crate::hosts`): a custom hostname, a proxy's path,
//! an organization's subdomain; and the `custom-hostnames` and `subdomains` operations.

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

struct World {
    admin: Persona,
    org: String,
    space: String,
}

/// An organization with a space of two pages (Intro, Install).
async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let pages = [("Intro", "Welcome."), ("Install", "Install it.")];
    let space = app.space_with_pages(&admin, &org, "Guide", &pages).await;
    World { admin, org, space }
}

/// A published public site of the world's space, with `settings` patched in; its id.
async fn site(app: &TestApp, w: &World, settings: Value) -> String {
    let base = format!("/v1/orgs/{}/sites", w.org);
    let site = id(&app
        .post(
            &w.admin,
            &base,
            json!({ "title": "Docs", "spaces": [w.space] }),
        )
        .await
        .expect(201));
    app.patch(&w.admin, &format!("{base}/{site}"), settings)
        .await
        .expect(200);
    app.post(&w.admin, &format!("{base}/{site}/publish"), json!({}))
        .await
        .expect(200);
    site
}

/// A published site on custom hostname `host`, its control proven; its id.
async fn proven_site(app: &TestApp, w: &World, host: &str) -> String {
    let site = site(app, w, json!({ "hostname": host })).await;
    crate::dns::prove(app, &w.admin, &site, host).await;
    site
}

/// A GET of `path` on the server with these headers (`Host` among them): status, headers
/// and text.
async fn fetch(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> (u16, HeaderMap, String) {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut req = client.get(format!("{}{path}", app.base));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.expect("request sent");
    let status = res.status().as_u16();
    let h = res.headers().clone();
    (status, h, res.text().await.unwrap())
}

#[tokio::test]
async fn a_site_is_served_at_the_root_of_its_custom_hostname() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let site = proven_site(&app, &w, "docs.example.com").await;
    let got = app
        .get(&w.admin, &format!("/v1/orgs/{}/sites/{site}", w.org))
        .await
        .expect(200);
    assert_eq!(got["urls"]["published"], json!("http://docs.example.com/"));

    let host = [("host", "docs.example.com")];
    let (status, h, body) = fetch(&app, "/", &host).await;
    assert_eq!(status, 200, "{body}");
    assert!(h["content-type"].to_str().unwrap().starts_with("text/html"));
    assert!(body.contains("href=\"/install\""), "{body}");
    assert!(!body.contains("/sites/site_"), "{body}");
    assert!(
        body.contains("<link rel=\"canonical\" href=\"http://docs.example.com/"),
        "{body}"
    );
    let (status, _, body) = fetch(&app, "/install", &host).await;
    assert_eq!(status, 200);
    assert!(body.contains("Install it."));
    // Its stylesheet, as the page links it.
    let css = body
        .split("<link rel=\"stylesheet\" href=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_string();
    assert!(css.starts_with("/sites/~assets/"), "{css}");
    let (status, h, _) = fetch(&app, &css, &host).await;
    assert_eq!(status, 200);
    assert!(h["content-type"].to_str().unwrap().starts_with("text/css"));
    // The agents' formats and the sitemap use the address too.
    let (_, _, llms) = fetch(&app, "/llms.txt", &host).await;
    assert!(
        llms.contains("http://docs.example.com/install.md"),
        "{llms}"
    );
    let (_, _, sitemap) = fetch(&app, "/sitemap.xml", &host).await;
    assert!(
        sitemap.contains("<loc>http://docs.example.com/install</loc>"),
        "{sitemap}"
    );
    // The site's redirects answer on its address.
    let site_spaces = app
        .get(
            &w.admin,
            &format!("/v1/orgs/{}/sites/{site}/site-spaces", w.org),
        )
        .await
        .expect(200);
    app.post(
        &w.admin,
        &format!("/v1/orgs/{}/sites/{site}/redirects", w.org),
        json!({ "source": "/old", "destination": { "kind": "site-space", "siteSpaceId": id(&site_spaces["items"][0]) } }),
    )
    .await
    .expect(201);
    let (status, h, _) = fetch(&app, "/old", &host).await;
    assert_eq!(status, 301);
    // As a path: the visitor keeps the scheme and port they came by.
    assert_eq!(h["location"], "/");
    // Everything on that host is the site: the API is not.
    let (status, h, _) = fetch(&app, "/v1/user", &host).await;
    assert_eq!(status, 404);
    assert!(h["content-type"].to_str().unwrap().starts_with("text/html"));
    // A host that is no site's is served as Quire's own.
    let (status, _, body) = fetch(&app, "/v1/user", &[("host", "other.example.com")]).await;
    assert_eq!(status, 401, "{body}");

    // A published URL on that address resolves, with its canonical URL there.
    let resolved = app
        .post(
            &w.admin,
            "/v1/urls/published",
            json!({ "url": "http://docs.example.com/install" }),
        )
        .await
        .expect(200);
    assert_eq!(resolved["site"], json!(site));
    assert_eq!(resolved["pathname"], json!("install"));
    assert_eq!(resolved["basePath"], json!("/"));
    assert_eq!(
        resolved["canonicalUrl"],
        json!("http://docs.example.com/install")
    );

    // Quire's own address of the site, with a query right after its id, resolves too.
    let own = app
        .post(
            &w.admin,
            "/v1/urls/published",
            json!({ "url": format!("{}/sites/{site}?x=1", app.base) }),
        )
        .await
        .expect(200);
    assert_eq!(own["site"], json!(site));
    assert_eq!(own["basePath"], json!(format!("/sites/{site}/")));

    // The same through the query's form.
    let got = app
        .get(
            &w.admin,
            "/v1/urls/published?url=http%3A%2F%2Fdocs.example.com%2Finstall",
        )
        .await
        .expect(200);
    assert_eq!(got["canonicalUrl"], resolved["canonicalUrl"]);
    assert_eq!(got["siteSpace"], resolved["siteSpace"]);
    app.get(
        &w.admin,
        "/v1/urls/published?url=http%3A%2F%2Fnowhere.example.com%2F",
    )
    .await
    .expect_error(404);
    app.get(&w.admin, "/v1/urls/published")
        .await
        .expect_error(400);

    // One hostname, one site, on the whole server.
    let other = app.org(&w.admin, "Other").await;
    let second = id(&app
        .post(
            &w.admin,
            &format!("/v1/orgs/{other}/sites"),
            json!({ "title": "More" }),
        )
        .await
        .expect(201));
    let message = app
        .patch(
            &w.admin,
            &format!("/v1/orgs/{other}/sites/{second}"),
            json!({ "hostname": "docs.example.com" }),
        )
        .await
        .expect_error(409);
    assert!(message.contains("hostname"), "{message}");
    // Nor Quire's own address.
    let own = app
        .base
        .trim_start_matches("http://")
        .split(':')
        .next()
        .unwrap()
        .to_string();
    let message = app
        .patch(
            &w.admin,
            &format!("/v1/orgs/{other}/sites/{second}"),
            json!({ "hostname": own }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("hostname"), "{message}");

    // Moving the hostname to another site moves what the address serves, at once on this
    // node.
    app.patch(
        &w.admin,
        &format!("/v1/orgs/{}/sites/{site}", w.org),
        json!({ "hostname": null }),
    )
    .await
    .expect(200);
    let (status, _, _) = fetch(&app, "/v1/user", &host).await;
    assert_eq!(status, 401, "the address is Quire's own again");
}

#[tokio::test]
async fn custom_hostnames_are_administered_by_their_site_s_organization() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let reader = app.persona("reader").await;
    app.add_member(&w.admin, &w.org, &reader, json!("read"))
        .await;
    let outsider = app.persona("outsider").await;
    // IP literals stand for names: the check resolves them without asking any DNS server.
    let here = "127.000.000.001";
    let elsewhere = "10.11.12.13";
    let site = site(&app, &w, json!({ "hostname": here })).await;
    let other = site_with(&app, &w, elsewhere).await;

    let path = format!("/v1/custom-hostnames/{here}");
    let got = app.get(&w.admin, &path).await.expect(200);
    assert_eq!(got["object"], json!("custom-hostname"));
    assert_eq!(got["hostname"], json!(here));
    assert_eq!(got["target"], json!({ "type": "site", "site": site }));
    assert_eq!(got["isActive"], json!(false), "its control is not proven");
    assert!(got.get("status").is_none(), "not checked yet: {got}");
    assert!(got["urls"]["location"].as_str().unwrap().ends_with(&path));
    app.get(&reader, &path).await.expect_error(404);
    app.get(&outsider, &path).await.expect_error(404);
    app.get(&w.admin, "/v1/custom-hostnames/nothing.example.com")
        .await
        .expect_error(404);

    // The DNS check: pointing at this server (live once its control is proven), or
    // elsewhere.
    app.patch(&reader, &path, json!({})).await.expect_error(404);
    app.patch(&w.admin, &path, json!({})).await.expect(204);
    let got = app.get(&w.admin, &path).await.expect(200);
    assert_eq!(got["status"], json!("dns_passed"));
    assert_eq!(got["isActive"], json!(false));
    crate::dns::prove(&app, &w.admin, &site, here).await;
    let got = app.get(&w.admin, &path).await.expect(200);
    assert_eq!(got["status"], json!("live"));
    assert_eq!(got["isActive"], json!(true));
    let other_path = format!("/v1/custom-hostnames/{elsewhere}");
    app.patch(&w.admin, &other_path, json!({}))
        .await
        .expect(204);
    let got = app.get(&w.admin, &other_path).await.expect(200);
    assert_eq!(got["status"], json!("dns_wrong_cname"));
    assert_eq!(got["target"]["site"], json!(other));
    // A name that resolves nowhere (`.invalid` never does, and no DNS server is asked).
    let nowhere = "docs.example.invalid";
    site_with(&app, &w, nowhere).await;
    let nowhere_path = format!("/v1/custom-hostnames/{nowhere}");
    app.patch(&w.admin, &nowhere_path, json!({}))
        .await
        .expect(204);
    let got = app.get(&w.admin, &nowhere_path).await.expect(200);
    assert_eq!(got["status"], json!("dns_no_cname"));

    // Removing: not the reader's to remove (204, nothing changes); the admin's (205).
    app.delete(&reader, &path).await.expect(204);
    app.get(&w.admin, &path).await.expect(200);
    app.delete(&w.admin, &path).await.expect(205);
    app.get(&w.admin, &path).await.expect_error(404);
    app.delete(&w.admin, &path).await.expect(204);
    let site_row = app
        .get(&w.admin, &format!("/v1/orgs/{}/sites/{site}", w.org))
        .await
        .expect(200);
    assert!(site_row.get("hostname").is_none() || site_row["hostname"].is_null());
}

/// Another published site of the world's space on `hostname`; its id.
async fn site_with(app: &TestApp, w: &World, hostname: &str) -> String {
    site(app, w, json!({ "hostname": hostname })).await
}

#[tokio::test]
async fn a_proxy_serves_the_site_under_its_path_when_its_forwarded_host_is_trusted() {
    let app = TestApp::start_with(|c| c.trust_forwarded_host = true).await;
    let w = world(&app).await;
    let site = site(&app, &w, json!({ "proxy": "example.com/docs" })).await;
    let got = app
        .get(&w.admin, &format!("/v1/orgs/{}/sites/{site}", w.org))
        .await
        .expect(200);
    assert_eq!(got["urls"]["published"], json!("http://example.com/docs/"));
    let forwarded = [
        ("x-forwarded-host", "example.com"),
        ("x-forwarded-proto", "https"),
    ];
    let (status, _, body) = fetch(&app, "/docs/", &forwarded).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("href=\"/docs/install\""), "{body}");
    assert!(body.contains("href=\"/docs/sites/~assets/"), "{body}");
    assert!(
        body.contains("<link rel=\"canonical\" href=\"https://example.com/docs/"),
        "{body}"
    );
    let (status, _, body) = fetch(&app, "/docs/install", &forwarded).await;
    assert_eq!(status, 200);
    assert!(body.contains("Install it."));
    let (status, _, _) = fetch(&app, "/docs/sites/~assets/nothing.css", &forwarded).await;
    assert_eq!(status, 404);
    // Outside the proxy's path, the host serves nothing of the site.
    let (status, _, _) = fetch(&app, "/other", &forwarded).await;
    assert_eq!(status, 404);

    // A server not told to trust the forwarded host reads the connection's `Host`.
    let untrusting = TestApp::start().await;
    let (status, h, _) = fetch(&untrusting, "/docs/", &forwarded).await;
    assert_eq!(status, 404);
    assert!(h["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
}

#[tokio::test]
async fn an_organization_s_subdomain_serves_its_sites_by_basename() {
    let app = TestApp::start_with(|c| c.sites_domain = Some("docs.test".into())).await;
    let w = world(&app).await;
    app.patch(
        &w.admin,
        &format!("/v1/orgs/{}", w.org),
        json!({ "hostname": "acme" }),
    )
    .await
    .expect(200);
    site(&app, &w, json!({ "basename": "guides" })).await;
    let host = [("host", "acme.docs.test")];
    let (status, _, body) = fetch(&app, "/guides/", &host).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("href=\"/guides/install\""), "{body}");
    let (status, _, body) = fetch(&app, "/guides/install", &host).await;
    assert_eq!(status, 200);
    assert!(body.contains("Install it."));
    // No site without a basename: nothing at the root.
    let (status, _, _) = fetch(&app, "/v1/user", &host).await;
    assert_eq!(status, 401, "served as Quire's own host");

    let got = app.get(&w.admin, "/v1/subdomains/acme").await.expect(200);
    assert_eq!(
        got,
        json!({
            "object": "subdomain",
            "subdomain": "acme",
            "target": { "type": "organization", "organization": w.org },
            "isActive": true
        })
    );
    app.get(&w.admin, "/v1/subdomains/nobody")
        .await
        .expect_error(404);
    // A custom hostname may not be taken under the sites' domain.
    let message = app
        .post(
            &w.admin,
            &format!("/v1/orgs/{}/sites", w.org),
            json!({ "title": "Two" }),
        )
        .await
        .expect(201);
    let message = app
        .patch(
            &w.admin,
            &format!("/v1/orgs/{}/sites/{}", w.org, id(&message)),
            json!({ "hostname": "x.docs.test" }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("hostname"), "{message}");
}

#[tokio::test]
async fn another_node_serves_a_new_hostname_within_the_bound() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let w = world(&app).await;
    let host = [("host", "docs.example.com")];
    // The other node looks the host up once: no site is there yet.
    let (status, _, _) = fetch(&other, "/v1/user", &host).await;
    assert_eq!(status, 401);
    proven_site(&app, &w, "docs.example.com").await;
    // Written on the first node, seen by the other once its snapshot is older than the
    // access cache's bound (`--access-cache-ms`).
    let bound = app.config.access_cache_ms;
    let started = std::time::Instant::now();
    loop {
        let (status, _, _) = fetch(&other, "/install", &host).await;
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed().as_millis() < u128::from(bound) * 3 + 1000,
            "not served after {} ms (bound {bound} ms)",
            started.elapsed().as_millis()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A session of persona `name` in the app: its cookie.
async fn signed_in(app: &TestApp, name: &str) -> String {
    let email = format!("{name}@example.com");
    quire_server::admin::set_password(&app.config, &email, Some(name), "a fine passphrase", false)
        .await
        .unwrap();
    let res = no_redirects()
        .post(format!("{}/signin", app.base))
        .header("origin", &app.base)
        .form(&[("email", email.as_str()), ("password", "a fine passphrase")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    let cookie = res.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_string()
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// An app screen as the session `cookie` sees it.
async fn screen(app: &TestApp, cookie: &str, path: &str) -> String {
    let res = no_redirects()
        .get(format!("{}{path}", app.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res.text().await.unwrap()
}

/// The text of `html` between `before` and the next `after`.
fn between(html: &str, before: &str, after: &str) -> String {
    let at = html
        .find(before)
        .unwrap_or_else(|| panic!("{before} in {html}"))
        + before.len();
    html[at..at + html[at..].find(after).unwrap()].to_string()
}

/// The TXT record a site's screen tells its admins to publish: name and value.
fn record_on(html: &str) -> (String, String) {
    let shown = between(html, "<dl class=\"hostname-challenge\">", "</dl>");
    let name = between(&shown, "<dt>Name</dt><dd><code>", "</code>");
    let value = between(&shown, "<dt>Value</dt><dd><code>", "</code>");
    (name, value)
}

#[tokio::test]
async fn a_custom_hostname_serves_its_site_only_once_its_control_is_proven() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let reader = app.persona("reader").await;
    app.add_member(&w.admin, &w.org, &reader, json!("read"))
        .await;
    // Someone else's hostname, which any site of a shared server could name.
    let host = "docs.example.com";
    let site = site(&app, &w, json!({ "hostname": host })).await;
    let hosted = [("host", host)];

    // Not served: a plain page says why; neither the site nor Quire's own API answers there.
    let (status, h, body) = fetch(&app, "/install", &hosted).await;
    assert_eq!(status, 404);
    assert!(h["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert!(body.contains("not verified"), "{body}");
    assert!(!body.contains("Install it."), "{body}");
    let (status, _, _) = fetch(&app, "/v1/user", &hosted).await;
    assert_eq!(status, 404);
    // Nor does its address resolve for renderers.
    let url = json!({ "url": format!("http://{host}/install") });
    app.post(&w.admin, "/v1/urls/published", url.clone())
        .await
        .expect_error(404);

    // A check without the proof leaves it so (a hostname resolving here would be
    // `dns_passed`, never `live`: `custom_hostnames_are_administered_by_...`).
    let path = format!("/v1/custom-hostnames/{host}");
    app.patch(&w.admin, &path, json!({})).await.expect(204);
    let got = app.get(&w.admin, &path).await.expect(200);
    assert_ne!(got["status"], json!("live"));
    assert_eq!(got["isActive"], json!(false));
    assert_eq!(fetch(&app, "/install", &hosted).await.0, 404);

    // The site's screen tells its admins the record to publish; a reader sees none.
    let admin = signed_in(&app, "admin").await;
    let page = screen(&app, &admin, &format!("/o/{}/sites/{site}", w.org)).await;
    let (name, value) = record_on(&page);
    assert_eq!(name, format!("_quire-challenge.{host}"));
    assert!(value.starts_with("quire-verification="), "{value}");
    let read = signed_in(&app, "reader").await;
    let seen = screen(&app, &read, &format!("/o/{}/sites/{site}", w.org)).await;
    assert!(!seen.contains("_quire-challenge"), "{seen}");
    assert!(!seen.contains(&value), "{seen}");

    // A record holding anything else proves nothing.
    crate::dns::publish(&name, "quire-verification=00000000000000000000000000000000");
    app.patch(&w.admin, &path, json!({})).await.expect(204);
    assert_eq!(
        app.get(&w.admin, &path).await.expect(200)["isActive"],
        json!(false)
    );
    assert_eq!(fetch(&app, "/install", &hosted).await.0, 404);

    // The record published, the admin checks from the app: the site is served there.
    crate::dns::publish(&name, &value);
    let csrf = between(&page, "name=\"csrf\" value=\"", "\"");
    let res = no_redirects()
        .post(format!("{}/o/{}/sites/{site}", app.base, w.org))
        .header("cookie", &admin)
        .header("origin", &app.base)
        .form(&[("csrf", csrf.as_str()), ("op", "hostname-check")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303, "{}", res.text().await.unwrap());
    let got = app.get(&w.admin, &path).await.expect(200);
    assert_eq!(got["isActive"], json!(true));
    let (status, _, body) = fetch(&app, "/install", &hosted).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Install it."));
    app.post(&w.admin, "/v1/urls/published", url)
        .await
        .expect(200);
    let page = screen(&app, &admin, &format!("/o/{}/sites/{site}", w.org)).await;
    assert!(!page.contains("hostname-challenge"), "proven: {page}");

    // The proof stays once the record is gone.
    crate::dns::withdraw(&name, &value);
    app.patch(&w.admin, &path, json!({})).await.expect(204);
    assert_eq!(
        app.get(&w.admin, &path).await.expect(200)["isActive"],
        json!(true)
    );
    assert_eq!(fetch(&app, "/install", &hosted).await.0, 200);

    // On another site, the hostname needs a proof of its own: the first site's record
    // proves nothing for it.
    crate::dns::publish(&name, &value);
    app.patch(
        &w.admin,
        &format!("/v1/orgs/{}/sites/{site}", w.org),
        json!({ "hostname": null }),
    )
    .await
    .expect(200);
    let second = site_with(&app, &w, host).await;
    let page = screen(&app, &admin, &format!("/o/{}/sites/{second}", w.org)).await;
    let (_, second_value) = record_on(&page);
    assert_ne!(second_value, value);
    app.patch(&w.admin, &path, json!({})).await.expect(204);
    let got = app.get(&w.admin, &path).await.expect(200);
    assert_eq!(got["isActive"], json!(false));
    assert_eq!(got["target"]["site"], json!(second));
    let (status, _, body) = fetch(&app, "/", &hosted).await;
    assert_eq!(status, 404);
    assert!(body.contains("not verified"), "{body}");
    crate::dns::withdraw(&name, &value);
}
