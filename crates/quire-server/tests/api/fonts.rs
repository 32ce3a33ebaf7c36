//! Signed uploads (`generateStorageUploadURL`, `PUT /storage/{key}`) and custom fonts
//! (`ORG/fonts`), and a published site using one.

use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

struct World {
    admin: Persona,
    org: String,
    space: String,
}

/// An organization with a space of one merged page.
async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let space = app
        .space_with_pages(&admin, &org, "Guide", &[("Intro", "Welcome.")])
        .await;
    World { admin, org, space }
}

/// Bytes that pass for a WOFF2 file (its magic, then anything).
fn woff2(len: usize) -> Vec<u8> {
    let mut b = b"wOF2".to_vec();
    b.resize(len, 7);
    b
}

/// An upload URL for a font file of `size` bytes of `content_type`: (key, url).
async fn upload_url(
    app: &TestApp,
    who: &Persona,
    org: &str,
    content_type: &str,
    size: u64,
) -> (String, String) {
    let got = app
        .post(
            who,
            &format!("/v1/orgs/{org}/storage/upload"),
            json!({
                "file": { "name": "Brand.woff2", "type": content_type, "size": size },
                "kind": "customization_font"
            }),
        )
        .await
        .expect(201);
    assert_eq!(got["object"], json!("storage-signed-url"));
    (
        got["key"].as_str().unwrap().to_string(),
        got["url"].as_str().unwrap().to_string(),
    )
}

/// A `PUT` of `bytes` to an absolute URL, without a token: (status, body).
async fn put(url: &str, bytes: Vec<u8>) -> (u16, Value) {
    let res = reqwest::Client::new()
        .put(url)
        .header("content-type", "font/woff2")
        .body(bytes)
        .send()
        .await
        .expect("request sent");
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A GET of an absolute URL or a path of the server, with these headers: (status, headers,
/// bytes).
async fn fetch(
    app: &TestApp,
    url: &str,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let url = if url.starts_with("http") {
        url.to_string()
    } else {
        format!("{}{url}", app.base)
    };
    let mut req = reqwest::Client::new().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.expect("request sent");
    let status = res.status().as_u16();
    let h = res.headers().clone();
    (status, h, res.bytes().await.unwrap().to_vec())
}

/// A finished font upload of `bytes`: its key.
async fn uploaded(app: &TestApp, who: &Persona, org: &str, bytes: Vec<u8>) -> String {
    let (key, url) = upload_url(app, who, org, "font/woff2", bytes.len() as u64).await;
    let (status, body) = put(&url, bytes).await;
    assert_eq!(status, 200, "{body}");
    key
}

/// The stylesheet URL a page links after the embedded one (the site's theme).
fn theme_url(page: &str) -> String {
    page.split("<link rel=\"stylesheet\" href=\"")
        .nth(2)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no theme stylesheet in {page}"))
        .replace("&amp;", "&")
}

/// The URL of the first `src: url(...)` of a stylesheet.
fn font_src(css: &str) -> String {
    css.split("url(\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no font source in {css}"))
        .to_string()
}

#[tokio::test]
async fn a_font_is_uploaded_created_served_and_used_by_a_published_site() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let bytes = woff2(3000);
    let key = uploaded(&app, &w.admin, &w.org, bytes.clone()).await;
    assert!(key.len() <= 512 && key.contains(&w.org), "{key}");

    let fonts = format!("/v1/orgs/{}/fonts", w.org);
    let font = app
        .put(
            &w.admin,
            &fonts,
            json!({ "fontFamily": "Brand Sans", "fontFaces": [{ "weight": 400, "storageKey": key }] }),
        )
        .await
        .expect(201);
    let font_id = id(&font);
    assert_eq!(font["custom"], json!(true));
    assert_eq!(font["fontFamily"], json!("Brand Sans"));
    assert_eq!(font["permissions"]["edit"], json!(true));
    let source = &font["fontFaces"][0]["sources"][0];
    assert_eq!(source["format"], json!("woff2"));
    assert_eq!(font["fontFaces"][0]["weight"], json!(400));

    // The source URL serves the bytes, public and immutable.
    let (status, h, got) = fetch(&app, source["url"].as_str().unwrap(), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(got, bytes);
    assert_eq!(h["content-type"], "font/woff2");
    assert!(h["cache-control"].to_str().unwrap().contains("immutable"));

    let listed = app.get(&w.admin, &fonts).await.expect(200);
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        app.get(&w.admin, &format!("{fonts}/{font_id}"))
            .await
            .expect(200)["id"],
        json!(font_id)
    );

    // A site on its own hostname whose customization names the font.
    let sites = format!("/v1/orgs/{}/sites", w.org);
    let site = id(&app
        .post(
            &w.admin,
            &sites,
            json!({ "title": "Docs", "spaces": [w.space] }),
        )
        .await
        .expect(201));
    app.patch(
        &w.admin,
        &format!("{sites}/{site}"),
        json!({ "hostname": "docs.example.com" }),
    )
    .await
    .expect(200);
    crate::dns::prove(&app, &w.admin, &site, "docs.example.com").await;
    let mut definition = font.clone();
    definition.as_object_mut().unwrap().remove("permissions");
    app.put(
        &w.admin,
        &format!("{sites}/{site}/customization"),
        json!({ "styling": { "font": definition } }),
    )
    .await
    .expect(200);
    app.post(&w.admin, &format!("{sites}/{site}/publish"), json!({}))
        .await
        .expect(200);

    for (host, root) in [
        (None, format!("/sites/{site}/")),
        (Some("docs.example.com"), "/".to_string()),
    ] {
        let headers: Vec<(&str, &str)> = host.iter().map(|h| ("host", *h)).collect();
        let (status, h, page) = fetch(&app, &root, &headers).await;
        let page = String::from_utf8(page).unwrap();
        assert_eq!(status, 200, "{page}");
        // The page's policy keeps fonts on the site's own origin.
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("font-src 'self'"), "{csp}");
        let theme = theme_url(&page);
        assert!(theme.starts_with(&root), "{theme}");
        let (status, _, css) = fetch(&app, &theme, &headers).await;
        let css = String::from_utf8(css).unwrap();
        assert_eq!(status, 200, "{css}");
        assert!(css.contains("@font-face"), "{css}");
        assert!(css.contains(&format!("quire-font-{font_id}")), "{css}");
        assert!(css.contains("format(\"woff2\")"), "{css}");
        let src = font_src(&css);
        assert!(src.starts_with(&format!("{root}~fonts/")), "{src}");
        let (status, h, got) = fetch(&app, &src, &headers).await;
        assert_eq!(status, 200);
        assert_eq!(got, bytes);
        assert_eq!(h["content-type"], "font/woff2");
        assert!(h["cache-control"].to_str().unwrap().contains("immutable"));
        // Another name under `~fonts/` is no file of the site.
        let (status, _, _) = fetch(&app, &format!("{root}~fonts/nothing"), &headers).await;
        assert_eq!(status, 404);
    }

    // Deleted, the font is gone from the site, which shows its default font again.
    app.delete(&w.admin, &format!("{fonts}/{font_id}"))
        .await
        .expect(205);
    app.delete(&w.admin, &format!("{fonts}/{font_id}"))
        .await
        .expect(204);
    app.get(&w.admin, &format!("{fonts}/{font_id}"))
        .await
        .expect_error(404);
    let (_, _, page) = fetch(&app, &format!("/sites/{site}/"), &[]).await;
    let theme = theme_url(&String::from_utf8(page).unwrap());
    let (status, _, css) = fetch(&app, &theme, &[]).await;
    let css = String::from_utf8(css).unwrap();
    assert_eq!(status, 200);
    assert!(
        !css.contains("@font-face") && !css.contains("quire-font-"),
        "{css}"
    );
}

#[tokio::test]
async fn upload_urls_take_only_what_they_were_made_for() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let upload = format!("/v1/orgs/{}/storage/upload", w.org);
    let ask = |file: Value, kind: &str| json!({ "file": file, "kind": kind });
    // What the URL may be made for.
    for (body, field) in [
        (
            ask(
                json!({ "name": "a.woff2", "type": "font/woff2", "size": 10 }),
                "picture",
            ),
            "`kind`",
        ),
        (
            ask(
                json!({ "name": "a.ttf", "type": "font/ttf", "size": 10 }),
                "customization_font",
            ),
            "`file.type`",
        ),
        (
            ask(
                json!({ "name": "a.woff2", "type": "font/woff2", "size": 5 * 1024 * 1024 + 1 }),
                "customization_font",
            ),
            "`file.size`",
        ),
        (
            ask(
                json!({ "name": "a.woff2", "type": "font/woff2", "size": 0 }),
                "customization_font",
            ),
            "`file.size`",
        ),
        (
            ask(
                json!({ "name": "a.woff2", "type": "font/woff2", "size": 1.5 }),
                "customization_font",
            ),
            "`file.size`",
        ),
        (
            ask(
                json!({ "name": "", "type": "font/woff2", "size": 10 }),
                "customization_font",
            ),
            "`file.name`",
        ),
    ] {
        let message = app.post(&w.admin, &upload, body).await.expect_error(400);
        assert!(message.contains(field), "{message}");
    }

    // A signature that is not the server's, or none.
    let (_, url) = upload_url(&app, &w.admin, &w.org, "font/woff2", 8).await;
    let (base, _) = url.split_once("&signature=").unwrap();
    let (status, body) = put(
        &format!("{base}&signature=AAAAAAAAAAAAAAAAAAAAAA"),
        woff2(8),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], json!(403));
    let (status, _) = put(base, woff2(8)).await;
    assert_eq!(status, 403);
    // The expiry is signed too.
    let forged = url.replacen("expires=", "expires=9", 1);
    assert_eq!(put(&forged, woff2(8)).await.0, 403);

    // More bytes than declared, fewer, and bytes that are no WOFF2 font.
    let (status, body) = put(&url, woff2(9)).await;
    assert_eq!(status, 413, "{body}");
    let (status, body) = put(&url, woff2(7)).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = put(&url, b"wOFF\0\0\0\0".to_vec()).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("woff2"),
        "{body}"
    );
    // Then the right bytes, once.
    assert_eq!(put(&url, woff2(8)).await.0, 200);
    let (status, body) = put(&url, woff2(8)).await;
    assert_eq!(status, 409, "{body}");

    // A WOFF file is checked for its own magic.
    let (_, url) = upload_url(&app, &w.admin, &w.org, "font/woff", 8).await;
    assert_eq!(put(&url, woff2(8)).await.0, 400);
    let mut woff = b"wOFF".to_vec();
    woff.resize(8, 1);
    assert_eq!(put(&url, woff).await.0, 200);

    // Expired after 15 minutes.
    let (_, url) = upload_url(&app, &w.admin, &w.org, "font/woff2", 8).await;
    app.clock.advance_ms(15 * 60 * 1000 + 1);
    let (status, body) = put(&url, woff2(8)).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{body}"
    );

    // An organization's uploads hold at most 200 MiB, counting those whose URL may still
    // be used; a URL that expired unused gives its room back.
    app.clock.advance_ms(15 * 60 * 1000 + 1);
    let most = 5 * 1024 * 1024;
    // Two small files are already there: 39 more of the most fill it.
    for _ in 0..39 {
        upload_url(&app, &w.admin, &w.org, "font/woff2", most).await;
    }
    let message = app
        .post(
            &w.admin,
            &upload,
            ask(
                json!({ "name": "a.woff2", "type": "font/woff2", "size": most }),
                "customization_font",
            ),
        )
        .await
        .expect_error(400);
    assert!(
        message.contains("`file.size`") && message.contains("at most"),
        "{message}"
    );
    app.clock.advance_ms(15 * 60 * 1000 + 1);
    upload_url(&app, &w.admin, &w.org, "font/woff2", most).await;

    // An upload that never came serves nothing.
    let (key, _) = upload_url(&app, &w.admin, &w.org, "font/woff2", 8).await;
    assert_eq!(fetch(&app, &format!("/storage/{key}"), &[]).await.0, 404);
}

#[tokio::test]
async fn fonts_need_a_regular_weight_and_finished_uploads_of_their_organization() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let fonts = format!("/v1/orgs/{}/fonts", w.org);
    let regular = uploaded(&app, &w.admin, &w.org, woff2(100)).await;
    let bold = uploaded(&app, &w.admin, &w.org, woff2(120)).await;
    let face = |weight: i64, key: &str| json!({ "weight": weight, "storageKey": key });

    // No regular weight.
    let message = app
        .put(
            &w.admin,
            &fonts,
            json!({ "fontFamily": "F", "fontFaces": [face(700, &bold)] }),
        )
        .await
        .expect_error(412);
    assert!(
        message.contains("`fontFaces`") && message.contains("400"),
        "{message}"
    );
    // A key nobody uploaded, one whose bytes never came, another organization's.
    let (pending, _) = upload_url(&app, &w.admin, &w.org, "font/woff2", 8).await;
    let outsider = app.persona("outsider").await;
    let elsewhere = app.org(&outsider, "Elsewhere").await;
    let foreign = uploaded(&app, &outsider, &elsewhere, woff2(50)).await;
    for key in ["fonts/nothing/here", pending.as_str(), foreign.as_str()] {
        let message = app
            .put(
                &w.admin,
                &fonts,
                json!({ "fontFamily": "F", "fontFaces": [face(400, key)] }),
            )
            .await
            .expect_error(412);
        assert!(message.contains("`fontFaces[0].storageKey`"), "{message}");
    }
    // Shapes the schema refuses.
    for body in [
        json!({ "fontFamily": "", "fontFaces": [face(400, &regular)] }),
        json!({ "fontFamily": "x".repeat(51), "fontFaces": [face(400, &regular)] }),
        json!({ "fontFamily": "F", "fontFaces": [face(0, &regular)] }),
        json!({ "fontFamily": "F", "fontFaces": [] }),
        json!({ "fontFamily": "F" }),
    ] {
        app.put(&w.admin, &fonts, body).await.expect_error(400);
    }
    assert!(app.get(&w.admin, &fonts).await.expect(200)["items"]
        .as_array()
        .unwrap()
        .is_empty());

    let font = app
        .put(
            &w.admin,
            &fonts,
            json!({ "fontFamily": "F", "fontFaces": [face(400, &regular), face(700, &bold)] }),
        )
        .await
        .expect(201);
    let at = format!("{fonts}/{}", id(&font));
    assert_eq!(font["fontFaces"].as_array().unwrap().len(), 2);
    // `null` removes a weight; the regular one must stay.
    let updated = app
        .post(
            &w.admin,
            &at,
            json!({ "fontFamily": "G", "fontFaces": [{ "weight": 700, "storageKey": null }] }),
        )
        .await
        .expect(201);
    assert_eq!(updated["fontFamily"], json!("G"));
    assert_eq!(updated["fontFaces"].as_array().unwrap().len(), 1);
    let message = app
        .post(
            &w.admin,
            &at,
            json!({ "fontFaces": [{ "weight": 400, "storageKey": null }] }),
        )
        .await
        .expect_error(412);
    assert!(message.contains("400"), "{message}");
    let message = app
        .post(&w.admin, &at, json!({ "fontFaces": [face(300, &foreign)] }))
        .await
        .expect_error(412);
    assert!(message.contains("`fontFaces[0].storageKey`"), "{message}");
    // Unchanged by the refusals; another organization does not see it.
    let got = app.get(&w.admin, &at).await.expect(200);
    assert_eq!(got["fontFamily"], json!("G"));
    assert_eq!(got["fontFaces"][0]["weight"], json!(400));
    app.get(&outsider, &at).await.expect_error(404);
    app.post(
        &w.admin,
        &format!("{fonts}/nothing"),
        json!({ "fontFamily": "H" }),
    )
    .await
    .expect_error(404);

    // A site's customization takes GitBook's fonts by name or a font definition, nothing else.
    let sites = format!("/v1/orgs/{}/sites", w.org);
    let site = id(&app
        .post(
            &w.admin,
            &sites,
            json!({ "title": "Docs", "spaces": [w.space] }),
        )
        .await
        .expect(201));
    let custom = format!("{sites}/{site}/customization");
    for (font, field) in [
        (json!("Comic"), "`styling.font`"),
        (json!(7), "`styling.font`"),
        (
            json!({ "id": "x", "custom": true, "fontFamily": "F", "fontFaces": [] }),
            "`styling.font.fontFaces`",
        ),
        (
            json!({ "id": "x", "custom": true, "fontFamily": "F",
                 "fontFaces": [{ "weight": 400, "sources": [{ "url": "/a", "format": "ttf" }] }] }),
            "`styling.font.fontFaces[0].sources[0].format`",
        ),
    ] {
        let message = app
            .put(&w.admin, &custom, json!({ "styling": { "font": font } }))
            .await
            .expect_error(400);
        assert!(message.contains(field), "{message}");
    }
    app.put(
        &w.admin,
        &custom,
        json!({ "styling": { "font": "Roboto" } }),
    )
    .await
    .expect(200);

    // Members who are not admins read the fonts but may not change them.
    let reader = app.persona("reader").await;
    app.add_member(&w.admin, &w.org, &reader, json!("read"))
        .await;
    let seen = app.get(&reader, &at).await.expect(200);
    assert_eq!(seen["permissions"]["edit"], json!(false));
    app.delete(&reader, &at).await.expect_error(403);
    app.post(
        &reader,
        &format!("/v1/orgs/{}/storage/upload", w.org),
        json!({ "file": { "name": "a.woff2", "type": "font/woff2", "size": 8 }, "kind": "customization_font" }),
    )
    .await
    .expect_error(403);
}

#[tokio::test]
async fn a_backup_restores_uploaded_files_where_they_are_served_from() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let bytes = woff2(64);
    let key = uploaded(&app, &w.admin, &w.org, bytes.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("backup");
    quire_server::admin::backup(&app.config, &to)
        .await
        .expect("backup");
    if app.config.database_url.is_some() {
        // PostgreSQL: the database is dumped by `pg_dump`, outside this test.
        return;
    }
    let restored_dir = tempfile::tempdir().unwrap();
    let target = restored_dir.path().to_path_buf();
    let mut config = app.config.clone();
    config.data_dir = target.clone();
    quire_server::admin::restore(&config, &to)
        .await
        .expect("restore");
    let restored = TestApp::start_with(move |c| c.data_dir = target).await;
    let (status, _, got) = fetch(&restored, &format!("/storage/{key}"), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(got, bytes);
}

#[tokio::test]
async fn files_no_font_uses_are_forgotten_after_a_day_and_uploads_are_counted() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let unused = uploaded(&app, &w.admin, &w.org, woff2(40)).await;
    let used = uploaded(&app, &w.admin, &w.org, woff2(41)).await;
    app.put(
        &w.admin,
        &format!("/v1/orgs/{}/fonts", w.org),
        json!({ "fontFamily": "F", "fontFaces": [{ "weight": 400, "storageKey": used }] }),
    )
    .await
    .expect(201);
    // A day later, the next upload URL forgets the file no font uses, and its bytes.
    app.clock.advance_ms(24 * 3600 * 1000 + 1);
    upload_url(&app, &w.admin, &w.org, "font/woff2", 8).await;
    assert_eq!(fetch(&app, &format!("/storage/{unused}"), &[]).await.0, 404);
    assert_eq!(fetch(&app, &format!("/storage/{used}"), &[]).await.0, 200);
    let message = app
        .put(
            &w.admin,
            &format!("/v1/orgs/{}/fonts", w.org),
            json!({ "fontFamily": "G", "fontFaces": [{ "weight": 400, "storageKey": unused }] }),
        )
        .await
        .expect_error(412);
    assert!(message.contains("storageKey"), "{message}");

    // A file a font takes starts its day again: released by the font 23 hours later, it
    // stays a day from then (a clearing that listed it while a font took it leaves it).
    let late = uploaded(&app, &w.admin, &w.org, woff2(42)).await;
    app.clock.advance_ms(23 * 3600 * 1000);
    let font = app
        .put(
            &w.admin,
            &format!("/v1/orgs/{}/fonts", w.org),
            json!({ "fontFamily": "H", "fontFaces": [{ "weight": 400, "storageKey": late }] }),
        )
        .await
        .expect(201);
    app.delete(
        &w.admin,
        &format!("/v1/orgs/{}/fonts/{}", w.org, font["id"].as_str().unwrap()),
    )
    .await
    .expect(205);
    app.clock.advance_ms(2 * 3600 * 1000);
    upload_url(&app, &w.admin, &w.org, "font/woff2", 8).await;
    assert_eq!(fetch(&app, &format!("/storage/{late}"), &[]).await.0, 200);
    app.clock.advance_ms(23 * 3600 * 1000);
    upload_url(&app, &w.admin, &w.org, "font/woff2", 8).await;
    assert_eq!(fetch(&app, &format!("/storage/{late}"), &[]).await.0, 404);

    // At most 1,000 uploads, URLs not yet used counted (two are there: the used file and
    // the last URL; the others expired unused).
    for _ in 0..998 {
        upload_url(&app, &w.admin, &w.org, "font/woff2", 8).await;
    }
    let message = app
        .post(
            &w.admin,
            &format!("/v1/orgs/{}/storage/upload", w.org),
            json!({ "file": { "name": "a.woff2", "type": "font/woff2", "size": 8 }, "kind": "customization_font" }),
        )
        .await
        .expect_error(400);
    assert!(message.contains("1000 uploads"), "{message}");
}
