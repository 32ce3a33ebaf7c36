//! Git Sync with a repository elsewhere: a bare repository served over smart HTTP on
//! loopback by `git upload-pack` and `git receive-pack`, behind Basic credentials. Export,
//! an edit in the repository imported back, each merge exported, a conflict reported.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::git::{has_git, merge_edit, ok, page_id};
use crate::harness::{Persona, TestApp};
use crate::loopback::{serve, Reply};

/// Credentials the repository asks for.
const USER: &str = "sync";
const SECRET: &str = "s3cret-token";

/// Serves the bare repository at `repo` as `/team/docs.git`; answers 401 without the
/// credentials. Returns the repository's URL with them.
async fn remote(repo: PathBuf) -> String {
    let repo = Arc::new(repo);
    let base = serve(move |r| {
        use base64::Engine;
        let expected = format!(
            "authorization: basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{SECRET}"))
        )
        .to_ascii_lowercase();
        if !r.head.to_ascii_lowercase().contains(&expected) {
            return Reply::ok("text/plain", "who are you?").with_status(401);
        }
        let run = |service: &str, args: &[&str], input: &[u8]| {
            use std::io::Write;
            let mut child = std::process::Command::new("git")
                .arg(service)
                .args(args)
                .arg(repo.as_path())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(input).unwrap();
            child.wait_with_output().unwrap().stdout
        };
        for service in ["upload-pack", "receive-pack"] {
            if r.method == "GET"
                && r.path == format!("/team/docs.git/info/refs?service=git-{service}")
            {
                let first = format!("# service=git-{service}\n");
                let mut body = format!("{:04x}{first}0000", first.len() + 4).into_bytes();
                body.extend(run(service, &["--stateless-rpc", "--advertise-refs"], b""));
                return Reply::ok(&format!("application/x-git-{service}-advertisement"), body);
            }
            if r.method == "POST" && r.path == format!("/team/docs.git/git-{service}") {
                return Reply::ok(
                    &format!("application/x-git-{service}-result"),
                    run(service, &["--stateless-rpc"], &r.body),
                );
            }
        }
        Reply::not_found()
    })
    .await;
    let host = base.trim_start_matches("http://");
    format!("http://{USER}:{SECRET}@{host}/team/docs.git")
}

/// Runs due jobs, then waits until no sync job is left (the app's own worker may hold one)
/// and the space's operation has ended; its state.
async fn settled(app: &TestApp, who: &Persona, space: &str) -> Value {
    for _ in 0..400 {
        quire_server::domain::jobs::run_due(&app.state)
            .await
            .unwrap();
        let waiting = quire_server::store::jobs::count(&app.state.db, "git-sync")
            .await
            .unwrap();
        let info = app
            .get(who, &format!("/v1/spaces/{space}/git/info"))
            .await
            .expect(200);
        if waiting == 0 && info["operation"]["state"] != "running" {
            return info;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the sync operation did not end");
}

/// The markdown of a page of main.
async fn markdown(app: &TestApp, who: &Persona, space: &str, page: &str) -> String {
    app.get(
        who,
        &format!("/v1/spaces/{space}/content/page/{page}?format=markdown"),
    )
    .await
    .expect(200)["markdown"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A working copy of the remote (a plain path: the test's own git talks to it directly).
async fn checkout(bare: &Path, into: &Path) {
    ok(
        into.parent().unwrap(),
        &[
            "clone",
            "-q",
            bare.to_str().unwrap(),
            into.file_name().unwrap().to_str().unwrap(),
        ],
    )
    .await;
}

#[tokio::test]
async fn a_space_exports_imports_and_stays_in_sync_with_a_repository() {
    if !has_git() {
        return;
    }
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    let cr = app.open_change_request(&alice, &space, "First pages").await;
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "ref": "home", "title": "Home", "document": { "markdown": "Welcome.\n" } },
            { "operation": "insert_page", "ref": "guide", "title": "Guide", "document": { "markdown": "Read on.\n\nSecond paragraph.\n" } }
        ]),
    )
    .await;
    app.merge_change_request(&alice, &space, &cr).await;

    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("docs.git");
    ok(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", "docs.git"],
    )
    .await;
    let url = remote(bare.clone()).await;
    let info_path = format!("/v1/spaces/{space}/git/info");

    // No sync yet.
    app.get(&alice, &info_path).await.expect_error(404);
    // Bad requests are named.
    let res = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/git/export"),
            json!({ "url": url, "ref": "main", "commitMessage": "x" }),
        )
        .await
        .expect_error(400);
    assert!(res.contains("`ref`"), "{res}");
    let res = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/git/export"),
            json!({ "url": url, "ref": "refs/heads/main" }),
        )
        .await
        .expect_error(400);
    assert!(res.contains("`commitMessage`"), "{res}");
    let res = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/git/import"),
            json!({ "url": "file:///etc", "ref": "refs/heads/main" }),
        )
        .await
        .expect_error(400);
    assert!(res.contains("`url`"), "{res}");

    // Export into the empty repository.
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/export"),
        json!({
            "url": url,
            "ref": "refs/heads/main",
            "commitMessage": "First export",
            "gitInfo": { "provider": "github", "url": "https://github.example/team/docs/tree/main" }
        }),
    )
    .await
    .expect(204);
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");
    assert_eq!(info["operation"]["direction"], "export", "{info}");
    assert_eq!(info["repoName"], "team/docs", "{info}");
    assert_eq!(info["installationProvider"], "github", "{info}");
    assert_eq!(info["url"], "https://github.example/team/docs/tree/main");
    assert!(!info.to_string().contains(SECRET), "{info}");
    let log = ok(&bare, &["log", "--format=%s", "main"]).await;
    assert_eq!(log, "First export\n");
    ok(&bare, &["fsck", "--strict"]).await;
    let work = tmp.path().join("work");
    checkout(&bare, &work).await;
    assert_eq!(
        std::fs::read_to_string(work.join("README.md")).unwrap(),
        "# Home\n\nWelcome.\n"
    );
    assert!(std::fs::read_to_string(work.join("SUMMARY.md"))
        .unwrap()
        .contains("[Guide](guide.md)"));

    // An edit made in the repository comes in as a merged change request.
    std::fs::write(
        work.join("guide.md"),
        "# Guide\n\nRead on, carefully.\n\nSecond paragraph.\n",
    )
    .unwrap();
    ok(&work, &["commit", "-qam", "Say it carefully"]).await;
    ok(&work, &["push", "-q", "origin", "main"]).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/import"),
        json!({ "url": url, "ref": "refs/heads/main" }),
    )
    .await
    .expect(204);
    // (The import's merge starts an export: the state is the last operation's.)
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");
    assert_eq!(info["installationProvider"], "github", "kept: {info}");
    let guide = page_id(&app, &alice, &space, "Guide").await;
    assert_eq!(
        markdown(&app, &alice, &space, &guide).await,
        "Read on, carefully.\n\nSecond paragraph.\n"
    );
    let crs = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests?status=merged"),
        )
        .await
        .expect(200);
    assert!(
        crs["items"].as_array().unwrap().iter().any(|c| c["subject"]
            .as_str()
            .unwrap()
            .ends_with("from git: Say it carefully")),
        "{crs}"
    );
    // In step: the export that the import's merge started wrote nothing new.
    assert_eq!(
        ok(&bare, &["log", "--format=%s", "main"]).await,
        "Say it carefully\nFirst export\n"
    );

    // A merge in Quire is exported as a commit on top of the repository's head.
    let home = page_id(&app, &alice, &space, "Home").await;
    merge_edit(
        &app,
        &alice,
        &space,
        "Warmer welcome",
        &home,
        "Welcome, reader.\n",
    )
    .await;
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");
    let log = ok(&bare, &["log", "--format=%s", "main"]).await;
    assert!(log.starts_with("GITBOOK-"), "{log}");
    assert!(
        log.contains(": Warmer welcome\nSay it carefully\n"),
        "{log}"
    );
    ok(&bare, &["fsck", "--strict"]).await;
    ok(&work, &["pull", "-q", "--ff-only"]).await;
    assert_eq!(
        std::fs::read_to_string(work.join("README.md")).unwrap(),
        "# Home\n\nWelcome, reader.\n"
    );

    // The same lines edited on both sides: the export refuses to overwrite the repository,
    // the import reports the conflict and leaves its change request open.
    std::fs::write(work.join("README.md"), "# Home\n\nHello from git.\n").unwrap();
    ok(&work, &["commit", "-qam", "Hello from git"]).await;
    ok(&work, &["push", "-q", "origin", "main"]).await;
    merge_edit(
        &app,
        &alice,
        &space,
        "Hello from Quire",
        &home,
        "Hello from Quire.\n",
    )
    .await;
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "failure", "{info}");
    let error = info["operation"]["error"].as_str().unwrap();
    assert!(error.contains("import them first"), "{error}");
    assert!(!error.contains(SECRET), "{error}");
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/import"),
        json!({ "url": url, "ref": "refs/heads/main" }),
    )
    .await
    .expect(204);
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "failure", "{info}");
    let error = info["operation"]["error"].as_str().unwrap();
    assert!(error.contains("\"Home\""), "{error}");
    assert!(error.contains("waits in change request"), "{error}");
    assert_eq!(
        markdown(&app, &alice, &space, &home).await,
        "Hello from Quire.\n",
        "nothing was forced"
    );
    assert_eq!(
        ok(&bare, &["log", "-1", "--format=%s", "main"]).await,
        "Hello from git\n",
        "nothing was overwritten"
    );

    // Another branch, with the content in a folder beside the repository's own files.
    ok(&work, &["checkout", "-q", "-b", "site"]).await;
    ok(&work, &["rm", "-rq", "."]).await;
    std::fs::write(work.join("index.html"), "<p>site</p>\n").unwrap();
    std::fs::create_dir_all(work.join("docs")).unwrap();
    std::fs::write(work.join("docs/old.md"), "old\n").unwrap();
    ok(&work, &["add", "."]).await;
    ok(&work, &["commit", "-qm", "Site"]).await;
    ok(&work, &["push", "-q", "origin", "site"]).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/export"),
        json!({
            "url": url,
            "ref": "refs/heads/site",
            "commitMessage": "Docs into the site",
            "repoProjectDirectory": "/docs/content/"
        }),
    )
    .await
    .expect(204);
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");
    ok(&bare, &["fsck", "--strict"]).await;
    let files = ok(&bare, &["ls-tree", "-r", "--name-only", "site"]).await;
    assert_eq!(
        files,
        "docs/content/README.md\ndocs/content/SUMMARY.md\ndocs/content/guide.md\ndocs/old.md\nindex.html\n"
    );

    // A file the repository keeps in the project folder, then an edit in Quire exported:
    // only the edited page's file changes, inside the folder and out.
    ok(&work, &["pull", "-q", "origin", "site"]).await;
    std::fs::write(work.join("docs/content/ship.sh"), "#!/bin/sh\n").unwrap();
    ok(&work, &["add", "."]).await;
    ok(&work, &["commit", "-qm", "Ship"]).await;
    ok(&work, &["push", "-q", "origin", "site"]).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/import"),
        json!({ "url": url, "ref": "refs/heads/site", "repoProjectDirectory": "docs/content" }),
    )
    .await
    .expect(204);
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");
    merge_edit(
        &app,
        &alice,
        &space,
        "Guide, again",
        &guide,
        "Read on, again.\n",
    )
    .await;
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");
    assert_eq!(
        ok(&bare, &["diff", "--name-status", "site~1", "site"]).await,
        "M\tdocs/content/guide.md\n"
    );
    assert_eq!(
        ok(&bare, &["show", "site:docs/content/ship.sh"]).await,
        "#!/bin/sh\n"
    );

    // Wrong credentials: a failure that does not echo them.
    let wrong = url.replace(SECRET, "not-it");
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/import"),
        json!({ "url": wrong, "ref": "refs/heads/main" }),
    )
    .await
    .expect(204);
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "failure", "{info}");
    assert!(!info.to_string().contains("not-it"), "{info}");
}

/// Only admins set up Git Sync; readers see its state.
#[tokio::test]
async fn git_sync_needs_an_admin() {
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let res = app
        .post(
            &bob,
            &format!("/v1/spaces/{space}/git/export"),
            json!({ "url": "http://127.0.0.1:9/r.git", "ref": "refs/heads/main", "commitMessage": "x" }),
        )
        .await;
    res.expect_error(403);
    app.get(&bob, &format!("/v1/spaces/{space}/git/info"))
        .await
        .expect_error(404);
}

/// A repository GitBook synced, imported and then exported to after an edit: the export's
/// commit changes the edited page's file by the edit's lines alone; every other file (ones
/// Quire does not model, the repository's own paths, frontmatter style, wrapped lines,
/// executable bits) stays as the repository holds it.
#[tokio::test]
async fn an_export_changes_only_the_files_an_edit_changed() {
    if !has_git() {
        return;
    }
    let app = TestApp::start_with(|c| c.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Docs", None).await;

    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("docs.git");
    ok(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", "docs.git"],
    )
    .await;
    let url = remote(bare.clone()).await;
    let work = tmp.path().join("work");
    checkout(&bare, &work).await;
    let files: &[(&str, &str)] = &[
        ("LICENSE", "MIT License\n\nCopyright (c) the team\n"),
        (".github/workflows/docs.yml", "on: push\njobs: {}\n"),
        ("scripts/check.sh", "#!/bin/sh\nexit 0\n"),
        (
            "SUMMARY.md",
            "# Table of contents\n\n* [Welcome](start/welcome.md)\n* [Setting up](start/set-up.md)\n",
        ),
        (
            "start/welcome.md",
            "---\ndescription: >-\n  Where it all\n  begins.\nlayout:\n  title:\n    visible: true\n---\n\n# Welcome\n\nA first paragraph, wrapped\nat a short width, as the team\nwrites it.\n",
        ),
        (
            "start/set-up.md",
            "---\nicon: gear\n---\n\n# Setting up\n\nInstall the tool,\nthen run it.\n\nAsk the team\nwhen stuck.\n",
        ),
    ];
    for (path, text) in files {
        let at = work.join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
    ok(&work, &["add", "."]).await;
    ok(&work, &["update-index", "--chmod=+x", "scripts/check.sh"]).await;
    ok(&work, &["commit", "-qm", "The docs"]).await;
    ok(&work, &["push", "-q", "origin", "main"]).await;

    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/import"),
        json!({ "url": url, "ref": "refs/heads/main" }),
    )
    .await
    .expect(204);
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");

    // An edit of one paragraph, merged, then exported.
    let page = page_id(&app, &alice, &space, "Setting up").await;
    let before = markdown(&app, &alice, &space, &page).await;
    let after = before.replace("when stuck.", "when you are stuck.");
    assert_ne!(before, after, "{before}");
    merge_edit(&app, &alice, &space, "Kinder", &page, &after).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/export"),
        json!({ "url": url, "ref": "refs/heads/main", "commitMessage": "Kinder" }),
    )
    .await
    .expect(204);
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");
    ok(&bare, &["fsck", "--strict"]).await;

    assert_eq!(
        ok(&bare, &["log", "--format=%s", "main"]).await,
        "Kinder\nThe docs\n"
    );
    assert_eq!(
        ok(&bare, &["diff", "--name-status", "main~1", "main"]).await,
        "M\tstart/set-up.md\n"
    );
    assert_eq!(
        ok(&bare, &["show", "main:start/set-up.md"]).await,
        "---\nicon: gear\n---\n\n# Setting up\n\nInstall the tool,\nthen run it.\n\nAsk the team\nwhen you are stuck.\n"
    );
    let modes = ok(&bare, &["ls-tree", "-r", "main", "scripts"]).await;
    assert!(modes.starts_with("100755 "), "{modes}");
    ok(&work, &["pull", "-q", "--ff-only"]).await;
    for (path, text) in files.iter().filter(|(p, _)| *p != "start/set-up.md") {
        assert_eq!(
            std::fs::read_to_string(work.join(path)).unwrap(),
            *text,
            "{path}"
        );
    }

    // An edit in the repository comes back onto the same page, read at the repository's
    // own path: the page keeps its identity.
    let welcome = page_id(&app, &alice, &space, "Welcome").await;
    std::fs::write(
        work.join("start/welcome.md"),
        files[4]
            .1
            .replace("as the team\nwrites it.", "as the team\nwrites it, always."),
    )
    .unwrap();
    ok(&work, &["commit", "-qam", "Always"]).await;
    ok(&work, &["push", "-q", "origin", "main"]).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/git/import"),
        json!({ "url": url, "ref": "refs/heads/main" }),
    )
    .await
    .expect(204);
    let info = settled(&app, &alice, &space).await;
    assert_eq!(info["operation"]["state"], "success", "{info}");
    assert_eq!(page_id(&app, &alice, &space, "Welcome").await, welcome);
    assert!(markdown(&app, &alice, &space, &welcome)
        .await
        .contains("writes it, always."));
    assert_eq!(
        ok(&bare, &["log", "-1", "--format=%s", "main"]).await,
        "Always\n",
        "in step: nothing new exported"
    );
}
