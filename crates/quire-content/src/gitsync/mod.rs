//! A revision laid out as a repository, the way GitBook's Git Sync writes one: `README.md`
//! is the first page, `SUMMARY.md` the table of contents (`##` headings for groups, nested
//! lists for children, link pages as links), a page with children is `folder/README.md`,
//! files are under `.gitbook/assets/`, reusable contents under `.gitbook/includes/`, space
//! variables in `.gitbook/vars.yaml`. Each page is its frontmatter, `# Title` and body, with
//! links to pages, files and includes written as paths relative to the page, as Git Sync
//! writes them.
//!
//! [`objects`] makes the git objects of such a tree.

pub mod carry;
pub mod objects;
mod read;

pub use read::{
    read, read_tree, read_tree_placed, GitRedirect, NewFile, Read, TreeFile, MAX_GIT_REDIRECTS,
};

use std::collections::{HashMap, HashSet};

use crate::document::{Element, Node};
use crate::frontmatter::page_to_markdown;
use crate::markdown::{document_to_markdown, ref_href, try_lines_document_with, DefaultLinks};
use crate::model::{slugify, ContentRef, Page, PageKind, Revision, VariableValue};

/// What a file of the layout holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// Text made from the revision.
    Text(String),
    /// A file of the revision: its bytes are the blob named by this sha-256 (hex).
    Blob(String),
}

/// One file of the layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Path from the repository's root, `/` between folders.
    pub path: String,
    /// Its contents.
    pub content: Content,
}

/// The folder of the files.
pub const ASSETS: &str = ".gitbook/assets";
/// The folder of the reusable contents.
pub const INCLUDES: &str = ".gitbook/includes";

/// Where everything a page can point at is written.
struct Paths {
    pages: HashMap<String, String>,
    files: HashMap<String, String>,
    includes: HashMap<String, String>,
}

/// The repository files of `rev`, in a stable order.
pub fn layout(rev: &Revision) -> Vec<Entry> {
    layout_pages(rev, &mut |page, path, paths| {
        Content::Text(page_file(page, path, paths))
    })
}

/// Page files laid out before, by path: the page as it was (without its children) and its
/// file's blob id.
#[derive(Default)]
pub struct PageFiles {
    pages: HashMap<String, (Page, objects::Oid)>,
}

/// A file of [`layout_with`]: a file of the layout, or a page file that an earlier layout
/// made the same, by its blob id.
pub enum Laid {
    /// A file of the layout.
    New(Content),
    /// The blob id of a page file unchanged since the earlier layout.
    Same(objects::Oid),
}

/// [`layout`] of revisions one after another (a history's commits): a page whose file an
/// earlier layout made from the same page at the same path is given by that file's blob id
/// instead of being written and hashed again. Pages whose files depend on where other
/// things are (links to rewrite, a cover) are always written. `files` keeps the pages of
/// this revision only.
pub fn layout_with(rev: &Revision, files: &mut PageFiles) -> Vec<(String, Laid)> {
    let mut now: HashMap<String, (Page, objects::Oid)> = HashMap::new();
    let mut same: HashMap<String, objects::Oid> = HashMap::new();
    let entries = layout_pages(rev, &mut |page, path, paths| {
        let alone = match &page.kind {
            PageKind::Document(d) => d.cover.is_none() && !needs_rewrite(&d.markdown),
            _ => false,
        };
        if alone {
            if let Some((before, oid)) = files.pages.get(path) {
                if same_page(before, page) {
                    now.insert(path.to_string(), (before.clone(), *oid));
                    same.insert(path.to_string(), *oid);
                    return Content::Text(String::new());
                }
            }
        }
        let text = page_file(page, path, paths);
        if alone {
            let oid = objects::id_of(objects::Kind::Blob, text.as_bytes());
            now.insert(path.to_string(), (page.without_children(), oid));
        }
        Content::Text(text)
    });
    files.pages = now;
    entries
        .into_iter()
        .map(|e| match same.get(&e.path) {
            Some(oid) => (e.path, Laid::Same(*oid)),
            None => (e.path, Laid::New(e.content)),
        })
        .collect()
}

/// Whether two pages' own fields (not their children) are the same; a document shared
/// between revisions compares by identity first.
fn same_page(a: &Page, b: &Page) -> bool {
    a.id == b.id
        && a.title == b.title
        && a.slug == b.slug
        && a.emoji == b.emoji
        && a.icon == b.icon
        && a.description == b.description
        && a.hidden == b.hidden
        && a.no_index == b.no_index
        && a.no_robots_index == b.no_robots_index
        && a.condition == b.condition
        && a.tags == b.tags
        && a.primary_tag == b.primary_tag
        && a.kind == b.kind
}

/// The layout, each page's file made by `page_file` (page, path, where everything is).
fn layout_pages(
    rev: &Revision,
    page_file: &mut dyn FnMut(&Page, &str, &Paths) -> Content,
) -> Vec<Entry> {
    let paths = paths_of(rev);
    let mut out = Vec::new();
    out.push(Entry {
        path: "SUMMARY.md".into(),
        content: Content::Text(summary(rev, &paths)),
    });
    let mut stack: Vec<&Page> = rev.pages.iter().rev().collect();
    while let Some(page) = stack.pop() {
        if let Some(path) = paths.pages.get(&page.id) {
            out.push(Entry {
                path: path.clone(),
                content: page_file(page, path, &paths),
            });
        }
        stack.extend(page.pages.iter().rev());
    }
    for f in &rev.files {
        if let Some(path) = paths.files.get(&f.id) {
            out.push(Entry {
                path: path.clone(),
                content: Content::Blob(f.blob.clone()),
            });
        }
    }
    for r in &rev.reusable_contents {
        if let Some(path) = paths.includes.get(&r.id) {
            out.push(Entry {
                path: path.clone(),
                content: Content::Text(carry::include_file(r, path, &paths)),
            });
        }
    }
    if !rev.variables.is_empty() {
        out.push(Entry {
            path: ".gitbook/vars.yaml".into(),
            content: Content::Text(vars_text(rev)),
        });
    }
    if !rev.tags.is_empty() {
        out.push(Entry {
            path: ".gitbook/tags.yaml".into(),
            content: Content::Text(tags_text(rev)),
        });
    }
    out
}

/// `.gitbook/tags.yaml`: the revision's tags, in order.
fn tags_text(rev: &Revision) -> String {
    let mut text = String::new();
    for t in &rev.tags {
        text.push_str(&format!(
            "- tag: {}\n  label: {}\n",
            yaml_line(&t.slug),
            yaml_line(&t.label)
        ));
        if let Some(icon) = &t.icon {
            text.push_str(&format!("  icon: {}\n", yaml_line(icon)));
        }
        if let Some(color) = &t.color {
            text.push_str(&format!("  color: {}\n", yaml_line(color)));
        }
    }
    text
}

/// `.gitbook/vars.yaml`: the space's variables, one a line.
fn vars_text(rev: &Revision) -> String {
    let mut text = String::new();
    for (k, v) in &rev.variables {
        let v = match v {
            VariableValue::String(s) => yaml_line(s),
            VariableValue::Bool(b) => b.to_string(),
            VariableValue::Number(n) => n.to_string(),
        };
        text.push_str(&format!("{}: {v}\n", yaml_line(k)));
    }
    text
}

/// A string as one YAML scalar (quoted when plain style would read differently).
fn yaml_line(s: &str) -> String {
    crate::frontmatter::yaml_str(s)
}

/// A path segment from a slug or name: what a file system and git accept.
fn segment(s: &str, fallback: &str) -> String {
    let cleaned: String = s
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '/' | '\\'))
        .collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() || cleaned.chars().all(|c| c == '.') {
        fallback.to_string()
    } else {
        cleaned.to_string()
    }
}

/// Gives every document page, file and reusable content its path.
fn paths_of(rev: &Revision) -> Paths {
    let mut pages = HashMap::new();
    let mut first = true;
    // (page, folder of its parent), depth-first in navigation order.
    let mut stack: Vec<(&Page, String)> =
        rev.pages.iter().rev().map(|p| (p, String::new())).collect();
    while let Some((page, parent)) = stack.pop() {
        let seg = segment(&page.slug, &page.id);
        let folder = if parent.is_empty() {
            seg.clone()
        } else {
            format!("{parent}/{seg}")
        };
        if let PageKind::Document(_) = page.kind {
            let path = if first {
                first = false;
                "README.md".to_string()
            } else if page.pages.is_empty() {
                format!("{folder}.md")
            } else {
                format!("{folder}/README.md")
            };
            pages.insert(page.id.clone(), path);
        }
        stack.extend(page.pages.iter().rev().map(|c| (c, folder.clone())));
    }
    // Folders and files may not share a name: `SUMMARY.md` and `.gitbook` are taken.
    let mut files = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    for f in &rev.files {
        let name = unique(segment(&f.name, &f.id), &mut taken);
        files.insert(f.id.clone(), format!("{ASSETS}/{name}"));
    }
    let mut includes = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    for r in &rev.reusable_contents {
        let base = slugify(&r.title);
        let base = if base.is_empty() { r.id.clone() } else { base };
        let name = unique(format!("{base}.md"), &mut taken);
        includes.insert(r.id.clone(), format!("{INCLUDES}/{name}"));
    }
    Paths {
        pages,
        files,
        includes,
    }
}

/// `name`, or `name (1)`, `name (2)`… before its extension, the first not yet taken (as
/// GitBook names a second file of the same name).
fn unique(name: String, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.clone();
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
        _ => (name.clone(), String::new()),
    };
    let mut n = 1;
    while !taken.insert(candidate.to_ascii_lowercase()) {
        candidate = format!("{stem} ({n}){ext}");
        n += 1;
    }
    candidate
}

/// `SUMMARY.md`: the table of contents.
fn summary(rev: &Revision, paths: &Paths) -> String {
    let mut out = String::from("# Table of contents\n\n");
    for page in &rev.pages {
        if let PageKind::Group = page.kind {
            if !out.ends_with("\n\n") {
                out.push('\n');
            }
            out.push_str(&format!("## {}\n\n", summary_text(&page.title)));
            list(&page.pages, 0, paths, &mut out);
        } else {
            list(std::slice::from_ref(page), 0, paths, &mut out);
        }
    }
    out
}

/// The items of `pages` at `depth` (two spaces of indent per level), children below each.
/// Depth is bounded by the page tree's own bound.
fn list(pages: &[Page], depth: usize, paths: &Paths, out: &mut String) {
    for page in pages {
        let indent = "  ".repeat(depth);
        let title = summary_text(&page.title);
        let href = match &page.kind {
            PageKind::Document(_) => paths.pages.get(&page.id).map(|p| encode_path(p)),
            PageKind::Link(link) => Some(link_href(&link.target, "SUMMARY.md", paths)),
            PageKind::Group => None,
        };
        match href {
            Some(h) => out.push_str(&format!("{indent}* [{title}]({h})\n")),
            None => out.push_str(&format!("{indent}* {title}\n")),
        }
        list(&page.pages, depth + 1, paths, out);
    }
}

/// A title as the text of a summary item or heading.
fn summary_text(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        match c {
            '[' | ']' | '\\' | '*' | '_' | '`' | '<' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// A path as a link destination: characters markdown or URLs would read differently are
/// percent-encoded.
fn encode_path(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        match b {
            b' ' | b'(' | b')' | b'<' | b'>' | b'%' | b'#' | b'?' | b'"' | b'\\' => {
                out.push_str(&format!("%{b:02X}"))
            }
            _ => out.push(b as char),
        }
    }
    out
}

/// `to` relative to the folder of `from` (both paths from the root).
fn relative(from: &str, to: &str) -> String {
    let from_dirs: Vec<&str> = from.split('/').collect();
    let from_dirs = &from_dirs[..from_dirs.len() - 1];
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dirs
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<&str> = vec![".."; from_dirs.len() - common];
    parts.extend(&to_parts[common..]);
    encode_path(&parts.join("/"))
}

/// Where a reference points from the file at `from`: a relative path for what the layout
/// holds, the stored form for anything else.
fn link_href(r: &ContentRef, from: &str, paths: &Paths) -> String {
    let local = match r {
        ContentRef::Page { page, space: None } => paths.pages.get(page).map(|p| relative(from, p)),
        ContentRef::Anchor {
            anchor,
            page: Some(page),
            space: None,
        } => paths.pages.get(page).map(|p| {
            if p == from {
                format!("#{anchor}")
            } else {
                format!("{}#{anchor}", relative(from, p))
            }
        }),
        ContentRef::File { file } => paths.files.get(file).map(|p| relative(from, p)),
        ContentRef::ReusableContent {
            reusable_content,
            space: None,
        } => paths
            .includes
            .get(reusable_content)
            .map(|p| relative(from, p)),
        _ => None,
    };
    local.unwrap_or_else(|| ref_href(r))
}

/// A document page's file: frontmatter, `# Title`, body with relative links.
fn page_file(page: &Page, path: &str, paths: &Paths) -> String {
    let mut page = page.without_children();
    if let PageKind::Document(doc) = &mut page.kind {
        if let Some(cover) = doc.cover.as_ref() {
            let rewrite = |r: &Option<ContentRef>| {
                r.as_ref().map(|r| ContentRef::Url {
                    url: link_href(r, path, paths),
                })
            };
            let (reference, dark) = (rewrite(&cover.reference), rewrite(&cover.ref_dark));
            let cover = doc.cover.as_mut().expect("checked above");
            cover.reference = reference;
            cover.ref_dark = dark;
        }
        if needs_rewrite(&doc.markdown) {
            let body = rewrite_links(&doc.markdown, path, paths);
            doc.markdown = body;
        }
    }
    page_to_markdown(&page)
}

/// Whether a stored body may hold a reference that is written differently in the layout.
fn needs_rewrite(md: &str) -> bool {
    ["/pages/", "/files/", "/reusable-contents/"]
        .iter()
        .any(|p| md.contains(p))
}

/// A stored body with its references to pages, files and reusable contents written as
/// paths relative to `path`. A body that cannot be parsed is kept as it is.
fn rewrite_links(md: &str, path: &str, paths: &Paths) -> String {
    if !needs_rewrite(md) {
        return md.to_string();
    }
    // Parsed keeping lines, so that hand-wrapped paragraphs stay wrapped in the layout.
    let Ok(mut doc) = try_lines_document_with(md, &DefaultLinks) else {
        return md.to_string();
    };
    // The parsed document is within the nesting bound, so this walk is too.
    let mut stack: Vec<&mut Node> = doc.nodes.iter_mut().collect();
    while let Some(node) = stack.pop() {
        let (Node::Block(e) | Node::Inline(e)) = node else {
            continue;
        };
        if e.kind == "table" {
            cells_by_label(e);
        }
        for key in ["ref", "refDark"] {
            let Some(value) = e.data.get_mut(key) else {
                continue;
            };
            let Ok(r) = serde_json::from_value::<ContentRef>(value.clone()) else {
                continue;
            };
            let href = link_href(&r, path, paths);
            if href != ref_href(&r) {
                *value = serde_json::json!({ "kind": "url", "url": href });
            }
        }
        if let Some(children) = e.nodes.as_mut() {
            stack.extend(children.iter_mut());
        }
        if let Some(fragments) = e.fragments.as_mut() {
            for f in fragments {
                stack.extend(f.nodes.iter_mut());
            }
        }
    }
    document_to_markdown(&doc)
}

/// Points a table's typed link cells (content references, covers, files) at their label
/// fragments, whose links are then written relative like any other: the values cannot hold
/// a relative path, and the fragment is how the cell is written anyway.
fn cells_by_label(table: &mut Element) {
    let labels: HashSet<String> = table
        .fragments
        .iter()
        .flatten()
        .filter_map(|f| f.fragment.clone())
        .collect();
    let Some(records) = table
        .data
        .get_mut("records")
        .and_then(|r| r.as_object_mut())
    else {
        return;
    };
    for (rid, record) in records.iter_mut() {
        let Some(values) = record.get_mut("values").and_then(|v| v.as_object_mut()) else {
            continue;
        };
        for (column, value) in values.iter_mut() {
            let key = format!("{rid}-{column}");
            if (value.is_object() || value.is_array()) && labels.contains(&key) {
                *value = serde_json::Value::String(key);
            }
        }
    }
}

/// A file of the layout as git names it (the official `GitSyncBlob`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blob {
    /// Path from the repository's root.
    pub path: String,
    /// The blob's id (hex sha-1).
    pub oid: String,
}

/// The blob of each document page's file in the layout of `rev`, by page id: what the
/// space's repository holds at the revision's commit. Only those of `under` and its
/// subpages when it is given (a page's answer shows its subpages).
pub fn page_blobs(rev: &Revision, under: Option<&str>) -> HashMap<String, Blob> {
    let paths = paths_of(rev);
    let mut out = HashMap::new();
    let mut stack: Vec<&Page> = match under {
        Some(id) => rev.page(id).into_iter().collect(),
        None => rev.pages.iter().collect(),
    };
    while let Some(p) = stack.pop() {
        stack.extend(p.pages.iter());
        if let Some(path) = paths.pages.get(&p.id) {
            let text = page_file(p, path, &paths);
            let oid = objects::id_of(objects::Kind::Blob, text.as_bytes()).to_hex();
            out.insert(
                p.id.clone(),
                Blob {
                    path: path.clone(),
                    oid,
                },
            );
        }
    }
    out
}

/// The path of each file of `rev` in its layout, by file id.
pub fn file_paths(rev: &Revision) -> HashMap<String, String> {
    paths_of(rev).files
}

#[cfg(test)]
mod tests;
