//! Git access: every space is a repository a plain `git` client clones and fetches over
//! smart HTTP, in Git Sync's layout, one commit per revision, a branch per open change
//! request.

use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::harness::{Persona, TestApp, PNG};

/// Whether the `git` client is there (the test command installs it).
pub(crate) fn has_git() -> bool {
    let found = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("NOTICE: git is not installed; the git access tests are skipped");
    }
    found
}

/// Runs `git` in `dir` with a clean configuration; returns its output.
pub(crate) async fn git(dir: &Path, args: &[&str]) -> Output {
    let home = dir.parent().unwrap_or(dir).to_path_buf();
    tokio::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", &home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", "Tester")
        .env("GIT_AUTHOR_EMAIL", "tester@example.com")
        .env("GIT_COMMITTER_NAME", "Tester")
        .env("GIT_COMMITTER_EMAIL", "tester@example.com")
        .output()
        .await
        .expect("git runs")
}

/// Runs `git` and asserts it succeeded; returns its standard output.
pub(crate) async fn ok(dir: &Path, args: &[&str]) -> String {
    let out = git(dir, args).await;
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The repository URL of `space` with `who`'s token as the password.
pub(crate) fn url(app: &TestApp, who: &Persona, space: &str) -> String {
    let host = app.base.trim_start_matches("http://");
    format!("http://git:{}@{host}/git/{space}.git", who.token)
}

/// A clone of `space` by `who` in a new temporary folder: the folder, and the clone in it
/// (`work`).
async fn cloned(
    app: &TestApp,
    who: &Persona,
    space: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    ok(tmp.path(), &["clone", "-q", &url(app, who, space), "work"]).await;
    let work = tmp.path().join("work");
    (tmp, work)
}

/// Opens a change request titled `subject` that sets `page`'s markdown, and merges it.
pub(crate) async fn merge_edit(
    app: &TestApp,
    who: &Persona,
    space: &str,
    subject: &str,
    page: &str,
    markdown: &str,
) {
    let cr = app.open_change_request(who, space, subject).await;
    app.edit_change_request(
        who,
        space,
        &cr,
        json!([{ "operation": "update_page", "page": page, "document": { "markdown": markdown } }]),
    )
    .await;
    app.merge_change_request(who, space, &cr).await;
}

struct Fixture {
    app: TestApp,
    alice: Persona,
    space: String,
}

/// A space with a home page, a guide with a child page linking back, and an image.
async fn fixture() -> Fixture {
    fixture_with(|_| {}).await
}

/// [`fixture`] on a server with the test's configuration.
async fn fixture_with(configure: impl FnOnce(&mut quire_server::ServerConfig)) -> Fixture {
    let app = TestApp::start_with(configure).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    let cr = app.open_change_request(&alice, &space, "First pages").await;
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([
            { "operation": "insert_files", "files": [{ "base64": PNG, "name": "pixel.png" }] }
        ]),
    )
    .await;
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "ref": "home", "title": "Home", "document": { "markdown": "Welcome.\n" } },
            { "operation": "insert_page", "ref": "guide", "title": "Guide", "document": { "markdown": "Read on.\n" } },
            { "operation": "insert_page", "ref": "setup", "into": "guide", "title": "Setup", "document": { "markdown": "Back to [the guide](/pages/guide).\n" } }
        ]),
    )
    .await;
    app.merge_change_request(&alice, &space, &cr).await;
    Fixture { app, alice, space }
}

#[tokio::test]
async fn a_space_clones_fetches_and_pulls_as_a_repository() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (tmp, work) = cloned(&app, &alice, &space).await;

    // Git Sync's layout.
    let read = |p: &str| std::fs::read_to_string(work.join(p)).unwrap();
    assert_eq!(
        read("SUMMARY.md"),
        "# Table of contents\n\n* [Home](README.md)\n* [Guide](guide/README.md)\n  * [Setup](guide/setup.md)\n"
    );
    assert_eq!(read("README.md"), "# Home\n\nWelcome.\n");
    assert_eq!(
        read("guide/setup.md"),
        "# Setup\n\nBack to [the guide](README.md).\n"
    );
    let files = ok(&work, &["ls-files"]).await;
    assert!(files.contains(".gitbook/assets/pixel.png"), "{files}");
    use base64::Engine;
    assert_eq!(
        std::fs::read(work.join(".gitbook/assets/pixel.png")).unwrap(),
        base64::engine::general_purpose::STANDARD
            .decode(PNG)
            .unwrap()
    );

    // One commit per revision, the merge with both parents and GitBook's message.
    let log = ok(&work, &["log", "--format=%P|%an|%ae|%s", "main"]).await;
    let lines: Vec<&str> = log.lines().collect();
    let top: Vec<&str> = lines[0].split('|').collect();
    assert_eq!(top[0].split(' ').count(), 2, "{log}");
    assert_eq!(top[1], "alice");
    assert_eq!(top[2], format!("{}@users.noreply.quire", alice.id));
    assert_eq!(top[3], "GITBOOK-1: First pages");
    // The space's first revision, then the change request's two batches, then the merge.
    assert_eq!(lines.len(), 4, "{log}");
    let root = ok(&work, &["log", "--max-parents=0", "--format=%s", "main"]).await;
    assert_eq!(root.trim(), "Initial content");
    ok(&work, &["fsck", "--strict", "--no-dangling"]).await;

    // An open change request is a branch.
    let cr = app.open_change_request(&alice, &space, "Edit home").await;
    let home = page_id(&app, &alice, &space, "Home").await;
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([{ "operation": "update_page", "page": home, "document": { "markdown": "Welcome, reader.\n" } }]),
    )
    .await;
    ok(&work, &["fetch", "-q"]).await;
    let branch = ok(&work, &["show", "origin/change-requests/2:README.md"]).await;
    assert_eq!(branch, "# Home\n\nWelcome, reader.\n");

    // Merged, the branch goes and `git pull` fast-forwards to the merge.
    app.merge_change_request(&alice, &space, &cr).await;
    ok(&work, &["pull", "-q", "--ff-only", "--prune"]).await;
    assert_eq!(read("README.md"), "# Home\n\nWelcome, reader.\n");
    let refs = ok(&work, &["branch", "-r"]).await;
    assert!(!refs.contains("change-requests/2"), "{refs}");
    assert_eq!(
        ok(&work, &["log", "-1", "--format=%s"]).await.trim(),
        "GITBOOK-2: Edit home"
    );

    // The same revisions give the same commits after the repository is rebuilt.
    let head = ok(&work, &["rev-parse", "HEAD"]).await;
    std::fs::remove_dir_all(app.config.data_dir.join("git")).unwrap();
    let again = tmp.path().join("again");
    ok(
        tmp.path(),
        &["clone", "-q", &url(&app, &alice, &space), "again"],
    )
    .await;
    assert_eq!(ok(&again, &["rev-parse", "HEAD"]).await, head);
    ok(&again, &["fsck", "--strict", "--no-dangling"]).await;
}

pub(crate) async fn page_id(app: &TestApp, who: &Persona, space: &str, title: &str) -> String {
    let pages = app
        .get(who, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    let mut stack: Vec<&serde_json::Value> = pages["pages"].as_array().unwrap().iter().collect();
    while let Some(p) = stack.pop() {
        if p["title"] == title {
            return p["id"].as_str().unwrap().to_string();
        }
        stack.extend(p["pages"].as_array().into_iter().flatten());
    }
    panic!("no page {title}");
}

#[tokio::test]
async fn shallow_partial_and_both_protocol_versions_work() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let tmp = tempfile::tempdir().unwrap();
    let url = url(&app, &alice, &space);
    for (name, args) in [
        ("v0", vec!["-c", "protocol.version=0", "clone", "-q"]),
        ("v2", vec!["-c", "protocol.version=2", "clone", "-q"]),
        ("shallow", vec!["clone", "-q", "--depth", "1"]),
        ("partial", vec!["clone", "-q", "--filter=blob:none"]),
    ] {
        let mut args = args;
        args.push(&url);
        args.push(name);
        ok(tmp.path(), &args).await;
        let dir = tmp.path().join(name);
        assert_eq!(
            std::fs::read_to_string(dir.join("README.md")).unwrap(),
            "# Home\n\nWelcome.\n",
            "{name}"
        );
        let count = ok(&dir, &["rev-list", "--count", "HEAD"]).await;
        let expected = if name == "shallow" { "1" } else { "4" };
        assert_eq!(count.trim(), expected, "{name}");
        ok(&dir, &["fsck", "--no-dangling"]).await;
    }
}

#[tokio::test]
async fn git_access_follows_the_apis_rules() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let bob = app.persona("bob").await;
    let tmp = tempfile::tempdir().unwrap();
    let refs = format!("/git/{space}.git/info/refs?service=git-upload-pack");
    let client = reqwest::Client::new();

    // No credentials: asked for them.
    let res = client
        .get(format!("{}{refs}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    assert!(res.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .starts_with("Basic"));
    // A wrong token: asked again.
    let res = client
        .get(format!("{}{refs}", app.base))
        .basic_auth("x", Some("not-a-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    // Someone who may not read the space: the same 404 as no space at all.
    let res = client
        .get(format!("{}{refs}", app.base))
        .basic_auth("bob", Some(&bob.token))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let missing = client
        .get(format!(
            "{}/git/nospace.git/info/refs?service=git-upload-pack",
            app.base
        ))
        .basic_auth("bob", Some(&bob.token))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let out = git(
        tmp.path(),
        &["clone", "-q", &url(&app, &bob, &space), "bob"],
    )
    .await;
    assert!(!out.status.success());
    // The dumb protocol is not served.
    let res = client
        .get(format!("{}/git/{space}.git/info/refs", app.base))
        .basic_auth("alice", Some(&alice.token))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);

    // A reader may clone but not push.
    app.add_member(
        &alice,
        &org_of(&app, &alice, &space).await,
        &bob,
        json!("read"),
    )
    .await;
    let res = client
        .get(format!(
            "{}/git/{space}.git/info/refs?service=git-receive-pack",
            app.base
        ))
        .basic_auth("bob", Some(&bob.token))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    ok(
        tmp.path(),
        &["clone", "-q", &url(&app, &bob, &space), "bob-reads"],
    )
    .await;
}

async fn org_of(app: &TestApp, who: &Persona, space: &str) -> String {
    app.get(who, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["organization"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Pushes `args` and returns git's whole output (its `remote:` lines included).
pub(crate) async fn push(dir: &Path, args: &[&str]) -> (bool, String) {
    let mut all = vec!["push"];
    all.extend_from_slice(args);
    let out = git(dir, &all).await;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test]
async fn a_pushed_branch_becomes_a_change_request_and_merges_back_as_pushed() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (tmp, work) = cloned(&app, &alice, &space).await;
    let home = page_id(&app, &alice, &space, "Home").await;
    let setup = page_id(&app, &alice, &space, "Setup").await;

    // A hand-wrapped edit of one page, pushed to a new branch.
    std::fs::write(work.join("README.md"), "# Home\n\nWelcome, reader.\n").unwrap();
    ok(&work, &["commit", "-qam", "Greet the reader"]).await;
    let pushed = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/greeting"]).await;
    assert!(done, "{said}");
    assert!(said.contains("remote: Change request #2 opened:"), "{said}");
    assert!(said.contains(&format!("/s/{space}/~/changes/2")), "{said}");
    // The branch keeps its name: a clone sees it beside `change-requests/2`.
    let remote = ok(&work, &["ls-remote", "origin"]).await;
    assert!(
        remote.contains(&format!("{pushed}\trefs/heads/greeting")),
        "{remote}"
    );
    assert!(
        remote.contains(&format!("{pushed}\trefs/heads/change-requests/2")),
        "{remote}"
    );

    let cr = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/2"))
        .await
        .expect(200);
    assert_eq!(cr["subject"], "Greet the reader");
    assert_eq!(cr["status"], "open");
    // Exactly that change: one page, the same ids as before.
    let changes = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/2/changes"),
        )
        .await
        .expect(200);
    let pages: Vec<(&str, &str)> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or(""),
                c["page"]["id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(pages, [("page_edited", home.as_str())], "{changes}");
    let doc = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/2/content/page/{home}?format=markdown"),
        )
        .await
        .expect(200);
    assert_eq!(doc["markdown"], "Welcome, reader.\n", "{doc}");

    // Pushing on: the change request's branch, fast-forward only.
    std::fs::write(
        work.join("guide/setup.md"),
        "# Setup\n\nBack to [the guide](README.md).\n\nInstall it.\n",
    )
    .unwrap();
    ok(&work, &["commit", "-qam", "Say how"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/greeting"]).await;
    assert!(done, "{said}");
    assert!(said.contains("Change request #2 updated"), "{said}");
    let last = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    ok(&work, &["commit", "-q", "--amend", "-m", "Rewritten"]).await;
    let (done, said) = push(
        &work,
        &["-f", "origin", "HEAD:refs/heads/change-requests/2"],
    )
    .await;
    assert!(!done, "{said}");
    assert!(said.contains("force push is refused"), "{said}");
    ok(&work, &["reset", "-q", "--hard", &last]).await;

    // Merged through the API, the pushed commits are main's history: pull fast-forwards.
    app.merge_change_request(&alice, &space, "2").await;
    ok(&work, &["pull", "-q", "--ff-only", "origin", "main"]).await;
    ok(&work, &["merge-base", "--is-ancestor", &pushed, "HEAD"]).await;
    ok(&work, &["merge-base", "--is-ancestor", &last, "HEAD"]).await;
    let setup_md = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/page/{setup}?format=markdown"),
        )
        .await
        .expect(200);
    assert_eq!(
        setup_md["markdown"],
        "Back to [the guide](/pages/{guide}).\n\nInstall it.\n"
            .replace("{guide}", &page_id(&app, &alice, &space, "Guide").await),
        "{setup_md}"
    );
    ok(&work, &["fsck", "--strict", "--no-dangling"]).await;

    // The repository rebuilt from the database (another node's) holds the pushed commits.
    let head = ok(&work, &["rev-parse", "HEAD"]).await;
    std::fs::remove_dir_all(app.config.data_dir.join("git")).unwrap();
    let again = tmp.path().join("again");
    ok(
        tmp.path(),
        &["clone", "-q", &url(&app, &alice, &space), "again"],
    )
    .await;
    assert_eq!(ok(&again, &["rev-parse", "HEAD"]).await, head);
    ok(&again, &["fsck", "--strict", "--no-dangling"]).await;
}

#[tokio::test]
async fn a_push_to_main_merges_at_once_unless_it_conflicts() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    std::fs::write(work.join("README.md"), "# Home\n\nFrom git.\n").unwrap();
    ok(&work, &["commit", "-qam", "Straight to main"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");
    assert!(
        said.contains("Merged into main as change request #2"),
        "{said}"
    );
    let home = page_id(&app, &alice, &space, "Home").await;
    let md = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/page/{home}?format=markdown"),
        )
        .await
        .expect(200);
    assert_eq!(md["markdown"], "From git.\n");
    // Main is the pushed commit itself: nothing to pull, and the revision says so.
    let pushed = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    ok(&work, &["fetch", "-q"]).await;
    assert_eq!(
        ok(&work, &["rev-parse", "origin/main"]).await.trim(),
        pushed
    );
    let main = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    assert_eq!(
        main["git"],
        json!({"oid": pushed, "message": "Straight to main", "createdByGitBook": false}),
        "{main}"
    );
    assert_eq!(main["type"], "merge", "{main}");

    // Main moves on the same lines; a push editing them is refused, naming the page.
    merge_edit(&app, &alice, &space, "Web edit", &home, "From the web.\n").await;
    let before = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .clone();
    std::fs::write(work.join("README.md"), "# Home\n\nFrom git, again.\n").unwrap();
    ok(&work, &["commit", "-qam", "Again"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/again"]).await;
    assert!(!done, "{said}");
    assert!(said.contains("Home"), "{said}");
    let after = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .clone();
    assert_eq!(before, after);
}

/// A published site of `space`: its organization, its id and its published URL.
pub(crate) async fn published_site(
    app: &TestApp,
    who: &Persona,
    space: &str,
) -> (String, String, String) {
    let org = org_of(app, who, space).await;
    let site = app
        .post(
            who,
            &format!("/v1/orgs/{org}/sites"),
            json!({ "title": "Docs", "spaces": [space] }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let published = app
        .post(
            who,
            &format!("/v1/orgs/{org}/sites/{site}/publish"),
            json!({}),
        )
        .await
        .expect(200)["urls"]["published"]
        .as_str()
        .unwrap()
        .to_string();
    (org, site, published)
}

/// A reusable content pushed under `.gitbook/includes/` and included by two pages: editing
/// its one file changes what both pages show on the published site.
#[tokio::test]
async fn an_include_edited_once_changes_every_page_that_includes_it() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_, _, published) = published_site(&app, &alice, &space).await;
    let shown = |path: &str| {
        let url = format!("{published}{path}");
        async move { reqwest::get(url).await.unwrap().text().await.unwrap() }
    };
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    std::fs::create_dir_all(work.join(".gitbook/includes")).unwrap();
    let banner = work.join(".gitbook/includes/banner.md");
    std::fs::write(&banner, "---\ntitle: Banner\n---\n\nBanner version one.\n").unwrap();
    std::fs::write(
        work.join("README.md"),
        "# Home\n\nWelcome.\n\n{% include \".gitbook/includes/banner.md\" %}\n",
    )
    .unwrap();
    let setup = std::fs::read_to_string(work.join("guide/setup.md")).unwrap();
    std::fs::write(
        work.join("guide/setup.md"),
        format!("{setup}\n{{% include \"../.gitbook/includes/banner.md\" %}}\n"),
    )
    .unwrap();
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "A banner on two pages"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");
    let content = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    let rc = content["reusableContents"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        content["reusableContents"][0]["title"], "Banner",
        "{content}"
    );
    for page in ["", "guide/setup"] {
        assert!(shown(page).await.contains("Banner version one."), "{page}");
    }

    ok(&work, &["pull", "-q", "--ff-only"]).await;
    std::fs::write(&banner, "---\ntitle: Banner\n---\n\nBanner version two.\n").unwrap();
    ok(&work, &["commit", "-qam", "The banner, edited"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");
    let content = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    assert_eq!(
        content["reusableContents"][0]["id"],
        json!(rc),
        "the same content"
    );
    let doc = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/reusable-contents/{rc}"),
        )
        .await
        .expect(200);
    let body = app
        .get(
            &alice,
            &format!(
                "/v1/spaces/{space}/documents/{}",
                doc["document"].as_str().unwrap()
            ),
        )
        .await
        .expect(200);
    assert!(body.to_string().contains("Banner version two."), "{body}");
    for page in ["", "guide/setup"] {
        let html = shown(page).await;
        assert!(html.contains("Banner version two."), "{page}: {html}");
        assert!(!html.contains("Banner version one."), "{page}");
    }
}

/// `.gitbook.yaml`'s `redirects:` pushed to main become redirects of the sites publishing
/// the space, followed by the published site; pushed again, the file's mapping wins.
#[tokio::test]
async fn gitbook_yaml_redirects_reach_the_sites_of_the_space() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (org, site, published) = published_site(&app, &alice, &space).await;
    let no_follow = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let location = |path: &str| {
        let (client, url) = (no_follow.clone(), format!("{published}{path}"));
        async move {
            let res = client.get(url).send().await.unwrap();
            let status = res.status().as_u16();
            let to = res
                .headers()
                .get("location")
                .map(|l| l.to_str().unwrap().to_string());
            (status, to)
        }
    };
    assert_eq!(location("old/setup").await.0, 404);

    let (_tmp, work) = cloned(&app, &alice, &space).await;
    // Quire keeps no `.gitbook.yaml` in the content (a pull after a merge removes it), so
    // each commit adds it again.
    let push_config = |text: &'static str, message: &'static str| {
        let work = work.clone();
        async move {
            ok(&work, &["pull", "-q", "--ff-only"]).await;
            std::fs::write(work.join(".gitbook.yaml"), text).unwrap();
            ok(&work, &["add", "-A"]).await;
            ok(&work, &["commit", "-qm", message]).await;
            push(&work, &["origin", "HEAD:main"]).await
        }
    };
    let (done, said) = push_config(
        "root: ./\nredirects:\n  old/setup: guide/setup.md\n  gone: ./nowhere.md\n",
        "Redirects",
    )
    .await;
    assert!(done, "{said}");
    assert!(said.contains("1 site redirects written"), "{said}");
    assert!(said.contains("`./nowhere.md` is no page"), "{said}");
    let (status, to) = location("old/setup").await;
    assert_eq!(status, 301);
    assert_eq!(
        to.as_deref(),
        Some(format!("{published}guide/setup").as_str())
    );
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/sites/{site}/redirects"))
        .await
        .expect(200);
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["items"][0]["source"], "/old/setup");

    // The file changes its mind: the redirect follows.
    let (done, said) = push_config("redirects:\n  old/setup: README.md\n", "Elsewhere").await;
    assert!(done, "{said}");
    assert_eq!(
        location("old/setup").await.1,
        Some(format!("{published}home"))
    );
    // A bad file refuses the push, naming it.
    let (done, said) = push_config("redirects: [a, b]\n", "Broken").await;
    assert!(!done && said.contains(".gitbook.yaml"), "{said}");
}

#[tokio::test]
async fn pushes_that_cannot_be_read_are_refused_naming_the_file() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let before = open_count(&app, &alice, &space).await;
    for (what, change, reason) in [
        (
            "yaml",
            "printf -- '---\\nhidden: [oops\\n---\\n\\n# Home\\n' > README.md",
            "`README.md`",
        ),
        ("symlink", "ln -s README.md link.md", "symbolic links"),
    ] {
        ok(&work, &["checkout", "-q", "-B", what, "origin/main"]).await;
        let out = tokio::process::Command::new("sh")
            .args(["-c", change])
            .current_dir(&work)
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{what}");
        ok(&work, &["add", "-A"]).await;
        ok(&work, &["commit", "-qm", what]).await;
        let (done, said) = push(&work, &["origin", &format!("HEAD:refs/heads/{what}")]).await;
        assert!(!done, "{what}: {said}");
        assert!(said.contains(reason), "{what}: {said}");
    }
    assert_eq!(
        open_count(&app, &alice, &space).await,
        before,
        "no change request was opened"
    );

    // A locked space refuses every push.
    app.patch(
        &alice,
        &format!("/v1/spaces/{space}"),
        json!({ "editMode": "locked" }),
    )
    .await
    .expect(200);
    ok(&work, &["checkout", "-q", "-B", "fine", "origin/main"]).await;
    std::fs::write(work.join("README.md"), "# Home\n\nFine.\n").unwrap();
    ok(&work, &["commit", "-qam", "Fine"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/fine"]).await;
    assert!(!done, "{said}");
    assert!(said.contains("locked"), "{said}");
}

/// Past a few hundred objects the repository is packed (with bitmaps); later commits add
/// only their new objects, and clones and fetches read both.
/// Commits made before their ids were recorded (by a node older than the `commit_oid`
/// column) get their ids recorded the next time the repository is brought up to date.
#[tokio::test]
async fn commit_ids_made_before_they_were_recorded_are_recorded_later() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let head = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let first = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    let revision = format!(
        "/v1/spaces/{space}/revisions/{}",
        first["id"].as_str().unwrap()
    );
    assert_eq!(first["git"]["oid"], head.as_str(), "{first}");
    // As an older node left them: the commits made, their ids not recorded.
    sqlx::query("UPDATE git_commits SET commit_oid = NULL WHERE space_id = $1")
        .bind(&space)
        .execute(app.state.db.pool())
        .await
        .unwrap();
    let home = page_id(&app, &alice, &space, "Home").await;
    merge_edit(&app, &alice, &space, "One page", &home, "Changed.\n").await;
    let unrecorded = app.get(&alice, &revision).await.expect(200);
    assert!(unrecorded.get("git").is_none(), "{unrecorded}");
    // The fetch makes the new commits and records every id this copy knows.
    ok(&work, &["pull", "-q", "--ff-only"]).await;
    let recorded = app.get(&alice, &revision).await.expect(200);
    assert_eq!(recorded["git"]["oid"], head.as_str(), "{recorded}");
    let main = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let now = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    assert_eq!(now["git"]["oid"], main.as_str(), "{now}");
}

#[tokio::test]
async fn a_large_history_is_packed_and_later_commits_add_only_theirs() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let cr = app.open_change_request(&alice, &space, "Many pages").await;
    for batch in 0..6 {
        let changes: Vec<serde_json::Value> = (0..50)
            .map(|i| json!({ "operation": "insert_page", "title": format!("Page {batch}-{i}"), "document": { "markdown": format!("Body {batch} {i}.\n") } }))
            .collect();
        app.edit_change_request(&alice, &space, &cr, json!(changes))
            .await;
    }
    app.merge_change_request(&alice, &space, &cr).await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let repo = app.config.data_dir.join("git").join(format!("{space}.git"));
    let packs: Vec<_> = std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(packs.iter().any(|p| p.ends_with(".pack")), "{packs:?}");
    assert!(packs.iter().any(|p| p.ends_with(".bitmap")), "{packs:?}");
    // The history was written as one pack of whole objects; the repack found the deltas
    // (the trees of one commit after another are alike), so a clone receives them.
    let idx = packs.iter().find(|p| p.ends_with(".idx")).unwrap();
    let idx = repo.join("objects/pack").join(idx);
    let verified = ok(&repo, &["verify-pack", "-v", idx.to_str().unwrap()]).await;
    assert!(verified.contains("chain length = 1"), "{verified}");

    // A one-page merge writes its few objects loose, not the whole tree again.
    let loose_before = loose_objects(&repo);
    let home = page_id(&app, &alice, &space, "Home").await;
    merge_edit(&app, &alice, &space, "One page", &home, "Changed.\n").await;
    let objects = |text: String| -> u64 {
        text.lines()
            .filter_map(|l| {
                l.strip_prefix("count: ")
                    .or_else(|| l.strip_prefix("in-pack: "))
            })
            .map(|n| n.trim().parse::<u64>().unwrap())
            .sum()
    };
    let before = objects(ok(&work, &["count-objects", "-v"]).await);
    ok(&work, &["pull", "-q", "--ff-only"]).await;
    assert_eq!(
        std::fs::read_to_string(work.join("README.md")).unwrap(),
        "# Home\n\nChanged.\n"
    );
    // The fetch brought only what is new: two commits, two root trees, one page.
    let fetched = objects(ok(&work, &["count-objects", "-v"]).await) - before;
    assert!(
        (3..=6).contains(&fetched),
        "{fetched} objects fetched for a one-page merge"
    );
    let written = loose_objects(&repo) - loose_before;
    // Two commits (the batch and the merge), the root tree twice, README.md once.
    assert!(
        written <= 6,
        "{written} objects written for a one-page merge"
    );
    ok(&work, &["fsck", "--strict", "--no-dangling"]).await;
}

fn loose_objects(repo: &Path) -> usize {
    std::fs::read_dir(repo.join("objects"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().len() == 2)
        .map(|e| std::fs::read_dir(e.path()).unwrap().count())
        .sum()
}

async fn open_count(app: &TestApp, who: &Persona, space: &str) -> serde_json::Value {
    app.get(who, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["changeRequestsOpen"]
        .clone()
}

/// A purged space's repository leaves the node that purged it, and any other node's copy
/// goes at its next sweep; a deleted space that can still be restored keeps its copy.
#[tokio::test]
async fn a_purged_spaces_repository_is_removed() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let tmp = tempfile::tempdir().unwrap();
    ok(
        tmp.path(),
        &["clone", "-q", &url(&app, &alice, &space), "work"],
    )
    .await;
    let repo = app.config.data_dir.join("git").join(format!("{space}.git"));
    assert!(repo.join("HEAD").exists());
    // Another node's copy of a space purged elsewhere.
    let stray = app.config.data_dir.join("git").join("purged-elsewhere.git");
    std::fs::create_dir_all(stray.join("objects")).unwrap();
    let swept = quire_server::domain::git::sweep(&app.state).await.unwrap();
    assert_eq!(swept, 1);
    assert!(!stray.exists());
    assert!(repo.exists(), "a live space keeps its repository");

    app.delete(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(204);
    quire_server::domain::git::sweep(&app.state).await.unwrap();
    assert!(
        repo.exists(),
        "a deleted space can be restored: its repository stays"
    );
    app.clock.advance_ms(8 * 24 * 60 * 60 * 1000);
    quire_server::domain::jobs::run_due(&app.state)
        .await
        .unwrap();
    app.get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect_error(404);
    assert!(!repo.exists(), "the purge removed the repository");
}

/// Pushes past the size cap, with a submodule, or deleting a branch are refused, and nothing
/// changes.
#[tokio::test]
async fn oversized_pushes_submodules_and_deletions_are_refused() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture_with(|c| c.max_import_bytes = 64 * 1024).await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let before = open_count(&app, &alice, &space).await;

    // Bytes that do not compress (xorshift).
    let noise = |len: usize, mut x: u64| -> Vec<u8> {
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    // One file past the cap (its pack, compressed, is under it).
    std::fs::write(work.join(".gitbook/assets/big.bin"), vec![b'a'; 200_000]).unwrap();
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "Big"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/big"]).await;
    assert!(!done, "{said}");
    assert!(said.contains("is larger than 65536 bytes"), "{said}");
    ok(&work, &["reset", "-q", "--hard", "origin/main"]).await;
    // Files each under the cap whose pack is past it: the request itself is refused.
    for i in 0..3 {
        std::fs::write(
            work.join(format!(".gitbook/assets/part{i}.bin")),
            noise(40_000, 11 + i),
        )
        .unwrap();
    }
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "Parts"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/parts"]).await;
    assert!(!done, "{said}");
    // The reason reaches the person pushing, on a `remote:` line and in the ref's status.
    assert!(
        said.contains("remote: Refused: the push holds more than 65536 bytes"),
        "{said}"
    );
    assert!(said.contains("[remote rejected]"), "{said}");
    ok(&work, &["reset", "-q", "--hard", "origin/main"]).await;

    // A submodule (a commit in the tree).
    let head = ok(&work, &["rev-parse", "HEAD"]).await;
    ok(
        &work,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{},vendored", head.trim()),
        ],
    )
    .await;
    ok(&work, &["commit", "-qm", "Submodule"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/sub"]).await;
    assert!(!done, "{said}");
    assert!(said.contains("submodules are not accepted"), "{said}");
    assert_eq!(open_count(&app, &alice, &space).await, before);

    // Deleting a change request's branch: Quire does not offer `delete-refs`, so the client
    // refuses it itself (the server refuses a deletion sent anyway).
    app.open_change_request(&alice, &space, "Kept").await;
    ok(&work, &["fetch", "-q"]).await;
    let (done, said) = push(&work, &["origin", "--delete", "change-requests/2"]).await;
    assert!(!done, "{said}");
    assert!(
        said.contains("[remote rejected] change-requests/2"),
        "{said}"
    );
    let cr = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/2"))
        .await
        .expect(200);
    assert_eq!(cr["status"], "open");
}

/// Past `--max-git-operations` running at once, a git request waits `busy_wait_ms`, then is
/// answered 503 with `Retry-After`; once a turn is free it is served.
#[tokio::test]
async fn git_requests_past_the_cap_are_answered_503() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture_with(|c| {
        c.max_git_operations = 1;
        c.busy_wait_ms = 100;
    })
    .await;
    let refs = format!(
        "{}/git/{space}.git/info/refs?service=git-upload-pack",
        app.base
    );
    let http = reqwest::Client::new();
    let held = app.state.git_runs.clone().acquire_owned().await.unwrap();
    let res = http
        .get(&refs)
        .basic_auth("git", Some(&alice.token))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    let body: serde_json::Value = res.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("git operations"),
        "{body}"
    );
    drop(held);
    let res = http
        .get(&refs)
        .basic_auth("git", Some(&alice.token))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

/// The dialect's corpus (every block, inline and mark, as Git Sync writes them) pushed to
/// an empty space's `main` in Git Sync's layout comes back from a fresh clone byte for byte,
/// `SUMMARY.md` included.
#[tokio::test]
async fn the_corpus_pushed_through_git_comes_back_byte_for_byte() {
    if !has_git() {
        return;
    }
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Corpus", None).await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let mut summary = String::from("# Table of contents\n\n");
    let mut pushed: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, (name, text)) in crate::harness::corpus().into_iter().enumerate() {
        let title = quire_content::frontmatter::split_page_markdown(&text)
            .unwrap()
            .heading
            .unwrap_or_else(|| name.clone());
        let path = if i == 0 {
            "README.md".to_string()
        } else {
            name.clone()
        };
        summary.push_str(&format!("* [{title}]({path})\n"));
        pushed.push((path, text.into_bytes()));
    }
    pushed.push(("SUMMARY.md".into(), summary.into_bytes()));
    for entry in std::fs::read_dir(&work).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != ".git" {
            let p = entry.path();
            if p.is_dir() {
                std::fs::remove_dir_all(p).unwrap();
            } else {
                std::fs::remove_file(p).unwrap();
            }
        }
    }
    for (path, bytes) in &pushed {
        std::fs::write(work.join(path), bytes).unwrap();
    }
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "The corpus"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");

    let (_again_tmp, again) = cloned(&app, &alice, &space).await;
    let mut differ = Vec::new();
    for (path, bytes) in &pushed {
        match std::fs::read(again.join(path)) {
            Ok(got) if &got == bytes => {}
            Ok(got) => differ.push(format!(
                "{path}: {}",
                String::from_utf8_lossy(&got)
                    .chars()
                    .take(200)
                    .collect::<String>()
            )),
            Err(_) => differ.push(format!("{path}: missing")),
        }
    }
    assert!(
        differ.is_empty(),
        "files that changed:\n{}",
        differ.join("\n")
    );
    let listed = ok(&again, &["ls-files"]).await;
    assert_eq!(listed.lines().count(), pushed.len(), "{listed}");
}

/// `path oid` of every file of `rev` in the clone at `dir`.
async fn tree_of(dir: &Path, rev: &str) -> std::collections::HashMap<String, String> {
    ok(dir, &["ls-tree", "-r", "--full-tree", rev])
        .await
        .lines()
        .filter_map(|l| {
            let (meta, path) = l.split_once('\t')?;
            Some((path.to_string(), meta.split(' ').nth(2)?.to_string()))
        })
        .collect()
}

#[tokio::test]
async fn revisions_pages_and_files_carry_their_commit_and_blobs() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let content = format!("/v1/spaces/{space}/content");
    // No node has made the revision's commit yet: no `git`.
    let before = app.get(&alice, &content).await.expect(200);
    assert!(before.get("git").is_none(), "{before}");

    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let head = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let tree = tree_of(&work, "HEAD").await;
    let rev = app.get(&alice, &content).await.expect(200);
    assert_eq!(
        rev["git"],
        json!({"oid": head, "message": "GITBOOK-1: First pages", "createdByGitBook": true}),
        "{rev}"
    );
    // Every document page's blob is its file at that commit; groups have none.
    let mut pages: Vec<&serde_json::Value> = rev["pages"].as_array().unwrap().iter().collect();
    let mut seen = Vec::new();
    while let Some(p) = pages.pop() {
        pages.extend(p["pages"].as_array().into_iter().flatten());
        let path = p["git"]["path"]
            .as_str()
            .expect("a document page has its blob");
        assert_eq!(
            p["git"]["oid"].as_str(),
            tree.get(path).map(String::as_str),
            "{p}"
        );
        seen.push(path.to_string());
    }
    seen.sort();
    assert_eq!(seen, ["README.md", "guide/README.md", "guide/setup.md"]);
    let setup = page_id(&app, &alice, &space, "Setup").await;
    let page = app
        .get(&alice, &format!("{content}/page/{setup}"))
        .await
        .expect(200);
    assert_eq!(page["git"]["path"], "guide/setup.md", "{page}");
    assert_eq!(
        page["git"]["oid"].as_str(),
        tree.get("guide/setup.md").map(String::as_str)
    );
    let file = &rev["files"][0];
    assert_eq!(file["git"]["path"], ".gitbook/assets/pixel.png", "{file}");
    assert_eq!(
        file["git"]["oid"].as_str(),
        tree.get(".gitbook/assets/pixel.png").map(String::as_str)
    );
    let one = app
        .get(
            &alice,
            &format!("{content}/files/{}", file["id"].as_str().unwrap()),
        )
        .await
        .expect(200);
    assert_eq!(one["git"], file["git"]);
    let listed = app
        .get(&alice, &format!("{content}/files"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["git"], file["git"]);

    // A pushed revision's commit is the pushed one, not made by Quire.
    std::fs::write(work.join("README.md"), "# Home\n\nWelcome,\nreader.\n").unwrap();
    ok(&work, &["commit", "-qam", "Greet the reader"]).await;
    let pushed = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/greeting"]).await;
    assert!(done, "{said}");
    let cr_rev = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/2/content"),
        )
        .await
        .expect(200);
    assert_eq!(
        cr_rev["git"],
        json!({"oid": pushed, "message": "Greet the reader", "createdByGitBook": false}),
        "{cr_rev}"
    );
    // Its merge is a commit Quire makes: known once a node made it (here, at the fetch).
    app.merge_change_request(&alice, &space, "2").await;
    let merged = app.get(&alice, &content).await.expect(200);
    assert!(merged.get("git").is_none(), "{merged}");
    ok(&work, &["pull", "-q", "--ff-only", "origin", "main"]).await;
    let main = ok(&work, &["rev-parse", "origin/main"])
        .await
        .trim()
        .to_string();
    let merged = app.get(&alice, &content).await.expect(200);
    assert_eq!(merged["git"]["oid"], main.as_str(), "{merged}");
    assert_eq!(merged["git"]["message"], "GITBOOK-2: Greet the reader");
    // The merge's tree, made by Quire, holds the hand-wrapped page as it was pushed; the
    // API's JSON document reads the line end as a space.
    assert_eq!(
        ok(&work, &["show", "origin/main:README.md"]).await,
        "# Home\n\nWelcome,\nreader.\n"
    );
    let home = page_id(&app, &alice, &space, "Home").await;
    let md = app
        .get(&alice, &format!("{content}/page/{home}?format=markdown"))
        .await
        .expect(200);
    assert_eq!(md["markdown"], "Welcome,\nreader.\n", "{md}");
    let doc = app
        .get(&alice, &format!("{content}/page/{home}?format=document"))
        .await
        .expect(200);
    let text = doc["document"]["nodes"][0]["nodes"][0]["leaves"][0]["text"].clone();
    assert_eq!(text, "Welcome, reader.", "{doc}");
}

/// This node's copy of `space`'s repository.
fn repo_of(app: &TestApp, space: &str) -> std::path::PathBuf {
    app.config.data_dir.join("git").join(format!("{space}.git"))
}

/// A fresh clone of `space` from `node` works, holds `main` at `head`, and both it and the
/// node's copy pass `git fsck`.
async fn clones_whole(node: &TestApp, who: &Persona, space: &str, head: &str) {
    let (_tmp, work) = cloned(node, who, space).await;
    assert_eq!(ok(&work, &["rev-parse", "HEAD"]).await.trim(), head);
    ok(&work, &["fsck", "--strict", "--no-dangling"]).await;
    ok(&repo_of(node, space), &["fsck", "--no-dangling"]).await;
}

/// A commit recorded while its object is missing (what a crash could leave) is found at the
/// first preparation after a restart, and the repository is made again from the database:
/// the same commits, a clone that works.
#[tokio::test]
async fn a_recorded_commit_whose_object_is_missing_is_made_again_after_a_restart() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let head = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let object = repo_of(&app, &space)
        .join("objects")
        .join(&head[..2])
        .join(&head[2..]);
    std::fs::remove_file(&object).unwrap();
    // Restarted (a node with a fresh memory of what it checked).
    let restarted = app.another_node().await;
    clones_whole(&restarted, &alice, &space, &head).await;
}

/// A map file whose last line a crash cut short is found and the repository made again.
#[tokio::test]
async fn a_commits_map_cut_short_is_repaired_after_a_restart() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let head = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let map = repo_of(&app, &space).join("quire-commits");
    let text = std::fs::read_to_string(&map).unwrap();
    let (main, others): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.ends_with(&head));
    assert_eq!(main.len(), 1, "{text}");
    let mut torn: String = others.iter().map(|l| format!("{l}\n")).collect();
    torn.push_str(&main[0][..main[0].len() - 20]);
    std::fs::write(&map, torn).unwrap();
    let restarted = app.another_node().await;
    clones_whole(&restarted, &alice, &space, &head).await;
}

/// A pushed pack recorded as imported while its files were still in the push's quarantine
/// (a crash between the two, as an older node ordered them) leaves the pushed commit
/// missing: the check after a restart finds it and imports the pack from blob storage.
#[tokio::test]
async fn a_pushed_pack_left_in_quarantine_is_imported_again_after_a_restart() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    std::fs::write(work.join("README.md"), "# Home\n\nPushed.\n").unwrap();
    ok(&work, &["commit", "-qam", "Pushed"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/pushed"]).await;
    assert!(done, "{said}");
    app.merge_change_request(&alice, &space, "2").await;
    ok(&work, &["pull", "-q", "--ff-only", "origin", "main"]).await;
    let head = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let repo = repo_of(&app, &space);
    let quarantine = repo.join("quire-incoming-0").join("pack");
    std::fs::create_dir_all(&quarantine).unwrap();
    let mut moved = 0;
    for entry in std::fs::read_dir(repo.join("objects/pack")).unwrap() {
        let entry = entry.unwrap();
        std::fs::rename(entry.path(), quarantine.join(entry.file_name())).unwrap();
        moved += 1;
    }
    assert!(moved >= 2, "the pushed pack and its index");
    let restarted = app.another_node().await;
    clones_whole(&restarted, &alice, &space, &head).await;
}

/// A commit pushed to a branch (its change request open) and then pushed to main, which
/// lacks it, is merged into main as any push to main is.
#[tokio::test]
async fn a_commit_pushed_to_a_branch_then_to_main_is_merged() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    std::fs::write(work.join("README.md"), "# Home\n\nBranch first.\n").unwrap();
    ok(&work, &["commit", "-qam", "Branch first"]).await;
    let pushed = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/feature"]).await;
    assert!(done, "{said}");
    assert!(said.contains("Change request #2 opened"), "{said}");
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");
    assert!(
        said.contains("Merged into main as change request #3"),
        "{said}"
    );
    let home = page_id(&app, &alice, &space, "Home").await;
    let md = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/page/{home}?format=markdown"),
        )
        .await
        .expect(200);
    assert_eq!(md["markdown"], "Branch first.\n");
    ok(&work, &["pull", "-q", "--ff-only", "origin", "main"]).await;
    ok(&work, &["merge-base", "--is-ancestor", &pushed, "HEAD"]).await;
    let head = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    clones_whole(&app, &alice, &space, &head).await;
    // Pushed to a new branch, a commit the space has is nothing new.
    let (done, said) = push(&work, &["origin", &format!("{pushed}:refs/heads/again")]).await;
    assert!(!done, "{said}");
    assert!(said.contains("nothing new to push"), "{said}");
}

/// The space's revision and the commit `main` has in a fresh clone.
async fn main_now(app: &TestApp, who: &Persona, space: &str) -> (serde_json::Value, String) {
    let revision = app
        .get(who, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .clone();
    let tmp = tempfile::tempdir().unwrap();
    ok(
        tmp.path(),
        &["clone", "-q", "--bare", &url(app, who, space), "fresh.git"],
    )
    .await;
    let head = ok(&tmp.path().join("fresh.git"), &["rev-parse", "main"]).await;
    (revision, head.trim().to_string())
}

#[tokio::test]
async fn a_force_push_that_is_not_a_fast_forward_is_refused() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    std::fs::write(work.join("README.md"), "# Home\n\nKept.\n").unwrap();
    ok(&work, &["commit", "-qam", "Kept"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");
    ok(&work, &["pull", "-q", "--ff-only", "origin", "main"]).await;
    let before = main_now(&app, &alice, &space).await;
    assert_eq!(before.1, ok(&work, &["rev-parse", "HEAD"]).await.trim());

    // Main rewritten: its last commit dropped, another in its place.
    ok(&work, &["reset", "-q", "--hard", "HEAD~1"]).await;
    std::fs::write(work.join("guide/README.md"), "# Guide\n\nRewritten.\n").unwrap();
    ok(&work, &["commit", "-qam", "Instead"]).await;
    let (done, said) = push(&work, &["--force", "origin", "HEAD:main"]).await;
    assert!(!done, "{said}");
    assert!(said.contains("non-fast-forward"), "{said}");
    assert!(said.contains("remote: main: not a fast-forward"), "{said}");
    assert!(
        said.contains("fetch, merge or rebase onto `main`"),
        "{said}"
    );
    assert_eq!(main_now(&app, &alice, &space).await, before);

    // Main moved on the web since the clone fetched: a commit on what it had is refused
    // too, forced or not, and nothing is merged.
    let guide = page_id(&app, &alice, &space, "Guide").await;
    merge_edit(&app, &alice, &space, "Web edit", &guide, "From the web.\n").await;
    let moved = main_now(&app, &alice, &space).await;
    assert_ne!(moved, before);
    let (done, said) = push(&work, &["--force", "origin", "HEAD:main"]).await;
    assert!(!done, "{said}");
    assert!(said.contains("non-fast-forward"), "{said}");
    assert_eq!(main_now(&app, &alice, &space).await, moved);

    // A change request's branch: the same.
    ok(&work, &["fetch", "-q", "origin"]).await;
    ok(&work, &["reset", "-q", "--hard", "origin/main"]).await;
    std::fs::write(work.join("README.md"), "# Home\n\nOn a branch.\n").unwrap();
    ok(&work, &["commit", "-qam", "On a branch"]).await;
    std::fs::write(work.join("README.md"), "# Home\n\nOn a branch, twice.\n").unwrap();
    ok(&work, &["commit", "-qam", "Twice"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:refs/heads/feature"]).await;
    assert!(done, "{said}");
    let number = said
        .split("Change request #")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_string();
    let cr = format!("/v1/spaces/{space}/change-requests/{number}");
    let at = app.get(&alice, &cr).await.expect(200)["revision"].clone();
    ok(&work, &["reset", "-q", "--hard", "HEAD~1"]).await;
    std::fs::write(
        work.join("README.md"),
        "# Home\n\nOn a branch, otherwise.\n",
    )
    .unwrap();
    ok(&work, &["commit", "-qam", "Otherwise"]).await;
    for branch in ["feature".to_string(), format!("change-requests/{number}")] {
        let (done, said) = push(&work, &["--force", "origin", &format!("HEAD:{branch}")]).await;
        assert!(!done, "{said}");
        assert!(said.contains("non-fast-forward"), "{said}");
        assert!(
            said.contains(&format!("remote: {branch}: not a fast-forward")),
            "{said}"
        );
        assert_eq!(app.get(&alice, &cr).await.expect(200)["revision"], at);
    }
    assert_eq!(main_now(&app, &alice, &space).await, moved);
}

/// A pack of two objects, a 64 KiB blob and a delta on it that declares and makes a blob
/// of `target` bytes by copying the base again and again: a few hundred bytes that would
/// make `git index-pack` fill `target` bytes of memory.
async fn delta_bomb(target: u64) -> Vec<u8> {
    use quire_content::gitsync::objects::{Kind, Object};
    fn header(out: &mut Vec<u8>, kind: u8, size: usize) {
        let mut byte = (kind << 4) | (size & 0x0f) as u8;
        let mut rest = size >> 4;
        while rest > 0 {
            out.push(byte | 0x80);
            byte = (rest & 0x7f) as u8;
            rest >>= 7;
        }
        out.push(byte);
    }
    fn varint(out: &mut Vec<u8>, mut n: u64) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n > 0 { byte | 0x80 } else { byte });
            if n == 0 {
                break;
            }
        }
    }
    fn zlib(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }
    let base = vec![b'a'; 1 << 16];
    let base_id = Object::new(Kind::Blob, base.clone()).id;
    let mut delta = Vec::new();
    varint(&mut delta, base.len() as u64);
    varint(&mut delta, target);
    // A copy with no offset or size bytes: 64 KiB from offset 0.
    delta.extend(std::iter::repeat_n(0x80u8, (target >> 16) as usize));
    let mut pack = b"PACK".to_vec();
    pack.extend(2u32.to_be_bytes());
    pack.extend(2u32.to_be_bytes());
    header(&mut pack, 3, base.len());
    pack.extend(zlib(&base));
    header(&mut pack, 7, delta.len());
    pack.extend(base_id.0);
    pack.extend(zlib(&delta));
    // The trailer: the SHA-1 of all before it.
    let mut sum = tokio::process::Command::new("sha1sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha1sum runs");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = sum.stdin.take().unwrap();
        stdin.write_all(&pack).await.unwrap();
    }
    let out = sum.wait_with_output().await.unwrap();
    let hex = String::from_utf8(out.stdout).unwrap();
    let trailer = quire_content::gitsync::objects::Oid::from_hex(&hex[..40]).unwrap();
    pack.extend(trailer.0);
    pack
}

/// A push's body: one command creating `branch` at `new`, then `pack`.
fn push_body(branch: &str, new: &str, pack: &[u8]) -> Vec<u8> {
    let command = format!(
        "{} {new} refs/heads/{branch}\0report-status side-band-64k\n",
        "0".repeat(40)
    );
    let mut body = format!("{:04x}", command.len() + 4).into_bytes();
    body.extend(command.as_bytes());
    body.extend(b"0000");
    body.extend(pack);
    body
}

/// A delta bomb (a pack of a few hundred bytes whose delta expands to 2 GiB) is refused at
/// once, saying why, within the memory a git child may use; the server serves on.
#[tokio::test]
async fn a_delta_bomb_is_refused_at_once_and_the_server_serves_on() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let pack = delta_bomb(2 << 30).await;
    assert!(pack.len() < 4096, "{} bytes", pack.len());
    let started = std::time::Instant::now();
    let res = reqwest::Client::new()
        .post(format!("{}/git/{space}.git/git-receive-pack", app.base))
        .basic_auth("git", Some(&alice.token))
        .header("content-type", "application/x-git-receive-pack-request")
        .body(push_body("bomb", &"1".repeat(40), &pack))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let answer = String::from_utf8_lossy(&res.bytes().await.unwrap()).into_owned();
    let took = started.elapsed();
    assert!(
        answer.contains("unpack the pack was refused: its objects expand to more than"),
        "{answer}"
    );
    assert!(answer.contains("ng refs/heads/bomb"), "{answer}");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    // Nothing changed, and the repository serves on.
    assert_eq!(open_count(&app, &alice, &space).await, json!(0));
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    ok(&work, &["fsck", "--strict"]).await;
}

/// A push waiting for its turn among the node's git operations has not read its body: the
/// client could send no more than the connection buffers hold. Once the turn comes, the
/// body is read (and its junk pack refused).
#[tokio::test]
async fn a_push_waiting_for_its_turn_has_not_read_its_body() {
    if !has_git() {
        return;
    }
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Fixture { app, alice, space } = fixture_with(|c| {
        c.max_git_operations = 1;
        c.busy_wait_ms = 120_000;
    })
    .await;
    let held = app.state.git_runs.clone().acquire_owned().await.unwrap();
    let total = 48usize << 20;
    let body = push_body("junk", &"1".repeat(40), &vec![7u8; total]);
    let body_len = body.len();
    let addr = app.base.trim_start_matches("http://").to_string();
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("git:{}", alice.token));
    let head = format!(
        "POST /git/{space}.git/git-receive-pack HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: Basic {auth}\r\nContent-Type: application/x-git-receive-pack-request\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let sent = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = sent.clone();
    let client = tokio::spawn(async move {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        for chunk in body.chunks(64 * 1024) {
            stream.write_all(chunk).await.unwrap();
            counted.fetch_add(chunk.len(), Ordering::SeqCst);
        }
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    });
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let waiting = sent.load(Ordering::SeqCst);
    assert!(
        waiting < total / 2,
        "{waiting} of {total} bytes were taken while the push waited for its turn"
    );
    drop(held);
    let answer = tokio::time::timeout(std::time::Duration::from_secs(60), client)
        .await
        .expect("the push is answered once it has its turn")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("ng refs/heads/junk"), "{answer}");
    assert_eq!(
        sent.load(Ordering::SeqCst),
        body_len,
        "the whole body was read"
    );
}

/// A pushed page's cover as GitBook writes it (size, mask, height; title and description
/// hidden) reads into the page's layout and cover, and the published page draws it so.
#[tokio::test]
async fn a_pushed_cover_keeps_its_size_mask_and_height() {
    if !has_git() {
        return;
    }
    use base64::Engine;
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    std::fs::create_dir_all(work.join(".gitbook/assets")).unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(PNG)
        .unwrap();
    std::fs::write(work.join(".gitbook/assets/hero.png"), png).unwrap();
    std::fs::write(
        work.join("README.md"),
        "---\ndescription: Start here.\ncover: .gitbook/assets/hero.png\ncoverY: 0\ncoverHeight: 461\n\
         layout:\n  width: wide\n  cover:\n    visible: true\n    size: background\n    mask: radial\n\
         \x20 title:\n    visible: false\n  description:\n    visible: false\n---\n\n# Home\n\nWelcome.\n",
    )
    .unwrap();
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "A cover"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");

    let home = page_id(&app, &alice, &space, "Home").await;
    let page = app
        .get(&alice, &format!("/v1/spaces/{space}/content/page/{home}"))
        .await
        .expect(200);
    assert_eq!(page["layout"]["coverSize"], "background", "{page}");
    assert_eq!(page["layout"]["coverMask"], "radial", "{page}");
    assert_eq!(page["cover"]["height"], 461, "{page}");

    let (_, _, published) = published_site(&app, &alice, &space).await;
    let html = reqwest::get(&published)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("class=\"cover cover-background cover-mask-radial\"")
            && html.contains("height=\"461\""),
        "{html}"
    );
    assert!(
        html.contains("<h1 class=\"visually-hidden\">Home</h1>"),
        "{html}"
    );
    assert!(
        !html.contains("<p class=\"lead\">Start here.</p>"),
        "{html}"
    );
}

/// A page listed twice in `SUMMARY.md` (GitBook lists a page again at its headings) is one
/// page and one file, the later listings links to it; pushed again, it reads the same.
#[tokio::test]
async fn a_page_listed_twice_is_one_page_and_a_link_to_it() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let summary = std::fs::read_to_string(work.join("SUMMARY.md")).unwrap();
    std::fs::write(
        work.join("SUMMARY.md"),
        format!("{summary}* [Steps](guide/setup.md#steps)\n"),
    )
    .unwrap();
    std::fs::write(
        work.join("guide/setup.md"),
        "# Setup\n\n## Steps\n\nBack to [the guide](README.md).\n",
    )
    .unwrap();
    ok(&work, &["commit", "-qam", "Steps listed"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");
    let setup = page_id(&app, &alice, &space, "Setup").await;
    let listing = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    let link = listing["pages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == "Steps")
        .unwrap_or_else(|| panic!("{listing}"));
    assert_eq!(link["type"], "link", "{link}");
    assert_eq!(
        link["target"],
        json!({"kind": "anchor", "page": setup, "anchor": "steps"}),
        "{link}"
    );
    // Pushed again with another change, the listing reads the same.
    std::fs::write(work.join("README.md"), "# Home\n\nWelcome back.\n").unwrap();
    ok(&work, &["commit", "-qam", "Again"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");
    assert_eq!(page_id(&app, &alice, &space, "Setup").await, setup);
}

/// Tags as Git Sync writes them (`.gitbook/tags.yaml`, a page's `tags:`) read into the
/// page's official tags and show on the published page by their labels; the files come
/// back as pushed.
#[tokio::test]
async fn pushed_tags_reach_the_page_and_its_published_site() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let tags = "- tag: beta\n  label: Beta\n  icon: flask\n- tag: add-on\n  label: Add-on\n  color: $primary\n";
    std::fs::write(work.join(".gitbook/tags.yaml"), tags).unwrap();
    let home = "---\ntags:\n  - beta\n  - add-on\n---\n\n# Home\n\nWelcome.\n";
    std::fs::write(work.join("README.md"), home).unwrap();
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "Tags"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");

    let id = page_id(&app, &alice, &space, "Home").await;
    let page = app
        .get(&alice, &format!("/v1/spaces/{space}/content/page/{id}"))
        .await
        .expect(200);
    assert_eq!(
        page["tags"],
        json!([{ "tag": { "kind": "tag", "tag": "beta" } }, { "tag": { "kind": "tag", "tag": "add-on" } }]),
        "{page}"
    );
    let (_, _, published) = published_site(&app, &alice, &space).await;
    let html = reqwest::get(&published)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(
            "<ul class=\"page-tags\" aria-label=\"Tags\"><li>Beta</li><li>Add-on</li></ul>"
        ),
        "{html}"
    );
    // An edit elsewhere keeps both files as pushed.
    let guide = page_id(&app, &alice, &space, "Guide").await;
    merge_edit(&app, &alice, &space, "Edit", &guide, "Read on, now.\n").await;
    ok(&work, &["pull", "-q", "--ff-only"]).await;
    assert_eq!(
        std::fs::read_to_string(work.join(".gitbook/tags.yaml")).unwrap(),
        tags
    );
    assert_eq!(
        std::fs::read_to_string(work.join("README.md")).unwrap(),
        home
    );
}

/// The tags `.gitbook/tags.yaml` defines are the official `tags` of every revision the API
/// answers (a colour outside `DocumentTextColor`, or none, as `default`; an `icon` that is
/// an emoji as `emoji`, in code points), and the page tag pushed with `primary: true`
/// answers `primary`. Both files come back as pushed; a primary tag changed through the API
/// is written back in the page's frontmatter.
#[tokio::test]
async fn pushed_tag_definitions_and_a_primary_tag_reach_the_revision_and_the_page() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    // A revision with no tags says so.
    let before = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    assert_eq!(before["tags"], json!([]), "{before}");

    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let tags = "- tag: beta\n  label: Beta\n  icon: flask\n  color: orange\n- tag: new\n  label: New\n  icon: 🎉\n  color: \"#ff0000\"\n- tag: plain\n  label: Plain\n";
    std::fs::write(work.join(".gitbook/tags.yaml"), tags).unwrap();
    let home =
        "---\ntags:\n  - tag: beta\n  - tag: new\n    primary: true\n---\n\n# Home\n\nWelcome.\n";
    std::fs::write(work.join("README.md"), home).unwrap();
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "Tags"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");

    let defined = json!([
        { "slug": "beta", "label": "Beta", "color": "orange", "icon": "flask" },
        { "slug": "new", "label": "New", "color": "default", "emoji": "1f389" },
        { "slug": "plain", "label": "Plain", "color": "default" }
    ]);
    let current = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    assert_eq!(current["tags"], defined, "{current}");
    let revision = current["id"].as_str().unwrap().to_string();
    let by_id = app
        .get(&alice, &format!("/v1/spaces/{space}/revisions/{revision}"))
        .await
        .expect(200);
    assert_eq!(by_id["tags"], defined, "{by_id}");
    // The revision before the push still has none.
    let older = before["id"].as_str().unwrap();
    let older = app
        .get(&alice, &format!("/v1/spaces/{space}/revisions/{older}"))
        .await
        .expect(200);
    assert_eq!(older["tags"], json!([]), "{older}");

    let id = page_id(&app, &alice, &space, "Home").await;
    let tagged = json!([
        { "tag": { "kind": "tag", "tag": "beta" } },
        { "tag": { "kind": "tag", "tag": "new" }, "primary": true }
    ]);
    for path in [
        format!("/v1/spaces/{space}/content/page/{id}"),
        format!("/v1/spaces/{space}/revisions/{revision}/page/{id}"),
    ] {
        let page = app.get(&alice, &path).await.expect(200);
        assert_eq!(page["tags"], tagged, "{path}: {page}");
    }
    // The page tree of the revision says the same.
    let home_in_tree = current["pages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id.as_str())
        .unwrap();
    assert_eq!(home_in_tree["tags"], tagged, "{home_in_tree}");

    // An edit elsewhere keeps both files as pushed.
    let guide = page_id(&app, &alice, &space, "Guide").await;
    merge_edit(&app, &alice, &space, "Edit", &guide, "Read on, now.\n").await;
    ok(&work, &["pull", "-q", "--ff-only"]).await;
    let read = |p: &str| std::fs::read_to_string(work.join(p)).unwrap();
    assert_eq!(read(".gitbook/tags.yaml"), tags);
    assert_eq!(read("README.md"), home);

    // The primary tag moved through the API is written back in the page's frontmatter.
    merge_edit(
        &app,
        &alice,
        &space,
        "Primary",
        &id,
        "---\ntags:\n  - tag: beta\n    primary: true\n  - tag: new\n---\n\n# Home\n\nWelcome.\n",
    )
    .await;
    let page = app
        .get(&alice, &format!("/v1/spaces/{space}/content/page/{id}"))
        .await
        .expect(200);
    assert_eq!(
        page["tags"],
        json!([
            { "tag": { "kind": "tag", "tag": "beta" }, "primary": true },
            { "tag": { "kind": "tag", "tag": "new" } }
        ]),
        "{page}"
    );
    ok(&work, &["pull", "-q", "--ff-only"]).await;
    let home = read("README.md");
    assert!(
        home.starts_with("---\ntags:\n  - tag: beta\n    primary: true\n  - tag: new\n---\n"),
        "{home}"
    );
    assert_eq!(read(".gitbook/tags.yaml"), tags);
}

/// A change request updated from main, then merged: the pushed files nobody edited, and a
/// file Quire does not model, come back as pushed; each edited page's file changes by its
/// edit alone.
#[tokio::test]
async fn an_update_from_main_and_its_merge_keep_what_was_pushed() {
    if !has_git() {
        return;
    }
    let Fixture { app, alice, space } = fixture().await;
    let (_tmp, work) = cloned(&app, &alice, &space).await;
    let license = "Some license.\n";
    let home = "---\ndescription: >-\n  Folded\n  by hand.\n---\n\n# Home\n\nWelcome,\nreader.\n";
    std::fs::write(work.join("LICENSE"), license).unwrap();
    std::fs::write(work.join("README.md"), home).unwrap();
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "Pushed"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");
    let guide_before = std::fs::read_to_string(work.join("guide/README.md")).unwrap();

    // A change request edits the guide; meanwhile main's home page gains a line.
    let guide = page_id(&app, &alice, &space, "Guide").await;
    let cr = app.open_change_request(&alice, &space, "Guide").await;
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([{ "operation": "update_page", "page": guide, "document": { "markdown": "Read on.\n\nMore.\n" } }]),
    )
    .await;
    let home_id = page_id(&app, &alice, &space, "Home").await;
    merge_edit(
        &app,
        &alice,
        &space,
        "Home",
        &home_id,
        "Welcome,\nreader.\n\nNews.\n",
    )
    .await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/update"),
        json!({}),
    )
    .await
    .expect(200);
    app.merge_change_request(&alice, &space, &cr).await;

    ok(&work, &["pull", "-q", "--ff-only"]).await;
    let read = |p: &str| std::fs::read_to_string(work.join(p)).unwrap();
    assert_eq!(read("LICENSE"), license);
    assert_eq!(read("README.md"), format!("{home}\nNews.\n"));
    assert_eq!(read("guide/README.md"), format!("{guide_before}\nMore.\n"));
}
