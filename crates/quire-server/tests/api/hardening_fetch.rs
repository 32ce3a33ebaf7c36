//! Hardening of downloads by URL (the safe fetcher) and of file serving: no request may make
//! the server reach inside the network, hold unbounded memory, or serve a page that runs.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};
use crate::loopback::{serve, serve_counting, Reply};

fn ok(body: &str) -> Reply {
    Reply::ok("text/plain", body)
}

struct Setup {
    alice: Persona,
    space: String,
    cr: String,
}

async fn setup(app: &TestApp) -> Setup {
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let cr = app.open_change_request(&alice, &space, "files").await;
    Setup { alice, space, cr }
}

async fn insert_url(app: &TestApp, s: &Setup, url: &str) -> crate::harness::Res {
    app.post(
        &s.alice,
        &format!("/v1/spaces/{}/change-requests/{}/content?compat=false", s.space, s.cr),
        json!({ "changes": [{ "operation": "insert_files", "files": [{ "url": url, "name": "f.txt" }] }] }),
    )
    .await
}

async fn files_of(app: &TestApp, s: &Setup) -> Value {
    app.get(
        &s.alice,
        &format!(
            "/v1/spaces/{}/change-requests/{}/content/files",
            s.space, s.cr
        ),
    )
    .await
    .expect(200)["items"]
        .clone()
}

/// Every class of internal address is refused as a literal, and the refusal reads the same
/// as any other failure; nothing is written.
#[tokio::test]
async fn internal_addresses_are_refused() {
    let app = TestApp::start().await;
    let s = setup(&app).await;
    let base = serve(|_| ok("secret")).await;
    let port = base.rsplit(':').next().unwrap().to_string();
    let generic = "`changes[0].files[0].url` could not be fetched.";
    for host in [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[fc00::1]",
        "[fe80::1]",
        "localhost",
    ] {
        let message = insert_url(&app, &s, &format!("http://{host}:{port}/f.txt"))
            .await
            .expect_error(400);
        assert_eq!(message, generic, "{host}");
    }
    assert_eq!(files_of(&app, &s).await, json!([]), "nothing was written");
}

/// With loopback allowed by the operator, a closed port and an open port answering garbage
/// read the same; a redirect to a refused address is refused; too many redirects too.
#[tokio::test]
async fn failures_do_not_tell_what_answered_and_redirects_are_checked() {
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let s = setup(&app).await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let garbage = serve(|_| Reply::Raw(b"SSH-2.0-OpenSSH\r\n".to_vec())).await;
    let a = insert_url(&app, &s, &format!("http://127.0.0.1:{closed}/x"))
        .await
        .expect_error(400);
    let b = insert_url(&app, &s, &format!("{garbage}/x"))
        .await
        .expect_error(400);
    assert_eq!(a, b);
    let hops = serve(|r| match r.path.as_str() {
        "/to-metadata" => Reply::redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-other-loopback" => Reply::redirect("http://127.0.0.2/secret"),
        "/loop" => Reply::redirect("/loop"),
        _ => ok("fine"),
    })
    .await;
    for path in ["/to-metadata", "/to-other-loopback"] {
        let message = insert_url(&app, &s, &format!("{hops}{path}"))
            .await
            .expect_error(400);
        assert_eq!(message, a, "{path}");
    }
    let message = insert_url(&app, &s, &format!("{hops}/loop"))
        .await
        .expect_error(400);
    assert!(message.contains("redirects"), "{message}");
    // An allowed address works, and its bytes are stored.
    let done = insert_url(&app, &s, &format!("{hops}/file.txt"))
        .await
        .expect(200);
    assert_eq!(done["insertedFiles"].as_array().unwrap().len(), 1, "{done}");
}

/// A body without a declared length is streamed and cut off at the cap: the server stops
/// reading long before the sender is done.
#[tokio::test]
async fn streamed_bodies_are_cut_off_at_the_cap() {
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let s = setup(&app).await;
    let total = 64 * 1024 * 1024;
    let (base, written) = serve_counting(move |_| Reply::Stream {
        chunk: 16 * 1024,
        total,
    })
    .await;
    let message = insert_url(&app, &s, &format!("{base}/big"))
        .await
        .expect_error(400);
    assert!(message.contains("larger than"), "{message}");
    // Give the sender a moment to notice the closed connection.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let sent = written.load(Ordering::SeqCst);
    assert!(
        sent < 16 * 1024 * 1024,
        "the server read {sent} bytes of {total}"
    );
    // A declared length over the cap is refused without reading the body.
    let declared = serve(|_| {
        Reply::Raw(
            b"HTTP/1.1 200 OK\r\ncontent-length: 999999999\r\nconnection: close\r\n\r\nxx".to_vec(),
        )
    })
    .await;
    let message = insert_url(&app, &s, &format!("{declared}/big"))
        .await
        .expect_error(400);
    assert!(message.contains("larger than"), "{message}");
}

async fn insert_base64(
    app: &TestApp,
    who: &Persona,
    space: &str,
    cr: &str,
    name: &str,
    ct: &str,
    bytes: &[u8],
) -> Value {
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    let res = app
        .post(
            who,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
            json!({ "changes": [{ "operation": "insert_files", "files": [{ "base64": data, "name": name, "contentType": ct }] }] }),
        )
        .await
        .expect(200);
    res["insertedFiles"][0].clone()
}

/// Files that a browser could run are never served as pages, and each file keeps its own
/// content type even when another space uploaded the same bytes with another type.
#[tokio::test]
async fn files_cannot_run_and_keep_their_own_type() {
    let app = TestApp::start().await;
    let s = setup(&app).await;
    let page = b"<html><script>alert(document.cookie)</script></html>";
    let html = insert_base64(&app, &s.alice, &s.space, &s.cr, "x.html", "text/html", page).await;
    let svg = insert_base64(
        &app,
        &s.alice,
        &s.space,
        &s.cr,
        "x.svg",
        "image/svg+xml",
        b"<svg onload='alert(1)'/>",
    )
    .await;
    for file in [&html, &svg] {
        let res = reqwest::get(file["downloadURL"].as_str().unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let h = res.headers();
        assert!(
            h["content-disposition"]
                .to_str()
                .unwrap()
                .starts_with("attachment"),
            "{h:?}"
        );
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert!(h["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox"));
    }
    // Another space uploads the same bytes as plain text: each file keeps its type.
    let other = app
        .space(&s.alice, &app.org(&s.alice, "Other").await, "Other", None)
        .await;
    let cr2 = app
        .post(
            &s.alice,
            &format!("/v1/spaces/{other}/change-requests"),
            json!({}),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let text = insert_base64(&app, &s.alice, &other, &cr2, "x.txt", "text/plain", page).await;
    let a = reqwest::get(html["downloadURL"].as_str().unwrap())
        .await
        .unwrap();
    let b = reqwest::get(text["downloadURL"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(a.headers()["content-type"], "text/html");
    assert_eq!(b.headers()["content-type"], "text/plain");
    // A script or a style sheet comes back as bytes: `nosniff` then keeps a page of this
    // origin from loading it with `<script src>` or `<link rel=stylesheet>`.
    for (name, ct) in [
        ("x.js", "text/javascript"),
        ("x.mjs", "application/javascript"),
        ("x.css", "text/css"),
    ] {
        let file = insert_base64(&app, &s.alice, &s.space, &s.cr, name, ct, b"alert(1)").await;
        let res = reqwest::get(file["downloadURL"].as_str().unwrap())
            .await
            .unwrap();
        let h = res.headers();
        assert_eq!(h["content-type"], "application/octet-stream", "{name}");
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert!(h["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment"));
        // The file itself keeps the type it was given.
        assert_eq!(file["contentType"], json!(ct), "{file}");
    }
    // A name that is only dots cannot be a link's last segment: refused, naming the field.
    for bad in ["..", ".", "\u{202E}.."] {
        use base64::Engine;
        let message = app
            .post(
                &s.alice,
                &format!(
                    "/v1/spaces/{}/change-requests/{}/content?compat=false",
                    s.space, s.cr
                ),
                json!({ "changes": [{ "operation": "insert_files", "files": [{
                    "base64": base64::engine::general_purpose::STANDARD.encode(b"x"),
                    "name": bad, "contentType": "text/plain" }] }] }),
            )
            .await
            .expect_error(400);
        assert!(message.contains("changes[0].files[0].name"), "{message}");
    }
    // Marks that reorder text are left out of the name it keeps and the name it downloads as.
    let spoof = "invoice\u{202E}fdp.exe";
    let file = insert_base64(&app, &s.alice, &s.space, &s.cr, spoof, "text/plain", b"x").await;
    assert_eq!(file["name"], json!("invoicefdp.exe"));
    let res = reqwest::get(file["downloadURL"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(
        res.headers()["content-disposition"],
        "attachment; filename=\"invoicefdp.exe\""
    );
}

/// A download URL is bound to its space, file and reader: it stops working when the space is
/// deleted or the reader leaves the organization, and no signed part can be changed.
#[tokio::test]
async fn download_urls_follow_the_readers_access() {
    let app = TestApp::start().await;
    let s = setup(&app).await;
    let bob = app.persona("bob").await;
    let org = app
        .get(&s.alice, &format!("/v1/spaces/{}", s.space))
        .await
        .expect(200)["organization"]
        .as_str()
        .unwrap()
        .to_string();
    app.add_member(&s.alice, &org, &bob, json!("read")).await;
    insert_base64(
        &app,
        &s.alice,
        &s.space,
        &s.cr,
        "a.png",
        "image/png",
        b"\x89PNG fake",
    )
    .await;
    let files = app
        .get(
            &bob,
            &format!(
                "/v1/spaces/{}/change-requests/{}/content/files",
                s.space, s.cr
            ),
        )
        .await
        .expect(200);
    let url = files["items"][0]["downloadURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(reqwest::get(&url).await.unwrap().status(), 200);
    for tampered in [
        url.replace("type=image%2Fpng", "type=text%2Fhtml"),
        url.replace(
            &format!("reader={}", bob.id),
            &format!("reader={}", s.alice.id),
        ),
        url.replace("signature=", "signature=x"),
    ] {
        assert_ne!(tampered, url);
        assert_eq!(
            reqwest::get(&tampered).await.unwrap().status(),
            403,
            "{tampered}"
        );
    }
    // The reader leaves: their URL stops working at once on this node.
    app.delete(&s.alice, &format!("/v1/orgs/{org}/members/{}", bob.id))
        .await
        .expect(204);
    assert_eq!(reqwest::get(&url).await.unwrap().status(), 404);
    // The space is deleted: the author's URL stops working too.
    let files = app
        .get(
            &s.alice,
            &format!(
                "/v1/spaces/{}/change-requests/{}/content/files",
                s.space, s.cr
            ),
        )
        .await
        .expect(200);
    let own = files["items"][0]["downloadURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(reqwest::get(&own).await.unwrap().status(), 200);
    app.delete(&s.alice, &format!("/v1/spaces/{}", s.space))
        .await
        .expect(204);
    assert_eq!(reqwest::get(&own).await.unwrap().status(), 404);
}
