//! The book: pages of a revision turned into plain data (runs of text, code, tables,
//! images…) for the layout to place.
//!
//! Every string from a page is placed as text, never interpreted. Links are kept only for
//! `http`, `https` and `mailto` URLs and for pages inside the book.

use std::collections::HashMap;

use quire_content::document::{Element, Node};
use quire_content::model::{ContentRef, PageKind, Revision};
use serde_json::Value;

/// Deepest nesting of blocks kept as structure; deeper blocks become plain paragraphs.
const MAX_NEST: usize = 8;
/// Longest code block kept whole (bytes); longer ones are cut with a note.
const MAX_CODE: usize = 64 * 1024;
/// Most columns a table keeps.
const MAX_COLUMNS: usize = 24;
/// Most bytes of a heading's text; the rest is cut with an ellipsis (headings also fill
/// the table of contents and the PDF's bookmarks).
const HEADING_BYTES: usize = 1024;

/// What to put in a book.
#[derive(Clone, Debug)]
pub struct Selection<'a> {
    /// The book's title (the space's).
    pub title: &'a str,
    /// A second line on the title page (a change request's subject…).
    pub subtitle: Option<&'a str>,
    /// A small line at the foot of the title page.
    pub footer: Option<&'a str>,
    /// This page (with its children unless `only`); the whole revision when `None`.
    pub page: Option<&'a str>,
    /// Only the page itself, not its children.
    pub only: bool,
    /// Most pages taken; later pages are left out and counted in [`Book::omitted`].
    pub max_pages: usize,
    /// Most blocks (see [`Book::blocks`]); the pages are no longer read once past it, and
    /// the book says it is too large (see [`Book::max_blocks`]).
    pub max_blocks: usize,
}

/// A book to typeset.
#[derive(Clone, Debug)]
pub struct Book {
    /// Title on the title page and in the PDF's metadata.
    pub title: String,
    /// Second line of the title page.
    pub subtitle: Option<String>,
    /// Foot of the title page.
    pub footer: Option<String>,
    /// Whether a table of contents follows the title page.
    pub toc: bool,
    /// The pages, in navigation order.
    pub pages: Vec<Chapter>,
    /// Pages left out by the page cap.
    pub omitted: usize,
    /// Images the book shows: key → file id of the revision.
    pub images: Vec<(String, String)>,
    /// Its size as the layout's memory sees it: a block for each paragraph, heading,
    /// list item, table cell, code line, image… and one more for each [`TEXT_PER_BLOCK`]
    /// bytes of text. Laying out took 2 to 6 KiB a block when measured (BENCHMARKS.md,
    /// "Hostile inputs").
    pub blocks: usize,
    /// The [`Selection::max_blocks`] it was built with: past it, the pages were not all
    /// read, and the book is not laid out.
    pub max_blocks: usize,
}

/// Bytes of text that weigh as much as one block in [`Book::blocks`].
pub const TEXT_PER_BLOCK: usize = 32;

/// One page of the space.
#[derive(Clone, Debug)]
pub struct Chapter {
    /// Label of its heading (internal links point to it).
    pub label: String,
    /// Page title.
    pub title: String,
    /// Depth in the page tree (0 at the root).
    pub depth: usize,
    /// Page description.
    pub description: Option<String>,
    /// Its blocks.
    pub blocks: Vec<Block>,
}

/// A block of a page.
#[derive(Clone, Debug)]
pub enum Block {
    /// A heading (level 1–3 within the page).
    H {
        /// Level within the page.
        level: u8,
        /// Text.
        runs: Vec<Run>,
    },
    /// A paragraph.
    P {
        /// Text.
        runs: Vec<Run>,
    },
    /// A code block.
    Code {
        /// Language, when a plain token.
        lang: Option<String>,
        /// The code.
        text: String,
    },
    /// A list.
    List {
        /// Numbered.
        ordered: bool,
        /// First number.
        start: Option<u64>,
        /// Items.
        items: Vec<Item>,
    },
    /// A quotation.
    Quote {
        /// Its blocks.
        blocks: Vec<Block>,
    },
    /// A hint (info, success, warning, danger).
    Hint {
        /// Style.
        style: String,
        /// Its blocks.
        blocks: Vec<Block>,
    },
    /// A table.
    Table {
        /// Number of columns.
        cols: usize,
        /// Header cells (may be empty).
        header: Vec<Vec<Run>>,
        /// Body rows, each of `cols` cells.
        rows: Vec<Vec<Vec<Run>>>,
    },
    /// An image.
    Img {
        /// Key of its bytes among the template's images.
        key: String,
        /// Alternative text (shown when the image cannot be).
        alt: String,
        /// Caption.
        caption: Vec<Run>,
    },
    /// A rule.
    Hr,
    /// Mathematics, shown as its source.
    Math {
        /// TeX source.
        text: String,
    },
    /// Blocks shown one after the other (tabs, steps, columns, expandables…).
    Group {
        /// Its blocks.
        blocks: Vec<Block>,
    },
}

/// A list item.
#[derive(Clone, Debug)]
pub struct Item {
    /// Task state, for task lists.
    pub checked: Option<bool>,
    /// Its blocks.
    pub blocks: Vec<Block>,
}

/// A run of text with its marks.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// The text.
    pub t: String,
    /// Bold.
    pub b: bool,
    /// Italic.
    pub i: bool,
    /// Code.
    pub c: bool,
    /// Struck through.
    pub s: bool,
    /// External link (http, https, mailto only).
    pub href: Option<String>,
    /// Internal link: the label of a page of the book.
    pub to: Option<String>,
}

#[derive(Clone, Copy, Default)]
struct Marks {
    b: bool,
    i: bool,
    c: bool,
    s: bool,
}

/// Builds the book of a revision.
pub fn build(rev: &Revision, sel: &Selection<'_>) -> Book {
    let flat = rev.flatten();
    let subtree = match sel.page {
        Some(id) if !sel.only => rev.subtree_ids(id),
        Some(id) => std::iter::once(id.to_string()).collect(),
        None => Default::default(),
    };
    let chosen: Vec<_> = flat
        .iter()
        .filter(|f| sel.page.is_none() || subtree.contains(&f.page.id))
        .filter(|f| !matches!(f.page.kind, PageKind::Link(_)))
        .collect();
    let omitted = chosen.len().saturating_sub(sel.max_pages);
    let chosen = &chosen[..chosen.len().min(sel.max_pages)];
    let labels: HashMap<&str, String> = chosen
        .iter()
        .enumerate()
        .map(|(i, f)| (f.page.id.as_str(), format!("quire-page-{i}")))
        .collect();
    let min_depth = chosen.iter().map(|f| f.depth).min().unwrap_or(0);
    let mut b = Builder {
        rev,
        labels: &labels,
        images: Vec::new(),
        image_keys: HashMap::new(),
    };
    let mut pages = Vec::new();
    let mut weight = 0;
    for f in chosen {
        let blocks = match &f.page.kind {
            PageKind::Document(doc) => {
                let d = quire_content::markdown_to_document(&doc.markdown);
                b.blocks(&d.nodes, 0)
            }
            _ => Vec::new(),
        };
        let chapter = Chapter {
            label: labels[f.page.id.as_str()].clone(),
            title: f.page.title.clone(),
            depth: f.depth - min_depth,
            description: f.page.description.clone().filter(|d| !d.is_empty()),
            blocks,
        };
        weight += chapter.weight();
        pages.push(chapter);
        // Past the cap the book will not be typeset: the later pages need not be read.
        if weight > sel.max_blocks {
            break;
        }
    }
    Book {
        title: sel.title.to_string(),
        subtitle: sel.subtitle.map(str::to_string),
        footer: sel.footer.map(str::to_string),
        toc: pages.len() > 1,
        pages,
        omitted,
        images: b.images,
        blocks: weight,
        max_blocks: sel.max_blocks,
    }
}

impl Chapter {
    /// Its weight in blocks (see [`Book::blocks`]): its heading and its blocks.
    fn weight(&self) -> usize {
        let text = self.title.len() + self.description.as_ref().map_or(0, String::len);
        1 + text / TEXT_PER_BLOCK + self.blocks.iter().map(Block::weight).sum::<usize>()
    }
}

impl Block {
    /// Its weight in blocks (see [`Book::blocks`]); nesting is bounded by [`MAX_NEST`].
    fn weight(&self) -> usize {
        let runs = |runs: &[Run]| runs.iter().map(|r| r.t.len()).sum::<usize>() / TEXT_PER_BLOCK;
        let all = |blocks: &[Block]| blocks.iter().map(Block::weight).sum::<usize>();
        match self {
            Block::H { runs: r, .. } | Block::P { runs: r } => 1 + runs(r),
            Block::Code { text, .. } | Block::Math { text } => {
                1 + text.lines().count() + text.len() / TEXT_PER_BLOCK
            }
            Block::List { items, .. } => {
                1 + items.iter().map(|i| 1 + all(&i.blocks)).sum::<usize>()
            }
            Block::Quote { blocks } | Block::Hint { blocks, .. } | Block::Group { blocks } => {
                1 + all(blocks)
            }
            Block::Table { header, rows, .. } => {
                1 + std::iter::once(header)
                    .chain(rows)
                    .flatten()
                    .map(|cell| 1 + runs(cell))
                    .sum::<usize>()
            }
            Block::Img { caption, .. } => 1 + runs(caption),
            Block::Hr => 1,
        }
    }
}

/// The runs with at most `max` bytes of text, an ellipsis after a cut.
fn cut_runs(runs: Vec<Run>, max: usize) -> Vec<Run> {
    let mut left = max;
    let mut out = Vec::new();
    for mut run in runs {
        if run.t.len() <= left {
            left -= run.t.len();
            out.push(run);
            continue;
        }
        let mut end = left;
        while !run.t.is_char_boundary(end) {
            end -= 1;
        }
        run.t.truncate(end);
        run.t.push('…');
        out.push(run);
        break;
    }
    out
}

struct Builder<'a> {
    rev: &'a Revision,
    labels: &'a HashMap<&'a str, String>,
    images: Vec<(String, String)>,
    image_keys: HashMap<String, String>,
}

impl Builder<'_> {
    fn blocks(&mut self, nodes: &[Node], nest: usize) -> Vec<Block> {
        let mut out = Vec::new();
        for n in nodes {
            self.block(n, nest, &mut out);
        }
        out
    }

    fn block(&mut self, node: &Node, nest: usize, out: &mut Vec<Block>) {
        let Some(e) = node.element() else {
            let runs = self.runs(std::slice::from_ref(node));
            if !runs.is_empty() {
                out.push(Block::P { runs });
            }
            return;
        };
        if nest >= MAX_NEST {
            let t = node.plain_text();
            if !t.is_empty() {
                out.push(Block::P {
                    runs: vec![Run {
                        t,
                        ..Run::default()
                    }],
                });
            }
            return;
        }
        let kind = e.kind.as_str();
        match kind {
            "paragraph" => out.push(Block::P {
                runs: self.runs(e.children()),
            }),
            // Headings also fill the bookmarks: a long one is cut.
            k if k.starts_with("heading-") => out.push(Block::H {
                level: k[8..].parse::<u8>().unwrap_or(1).clamp(1, 3),
                runs: cut_runs(self.runs(e.children()), HEADING_BYTES),
            }),
            "list-unordered" | "list-ordered" | "list-tasks" => {
                let items = e
                    .children()
                    .iter()
                    .map(|item| {
                        let checked = (kind == "list-tasks").then(|| {
                            item.element()
                                .and_then(|i| i.data.get("checked"))
                                .and_then(Value::as_bool)
                                .unwrap_or(false)
                        });
                        let blocks = match item.element() {
                            Some(i) if i.kind == "list-item" => self.blocks(i.children(), nest + 1),
                            _ => self.blocks(std::slice::from_ref(item), nest + 1),
                        };
                        Item { checked, blocks }
                    })
                    .collect();
                out.push(Block::List {
                    ordered: kind == "list-ordered",
                    start: e.data.get("start").and_then(Value::as_u64),
                    items,
                });
            }
            "blockquote" => out.push(Block::Quote {
                blocks: self.blocks(e.children(), nest + 1),
            }),
            "code" => {
                let mut text = e
                    .children()
                    .iter()
                    .map(Node::plain_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                if text.len() > MAX_CODE {
                    let mut end = MAX_CODE;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.truncate(end);
                    text.push_str("\n… (cut)");
                }
                let lang = e
                    .data_str("syntax")
                    .filter(|s| plain_token(s))
                    .map(str::to_string);
                out.push(Block::Code { lang, text });
            }
            "hint" => out.push(Block::Hint {
                style: match e.data_str("style") {
                    Some(s @ ("success" | "warning" | "danger")) => s.to_string(),
                    _ => "info".to_string(),
                },
                blocks: self.blocks(e.children(), nest + 1),
            }),
            "divider" => out.push(Block::Hr),
            "math" => out.push(Block::Math {
                text: e.data_str("formula").unwrap_or_default().to_string(),
            }),
            "table" => self.table(e, out),
            "images" => {
                for n in e.children() {
                    self.block(n, nest + 1, out);
                }
            }
            "image" | "drawing" => {
                let caption: Vec<Run> = e
                    .fragment("caption")
                    .map(|f| {
                        f.nodes
                            .iter()
                            .flat_map(|n| match n.element() {
                                Some(p) if p.kind == "paragraph" => self.runs(p.children()),
                                _ => self.runs(std::slice::from_ref(n)),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                // Markdown images keep their text as the caption; the alt text, when set,
                // else the caption, else a word, stands in for an image that is missing.
                let alt = match e.data_str("alt").map(str::trim) {
                    Some(a) if !a.is_empty() => a.to_string(),
                    _ => {
                        let text: String = caption.iter().map(|r| r.t.as_str()).collect();
                        if text.trim().is_empty() {
                            "image".to_string()
                        } else {
                            text.trim().to_string()
                        }
                    }
                };
                match self.image_key(e) {
                    Some(key) => out.push(Block::Img { key, alt, caption }),
                    None => out.push(Block::P {
                        runs: vec![Run {
                            t: format!("[{alt}]"),
                            i: true,
                            ..Run::default()
                        }],
                    }),
                }
            }
            "expandable" => {
                let mut blocks = Vec::new();
                if let Some(t) = e.fragment("title") {
                    let runs: Vec<Run> = t
                        .nodes
                        .iter()
                        .flat_map(|n| match n.element() {
                            Some(p) if p.kind == "paragraph" => self.runs(p.children()),
                            _ => self.runs(std::slice::from_ref(n)),
                        })
                        .map(|mut r| {
                            r.b = true;
                            r
                        })
                        .collect();
                    blocks.push(Block::P { runs });
                }
                if let Some(body) = e.fragment("body") {
                    blocks.extend(self.blocks(&body.nodes, nest + 1));
                }
                out.push(Block::Group { blocks });
            }
            // Adaptive content is for the visitors it was written for: not printed.
            "if" => {}
            _ => {
                // Tabs, steppers, columns, updates…: their children (and fragments) in order.
                let mut blocks = self.blocks(e.children(), nest + 1);
                for f in e.fragments.iter().flatten() {
                    blocks.extend(self.blocks(&f.nodes, nest + 1));
                }
                if !blocks.is_empty() {
                    out.push(Block::Group { blocks });
                }
            }
        }
    }

    fn table(&mut self, e: &Element, out: &mut Vec<Block>) {
        // Tables store their columns in `data.definition` and cells in `data.records`; the
        // markdown dialect's tables are `table` elements with `table-row`/`table-cell`
        // children or those records, depending on their origin: both are read.
        let mut rows: Vec<Vec<Vec<Run>>> = Vec::new();
        for row in e.children() {
            let Some(r) = row.element() else { continue };
            let cells: Vec<Vec<Run>> = r
                .children()
                .iter()
                .map(|c| match c.element() {
                    Some(cell) => cell
                        .children()
                        .iter()
                        .flat_map(|n| match n.element() {
                            Some(p) if p.kind == "paragraph" => self.runs(p.children()),
                            _ => self.runs(std::slice::from_ref(n)),
                        })
                        .collect(),
                    None => self.runs(std::slice::from_ref(c)),
                })
                .collect();
            rows.push(cells);
        }
        if rows.is_empty() {
            rows = self.records(e);
        }
        let cols = rows
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .min(MAX_COLUMNS);
        if cols == 0 {
            return;
        }
        for r in &mut rows {
            r.resize_with(cols, Vec::new);
        }
        let header = rows.remove(0);
        out.push(Block::Table { cols, header, rows });
    }

    /// Rows of a table stored as official records: a header of column titles, then cells
    /// by column id, each a fragment named by `data.records[row].values[column]`.
    fn records(&mut self, e: &Element) -> Vec<Vec<Vec<Run>>> {
        let Some(def) = e.data.get("definition").and_then(Value::as_object) else {
            return Vec::new();
        };
        let order: Vec<&str> = e
            .data
            .get("view")
            .and_then(|v| v.get("columns"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_else(|| def.keys().map(String::as_str).collect());
        let header: Vec<Vec<Run>> = order
            .iter()
            .map(|c| {
                let t = def
                    .get(*c)
                    .and_then(|d| d.get("title"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                vec![Run {
                    t: t.to_string(),
                    ..Run::default()
                }]
            })
            .collect();
        let mut rows = vec![header];
        // Cells name their fragments: found by name once, not by a scan of every fragment
        // for every cell (which made a long table's book quadratic in its rows).
        let fragments: HashMap<&str, &quire_content::document::Fragment> = e
            .fragments
            .iter()
            .flatten()
            .filter_map(|f| Some((f.fragment.as_deref()?, f)))
            .collect();
        // Records are ordered by their `orderIndex`, not by their keys.
        let mut records: Vec<(String, &String, &Value)> = e
            .data
            .get("records")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let order = v
                            .get("orderIndex")
                            .map(|o| o.to_string())
                            .unwrap_or_default();
                        (order, k, v)
                    })
                    .collect()
            })
            .unwrap_or_default();
        records.sort_unstable_by(|(oa, ka, _), (ob, kb, _)| oa.cmp(ob).then_with(|| ka.cmp(kb)));
        for (_, _, rec) in records {
            let values = rec.get("values").and_then(Value::as_object);
            let row = order
                .iter()
                .map(|c| {
                    let v = values.and_then(|v| v.get(*c));
                    match v {
                        Some(Value::String(frag)) => match fragments.get(frag.as_str()) {
                            Some(f) => f
                                .nodes
                                .iter()
                                .flat_map(|n| match n.element() {
                                    Some(p) if p.kind == "paragraph" => self.runs(p.children()),
                                    _ => self.runs(std::slice::from_ref(n)),
                                })
                                .collect(),
                            None => vec![Run {
                                t: frag.clone(),
                                ..Run::default()
                            }],
                        },
                        Some(other) if !other.is_null() => vec![Run {
                            t: other.to_string(),
                            ..Run::default()
                        }],
                        _ => Vec::new(),
                    }
                })
                .collect();
            rows.push(row);
        }
        rows
    }

    fn image_key(&mut self, e: &Element) -> Option<String> {
        let r: ContentRef = serde_json::from_value(e.data.get("ref")?.clone()).ok()?;
        let ContentRef::File { file } = r else {
            return None;
        };
        let f = self.rev.file(&file)?;
        if !matches!(
            f.content_type.as_str(),
            "image/png" | "image/jpeg" | "image/gif"
        ) {
            return None;
        }
        let next = self.image_keys.len();
        Some(
            self.image_keys
                .entry(file.clone())
                .or_insert_with(|| {
                    let key = format!("i{next}");
                    self.images.push((key.clone(), file.clone()));
                    key
                })
                .clone(),
        )
    }

    fn runs(&mut self, nodes: &[Node]) -> Vec<Run> {
        let mut out = Vec::new();
        for n in nodes {
            self.inline(n, Marks::default(), None, &mut out, 0);
        }
        out
    }

    fn inline(
        &mut self,
        node: &Node,
        marks: Marks,
        link: Option<&Link>,
        out: &mut Vec<Run>,
        nest: usize,
    ) {
        match node {
            Node::Text(t) => {
                for leaf in &t.leaves {
                    if leaf.text.is_empty() {
                        continue;
                    }
                    let mut m = marks;
                    for mark in &leaf.marks {
                        match mark.kind.as_str() {
                            "bold" => m.b = true,
                            "italic" => m.i = true,
                            "code" | "keyboard" => m.c = true,
                            "strikethrough" => m.s = true,
                            _ => {}
                        }
                    }
                    out.push(Run {
                        t: leaf.text.clone(),
                        b: m.b,
                        i: m.i,
                        c: m.c,
                        s: m.s,
                        href: link.and_then(|l| l.href.clone()),
                        to: link.and_then(|l| l.to.clone()),
                    });
                }
            }
            _ => {
                let Some(e) = node.element() else { return };
                if nest >= MAX_NEST * 4 {
                    out.push(Run {
                        t: node.plain_text(),
                        ..Run::default()
                    });
                    return;
                }
                match e.kind.as_str() {
                    "link" => {
                        let l = self.link(e);
                        for c in e.children() {
                            self.inline(c, marks, Some(&l), out, nest + 1);
                        }
                    }
                    "inline-math" => out.push(Run {
                        t: e.data_str("formula").unwrap_or_default().to_string(),
                        c: true,
                        ..Run::default()
                    }),
                    "emoji" => {
                        if let Some(code) = e.data_str("code") {
                            let t: String = code
                                .split('-')
                                .filter_map(|h| u32::from_str_radix(h, 16).ok())
                                .filter_map(char::from_u32)
                                .collect();
                            out.push(Run {
                                t,
                                ..Run::default()
                            });
                        }
                    }
                    _ => {
                        for c in e.children() {
                            self.inline(c, marks, link, out, nest + 1);
                        }
                    }
                }
            }
        }
    }

    fn link(&self, e: &Element) -> Link {
        let r: Option<ContentRef> = e
            .data
            .get("ref")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        match r {
            Some(ContentRef::Url { url }) if safe_url(&url) => Link {
                href: Some(url),
                to: None,
            },
            Some(ContentRef::Page { page, space: None })
            | Some(ContentRef::Anchor {
                page: Some(page),
                space: None,
                ..
            }) => Link {
                href: None,
                to: self.labels.get(page.as_str()).cloned(),
            },
            _ => Link {
                href: None,
                to: None,
            },
        }
    }
}

struct Link {
    href: Option<String>,
    to: Option<String>,
}

/// URLs a PDF may open: web pages and mail, nothing a viewer might run.
fn safe_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("mailto:"))
        && url.len() <= 2048
        && !url.chars().any(char::is_control)
}

/// A code language that is a plain token (letters, digits, `+#._-`).
fn plain_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '#' | '.' | '_' | '-'))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use quire_content::model::Page;

    /// The book of these pages, titled "T", within `max_blocks`.
    pub(crate) fn book_of(pages: Vec<Page>, max_blocks: usize) -> Book {
        build(
            &Revision {
                pages,
                ..Revision::default()
            },
            &Selection {
                title: "T",
                subtitle: None,
                footer: None,
                page: None,
                only: false,
                max_pages: 100,
                max_blocks,
            },
        )
    }

    fn blocks_of(markdown: &str) -> Book {
        book_of(vec![Page::document("p", "P", "p", markdown)], usize::MAX)
    }

    #[test]
    fn long_headings_are_cut() {
        let words = "word ".repeat(10_000);
        let book = blocks_of(&format!("# {words}\n"));
        match &book.pages[0].blocks[0] {
            Block::H { runs, .. } => {
                let len: usize = runs.iter().map(|r| r.t.len()).sum();
                assert!(len <= HEADING_BYTES + 3, "{len}");
                assert!(runs.last().unwrap().t.ends_with('…'));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_book_past_its_blocks_stops_reading_pages() {
        let pages = (0..10)
            .map(|i| {
                Page::document(
                    &format!("p{i}"),
                    "P",
                    &format!("p{i}"),
                    &"Text.\n\n".repeat(100),
                )
            })
            .collect();
        let book = book_of(pages, 250);
        assert!(book.blocks > 250);
        assert_eq!(book.pages.len(), 3);
    }
}
