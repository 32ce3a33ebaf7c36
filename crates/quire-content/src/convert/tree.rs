//! Trees of markdown files: GitBook's Git Sync layout (`SUMMARY.md` giving structure and
//! order, `README.md` per folder, images under `.gitbook/assets`) and, without a summary,
//! folders as the structure (a folder's `README.md` is its page; a folder without one is
//! a group).

use std::collections::BTreeMap;

use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};

use super::archive::{read_zip, Bytes, Entry};
use super::{
    archive_key, markdown_page, title_from_name, Asset, Bundle, ConvertError, Limits,
    SourceInclude, SourcePage, MAX_TREE_DEPTH,
};
use crate::frontmatter::split_page_markdown;

/// Converts a zip archive of markdown files.
pub fn from_zip(bytes: Bytes, limits: &Limits) -> Result<Bundle, ConvertError> {
    let entries = read_zip(bytes, limits)?;
    from_entries(strip_common_root(entries)?)
}

/// Whether a path names a markdown file.
pub fn is_markdown(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".md") || lower.ends_with(".markdown")
}

/// Drops a folder that holds everything (an archive of `repo-main/...`), unless the root
/// has documents of its own; honours `.gitbook.yaml`'s `root:`.
pub fn strip_common_root(mut entries: Vec<Entry>) -> Result<Vec<Entry>, ConvertError> {
    let root_docs = entries
        .iter()
        .any(|e| !e.path.contains('/') && (is_markdown(&e.path) || e.path == ".gitbook.yaml"));
    if !root_docs {
        let first: Option<&str> = entries
            .first()
            .and_then(|e| e.path.split_once('/'))
            .map(|(a, _)| a);
        if let Some(first) = first.map(str::to_string) {
            let prefix = format!("{first}/");
            if entries.iter().all(|e| e.path.starts_with(&prefix)) {
                for e in &mut entries {
                    e.path = e.path[prefix.len()..].to_string();
                }
            }
        }
    }
    // `.gitbook.yaml` may move the documentation's root into a folder.
    let config = match entries.iter().find(|e| e.path == ".gitbook.yaml") {
        Some(e) => Some(e.content.clone().document()?),
        None => None,
    };
    let root = config.and_then(|bytes| {
        String::from_utf8_lossy(&bytes).lines().find_map(|l| {
            let v = l.strip_prefix("root:")?.trim().trim_matches(['"', '\'']);
            let v = v.trim_start_matches("./").trim_matches('/');
            (!v.is_empty() && !v.contains("..")).then(|| format!("{v}/"))
        })
    });
    if let Some(root) = root {
        if entries.iter().any(|e| e.path.starts_with(&root)) {
            entries.retain(|e| e.path.starts_with(&root));
            for e in &mut entries {
                e.path = e.path[root.len()..].to_string();
            }
        }
    }
    Ok(entries)
}

/// Converts files (paths relative to the documentation's root) into a bundle.
pub fn from_entries(entries: Vec<Entry>) -> Result<Bundle, ConvertError> {
    let mut docs: BTreeMap<String, String> = BTreeMap::new();
    let mut assets = Vec::new();
    let mut includes = Vec::new();
    for e in entries {
        if is_markdown(&e.path) {
            let text = String::from_utf8(e.content.document()?)
                .map_err(|_| ConvertError::new(format!("`{}` is not UTF-8 text", e.path)))?;
            if e.path.starts_with(INCLUDES_FOLDER) {
                includes.push(include_of(&e.path, &text)?);
                continue;
            }
            docs.insert(e.path, text);
        } else if e.path != ".gitbook.yaml" {
            let name = e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
            assets.push(Asset {
                key: archive_key(&e.path),
                name,
                content: e.content,
            });
        }
    }
    if docs.is_empty() {
        return Err(ConvertError::new("holds no markdown file"));
    }
    let summary = docs
        .keys()
        .find(|k| k.eq_ignore_ascii_case("SUMMARY.md"))
        .cloned();
    let pages = match summary {
        Some(path) => {
            let text = docs.remove(&path).unwrap_or_default();
            from_summary(&text, &docs)
        }
        None => from_folders(&docs),
    };
    Ok(Bundle {
        pages,
        assets,
        remote_images: Vec::new(),
        includes,
    })
}

/// Where a Git Sync tree keeps its reusable contents.
const INCLUDES_FOLDER: &str = ".gitbook/includes/";

/// The reusable content of a file under [`INCLUDES_FOLDER`]: titled by its front matter's
/// `title`, else its first heading, else its name.
fn include_of(path: &str, text: &str) -> Result<SourceInclude, ConvertError> {
    let src = split_page_markdown(text).map_err(|e| ConvertError::new(format!("`{path}`: {e}")))?;
    Ok(SourceInclude {
        key: archive_key(path),
        title: src
            .frontmatter
            .title
            .or(src.heading)
            .unwrap_or_else(|| title_from_name(path)),
        body: src.body,
    })
}

fn page_for(path: &str, title: Option<&str>, docs: &BTreeMap<String, String>) -> SourcePage {
    let name = path.rsplit('/').next().unwrap_or(path);
    let slug_hint = if name.eq_ignore_ascii_case("README.md") {
        path.rsplit('/').nth(1).unwrap_or("")
    } else {
        name.rsplit_once('.').map_or(name, |(s, _)| s)
    };
    let fallback = title.map_or_else(|| title_from_name(slug_hint), str::to_string);
    let mut page = match docs.get(path) {
        Some(md) => markdown_page(archive_key(path), slug_hint, &fallback, md),
        None => SourcePage {
            key: archive_key(path),
            title: fallback.clone(),
            slug_hint: slug_hint.to_string(),
            body: Some(String::new()),
            ..SourcePage::default()
        },
    };
    // The summary's title is the one shown in the navigation.
    if let Some(t) = title.filter(|t| !t.trim().is_empty()) {
        page.title = t.trim().to_string();
    }
    page
}

/// The tree `SUMMARY.md` describes: `##` headings start groups, nested list items of links
/// are pages and their children.
fn from_summary(summary: &str, docs: &BTreeMap<String, String>) -> Vec<SourcePage> {
    let mut top: Vec<SourcePage> = Vec::new();
    let mut group: Option<SourcePage> = None;
    // Open list items, outermost first: the link found in each, its text, and its children.
    struct Item {
        href: Option<String>,
        text: String,
        children: Vec<SourcePage>,
    }
    let mut items: Vec<Item> = Vec::new();
    let mut heading: Option<String> = None;
    let mut in_link = false;
    // Files listed so far: a file listed again is a link page to it.
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for event in Parser::new_ext(summary, pulldown_cmark::Options::empty()) {
        match event {
            Event::Start(Tag::Heading { level, .. }) if level != HeadingLevel::H1 => {
                heading = Some(String::new());
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(title) = heading.take() {
                    if let Some(g) = group.take() {
                        top.push(g);
                    }
                    group = Some(SourcePage {
                        title: if title.trim().is_empty() {
                            "Pages".into()
                        } else {
                            title.trim().to_string()
                        },
                        ..SourcePage::default()
                    });
                }
            }
            Event::Start(Tag::Item) => items.push(Item {
                href: None,
                text: String::new(),
                children: Vec::new(),
            }),
            Event::Start(Tag::Link { dest_url, .. }) => {
                if let Some(item) = items.last_mut() {
                    if item.href.is_none() {
                        item.href = Some(dest_url.to_string());
                        item.text.clear();
                        in_link = true;
                    }
                }
            }
            Event::End(TagEnd::Link) => in_link = false,
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                } else if let Some(item) = items.last_mut() {
                    if in_link || item.href.is_none() {
                        item.text.push_str(&t);
                    }
                }
            }
            Event::End(TagEnd::Item) => {
                let Some(item) = items.pop() else { continue };
                let title = item.text.trim().to_string();
                let listed_before = item.href.as_deref().is_some_and(|href| {
                    let path = href.split('#').next().unwrap_or(href);
                    !href.contains("://")
                        && !seen.insert(super::percent_decode(path.trim_start_matches("./")))
                });
                let mut page = match item.href.as_deref() {
                    Some(href) if !href.contains("://") && !listed_before => {
                        let path = href.split('#').next().unwrap_or(href);
                        let path = super::percent_decode(path.trim_start_matches("./"));
                        page_for(&path, Some(&title), docs)
                    }
                    // A page listed again (often at one of its headings) is a link to it:
                    // one page, one file, as GitBook writes it.
                    // An item linking elsewhere is a link page.
                    // An item linking elsewhere is a link page.
                    other => SourcePage {
                        title: if title.is_empty() {
                            "Untitled".into()
                        } else {
                            title
                        },
                        body: Some(String::new()),
                        link: other.map(str::to_string),
                        ..SourcePage::default()
                    },
                };
                page.children = item.children;
                // Deeper than the tree may nest: attach to the deepest allowed ancestor.
                let parent = items.len().min(MAX_TREE_DEPTH);
                match parent {
                    0 => match group.as_mut() {
                        Some(g) => g.children.push(page),
                        None => top.push(page),
                    },
                    n => items[n - 1].children.push(page),
                }
            }
            _ => {}
        }
    }
    if let Some(g) = group.take() {
        top.push(g);
    }
    top
}

/// A folder of the tree (without a summary).
#[derive(Default)]
struct Folder {
    files: Vec<String>,
    folders: BTreeMap<String, Folder>,
}

/// Folders as the structure: a folder's `README.md` is its page, other files its children.
fn from_folders(docs: &BTreeMap<String, String>) -> Vec<SourcePage> {
    let mut root = Folder::default();
    for path in docs.keys() {
        let parts: Vec<&str> = path.split('/').collect();
        let (dirs, _) = parts.split_at(parts.len() - 1);
        // Folders deeper than the tree may nest hang from the deepest allowed one.
        let mut at = &mut root;
        for d in dirs.iter().take(MAX_TREE_DEPTH - 1) {
            at = at.folders.entry((*d).to_string()).or_default();
        }
        at.files.push(path.clone());
    }
    // Built bottom-up without recursion: folders in post-order.
    fn build(
        folder: &Folder,
        name: &str,
        docs: &BTreeMap<String, String>,
        depth: usize,
    ) -> Vec<SourcePage> {
        let is_readme = |p: &String| {
            p.rsplit('/')
                .next()
                .is_some_and(|n| n.eq_ignore_ascii_case("README.md"))
        };
        let readme = folder.files.iter().find(|p| is_readme(p));
        let mut children: Vec<SourcePage> = folder
            .files
            .iter()
            .filter(|p| !is_readme(p))
            .map(|p| page_for(p, None, docs))
            .collect();
        if depth < MAX_TREE_DEPTH {
            for (sub, f) in &folder.folders {
                children.extend(build(f, sub, docs, depth + 1));
            }
        }
        if depth == 0 {
            // The root's README is the first page, not a parent of the others.
            let mut out: Vec<SourcePage> = readme
                .map(|p| page_for(p, None, docs))
                .into_iter()
                .collect();
            out.extend(children);
            return out;
        }
        let mut page = match readme {
            Some(p) => page_for(p, None, docs),
            None => SourcePage {
                title: title_from_name(name),
                slug_hint: name.to_string(),
                ..SourcePage::default()
            },
        };
        page.children = children;
        vec![page]
    }
    build(&root, "", docs, 0)
}
