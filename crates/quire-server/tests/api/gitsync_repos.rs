//! Real Git Sync repositories (`tests/fixtures/gitsync/*.tar.gz`: GitBook's public
//! documentation and two others, trimmed by `make.sh` to their markdown, table of contents,
//! the files Git Sync keeps beside them and a few small assets) pushed to a space as a team
//! moving to Quire would: they come back byte for byte, an edit through the API changes only
//! the file of its page, and every page renders with no HTML source shown as text and every
//! image shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::Url;
use serde_json::json;

use crate::git::{has_git, ok, published_site, push, url};
use crate::harness::{Persona, TestApp};

/// Every file under `root` but `.git`, by path.
fn files_of(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// The fixture `name` unpacked into a new temporary folder: the folder and the repository's
/// files in it.
fn unpacked(name: &str) -> (tempfile::TempDir, PathBuf) {
    let archive = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gitsync")
        .join(format!("{name}.tar.gz"));
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(tmp.path())
        .output()
        .expect("tar runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tmp.path().join(name);
    (tmp, dir)
}

/// Paths whose bytes differ, paths missing from `got`, paths only in `got`.
fn compare(
    want: &BTreeMap<String, Vec<u8>>,
    got: &BTreeMap<String, Vec<u8>>,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let changed = want
        .iter()
        .filter(|(p, b)| got.get(*p).is_some_and(|g| g != *b))
        .map(|(p, _)| p.clone())
        .collect();
    let missing = want
        .keys()
        .filter(|p| !got.contains_key(*p))
        .cloned()
        .collect();
    let added = got
        .keys()
        .filter(|p| !want.contains_key(*p))
        .cloned()
        .collect();
    (changed, missing, added)
}

/// A fresh clone of `space` in `into`; its files and its head commit.
async fn clone_files(
    app: &TestApp,
    who: &Persona,
    space: &str,
    into: &Path,
) -> (BTreeMap<String, Vec<u8>>, String) {
    ok(into, &["clone", "-q", &url(app, who, space), "clone"]).await;
    let dir = into.join("clone");
    let head = ok(&dir, &["rev-parse", "HEAD"]).await.trim().to_string();
    let files = files_of(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    (files, head)
}

/// Every document page of a revision's listing: id, path on the site, depth.
fn pages_of(listing: &serde_json::Value) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    let mut stack: Vec<(&serde_json::Value, usize)> = listing["pages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|p| (p, 0))
        .collect();
    while let Some((p, depth)) = stack.pop() {
        if p["type"] == "document" {
            out.push((
                p["id"].as_str().unwrap().to_string(),
                p["path"].as_str().unwrap_or_default().to_string(),
                depth,
            ));
        }
        if let Some(children) = p["pages"].as_array() {
            stack.extend(children.iter().rev().map(|c| (c, depth + 1)));
        }
    }
    out
}

/// A page's HTML without what shows source on purpose (code blocks and inline code).
fn outside_code(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    loop {
        let next = ["<pre", "<code"]
            .iter()
            .filter_map(|t| rest.find(t).map(|i| (i, *t)))
            .min();
        let Some((at, tag)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        let close = if tag == "<pre" { "</pre>" } else { "</code>" };
        match rest[at..].find(close) {
            Some(end) => rest = &rest[at + end + close.len()..],
            None => return out,
        }
    }
}

/// HTML tags a page may hold in its markdown; shown escaped, they are source shown as text.
const TAGS: &[&str] = &[
    "a ",
    "a>",
    "p>",
    "p ",
    "div",
    "img",
    "figure",
    "figcaption",
    "picture",
    "source",
    "table",
    "thead",
    "tbody",
    "tr>",
    "td",
    "th>",
    "th ",
    "select",
    "option",
    "br>",
    "br/",
    "i ",
    "i>",
    "mark",
    "kbd",
    "details",
    "summary",
    "span",
    "em>",
    "strong",
    "sub>",
    "sup>",
    "ul>",
    "li>",
    "iframe",
    "h1",
    "h2",
    "h3",
    "button",
];

/// Tags shown as text in `html` (outside code), with some context.
fn shown_as_text(html: &str) -> Vec<String> {
    let text = outside_code(html);
    let mut found = Vec::new();
    for (i, _) in text.match_indices("&lt;") {
        let after = text[i + 4..].trim_start_matches('/');
        if TAGS.iter().any(|t| after.starts_with(t)) {
            let start = text[..i].char_indices().rev().nth(40).map_or(0, |(j, _)| j);
            let end = text[i..]
                .char_indices()
                .nth(80)
                .map_or(text.len(), |(j, _)| i + j);
            found.push(text[start..end].to_string());
        }
    }
    found
}

/// Image references of a page's markdown outside code blocks and code spans, and outside
/// conditional blocks (a visitor without claims sees none of them): `![…](…)` and `<img`. A
/// fence closes only with a run of its character at least as long.
fn images_in(markdown: &str) -> usize {
    let mut count = 0;
    let mut fence: Option<(char, usize)> = None;
    let mut conditional = 0usize;
    for line in markdown.lines() {
        let t = line.trim_start();
        if fence.is_none() && t.starts_with("{% if ") {
            conditional += 1;
        }
        if fence.is_none() && t.starts_with("{% endif") {
            conditional = conditional.saturating_sub(1);
            continue;
        }
        if conditional > 0 {
            continue;
        }
        let mark = t.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = mark.map_or(0, |c| t.chars().take_while(|x| *x == c).count());
        match (fence, mark) {
            (None, Some(c)) if run >= 3 => {
                fence = Some((c, run));
                continue;
            }
            (Some((c, n)), Some(m)) if m == c && run >= n && t.trim_end().len() == run => {
                fence = None;
                continue;
            }
            _ => {}
        }
        if fence.is_none() {
            let outside: String = line.split('`').step_by(2).collect();
            count += outside.matches("![").count() + outside.matches("<img").count();
        }
    }
    count
}

/// One fixture through the round trip; what was measured, for the message of a failure.
async fn round_trip(name: &str) {
    let app = TestApp::start_with(|c| c.max_import_bytes = 256 << 20).await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Movers").await;
    let space = app.space(&alice, &org, name, None).await;
    let (_fixture, repo) = unpacked(name);
    let tmp = tempfile::tempdir().unwrap();

    // Pushed as one commit to main.
    ok(
        tmp.path(),
        &["clone", "-q", &url(&app, &alice, &space), "work"],
    )
    .await;
    let work = tmp.path().join("work");
    for (path, bytes) in files_of(&repo) {
        let to = work.join(&path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(&to, bytes).unwrap();
    }
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "Git Sync repository"]).await;
    let pushed_commit = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let pushed = files_of(&work);
    assert!(pushed.len() > 150, "{name}: {} files", pushed.len());
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{name}: {said}");

    // Main is the pushed commit; a clone is the pushed tree, byte for byte.
    let (back, head) = clone_files(&app, &alice, &space, tmp.path()).await;
    assert_eq!(head, pushed_commit, "{name}: main is not the pushed commit");
    let (changed, missing, added) = compare(&pushed, &back);
    assert!(
        changed.is_empty() && missing.is_empty() && added.is_empty(),
        "{name}: rewritten {changed:?}, deleted {missing:?}, added {added:?}"
    );

    // One page below the first level edited through the API: only its file changes, by the
    // lines added.
    let content = format!("/v1/spaces/{space}/content");
    let listing = app.get(&alice, &content).await.expect(200);
    let pages = pages_of(&listing);
    let (page, _, _) = pages
        .iter()
        .find(|(_, _, depth)| *depth >= 1)
        .unwrap_or_else(|| panic!("{name}: no page below the first level"));
    let cr = app.open_change_request(&alice, &space, "One edit").await;
    let md = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content/page/{page}?format=markdown"),
        )
        .await
        .expect(200)["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    let added_text = "A paragraph added through the API.";
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([{ "operation": "update_page", "page": page,
                 "document": { "markdown": format!("{}\n\n{added_text}\n", md.trim_end()) } }]),
    )
    .await;
    app.merge_change_request(&alice, &space, &cr).await;
    let (edited, _) = clone_files(&app, &alice, &space, tmp.path()).await;
    let (changed, missing, added) = compare(&pushed, &edited);
    assert!(
        changed.len() == 1 && missing.is_empty() && added.is_empty(),
        "{name}: the edit of one page rewrote {changed:?}, deleted {missing:?}, added {added:?}"
    );
    let before = String::from_utf8_lossy(&pushed[&changed[0]]).into_owned();
    let after = String::from_utf8_lossy(&edited[&changed[0]]).into_owned();
    assert!(
        after.starts_with(before.trim_end()) && after.trim_end().ends_with(added_text),
        "{name}: {} is not its pushed bytes with the paragraph added:\n{after}",
        changed[0]
    );

    // A second push on top of Quire's commit (another page and a file Quire does not model
    // changed) is read against it: accepted, main is that commit, the space keeps its files.
    let files_before = app
        .get(&alice, &format!("{content}/files"))
        .await
        .expect(200)["items"]
        .as_array()
        .map_or(0, |a| a.len());
    ok(&work, &["pull", "-q", "--ff-only", "origin", "main"]).await;
    // A page the table of contents lists, in a folder.
    let summary = String::from_utf8_lossy(&pushed["SUMMARY.md"]).into_owned();
    let other = summary
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split([')', '#']).next())
        .map(|p| p.replace("%20", " "))
        .find(|p| p.contains('/') && pushed.contains_key(p) && *p != changed[0])
        .unwrap_or_else(|| panic!("{name}: no listed page in a folder"));
    let mut text = std::fs::read_to_string(work.join(&other)).unwrap();
    text.push_str("\nA line pushed again.\n");
    std::fs::write(work.join(&other), &text).unwrap();
    std::fs::write(work.join("NOTES.txt"), "Not a page.\n").unwrap();
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "Pushed again"]).await;
    let again_commit = ok(&work, &["rev-parse", "HEAD"]).await.trim().to_string();
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{name}: the second push: {said}");
    let (again, head) = clone_files(&app, &alice, &space, tmp.path()).await;
    assert_eq!(
        head, again_commit,
        "{name}: main is not the second pushed commit"
    );
    let (changed_again, missing, added) = compare(&files_of(&work), &again);
    assert!(
        changed_again.is_empty() && missing.is_empty() && added.is_empty(),
        "{name}: rewritten {changed_again:?}, deleted {missing:?}, added {added:?}"
    );
    let files_after = app
        .get(&alice, &format!("{content}/files"))
        .await
        .expect(200)["items"]
        .as_array()
        .map_or(0, |a| a.len());
    assert_eq!(files_before, files_after, "{name}: the space's files");
    let page = pages_of(&app.get(&alice, &content).await.expect(200))
        .into_iter()
        .map(|(id, _, _)| id)
        .collect::<Vec<_>>();
    let mut found = false;
    for id in page {
        let md = app
            .get(&alice, &format!("{content}/page/{id}?format=markdown"))
            .await
            .expect(200);
        if md["markdown"]
            .as_str()
            .unwrap_or_default()
            .contains("A line pushed again.")
        {
            found = true;
            break;
        }
    }
    assert!(
        found,
        "{name}: the second push's line is in no page ({other})"
    );

    // Every commit is made again from the database alone, the same: the repository removed,
    // another node clones the same history and tree.
    let repo = app.config.data_dir.join("git").join(format!("{space}.git"));
    std::fs::remove_dir_all(&repo).unwrap();
    let node = app.another_node().await;
    let (remade, head) = clone_files(&node, &alice, &space, tmp.path()).await;
    assert_eq!(
        head, again_commit,
        "{name}: main made again is another commit"
    );
    assert_eq!(remade, again, "{name}: the tree made again");
    ok(&work, &["fetch", "-q", &url(&node, &alice, &space)]).await;
    let log = ok(&work, &["log", "--format=%H", "FETCH_HEAD"]).await;
    let mine = ok(&work, &["log", "--format=%H", "HEAD"]).await;
    assert_eq!(log, mine, "{name}: the history made again");

    // Every page renders on the published site: no HTML source shown as text, every image
    // of its markdown shown.
    let (_, _, published) = published_site(&app, &alice, &space).await;
    let base = Url::parse(&format!("{}/", published.trim_end_matches('/'))).unwrap();
    let client = reqwest::Client::new();
    let listing = app.get(&alice, &content).await.expect(200);
    let mut as_text = Vec::new();
    let mut images_lost = Vec::new();
    let mut rendered = 0;
    for (id, path, _) in pages_of(&listing) {
        let at = base.join(&path).unwrap();
        let res = client.get(at.clone()).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200, "{name}: {at}");
        let html = res.text().await.unwrap();
        let shown = shown_as_text(&html);
        if !shown.is_empty() {
            as_text.push(format!("{path}: {}", shown[0]));
        }
        let md = app
            .get(&alice, &format!("{content}/page/{id}?format=markdown"))
            .await
            .expect(200)["markdown"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let want = images_in(&md);
        let shown = outside_code(&html).matches("<img").count();
        if shown < want {
            images_lost.push(format!("{path}: {shown} of {want}"));
        }
        rendered += 1;
    }
    assert!(rendered > 150, "{name}: {rendered} pages");
    assert!(
        as_text.is_empty(),
        "{name}: {} of {rendered} pages show HTML as text:\n{}",
        as_text.len(),
        as_text.join("\n")
    );
    assert!(
        images_lost.is_empty(),
        "{name}: pages showing fewer images than their markdown holds:\n{}",
        images_lost.join("\n")
    );
}

#[tokio::test]
async fn gitbooks_own_documentation_round_trips() {
    if has_git() {
        round_trip("gitbook-docs").await;
    }
}

#[tokio::test]
async fn an_sdks_documentation_round_trips() {
    if has_git() {
        round_trip("beefree").await;
    }
}

#[tokio::test]
async fn a_frameworks_reference_guide_round_trips() {
    if has_git() {
        round_trip("axon").await;
    }
}
