//! Official JSON shapes of pages and files (`RevisionPage*`, `RevisionFile`) built from the
//! model, with the values only the server knows (URLs) passed in.

use serde_json::{json, Map, Value};

use std::collections::HashMap;

use crate::gitsync::Blob;
use crate::markdown::markdown_to_document;
use crate::model::{join_path, File, Page, PageKind, Revision};

/// Which form of a document page's body to include.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    /// `markdown`: the stored markdown.
    Markdown,
    /// `document`: the official JSON document.
    Document,
}

/// Options for [`page_view`] and [`pages_view`].
pub struct ViewOptions<'a> {
    /// Which body to include.
    pub body: BodyFormat,
    /// The app URL of a page, given its path.
    pub app_url: &'a dyn Fn(&str) -> String,
    /// The git blob of each document page (`gitsync::page_blobs`), shown as its `git`.
    pub git: Option<&'a HashMap<String, Blob>>,
}

/// The official `RevisionPage` object of one page (with its children, bodies omitted below
/// the top page), or `None` when the revision has no such page.
pub fn page_view(rev: &Revision, page_id: &str, opts: &ViewOptions<'_>) -> Option<Value> {
    let path = rev.path_of(page_id)?;
    Some(page_view_at(rev.page(page_id)?, &path, opts))
}

/// [`page_view`] of a page taken out of its tree (or a copy of it), at its `path` in the
/// tree (as [`Revision::path_of`] gives it).
pub fn page_view_at(page: &Page, path: &str, opts: &ViewOptions<'_>) -> Value {
    let parent_path = path
        .strip_suffix(&page.slug)
        .unwrap_or("")
        .trim_end_matches('/')
        .to_string();
    view(page, &parent_path, opts, true)
}

/// The official `RevisionPage` object of `page` (at `path`, as [`Revision::flatten`] gives
/// it) without its children (`pages` empty) and with its stored markdown: how listings of
/// references name a page.
pub fn page_entry_view(page: &Page, path: &str, opts: &ViewOptions<'_>) -> Value {
    let page = page.without_children();
    let parent_path = path
        .strip_suffix(page.slug.as_str())
        .unwrap_or("")
        .trim_end_matches('/')
        .to_string();
    view(&page, &parent_path, opts, false)
}

/// The official `pages` array of a revision; each document page carries its markdown, which
/// the official schema requires.
pub fn pages_view(rev: &Revision, opts: &ViewOptions<'_>) -> Vec<Value> {
    rev.pages.iter().map(|p| view(p, "", opts, false)).collect()
}

fn view(page: &Page, parent_path: &str, opts: &ViewOptions<'_>, with_body: bool) -> Value {
    let path = join_path(parent_path, &page.slug);
    let mut o = Map::new();
    o.insert("id".into(), json!(page.id));
    o.insert("title".into(), json!(page.title));
    if let Some(e) = &page.emoji {
        o.insert("emoji".into(), json!(e));
    }
    if let Some(i) = &page.icon {
        o.insert("icon".into(), json!(i));
    }
    if let Some(c) = &page.condition {
        o.insert("condition".into(), json!(c));
    }
    let (kind, ty) = match &page.kind {
        PageKind::Document(_) => ("sheet", "document"),
        PageKind::Group => ("group", "group"),
        PageKind::Link(_) => ("link", "link"),
    };
    o.insert("kind".into(), json!(kind));
    o.insert("type".into(), json!(ty));
    o.insert("hidden".into(), json!(page.hidden));
    match &page.kind {
        PageKind::Link(l) => {
            o.insert(
                "target".into(),
                serde_json::to_value(&l.target).expect("refs serialise"),
            );
            if let crate::model::ContentRef::Url { url } = &l.target {
                o.insert("href".into(), json!(url));
            }
        }
        kind => {
            o.insert("slug".into(), json!(page.slug));
            o.insert("path".into(), json!(path));
            o.insert("noIndex".into(), json!(page.no_index));
            o.insert("noRobotsIndex".into(), json!(page.no_robots_index));
            if let PageKind::Document(d) = kind {
                o.insert("urls".into(), json!({"app": (opts.app_url)(&path)}));
                // The body's object name: `getDocumentById` reads it back (an empty page
                // has no document, as the official schema says).
                if !d.markdown.is_empty() {
                    o.insert(
                        "documentId".into(),
                        json!(crate::store::body_hash(d).to_hex()),
                    );
                }
                if let Some(desc) = &page.description {
                    o.insert("description".into(), json!(desc));
                }
                o.insert(
                    "layout".into(),
                    serde_json::to_value(&d.layout).expect("layouts serialise"),
                );
                if let Some(c) = &d.cover {
                    o.insert(
                        "cover".into(),
                        serde_json::to_value(c).expect("covers serialise"),
                    );
                }
                if !d.variables.is_empty() {
                    o.insert(
                        "variables".into(),
                        serde_json::to_value(&d.variables).expect("variables serialise"),
                    );
                }
                if let Some(blob) = opts.git.and_then(|g| g.get(&page.id)) {
                    o.insert("git".into(), json!({"oid": blob.oid, "path": blob.path}));
                }
                // The official `RevisionPageTag`: a reference to a tag of the revision, and
                // `primary` on the page's primary tag (the flag is optional: left out on
                // the others).
                let tags: Vec<Value> = page
                    .tags
                    .iter()
                    .map(|t| {
                        if page.primary_tag.as_ref() == Some(t) {
                            json!({ "tag": { "kind": "tag", "tag": t }, "primary": true })
                        } else {
                            json!({ "tag": { "kind": "tag", "tag": t } })
                        }
                    })
                    .collect();
                o.insert("tags".into(), Value::Array(tags));
                // The official page schema requires a body on every document page, listed
                // or nested too: those carry their stored markdown, which costs no conversion.
                let body = if with_body {
                    opts.body
                } else {
                    BodyFormat::Markdown
                };
                {
                    match body {
                        BodyFormat::Markdown => {
                            o.insert("markdown".into(), json!(d.markdown));
                        }
                        BodyFormat::Document => {
                            let mut doc = markdown_to_document(&d.markdown);
                            doc.assign_keys(&page.id);
                            o.insert(
                                "document".into(),
                                serde_json::to_value(doc).expect("documents serialise"),
                            );
                        }
                    }
                }
            }
            let children: Vec<Value> = page
                .pages
                .iter()
                .map(|c| view(c, &path, opts, false))
                .collect();
            o.insert("pages".into(), Value::Array(children));
        }
    }
    Value::Object(o)
}

/// The official `RevisionFile` object; `git_path` is the file's path in the space's
/// repository (`gitsync::file_paths`), shown with its blob as `git` when its id is known.
pub fn file_view(file: &File, download_url: &str, git_path: Option<&str>) -> Value {
    let mut o = json!({
        "id": file.id,
        "name": file.name,
        "contentType": file.content_type,
        "downloadURL": download_url,
        "size": file.size,
    });
    if let Some(d) = file.dimensions {
        o["dimensions"] = json!({"width": d.width, "height": d.height});
    }
    if let (Some(oid), Some(path)) = (&file.git_oid, git_path) {
        o["git"] = json!({"oid": oid, "path": path});
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContentRef;

    #[test]
    fn page_shapes() {
        let mut g = Page::group("g", "Guides", "guides");
        g.pages
            .push(Page::document("a", "A", "a", "Hello **you**.\n"));
        g.pages.push(Page::link(
            "l",
            "Out",
            ContentRef::Url {
                url: "https://x.y".into(),
            },
        ));
        let rev = Revision {
            pages: vec![g],
            ..Revision::default()
        };
        let app = |p: &str| format!("https://app.example/{p}");
        let opts = ViewOptions {
            body: BodyFormat::Document,
            app_url: &app,
            git: None,
        };
        let v = page_view(&rev, "a", &opts).unwrap();
        assert_eq!(v["path"], "guides/a");
        assert_eq!(v["kind"], "sheet");
        assert_eq!(v["urls"]["app"], "https://app.example/guides/a");
        assert_eq!(v["layout"]["width"], "default");
        assert_eq!(v["document"]["nodes"][0]["type"], "paragraph");
        let list = pages_view(&rev, &opts);
        assert_eq!(list[0]["type"], "group");
        assert_eq!(list[0]["pages"][1]["target"]["kind"], "url");
        assert!(list[0]["pages"][0].get("document").is_none());
        let f = File {
            id: "f".into(),
            name: "a.png".into(),
            content_type: "image/png".into(),
            size: 3,
            dimensions: Some(crate::model::Dimensions {
                width: 2,
                height: 1,
            }),
            blob: "00".into(),
            git_oid: None,
        };
        let v = file_view(&f, "https://dl/f", None);
        assert_eq!(v["downloadURL"], "https://dl/f");
        assert_eq!(v["dimensions"]["width"], 2);
    }
}
