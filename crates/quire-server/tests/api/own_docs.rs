//! Quire's own documentation (`docs/`, in Git Sync layout) pushed with git into a space and
//! published as a site: every page SUMMARY.md lists renders, and no link between them is
//! broken.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use reqwest::Url;

use crate::git::{has_git, ok, published_site, push, url};
use crate::harness::TestApp;

/// The repository's `docs/` folder.
fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

/// Copies every file under `from` into `to`, keeping their paths (no list kept by hand).
fn copy_tree(from: &Path, to: &Path) -> usize {
    let mut copied = 0;
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copied += copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            copied += 1;
        }
    }
    copied
}

/// SUMMARY.md's entries: each page's title and file, in order.
fn summary_entries(summary: &str) -> Vec<(String, String)> {
    summary
        .lines()
        .filter_map(|line| {
            let item = line.trim_start().strip_prefix("* [")?;
            let (title, rest) = item.split_once("](")?;
            Some((title.to_string(), rest.strip_suffix(')')?.to_string()))
        })
        .collect()
}

/// The values of every `href` and `src` attribute of a page.
fn references(html: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for attr in [" href=\"", " src=\""] {
        for piece in html.split(attr).skip(1) {
            found.push(&piece[..piece.find('"').unwrap()]);
        }
    }
    found
}

/// The links of a page's navigation: each title and its address.
fn sidebar(html: &str) -> HashMap<&str, &str> {
    let start = html
        .find("<nav aria-label=\"Pages\">")
        .expect("a navigation");
    let nav = &html[start..start + html[start..].find("</nav>").unwrap()];
    nav.split("<a href=\"")
        .skip(1)
        .map(|a| {
            let href = &a[..a.find('"').unwrap()];
            let text = &a[a.find('>').unwrap() + 1..a.find("</a>").unwrap()];
            (text, href)
        })
        .collect()
}

/// A plain GET, redirects not followed: status and text.
async fn fetch(client: &reqwest::Client, url: &Url) -> (u16, String) {
    let res = client.get(url.clone()).send().await.expect("request sent");
    (res.status().as_u16(), res.text().await.unwrap_or_default())
}

#[tokio::test]
async fn the_documentation_publishes_as_a_site_with_no_broken_link() {
    if !has_git() {
        return;
    }
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Quire").await;
    let space = app.space(&alice, &org, "Quire", None).await;

    // What a writer does: clone the space, put the docs folder in it, push to main.
    let tmp = tempfile::tempdir().unwrap();
    ok(
        tmp.path(),
        &["clone", "-q", &url(&app, &alice, &space), "work"],
    )
    .await;
    let work = tmp.path().join("work");
    let files = copy_tree(&docs_dir(), &work);
    assert!(files > 10, "{files} files under docs/");
    ok(&work, &["add", "-A"]).await;
    ok(&work, &["commit", "-qm", "Quire's documentation"]).await;
    let (done, said) = push(&work, &["origin", "HEAD:main"]).await;
    assert!(done, "{said}");

    let summary = std::fs::read_to_string(docs_dir().join("SUMMARY.md")).unwrap();
    let entries = summary_entries(&summary);
    assert!(entries.len() > 10, "{summary}");

    let (_, _, published) = published_site(&app, &alice, &space).await;
    let base = Url::parse(&published).unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    // Every page SUMMARY.md lists is in the site's navigation, and answers with its title.
    let (status, home) = fetch(&client, &base).await;
    assert_eq!(status, 200, "{home}");
    let nav = sidebar(&home);
    let mut pages: BTreeMap<String, String> = BTreeMap::new();
    for (title, file) in &entries {
        let href = nav
            .get(title.as_str())
            .unwrap_or_else(|| panic!("{file} ({title}) is not in the navigation: {nav:?}"));
        let at = base.join(href).unwrap();
        let (status, body) = fetch(&client, &at).await;
        assert_eq!(status, 200, "{file} at {at}: {body}");
        assert!(
            body.contains(&format!("<h1>{title}</h1>")),
            "{file}: {body}"
        );
        pages.insert(at.to_string(), body);
    }
    assert_eq!(pages.len(), entries.len(), "two entries at one address");

    // Every reference of every page to the server resolves; an anchor names an element of
    // its page.
    let mut seen: HashMap<String, (u16, String)> = HashMap::new();
    let mut checked = 0;
    for (at, body) in &pages {
        let page = Url::parse(at).unwrap();
        for reference in references(body) {
            let reference = reference.replace("&amp;", "&");
            let target = page.join(&reference).unwrap();
            if target.origin() != base.origin() {
                continue;
            }
            let mut without = target.clone();
            without.set_fragment(None);
            let (status, text) = match seen.get(without.as_str()) {
                Some(known) => known.clone(),
                None => {
                    let got = fetch(&client, &without).await;
                    seen.insert(without.to_string(), got.clone());
                    got
                }
            };
            assert_eq!(status, 200, "{at} links to {reference} ({target}): {text}");
            if let Some(anchor) = target.fragment() {
                assert!(
                    text.contains(&format!("id=\"{anchor}\"")),
                    "{at} links to {reference}: no such anchor"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > pages.len() * 10, "{checked} references checked");

    // Links the renderer could not resolve show as text, not as links: the space's links
    // listing counts them.
    let links = app
        .get(&alice, &format!("/v1/spaces/{space}/links?status=broken"))
        .await
        .expect(200);
    assert_eq!(links["stats"]["broken"]["total"], 0, "{links}");
    assert_eq!(links["count"], 0, "{links}");
}
