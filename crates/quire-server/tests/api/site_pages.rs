//! Published sites as HTML through HTTP: navigation, audiences, 404 pages, the agents'
//! formats, revalidation, the security headers and escaping of hostile content.

use reqwest::header::{HeaderMap, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

struct World {
    admin: Persona,
    org: String,
}

async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    World { admin, org }
}

/// Opens a change request in `space`; returns its id.
async fn open_cr(app: &TestApp, w: &World, space: &str) -> String {
    id(&app
        .post(
            &w.admin,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "Write" }),
        )
        .await
        .expect(201))
}

/// Merges the change request `cr` of `space`.
async fn merge(app: &TestApp, w: &World, space: &str, cr: &str) {
    app.post(
        &w.admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
}

/// Writes `changes` into `space` through a change request and merges it.
async fn write(app: &TestApp, w: &World, space: &str, changes: Value) {
    let cr = open_cr(app, w, space).await;
    app.post(
        &w.admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
        json!({ "changes": changes }),
    )
    .await
    .expect(200);
    merge(app, w, space, &cr).await;
}

/// A guide of four pages: Intro, Install (under Intro), Secret (hidden), Usage.
async fn guide(app: &TestApp, w: &World, title: &str) -> String {
    let space = app.space(&w.admin, &w.org, title, None).await;
    write(
        app,
        w,
        &space,
        json!([
            { "operation": "insert_page", "ref": "intro", "title": "Intro", "description": "Start here",
              "document": { "markdown": "Welcome.\n\n## Setup\n\nRun it.\n" } },
            { "operation": "insert_page", "into": "intro", "title": "Install", "document": { "markdown": "Install it." } },
            { "operation": "insert_page", "title": "Secret", "hidden": true, "document": { "markdown": "Hidden page." } },
            { "operation": "insert_page", "title": "Usage", "document": { "markdown": "Use it." } }
        ]),
    )
    .await;
    space
}

/// A site showing `spaces`, with `visibility`, published; returns (site id, base path).
async fn site(app: &TestApp, w: &World, spaces: &[&str], visibility: &str) -> (String, String) {
    let base = format!("/v1/orgs/{}/sites", w.org);
    let site = id(&app
        .post(
            &w.admin,
            &base,
            json!({ "title": "Docs", "spaces": spaces }),
        )
        .await
        .expect(201));
    app.patch(
        &w.admin,
        &format!("{base}/{site}"),
        json!({ "visibility": visibility }),
    )
    .await
    .expect(200);
    let published = app
        .post(&w.admin, &format!("{base}/{site}/publish"), json!({}))
        .await
        .expect(200);
    let url = published["urls"]["published"].as_str().unwrap();
    let path = url[url.find("/sites/").unwrap()..].to_string();
    (site, path)
}

/// A plain GET: status, headers and text.
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

/// Asserts an HTML answer with the security headers.
#[track_caller]
fn assert_html(status: u16, h: &HeaderMap, expected: u16, body: &str) {
    assert_eq!(status, expected, "{body}");
    assert!(h[CONTENT_TYPE].to_str().unwrap().starts_with("text/html"));
    let csp = h[CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline"));
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert!(h.contains_key("referrer-policy"));
    // `<!DOCTYPE html>` as the template writes it (the name is case-insensitive).
    assert!(
        body.get(..15)
            .is_some_and(|d| d.eq_ignore_ascii_case("<!doctype html>")),
        "{body}"
    );
}

fn sidebar(body: &str) -> &str {
    let start = body.find("<nav aria-label=\"Pages\">").expect("sidebar");
    let end = body[start..].find("</nav>").unwrap();
    &body[start..start + end]
}

#[tokio::test]
async fn pages_show_their_site_s_navigation() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, base) = site(&app, &w, &[&space], "public").await;

    // The root shows the first page.
    let (status, h, body) = fetch(&app, &base, &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("<h1>Intro</h1>"), "{body}");

    let (status, h, body) = fetch(&app, &format!("{base}intro/install"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("<html lang=\"en\">"));
    assert!(body.contains("<title>Install | Docs</title>"), "{body}");
    for landmark in [
        "<header",
        "<main",
        "<footer",
        "class=\"skip\"",
        "aria-label=\"Pages\"",
    ] {
        assert!(body.contains(landmark), "{landmark} missing");
    }
    let nav = sidebar(&body);
    assert!(
        nav.contains(">Intro</a>") && nav.contains(">Usage</a>"),
        "{nav}"
    );
    assert!(!nav.contains("Secret"), "hidden page listed: {nav}");
    assert!(
        nav.contains(&format!(
            "href=\"{base}intro/install\" aria-current=\"page\""
        )),
        "{nav}"
    );
    // Breadcrumbs, previous and next in tree order.
    assert!(body.contains("aria-label=\"Breadcrumb\""));
    assert!(
        body.contains(&format!("<li><a href=\"{base}intro\">Intro</a></li>")),
        "{body}"
    );
    assert!(
        body.contains(&format!("rel=\"prev\" href=\"{base}intro\"")),
        "{body}"
    );
    assert!(
        body.contains(&format!("rel=\"next\" href=\"{base}usage\"")),
        "{body}"
    );
    assert!(body.contains("Last updated <time"));

    // The first page: its description and outline.
    let (_, _, body) = fetch(&app, &format!("{base}intro"), &[]).await;
    assert!(body.contains("<meta name=\"description\" content=\"Start here\">"));
    assert!(
        body.contains("On this page") && body.contains("href=\"#setup\""),
        "{body}"
    );
    assert!(!body.contains("rel=\"prev\""));

    // A hidden page reads by its URL, out of navigation and indexes.
    let (status, _, body) = fetch(&app, &format!("{base}secret"), &[]).await;
    assert_eq!(status, 200);
    assert!(body.contains("noindex"));

    // The assets are served with long caching, hashed names.
    let css = body.split("rel=\"stylesheet\" href=\"").nth(1).unwrap();
    let css = &css[..css.find('"').unwrap()];
    assert!(css.contains("/sites/~assets/site."));
    let (status, h, text) = fetch(&app, css, &[]).await;
    assert_eq!(status, 200);
    assert!(h["cache-control"].to_str().unwrap().contains("immutable"));
    assert!(text.contains("prefers-color-scheme: dark"));
    let js = body.split("<script src=\"").nth(1).unwrap();
    let js = &js[..js.find('"').unwrap()];
    let (status, h, _) = fetch(&app, js, &[]).await;
    assert_eq!(status, 200);
    assert!(h[CONTENT_TYPE].to_str().unwrap().contains("javascript"));
}

#[tokio::test]
async fn sections_are_tabs_and_site_spaces_are_variants() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let guide_space = guide(&app, &w, "Guide").await;
    let v2 = guide(&app, &w, "Guide v2").await;
    let reference = guide(&app, &w, "Reference").await;
    let (site_id, base) = site(&app, &w, &[&guide_space], "public").await;
    let api = format!("/v1/orgs/{}/sites/{site_id}", w.org);
    app.post(
        &w.admin,
        &format!("{api}/sections"),
        json!({ "spaceId": reference, "title": "Reference" }),
    )
    .await
    .expect(201);
    app.post(
        &w.admin,
        &format!("{api}/site-spaces"),
        json!({ "spaceId": v2 }),
    )
    .await
    .expect(201);

    let (status, h, body) = fetch(&app, &format!("{base}intro"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("aria-label=\"Sections\""), "{body}");
    assert!(body.contains(">Reference</a>"), "{body}");
    // The root's site spaces moved into a default section named after the site.
    assert!(body.contains("aria-current=\"page\">Docs</a>"), "{body}");
    assert!(body.contains("aria-label=\"Variants\""), "{body}");
    assert!(body.contains(">Guide v2</a>"), "{body}");
    let (status, _, body) = fetch(&app, &format!("{base}reference/intro"), &[]).await;
    assert_eq!(status, 200);
    assert!(
        body.contains("aria-current=\"page\">Reference</a>"),
        "{body}"
    );

    // The variant switcher shows the other spaces' titles as they are now: renaming one
    // changes the page (and its tag), deleting one takes it out.
    let (_, h, _) = fetch(&app, &format!("{base}intro"), &[]).await;
    let tag = h["etag"].to_str().unwrap().to_string();
    app.patch(
        &w.admin,
        &format!("/v1/spaces/{v2}"),
        json!({ "title": "Guide, second edition" }),
    )
    .await
    .expect(200);
    let (status, h, body) = fetch(&app, &format!("{base}intro"), &[("if-none-match", &tag)]).await;
    assert_eq!(status, 200);
    assert_ne!(h["etag"].to_str().unwrap(), tag);
    assert!(body.contains(">Guide, second edition</a>"), "{body}");
    assert!(!body.contains(">Guide v2</a>"), "{body}");
    app.delete(&w.admin, &format!("/v1/spaces/{v2}"))
        .await
        .expect(204);
    let (status, _, body) = fetch(&app, &format!("{base}intro"), &[]).await;
    assert_eq!(status, 200);
    assert!(!body.contains("second edition"), "{body}");
}

#[tokio::test]
async fn each_audience_reads_what_it_may() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;

    // Public: indexable, with a sitemap named by robots.txt.
    let (_, public) = site(&app, &w, &[&space], "public").await;
    let (status, h, body) = fetch(&app, &format!("{public}intro"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(!body.contains("noindex") && !h.contains_key("x-robots-tag"));
    let (status, _, robots) = fetch(&app, &format!("{public}robots.txt"), &[]).await;
    assert_eq!(status, 200);
    assert!(robots.contains("Sitemap: ") && robots.contains(&format!("{public}sitemap.xml")));
    let (status, h, map) = fetch(&app, &format!("{public}sitemap.xml"), &[]).await;
    assert_eq!(status, 200);
    assert!(h[CONTENT_TYPE].to_str().unwrap().contains("xml"));
    assert!(
        map.contains(&format!("{public}intro/install</loc>")),
        "{map}"
    );
    assert!(!map.contains("secret"), "{map}");

    // Unlisted: readable, never indexed, no sitemap.
    let (_, unlisted) = site(&app, &w, &[&space], "unlisted").await;
    let (status, h, body) = fetch(&app, &format!("{unlisted}intro"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("<meta name=\"robots\" content=\"noindex\">"));
    assert_eq!(h["x-robots-tag"], "noindex");
    let (status, h, body) = fetch(&app, &format!("{unlisted}sitemap.xml"), &[]).await;
    assert_html(status, &h, 404, &body);

    // Share link: only with an active key, then remembered by a cookie for the site.
    let (shared_id, shared) = site(&app, &w, &[&space], "share-link").await;
    let (status, h, body) = fetch(&app, &format!("{shared}intro"), &[]).await;
    assert_html(status, &h, 404, &body);
    let unknown_site = fetch(&app, "/sites/nosuchsite/intro", &[]).await;
    assert_eq!(body, unknown_site.2, "a share-link site looks like no site");
    let api = format!("/v1/orgs/{}/sites/{shared_id}", w.org);
    let link = app
        .post(
            &w.admin,
            &format!("{api}/share-links"),
            json!({ "name": "Partners" }),
        )
        .await
        .expect(201);
    let url = link["urls"]["published"].as_str().unwrap();
    let keyed = &url[url.find("/sites/").unwrap()..];
    let (status, h, body) = fetch(&app, &format!("{keyed}intro"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert_eq!(h["x-robots-tag"], "noindex");
    let cookie = h["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(
        cookie.contains(&format!("Path=/sites/{shared_id}/")),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let (status, _, body) = fetch(&app, &format!("{shared}usage"), &[("cookie", pair)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<h1>Usage</h1>"));
    // Deactivated, the key opens nothing.
    app.patch(
        &w.admin,
        &format!("{api}/share-links/{}", id(&link)),
        json!({ "active": false }),
    )
    .await
    .expect(200);
    let (status, h, body) = fetch(&app, &format!("{keyed}intro"), &[]).await;
    assert_html(status, &h, 404, &body);
    assert_eq!(body, unknown_site.2);

    // Visitor-authenticated sites wait for visitor tokens: not found for now.
    let (_, authed) = site(&app, &w, &[&space], "visitor-auth").await;
    let (status, h, body) = fetch(&app, &format!("{authed}intro"), &[]).await;
    assert_html(status, &h, 404, &body);
}

#[tokio::test]
async fn missing_content_gets_a_404_page() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (site_id, base) = site(&app, &w, &[&space], "public").await;

    let (status, h, body) = fetch(&app, &format!("{base}no/such/page"), &[]).await;
    assert_html(status, &h, 404, &body);
    assert!(body.contains("Page not found"));
    assert!(
        body.contains("aria-label=\"Pages\""),
        "chrome of the known site: {body}"
    );
    let (status, h, body) = fetch(&app, "/sites/nosuchsite/", &[]).await;
    assert_html(status, &h, 404, &body);

    // A deleted space, then an unpublished site.
    app.delete(&w.admin, &format!("/v1/spaces/{space}")).await;
    let (status, h, body) = fetch(&app, &format!("{base}intro"), &[]).await;
    assert_html(status, &h, 404, &body);
    let other = guide(&app, &w, "Other").await;
    let (other_id, other_base) = site(&app, &w, &[&other], "public").await;
    app.post(
        &w.admin,
        &format!("/v1/orgs/{}/sites/{other_id}/unpublish", w.org),
        json!({}),
    )
    .await
    .expect(200);
    let (status, h, body) = fetch(&app, &format!("{other_base}intro"), &[]).await;
    assert_html(status, &h, 404, &body);
    assert!(!body.contains("Intro"));
    let _ = site_id;
}

#[tokio::test]
async fn agents_read_markdown_and_llms_txt() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, base) = site(&app, &w, &[&space], "public").await;

    let (status, h, md) = fetch(&app, &format!("{base}intro.md"), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(h[CONTENT_TYPE], "text/markdown; charset=utf-8");
    assert!(
        md.starts_with("# Intro\n") && md.contains("Start here") && md.contains("## Setup"),
        "{md}"
    );

    let (status, _, index) = fetch(&app, &format!("{base}llms.txt"), &[]).await;
    assert_eq!(status, 200);
    assert!(index.starts_with("# Docs\n"), "{index}");
    assert!(
        index.contains("- [Intro](") && index.contains(&format!("{base}intro.md): Start here")),
        "{index}"
    );
    assert!(
        index.contains(&format!("{base}intro/install.md)")),
        "{index}"
    );
    assert!(!index.contains("secret"), "{index}");
    let (status, _, full) = fetch(&app, &format!("{base}llms-full.txt"), &[]).await;
    assert_eq!(status, 200);
    assert!(full.contains("# Install") && full.contains("Install it.") && full.contains("Use it."));
    assert!(!full.contains("Hidden page."));
}

#[tokio::test]
async fn pages_revalidate_with_etags() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, base) = site(&app, &w, &[&space], "public").await;
    let page = format!("{base}intro");
    let (status, h, _) = fetch(&app, &page, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(h["cache-control"], "no-cache");
    let etag = h["etag"].to_str().unwrap().to_string();
    let (status, _, body) = fetch(&app, &page, &[("if-none-match", &etag)]).await;
    assert_eq!(status, 304);
    assert!(body.is_empty());
    // New content, new tag.
    write(
        &app,
        &w,
        &space,
        json!([{ "operation": "insert_page", "title": "More", "document": { "markdown": "More." } }]),
    )
    .await;
    let (status, h, body) = fetch(&app, &page, &[("if-none-match", &etag)]).await;
    assert_eq!(status, 200);
    assert_ne!(h["etag"].to_str().unwrap(), etag);
    assert!(body.contains(">More</a>"));
}

#[tokio::test]
async fn pages_are_sent_gzipped_under_a_weak_tag_that_revalidates_too() {
    use std::io::Read;
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, base) = site(&app, &w, &[&space], "public").await;
    let page = format!("{base}intro");
    let (_, plain_headers, plain) = fetch(&app, &page, &[]).await;
    let strong = plain_headers["etag"].to_str().unwrap().to_string();
    assert!(!strong.starts_with("W/"));
    assert_eq!(plain_headers["vary"], "accept-encoding");
    // reqwest here does not decode gzip: read the bytes on the wire.
    let res = reqwest::Client::new()
        .get(format!("{}{page}", app.base))
        .header("accept-encoding", "gzip, deflate, br")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let h = res.headers().clone();
    assert_eq!(h["content-encoding"], "gzip");
    let weak = h["etag"].to_str().unwrap().to_string();
    assert_eq!(weak, format!("W/{strong}"));
    // Security headers as on the plain page.
    for name in [
        "content-security-policy",
        "x-content-type-options",
        "cache-control",
    ] {
        assert_eq!(h.get(name), plain_headers.get(name), "{name}");
    }
    let wire = res.bytes().await.unwrap();
    let mut html = String::new();
    flate2::read::GzDecoder::new(&wire[..])
        .read_to_string(&mut html)
        .unwrap();
    assert_html(200, &h, 200, &html);
    assert_eq!(html, plain);
    assert!(wire.len() < plain.len());
    // Compressed once for its tag, and sent from there.
    let kept = app
        .state
        .content
        .pages
        .get(&format!("site-html.gz:{strong}"))
        .expect("the compressed page is kept");
    assert_eq!(kept, wire);
    // Either tag revalidates, with either encoding.
    for tag in [&weak, &strong] {
        for accept in ["gzip", "identity"] {
            let (status, _, body) = fetch(
                &app,
                &page,
                &[("if-none-match", tag), ("accept-encoding", accept)],
            )
            .await;
            assert_eq!(status, 304, "{tag}, {accept}");
            assert!(body.is_empty());
        }
    }
}

#[tokio::test]
async fn hostile_content_is_inert() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let hostile = "<script>alert(1)</script>\"><img src=x onerror=alert(1)>";
    write(
        &app,
        &w,
        &space,
        json!([{ "operation": "insert_page", "title": hostile, "slug": "evil", "description": hostile,
                 "document": { "markdown": "<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n[click](javascript:alert(1)) <a href=\"javascript:alert(1)\" onclick=\"alert(1)\">x</a>\n" } }]),
    )
    .await;
    let (site_id, base) = site(&app, &w, &[&space], "public").await;
    let api = format!("/v1/orgs/{}/sites/{site_id}", w.org);
    app.patch(
        &w.admin,
        &api,
        json!({ "title": "<script>alert(1)</script>x" }),
    )
    .await;
    app.put(
        &w.admin,
        &format!("{api}/customization"),
        json!({
            "title": "\"><img src=x onerror=alert(1)>",
            "header": { "logo": { "light": "javascript:alert(1)" },
                        "links": [{ "title": "<script>alert(1)</script>", "to": { "kind": "url", "url": "javascript:alert(1)" } },
                                  { "title": "Home", "to": { "kind": "url", "url": "https://example.com/" } }] },
            "footer": { "groups": [{ "title": "\"><img src=x onerror=alert(1)>", "links": [] }],
                        "copyright": "<script>alert(1)</script>" }
        }),
    )
    .await
    .expect(200);
    for path in [format!("{base}evil"), base.clone(), format!("{base}nope")] {
        let (status, h, body) = fetch(&app, &path, &[]).await;
        assert!(status == 200 || status == 404, "{status}");
        assert_html(status, &h, status, &body);
        let lower = body.to_ascii_lowercase();
        assert!(!lower.contains("<script>alert"), "{body}");
        assert!(!lower.contains("<img src=x"), "{body}");
        assert!(!lower.contains("href=\"javascript:") && !lower.contains("src=\"javascript:"));
        // The hostile text shows escaped; no tag the browser parses carries an event.
        for tag in tags(&lower) {
            assert!(
                !tag.contains("onerror=") && !tag.contains("onclick="),
                "{tag}"
            );
        }
        assert!(body.contains("https://example.com/"), "{body}");
    }
}

/// The tags of an HTML text (escaped text holds no `<`), without their quoted attribute
/// values: what remains is names, which must carry no event handler.
fn tags(html: &str) -> Vec<String> {
    html.split('<')
        .skip(1)
        .map(|t| {
            let tag = &t[..t.find('>').unwrap_or(t.len())];
            tag.split('"').step_by(2).collect::<Vec<_>>().join("\"\"")
        })
        .collect()
}

#[tokio::test]
async fn visitor_tokens_open_visitor_auth_sites_and_claims_choose_what_shows() {
    use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
    let app = TestApp::start().await;
    let w = world(&app).await;
    let open = guide(&app, &w, "Open guide").await;
    let beta = guide(&app, &w, "Beta guide").await;
    let (site_id, path) = site(&app, &w, &[&open, &beta], "visitor-auth").await;
    let base = format!("/v1/orgs/{}/sites/{site_id}", w.org);
    let site_spaces = app
        .get(&w.admin, &format!("{base}/site-spaces"))
        .await
        .expect(200);
    let beta_ss = id(&site_spaces["items"][1]);
    app.patch(
        &w.admin,
        &format!("{base}/site-spaces/{beta_ss}"),
        json!({ "condition": "visitor.claims.beta === true" }),
    )
    .await
    .expect(200);
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let key = app
        .get(&w.admin, &format!("{base}/publishing/auth"))
        .await
        .expect(200)["privateKey"]
        .as_str()
        .unwrap()
        .to_string();
    let sign = |claims: Value, key: &str| {
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(key.as_bytes()),
        )
        .unwrap()
    };
    let exp = app.state.now() / 1000 + 600;

    // No token, a wrongly signed one, an expired one: the same 404 as an unknown site.
    let (status, h, unknown) = fetch(&app, "/sites/nosuchsite/", &[]).await;
    assert_html(status, &h, 404, &unknown);
    for bad in [
        String::new(),
        format!("?jwt_token={}", sign(json!({ "exp": exp }), "not-the-key")),
        format!("?jwt_token={}", sign(json!({ "exp": exp - 1200 }), &key)),
    ] {
        let (status, h, body) = fetch(&app, &format!("{path}{bad}"), &[]).await;
        assert_html(status, &h, 404, &body);
    }

    // A valid token opens the site and is kept in a cookie for the site's other pages.
    let plain = sign(json!({ "exp": exp }), &key);
    let (status, h, body) = fetch(&app, &format!("{path}?jwt_token={plain}"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("Welcome."), "{body}");
    assert!(
        !body.contains("Beta guide"),
        "the beta variant is hidden: {body}"
    );
    let cookie = h[reqwest::header::SET_COOKIE].to_str().unwrap().to_string();
    assert!(
        cookie.starts_with("quire_visitor=") && cookie.contains("HttpOnly"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let (status, h, body) = fetch(&app, &format!("{path}usage"), &[("cookie", &pair)]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("Use it."), "{body}");

    // A signed claim shows the variant its condition names; an unsigned one does not.
    let beta_token = sign(json!({ "exp": exp, "beta": true }), &key);
    let (_, _, body) = fetch(&app, &format!("{path}?jwt_token={beta_token}"), &[]).await;
    assert!(body.contains("Beta guide"), "{body}");
    let (_, _, body) = fetch(
        &app,
        &format!("{path}?jwt_token={plain}&visitor.beta=true"),
        &[],
    )
    .await;
    assert!(!body.contains("Beta guide"), "{body}");

    // With a fallback URL, visitors without a token are sent there.
    app.patch(
        &w.admin,
        &format!("{base}/publishing/auth"),
        json!({ "backend": "custom", "fallbackURL": "https://login.example.com/start" }),
    )
    .await
    .expect(200);
    let (status, h, _) = fetch(&app, &path, &[]).await;
    assert_eq!(status, 302);
    assert_eq!(h["location"], "https://login.example.com/start");
}

#[tokio::test]
async fn unsigned_claims_in_the_url_choose_sections() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let open = guide(&app, &w, "Open guide").await;
    let french = guide(&app, &w, "Guide en français").await;
    let (site_id, path) = site(&app, &w, &[&open, &french], "public").await;
    let base = format!("/v1/orgs/{}/sites/{site_id}", w.org);
    let site_spaces = app
        .get(&w.admin, &format!("{base}/site-spaces"))
        .await
        .expect(200);
    let fr = id(&site_spaces["items"][1]);
    app.patch(
        &w.admin,
        &format!("{base}/site-spaces/{fr}"),
        json!({ "condition": "visitor.claims.unsigned.lang == 'fr'" }),
    )
    .await
    .expect(200);
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let (_, _, body) = fetch(&app, &path, &[]).await;
    assert!(!body.contains("Guide en français"), "{body}");
    let (status, h, body) = fetch(&app, &format!("{path}?visitor.lang=fr"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("Guide en français"), "{body}");
}

#[tokio::test]
async fn sites_search_their_visible_pages() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, base) = site(&app, &w, &[&space], "public").await;

    // Every page's header holds the search form, sent to the site space's `~search`.
    let (status, h, page) = fetch(&app, &format!("{base}usage"), &[]).await;
    assert_html(status, &h, 200, &page);
    let header = &page[page.find("<header").unwrap()..page.find("</header>").unwrap()];
    assert!(
        header.contains(&format!(
            "role=\"search\" action=\"{base}~search\" method=\"get\""
        )),
        "{header}"
    );
    assert!(header.contains("<label for=\"search-q\""), "{header}");
    assert!(
        header.contains("id=\"search-q\" type=\"search\" name=\"q\""),
        "{header}"
    );

    // A word of a visible page: a link to its published URL, with its excerpt.
    let (status, h, body) = fetch(&app, &format!("{base}~search?q=welcome"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(
        body.contains(&format!("<a href=\"{base}intro\">Intro</a>")),
        "{body}"
    );
    // The first section's text starts with the page's description.
    assert!(body.contains("<p>Start here Welcome.</p>"), "{body}");
    assert!(body.contains("<meta name=\"robots\" content=\"noindex\">"));
    assert!(body.contains("value=\"welcome\""), "{body}");

    // A word only a hidden page holds finds nothing.
    let (status, h, body) = fetch(&app, &format!("{base}~search?q=hidden"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(!body.contains(&format!("{base}secret")), "{body}");
    assert!(body.contains("No results for “hidden”"), "{body}");

    // A word under a heading: the link carries the heading's anchor, which the page has.
    let (_, _, body) = fetch(&app, &format!("{base}~search?q=run"), &[]).await;
    assert!(
        body.contains(&format!("href=\"{base}intro#setup\"")),
        "{body}"
    );
    let (_, _, intro) = fetch(&app, &format!("{base}intro"), &[]).await;
    assert!(intro.contains("id=\"setup\""), "{intro}");

    // Hostile query text is echoed escaped, in the box and in the message.
    let (status, h, body) = fetch(
        &app,
        &format!("{base}~search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E"),
        &[],
    )
    .await;
    assert_html(status, &h, 200, &body);
    assert!(!body.contains("<script>alert"), "{body}");
    assert!(
        body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{body}"
    );

    // No query: the empty form. Too long a query: a message, not an error.
    let (status, h, body) = fetch(&app, &format!("{base}~search"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("id=\"search-page-q\"") && !body.contains("search-results"));
    let long = "a".repeat(600);
    let (status, h, body) = fetch(&app, &format!("{base}~search?q={long}"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("too long"), "{body}");

    // JSON for the script: the same hit.
    let (status, h, body) = fetch(&app, &format!("{base}~search?q=welcome&format=json"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(h[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v,
        json!({ "items": [{ "title": "Intro", "url": format!("{base}intro"), "excerpt": "Start here Welcome." }] })
    );
    let (_, _, body) = fetch(&app, &format!("{base}~search?q=hidden&format=json"), &[]).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({ "items": [] })
    );
}

#[tokio::test]
async fn site_search_follows_the_visitor_s_conditions() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    write(
        &app,
        &w,
        &space,
        json!([
            { "operation": "insert_page", "title": "Open", "document": { "markdown": "For all." } },
            { "operation": "insert_page", "title": "Beta", "condition": "visitor.claims.unsigned.beta === true",
              "document": { "markdown": "Walrus mode." } }
        ]),
    )
    .await;
    let (_, base) = site(&app, &w, &[&space], "public").await;
    let (_, _, body) = fetch(&app, &format!("{base}~search?q=walrus"), &[]).await;
    assert!(!body.contains(&format!("{base}beta")), "{body}");
    let (_, _, body) = fetch(
        &app,
        &format!("{base}~search?q=walrus&visitor.beta=true"),
        &[],
    )
    .await;
    assert!(
        body.contains(&format!("<a href=\"{base}beta\">Beta</a>")),
        "{body}"
    );
}

/// Processes `text` into the organization's spec `slug`.
async fn publish_spec(app: &TestApp, w: &World, slug: &str, text: &str) {
    let path = format!("/v1/orgs/{}/openapi/{slug}", w.org);
    app.put(&w.admin, &path, json!({ "source": { "text": text } }))
        .await;
    for _ in 0..400 {
        quire_server::domain::jobs::run_due(&app.state)
            .await
            .unwrap();
        let spec = app.get(&w.admin, &path).await.expect(200);
        if spec["processingState"] == "complete" {
            assert!(spec.get("lastProcessErrorCode").is_none(), "{spec}");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("spec {slug} was never processed");
}

#[tokio::test]
async fn embedded_operations_render_from_the_spec_s_latest_version() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let spec = |summary: &str| {
        json!({
            "openapi": "3.1.0",
            "info": { "title": "Pets", "version": "1" },
            "paths": { "/pets/{petId}": { "get": {
                "summary": summary,
                "parameters": [{ "name": "petId", "in": "path", "required": true,
                                 "description": "<img src=x onerror=alert(1)>", "schema": { "type": "string" } }],
                "responses": { "200": { "description": "The pet", "content": { "application/json": {
                    "schema": { "$ref": "#/components/schemas/Pet" } } } } }
            } } },
            "components": { "schemas": { "Pet": { "type": "object", "required": ["name"], "properties": {
                "name": { "type": "string", "example": "Rex" },
                "parent": { "$ref": "#/components/schemas/Pet" }
            } } } }
        })
        .to_string()
    };
    publish_spec(&app, &w, "pets", &spec("Get a <script>pet</script>")).await;
    let space = app.space(&w.admin, &w.org, "API", None).await;
    write(
        &app,
        &w,
        &space,
        json!([{ "operation": "insert_page", "title": "Pets", "document": { "markdown":
            "Read a pet.\n\n{% openapi-operation spec=\"pets\" path=\"/pets/{petId}\" method=\"get\" %}\n[OpenAPI pets](https://example.com/pets.json)\n{% endopenapi-operation %}\n\n{% openapi-operation spec=\"nope\" path=\"/x\" method=\"get\" %}\n[OpenAPI nope](https://example.com/nope.json)\n{% endopenapi-operation %}\n"
        } }]),
    )
    .await;
    let (_, base) = site(&app, &w, &[&space], "public").await;
    let (status, h, body) = fetch(&app, &format!("{base}pets"), &[]).await;
    assert_html(status, &h, 200, &body);
    assert!(body.contains("<span class=\"openapi-method method-get\">GET</span> <code class=\"openapi-path\">/pets/{petId}</code>"), "{body}");
    assert!(
        body.contains("Get a &lt;script&gt;pet&lt;/script&gt;"),
        "{body}"
    );
    assert!(body.contains("<code>petId</code>"), "{body}");
    assert!(
        body.contains("<span class=\"openapi-status\">200</span> The pet"),
        "{body}"
    );
    assert!(body.contains("<code>name</code> <span class=\"openapi-type\">string</span> <span class=\"openapi-required\">required</span>"), "{body}");
    assert!(body.contains("Pet (recursive)"), "{body}");
    assert!(
        body.contains("&quot;Rex&quot;"),
        "an example from the schema: {body}"
    );
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(!body.contains("<script>pet"), "{body}");
    // The unknown spec keeps its placeholder.
    assert!(body.contains("data-openapi-spec=\"nope\""), "{body}");
    let etag = h["etag"].to_str().unwrap().to_string();

    // A new version of the spec shows at once, under a new tag.
    publish_spec(&app, &w, "pets", &spec("Fetch one pet")).await;
    let (status, h, body) = fetch(&app, &format!("{base}pets"), &[("if-none-match", &etag)]).await;
    assert_eq!(status, 200);
    assert_ne!(h["etag"].to_str().unwrap(), etag);
    assert!(body.contains("Fetch one pet"), "{body}");
}

#[tokio::test]
async fn large_trees_list_the_current_branch_only() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Big", None).await;
    // 35 chapters of ten pages (350 listed pages), five chapters to a change request.
    for batch in 0..7 {
        let mut changes = Vec::new();
        for c in batch * 5..batch * 5 + 5 {
            changes.push(json!({ "operation": "insert_page", "ref": format!("c{c}"),
                "title": format!("Chapter {c}"), "document": { "markdown": "A chapter." } }));
            for p in 0..9 {
                changes.push(json!({ "operation": "insert_page", "into": format!("c{c}"),
                    "title": format!("Topic {c}-{p}"), "document": { "markdown": "A topic." } }));
            }
        }
        write(&app, &w, &space, json!(changes)).await;
    }
    let (_, base) = site(&app, &w, &[&space], "public").await;

    let (status, h, body) = fetch(&app, &format!("{base}chapter-20/topic-20-4"), &[]).await;
    assert_html(status, &h, 200, &body);
    let nav = sidebar(&body);
    // Every chapter, the current chapter's pages, no other chapter's pages.
    for c in 0..35 {
        assert!(
            nav.contains(&format!(">Chapter {c}</a>")),
            "chapter {c}: {nav}"
        );
    }
    for p in 0..9 {
        assert!(nav.contains(&format!(">Topic 20-{p}</a>")), "{nav}");
    }
    assert!(
        nav.contains(&format!(
            "href=\"{base}chapter-20/topic-20-4\" aria-current=\"page\""
        )),
        "{nav}"
    );
    assert!(!nav.contains("Topic 3-"), "{nav}");
    // Navigation beyond the sidebar still reaches every page: previous and next.
    assert!(
        body.contains(&format!(
            "rel=\"next\" href=\"{base}chapter-20/topic-20-5\""
        )),
        "{body}"
    );
    // A chapter's own page opens its branch.
    let (_, _, body) = fetch(&app, &format!("{base}chapter-3"), &[]).await;
    let nav = sidebar(&body);
    assert!(
        nav.contains(">Topic 3-8</a>") && !nav.contains("Topic 20-"),
        "{nav}"
    );
}

#[tokio::test]
async fn a_repeat_visit_follows_the_newest_revision() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, base) = site(&app, &w, &[&space], "public").await;
    let (status, _, body) = fetch(&app, &format!("{base}usage"), &[]).await;
    assert_eq!(status, 200);
    assert!(body.contains("Use it."), "{body}");
    let (status, _, _) = fetch(&app, &format!("{base}later"), &[]).await;
    assert_eq!(status, 404);

    // The page moves under a new path, and a new page takes a path that was a 404.
    let pages = app
        .get(&w.admin, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let usage = pages["pages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == "Usage")
        .map(id)
        .unwrap();
    write(
        &app,
        &w,
        &space,
        json!([
            { "operation": "update_page", "page": usage, "slug": "using" },
            { "operation": "insert_page", "title": "Later", "document": { "markdown": "Written later." } }
        ]),
    )
    .await;
    let (status, _, _) = fetch(&app, &format!("{base}usage"), &[]).await;
    assert_eq!(status, 404);
    let (status, _, body) = fetch(&app, &format!("{base}using"), &[]).await;
    assert_eq!(status, 200);
    assert!(body.contains("Use it."), "{body}");
    let (status, _, body) = fetch(&app, &format!("{base}later"), &[]).await;
    assert_eq!(status, 200);
    assert!(body.contains("Written later."), "{body}");
}

/// What a published page reads of its site (its row, structure and visitor key) is cached
/// like every access decision: the node that changes it serves the change at once, another
/// node once the cache's bound has passed.
#[tokio::test]
async fn site_changes_reach_every_node_within_the_cache_bound() {
    use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
    let app = TestApp::start().await;
    let other = app.another_node().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (site_id, path) = site(&app, &w, &[&space], "public").await;
    let base = format!("/v1/orgs/{}/sites/{site_id}", w.org);
    let bound = other.config.access_cache_ms as i64 + 1;
    let status = |node: &TestApp, path: String| {
        let node_base = node.base.clone();
        async move {
            let res = reqwest::get(format!("{node_base}{path}")).await.unwrap();
            res.status().as_u16()
        }
    };
    for node in [&app, &other] {
        assert_eq!(status(node, path.clone()).await, 200);
    }

    // Unpublished.
    app.post(&w.admin, &format!("{base}/unpublish"), json!({}))
        .await
        .expect(200);
    assert_eq!(status(&app, path.clone()).await, 404);
    other.clock.advance_ms(bound);
    assert_eq!(status(&other, path.clone()).await, 404);

    // Published again, for visitors with a token only.
    app.patch(&w.admin, &base, json!({ "visibility": "visitor-auth" }))
        .await
        .expect(200);
    app.post(&w.admin, &format!("{base}/publish"), json!({}))
        .await
        .expect(200);
    let key = |body: Value| body["privateKey"].as_str().unwrap().to_string();
    let old = key(app
        .get(&w.admin, &format!("{base}/publishing/auth"))
        .await
        .expect(200));
    let exp = app.state.now() / 1000 + 600;
    let token = |key: &str| {
        encode(
            &Header::new(Algorithm::HS256),
            &json!({ "exp": exp }),
            &EncodingKey::from_secret(key.as_bytes()),
        )
        .unwrap()
    };
    let with_old = format!("{path}?jwt_token={}", token(&old));
    assert_eq!(status(&app, path.clone()).await, 404);
    assert_eq!(status(&app, with_old.clone()).await, 200);
    other.clock.advance_ms(bound);
    assert_eq!(status(&other, with_old.clone()).await, 200);

    // A regenerated key refuses the old key's tokens.
    let new = key(app
        .post(
            &w.admin,
            &format!("{base}/publishing/auth/regenerate"),
            json!({}),
        )
        .await
        .expect(200));
    let with_new = format!("{path}?jwt_token={}", token(&new));
    assert_eq!(status(&app, with_old.clone()).await, 404);
    assert_eq!(status(&app, with_new.clone()).await, 200);
    other.clock.advance_ms(bound);
    assert_eq!(status(&other, with_old).await, 404);
    assert_eq!(status(&other, with_new).await, 200);
}

/// The root of `space`'s current revision and its page tree as stored by a visit (waited
/// for: the tree is stored in the background).
async fn stored_tree_of(
    app: &TestApp,
    w: &World,
    space: &str,
) -> (String, std::sync::Arc<quire_content::model::Revision>) {
    use quire_server::domain::content;
    let revision = app
        .get(&w.admin, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .as_str()
        .unwrap()
        .to_string();
    let root = content::revision_row(&app.state, space, &revision)
        .await
        .unwrap()
        .unwrap()
        .root
        .clone();
    for _ in 0..100 {
        if let Some(tree) = content::stored_tree(&app.state, space, &root).await {
            return (root, tree);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the page tree of {space} is not stored");
}

/// After a restart, a page of a large revision is rendered from the stored page tree and its
/// own body, and reads exactly as when the whole revision is loaded.
#[tokio::test]
async fn a_first_page_after_a_restart_renders_from_the_stored_tree() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, path) = site(&app, &w, &[&space], "public").await;
    let page = format!("{path}intro/install");
    let (status, _, _) = fetch(&app, &page, &[]).await;
    assert_eq!(status, 200);
    // The visit stored the published revision's page tree.
    let (root, tree) = stored_tree_of(&app, &w, &space).await;
    let bodies: Vec<String> = tree
        .flatten()
        .iter()
        .filter_map(|f| match &f.page.kind {
            quire_content::model::PageKind::Document(d) => Some(d.markdown.clone()),
            _ => None,
        })
        .collect();
    assert!(!bodies.is_empty() && bodies.iter().all(String::is_empty));

    // A node that has loaded nothing (as after a restart) answers from the tree.
    let other = app.another_node().await;
    assert_eq!(other.state.content.renders_from_trees(), 0);
    let (status, h, from_tree) = fetch(&other, &page, &[]).await;
    assert_html(status, &h, 200, &from_tree);
    assert_eq!(other.state.content.renders_from_trees(), 1);
    assert!(from_tree.contains("Install it."), "{from_tree}");
    assert!(sidebar(&from_tree).contains("Usage"), "{from_tree}");
    // Once the whole revision is loaded, the same page rendered again is the same page.
    for _ in 0..100 {
        if other.state.content.revisions.contains_key(&root) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(other.state.content.revisions.contains_key(&root));
    other.state.content.pages.invalidate_all();
    let (_, _, whole) = fetch(&other, &page, &[]).await;
    assert_eq!(from_tree, whole);
}

/// A burst of first visits on a node that holds none of the revision (as after a restart)
/// answers from the stored page tree, read once for all of them (shared by the visits that
/// ask at the same time, then kept while the revision loads), and every visit gets the page
/// the node with the revision loaded gives.
#[tokio::test]
async fn a_burst_of_first_visits_shares_one_reading_of_the_stored_tree() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, path) = site(&app, &w, &[&space], "public").await;
    let page = format!("{path}intro/install");
    let (status, _, whole) = fetch(&app, &page, &[]).await;
    assert_eq!(status, 200);
    stored_tree_of(&app, &w, &space).await;
    let other = app.another_node().await;
    let visits = (0..12).map(|_| fetch(&other, &page, &[]));
    for (status, h, html) in futures_util::future::join_all(visits).await {
        assert_html(status, &h, 200, &html);
        // The same page as the node with the revision loaded gives (from its own address).
        assert_eq!(html, whole.replace(&app.base, &other.base));
    }
    // The first visits answered from the tree (later ones may find the revision loaded),
    // read once: at the same time through one reading, later from the tree kept meanwhile.
    assert!(other.state.content.renders_from_trees() >= 1);
    assert_eq!(other.state.content.decodes(true), 1);
}

/// A page's links to other pages and its files resolve to the site's URLs; the files are
/// served from the site so that none can run: images inline, anything else an attachment,
/// both with `nosniff` and a sandboxing policy.
#[tokio::test]
async fn page_links_and_files_resolve_to_the_site_and_files_cannot_run() {
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let pages = app
        .get(&w.admin, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let intro = id(&pages["pages"][0]);
    let cr = open_cr(&app, &w, &space).await;
    let content = format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false");
    let script = "PGh0bWw+PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0PjwvaHRtbD4=";
    let files = app
        .post(
            &w.admin,
            &content,
            json!({ "changes": [{ "operation": "insert_files", "files": [
                { "base64": PNG, "name": "dot.png", "contentType": "image/png" },
                { "base64": script, "name": "x.html", "contentType": "text/html" }
            ] }] }),
        )
        .await
        .expect(200);
    let (png, html) = (
        id(&files["insertedFiles"][0]),
        id(&files["insertedFiles"][1]),
    );
    let markdown = format!(
        "See [the intro](/pages/{intro}).\n\n![A dot](/files/{png})\n\n{{% file src=\"/files/{html}\" %}}\n"
    );
    app.post(
        &w.admin,
        &content,
        json!({ "changes": [{ "operation": "insert_page", "title": "Media", "document": { "markdown": markdown } }] }),
    )
    .await
    .expect(200);
    merge(&app, &w, &space, &cr).await;
    let (_, base) = site(&app, &w, &[&space], "public").await;

    let (status, h, body) = fetch(&app, &format!("{base}media"), &[]).await;
    assert_html(status, &h, 200, &body);
    let main = &body[body.find("<main").unwrap()..body.find("</main>").unwrap()];
    assert!(main.contains(&format!("href=\"{base}intro\"")), "{main}");
    let image = format!("{base}~files/{png}/dot.png");
    let script = format!("{base}~files/{html}/x.html");
    assert!(main.contains(&image) && main.contains(&script), "{main}");

    let (status, h, _) = fetch(&app, &image, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(h[CONTENT_TYPE], "image/png");
    assert_eq!(h["content-disposition"], "inline; filename=\"dot.png\"");
    let (status, h, text) = fetch(&app, &script, &[]).await;
    assert_eq!(status, 200);
    assert!(text.contains("<script>"), "the bytes as uploaded");
    assert_eq!(h["content-disposition"], "attachment; filename=\"x.html\"");
    for (_, h, _) in [
        fetch(&app, &image, &[]).await,
        fetch(&app, &script, &[]).await,
    ] {
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h[CONTENT_SECURITY_POLICY], "default-src 'none'; sandbox");
    }
}

/// The pruning of derived bytes keeps what serves the current revision, the stored page
/// tree sites read after a restart and the stored page listing, however old, and removes
/// the rest once a day old.
#[tokio::test]
async fn pruning_keeps_the_current_revisions_tree_and_listing() {
    use quire_server::domain::content::{self, DERIVED_GRACE_MS};
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = guide(&app, &w, "Guide").await;
    let (_, path) = site(&app, &w, &[&space], "public").await;
    let (status, _, _) = fetch(&app, &format!("{path}intro/install"), &[]).await;
    assert_eq!(status, 200);
    stored_tree_of(&app, &w, &space).await;
    app.get(&w.admin, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    app.state
        .blobs
        .put_derived(&space, "left-over", bytes::Bytes::from_static(b"old"))
        .await
        .unwrap();
    let dir = app.config.data_dir.join("blobs/derived").join(&space);
    let files = crate::content::derived_files(&dir, 3).await;
    for file in &files {
        crate::harness::age_file(file, DERIVED_GRACE_MS + 60_000);
    }
    assert_eq!(content::prune_derived(&app.state, &space).await.unwrap(), 1);
    let left = crate::content::derived_files(&dir, 2).await;
    assert!(left.iter().all(|p| !p.ends_with("left-over")), "{left:?}");
    // A node that has read nothing still finds the tree.
    let other = app.another_node().await;
    let root = stored_tree_of(&other, &w, &space).await.0;
    assert!(!root.is_empty());
}

/// Renders of one organization's pages waiting for their turn: `n` requests of its page
/// `path`, each with a new value of a claim the page reads (so each is a render of its own).
fn flood(app: &TestApp, path: &str, n: usize) -> Vec<tokio::task::JoinHandle<(u16, String)>> {
    (0..n)
        .map(|i| {
            let (base, path) = (app.base.clone(), path.to_string());
            tokio::spawn(async move {
                let res = reqwest::get(format!("{base}{path}?visitor.lang=v{i}"))
                    .await
                    .expect("request sent");
                (res.status().as_u16(), res.text().await.unwrap())
            })
        })
        .collect()
}

/// Waits until `org` has `n` renders waiting (a bound on the wait only guards the suite
/// against a hang; nothing here is timed).
async fn until_waiting(app: &TestApp, org: &str, n: usize) {
    for _ in 0..6000 {
        if app.state.renders.waiting_for(org) == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!(
        "{} renders of {org} waiting, not {n}",
        app.state.renders.waiting_for(org)
    );
}

/// `f`'s answer, or a failure rather than a suite that hangs when it never comes.
async fn unless_stuck<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(std::time::Duration::from_secs(60), f)
        .await
        .expect("answered while the flood waits")
}

#[tokio::test]
async fn a_flood_of_renders_on_one_organization_leaves_others_their_turn() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    // Organization `Acme` publishes a page each new value of `lang` renders anew.
    let space = app.space(&w.admin, &w.org, "Reference", None).await;
    write(
        &app,
        &w,
        &space,
        json!([{ "operation": "insert_page", "title": "Reference", "document": { "markdown":
            "Reference.\n\n{% if visitor.claims.unsigned.lang == \"fr\" %}\nFrançais.\n{% endif %}\n" } }]),
    )
    .await;
    let (_, flooded) = site(&app, &w, &[&space], "public").await;
    let flooded = format!("{flooded}reference");
    // Another organization publishes the guide.
    let other = World {
        admin: w.admin.clone(),
        org: app.org(&w.admin, "Neighbour").await,
    };
    let guide = guide(&app, &other, "Guide").await;
    let (_, neighbour) = site(&app, &other, &[&guide], "public").await;
    // Each site read once, so that what follows waits for render slots only.
    for path in [flooded.clone(), format!("{neighbour}intro")] {
        assert_eq!(fetch(&app, &path, &[]).await.0, 200);
    }
    let renders = &app.state.renders;
    let free = renders.free();
    assert!(free >= 2, "{free} render slots");

    // The flood's renders under way: `Acme` holds its share, and 16 more of its renders wait.
    let held: Vec<_> = (0..renders.per_key())
        .map(|_| renders.take(&w.org).expect("a slot"))
        .collect();
    let mut held = futures_util::future::join_all(held).await;
    let waiting = flood(&app, &flooded, 16);
    until_waiting(&app, &w.org, 16).await;

    // Another organization's first render takes the slot left free, ahead of the queue.
    let (status, _, body) = unless_stuck(fetch(&app, &format!("{neighbour}usage"), &[])).await;
    assert_eq!(status, 200);
    assert!(body.contains("Use it."), "{body}");
    assert_eq!(renders.waiting_for(&w.org), 16);

    // Every slot busy: the next one that frees goes to the other organization's page, not
    // to the flood queued before it.
    let busy = (0..renders.free())
        .map(|i| renders.take(&format!("elsewhere{i}")).expect("a slot"))
        .collect::<Vec<_>>();
    let mut busy = futures_util::future::join_all(busy).await;
    assert_eq!(renders.free(), 0);
    let late = {
        let url = format!("{}{neighbour}intro/install", app.base);
        tokio::spawn(async move {
            let res = reqwest::get(url).await.expect("request sent");
            (res.status().as_u16(), res.text().await.unwrap())
        })
    };
    until_waiting(&app, &other.org, 1).await;
    busy.pop();
    let (status, body) = unless_stuck(late).await.unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("Install it."), "{body}");
    assert_eq!(renders.waiting_for(&w.org), 16);
    assert!(waiting.iter().all(|t| !t.is_finished()));

    // The flood drains once its slots are let go, and every slot comes back.
    held.clear();
    for t in waiting {
        let (status, body) = t.await.unwrap();
        assert_eq!(status, 200);
        assert!(body.contains("Reference."), "{body}");
    }
    assert_eq!((renders.free(), renders.held(&w.org)), (free, 0));
}
