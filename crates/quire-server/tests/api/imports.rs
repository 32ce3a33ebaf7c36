//! Content imports: every source from fixtures served on loopback by the test, landing as
//! one new revision (the space moves, or only the change request does), with files and page
//! links; and the refusals, each a 400 that writes nothing.

use std::io::Write;

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};
use crate::loopback::{serve, Reply};

/// A zip archive of `(path, bytes)`, deflated.
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (path, bytes) in entries {
            w.start_file(*path, opts).unwrap();
            w.write_all(bytes).unwrap();
        }
        w.finish().unwrap();
    }
    out.into_inner()
}

const PNG: &[u8] = include_bytes!("../fixtures/imports/red.png");

/// A server whose fetcher may reach loopback (where the fixtures are served).
pub async fn app() -> TestApp {
    TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()]).await
}

struct World {
    alice: Persona,
    space: String,
    cr: String,
}

async fn world(app: &TestApp) -> World {
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    let cr = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "import" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    World { alice, space, cr }
}

impl World {
    fn space_path(&self, rest: &str) -> String {
        format!("/v1/spaces/{}{rest}", self.space)
    }

    fn cr_path(&self, rest: &str) -> String {
        format!(
            "/v1/spaces/{}/change-requests/{}{rest}",
            self.space, self.cr
        )
    }
}

async fn import(app: &TestApp, w: &World, url: &str, source: &str) -> Value {
    app.post(
        &w.alice,
        &w.space_path("/content/import"),
        json!({ "url": url, "source": source }),
    )
    .await
    .expect(200)
}

async fn revision_of(app: &TestApp, who: &Persona, path: &str) -> String {
    app.get(who, path).await.expect(200)["id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn pages(app: &TestApp, w: &World, base: &str) -> Value {
    app.get(&w.alice, &format!("{base}/content/pages"))
        .await
        .expect(200)["pages"]
        .clone()
}

async fn markdown(app: &TestApp, w: &World, base: &str, page: &Value) -> String {
    let id = page["id"].as_str().unwrap();
    app.get(
        &w.alice,
        &format!("{base}/content/page/{id}?format=markdown"),
    )
    .await
    .expect(200)["markdown"]
        .as_str()
        .unwrap()
        .to_string()
}

fn titles(pages: &Value) -> Vec<String> {
    pages
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap().to_string())
        .collect()
}

async fn files(app: &TestApp, w: &World, base: &str) -> Vec<Value> {
    app.get(&w.alice, &format!("{base}/content/files"))
        .await
        .expect(200)["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// One markdown file: a page with its image as a file of the space; the space moves to one
/// new revision whose parent is the one before.
#[tokio::test]
async fn markdown_lands_as_one_new_revision_of_the_space() {
    let app = app().await;
    let w = world(&app).await;
    let base = serve(|r| match r.path.as_str() {
        "/notes/intro.md" => Reply::ok(
            "text/markdown",
            "# Introduction\n\nHello **world**. ![logo](img/logo.png) and [elsewhere](other.md).\n",
        ),
        "/notes/img/logo.png" => Reply::ok("image/png", PNG),
        _ => Reply::not_found(),
    })
    .await;
    let before = revision_of(&app, &w.alice, &w.space_path("/content")).await;
    let cr_before = revision_of(&app, &w.alice, &w.cr_path("/content")).await;
    let res = import(&app, &w, &format!("{base}/notes/intro.md"), "markdown").await;
    assert_eq!(res["importedResources"], json!(2), "{res}");
    assert_eq!(res["totalResources"], json!(2), "{res}");
    let revision = res["revision"].as_str().unwrap();
    assert_ne!(revision, before);
    assert_eq!(
        revision_of(&app, &w.alice, &w.space_path("/content")).await,
        revision
    );
    let rev = app
        .get(&w.alice, &w.space_path(&format!("/revisions/{revision}")))
        .await
        .expect(200);
    assert_eq!(rev["parents"], json!([before]), "{rev}");
    // The change request did not move.
    assert_eq!(
        revision_of(&app, &w.alice, &w.cr_path("/content")).await,
        cr_before
    );
    let root = w.space_path("");
    let listed = pages(&app, &w, &root).await;
    assert_eq!(titles(&listed), ["Introduction"]);
    let md = markdown(&app, &w, &root, &listed[0]).await;
    let files = files(&app, &w, &root).await;
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["contentType"], json!("image/png"));
    assert_eq!(files[0]["dimensions"], json!({ "width": 4, "height": 3 }));
    let file_id = files[0]["id"].as_str().unwrap();
    assert!(md.contains(&format!("/files/{file_id}")), "{md}");
    // A link to nothing stays as it was written.
    assert!(md.contains("](other.md)"), "{md}");
    assert!(md.contains("**world**"), "{md}");
}

/// Into a change request: only the change request moves.
#[tokio::test]
async fn change_request_imports_move_only_the_change_request() {
    let app = app().await;
    let w = world(&app).await;
    let base = serve(|r| match r.path.as_str() {
        "/page.html" => Reply::ok(
            "text/html",
            "<html><head><title>T</title></head><body><main><h1>Release notes</h1>\
             <p>Text with <a href='https://example.com/x'>a link</a>.</p>\
             <table><tr><th>Version</th><th>Date</th></tr><tr><td>1.0</td><td>May</td></tr></table>\
             <pre><code class='language-bash'>echo hi</code></pre>\
             <p><img src='/shot.png' alt='Shot'></p></main></body></html>",
        ),
        "/shot.png" => Reply::ok("image/png", PNG),
        _ => Reply::not_found(),
    })
    .await;
    let space_before = revision_of(&app, &w.alice, &w.space_path("/content")).await;
    let res = app
        .post(
            &w.alice,
            &w.cr_path("/content/import"),
            json!({ "url": format!("{base}/page.html"), "source": "html" }),
        )
        .await
        .expect(200);
    assert_eq!(res["importedResources"], json!(2), "{res}");
    assert_eq!(
        revision_of(&app, &w.alice, &w.space_path("/content")).await,
        space_before
    );
    assert_eq!(
        revision_of(&app, &w.alice, &w.cr_path("/content")).await,
        res["revision"].as_str().unwrap()
    );
    let crp = w.cr_path("");
    let listed = pages(&app, &w, &crp).await;
    assert_eq!(titles(&listed), ["Release notes"]);
    let md = markdown(&app, &w, &crp, &listed[0]).await;
    assert!(md.contains("[a link](https://example.com/x)"), "{md}");
    assert!(md.contains("| Version"), "{md}");
    assert!(md.contains("```bash\necho hi\n```"), "{md}");
    assert_eq!(files(&app, &w, &crp).await.len(), 1);
    assert!(pages(&app, &w, &w.space_path(""))
        .await
        .as_array()
        .unwrap()
        .is_empty());
}

/// GitBook's Git Sync layout: SUMMARY.md gives structure and order, README.md per folder,
/// images under .gitbook/assets; links between pages become page links.
#[tokio::test]
async fn zip_in_git_sync_layout() {
    let app = app().await;
    let w = world(&app).await;
    let archive = zip_of(&[
        ("docs-main/README.md", b"# Welcome\n\nStart with [installing](guides/install.md#linux).\n"),
        (
            "docs-main/SUMMARY.md",
            b"# Table of contents\n\n* [Welcome](README.md)\n\n## Guides\n\n* [Guides](guides/README.md)\n  * [Install](guides/install.md)\n  * [Configure](guides/configure.md)\n",
        ),
        ("docs-main/guides/README.md", b"# Guides\n\nAll guides.\n"),
        ("docs-main/guides/install.md", b"# Install\n\n## Linux\n\n<figure><img src=\"../.gitbook/assets/red.png\" alt=\"\"><figcaption></figcaption></figure>\n"),
        ("docs-main/guides/configure.md", b"# Configure\n\nBack to [install](install.md) or [nowhere](gone.md).\n"),
        ("docs-main/.gitbook/assets/red.png", PNG),
        ("docs-main/unlisted.md", b"# Not in the summary\n"),
    ]);
    let base = serve(move |r| match r.path.as_str() {
        "/docs.zip" => Reply::ok("application/zip", archive.clone()),
        _ => Reply::not_found(),
    })
    .await;
    let res = import(&app, &w, &format!("{base}/docs.zip"), "zip").await;
    assert_eq!(res["importedResources"], json!(6), "{res}");
    let root = w.space_path("");
    let listed = pages(&app, &w, &root).await;
    assert_eq!(titles(&listed), ["Welcome", "Guides"]);
    assert_eq!(listed[1]["type"], json!("group"));
    let guides = &listed[1]["pages"][0];
    assert_eq!(guides["title"], json!("Guides"));
    assert_eq!(titles(&guides["pages"]), ["Install", "Configure"]);
    let install = &guides["pages"][0];
    let install_id = install["id"].as_str().unwrap();
    let welcome = markdown(&app, &w, &root, &listed[0]).await;
    assert!(
        welcome.contains(&format!("/pages/{install_id}#linux")),
        "{welcome}"
    );
    let configure = markdown(&app, &w, &root, &guides["pages"][1]).await;
    assert!(
        configure.contains(&format!("/pages/{install_id})")),
        "{configure}"
    );
    assert!(configure.contains("](gone.md)"), "{configure}");
    // The link that points nowhere is listed as broken, on the page that holds it.
    let broken = app
        .get(&w.alice, &w.space_path("/links?status=broken"))
        .await
        .expect(200);
    assert_eq!(broken["count"], json!(1), "{broken}");
    assert_eq!(
        broken["items"][0]["targetReference"]["url"],
        json!("gone.md")
    );
    assert_eq!(
        broken["items"][0]["locationReferences"][0]["page"]["id"],
        guides["pages"][1]["id"]
    );
    let files = files(&app, &w, &root).await;
    assert_eq!(files.len(), 1);
    let md = markdown(&app, &w, &root, install).await;
    assert!(
        md.contains(&format!("/files/{}", files[0]["id"].as_str().unwrap())),
        "{md}"
    );
    // Paths follow the tree (the group's slug, then the folder's page).
    assert_eq!(install["path"], json!("guides/guides/install"), "{install}");
}

/// Without SUMMARY.md, folders are groups at the root and pages below.
#[tokio::test]
async fn zip_without_summary_uses_folders() {
    let app = app().await;
    let w = world(&app).await;
    let archive = zip_of(&[
        ("README.md", b"# Home\n"),
        ("reference/api.md", b"# API\n\nSee [home](../README.md).\n"),
        ("reference/deep/more.md", b"# More\n"),
    ]);
    let base = serve(move |_| Reply::ok("application/zip", archive.clone())).await;
    import(&app, &w, &format!("{base}/a.zip"), "zip").await;
    let listed = pages(&app, &w, &w.space_path("")).await;
    assert_eq!(titles(&listed), ["Home", "reference"]);
    assert_eq!(listed[1]["type"], json!("group"));
    assert_eq!(titles(&listed[1]["pages"]), ["API", "deep"]);
    assert_eq!(titles(&listed[1]["pages"][1]["pages"]), ["More"]);
    let api = markdown(&app, &w, &w.space_path(""), &listed[1]["pages"][0]).await;
    let home = listed[0]["id"].as_str().unwrap();
    assert!(api.contains(&format!("/pages/{home}")), "{api}");
}

/// A Word document made by pandoc: headings, lists, a table, code, an image and a link.
#[tokio::test]
async fn docx_made_by_pandoc() {
    let app = app().await;
    let w = world(&app).await;
    let docx = include_bytes!("../fixtures/imports/guide.docx").to_vec();
    let base = serve(move |_| {
        Reply::ok(
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            docx.clone(),
        )
    })
    .await;
    let res = import(&app, &w, &format!("{base}/guide.docx"), "docx").await;
    assert_eq!(res["importedResources"], json!(2), "{res}");
    let root = w.space_path("");
    let listed = pages(&app, &w, &root).await;
    assert_eq!(titles(&listed), ["Field Guide"]);
    let md = markdown(&app, &w, &root, &listed[0]).await;
    for want in [
        "## Overview",
        "**bold words**",
        "_italic words_",
        "`inline code`",
        "[project site](https://example.com/docs)",
        "### Steps",
        "1. Install the tool",
        "   * nested bullet",
        "* first point",
        "| alpha",
        "def hello():",
        "/files/",
    ] {
        assert!(md.contains(want), "missing {want:?} in:\n{md}");
    }
    let files = files(&app, &w, &root).await;
    assert_eq!(files[0]["contentType"], json!("image/png"));
}

/// A bounded crawl of one origin: robots.txt honoured, sitemap.xml read, pages nested by
/// URL path, links between crawled pages made page links, other origins not followed.
#[tokio::test]
async fn website_crawl() {
    let app = app().await;
    let w = world(&app).await;
    let base = serve(|r| {
        let page = |title: &str, body: &str| {
            Reply::ok(
                "text/html; charset=utf-8",
                format!("<html><head><title>{title}</title></head><body><nav><a href='/private/x.html'>nav</a></nav><main><h1>{title}</h1>{body}</main></body></html>"),
            )
        };
        match r.path.as_str() {
            "/robots.txt" => Reply::ok("text/plain", "User-agent: *\nDisallow: /private/\n"),
            "/sitemap.xml" => Reply::ok(
                "application/xml",
                "<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'><url><loc>/docs/hidden.html</loc></url></urlset>",
            ),
            "/" | "/index.html" => page("Home", "<p><a href='/docs/'>Docs</a> <a href='http://127.0.0.2:1/away'>away</a> <a href='/private/secret.html'>secret</a></p>"),
            "/docs/" => page("Docs", "<p><a href='guide.html'>Guide</a></p>"),
            "/docs/guide.html" => page("Guide", "<p>Back <a href='/docs/'>up</a>.</p>"),
            // Linked from nowhere: found through the sitemap.
            "/docs/hidden.html" => page("Hidden", "<p>Only in the sitemap.</p>"),
            "/private/secret.html" | "/private/x.html" => page("Secret", "<p>no</p>"),
            _ => Reply::not_found(),
        }
    })
    .await;
    let res = import(&app, &w, &format!("{base}/"), "website").await;
    let listed = pages(&app, &w, &w.space_path("")).await;
    assert_eq!(titles(&listed), ["Home", "Docs"], "{listed}");
    let mut docs_children = titles(&listed[1]["pages"]);
    docs_children.sort();
    assert_eq!(docs_children, ["Guide", "Hidden"], "{listed}");
    assert_eq!(res["importedResources"], json!(4), "{res}");
    let guide = listed[1]["pages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == json!("Guide"))
        .unwrap()
        .clone();
    let md = markdown(&app, &w, &w.space_path(""), &guide).await;
    let docs_id = listed[1]["id"].as_str().unwrap();
    assert!(md.contains(&format!("/pages/{docs_id}")), "{md}");
}

/// The page cap bounds a crawl.
#[tokio::test]
async fn website_crawl_stops_at_the_page_cap() {
    let app = TestApp::start_with(|c| {
        c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()];
        c.import_crawl_pages = 3;
    })
    .await;
    let w = world(&app).await;
    // Every page links to two more: an endless site.
    let base = serve(|r| {
        let n: u64 = r
            .path
            .trim_start_matches("/p")
            .trim_end_matches(".html")
            .parse()
            .unwrap_or(1);
        Reply::ok(
            "text/html",
            format!(
                "<h1>P{n}</h1><a href='/p{}.html'>a</a><a href='/p{}.html'>b</a>",
                n * 2,
                n * 2 + 1
            ),
        )
    })
    .await;
    let res = import(&app, &w, &format!("{base}/p1.html"), "website").await;
    assert_eq!(res["importedResources"], json!(3), "{res}");
}

/// A Confluence space export: index.html gives the tree; content from #main-content;
/// attachments become files.
#[tokio::test]
async fn confluence_space_export() {
    let app = app().await;
    let w = world(&app).await;
    let page = |title: &str, body: &str| {
        format!("<html><head><title>DOC : {title}</title></head><body><div id='breadcrumbs'>crumbs</div><h1 id='title-heading'><span id='title-text'>DOC : {title}</span></h1><div id='main-content' class='wiki-content'>{body}</div></body></html>")
    };
    let index = "<html><body><div class='pageSection'><h2>Available Pages:</h2><ul><li><a href='Home_1.html'>Home</a><ul><li><a href='Child-Page_2.html'>Child Page</a></li></ul></li></ul></div></body></html>";
    let home = page("Home", "<p>See <a href='Child-Page_2.html'>the child</a>.</p><p><img src='attachments/1/3.png'></p>");
    let child = page("Child Page", "<pre class='syntaxhighlighter-pre' data-syntaxhighlighter-params='brush: java; gutter: false'>class A {}</pre>");
    let archive = zip_of(&[
        ("DOC/index.html", index.as_bytes()),
        ("DOC/Home_1.html", home.as_bytes()),
        ("DOC/Child-Page_2.html", child.as_bytes()),
        ("DOC/attachments/1/3.png", PNG),
        ("DOC/styles/site.css", b"body{}"),
    ]);
    let base = serve(move |_| Reply::ok("application/zip", archive.clone())).await;
    let res = import(&app, &w, &format!("{base}/export.zip"), "confluence").await;
    assert_eq!(res["importedResources"], json!(3), "{res}");
    let root = w.space_path("");
    let listed = pages(&app, &w, &root).await;
    assert_eq!(titles(&listed), ["Home"]);
    assert_eq!(titles(&listed[0]["pages"]), ["Child Page"]);
    assert_eq!(listed[0]["pages"][0]["slug"], json!("child-page"));
    let md = markdown(&app, &w, &root, &listed[0]).await;
    let child_id = listed[0]["pages"][0]["id"].as_str().unwrap();
    assert!(md.contains(&format!("/pages/{child_id}")), "{md}");
    assert!(!md.contains("crumbs"), "{md}");
    let code = markdown(&app, &w, &root, &listed[0]["pages"][0]).await;
    assert!(code.contains("```java\nclass A {}\n```"), "{code}");
}

/// A Notion export: id suffixes dropped, pages with their folders as children, a CSV
/// database as a page holding its table and its rows' pages.
#[tokio::test]
async fn notion_export() {
    let app = app().await;
    let w = world(&app).await;
    let id = "0123456789abcdef0123456789abcdef";
    let db = "fedcba9876543210fedcba9876543210";
    let files = [
        (
            format!("Handbook {id}.md"),
            format!("# Handbook\n\nOur [projects](Handbook%20{id}/Projects%20{db}.csv).\n\n![team](Handbook%20{id}/team.png)\n").into_bytes(),
        ),
        (format!("Handbook {id}/team.png"), PNG.to_vec()),
        (format!("Handbook {id}/Projects {db}.csv"), b"Name,Owner\nAtlas,Ann\nBeacon,Bo\n".to_vec()),
        (format!("Handbook {id}/Projects {db}_all.csv"), b"Name,Owner\nAtlas,Ann\nBeacon,Bo\nComet,Cy\n".to_vec()),
        (format!("Handbook {id}/Projects {db}/Atlas {id}.md"), b"# Atlas\n\nOwner: Ann\n".to_vec()),
    ];
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let archive = zip_of(&refs);
    let base = serve(move |_| Reply::ok("application/zip", archive.clone())).await;
    import(&app, &w, &format!("{base}/notion.zip"), "notion").await;
    let root = w.space_path("");
    let listed = pages(&app, &w, &root).await;
    assert_eq!(titles(&listed), ["Handbook"]);
    let projects = &listed[0]["pages"][0];
    assert_eq!(projects["title"], json!("Projects"));
    assert_eq!(titles(&projects["pages"]), ["Atlas"]);
    let table = markdown(&app, &w, &root, projects).await;
    assert!(table.contains("Comet"), "{table}");
    let atlas = projects["pages"][0]["id"].as_str().unwrap();
    assert!(table.contains(&format!("/pages/{atlas}")), "{table}");
    let handbook = markdown(&app, &w, &root, &listed[0]).await;
    assert!(
        handbook.contains(&format!("/pages/{}", projects["id"].as_str().unwrap())),
        "{handbook}"
    );
    assert!(handbook.contains("/files/"), "{handbook}");
}

/// A wiki's git repository made by `git`, served over git's smart HTTP protocol by
/// `git upload-pack`: pages named after files, Home first, [[links]] made page links.
#[tokio::test]
async fn github_wiki_from_a_real_git_repository() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("NOTICE: git is not installed; the wiki import test is skipped");
        return;
    }
    let app = app().await;
    let w = world(&app).await;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("wiki");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=T",
                "-c",
                "user.email=t@example.com",
                "-c",
                "init.defaultBranch=master",
            ])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    std::fs::create_dir_all(repo.join("images")).unwrap();
    std::fs::write(
        repo.join("Home.md"),
        "Welcome. See [[Getting Started]] and [[the FAQ|FAQ]].\n\n![logo](images/red.png)\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("Getting-Started.md"),
        "# Getting Started\n\nStep one.\n",
    )
    .unwrap();
    std::fs::write(repo.join("FAQ.md"), "Questions.\n").unwrap();
    std::fs::write(repo.join("_Sidebar.md"), "sidebar\n").unwrap();
    std::fs::write(repo.join("images/red.png"), PNG).unwrap();
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "first"]);
    // A second commit, so that the pack holds deltas against the first.
    std::fs::write(repo.join("FAQ.md"), "Questions and answers.\n").unwrap();
    git(&["commit", "-q", "-am", "second"]);
    let repo_dir = repo.clone();
    let base = serve(move |r| {
        let upload = |args: &[&str], input: &[u8]| {
            let mut child = std::process::Command::new("git")
                .arg("upload-pack")
                .args(args)
                .arg(&repo_dir)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(input).unwrap();
            child.wait_with_output().unwrap().stdout
        };
        if r.method == "GET" && r.path == "/o/r.wiki.git/info/refs?service=git-upload-pack" {
            let mut body = b"001e# service=git-upload-pack\n0000".to_vec();
            body.extend(upload(&["--stateless-rpc", "--advertise-refs"], b""));
            Reply::ok("application/x-git-upload-pack-advertisement", body)
        } else if r.method == "POST" && r.path == "/o/r.wiki.git/git-upload-pack" {
            Reply::ok(
                "application/x-git-upload-pack-result",
                upload(&["--stateless-rpc"], &r.body),
            )
        } else {
            Reply::not_found()
        }
    })
    .await;
    let res = import(&app, &w, &format!("{base}/o/r/wiki"), "github-wiki").await;
    assert_eq!(res["importedResources"], json!(4), "{res}");
    let root = w.space_path("");
    let listed = pages(&app, &w, &root).await;
    assert_eq!(titles(&listed), ["Home", "FAQ", "Getting Started"]);
    let home = markdown(&app, &w, &root, &listed[0]).await;
    for p in &listed.as_array().unwrap()[1..] {
        assert!(
            home.contains(&format!("/pages/{}", p["id"].as_str().unwrap())),
            "{home}"
        );
    }
    assert!(home.contains("/files/"), "{home}");
    let faq = markdown(&app, &w, &root, &listed[1]).await;
    assert!(faq.contains("Questions and answers."), "{faq}");
}

/// A Google document: its edit URL is read through its HTML export; Google's wrapped links
/// are unwrapped.
#[tokio::test]
async fn google_docs_export() {
    let app = app().await;
    let w = world(&app).await;
    let base = serve(|r| match r.path.as_str() {
        "/document/d/abc123/export?format=html" => Reply::ok(
            "text/html",
            "<html><head><title>Team plan</title><style>.c1{font-weight:700}</style></head><body>\
             <h1>Team plan</h1><p>Read <a href='https://www.google.com/url?q=https://example.org/a%3Fb&amp;sa=D'>this</a>.</p>\
             <ul><li>One</li><li>Two</li></ul></body></html>",
        ),
        _ => Reply::not_found(),
    })
    .await;
    import(
        &app,
        &w,
        &format!("{base}/document/d/abc123/edit"),
        "google-docs",
    )
    .await;
    let root = w.space_path("");
    let listed = pages(&app, &w, &root).await;
    assert_eq!(titles(&listed), ["Team plan"]);
    let md = markdown(&app, &w, &root, &listed[0]).await;
    assert!(md.contains("[this](https://example.org/a?b)"), "{md}");
    assert!(md.contains("* One"), "{md}");
}

/// The page forms: one imported page fills the page; several become its children (201).
#[tokio::test]
async fn imports_into_a_page() {
    let app = app().await;
    let w = world(&app).await;
    let archive = zip_of(&[("a.md", b"# A\n"), ("b.md", b"# B\n")]);
    let base = serve(move |r| match r.path.as_str() {
        "/one.md" => Reply::ok("text/markdown", "# One\n\nImported body.\n"),
        "/two.zip" => Reply::ok("application/zip", archive.clone()),
        _ => Reply::not_found(),
    })
    .await;
    app.post(
        &w.alice,
        &w.cr_path("/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "Target", "document": { "markdown": "Old." } }] }),
    )
    .await
    .expect(200);
    let crp = w.cr_path("");
    let target = pages(&app, &w, &crp).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app
        .post(
            &w.alice,
            &w.cr_path(&format!("/content/page/{target}/import")),
            json!({ "url": format!("{base}/one.md"), "source": "markdown" }),
        )
        .await
        .expect(201);
    assert_eq!(res["importedResources"], json!(1));
    let listed = pages(&app, &w, &crp).await;
    assert_eq!(titles(&listed), ["Target"]);
    assert!(markdown(&app, &w, &crp, &listed[0])
        .await
        .contains("Imported body."));
    app.post(
        &w.alice,
        &w.cr_path(&format!("/content/page/{target}/import")),
        json!({ "url": format!("{base}/two.zip"), "source": "zip" }),
    )
    .await
    .expect(201);
    let listed = pages(&app, &w, &crp).await;
    assert_eq!(titles(&listed[0]["pages"]), ["A", "B"]);
    // A page that is not there.
    let message = app
        .post(
            &w.alice,
            &w.space_path("/content/page/nope/import"),
            json!({ "url": format!("{base}/one.md"), "source": "markdown" }),
        )
        .await
        .expect_error(404);
    assert!(message.contains("nope"), "{message}");
}

/// Every refusal is a 400 naming what was wrong, and neither the space nor the change
/// request moves.
#[tokio::test]
async fn bad_input_is_refused_and_writes_nothing() {
    let app = TestApp::start_with(|c| {
        c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()];
        c.max_import_bytes = 256 * 1024;
    })
    .await;
    let w = world(&app).await;
    let bomb = zip_of(&[("big.md", &vec![b'a'; 4 * 1024 * 1024])]);
    let escape = zip_of(&[("ok.md", b"# Ok\n"), ("../../etc/evil.md", b"# Evil\n")]);
    let base = serve(move |r| match r.path.as_str() {
        "/bomb.zip" => Reply::ok("application/zip", bomb.clone()),
        "/escape.zip" => Reply::ok("application/zip", escape.clone()),
        "/huge.md" => Reply::ok("text/markdown", vec![b'x'; 300 * 1024]),
        "/to-loopback" => Reply::redirect("http://127.0.0.2/doc.md"),
        "/not-a-zip.zip" => Reply::ok("application/zip", "plain text"),
        "/empty.zip" => Reply::ok("application/zip", zip_of(&[("image.png", PNG)])),
        _ => Reply::not_found(),
    })
    .await;
    let space_before = revision_of(&app, &w.alice, &w.space_path("/content")).await;
    let cr_before = revision_of(&app, &w.alice, &w.cr_path("/content")).await;
    let port = base.rsplit(':').next().unwrap().to_string();
    let mut cases: Vec<(Value, &str)> = vec![
        (json!({ "source": "zip" }), "`url` is required"),
        (
            json!({ "url": format!("{base}/a.zip") }),
            "`source` is required",
        ),
        (
            json!({ "url": format!("{base}/a.zip"), "source": "word" }),
            "`source` must be one of",
        ),
        (
            json!({ "url": "ftp://example.com/a.zip", "source": "zip" }),
            "absolute http(s) URL",
        ),
        (
            json!({ "url": format!("{base}/bomb.zip"), "source": "zip" }),
            // Past the entry cap (the download size here) before the ratio's floor.
            "`big.md` expands to more than 262144 bytes",
        ),
        (
            json!({ "url": format!("{base}/escape.zip"), "source": "zip" }),
            "points outside the archive",
        ),
        (
            json!({ "url": format!("{base}/huge.md"), "source": "markdown" }),
            "larger than",
        ),
        (
            json!({ "url": format!("{base}/to-loopback"), "source": "markdown" }),
            "could not be fetched",
        ),
        (
            json!({ "url": format!("{base}/missing.md"), "source": "markdown" }),
            "could not be fetched",
        ),
        (
            json!({ "url": format!("{base}/not-a-zip.zip"), "source": "zip" }),
            "not a readable zip",
        ),
        (
            json!({ "url": format!("{base}/empty.zip"), "source": "zip" }),
            "no markdown file",
        ),
        (
            json!({ "url": format!("{base}/not-a-zip.zip"), "source": "docx" }),
            "not a Word document",
        ),
        (
            json!({ "url": format!("{base}/missing"), "source": "github-wiki" }),
            "could not be fetched",
        ),
    ];
    // Every refused address class, as a literal (loopback beyond 127.0.0.1 is not allowed).
    for host in [
        "127.0.0.2",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "[::1]",
        "[::ffff:127.0.0.2]",
        "[fc00::1]",
        "[fe80::1]",
        "localhost",
    ] {
        cases.push((
            json!({ "url": format!("http://{host}:{port}/doc.md"), "source": "markdown" }),
            "could not be fetched",
        ));
    }
    for (body, want) in cases {
        for path in [
            w.space_path("/content/import"),
            w.cr_path("/content/import"),
        ] {
            let message = app
                .post(&w.alice, &path, body.clone())
                .await
                .expect_error(400);
            assert!(message.contains(want), "{body}: {message}");
        }
    }
    assert_eq!(
        revision_of(&app, &w.alice, &w.space_path("/content")).await,
        space_before
    );
    assert_eq!(
        revision_of(&app, &w.alice, &w.cr_path("/content")).await,
        cr_before
    );
    assert!(files(&app, &w, &w.cr_path("")).await.is_empty());
}

/// Readers cannot import; a locked space refuses imports but its change requests take them.
#[tokio::test]
async fn imports_need_edit_and_an_unlocked_space() {
    let app = app().await;
    let w = world(&app).await;
    let bob = app.persona("bob").await;
    let org = app.get(&w.alice, &w.space_path("")).await.expect(200)["organization"]
        .as_str()
        .unwrap()
        .to_string();
    app.add_member(&w.alice, &org, &bob, json!("read")).await;
    let base = serve(|_| Reply::ok("text/markdown", "# Page\n")).await;
    let body = json!({ "url": format!("{base}/p.md"), "source": "markdown" });
    app.post(&bob, &w.space_path("/content/import"), body.clone())
        .await
        .expect_error(403);
    app.patch(&w.alice, &w.space_path(""), json!({ "editMode": "locked" }))
        .await
        .expect(200);
    app.post(&w.alice, &w.space_path("/content/import"), body.clone())
        .await
        .expect_error(403);
    app.post(&w.alice, &w.cr_path("/content/import"), body)
        .await
        .expect(200);
}

/// An archive is read one entry at a time, every cap checked while inflating: the documents
/// a converter holds are capped together (here at the download size, 256 KiB, though the
/// archive may expand to eight times that) and each entry alone, each a 400 naming the cap
/// or the entry; images and attachments, stored one at a time, may together pass the
/// download size. Imports take turns on a node: past `max_imports`, a request waits
/// `busy_wait_ms` and is answered 503 with `Retry-After`, and the running import lands.
#[tokio::test]
async fn zip_imports_are_bounded_while_inflating_and_take_turns() {
    let app = TestApp::start_with(|c| {
        c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()];
        c.max_import_bytes = 256 * 1024;
        c.max_imports = 1;
        c.busy_wait_ms = 300;
    })
    .await;
    let w = world(&app).await;
    let text = |n: usize| format!("# Page {n}\n\n{}", "Some text of the page. ".repeat(4000));
    let docs: Vec<(String, Vec<u8>)> = (0..4)
        .map(|n| (format!("p{n}.md"), text(n).into_bytes()))
        .collect();
    let docs = zip_of(
        &docs
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice()))
            .collect::<Vec<_>>(),
    );
    let big = zip_of(&[
        ("README.md", b"# Big\n\n[the file](big.bin)\n"),
        ("big.bin", &vec![7u8; 300 * 1024]),
    ]);
    let blobs: Vec<(String, Vec<u8>)> = (0..5)
        .map(|n| (format!("blob-{n}.bin"), vec![n as u8; 200 * 1024]))
        .collect();
    let mut entries: Vec<(&str, &[u8])> = blobs
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let readme = (0..5)
        .map(|n| format!("[blob {n}](blob-{n}.bin)\n\n"))
        .collect::<String>();
    let readme = format!("# Files\n\n{readme}");
    entries.push(("README.md", readme.as_bytes()));
    let assets = zip_of(&entries);
    let small = zip_of(&[("README.md", b"# Small\n")]);
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    let (release, release_rx) = std::sync::mpsc::channel::<()>();
    let (started_tx, release_rx) = (
        std::sync::Mutex::new(started_tx),
        std::sync::Mutex::new(release_rx),
    );
    let base = serve(move |r| match r.path.as_str() {
        "/docs.zip" => Reply::ok("application/zip", docs.clone()),
        "/big.zip" => Reply::ok("application/zip", big.clone()),
        "/assets.zip" => Reply::ok("application/zip", assets.clone()),
        "/small.zip" => Reply::ok("application/zip", small.clone()),
        "/slow.zip" => {
            started_tx.lock().unwrap().send(()).unwrap();
            let _ = release_rx
                .lock()
                .unwrap()
                .recv_timeout(std::time::Duration::from_secs(60));
            Reply::ok("application/zip", small.clone())
        }
        _ => Reply::not_found(),
    })
    .await;
    let path = w.space_path("/content/import");
    let before = revision_of(&app, &w.alice, &w.space_path("/content")).await;
    for (file, want) in [
        (
            "docs.zip",
            "documents expand to more than 262144 bytes together",
        ),
        (
            "big.zip",
            "archive entry `big.bin` expands to more than 262144 bytes",
        ),
    ] {
        let message = app
            .post(
                &w.alice,
                &path,
                json!({ "url": format!("{base}/{file}"), "source": "zip" }),
            )
            .await
            .expect_error(400);
        assert!(message.contains(want), "{file}: {message}");
    }
    assert_eq!(
        revision_of(&app, &w.alice, &w.space_path("/content")).await,
        before
    );
    let res = import(&app, &w, &format!("{base}/assets.zip"), "zip").await;
    assert_eq!(res["importedResources"], json!(6), "{res}");
    let stored = files(&app, &w, &w.space_path("")).await;
    assert_eq!(stored.len(), 5);
    assert!(
        stored.iter().all(|f| f["size"] == json!(200 * 1024)),
        "{stored:?}"
    );
    // Turns: the first import holds the only one while its download hangs.
    let client = reqwest::Client::new();
    let send = |file: &str| {
        client
            .post(format!("{}{path}", app.base))
            .bearer_auth(&w.alice.token)
            .json(&json!({ "url": format!("{base}/{file}"), "source": "zip" }))
            .send()
    };
    let first = tokio::spawn(send("slow.zip"));
    tokio::task::spawn_blocking(move || started.recv_timeout(std::time::Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the first import started its download");
    let busy = send("small.zip").await.unwrap();
    assert_eq!(busy.status().as_u16(), 503);
    assert_eq!(busy.headers()["retry-after"], "1");
    let body: Value = busy.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!(503));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("busy with other imports"),
        "{body}"
    );
    release.send(()).unwrap();
    let landed = first.await.unwrap().unwrap();
    assert_eq!(landed.status().as_u16(), 200);
    // With the turn free again, the next import runs.
    import(&app, &w, &format!("{base}/small.zip"), "zip").await;
}
