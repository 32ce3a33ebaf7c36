//! Content imports: documents of other tools converted to pages of the markdown dialect.
//!
//! Every converter reads bytes already in memory (the server downloads them through its
//! safe fetcher) and produces a [`Bundle`]: a tree of [`SourcePage`]s whose bodies are
//! markdown of the dialect with links still written as in the source, and the [`Asset`]s
//! (images, attachments) the source carried. [`assemble`] then gives pages and files ids and
//! resolves every link against the source's own names: a link to an imported page becomes
//! a page link, an image or attachment of the source a file reference, and a link that
//! points nowhere stays as it was written.
//!
//! Pages and assets are named by keys shaped as absolute URLs: a website's pages by their
//! URL, an archive's entries by [`archive_key`] (a fixed base joined with their path), so
//! that relative links resolve with URL joining whatever the source.
//!
//! Everything is bounded: archive entries, expanded bytes (per entry, for the documents
//! held in memory, and in all) and compression ratio ([`archive`]: an archive's images and
//! attachments stay compressed until the caller stores them), page count, tree depth,
//! document size and nesting.

pub mod archive;
pub mod confluence;
pub mod docx;
pub mod git;
pub mod html;
pub mod notion;
pub mod tree;
pub mod website;

use std::collections::{HashMap, HashSet};

use url::Url;

use crate::frontmatter::split_page_markdown;
use crate::markdown::{try_normalize_markdown_with, LinkResolver, LinkTarget};
use crate::model::{
    slugify, unique_slug, ContentRef, DocumentPage, Page, PageKind, ReusableContent,
};

/// Bounds of one import.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Entries an archive may hold.
    pub max_entries: usize,
    /// Bytes an archive may expand to, all entries together.
    pub max_expanded: u64,
    /// Bytes one archive entry may expand to.
    pub max_entry_bytes: u64,
    /// Bytes an archive's documents (pages, tables, XML, nested archives: what a converter
    /// keeps in memory) may expand to, all together; images and attachments are read one
    /// at a time when stored and do not count.
    pub max_document_bytes: u64,
    /// Largest ratio of an entry's expanded size to its compressed size (for entries above
    /// a mebibyte, where a bomb would matter).
    pub max_ratio: u64,
    /// Pages one import may create.
    pub max_pages: usize,
    /// Largest page body, in bytes of markdown.
    pub max_page_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 20_000,
            max_expanded: 512 * 1024 * 1024,
            max_entry_bytes: 64 * 1024 * 1024,
            max_document_bytes: 64 * 1024 * 1024,
            max_ratio: 100,
            max_pages: 5_000,
            max_page_bytes: 2 * 1024 * 1024,
        }
    }
}

/// Nesting of the page tree an import may create; deeper folders are attached at this depth.
pub const MAX_TREE_DEPTH: usize = 12;

/// Why a source cannot be imported; the message names what was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConvertError(pub String);

impl ConvertError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ConvertError(message.into())
    }
}

/// What a converter produced.
#[derive(Clone, Debug, Default)]
pub struct Bundle {
    /// Root pages, in order.
    pub pages: Vec<SourcePage>,
    /// Images and attachments the source carried, by key.
    pub assets: Vec<Asset>,
    /// Absolute URLs of images the pages show that the source did not carry (web pages):
    /// the caller may download them and add them as assets under the same key.
    pub remote_images: Vec<String>,
    /// Reusable contents the pages include (`.gitbook/includes/` of a Git Sync tree).
    pub includes: Vec<SourceInclude>,
}

/// A reusable content of the source: pages name it by its key in `{% include %}`.
#[derive(Clone, Debug, Default)]
pub struct SourceInclude {
    /// The source file's key (see [`archive_key`]).
    pub key: String,
    /// Title.
    pub title: String,
    /// Body in the markdown dialect, links as written in the source.
    pub body: String,
}

/// A page of the source.
#[derive(Clone, Debug, Default)]
pub struct SourcePage {
    /// The source document's key (see [`archive_key`]); links in the body resolve against
    /// it, and links to it resolve to this page. Empty for groups made for folders.
    pub key: String,
    /// Title.
    pub title: String,
    /// What the slug is derived from (a file name); the title when empty.
    pub slug_hint: String,
    /// Short description.
    pub description: Option<String>,
    /// Body in the markdown dialect, links as written in the source; `None` for a group.
    pub body: Option<String>,
    /// Child pages, in order.
    pub children: Vec<SourcePage>,
    /// Where a link page points (an absolute URL); the page is a link when given.
    pub link: Option<String>,
}

/// An image or attachment of the source.
#[derive(Clone, Debug)]
pub struct Asset {
    /// Key (see [`archive_key`]).
    pub key: String,
    /// File name.
    pub name: String,
    /// Bytes: an archive's assets stay compressed until read.
    pub content: archive::Content,
}

/// The base of archive keys.
pub const ARCHIVE_BASE: &str = "http://archive.invalid/";

/// The key of an archive entry at `path` (slash-separated, relative to the archive's root).
pub fn archive_key(path: &str) -> String {
    let base = Url::parse(ARCHIVE_BASE).expect("a valid base");
    let escaped: String = path
        .split('/')
        .map(|seg| {
            seg.chars()
                .map(|c| match c {
                    '%' => "%25".to_string(),
                    '?' => "%3F".to_string(),
                    '#' => "%23".to_string(),
                    c => c.to_string(),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/");
    match base.join(&escaped) {
        Ok(u) => u.to_string(),
        Err(_) => format!("{ARCHIVE_BASE}{escaped}"),
    }
}

/// Splits page markdown (frontmatter, leading `# Title`) into a page of the bundle.
pub fn markdown_page(key: String, slug_hint: &str, fallback_title: &str, md: &str) -> SourcePage {
    // Malformed frontmatter is kept as text: an import takes documents as they are.
    let (title, description, body) = match split_page_markdown(md) {
        Ok(src) => (
            src.frontmatter.title.or(src.heading),
            src.frontmatter.description,
            src.body,
        ),
        Err(_) => (None, None, md.to_string()),
    };
    SourcePage {
        key,
        title: title
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| fallback_title.to_string()),
        slug_hint: slug_hint.to_string(),
        description: description.filter(|d| !d.is_empty()),
        body: Some(body),
        children: Vec::new(),
        link: None,
    }
}

/// A title made from a file name: extension dropped, `-` and `_` read as spaces.
pub fn title_from_name(name: &str) -> String {
    let stem = name.rsplit('/').next().unwrap_or(name);
    let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
    let t = stem.replace(['-', '_'], " ").trim().to_string();
    if t.is_empty() {
        "Untitled".to_string()
    } else {
        t
    }
}

/// Image destinations of a markdown body, made absolute against `key` (http(s) only).
pub fn markdown_images(key: &str, md: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag};
    let Ok(base) = Url::parse(key) else {
        return Vec::new();
    };
    Parser::new_ext(md, pulldown_cmark::Options::empty())
        .filter_map(|e| match e {
            Event::Start(Tag::Image { dest_url, .. }) => base.join(&dest_url).ok(),
            _ => None,
        })
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(|u| u.to_string())
        .collect()
}

/// Ids an assembly keeps: what a source that was written from a revision already names.
#[derive(Clone, Debug, Default)]
pub struct Keep {
    /// Page ids by source key ([`archive_key`] of the file's path).
    pub pages: HashMap<String, String>,
    /// File ids by index in the bundle's assets.
    pub files: HashMap<usize, String>,
    /// Reusable content ids by source key, for `{% include %}` paths.
    pub includes: HashMap<String, String>,
}

/// Pages and files of an assembled import.
#[derive(Clone, Debug, Default)]
pub struct Assembled {
    /// Root pages with ids, slugs and resolved bodies.
    pub pages: Vec<Page>,
    /// The assets some page refers to, with the file id given to each, in bundle order.
    pub files: Vec<(usize, String)>,
    /// Pages created.
    pub page_count: usize,
    /// The source key of each page that has one, by page id.
    pub keys: HashMap<String, String>,
    /// The bundle's includes, with ids and resolved bodies.
    pub reusable_contents: Vec<ReusableContent>,
}

/// Gives the bundle's pages and assets ids (from `new_id`) and resolves the links of every
/// body; root slugs avoid `taken`. Only assets some page refers to become files. Groups
/// stay groups only at the root of the space (`under_page` false); elsewhere a folder
/// becomes an empty page holding its children.
pub fn assemble(
    bundle: &Bundle,
    taken: &[&str],
    under_page: bool,
    limits: &Limits,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Assembled, ConvertError> {
    assemble_keeping(bundle, taken, under_page, limits, &Keep::default(), new_id)
}

/// [`assemble`], giving the pages, files and includes that `keep` names their ids there
/// instead of new ones. A source page named twice (a summary listing one file twice) is
/// refused: it would be two pages with one id.
pub fn assemble_keeping(
    bundle: &Bundle,
    taken: &[&str],
    under_page: bool,
    limits: &Limits,
    keep: &Keep,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Assembled, ConvertError> {
    // Ids first, so that a link to a page later in the tree resolves.
    let mut ids: Vec<String> = Vec::new();
    let mut keys: HashMap<String, String> = HashMap::new();
    let mut page_keys: HashMap<String, String> = HashMap::new();
    let mut count = 0usize;
    let mut stack: Vec<&SourcePage> = bundle.pages.iter().rev().collect();
    while let Some(p) = stack.pop() {
        count += 1;
        if count > limits.max_pages {
            return Err(ConvertError::new(format!(
                "the source holds more than {} pages",
                limits.max_pages
            )));
        }
        let key = (!p.key.is_empty()).then(|| norm_key(&p.key));
        let id = match key.as_ref().and_then(|k| keep.pages.get(k)) {
            Some(kept) => kept.clone(),
            None => new_id(),
        };
        if let Some(key) = key {
            if !keep.pages.is_empty() && page_keys.contains_key(&key) {
                return Err(ConvertError::new(format!(
                    "`{}` is listed twice",
                    key.strip_prefix(ARCHIVE_BASE).unwrap_or(&key)
                )));
            }
            page_keys.entry(key.clone()).or_insert_with(|| id.clone());
            keys.insert(id.clone(), key);
        }
        ids.push(id);
        stack.extend(p.children.iter().rev());
    }
    let mut asset_keys: HashMap<String, usize> = HashMap::new();
    for (i, a) in bundle.assets.iter().enumerate() {
        asset_keys.entry(norm_key(&a.key)).or_insert(i);
    }
    let files: Vec<String> = (0..bundle.assets.len())
        .map(|i| keep.files.get(&i).cloned().unwrap_or_else(&mut *new_id))
        .collect();
    let used = std::cell::RefCell::new(HashSet::new());
    // Includes next: pages name them by key, and they may name pages and files themselves.
    if bundle.includes.len() > limits.max_pages {
        return Err(ConvertError::new(format!(
            "the source holds more than {} reusable contents",
            limits.max_pages
        )));
    }
    let mut includes = keep.includes.clone();
    let include_ids: Vec<String> = bundle
        .includes
        .iter()
        .map(|inc| {
            includes
                .entry(norm_key(&inc.key))
                .or_insert_with(&mut *new_id)
                .clone()
        })
        .collect();
    let mut reusable_contents = Vec::with_capacity(bundle.includes.len());
    for (inc, id) in bundle.includes.iter().zip(include_ids) {
        if inc.body.len() > limits.max_page_bytes {
            return Err(ConvertError::new(format!(
                "reusable content `{}` is larger than {} bytes",
                inc.title, limits.max_page_bytes
            )));
        }
        let resolver = Resolver {
            base: Url::parse(&inc.key).ok(),
            pages: &page_keys,
            assets: &asset_keys,
            files: &files,
            includes: &includes,
            used: &used,
        };
        let markdown = try_normalize_markdown_with(&inc.body, &resolver)
            .map_err(|e| ConvertError::new(format!("reusable content `{}`: {e}", inc.title)))?;
        reusable_contents.push(ReusableContent {
            id,
            title: inc.title.chars().take(100).collect(),
            markdown,
        });
    }
    let mut next = ids.into_iter();
    let mut build =
        |p: &SourcePage, taken: &mut Vec<String>, nested: bool| -> Result<Page, ConvertError> {
            let id = next.next().expect("one id per page");
            let base = slugify(if p.slug_hint.is_empty() {
                &p.title
            } else {
                &p.slug_hint
            });
            let slug = if p.link.is_some() {
                // Link pages have no path.
                String::new()
            } else {
                let slug = unique_slug(&base, taken.iter().map(String::as_str));
                taken.push(slug.clone());
                slug
            };
            let title: String = p.title.chars().take(100).collect();
            let kind = match &p.body {
                // A link to a file of the tree (a page listed again) points at that page.
                Some(_) | None if p.link.as_deref().is_some_and(|l| !l.contains("://")) => {
                    let link = p.link.clone().unwrap_or_default();
                    let resolver = Resolver {
                        base: Url::parse(&archive_key("SUMMARY.md")).ok(),
                        pages: &page_keys,
                        assets: &asset_keys,
                        files: &files,
                        includes: &includes,
                        used: &used,
                    };
                    let target = match resolver.resolve(&link) {
                        Some(LinkTarget::Ref(r)) => r,
                        _ => ContentRef::Url { url: link },
                    };
                    PageKind::Link(crate::model::LinkPage { target })
                }
                _ if p.link.is_some() => PageKind::Link(crate::model::LinkPage {
                    target: ContentRef::Url {
                        url: p.link.clone().unwrap_or_default(),
                    },
                }),
                None if !nested => PageKind::Group,
                None => PageKind::Document(DocumentPage::default().into()),
                Some(body) => {
                    if body.len() > limits.max_page_bytes {
                        return Err(ConvertError::new(format!(
                            "page `{}` is larger than {} bytes",
                            p.title, limits.max_page_bytes
                        )));
                    }
                    let resolver = Resolver {
                        base: Url::parse(&p.key).ok(),
                        pages: &page_keys,
                        assets: &asset_keys,
                        files: &files,
                        includes: &includes,
                        used: &used,
                    };
                    let markdown = try_normalize_markdown_with(body, &resolver)
                        .map_err(|e| ConvertError::new(format!("page `{}`: {e}", p.title)))?;
                    PageKind::Document(
                        DocumentPage {
                            markdown,
                            ..DocumentPage::default()
                        }
                        .into(),
                    )
                }
            };
            Ok(Page {
                id,
                title: if title.trim().is_empty() {
                    "Untitled".into()
                } else {
                    title
                },
                slug,
                emoji: None,
                icon: None,
                description: p.description.clone(),
                hidden: false,
                no_index: false,
                no_robots_index: false,
                condition: None,
                tags: Vec::new(),
                primary_tag: None,
                kind,
                pages: Vec::new(),
            })
        };
    // Depth-first without recursion: each frame is a source list, the pages built from it
    // and the slugs its level has taken.
    struct Frame<'a> {
        source: &'a [SourcePage],
        at: usize,
        built: Vec<Page>,
        taken: Vec<String>,
    }
    let mut frames = vec![Frame {
        source: &bundle.pages,
        at: 0,
        built: Vec::new(),
        taken: taken.iter().map(|s| s.to_string()).collect(),
    }];
    loop {
        let nested = under_page || frames.len() > 1;
        let top = frames.last_mut().expect("a frame");
        if top.at < top.source.len() {
            let sp = &top.source[top.at];
            top.at += 1;
            let page = build(sp, &mut top.taken, nested)?;
            top.built.push(page);
            if !sp.children.is_empty() {
                frames.push(Frame {
                    source: &sp.children,
                    at: 0,
                    built: Vec::new(),
                    taken: Vec::new(),
                });
            }
            continue;
        }
        let done = frames.pop().expect("a frame");
        match frames.last_mut() {
            Some(parent) => {
                parent
                    .built
                    .last_mut()
                    .expect("the parent page was built")
                    .pages = done.built;
            }
            None => {
                let mut used: Vec<usize> = used.into_inner().into_iter().collect();
                used.sort_unstable();
                return Ok(Assembled {
                    pages: done.built,
                    files: used.into_iter().map(|i| (i, files[i].clone())).collect(),
                    page_count: count,
                    keys,
                    reusable_contents,
                });
            }
        }
    }
}

/// A key in the form lookups use: no fragment, percent-escapes decoded.
pub(crate) fn norm_key(key: &str) -> String {
    let no_fragment = key.split('#').next().unwrap_or(key);
    percent_decode(no_fragment.trim_end_matches('/'))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Resolves a body's destinations against the bundle.
struct Resolver<'a> {
    base: Option<Url>,
    pages: &'a HashMap<String, String>,
    assets: &'a HashMap<String, usize>,
    files: &'a [String],
    includes: &'a HashMap<String, String>,
    used: &'a std::cell::RefCell<HashSet<usize>>,
}

impl LinkResolver for Resolver<'_> {
    fn include(&self, path: &str) -> Option<String> {
        let joined = self.base.as_ref()?.join(path.trim()).ok()?;
        self.includes.get(&norm_key(joined.as_str())).cloned()
    }

    fn resolve(&self, href: &str) -> Option<LinkTarget> {
        let href = href.trim();
        if href.is_empty() || href.starts_with('#') {
            return None;
        }
        let base = self.base.as_ref()?;
        let joined = base.join(href).ok()?;
        if joined.scheme() != base.scheme() || joined.host_str() != base.host_str() {
            return None;
        }
        let anchor = joined
            .fragment()
            .filter(|f| !f.is_empty())
            .map(str::to_string);
        let mut plain = joined.clone();
        plain.set_fragment(None);
        let key = norm_key(plain.as_str());
        let without_query = key.split('?').next().unwrap_or(&key).to_string();
        for candidate in [
            key.clone(),
            without_query.clone(),
            format!("{without_query}.md"),
            format!("{without_query}/README.md"),
            format!("{without_query}/readme.md"),
            format!("{without_query}/index.md"),
            format!("{without_query}.html"),
            format!("{without_query}/index.html"),
        ] {
            if let Some(page) = self.pages.get(&candidate) {
                return Some(LinkTarget::Ref(match anchor {
                    Some(anchor) => ContentRef::Anchor {
                        anchor,
                        page: Some(page.clone()),
                        space: None,
                    },
                    None => ContentRef::Page {
                        page: page.clone(),
                        space: None,
                    },
                }));
            }
            if let Some(&i) = self.assets.get(&candidate) {
                self.used.borrow_mut().insert(i);
                return Some(LinkTarget::Ref(ContentRef::File {
                    file: self.files[i].clone(),
                }));
            }
        }
        None
    }
}

/// Escapes text so that the markdown dialect reads it back as the same text.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`'
                | '*'
                | '_'
                | '['
                | ']'
                | '<'
                | '>'
                | '#'
                | '|'
                | '{'
                | '}'
                | '$'
                | '~'
                | '&'
                | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
