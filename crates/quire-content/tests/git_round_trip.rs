//! A repository in Git Sync's layout, read into a revision and laid out again, comes back
//! byte for byte: the corpus pages (`tests/corpus`, every block, inline and mark of the
//! dialect, as Git Sync writes them) nested under a `SUMMARY.md`, with an image they share.

use quire_content::convert::Limits;
use quire_content::gitsync::{layout, read, Content};
use quire_content::Revision;

#[test]
fn a_git_sync_repository_comes_back_byte_for_byte() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    // The first page is README.md; the others are its children in a folder.
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut summary = String::from("# Table of contents\n\n");
    for (i, name) in names.iter().enumerate() {
        let text = std::fs::read(format!("{dir}/{name}")).unwrap();
        let title =
            quire_content::frontmatter::split_page_markdown(std::str::from_utf8(&text).unwrap())
                .unwrap()
                .heading
                .unwrap_or_else(|| name.clone());
        let path = if i == 0 {
            "README.md".to_string()
        } else {
            format!("corpus/{name}")
        };
        let indent = if i == 0 { "" } else { "  " };
        let href = if i == 0 {
            "README.md".to_string()
        } else {
            path.clone()
        };
        summary.push_str(&format!("{indent}* [{title}]({href})\n"));
        files.push((path, text));
    }
    files.push(("SUMMARY.md".into(), summary.into_bytes()));
    let mut n = 0;
    let mut ids = || {
        n += 1;
        format!("id{n}")
    };
    let first = read(
        files.clone(),
        &Revision::default(),
        &Limits::default(),
        &mut ids,
    )
    .unwrap();
    let written: Vec<(String, Content)> = layout(&first.revision)
        .into_iter()
        .map(|e| (e.path, e.content))
        .collect();
    let mut differ = Vec::new();
    for (path, bytes) in &files {
        if path == "SUMMARY.md" {
            continue;
        }
        // The children's folder is named after the first page's slug: compare by file name.
        let name = path.rsplit('/').next().unwrap();
        let got = written
            .iter()
            .find(|(p, _)| p.rsplit('/').next() == Some(name))
            .map(|(_, c)| c);
        match got {
            Some(Content::Text(t)) if t.as_bytes() == bytes.as_slice() => {}
            other => differ.push(format!(
                "{path}: {:?}",
                other.map(|c| match c {
                    Content::Text(t) => t.chars().take(120).collect::<String>(),
                    Content::Blob(b) => b.clone(),
                })
            )),
        }
    }
    assert!(
        differ.is_empty(),
        "pages that changed:\n{}",
        differ.join("\n")
    );
}

/// Hand-wrapped paragraphs (in lists, quotes and hints too) come back line for line, also
/// in a page whose links to pages and files are rewritten when it is laid out.
#[test]
fn hand_wrapped_pages_come_back_byte_for_byte() {
    let readme = "# Welcome\n\nThis page is wrapped\nby hand, with a link to [the guide](guide.md)\nand a **bold phrase\nover two lines**.\n\n* An item that is\n  wrapped too\n  * and a nested one\n    as well\n\n1. Numbered\n   and wrapped\n\n> A quote\n> on two lines\n\n{% hint style=\"info\" %}\nA hint\nwrapped by hand.\n{% endhint %}\n\n<figure><img src=\".gitbook/assets/logo.png\" alt=\"\"><figcaption><p>A logo</p></figcaption></figure>\n\nA [file](.gitbook/assets/logo.png) at the\nend.\n";
    let guide = "# Guide\n\nBack to [the start](README.md),\nline by line.\n";
    let files: Vec<(String, Vec<u8>)> = vec![
        ("README.md".into(), readme.into()),
        ("guide.md".into(), guide.into()),
        (
            ".gitbook/assets/logo.png".into(),
            vec![0x89, b'P', b'N', b'G'],
        ),
        (
            "SUMMARY.md".into(),
            "# Table of contents\n\n* [Welcome](README.md)\n* [Guide](guide.md)\n".into(),
        ),
    ];
    let mut n = 0;
    let mut ids = || {
        n += 1;
        format!("id{n}")
    };
    let mut first = read(files, &Revision::default(), &Limits::default(), &mut ids).unwrap();
    // The new file, stored.
    for f in &first.new_files {
        first.revision.files.push(quire_content::model::File {
            id: f.id.clone(),
            name: f.name.clone(),
            content_type: "image/png".into(),
            size: f.bytes.len() as u64,
            dimensions: None,
            blob: "ab".repeat(32),
            git_oid: None,
        });
    }
    // The stored bodies hold references to the page and the file: the layout rewrites them.
    let stored = &first.revision.pages[0];
    let quire_content::model::PageKind::Document(doc) = &stored.kind else {
        panic!("a document page");
    };
    assert!(doc.markdown.contains("](/pages/"), "{}", doc.markdown);
    assert!(doc.markdown.contains("](/files/"), "{}", doc.markdown);
    assert!(
        doc.markdown.contains("is wrapped\nby hand"),
        "{}",
        doc.markdown
    );
    let written = layout(&first.revision);
    for (path, text) in [("README.md", readme), ("guide.md", guide)] {
        match &written.iter().find(|e| e.path == path).unwrap().content {
            Content::Text(t) => assert_eq!(t, text, "{path}"),
            Content::Blob(_) => panic!("{path} is a file"),
        }
    }
}
