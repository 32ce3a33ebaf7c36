use super::*;
use crate::convert::archive::{Content as Held, Entry as Read};
use crate::convert::tree::from_entries;
use crate::model::{DocumentPage, File, ReusableContent};
use objects::{Kind, Oid};
use std::collections::HashMap;

fn sample() -> Revision {
    let mut intro = Page::document("p1", "Introduction", "introduction", "Welcome.\n");
    intro.description = Some("Where to start".into());
    let mut guide = Page::document(
        "p2",
        "Guide",
        "guide",
        "See [the install](/pages/p3#steps) and ![logo](/files/f1).\n",
    );
    guide.pages.push(Page::document(
        "p3",
        "Install",
        "install",
        "## Steps\n\nBack to [the guide](/pages/p2).\n\n{% include \"/reusable-contents/r1\" %}\n",
    ));
    let mut group = Page::group("g1", "Reference", "reference");
    group
        .pages
        .push(Page::document("p4", "API [v2]", "api", "Text.\n"));
    group.pages.push(Page::link(
        "l1",
        "Status",
        ContentRef::Url {
            url: "https://status.example.com".into(),
        },
    ));
    let mut rev = Revision {
        pages: vec![intro, guide, group],
        ..Revision::default()
    };
    rev.files.push(File {
        id: "f1".into(),
        name: "logo.png".into(),
        content_type: "image/png".into(),
        size: 3,
        dimensions: None,
        blob: "ab".repeat(32),
        git_oid: None,
    });
    rev.files.push(File {
        id: "f2".into(),
        name: "logo.png".into(),
        content_type: "image/png".into(),
        size: 3,
        dimensions: None,
        blob: "cd".repeat(32),
        git_oid: None,
    });
    rev.reusable_contents.push(ReusableContent {
        id: "r1".into(),
        title: "Support".into(),
        markdown: "Ask [us](/pages/p1).\n".into(),
    });
    rev.variables
        .insert("product".into(), VariableValue::String("Quire".into()));
    rev
}

fn text<'a>(entries: &'a [Entry], path: &str) -> &'a str {
    match &entries.iter().find(|e| e.path == path).unwrap().content {
        Content::Text(t) => t,
        Content::Blob(_) => panic!("{path} is a file"),
    }
}

#[test]
fn lays_out_as_git_sync() {
    let entries = layout(&sample());
    let paths: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "SUMMARY.md",
            "README.md",
            "guide/README.md",
            "guide/install.md",
            "reference/api.md",
            ".gitbook/assets/logo.png",
            ".gitbook/assets/logo (1).png",
            ".gitbook/includes/support.md",
            ".gitbook/vars.yaml",
        ]
    );
    assert_eq!(
        text(&entries, "SUMMARY.md"),
        "# Table of contents\n\n\
         * [Introduction](README.md)\n\
         * [Guide](guide/README.md)\n  \
           * [Install](guide/install.md)\n\n\
         ## Reference\n\n\
         * [API \\[v2\\]](reference/api.md)\n\
         * [Status](https://status.example.com)\n"
    );
    assert_eq!(
        text(&entries, "README.md"),
        "---\ndescription: Where to start\n---\n\n# Introduction\n\nWelcome.\n"
    );
    let guide = text(&entries, "guide/README.md");
    assert!(guide.contains("[the install](install.md#steps)"), "{guide}");
    assert!(guide.contains("../.gitbook/assets/logo.png"), "{guide}");
    let install = text(&entries, "guide/install.md");
    assert!(install.contains("[the guide](README.md)"), "{install}");
    assert!(
        install.contains("{% include \"../.gitbook/includes/support.md\" %}"),
        "{install}"
    );
    assert_eq!(
        text(&entries, ".gitbook/includes/support.md"),
        "---\ntitle: Support\n---\n\nAsk [us](../../README.md).\n"
    );
    assert_eq!(text(&entries, ".gitbook/vars.yaml"), "product: Quire\n");
    assert_eq!(
        entries[5].content,
        Content::Blob("ab".repeat(32)),
        "the first file keeps its name"
    );
}

#[test]
fn reads_back_as_the_same_tree() {
    let rev = sample();
    let read: Vec<Read> = layout(&rev)
        .into_iter()
        .map(|e| Read {
            path: e.path,
            content: Held::Held(match e.content {
                Content::Text(t) => t.into_bytes(),
                Content::Blob(b) => b.into_bytes(),
            }),
        })
        .collect();
    let bundle = from_entries(read).unwrap();
    let titles: Vec<(&str, Vec<&str>)> = bundle
        .pages
        .iter()
        .map(|p| {
            (
                p.title.as_str(),
                p.children.iter().map(|c| c.title.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        titles,
        [
            ("Introduction", vec![]),
            ("Guide", vec!["Install"]),
            ("Reference", vec!["API [v2]", "Status"]),
        ]
    );
}

#[test]
fn an_unlinked_body_is_written_as_stored() {
    let md = "A paragraph\nwrapped by hand.\n\n* [x] task\n";
    let rev = Revision {
        pages: vec![Page::document("p1", "One", "one", md)],
        ..Revision::default()
    };
    assert_eq!(text(&layout(&rev), "README.md"), format!("# One\n\n{md}"));
    // A body with no document fields stays a document page.
    assert!(
        matches!(rev.pages[0].kind, PageKind::Document(ref d) if **d == DocumentPage { markdown: md.into(), ..DocumentPage::default() })
    );
}

/// The commit ids of a revision never change: a commit handed out once must be made again,
/// byte for byte, by every node and every later version.
#[test]
fn commit_ids_are_golden() {
    use objects::{commit, trees, Kind, Object, Signature};
    let mut blobs = Vec::new();
    for e in layout(&sample()) {
        let id = match e.content {
            Content::Text(t) => Object::new(Kind::Blob, t.into_bytes()).id,
            Content::Blob(sha) => Object::new(Kind::Blob, sha.into_bytes()).id,
        };
        blobs.push((e.path, id));
    }
    let (tree, _) = trees(blobs.iter().map(|(p, id)| (p.as_str(), *id))).unwrap();
    let who = |name: &str| Signature {
        name: name.into(),
        email: format!("{name}@users.noreply.quire"),
        seconds: 1_764_000_000,
    };
    let first = commit(tree, &[], &who("ada"), &who("Quire"), "Initial content");
    let second = commit(
        tree,
        &[first.id],
        &who("ada"),
        &who("Quire"),
        "GITBOOK-1: First pages",
    );
    assert_eq!(
        (tree.to_hex(), first.id.to_hex(), second.id.to_hex()),
        (
            "f12d156c0fe46d64df0041aae01197efce0a245f".to_string(),
            "a8598b5cbf6e603a73e0a7878b0732d103599d71".to_string(),
            "ba0722bfb733d77966371977c0185507f62547ea".to_string()
        )
    );
}

/// `sample()` with real file bytes, every file used by a page.
fn readable() -> (Revision, HashMap<String, Vec<u8>>) {
    let mut rev = sample();
    let mut bytes = HashMap::new();
    for (i, f) in rev.files.iter_mut().enumerate() {
        let b = format!("image {i}").into_bytes();
        f.blob = crate::store::ObjectHash::of(&b).to_hex();
        f.size = b.len() as u64;
        bytes.insert(f.blob.clone(), b);
    }
    if let PageKind::Document(doc) = &mut rev.pages[0].kind {
        doc.markdown = "Welcome.\n\n![second](/files/f2)\n".into();
    }
    (rev, bytes)
}

fn files_of(rev: &Revision, bytes: &HashMap<String, Vec<u8>>) -> Vec<(String, Vec<u8>)> {
    layout(rev)
        .into_iter()
        .map(|e| {
            let b = match e.content {
                Content::Text(t) => t.into_bytes(),
                Content::Blob(sha) => bytes[&sha].clone(),
            };
            (e.path, b)
        })
        .collect()
}

fn ids() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("new{n}")
    }
}

/// Reads `files` against `rev` twice: every file as bytes, and with the files that are as
/// the layout writes them marked unchanged; both must read the same.
fn read_both(files: Vec<(String, Vec<u8>)>, rev: &Revision) -> super::Read {
    let limits = crate::convert::Limits::default();
    let written: HashMap<String, Vec<u8>> = files_of(rev, &readable().1).into_iter().collect();
    let marked: Vec<(String, TreeFile)> = files
        .iter()
        .map(|(path, b)| match written.get(path) {
            Some(w) if w == b => (path.clone(), TreeFile::Unchanged),
            _ => (path.clone(), TreeFile::Bytes(b.clone())),
        })
        .collect();
    assert!(marked.iter().any(|(_, f)| *f == TreeFile::Unchanged));
    let whole = read(files, rev, &limits, &mut ids()).unwrap();
    let compared = read_tree(marked, rev, &limits, &mut ids()).unwrap();
    assert_eq!(whole, compared);
    whole
}

#[test]
fn what_was_written_reads_back_as_the_same_revision() {
    let (rev, bytes) = readable();
    let read = read_both(files_of(&rev, &bytes), &rev);
    assert_eq!(read.new_files, vec![]);
    assert_eq!(read.revision.pages, rev.pages);
    assert_eq!(read.revision.files, rev.files);
    assert_eq!(read.revision.reusable_contents, rev.reusable_contents);
    assert_eq!(read.revision.variables, rev.variables);
}

#[test]
fn an_edit_changes_only_what_it_touches() {
    let (rev, bytes) = readable();
    let mut files = files_of(&rev, &bytes);
    for (path, b) in files.iter_mut() {
        if path == "guide/install.md" {
            *b = b"---\nhidden: true\n---\n\n# Installing\n\n## Steps\n\nBack to [the guide](README.md).\n"
                .to_vec();
        }
        if path == "SUMMARY.md" {
            let text = String::from_utf8(b.clone()).unwrap().replace(
                "  * [Install](guide/install.md)\n",
                "  * [Install](guide/install.md)\n  * [Upgrade](guide/upgrade.md)\n",
            );
            *b = text.into_bytes();
        }
    }
    files.push((
        "guide/upgrade.md".into(),
        b"# Upgrade\n\nSee ![new](../.gitbook/assets/new.png).\n".to_vec(),
    ));
    files.push((".gitbook/assets/new.png".into(), b"new image".to_vec()));
    let read = read_both(files, &rev);
    let before = rev.flatten();
    let after = read.revision.flatten();
    let install = after.iter().find(|f| f.page.id == "p3").unwrap().page;
    assert_eq!(install.title, "Installing");
    assert!(install.hidden);
    assert_eq!(
        install.markdown(),
        Some("## Steps\n\nBack to [the guide](/pages/p2).\n")
    );
    let upgrade = after.iter().find(|f| f.page.title == "Upgrade").unwrap();
    assert!(upgrade.page.id.starts_with("new"));
    assert_eq!(upgrade.location.parent.as_deref(), Some("p2"));
    assert_eq!(read.new_files.len(), 1);
    assert_eq!(read.new_files[0].bytes, b"new image");
    // Every other page is the one that was there.
    for f in &before {
        if f.page.id != "p3" {
            let same = after.iter().find(|a| a.page.id == f.page.id).unwrap();
            assert_eq!(same.page.without_children(), f.page.without_children());
        }
    }
}

#[test]
fn only_what_the_layout_writes_can_be_unchanged() {
    let (rev, bytes) = readable();
    let mut files: Vec<(String, TreeFile)> = files_of(&rev, &bytes)
        .into_iter()
        .map(|(path, b)| (path, TreeFile::Bytes(b)))
        .collect();
    files.push((".gitbook.yaml".into(), TreeFile::Unchanged));
    let err = read_tree(files.clone(), &rev, &Default::default(), &mut ids()).unwrap_err();
    assert!(err.0.contains(".gitbook.yaml"), "{}", err.0);
    files.pop();
    // A page the summary lists that the base has not.
    for (path, f) in files.iter_mut() {
        if let (true, TreeFile::Bytes(b)) = (path == "SUMMARY.md", f) {
            b.extend_from_slice(b"* [Other](guide/other.md)\n");
        }
    }
    files.push(("guide/other.md".into(), TreeFile::Unchanged));
    let err = read_tree(files, &rev, &Default::default(), &mut ids()).unwrap_err();
    assert!(err.0.contains("guide/other.md"), "{}", err.0);
}

#[test]
fn what_cannot_be_read_is_refused_naming_the_file() {
    let (rev, bytes) = readable();
    let limits = crate::convert::Limits::default();
    let mut twice = files_of(&rev, &bytes);
    for (path, b) in twice.iter_mut() {
        if path == "SUMMARY.md" {
            b.extend_from_slice(b"* [Again](guide/install.md)\n");
        }
    }
    // A file listed again is a link to its page, not a second page.
    let again = read(twice, &rev, &limits, &mut ids()).unwrap().revision;
    let flat = again.flatten();
    let link = flat.iter().find(|f| f.page.title == "Again").unwrap().page;
    let install = rev
        .flatten()
        .into_iter()
        .find(|f| f.page.title == "Install")
        .unwrap();
    assert!(
        matches!(&link.kind, PageKind::Link(l) if l.target == ContentRef::Page { page: install.page.id.clone(), space: None }),
        "{link:?}"
    );

    let mut yaml = files_of(&rev, &bytes);
    for (path, b) in yaml.iter_mut() {
        if path == "guide/install.md" {
            *b = b"---\nhidden: [oops\n---\n\n# Install\n".to_vec();
        }
    }
    let err = read(yaml, &rev, &limits, &mut ids()).unwrap_err();
    assert!(err.0.starts_with("`guide/install.md`"), "{}", err.0);

    let mut latin = files_of(&rev, &bytes);
    latin.push(("guide/latin.md".into(), vec![0xe9, b'\n']));
    let err = read(latin, &rev, &limits, &mut ids()).unwrap_err();
    assert!(err.0.contains("guide/latin.md"), "{}", err.0);
}

#[test]
fn layouts_one_after_another_name_the_same_blobs() {
    // A history: a title changed, a body changed, a page moved (its path changes), the
    // linked-to page renamed (the linking page's file changes with it).
    let first = sample();
    let mut titled = first.clone();
    titled.pages[0].title = "Start here".into();
    let mut edited = titled.clone();
    if let PageKind::Document(d) = &mut edited.pages[2].pages[0].kind {
        d.markdown = "New text.\n".into();
    }
    let mut moved = edited.clone();
    let api = moved.pages[2].pages.remove(0);
    moved.pages.push(api);
    let mut renamed = moved.clone();
    renamed.pages[1].pages[0].slug = "setup".into();
    let history = [first, titled, edited, moved, renamed];

    let mut files = PageFiles::default();
    let mut reused = Vec::new();
    for rev in &history {
        let plain: Vec<(String, Oid)> = layout(rev)
            .into_iter()
            .filter_map(|e| match e.content {
                Content::Text(t) => Some((e.path, objects::id_of(Kind::Blob, t.as_bytes()))),
                Content::Blob(_) => None,
            })
            .collect();
        let mut same = 0;
        let laid: Vec<(String, Oid)> = layout_with(rev, &mut files)
            .into_iter()
            .filter_map(|(path, l)| match l {
                Laid::Same(oid) => {
                    same += 1;
                    Some((path, oid))
                }
                Laid::New(Content::Text(t)) => {
                    Some((path, objects::id_of(Kind::Blob, t.as_bytes())))
                }
                Laid::New(Content::Blob(_)) => None,
            })
            .collect();
        assert_eq!(laid, plain);
        reused.push(same);
    }
    // Pages without links are reused where they and their path stayed; linking pages never.
    assert_eq!(reused, [0, 1, 1, 1, 2]);
}

#[test]
fn card_targets_and_covers_are_written_relative() {
    let mut rev = sample();
    let cards = "<table data-view=\"cards\"><thead><tr><th></th><th data-hidden data-card-target data-type=\"content-ref\"></th><th data-hidden data-card-cover data-type=\"files\"></th></tr></thead><tbody><tr><td>Install</td><td><a href=\"/pages/p3\">install.md</a></td><td><a href=\"/files/f1\">logo.png</a></td></tr></tbody></table>\n";
    rev.pages[0] = Page::document("p1", "Introduction", "introduction", cards);
    let entries = layout(&rev);
    let intro = text(&entries, "README.md");
    assert!(
        intro.contains("<td><a href=\"guide/install.md\">install.md</a></td><td><a href=\".gitbook/assets/logo.png\">logo.png</a></td>"),
        "{intro}"
    );
}

/// A page's tags and its primary tag, and the revision's tag definitions, are written in
/// the Git Sync layout (the page's frontmatter, `.gitbook/tags.yaml`) and read back from it.
#[test]
fn tags_and_a_primary_tag_are_written_and_read_back() {
    let (mut rev, bytes) = readable();
    rev.tags = vec![
        crate::model::Tag {
            slug: "beta".into(),
            label: "Beta".into(),
            icon: Some("flask".into()),
            color: Some("orange".into()),
        },
        crate::model::Tag {
            slug: "new".into(),
            label: "New".into(),
            icon: Some("🎉".into()),
            color: None,
        },
    ];
    rev.pages[1].tags = vec!["beta".into(), "new".into()];
    rev.pages[1].primary_tag = Some("new".into());
    let files = files_of(&rev, &bytes);
    let file = |path: &str| {
        let (_, b) = files.iter().find(|(p, _)| p == path).unwrap();
        String::from_utf8(b.clone()).unwrap()
    };
    assert!(
        file("guide/README.md")
            .starts_with("---\ntags:\n  - tag: beta\n  - tag: new\n    primary: true\n---\n"),
        "{}",
        file("guide/README.md")
    );
    assert_eq!(
        file(".gitbook/tags.yaml"),
        "- tag: beta\n  label: Beta\n  icon: flask\n  color: orange\n- tag: new\n  label: New\n  icon: 🎉\n"
    );
    // Read as a new space (nothing to keep), then against the revision it was laid from.
    let limits = crate::convert::Limits::default();
    let fresh = read(files.clone(), &Revision::default(), &limits, &mut ids()).unwrap();
    let guide = fresh
        .revision
        .flatten()
        .into_iter()
        .find(|f| f.page.title == "Guide")
        .unwrap()
        .page
        .clone();
    assert_eq!(guide.tags, ["beta", "new"]);
    assert_eq!(guide.primary_tag.as_deref(), Some("new"));
    assert_eq!(fresh.revision.tags, rev.tags);
    // (Every file as bytes: a caller marks unchanged only pages, files, includes, the
    // table of contents and the variables.)
    let again = read(files, &rev, &limits, &mut ids()).unwrap();
    assert_eq!(again.revision.pages, rev.pages);
    assert_eq!(again.revision.tags, rev.tags);
}
