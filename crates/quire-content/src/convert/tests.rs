//! Converters on small inputs made in the test.

use std::io::Write;

use super::*;

/// A zip archive of `(path, bytes)` entries, deflated.
pub(crate) fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
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

fn ids() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("id{n}")
    }
}

#[test]
fn summary_gives_structure_and_links_become_page_links() {
    let z = zip_of(&[
        ("repo-main/README.md", b"# Welcome\n\nSee [setup](getting-started/setup.md#install) and [gone](missing.md).\n"),
        ("repo-main/SUMMARY.md", b"# Table of contents\n\n* [Welcome](README.md)\n\n## Guides\n\n* [Getting started](getting-started/README.md)\n  * [Setup](getting-started/setup.md)\n"),
        ("repo-main/getting-started/README.md", b"# Getting started\n\nIntro.\n"),
        ("repo-main/getting-started/setup.md", b"# Setup\n\n![diagram](../.gitbook/assets/d.png)\n"),
        ("repo-main/.gitbook/assets/d.png", b"\x89PNG fake"),
    ]);
    let b = tree::from_zip(archive::Bytes::new(z.clone()), &Limits::default()).unwrap();
    let a = assemble(&b, &[], false, &Limits::default(), &mut ids()).unwrap();
    assert_eq!(a.pages.len(), 2, "{:#?}", a.pages);
    assert_eq!(a.pages[0].title, "Welcome");
    assert_eq!(a.pages[1].title, "Guides");
    assert!(matches!(a.pages[1].kind, PageKind::Group));
    let gs = &a.pages[1].pages[0];
    assert_eq!(gs.title, "Getting started");
    assert_eq!(gs.slug, "getting-started");
    let setup = &gs.pages[0];
    let welcome = a.pages[0].markdown().unwrap();
    assert!(
        welcome.contains(&format!("/pages/{}#install", setup.id)),
        "{welcome}"
    );
    assert!(welcome.contains("](missing.md)"), "{welcome}");
    assert_eq!(a.files.len(), 1);
    let body = setup.markdown().unwrap();
    assert!(body.contains(&format!("/files/{}", a.files[0].1)), "{body}");
}

#[test]
fn git_sync_includes_become_reusable_contents() {
    let z = zip_of(&[
        ("repo-main/README.md", b"# Welcome\n\n{% include \".gitbook/includes/support.md\" %}\n"),
        ("repo-main/guide/setup.md", b"# Setup\n\n{% include \"../.gitbook/includes/support.md\" %}\n"),
        ("repo-main/.gitbook/includes/support.md", b"---\ntitle: Support banner\n---\n\nAsk in [the welcome page](../../README.md).\n\n![logo](../assets/l.png)\n"),
        ("repo-main/.gitbook/assets/l.png", b"\x89PNG fake"),
    ]);
    let b = tree::from_zip(archive::Bytes::new(z), &Limits::default()).unwrap();
    let a = assemble(&b, &[], false, &Limits::default(), &mut ids()).unwrap();
    // The include is no page of the tree, but one reusable content both pages name.
    let titles: Vec<&str> = a.pages.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["Welcome", "guide"], "{:#?}", a.pages);
    assert_eq!(a.reusable_contents.len(), 1);
    let rc = &a.reusable_contents[0];
    assert_eq!(rc.title, "Support banner");
    let include = format!("{{% include \"/reusable-contents/{}\" %}}", rc.id);
    assert!(a.pages[0].markdown().unwrap().contains(&include));
    assert!(a.pages[1].pages[0].markdown().unwrap().contains(&include));
    // Its own links and images resolve like a page's, and its image is a file.
    assert!(
        rc.markdown.contains(&format!("/pages/{}", a.pages[0].id)),
        "{}",
        rc.markdown
    );
    assert_eq!(a.files.len(), 1);
    assert!(rc.markdown.contains(&format!("/files/{}", a.files[0].1)));
}

#[test]
fn folders_without_summary_become_groups() {
    let z = zip_of(&[
        ("README.md", b"# Home\n"),
        ("api/auth.md", b"# Auth\n"),
        ("api/users.md", b"Users body\n"),
    ]);
    let b = tree::from_zip(archive::Bytes::new(z.clone()), &Limits::default()).unwrap();
    let a = assemble(&b, &[], false, &Limits::default(), &mut ids()).unwrap();
    assert_eq!(a.pages[0].title, "Home");
    assert!(matches!(a.pages[1].kind, PageKind::Group));
    assert_eq!(a.pages[1].title, "api");
    let titles: Vec<&str> = a.pages[1].pages.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["Auth", "users"]);
}

#[test]
fn bombs_and_escapes_are_refused() {
    let big = vec![b'a'; 8 * 1024 * 1024];
    let z = zip_of(&[("a.md", &big)]);
    let err = tree::from_zip(archive::Bytes::new(z.clone()), &Limits::default()).unwrap_err();
    assert!(err.0.contains("expands more than"), "{err}");
    let z = zip_of(&[("../evil.md", b"x")]);
    let err = tree::from_zip(archive::Bytes::new(z.clone()), &Limits::default()).unwrap_err();
    assert!(err.0.contains("points outside"), "{err}");
    let many: Vec<(String, Vec<u8>)> = (0..30)
        .map(|i| (format!("{i}.md"), b"x".to_vec()))
        .collect();
    let refs: Vec<(&str, &[u8])> = many
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_slice()))
        .collect();
    let limits = Limits {
        max_entries: 10,
        ..Limits::default()
    };
    assert!(tree::from_zip(archive::Bytes::new(zip_of(&refs)), &limits)
        .unwrap_err()
        .0
        .contains("entries"));
    assert!(tree::from_zip(archive::Bytes::new(b"not a zip"), &Limits::default()).is_err());
}

#[test]
fn html_becomes_the_dialect() {
    let c = html::convert(
        r#"<html><head><title>T</title><script>x()</script></head><body><main>
        <h1>Guide</h1><p>Some <b>bold</b> and <a href="b.html">a link</a> {% hint %} $x$.</p>
        <h2>Part</h2><ul><li>one<ul><li>nested</li></ul></li><li>two</li></ul>
        <pre><code class="language-rust">fn main() {}
</code></pre>
        <table><tr><th>A</th><th>B</th></tr><tr><td>1 | 2</td><td><i>x</i></td></tr></table>
        <p><img src="img/a.png" alt="pic"></p></main></body></html>"#,
        &["main"],
    );
    assert_eq!(c.title.as_deref(), Some("Guide"));
    let doc = crate::markdown::try_markdown_to_document(&c.body).unwrap();
    let back = crate::markdown::document_to_markdown(&doc);
    assert!(back.contains("**bold**"), "{back}");
    assert!(back.contains("[a link](b.html)"), "{back}");
    assert!(back.contains("```rust\nfn main() {}\n```"), "{back}");
    assert!(back.contains("## Part"), "{back}");
    assert!(back.contains("nested"), "{back}");
    assert!(back.contains("| A"), "{back}");
    assert!(!back.contains("x()"), "{back}");
    assert!(
        !doc.nodes
            .iter()
            .any(|n| format!("{n:?}").contains("hint\"")),
        "{back}"
    );
    assert_eq!(c.images, ["img/a.png"]);
}

#[test]
fn deep_html_is_bounded() {
    let html = "<div>".repeat(5_000) + "deep" + &"</div>".repeat(5_000);
    let c = html::convert(&html, &[]);
    assert!(c.body.contains("deep"));
}

#[test]
fn notion_ids_are_dropped_and_databases_become_tables() {
    let id = "0123456789abcdef0123456789abcdef";
    let id2 = "fedcba9876543210fedcba9876543210";
    let page = format!("Team {id}.md");
    let db = format!("Team {id}/Tasks {id2}.csv");
    let row = format!("Team {id}/Tasks {id2}/Write docs {id}.md");
    let z = zip_of(&[
        (
            page.as_str(),
            format!("# Team\n\n[Tasks](Team%20{id}/Tasks%20{id2}.csv)\n").as_bytes(),
        ),
        (db.as_str(), b"Name,Status\nWrite docs,Done\nShip,Todo\n"),
        (row.as_str(), b"# Write docs\n\nStatus: Done\n"),
    ]);
    let b = notion::convert(archive::Bytes::new(z), &Limits::default()).unwrap();
    let a = assemble(&b, &[], false, &Limits::default(), &mut ids()).unwrap();
    assert_eq!(a.pages[0].title, "Team");
    let tasks = &a.pages[0].pages[0];
    assert_eq!(tasks.title, "Tasks");
    assert_eq!(tasks.slug, "tasks");
    let row = &tasks.pages[0];
    assert_eq!(row.title, "Write docs");
    let table = tasks.markdown().unwrap();
    assert!(table.contains(&format!("/pages/{}", row.id)), "{table}");
    assert!(table.contains("Todo"), "{table}");
    assert!(a.pages[0]
        .markdown()
        .unwrap()
        .contains(&format!("/pages/{}", tasks.id)));
}

#[test]
fn wiki_links_become_markdown_links() {
    assert_eq!(
        wiki_link_sample(),
        "See [Other Page](<Other-Page>) and [x](<Target-Page>).\n"
    );
}

fn wiki_link_sample() -> String {
    git::wiki_links("See [[Other Page]] and [[x|Target Page]].\n")
}

#[test]
fn website_pages_nest_by_path() {
    let p = |k: &str| SourcePage {
        key: k.into(),
        title: k.into(),
        body: Some(String::new()),
        ..SourcePage::default()
    };
    let nested = website::nest(vec![
        p("http://h/"),
        p("http://h/docs/"),
        p("http://h/docs/a.html"),
        p("http://h/docs/b/c.html"),
        p("http://h/blog"),
    ]);
    let titles: Vec<&str> = nested.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["http://h/", "http://h/docs/", "http://h/blog"]);
    assert_eq!(nested[1].children.len(), 2);
}
