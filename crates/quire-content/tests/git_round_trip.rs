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
