//! PDF export through HTTP: the answer is a signed, expiring URL served without a token;
//! the PDF holds the title page, the pages in order with their headings, code, tables,
//! hints, images and non-Latin (Cyrillic) text, read back with poppler's `pdftotext`; a page
//! is rendered to an image with `pdftoppm` and kept as a test artifact. Page content that
//! looks like markup or code is printed as text, never run.

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use crate::harness::{Persona, TestApp};

/// A 4×3 PNG: wider than tall, so the embedded image's size tells it was not resized.
const PNG_4X3: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAEElEQVR4nGM4IScHRww4OQD1xwwxB+utmQAAAABJRU5ErkJggg==";

/// Whether poppler's tools are here; `scripts/test.sh` installs them and then requires them.
fn poppler() -> bool {
    let found = Command::new("pdftotext").arg("-v").output().is_ok()
        && Command::new("pdftoppm").arg("-v").output().is_ok();
    if !found {
        assert!(
            std::env::var("QUIRE_REQUIRE_POPPLER").is_err(),
            "QUIRE_REQUIRE_POPPLER is set but pdftotext/pdftoppm are missing"
        );
        eprintln!(
            "NOTICE: pdftotext/pdftoppm missing (Debian: poppler-utils): PDF text checks skipped"
        );
    }
    found
}

fn artifacts() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pdf-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The text of a PDF, in reading order.
fn pdf_text(pdf: &[u8], name: &str) -> String {
    let path = artifacts().join(format!("{name}.pdf"));
    std::fs::write(&path, pdf).unwrap();
    let out = Command::new("pdftotext")
        .arg("-enc")
        .arg("UTF-8")
        .arg(&path)
        .arg("-")
        .output()
        .unwrap();
    assert!(out.status.success(), "pdftotext failed");
    String::from_utf8(out.stdout).unwrap()
}

fn in_order(text: &str, parts: &[&str]) {
    let mut at = 0;
    for p in parts {
        match text[at..].find(p) {
            Some(i) => at += i + p.len(),
            None => panic!("`{p}` missing or out of order in:\n{text}"),
        }
    }
}

struct Fixture {
    alice: Persona,
    space: String,
    cr: String,
    second: String,
}

const FIRST: &str = "## Installation\n\nRun the installer first.\n\n```bash\necho quire-install\n```\n\n| Option | Meaning |\n| --- | --- |\n| verbose | Prints more |\n\n{% hint style=\"warning\" %}\nMind the warning text.\n{% endhint %}\n\n![A pixel](/files/FILE)\n\nПривет, мир: документация.\n";

const SECOND: &str = "## Hostile\n\nLiteral #panic(\"boom\") and #read(\"/etc/passwd\") and $x^2$ and @lbl ]) stay text.\n\n- one item\n- two item\n";

async fn fixture(app: &TestApp) -> Fixture {
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Handbook", None).await;
    let cr = app.open_change_request(&alice, &space, "Write").await;
    let res = app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([{ "operation": "insert_files", "files": [{ "base64": PNG_4X3, "name": "pixel.png" }] }]),
    )
    .await;
    let file = res["insertedFiles"][0]["id"].as_str().unwrap();
    let res = app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "title": "Getting started", "document": { "markdown": FIRST.replace("FILE", file) } },
            { "operation": "insert_page", "title": "Second chapter", "document": { "markdown": SECOND } }
        ]),
    )
    .await;
    let second = res["changes"][1]["page"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
    let cr2 = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "Polish" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    Fixture {
        alice,
        space,
        cr: cr2,
        second,
    }
}

async fn fetch_pdf(url: &str) -> Vec<u8> {
    let res = reqwest::get(url).await.unwrap();
    assert_eq!(res.status().as_u16(), 200, "{url}");
    assert_eq!(res.headers()["content-type"], "application/pdf");
    res.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn space_pdf_holds_the_content_in_order() {
    let app = TestApp::start().await;
    let f = fixture(&app).await;
    let res = app
        .get(&f.alice, &format!("/v1/spaces/{}/pdf", f.space))
        .await
        .expect(200);
    let url = res["url"].as_str().unwrap().to_string();
    assert!(
        url.starts_with(&format!("{}/pdf/{}/", app.base, f.space)),
        "{url}"
    );
    // No bearer token needed.
    let pdf = fetch_pdf(&url).await;
    assert!(pdf.starts_with(b"%PDF-"));
    // The PDF is made once per revision and options: asking again names the same one.
    let again = app
        .get(&f.alice, &format!("/v1/spaces/{}/pdf", f.space))
        .await
        .expect(200);
    let name = |u: &str| u.split('?').next().unwrap().to_string();
    assert_eq!(name(again["url"].as_str().unwrap()), name(&url));
    // Bookmarks: an outline dictionary with the pages' titles.
    let raw = String::from_utf8_lossy(&pdf);
    assert!(raw.contains("/Outlines"), "no outline in the PDF");
    if !poppler() {
        return;
    }
    let text = pdf_text(&pdf, "space");
    in_order(
        &text,
        &[
            "Handbook",
            "Getting started",
            "Second chapter",
            "Getting started",
            "Installation",
            "Run the installer first.",
            "echo quire-install",
            "Option",
            "verbose",
            "Prints more",
            "Warning",
            "Mind the warning text.",
            "A pixel",
            "Привет, мир",
            "Second chapter",
            "Hostile",
            "#panic(\"boom\")",
            "#read(\"/etc/passwd\")",
            "$x^2$",
            "@lbl ]) stay text.",
            "one item",
            "two item",
        ],
    );
    // The space's image is embedded, at its own size (4×3 pixels).
    let out = artifacts();
    let list = Command::new("pdfimages")
        .arg("-list")
        .arg(out.join("space.pdf"))
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    let sizes: Vec<(String, String)> = list
        .lines()
        .skip(2)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            Some((cols.get(3)?.to_string(), cols.get(4)?.to_string()))
        })
        .collect();
    assert!(
        sizes.contains(&("4".to_string(), "3".to_string())),
        "no 4×3 image in the PDF:\n{list}"
    );
    // A page as an image, kept for people to look at.
    let status = Command::new("pdftoppm")
        .args(["-png", "-r", "60", "-f", "3", "-l", "3"])
        .arg(out.join("space.pdf"))
        .arg(out.join("space-page"))
        .status()
        .unwrap();
    assert!(status.success());
    let image = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("space-page"))
        .expect("pdftoppm wrote the page");
    assert!(std::fs::metadata(image.path()).unwrap().len() > 1000);
    eprintln!("PDF page image: {}", image.path().display());
}

#[tokio::test]
async fn one_page_and_change_request_pdfs() {
    let app = TestApp::start().await;
    let f = fixture(&app).await;
    let one = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/pdf?only=true&page={}", f.space, f.second),
        )
        .await
        .expect(200);
    let pdf = fetch_pdf(one["url"].as_str().unwrap()).await;
    let cr = app
        .get(
            &f.alice,
            &format!("/v1/spaces/{}/change-requests/{}/pdf", f.space, f.cr),
        )
        .await
        .expect(200);
    let cr_pdf = fetch_pdf(cr["url"].as_str().unwrap()).await;
    if poppler() {
        let text = pdf_text(&pdf, "one-page");
        assert!(text.contains("Second chapter"), "{text}");
        assert!(!text.contains("Installation"), "{text}");
        let text = pdf_text(&cr_pdf, "change-request");
        in_order(
            &text,
            &["Handbook", "Change request #2: Polish", "Installation"],
        );
    }
    // Bad options are 400.
    let msg = app
        .get(&f.alice, &format!("/v1/spaces/{}/pdf?only=true", f.space))
        .await
        .expect_error(400);
    assert!(msg.contains("only"), "{msg}");
    let msg = app
        .get(&f.alice, &format!("/v1/spaces/{}/pdf?page=nope", f.space))
        .await
        .expect_error(400);
    assert!(msg.contains("page"), "{msg}");
    app.get(&f.alice, &format!("/v1/spaces/{}/pdf?only=maybe", f.space))
        .await
        .expect_error(400);
    app.get(
        &f.alice,
        &format!("/v1/spaces/{}/change-requests/nope/pdf", f.space),
    )
    .await
    .expect_error(404);
}

#[tokio::test]
async fn pdf_urls_are_signed_and_expire() {
    let app = TestApp::start().await;
    let f = fixture(&app).await;
    let res = app
        .get(&f.alice, &format!("/v1/spaces/{}/pdf", f.space))
        .await
        .expect(200);
    let url = res["url"].as_str().unwrap().to_string();
    let status = |u: String| async move { reqwest::get(&u).await.unwrap().status().as_u16() };
    assert_eq!(status(url.clone()).await, 200);
    // A tampered signature, name, reader or expiry is refused.
    assert_eq!(status(url.replace("signature=", "signature=A")).await, 403);
    assert_eq!(status(url.replace("/pdf-", "/pdf-0")).await, 403);
    let bob = app.persona("bob").await;
    assert_eq!(
        status(url.replace(
            &format!("reader={}", f.alice.id),
            &format!("reader={}", bob.id)
        ))
        .await,
        403
    );
    let expires: i64 = url
        .split("expires=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        status(url.replace(
            &format!("expires={expires}"),
            &format!("expires={}", expires + 1_000_000)
        ))
        .await,
        403
    );
    // After an hour the URL no longer works.
    app.clock.advance_ms(61 * 60 * 1000);
    assert_eq!(status(url.clone()).await, 403);
    // A new one does.
    let fresh = app
        .get(&f.alice, &format!("/v1/spaces/{}/pdf", f.space))
        .await
        .expect(200);
    assert_eq!(
        status(fresh["url"].as_str().unwrap().to_string()).await,
        200
    );
    // Outsiders cannot ask for one.
    app.get(&bob, &format!("/v1/spaces/{}/pdf", f.space))
        .await
        .expect_error(404);
}

/// A PDF stored long enough ago to be pruned soon is made again before a URL to it is
/// handed out: the URL works even when the space moves and its old derived bytes are
/// pruned right after.
#[tokio::test]
async fn a_pdf_url_outlives_the_pruning_of_old_derived_bytes() {
    use quire_server::domain::{content::DERIVED_GRACE_MS, jobs};
    let app = TestApp::start().await;
    let f = fixture(&app).await;
    let path = format!("/v1/spaces/{}/pdf", f.space);
    let first = app.get(&f.alice, &path).await.expect(200)["url"]
        .as_str()
        .unwrap()
        .to_string();
    fetch_pdf(&first).await;
    // The stored PDF is made a day old, due for pruning: asking again makes it anew.
    let name = first
        .split("/pdf/")
        .nth(1)
        .unwrap()
        .split(".pdf")
        .next()
        .unwrap();
    let stored = app.config.data_dir.join("blobs/derived").join(name);
    crate::harness::age_file(&stored, DERIVED_GRACE_MS + 60_000);
    let url = app.get(&f.alice, &path).await.expect(200)["url"]
        .as_str()
        .unwrap()
        .to_string();
    // The space moves (a merge), and the pruning it schedules runs at once.
    app.post(
        &f.alice,
        &format!("/v1/spaces/{}/change-requests/{}/merge", f.space, f.cr),
        json!({}),
    )
    .await
    .expect(200);
    jobs::run_due(&app.state).await.unwrap();
    let pdf = fetch_pdf(&url).await;
    assert!(pdf.starts_with(b"%PDF"));
}

/// A PNG whose header says `width` × `height` pixels (8-bit RGBA), with checksums right but
/// almost no pixel data: what an image bomb's header looks like, in a few bytes.
fn png_header_only(width: u32, height: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    // A zlib stream of one empty stored block: the rows are missing.
    chunk(
        &mut out,
        b"IDAT",
        &[
            0x78, 0x01, 0x01, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
        ],
    );
    chunk(&mut out, b"IEND", &[]);
    out
}

/// An image past the pixel cap (read from its header, never decoded) is left out of the
/// PDF with a note naming its size in its place; the rest of the page prints, other
/// images included.
#[tokio::test]
async fn an_image_too_large_to_decode_leaves_a_note_and_the_rest_prints() {
    use base64::Engine;
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Images", None).await;
    let cr = app.open_change_request(&alice, &space, "Images").await;
    let bomb = base64::engine::general_purpose::STANDARD.encode(png_header_only(20_000, 20_000));
    let res = app
        .edit_change_request(
            &alice,
            &space,
            &cr,
            json!([{ "operation": "insert_files", "files": [
                { "base64": PNG_4X3, "name": "pixel.png" },
                { "base64": bomb, "name": "bomb.png" }
            ] }]),
        )
        .await;
    let (pixel, bomb) = (
        res["insertedFiles"][0]["id"].as_str().unwrap().to_string(),
        res["insertedFiles"][1]["id"].as_str().unwrap().to_string(),
    );
    let md = format!(
        "Before the images.\n\n![A pixel](/files/{pixel})\n\n![The bomb](/files/{bomb})\n\nAfter the images.\n"
    );
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([{ "operation": "insert_page", "title": "Gallery", "document": { "markdown": md } }]),
    )
    .await;
    app.merge_change_request(&alice, &space, &cr).await;
    let res = app
        .get(&alice, &format!("/v1/spaces/{space}/pdf"))
        .await
        .expect(200);
    let pdf = fetch_pdf(res["url"].as_str().unwrap()).await;
    if !poppler() {
        return;
    }
    let text = pdf_text(&pdf, "image-bomb");
    in_order(
        &text,
        &[
            "Before the images.",
            "The bomb: image left out: 20000 × 20000 pixels",
            "After the images.",
        ],
    );
    let list = Command::new("pdfimages")
        .arg("-list")
        .arg(artifacts().join("image-bomb.pdf"))
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.lines().skip(2).any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.get(3) == Some(&"4") && cols.get(4) == Some(&"3")
        }),
        "the 4×3 image is not in the PDF:\n{list}"
    );
}

/// Content past the block cap (`pdf_max_blocks`, what bounds the typesetter's memory) is
/// refused with a 413 that says how large it is and what to do, before it is typeset;
/// one page of it still prints.
#[tokio::test]
async fn content_past_the_block_cap_is_refused_before_it_is_typeset() {
    let app = TestApp::start_with(|c| c.pdf_max_blocks = 3_000).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Big", None).await;
    let cr = app.open_change_request(&alice, &space, "Big").await;
    let list: String = (0..4_000).map(|i| format!("- item {i}\n")).collect();
    let res = app
        .edit_change_request(
            &alice,
            &space,
            &cr,
            json!([
                { "operation": "insert_page", "title": "Long list", "document": { "markdown": list } },
                { "operation": "insert_page", "title": "Short", "document": { "markdown": "Short page.\n" } }
            ]),
        )
        .await;
    let short = res["changes"][1]["page"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.merge_change_request(&alice, &space, &cr).await;
    let message = app
        .get(&alice, &format!("/v1/spaces/{space}/pdf"))
        .await
        .expect_error(413);
    assert!(
        message.contains("more than the 3000 a PDF may have") && message.contains("`page`"),
        "{message}"
    );
    let one = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/pdf?page={short}&only=true"),
        )
        .await
        .expect(200);
    assert!(fetch_pdf(one["url"].as_str().unwrap())
        .await
        .starts_with(b"%PDF-"));
}
