//! GitBook-flavoured markdown ⇄ the official JSON document.
//!
//! The dialect is the one GitBook's Git Sync writes: CommonMark with GitHub tables, task
//! lists and strikethrough; Liquid-like container tags (`{% hint %}`, `{% tabs %}`,
//! `{% stepper %}`, `{% columns %}`, `{% updates %}`, `{% if %}`, `{% code %}`,
//! `{% embed %}`, `{% file %}`, `{% include %}`, the OpenAPI tags…); `<details>`
//! expandables; and the HTML GitBook uses where markdown has no syntax (figures, pictures,
//! tables with widths or cards, buttons, mentions, icons, emoji, expressions, marks).
//!
//! Container tags are found by a line scanner (tags start at column 0, outside code); the
//! text between them is parsed with `pulldown-cmark`. Rendering writes the form Git Sync
//! writes, so that a page written by GitBook survives markdown → document → markdown byte
//! for byte. Anything the parser does not understand (an unknown tag, unknown HTML, a tag
//! with unknown attributes) is kept verbatim as *raw* content: a paragraph marked
//! `meta.raw`, written back exactly as it came, never escaped and never dropped.
//!
//! Headings follow Git Sync: the page title is the leading `#` heading (see
//! [`frontmatter`](crate::frontmatter)), so the body's `##`, `###` and `####` are the
//! document's `heading-1`, `heading-2` and `heading-3`.

mod html;
mod inline;
mod parse;
mod render;
mod scan;
mod table;

pub use parse::COLORS as TEXT_COLORS;
pub(crate) use render::plain_text_raw;
pub(crate) use table::{cell_label, sorted_records};

use pulldown_cmark::Options;
use serde_json::{Map, Value};

use crate::document::{Document, Element, Fragment, Node};
use crate::limits::{check_nodes, TooDeep, MAX_DEPTH};
use crate::model::ContentRef;

/// What a link destination should become, as decided by a [`LinkResolver`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkTarget {
    /// A reference (page, anchor, file, URL…).
    Ref(ContentRef),
    /// Nothing: the link is dropped and its text kept as plain text.
    Text,
}

/// Decides what link and image destinations point to while parsing markdown.
pub trait LinkResolver {
    /// The target of `href`, or `None` for the default interpretation ([`default_ref`]).
    fn resolve(&self, href: &str) -> Option<LinkTarget>;

    /// The reusable content an `{% include "path" %}` names, or `None` for the default
    /// ([`default_include`]).
    fn include(&self, _path: &str) -> Option<String> {
        None
    }
}

/// The resolver that leaves every destination to [`default_ref`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultLinks;

impl LinkResolver for DefaultLinks {
    fn resolve(&self, _href: &str) -> Option<LinkTarget> {
        None
    }
}

/// Default meaning of a destination: `/pages/<id>[#anchor]`, `/files/<id>`, `#anchor`, or a URL.
pub fn default_ref(href: &str) -> ContentRef {
    if let Some(rest) = href.strip_prefix("/pages/") {
        let (id, anchor) = match rest.split_once('#') {
            Some((id, a)) => (id, Some(a)),
            None => (rest, None),
        };
        if is_plain_id(id) {
            return match anchor {
                Some(a) if !a.is_empty() => ContentRef::Anchor {
                    anchor: a.into(),
                    page: Some(id.into()),
                    space: None,
                },
                _ => ContentRef::Page {
                    page: id.into(),
                    space: None,
                },
            };
        }
    }
    for (prefix, make) in [
        (
            "/files/",
            (|id: &str| ContentRef::File { file: id.into() }) as fn(&str) -> ContentRef,
        ),
        ("/users/", |id| ContentRef::User { user: id.into() }),
        ("/spaces/", |id| ContentRef::Space { space: id.into() }),
        ("/collections/", |id| ContentRef::Collection {
            collection: id.into(),
        }),
        ("/openapi/", |id| ContentRef::Openapi { spec: id.into() }),
    ] {
        if let Some(id) = href.strip_prefix(prefix) {
            if is_plain_id(id) {
                return make(id);
            }
        }
    }
    if let Some(anchor) = href.strip_prefix('#') {
        if !anchor.is_empty() {
            return ContentRef::Anchor {
                anchor: anchor.into(),
                page: None,
                space: None,
            };
        }
    }
    ContentRef::Url { url: href.into() }
}

/// Default reusable content of `{% include "path" %}`: `/reusable-contents/<id>` names the
/// content `<id>`; any other path (`.gitbook/includes/…`) is kept as the reference itself.
pub fn default_include(path: &str) -> String {
    match path.strip_prefix("/reusable-contents/") {
        Some(id) if is_plain_id(id) => id.to_string(),
        _ => path.to_string(),
    }
}

fn is_plain_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The destination that renders a reference in stored markdown.
pub fn ref_href(r: &ContentRef) -> String {
    match r {
        ContentRef::Url { url } => url.clone(),
        ContentRef::Page { page, .. } => format!("/pages/{page}"),
        ContentRef::Anchor {
            anchor,
            page: Some(page),
            ..
        } => format!("/pages/{page}#{anchor}"),
        ContentRef::Anchor { anchor, .. } => format!("#{anchor}"),
        ContentRef::File { file } => format!("/files/{file}"),
        ContentRef::User { user } => format!("/users/{user}"),
        ContentRef::Collection { collection } => format!("/collections/{collection}"),
        ContentRef::Space { space } => format!("/spaces/{space}"),
        ContentRef::ReusableContent {
            reusable_content, ..
        } => include_path(reusable_content),
        ContentRef::Openapi { spec } => format!("/openapi/{spec}"),
    }
}

/// The path `{% include %}` writes for a reusable content id.
fn include_path(id: &str) -> String {
    if is_plain_id(id) {
        format!("/reusable-contents/{id}")
    } else {
        id.to_string()
    }
}

/// Parses a markdown body (no frontmatter) into a document; markdown nested deeper than
/// [`MAX_DEPTH`] is refused. Use this for content that enters the engine.
pub fn try_markdown_to_document(md: &str) -> Result<Document, TooDeep> {
    try_markdown_to_document_with(md, &DefaultLinks)
}

/// [`try_markdown_to_document`], resolving links with `links`.
pub fn try_markdown_to_document_with(
    md: &str,
    links: &dyn LinkResolver,
) -> Result<Document, TooDeep> {
    parse_document(md, links, false)
}

/// The soft line break of a paragraph (a line end inside it) in a document parsed
/// [keeping lines](try_lines_document_with). GitBook's document has no soft break (it is a
/// space there), but stored pages keep their hand-wrapped lines, so that a page pushed
/// through Git comes back line for line. NUL never reaches a document otherwise: the
/// parser reads it as U+FFFD, as CommonMark does.
const SOFT_BREAK: char = '\0';

/// The document of stored markdown whose paragraphs keep their soft breaks as
/// [`SOFT_BREAK`], for writing it back as markdown ([`document_to_markdown`]) and never to
/// be handed out.
pub(crate) fn try_lines_document_with(
    md: &str,
    links: &dyn LinkResolver,
) -> Result<Document, TooDeep> {
    parse_document(&md.replace(SOFT_BREAK, "\u{FFFD}"), links, true)
}

fn parse_document(
    md: &str,
    links: &dyn LinkResolver,
    keep_lines: bool,
) -> Result<Document, TooDeep> {
    let md = md.replace("\r\n", "\n");
    let nodes = scan::parse_blocks(&md, links, keep_lines)?;
    // The parser's guards bound its recursion; this walk states the exact invariant.
    check_nodes(&nodes)?;
    Ok(Document::new(nodes))
}

/// Parses stored markdown, which is always within [`MAX_DEPTH`]. Should it not be, the text
/// comes back as one raw paragraph instead of failing: reads of stored content never fail.
pub fn markdown_to_document(md: &str) -> Document {
    markdown_to_document_with(md, &DefaultLinks)
}

/// [`markdown_to_document`], resolving links with `links`.
pub fn markdown_to_document_with(md: &str, links: &dyn LinkResolver) -> Document {
    try_markdown_to_document_with(md, links)
        .unwrap_or_else(|_| Document::new(vec![raw_block(md.trim_end_matches('\n'))]))
}

/// Renders a document as markdown (no frontmatter), refusing a document nested deeper than
/// [`MAX_DEPTH`]. Use this for documents that enter the engine.
pub fn try_document_to_markdown(doc: &Document) -> Result<String, TooDeep> {
    doc.check_depth()?;
    Ok(render::render_document(&doc.nodes))
}

/// Renders a document as markdown (no frontmatter). Elements deeper than [`MAX_DEPTH`] are
/// written as their plain text, so that rendering stays bounded.
pub fn document_to_markdown(doc: &Document) -> String {
    if doc.check_depth().is_ok() {
        render::render_document(&doc.nodes)
    } else {
        render::render_document(&clamp_nodes(&doc.nodes, 1))
    }
}

/// The line (1-based) of `markdown` where the top-level block holding the node keyed `key`
/// starts, with keys given as [`Document::assign_keys`] gives them for `seed`: where a
/// comment on that node points in the page's text. `None` when no node has that key, or
/// when the block's place cannot be told.
pub fn node_line(markdown: &str, seed: &str, key: &str) -> Option<usize> {
    // Keeping lines changes no key: a soft break is a character of a leaf either way.
    let mut doc = try_lines_document_with(markdown, &DefaultLinks).ok()?;
    doc.assign_keys(seed);
    let at = doc.nodes.iter().position(|n| holds_key(n, key))?;
    // The blocks from that one on render as the end of the whole text (blocks are apart);
    // lines are counted in the text as given only when it is the dialect's own form.
    let whole = render::render_document(&doc.nodes);
    if whole != markdown {
        return None;
    }
    let rest = render::render_document(&doc.nodes[at..]);
    let before = whole.strip_suffix(rest.as_str())?;
    Some(before.matches('\n').count() + 1)
}

/// Whether `node` or a node or fragment inside it has `key`. Iterative: documents are
/// bounded in depth, but no walk here relies on it.
fn holds_key(node: &Node, key: &str) -> bool {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match n {
            Node::Text(t) => {
                if t.key.as_deref() == Some(key) {
                    return true;
                }
            }
            Node::Block(e) | Node::Inline(e) => {
                if e.key.as_deref() == Some(key) {
                    return true;
                }
                for f in e.fragments.iter().flatten() {
                    if f.key.as_deref() == Some(key) {
                        return true;
                    }
                    stack.extend(f.nodes.iter());
                }
                stack.extend(e.children().iter());
            }
        }
    }
    false
}

/// A copy of `nodes` (at `depth`) where every element that would reach deeper than
/// [`MAX_DEPTH`] is replaced by its plain text. Recursion stops at [`MAX_DEPTH`].
fn clamp_nodes(nodes: &[Node], depth: usize) -> Vec<Node> {
    nodes
        .iter()
        .map(|n| match n {
            Node::Text(_) => n.clone(),
            Node::Block(e) | Node::Inline(e) => {
                let text = || n.plain_text();
                if depth >= MAX_DEPTH {
                    return match n {
                        Node::Block(_) => Node::paragraph(vec![Node::text(&text())]),
                        _ => Node::text(&text()),
                    };
                }
                let mut copy = Element {
                    kind: e.kind.clone(),
                    key: e.key.clone(),
                    data: e.data.clone(),
                    nodes: None,
                    fragments: None,
                    is_void: e.is_void,
                    meta: e.meta.clone(),
                };
                copy.nodes = e.nodes.as_ref().map(|c| clamp_nodes(c, depth + 1));
                copy.fragments = e.fragments.as_ref().map(|fs| {
                    fs.iter()
                        .map(|f| Fragment {
                            key: f.key.clone(),
                            fragment: f.fragment.clone(),
                            kind: f.kind.clone(),
                            nodes: clamp_nodes(&f.nodes, depth + 1),
                        })
                        .collect()
                });
                match n {
                    Node::Block(_) => Node::Block(copy),
                    _ => Node::Inline(copy),
                }
            }
        })
        .collect()
}

/// Puts markdown in canonical form, refusing markdown nested deeper than [`MAX_DEPTH`].
pub fn try_normalize_markdown(md: &str) -> Result<String, TooDeep> {
    try_normalize_markdown_with(md, &DefaultLinks)
}

/// [`try_normalize_markdown`], resolving links with `links`.
/// Paragraphs keep their lines (hand-wrapped text stays wrapped).
pub fn try_normalize_markdown_with(md: &str, links: &dyn LinkResolver) -> Result<String, TooDeep> {
    Ok(render::render_document(
        &try_lines_document_with(md, links)?.nodes,
    ))
}

/// Puts stored markdown in canonical form: `document_to_markdown(markdown_to_document(md))`,
/// except that paragraphs keep their lines (hand-wrapped text stays wrapped).
pub fn normalize_markdown(md: &str) -> String {
    normalize_markdown_with(md, &DefaultLinks)
}

/// [`normalize_markdown`], resolving links with `links`.
pub fn normalize_markdown_with(md: &str, links: &dyn LinkResolver) -> String {
    let doc = try_lines_document_with(md, links)
        .unwrap_or_else(|_| Document::new(vec![raw_block(md.trim_end_matches('\n'))]));
    document_to_markdown(&doc)
}

// ---------------------------------------------------------------------------------------
// Shared by the parser and the renderer.

/// Options of `pulldown-cmark`: GitHub's extensions, footnotes (GitBook's annotations) and
/// `{#id}` heading anchors (an older form Quire wrote). Math is not one of them: GitBook's
/// `$$…$$` is read from the source (a single `$` is text).
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_FOOTNOTES
}

/// The `pulldown-cmark` options of the dialect, for readers of raw content.
pub(crate) fn cmark_options() -> Options {
    options()
}

/// A paragraph holding `text` verbatim: content the parser does not understand, written
/// back exactly as it came.
pub(crate) fn raw_block(text: &str) -> Node {
    let mut el = Element::with_nodes("paragraph", Map::new(), vec![Node::text(text)]);
    let mut meta = Map::new();
    meta.insert("raw".into(), Value::Bool(true));
    el.meta = Some(meta);
    Node::Block(el)
}

/// The verbatim text of a raw paragraph.
pub(crate) fn raw_text(e: &Element) -> Option<String> {
    let raw = e
        .meta
        .as_ref()
        .and_then(|m| m.get("raw"))
        .and_then(Value::as_bool)
        == Some(true);
    (raw && e.kind == "paragraph").then(|| {
        let mut out = String::new();
        for n in e.children() {
            if let Node::Text(t) = n {
                for l in &t.leaves {
                    out.push_str(&l.text);
                }
            }
        }
        out
    })
}

/// A `{% name rest %}` line at column 0: the name and the rest, trimmed.
pub(crate) fn split_tag(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_end();
    let inner = line.strip_prefix("{%")?.strip_suffix("%}")?.trim();
    let name_end = inner.find(char::is_whitespace).unwrap_or(inner.len());
    let name = &inner[..name_end];
    if name.is_empty() {
        return None;
    }
    Some((name, inner[name_end..].trim()))
}

/// `key="value"` pairs of a tag; values may escape `"` and `\` with a backslash. `None`
/// when the text is not a clean list of such pairs.
fn parse_attrs(s: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i >= chars.len() {
            return Some(out);
        }
        let start = i;
        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '-' || chars[i] == '_')
        {
            i += 1;
        }
        let key: String = chars[start..i].iter().collect();
        if key.is_empty() || chars.get(i) != Some(&'=') || chars.get(i + 1) != Some(&'"') {
            return None;
        }
        i += 2;
        let mut value = String::new();
        loop {
            match chars.get(i) {
                None => return None,
                Some('"') => break,
                Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\')) => {
                    value.push(chars[i + 1]);
                    i += 2;
                }
                Some(c) => {
                    value.push(*c);
                    i += 1;
                }
            }
        }
        i += 1;
        if out.iter().any(|(k, _)| *k == key) {
            return None;
        }
        out.push((key, value));
    }
}

/// Quotes a tag attribute value.
fn quote_attr(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        // Tags are single lines.
        out.push(if c == '\n' { ' ' } else { c });
    }
    out.push('"');
    out
}

/// A JSON object from pairs.
fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(k.into(), v);
    }
    m
}

/// A reference as JSON.
fn ref_json(r: &ContentRef) -> Value {
    serde_json::to_value(r).expect("refs serialise")
}

/// The reference in `data[key]`.
fn data_ref(e: &Element, key: &str) -> Option<ContentRef> {
    serde_json::from_value(e.data.get(key)?.clone()).ok()
}

/// The label GitBook writes for a link to a path (content references, mentions): its last
/// segment, `.` for the current folder.
fn path_label(href: &str) -> String {
    let trimmed = href.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or("");
    if last.is_empty() || last == "." {
        ".".to_string()
    } else {
        last.to_string()
    }
}

/// A mention of `r`, written `label` at `href`. Git Sync writes the label it derives from
/// the destination ([`path_label`]), or for a page it cannot link by path (another
/// space's, by its URL) that page's title: such a label is kept in the mention's `meta`
/// (the document's mention has no label), so that it is written back as it came and shown
/// when the title cannot be resolved.
fn mention(r: ContentRef, label: &str, href: &str) -> Element {
    let mut el = Element::void("mention", obj([("ref", ref_json(&r))]));
    if label != path_label(href) {
        el.meta = Some(obj([("label", Value::String(label.to_string()))]));
    }
    el
}

/// The label a mention was written with, when it is not the one its destination gives.
pub(crate) fn mention_label(e: &Element) -> Option<&str> {
    e.meta.as_ref()?.get("label")?.as_str()
}

/// A fragment named `name` holding `nodes`.
fn fragment(name: &str, nodes: Vec<Node>) -> Fragment {
    Fragment {
        key: None,
        fragment: Some(name.into()),
        kind: Some(name.into()),
        nodes,
    }
}

/// Order keys of table records that sort as strings.
fn order_index(i: usize) -> String {
    format!("a{i:06}")
}

#[cfg(test)]
mod tests;
