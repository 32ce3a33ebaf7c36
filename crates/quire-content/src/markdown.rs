//! GitBook-flavoured markdown ⇄ the official JSON document.
//!
//! The dialect is the one GitBook Git Sync writes: CommonMark with GitHub tables, task lists
//! and strikethrough, plus Liquid-like container tags (`{% hint %}`, `{% tabs %}`/`{% tab %}`,
//! `{% embed %}`, `{% code %}`, `{% file %}`, `{% content-ref %}`), `<details>` expandables
//! and `<figure>` images with captions.
//!
//! Container tags are found by a line scanner (tags must start at column 0, outside fenced
//! code); the text between them is parsed with `pulldown-cmark`. Rendering always produces a
//! canonical form, and it is verified: inline content is rendered with markdown delimiters
//! (`**`, `*`, `~~`, backticks) only when re-parsing the result gives the same nodes, and
//! with HTML tags (`<strong>`, `<em>`, …) otherwise. Together with the normalisation done on
//! parsing this makes markdown → document → markdown a projection: a second round trip
//! returns the first one's output unchanged.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use serde_json::{json, Map, Value};

use std::cell::RefCell;
use std::ops::Range;

use crate::document::{Document, Element, Fragment, Leaf, Mark, Node, Text};
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
    if let Some(id) = href.strip_prefix("/files/") {
        if is_plain_id(id) {
            return ContentRef::File { file: id.into() };
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
        } => format!("/reusable-contents/{reusable_content}"),
        ContentRef::Openapi { spec } => format!("/openapi/{spec}"),
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
    let md = md.replace("\r\n", "\n");
    let nodes = parse_blocks(&md, links, true)?;
    // The parser's guards bound its recursion; this walk states the exact invariant.
    check_nodes(&nodes)?;
    Ok(Document::new(nodes))
}

/// Parses stored markdown, which is always within [`MAX_DEPTH`]. Should it not be, the text
/// comes back as one paragraph instead of failing: reads of stored content never fail.
pub fn markdown_to_document(md: &str) -> Document {
    markdown_to_document_with(md, &DefaultLinks)
}

/// [`markdown_to_document`], resolving links with `links`.
pub fn markdown_to_document_with(md: &str, links: &dyn LinkResolver) -> Document {
    try_markdown_to_document_with(md, links)
        .unwrap_or_else(|_| Document::new(vec![Node::paragraph(vec![Node::text(md)])]))
}

/// Renders a document as canonical markdown (no frontmatter), refusing a document nested
/// deeper than [`MAX_DEPTH`]. Use this for documents that enter the engine.
pub fn try_document_to_markdown(doc: &Document) -> Result<String, TooDeep> {
    doc.check_depth()?;
    Ok(render_document(&doc.nodes))
}

/// Renders a document as canonical markdown (no frontmatter). Elements deeper than
/// [`MAX_DEPTH`] are written as their plain text, so that rendering stays bounded.
pub fn document_to_markdown(doc: &Document) -> String {
    if doc.check_depth().is_ok() {
        render_document(&doc.nodes)
    } else {
        render_document(&clamp_nodes(&doc.nodes, 1))
    }
}

fn render_document(nodes: &[Node]) -> String {
    let body = render_blocks(nodes);
    if body.is_empty() {
        body
    } else {
        body + "\n"
    }
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
pub fn try_normalize_markdown_with(md: &str, links: &dyn LinkResolver) -> Result<String, TooDeep> {
    Ok(render_document(
        &try_markdown_to_document_with(md, links)?.nodes,
    ))
}

/// Puts stored markdown in canonical form: `document_to_markdown(markdown_to_document(md))`.
pub fn normalize_markdown(md: &str) -> String {
    document_to_markdown(&markdown_to_document(md))
}

/// [`normalize_markdown`], resolving links with `links`.
pub fn normalize_markdown_with(md: &str, links: &dyn LinkResolver) -> String {
    document_to_markdown(&markdown_to_document_with(md, links))
}

// ---------------------------------------------------------------------------------------
// Parsing: the container scanner.

fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// A `{% name attrs %}` line at column 0.
fn parse_tag(line: &str) -> Option<(String, Vec<(String, String)>)> {
    let line = line.trim_end();
    let inner = line.strip_prefix("{%")?.strip_suffix("%}")?.trim();
    let name_end = inner.find(char::is_whitespace).unwrap_or(inner.len());
    let name = &inner[..name_end];
    if name.is_empty() {
        return None;
    }
    Some((name.to_string(), parse_attrs(&inner[name_end..])))
}

/// `key="value"` pairs; values may escape `"` and `\` with a backslash.
fn parse_attrs(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '-' || chars[i] == '_')
        {
            i += 1;
        }
        let key: String = chars[start..i].iter().collect();
        if key.is_empty() {
            i += 1;
            continue;
        }
        if i >= chars.len() || chars[i] != '=' {
            out.push((key, "true".into()));
            continue;
        }
        i += 1;
        let mut value = String::new();
        if i < chars.len() && chars[i] == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                value.push(chars[i]);
                i += 1;
            }
            i += 1;
        } else {
            while i < chars.len() && !chars[i].is_whitespace() {
                value.push(chars[i]);
                i += 1;
            }
        }
        out.push((key, value));
    }
    out
}

fn attr<'a>(attrs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

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

/// The container a line opens or closes: `{% name %}`/`{% endname %}` tags and
/// `<details>`/`</details>`; `true` for a closing line.
fn container_line(line: &str) -> Option<(String, bool)> {
    let t = line.trim_end();
    if t == "</details>" {
        return Some(("<details>".into(), true));
    }
    if t.starts_with("<details") {
        return Some(("<details>".into(), false));
    }
    if !t.starts_with("{%") {
        return None;
    }
    let (name, _) = parse_tag(t)?;
    Some(match name.strip_prefix("end") {
        Some(kind) if !kind.is_empty() => (kind.to_string(), true),
        _ => (name, false),
    })
}

/// For each line outside code that opens a container, the line that closes it: the first
/// later line where the closers of its kind outnumber the openers since it. Computed for
/// every container of a text in one pass with a stack per kind (instead of a scan per
/// opener, which made unclosed containers quadratic).
fn pair_containers(lines: &[&str], in_code: &[bool]) -> Vec<Option<usize>> {
    let mut close = vec![None; lines.len()];
    let mut open: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for (j, line) in lines.iter().enumerate() {
        if in_code[j] {
            continue;
        }
        match container_line(line) {
            Some((kind, true)) => {
                if let Some(i) = open.get_mut(&kind).and_then(Vec::pop) {
                    close[i] = Some(j);
                }
            }
            Some((kind, false)) => open.entry(kind).or_default().push(j),
            None => {}
        }
    }
    close
}

/// For each line, whether it lies inside a code block, as the CommonMark parser sees it:
/// container tags are only recognised outside code.
fn code_lines(src: &str, lines: &[&str]) -> Vec<bool> {
    let mut ranges = Vec::new();
    let mut open = None;
    for (e, range) in Parser::new_ext(src, options()).into_offset_iter() {
        match e {
            Event::Start(Tag::CodeBlock(_)) => open = Some(range.start),
            Event::End(TagEnd::CodeBlock) => {
                if let Some(start) = open.take() {
                    ranges.push(start..range.end);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::with_capacity(lines.len());
    let mut offset = 0;
    let mut r = 0;
    for line in lines {
        while r < ranges.len() && ranges[r].end <= offset {
            r += 1;
        }
        out.push(r < ranges.len() && ranges[r].start < offset && offset < ranges[r].end);
        offset += line.len();
    }
    out
}

fn is_tag(line: &str, name: &str) -> bool {
    parse_tag(line).is_some_and(|(n, _)| n == name)
}

/// Finds an optional closing tag (`{% endembed %}`, `{% endfile %}`…) before any other tag
/// and before line `end`.
fn optional_close(
    lines: &[&str],
    in_code: &[bool],
    start: usize,
    end: usize,
    end_name: &str,
) -> Option<usize> {
    for j in start + 1..end {
        if !in_code[j] && lines[j].starts_with("{%") {
            return is_tag(lines[j], end_name).then_some(j);
        }
    }
    None
}

/// Parses container tags line by line and hands the text between them to `pulldown-cmark`.
struct Scanner<'r> {
    links: &'r dyn LinkResolver,
    /// The first nesting error met; once set, parsing winds down and the parse fails.
    too_deep: RefCell<Option<TooDeep>>,
}

/// The lines of a text with what the scanner needs to know about them. Computed once for
/// the whole text: containers are parsed as ranges of these lines, so that nesting does not
/// make the text parsed again at every level.
struct Lines<'a> {
    lines: Vec<&'a str>,
    in_code: Vec<bool>,
    /// For container openers, their closing line (see [`pair_containers`]).
    close: Vec<Option<usize>>,
    /// For each line, the first line at or after it that holds `</figure>`.
    figure_end: Vec<Option<usize>>,
}

fn parse_blocks(src: &str, links: &dyn LinkResolver, images: bool) -> Result<Vec<Node>, TooDeep> {
    let scanner = Scanner {
        links,
        too_deep: RefCell::new(None),
    };
    let text = Lines::new(src);
    let mut nodes = scanner.blocks(&text, 0..text.lines.len(), images, 1, "document");
    if let Some(e) = scanner.too_deep.take() {
        return Err(e);
    }
    merge_adjacent_quotes(&mut nodes);
    Ok(nodes)
}

impl<'a> Lines<'a> {
    fn new(src: &'a str) -> Lines<'a> {
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        let in_code = code_lines(src, &lines);
        let close = pair_containers(&lines, &in_code);
        let mut figure_end = vec![None; lines.len()];
        let mut next = None;
        for j in (0..lines.len()).rev() {
            if lines[j].contains("</figure>") {
                next = Some(j);
            }
            figure_end[j] = next;
        }
        Lines {
            lines,
            in_code,
            close,
            figure_end,
        }
    }
}

impl Scanner<'_> {
    /// Records a nesting error: the parse will fail with it.
    fn fail(&self, within: &str) {
        let mut e = self.too_deep.borrow_mut();
        if e.is_none() {
            *e = Some(TooDeep::new(within));
        }
    }

    fn failed(&self) -> bool {
        self.too_deep.borrow().is_some()
    }

    /// Whether blocks may be made at `depth`; records an error naming `within` if not.
    fn enter(&self, depth: usize, within: &str) -> bool {
        if self.failed() {
            return false;
        }
        if depth > MAX_DEPTH {
            self.fail(within);
            return false;
        }
        true
    }

    /// Blocks of the lines `range` of `text`, made at `depth` inside a `within`.
    fn blocks(
        &self,
        text: &Lines<'_>,
        range: Range<usize>,
        images: bool,
        depth: usize,
        within: &str,
    ) -> Vec<Node> {
        if !self.enter(depth, within) {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut buf = String::new();
        let mut i = range.start;
        while i < range.end && !self.failed() {
            if !text.in_code[i] {
                if let Some((nodes, next)) = self.container(text, i, range.end, images, depth) {
                    out.extend(self.cmark(&buf, images, depth));
                    buf.clear();
                    out.extend(nodes);
                    i = next;
                    continue;
                }
            }
            buf.push_str(text.lines[i]);
            i += 1;
        }
        out.extend(self.cmark(&buf, images, depth));
        out
    }

    /// Parses the container starting at line `i` (its blocks at `depth`), returning its
    /// nodes and the next line. Each kind has its own function, so that this one, on the
    /// path of every nested container, keeps a small stack frame.
    fn container(
        &self,
        text: &Lines<'_>,
        i: usize,
        limit: usize,
        images: bool,
        depth: usize,
    ) -> Option<(Vec<Node>, usize)> {
        let line = text.lines[i];
        let trimmed = line.trim_end();
        if trimmed.starts_with("<details") && trimmed.ends_with('>') {
            let end = text.close[i].filter(|e| *e < limit)?;
            return Some((vec![self.expandable(text, i + 1..end, depth)], end + 1));
        }
        if trimmed.starts_with("<figure>") {
            let end = text.figure_end[i].filter(|e| *e < limit)?;
            let html: String = text.lines[i..=end].concat();
            return Some((vec![self.figure(&html, images, depth)?], end + 1));
        }
        if !line.starts_with("{%") {
            return None;
        }
        let (name, attrs) = parse_tag(line)?;
        let at = TagAt {
            text,
            i,
            limit,
            attrs,
            images,
            depth,
        };
        match name.as_str() {
            "hint" => self.hint(&at),
            "tabs" => self.tabs(&at),
            "embed" => embed(&at),
            "file" => self.file(&at),
            "content-ref" => self.content_ref(&at),
            "code" => self.code_tag(&at),
            _ => None,
        }
    }

    #[inline(never)]
    fn hint(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let style = attr(&at.attrs, "style")
            .filter(|s| matches!(*s, "info" | "warning" | "danger" | "success"))
            .unwrap_or("info");
        let mut data = Map::new();
        data.insert("style".into(), json!(style));
        let nodes = non_empty(self.blocks(at.text, at.inner(end), false, at.depth + 1, "hint"));
        Some((vec![Node::block("hint", data, nodes)], end + 1))
    }

    #[inline(never)]
    fn tabs(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let (lines, depth) = (&at.text.lines, at.depth);
        if !self.enter(depth + 1, "tabs") {
            return Some((Vec::new(), end + 1));
        }
        let mut items = Vec::new();
        let mut j = at.i + 1;
        while j < end {
            if let Some(("tab", tab_attrs)) =
                parse_tag(lines[j]).as_ref().map(|(n, a)| (n.as_str(), a))
            {
                let close = at.text.close[j].filter(|c| *c < end).unwrap_or(end);
                let mut data = Map::new();
                data.insert(
                    "title".into(),
                    json!(attr(tab_attrs, "title").unwrap_or("")),
                );
                items.push(Node::block(
                    "tabs-item",
                    data,
                    non_empty(self.blocks(at.text, j + 1..close, true, depth + 2, "tab")),
                ));
                j = close + 1;
            } else {
                j += 1;
            }
        }
        if items.is_empty() {
            let mut data = Map::new();
            data.insert("title".into(), json!(""));
            items.push(Node::block("tabs-item", data, non_empty(Vec::new())));
        }
        Some((vec![Node::block("tabs", Map::new(), items)], end + 1))
    }

    #[inline(never)]
    fn file(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let src = attr(&at.attrs, "src")?;
        let next = at.optional_close("endfile");
        let node = match self.resolve(src) {
            LinkTarget::Ref(r @ ContentRef::File { .. }) => {
                let mut data = Map::new();
                data.insert(
                    "ref".into(),
                    serde_json::to_value(r).expect("refs serialise"),
                );
                Node::Block(Element::void("file", data))
            }
            // A file block can only point at a file: anything else stays a link.
            LinkTarget::Ref(r) => Node::paragraph(inline_nodes(
                vec![Item::Link(r, vec![Item::Leaf(src.to_string(), Vec::new())])],
                true,
            )),
            LinkTarget::Text => Node::paragraph(vec![Node::text(src)]),
        };
        Some((vec![node], next))
    }

    #[inline(never)]
    fn content_ref(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let url = attr(&at.attrs, "url")?;
        let next = at.optional_close("endcontent-ref");
        let node = match self.resolve(url) {
            LinkTarget::Ref(r) => {
                let mut data = Map::new();
                data.insert(
                    "ref".into(),
                    serde_json::to_value(r).expect("refs serialise"),
                );
                Node::Block(Element::void("content-ref", data))
            }
            LinkTarget::Text => Node::paragraph(vec![Node::text(url)]),
        };
        Some((vec![node], next))
    }

    #[inline(never)]
    fn code_tag(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let mut nodes = self.blocks(at.text, at.inner(end), at.images, at.depth, "code");
        if let Some(Node::Block(code)) = nodes
            .iter_mut()
            .find(|n| matches!(n, Node::Block(e) if e.kind == "code"))
        {
            apply_code_attrs(&mut code.data, &at.attrs);
        }
        Some((nodes, end + 1))
    }

    /// An expandable whose `<details>` body is the lines `range` of `text`.
    fn expandable(&self, text: &Lines<'_>, range: Range<usize>, depth: usize) -> Node {
        let mut title = vec![Node::text("")];
        let mut rest = range.clone();
        if let Some(first) = range.clone().find(|j| !text.lines[*j].trim().is_empty()) {
            let l = text.lines[first].trim();
            if let Some(inner) = l
                .strip_prefix("<summary>")
                .and_then(|s| s.strip_suffix("</summary>"))
            {
                title = self.inline_snippet(inner, depth + 1);
                rest = first + 1..range.end;
            }
        }
        let body = non_empty(self.blocks(text, rest, true, depth + 1, "expandable"));
        let mut el = Element::void("expandable", Map::new());
        el.fragments = Some(vec![
            Fragment {
                key: None,
                fragment: Some("expandable-title".into()),
                kind: Some("expandable-title".into()),
                nodes: vec![Node::paragraph(title)],
            },
            Fragment {
                key: None,
                fragment: Some("expandable-body".into()),
                kind: Some("expandable-body".into()),
                nodes: body,
            },
        ]);
        Node::Block(el)
    }

    /// `<figure><img src alt><figcaption>…</figcaption></figure>` as GitBook writes images.
    fn figure(&self, html: &str, images: bool, depth: usize) -> Option<Node> {
        let img_at = html.find("<img")?;
        let img_end = html[img_at..].find('>')? + img_at;
        let attrs = parse_attrs(html[img_at + 4..img_end].trim_end_matches('/'));
        let src = attr(&attrs, "src")?;
        let alt = attr(&attrs, "alt").unwrap_or("");
        let caption = html
            .find("<figcaption>")
            .and_then(|s| {
                let rest = &html[s + "<figcaption>".len()..];
                rest.find("</figcaption>").map(|e| &rest[..e])
            })
            .map(|c| {
                c.trim()
                    .trim_start_matches("<p>")
                    .trim_end_matches("</p>")
                    .trim()
            })
            .unwrap_or("");
        let LinkTarget::Ref(r) = self.resolve(src) else {
            return Some(Node::paragraph(vec![Node::text(alt)]));
        };
        let caption_nodes = if caption.is_empty() {
            None
        } else {
            Some(self.inline_snippet(caption, depth + 2))
        };
        if !images {
            return Some(Node::paragraph(inline_nodes(
                vec![Item::Image(r, alt.to_string())],
                true,
            )));
        }
        Some(images_block(vec![image_element(r, alt, caption_nodes)]))
    }

    fn resolve(&self, href: &str) -> LinkTarget {
        self.links
            .resolve(href)
            .unwrap_or_else(|| LinkTarget::Ref(default_ref(href)))
    }

    /// Inline nodes of a one-paragraph snippet (titles, captions) whose paragraph is at
    /// `depth`.
    fn inline_snippet(&self, text: &str, depth: usize) -> Vec<Node> {
        match self.cmark(text, false, depth).into_iter().next() {
            Some(Node::Block(e)) if e.kind == "paragraph" => e.nodes.unwrap_or_default(),
            _ => vec![Node::text("")],
        }
    }

    // -----------------------------------------------------------------------------------
    // Parsing: CommonMark events to nodes.

    /// Blocks of a text without container tags, at `depth`.
    fn cmark(&self, src: &str, images: bool, depth: usize) -> Vec<Node> {
        if src.trim().is_empty() || self.failed() {
            return Vec::new();
        }
        let mut ev = Events {
            ev: Parser::new_ext(src, options()).collect(),
            pos: 0,
        };
        let mut p = EventParser {
            scanner: self,
            marks: Vec::new(),
            task: None,
        };
        p.blocks(&mut ev, images, depth, "document")
    }
}

/// A container tag met by the scanner: where it is and what it says.
struct TagAt<'t, 'a> {
    text: &'t Lines<'a>,
    /// Its line.
    i: usize,
    /// The end of the range of lines being parsed: it closes before.
    limit: usize,
    attrs: Vec<(String, String)>,
    images: bool,
    /// Depth of the blocks it makes.
    depth: usize,
}

impl TagAt<'_, '_> {
    /// The line that closes it.
    fn close(&self) -> Option<usize> {
        self.text.close[self.i].filter(|e| *e < self.limit)
    }

    /// The lines between it and line `end`.
    fn inner(&self, end: usize) -> Range<usize> {
        self.i + 1..end
    }

    /// The line after it, or after its optional closing tag `end_name`.
    fn optional_close(&self, end_name: &str) -> usize {
        optional_close(
            &self.text.lines,
            &self.text.in_code,
            self.i,
            self.limit,
            end_name,
        )
        .map_or(self.i + 1, |j| j + 1)
    }
}

fn embed(at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
    let url = attr(&at.attrs, "url")?;
    let next = at.optional_close("endembed");
    let mut data = Map::new();
    data.insert("url".into(), json!(url));
    Some((vec![Node::Block(Element::void("embed", data))], next))
}

fn non_empty(mut nodes: Vec<Node>) -> Vec<Node> {
    if nodes.is_empty() {
        nodes.push(Node::paragraph(vec![Node::text("")]));
    }
    nodes
}

fn merge_adjacent_quotes(nodes: &mut Vec<Node>) {
    // Two quotes in a row cannot be written apart in markdown, so keep them as one.
    let mut out: Vec<Node> = Vec::with_capacity(nodes.len());
    for n in nodes.drain(..) {
        if let (Some(Node::Block(prev)), Node::Block(cur)) = (out.last_mut(), &n) {
            if prev.kind == "blockquote" && cur.kind == "blockquote" {
                prev.nodes
                    .get_or_insert_with(Vec::new)
                    .extend(cur.children().iter().cloned());
                continue;
            }
        }
        out.push(n);
    }
    // Merging two quotes can make their inner quotes adjacent in turn.
    for n in &mut out {
        if let Node::Block(e) = n {
            if e.kind == "blockquote" {
                if let Some(children) = e.nodes.as_mut() {
                    merge_adjacent_quotes(children);
                }
            }
        }
    }
    *nodes = out;
}

fn apply_code_attrs(data: &mut Map<String, Value>, attrs: &[(String, String)]) {
    for (k, v) in attrs {
        match k.as_str() {
            "title" => {
                data.insert("title".into(), json!(v));
            }
            "overflow" if v == "wrap" || v == "scroll" => {
                data.insert("overflow".into(), json!(v));
            }
            "lineNumbers" | "fullWidth" => {
                data.insert(k.clone(), json!(v == "true"));
            }
            _ => {}
        }
    }
}

struct Events<'a> {
    ev: Vec<Event<'a>>,
    pos: usize,
}

impl<'a> Events<'a> {
    fn peek(&self) -> Option<&Event<'a>> {
        self.ev.get(self.pos)
    }

    fn next(&mut self) -> Option<Event<'a>> {
        let e = self.ev.get_mut(self.pos)?;
        self.pos += 1;
        Some(std::mem::replace(e, Event::SoftBreak))
    }
}

/// Inline content being collected: leaves with their marks, links, images.
#[derive(Clone, Debug)]
enum Item {
    Leaf(String, Vec<Mark>),
    Link(ContentRef, Vec<Item>),
    Image(ContentRef, String),
}

struct EventParser<'s, 'r> {
    scanner: &'s Scanner<'r>,
    marks: Vec<Mark>,
    /// The task marker seen in the current list item, wherever the parser put it.
    task: Option<bool>,
}

fn is_inline(e: &Event<'_>) -> bool {
    match e {
        Event::Text(_)
        | Event::Code(_)
        | Event::InlineMath(_)
        | Event::DisplayMath(_)
        | Event::InlineHtml(_)
        | Event::FootnoteReference(_)
        | Event::SoftBreak
        | Event::HardBreak => true,
        Event::Start(t) => matches!(
            t,
            Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Superscript
                | Tag::Subscript
                | Tag::Link { .. }
                | Tag::Image { .. }
        ),
        Event::End(t) => matches!(
            t,
            TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Superscript
                | TagEnd::Subscript
        ),
        _ => false,
    }
}

fn mark(kind: &str) -> Mark {
    Mark {
        kind: kind.into(),
        data: None,
    }
}

/// Canonical order of marks in a leaf and of their nesting when rendered (code innermost).
const MARK_ORDER: [&str; 8] = [
    "bold",
    "italic",
    "strikethrough",
    "keyboard",
    "superscript",
    "subscript",
    "color",
    "code",
];

fn mark_rank(m: &Mark) -> usize {
    MARK_ORDER
        .iter()
        .position(|k| *k == m.kind)
        .unwrap_or(MARK_ORDER.len())
}

fn canonical_marks(marks: &[Mark]) -> Vec<Mark> {
    let mut out: Vec<Mark> = Vec::new();
    for m in marks {
        if !out.iter().any(|x| x.kind == m.kind) {
            out.push(m.clone());
        }
    }
    out.sort_by_key(mark_rank);
    out
}

impl EventParser<'_, '_> {
    /// Whether an element may be made at `depth`. If not, records an error naming
    /// `within` and skips the rest of the events, so that every loop ends at once.
    fn enter(&mut self, ev: &mut Events<'_>, depth: usize, within: &str) -> bool {
        if self.scanner.enter(depth, within) {
            return true;
        }
        ev.pos = ev.ev.len();
        false
    }

    /// Blocks (at `depth`, inside a `within`) until an end event (not consumed) or the end
    /// of the stream.
    fn blocks(
        &mut self,
        ev: &mut Events<'_>,
        images: bool,
        depth: usize,
        within: &str,
    ) -> Vec<Node> {
        let mut out = Vec::new();
        if !self.enter(ev, depth, within) {
            return out;
        }
        loop {
            match ev.peek() {
                None | Some(Event::End(_)) => break,
                Some(Event::TaskListMarker(c)) => {
                    self.task = Some(*c);
                    ev.next();
                }
                Some(e) if is_inline(e) => {
                    // Tight list items hold inline content without a paragraph.
                    self.marks.clear();
                    let items = self.inlines(ev, depth + 1);
                    out.extend(paragraph_or_images(items, images));
                }
                _ => {
                    let e = ev.next().expect("peeked");
                    if let Some(n) = self.block(e, ev, images, depth) {
                        out.push(n);
                    }
                }
            }
        }
        merge_adjacent_quotes(&mut out);
        out
    }

    /// The block that `e` starts, made at `depth`. Each kind has its own function: this one
    /// is on the path of every nested block, so its stack frame is kept small.
    fn block(
        &mut self,
        e: Event<'_>,
        ev: &mut Events<'_>,
        images: bool,
        depth: usize,
    ) -> Option<Node> {
        match e {
            Event::Rule => Some(Node::Block(Element::void("divider", Map::new()))),
            Event::Html(h) => Some(Node::paragraph(inline_nodes(
                vec![Item::Leaf(h.to_string(), Vec::new())],
                true,
            ))),
            Event::Start(Tag::Paragraph) => self.paragraph(ev, images, depth),
            Event::Start(Tag::Heading { level, id, .. }) => {
                Some(self.heading(ev, level, id.as_deref(), depth))
            }
            Event::Start(Tag::BlockQuote(_)) => Some(self.blockquote(ev, depth)),
            Event::Start(Tag::CodeBlock(kind)) => self.code_block(ev, kind, depth),
            Event::Start(Tag::HtmlBlock) => html_block(ev),
            Event::Start(Tag::List(start)) => self.list(ev, start, depth),
            Event::Start(Tag::Table(aligns)) => {
                if !self.enter(ev, depth + 1, "table") {
                    return None;
                }
                Some(self.table(ev, aligns, depth))
            }
            // Footnotes, definition lists, metadata and the like are not part of GitBook's
            // model: keep the content, drop the wrapper.
            Event::Start(_) => self.unwrapped(ev, images, depth),
            _ => None,
        }
    }

    #[inline(never)]
    fn unwrapped(&mut self, ev: &mut Events<'_>, images: bool, depth: usize) -> Option<Node> {
        let nodes = self.blocks(ev, images, depth, "block");
        ev.next();
        nodes.into_iter().next()
    }

    #[inline(never)]
    fn paragraph(&mut self, ev: &mut Events<'_>, images: bool, depth: usize) -> Option<Node> {
        if let Some(Event::TaskListMarker(c)) = ev.peek() {
            self.task = Some(*c);
            ev.next();
        }
        self.marks.clear();
        let items = self.inlines(ev, depth + 1);
        ev.next();
        paragraph_or_images(items, images)
    }

    #[inline(never)]
    fn heading(
        &mut self,
        ev: &mut Events<'_>,
        level: HeadingLevel,
        id: Option<&str>,
        depth: usize,
    ) -> Node {
        self.marks.clear();
        let items = self.inlines(ev, depth + 1);
        ev.next();
        let n = match level {
            HeadingLevel::H1 => 1,
            HeadingLevel::H2 => 2,
            _ => 3,
        };
        let mut data = Map::new();
        if let Some(id) = id.filter(|id| is_anchor(id)) {
            data.insert("id".into(), json!(id.to_string()));
        }
        let items = items
            .into_iter()
            .map(|i| match i {
                Item::Leaf(t, m) => Item::Leaf(t.replace('\n', " "), m),
                other => other,
            })
            .collect();
        Node::block(&format!("heading-{n}"), data, inline_nodes(items, true))
    }

    #[inline(never)]
    fn blockquote(&mut self, ev: &mut Events<'_>, depth: usize) -> Node {
        let nodes = self.blocks(ev, false, depth + 1, "blockquote");
        ev.next();
        Node::block("blockquote", Map::new(), non_empty(nodes))
    }

    #[inline(never)]
    fn code_block(
        &mut self,
        ev: &mut Events<'_>,
        kind: CodeBlockKind<'_>,
        depth: usize,
    ) -> Option<Node> {
        if !self.enter(ev, depth + 1, "code block") {
            return None;
        }
        let mut text = String::new();
        while let Some(e) = ev.next() {
            match e {
                Event::Text(t) => text.push_str(&t),
                Event::End(_) => break,
                _ => {}
            }
        }
        let mut data = Map::new();
        if let CodeBlockKind::Fenced(info) = kind {
            let info = info.trim();
            let (syntax, rest) = match info.find(char::is_whitespace) {
                Some(i) => (&info[..i], &info[i..]),
                None => (info, ""),
            };
            let (syntax, rest) = if syntax.contains('=') {
                ("", info)
            } else {
                (syntax, rest)
            };
            if !syntax.is_empty() {
                data.insert("syntax".into(), json!(syntax));
            }
            apply_code_attrs(&mut data, &parse_attrs(rest));
        }
        Some(code_block(data, text.strip_suffix('\n').unwrap_or(&text)))
    }

    #[inline(never)]
    fn list(&mut self, ev: &mut Events<'_>, start: Option<u64>, depth: usize) -> Option<Node> {
        let mut items = Vec::new();
        let mut tasks = false;
        while let Some(e) = ev.next() {
            match e {
                Event::Start(Tag::Item) => {
                    if !self.enter(ev, depth + 1, "list") {
                        return None;
                    }
                    let outer = self.task.take();
                    let nodes = non_empty(self.blocks(ev, false, depth + 2, "list"));
                    ev.next();
                    let checked = std::mem::replace(&mut self.task, outer);
                    tasks |= checked.is_some();
                    items.push((checked, nodes));
                }
                Event::End(_) => break,
                _ => {}
            }
        }
        let items: Vec<Node> = items
            .into_iter()
            .map(|(checked, nodes)| {
                let mut data = Map::new();
                if tasks {
                    data.insert("checked".into(), json!(checked.unwrap_or(false)));
                }
                Node::block("list-item", data, nodes)
            })
            .collect();
        let mut data = Map::new();
        let kind = match start {
            _ if tasks => "list-tasks",
            Some(n) => {
                if n != 1 {
                    data.insert("start".into(), json!(n));
                }
                "list-ordered"
            }
            None => "list-unordered",
        };
        Some(Node::block(kind, data, items))
    }

    /// A table at `depth`: cells are paragraphs one level below.
    fn table(&mut self, ev: &mut Events<'_>, aligns: Vec<Alignment>, depth: usize) -> Node {
        let mut rows: Vec<Vec<Vec<Node>>> = Vec::new();
        let mut current: Vec<Vec<Node>> = Vec::new();
        while let Some(e) = ev.next() {
            match e {
                Event::Start(Tag::TableCell) => {
                    self.marks.clear();
                    let items = self.inlines(ev, depth + 2);
                    ev.next();
                    current.push(inline_nodes(items, true));
                }
                Event::End(TagEnd::TableHead) | Event::End(TagEnd::TableRow) => {
                    rows.push(std::mem::take(&mut current))
                }
                Event::End(TagEnd::Table) => break,
                _ => {}
            }
        }
        let header = if rows.is_empty() {
            Vec::new()
        } else {
            rows.remove(0)
        };
        let columns: Vec<String> = (0..aligns.len().max(header.len()))
            .map(|i| format!("c{i}"))
            .collect();
        let mut definition = Map::new();
        for (i, col) in columns.iter().enumerate() {
            let title = header
                .get(i)
                .map(|n| collapse_break_spaces(plain(n).trim()))
                .unwrap_or_default();
            let align = match aligns.get(i) {
                Some(Alignment::Center) => "center",
                Some(Alignment::Right) => "right",
                _ => "left",
            };
            definition.insert(
                col.clone(),
                json!({"id": col, "title": title, "type": "text", "textAlignment": align}),
            );
        }
        let mut records = Map::new();
        let mut fragments = Vec::new();
        for (r, row) in rows.into_iter().enumerate() {
            let rid = format!("r{r}");
            let mut values = Map::new();
            for (c, cell) in row.into_iter().enumerate() {
                if c >= columns.len() || is_empty_inline(&cell) {
                    continue;
                }
                let key = format!("{rid}-{}", columns[c]);
                values.insert(columns[c].clone(), json!(key));
                fragments.push(Fragment {
                    key: None,
                    fragment: Some(key),
                    kind: None,
                    nodes: vec![Node::paragraph(cell)],
                });
            }
            records.insert(rid, json!({"orderIndex": order_index(r), "values": values}));
        }
        let mut data = Map::new();
        data.insert(
            "view".into(),
            json!({"type": "grid", "columns": columns, "hideHeader": false}),
        );
        data.insert("records".into(), Value::Object(records));
        data.insert("definition".into(), Value::Object(definition));
        let mut el = Element::void("table", data);
        el.fragments = Some(fragments);
        Node::Block(el)
    }

    /// Inline content up to the first non-inline event; its elements are at `depth`. Links
    /// and images recurse; everything else is handled out of the recursion's path, so
    /// that each level of nesting costs little stack.
    fn inlines(&mut self, ev: &mut Events<'_>, depth: usize) -> Vec<Item> {
        let mut out = Vec::new();
        while ev.peek().is_some_and(is_inline) {
            let e = ev.next().expect("peeked");
            match e {
                Event::Start(Tag::Link { dest_url, .. }) => {
                    if !self.enter(ev, depth, "link") {
                        break;
                    }
                    self.link(ev, &dest_url, depth, &mut out);
                }
                Event::Start(Tag::Image { dest_url, .. }) => {
                    if !self.enter(ev, depth, "image") {
                        break;
                    }
                    self.image(ev, &dest_url, depth, &mut out);
                }
                e => self.inline_event(e, &mut out),
            }
        }
        out
    }

    #[inline(never)]
    fn link(&mut self, ev: &mut Events<'_>, dest: &str, depth: usize, out: &mut Vec<Item>) {
        let inner = self.inlines(ev, depth + 1);
        ev.next();
        match self.scanner.resolve(dest) {
            LinkTarget::Ref(r) => out.push(Item::Link(r, inner)),
            LinkTarget::Text => out.extend(inner),
        }
    }

    #[inline(never)]
    fn image(&mut self, ev: &mut Events<'_>, dest: &str, depth: usize, out: &mut Vec<Item>) {
        let marks = canonical_marks(&self.marks);
        let saved = std::mem::take(&mut self.marks);
        let inner = self.inlines(ev, depth + 1);
        self.marks = saved;
        ev.next();
        let alt = items_text(&inner);
        match self.scanner.resolve(dest) {
            LinkTarget::Ref(r) => out.push(Item::Image(r, alt)),
            LinkTarget::Text => out.push(Item::Leaf(alt, marks)),
        }
    }

    /// One inline event other than a link or an image.
    #[inline(never)]
    fn inline_event(&mut self, e: Event<'_>, out: &mut Vec<Item>) {
        let marks = canonical_marks(&self.marks);
        match e {
            Event::Text(t) => out.push(Item::Leaf(t.to_string(), marks)),
            Event::Code(t) => {
                let mut m = marks;
                m.push(mark("code"));
                out.push(Item::Leaf(t.to_string(), canonical_marks(&m)));
            }
            Event::InlineMath(t) => out.push(Item::Leaf(format!("${t}$"), marks)),
            Event::DisplayMath(t) => out.push(Item::Leaf(format!("$${t}$$"), marks)),
            Event::FootnoteReference(t) => out.push(Item::Leaf(format!("[^{t}]"), marks)),
            Event::SoftBreak => out.push(Item::Leaf(" ".into(), marks)),
            Event::HardBreak => out.push(Item::Leaf("\n".into(), marks)),
            Event::InlineHtml(h) => {
                if let Some(item) = self.inline_html(&h) {
                    out.push(item);
                }
            }
            Event::Start(Tag::Emphasis) => self.marks.push(mark("italic")),
            Event::Start(Tag::Strong) => self.marks.push(mark("bold")),
            Event::Start(Tag::Strikethrough) => self.marks.push(mark("strikethrough")),
            Event::Start(Tag::Superscript) => self.marks.push(mark("superscript")),
            Event::Start(Tag::Subscript) => self.marks.push(mark("subscript")),
            Event::End(TagEnd::Emphasis) => self.pop_mark("italic"),
            Event::End(TagEnd::Strong) => self.pop_mark("bold"),
            Event::End(TagEnd::Strikethrough) => self.pop_mark("strikethrough"),
            Event::End(TagEnd::Superscript) => self.pop_mark("superscript"),
            Event::End(TagEnd::Subscript) => self.pop_mark("subscript"),
            _ => {}
        }
    }

    fn pop_mark(&mut self, kind: &str) {
        if let Some(i) = self.marks.iter().rposition(|m| m.kind == kind) {
            self.marks.remove(i);
        }
    }

    fn inline_html(&mut self, html: &str) -> Option<Item> {
        let lower = html.trim().to_ascii_lowercase();
        let tag_name = lower
            .trim_start_matches('<')
            .trim_start_matches('/')
            .split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap_or("");
        let kind = match tag_name {
            "br" => return Some(Item::Leaf("\n".into(), canonical_marks(&self.marks))),
            "strong" | "b" => "bold",
            "em" | "i" => "italic",
            "s" | "del" | "strike" => "strikethrough",
            "code" => "code",
            "kbd" => "keyboard",
            "sup" => "superscript",
            "sub" => "subscript",
            "mark" => "color",
            _ => return Some(Item::Leaf(html.to_string(), canonical_marks(&self.marks))),
        };
        if lower.starts_with("</") {
            self.pop_mark(kind);
        } else if kind == "color" {
            self.marks.push(color_mark(html));
        } else {
            self.marks.push(mark(kind));
        }
        None
    }
}

/// An HTML block, kept as its text; comments are authoring notes and dropped.
fn html_block(ev: &mut Events<'_>) -> Option<Node> {
    let mut html = String::new();
    while let Some(e) = ev.next() {
        match e {
            Event::Html(t) | Event::Text(t) => html.push_str(&t),
            Event::End(_) => break,
            _ => {}
        }
    }
    let html = html.trim();
    if html.is_empty() || (html.starts_with("<!--") && html.ends_with("-->")) {
        return None;
    }
    Some(Node::paragraph(inline_nodes(
        vec![Item::Leaf(html.to_string(), Vec::new())],
        true,
    )))
}

fn color_mark(html: &str) -> Mark {
    let attrs = parse_attrs(html.trim_start_matches("<mark").trim_end_matches('>'));
    let style = attr(&attrs, "style").unwrap_or("");
    let mut text = "default".to_string();
    let mut background = "default".to_string();
    for decl in style.split(';') {
        if let Some((k, v)) = decl.split_once(':') {
            match k.trim() {
                "color" => text = v.trim().to_string(),
                "background-color" => background = v.trim().to_string(),
                _ => {}
            }
        }
    }
    let mut data = Map::new();
    data.insert("text".into(), json!(text));
    data.insert("background".into(), json!(background));
    Mark {
        kind: "color".into(),
        data: Some(data),
    }
}

fn is_anchor(id: &str) -> bool {
    !id.is_empty()
        && id.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '+' | '_')
        })
}

/// Fractional-index style order keys that sort as strings.
fn order_index(i: usize) -> String {
    format!("a{i:06}")
}

fn items_text(items: &[Item]) -> String {
    let mut out = String::new();
    for i in items {
        match i {
            Item::Leaf(t, _) => out.push_str(t),
            Item::Link(_, inner) => out.push_str(&items_text(inner)),
            Item::Image(_, alt) => out.push_str(alt),
        }
    }
    out
}

fn plain(nodes: &[Node]) -> String {
    let mut out = String::new();
    for n in nodes {
        out.push_str(&n.plain_text());
    }
    out
}

fn is_empty_inline(nodes: &[Node]) -> bool {
    nodes.iter().all(|n| match n {
        Node::Text(t) => t.leaves.iter().all(|l| l.text.is_empty()),
        _ => false,
    })
}

fn code_block(data: Map<String, Value>, text: &str) -> Node {
    let lines = text
        .split('\n')
        .map(|l| {
            let mut line = Element::with_nodes("code-line", Map::new(), vec![Node::text(l)]);
            line.data = Map::new();
            Node::Block(line)
        })
        .collect();
    Node::block("code", data, lines)
}

fn image_element(r: ContentRef, alt: &str, caption: Option<Vec<Node>>) -> Node {
    let mut data = Map::new();
    data.insert(
        "ref".into(),
        serde_json::to_value(r).expect("refs serialise"),
    );
    if !alt.is_empty() {
        data.insert("alt".into(), json!(alt));
    }
    let mut el = Element::void("image", data);
    el.fragments = Some(
        caption
            .map(|nodes| Fragment {
                key: None,
                fragment: Some("caption".into()),
                kind: Some("caption".into()),
                nodes: vec![Node::paragraph(nodes)],
            })
            .into_iter()
            .collect(),
    );
    Node::Block(el)
}

fn images_block(images: Vec<Node>) -> Node {
    let mut el = Element::with_nodes("images", Map::new(), images);
    el.is_void = Some(false);
    Node::Block(el)
}

/// A paragraph, or an `images` block when the paragraph holds only images.
fn paragraph_or_images(items: Vec<Item>, images: bool) -> Option<Node> {
    let only_images = items.iter().any(|i| matches!(i, Item::Image(..)))
        && items.iter().all(|i| match i {
            Item::Image(..) => true,
            Item::Leaf(t, _) => t.trim().is_empty(),
            Item::Link(..) => false,
        });
    if images && only_images {
        let imgs = items
            .into_iter()
            .filter_map(|i| match i {
                Item::Image(r, alt) => Some(image_element(r, &alt, None)),
                _ => None,
            })
            .collect();
        return Some(images_block(imgs));
    }
    let nodes = inline_nodes(items, true);
    if is_empty_inline(&nodes) {
        return None;
    }
    Some(Node::paragraph(nodes))
}

fn is_code(marks: &[Mark]) -> bool {
    marks.iter().any(|m| m.kind == "code")
}

/// Builds normalised inline nodes: leaves merged, whitespace around line breaks and (at the
/// top of a paragraph) at both ends removed, a text node around every inline element.
fn inline_nodes(items: Vec<Item>, top: bool) -> Vec<Node> {
    // Flatten into a sequence of leaves and elements.
    enum Piece {
        Leaf(Leaf),
        El(Element),
    }
    let mut pieces: Vec<Piece> = Vec::new();
    for item in items {
        match item {
            Item::Leaf(text, marks) => {
                let marks = canonical_marks(&marks);
                let text = if is_code(&marks) {
                    text.replace('\n', " ")
                } else {
                    text
                };
                pieces.push(Piece::Leaf(Leaf { text, marks }));
            }
            Item::Link(r, inner) => {
                let mut data = Map::new();
                data.insert(
                    "ref".into(),
                    serde_json::to_value(r).expect("refs serialise"),
                );
                pieces.push(Piece::El(Element::with_nodes(
                    "link",
                    data,
                    inline_nodes(inner, false),
                )));
            }
            Item::Image(r, alt) => {
                let mut data = Map::new();
                data.insert(
                    "ref".into(),
                    serde_json::to_value(r).expect("refs serialise"),
                );
                if !alt.is_empty() {
                    data.insert("caption".into(), json!(alt));
                }
                pieces.push(Piece::El(Element::void("inline-image", data)));
            }
        }
    }
    // Whitespace normalisation on plain (non-code) leaves, repeated until nothing changes
    // because trimming can empty a leaf and expose its neighbour.
    loop {
        let before: usize = pieces.len();
        let mut changed = false;
        let n = pieces.len();
        for i in 0..n {
            let prev_nl =
                i > 0 && matches!(&pieces[i - 1], Piece::Leaf(l) if l.text.ends_with('\n'));
            let next_nl =
                matches!(pieces.get(i + 1), Some(Piece::Leaf(l)) if l.text.starts_with('\n'));
            if let Piece::Leaf(l) = &mut pieces[i] {
                if is_code(&l.marks) {
                    continue;
                }
                let mut t = collapse_break_spaces(&l.text);
                if prev_nl || (top && i == 0) {
                    t = t.trim_start_matches([' ', '\t']).to_string();
                }
                if next_nl || (top && i + 1 == n) {
                    t = t.trim_end_matches([' ', '\t']).to_string();
                }
                if top && i == 0 {
                    t = t.trim_start_matches(['\n', ' ', '\t']).to_string();
                }
                if top && i + 1 == n {
                    t = t.trim_end_matches(['\n', ' ', '\t']).to_string();
                }
                if t != l.text {
                    l.text = t;
                    changed = true;
                }
            }
        }
        pieces.retain(|p| !matches!(p, Piece::Leaf(l) if l.text.is_empty()));
        if !changed && pieces.len() == before {
            break;
        }
    }
    // Assemble: merge leaves, put text nodes around elements.
    let mut nodes: Vec<Node> = Vec::new();
    let mut leaves: Vec<Leaf> = Vec::new();
    let flush = |leaves: &mut Vec<Leaf>, nodes: &mut Vec<Node>| {
        let mut merged: Vec<Leaf> = Vec::new();
        for l in leaves.drain(..) {
            if l.text.is_empty() {
                continue;
            }
            match merged.last_mut() {
                Some(last) if last.marks == l.marks => last.text.push_str(&l.text),
                _ => merged.push(l),
            }
        }
        if merged.is_empty() {
            merged.push(Leaf::default());
        }
        nodes.push(Node::Text(Text {
            key: None,
            leaves: merged,
        }));
    };
    for p in pieces {
        match p {
            Piece::Leaf(l) => leaves.push(l),
            Piece::El(e) => {
                flush(&mut leaves, &mut nodes);
                nodes.push(Node::Inline(e));
            }
        }
    }
    flush(&mut leaves, &mut nodes);
    nodes
}

fn collapse_break_spaces(t: &str) -> String {
    if !t.contains('\n') {
        return t.to_string();
    }
    t.split('\n')
        .map(|s| s.trim_matches([' ', '\t']))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------
// Rendering.

#[derive(Default)]
struct BlockState {
    /// Marker of the list rendered just before, so that two lists in a row stay apart.
    prev_list: Option<char>,
}

/// An inline node where a block was expected, written as a paragraph.
#[inline(never)]
fn render_loose_inline(node: &Node) -> String {
    render_inline(std::slice::from_ref(node), InlineCtx::Paragraph)
}

fn render_blocks(nodes: &[Node]) -> String {
    render_blocks_in(nodes, false)
}

/// Renders blocks; `in_item` writes a list that follows a paragraph tight, as in list items.
fn render_blocks_in(nodes: &[Node], in_item: bool) -> String {
    let mut out = String::new();
    let mut state = BlockState::default();
    let mut prev_paragraph = false;
    for node in nodes {
        let (rendered, kind) = match node {
            Node::Block(e) => (render_block(e, &mut state), e.kind.as_str()),
            other => {
                state.prev_list = None;
                (Some(render_loose_inline(other)), "paragraph")
            }
        };
        let Some(s) = rendered.filter(|s| !s.is_empty()) else {
            continue;
        };
        if !out.is_empty() {
            // A list right after a paragraph is written tight ("- a\n  - b") when it can
            // interrupt the paragraph: bullets, or numbering from 1, with a non-empty item.
            let first = s.lines().next().unwrap_or("");
            let interrupts = (kind == "list-unordered"
                || kind == "list-tasks"
                || (kind == "list-ordered" && first.starts_with("1")))
                && first.trim_end().contains(' ');
            out.push_str(if in_item && prev_paragraph && interrupts {
                "\n"
            } else {
                "\n\n"
            });
        }
        out.push_str(&s);
        prev_paragraph = kind == "paragraph";
    }
    out
}

/// Renders one block. Each kind has its own function, so that this one, which is on the
/// path of every nested block, keeps a small stack frame.
fn render_block(e: &Element, state: &mut BlockState) -> Option<String> {
    let prev_list = state.prev_list.take();
    let out = match e.kind.as_str() {
        "paragraph" => render_inline(e.children(), InlineCtx::Paragraph),
        "heading-1" | "heading-2" | "heading-3" => render_heading(e),
        "list-unordered" | "list-tasks" | "list-ordered" => {
            let (out, marker) = render_list(e, prev_list)?;
            state.prev_list = Some(marker);
            out
        }
        "blockquote" => render_quote(e),
        "code" => render_code(e),
        "divider" => "***".into(),
        "hint" => render_hint(e),
        "tabs" => render_tabs(e),
        "expandable" => render_expandable(e),
        "embed" => format!(
            "{{% embed url={} %}}",
            quote_attr(e.data_str("url").unwrap_or(""))
        ),
        "file" => render_file(e)?,
        "content-ref" => render_content_ref(e)?,
        "images" => render_images(e),
        "table" => render_table(e)?,
        _ => render_unknown(e)?,
    };
    Some(out)
}

#[inline(never)]
fn render_heading(e: &Element) -> String {
    let level = e.kind[8..].parse::<usize>().unwrap_or(1);
    let text = render_inline(e.children(), InlineCtx::Line);
    let id = e
        .data_str("id")
        .filter(|id| is_anchor(id))
        .map(|id| format!(" {{#{id}}}"))
        .unwrap_or_default();
    format!("{} {}{}", "#".repeat(level), text, id)
}

/// A list and the marker it used.
#[inline(never)]
fn render_list(e: &Element, prev_list: Option<char>) -> Option<(String, char)> {
    let ordered = e.kind == "list-ordered";
    let marker = match (ordered, prev_list) {
        (false, Some('-')) => '*',
        (false, _) => '-',
        (true, Some('.')) => ')',
        (true, _) => '.',
    };
    let start = e.data.get("start").and_then(Value::as_u64).unwrap_or(1);
    let mut items = Vec::new();
    for (i, item) in e.children().iter().enumerate() {
        let Some(item) = item.element() else { continue };
        let prefix = if ordered {
            format!("{}{} ", start + i as u64, marker)
        } else {
            format!("{marker} ")
        };
        let task = if e.kind == "list-tasks" {
            if item
                .data
                .get("checked")
                .and_then(Value::as_bool)
                .unwrap_or(false)
            {
                "[x] "
            } else {
                "[ ] "
            }
        } else {
            ""
        };
        let body = render_blocks_in(item.children(), true);
        let first_kind = item
            .children()
            .first()
            .and_then(Node::element)
            .map(|b| b.kind.as_str());
        let starts_with_text = first_kind == Some("paragraph");
        // A task marker must be followed by text, and a nested list or a divider on
        // the marker's line could read as a divider ("- - -"): those blocks go on the
        // next lines.
        let own_line = matches!(
            first_kind,
            Some("list-unordered" | "list-ordered" | "list-tasks" | "divider")
        );
        let text = if body.is_empty()
            || (task.is_empty() && !own_line)
            || (!task.is_empty() && starts_with_text)
        {
            format!("{task}{body}")
        } else {
            format!("{}\n{body}", task.trim_end())
        };
        items.push(prefix_lines(&text, &prefix, &" ".repeat(prefix.len())));
    }
    if items.is_empty() {
        return None;
    }
    Some((items.join("\n"), marker))
}

#[inline(never)]
fn render_quote(e: &Element) -> String {
    prefix_lines(&render_blocks(e.children()), "> ", "> ")
}

#[inline(never)]
fn render_hint(e: &Element) -> String {
    let style = e.data_str("style").unwrap_or("info");
    container(
        &format!("{{% hint style={} %}}", quote_attr(style)),
        &render_blocks(e.children()),
        "{% endhint %}",
    )
}

#[inline(never)]
fn render_tabs(e: &Element) -> String {
    let tabs: Vec<String> = e
        .children()
        .iter()
        .filter_map(Node::element)
        .map(|t| {
            let title = t.data_str("title").unwrap_or("");
            container(
                &format!("{{% tab title={} %}}", quote_attr(title)),
                &render_blocks(t.children()),
                "{% endtab %}",
            )
        })
        .collect();
    format!("{{% tabs %}}\n{}\n{{% endtabs %}}", tabs.join("\n\n"))
}

#[inline(never)]
fn render_expandable(e: &Element) -> String {
    let title = e
        .fragment("expandable-title")
        .and_then(|f| f.nodes.first())
        .and_then(Node::element)
        .map(|p| render_inline(p.children(), InlineCtx::Line))
        .unwrap_or_default();
    let body = e
        .fragment("expandable-body")
        .map(|f| render_blocks(&f.nodes))
        .unwrap_or_default();
    let mut out = format!("<details>\n\n<summary>{title}</summary>\n\n");
    if !body.is_empty() {
        out.push_str(&body);
        out.push_str("\n\n");
    }
    out.push_str("</details>");
    out
}

#[inline(never)]
fn render_file(e: &Element) -> Option<String> {
    let r: Option<ContentRef> = e
        .data
        .get("ref")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let r = r?;
    Some(format!(
        "{{% file src={} %}}\n\n{{% endfile %}}",
        quote_attr(&ref_href(&r))
    ))
}

#[inline(never)]
fn render_content_ref(e: &Element) -> Option<String> {
    let r: ContentRef = e
        .data
        .get("ref")
        .and_then(|v| serde_json::from_value(v.clone()).ok())?;
    let href = ref_href(&r);
    Some(format!(
        "{{% content-ref url={} %}}\n[{}]({})\n{{% endcontent-ref %}}",
        quote_attr(&href),
        escape_text(&href, InlineCtx::Line),
        link_dest(&href)
    ))
}

#[inline(never)]
fn render_images(e: &Element) -> String {
    let imgs: Vec<String> = e
        .children()
        .iter()
        .filter_map(Node::element)
        .filter_map(render_image)
        .collect();
    // Figures are HTML blocks and must stand alone; plain images share one paragraph.
    let mut parts: Vec<String> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    for img in imgs {
        if img.starts_with("<figure>") {
            if !run.is_empty() {
                parts.push(run.join("\n"));
                run.clear();
            }
            parts.push(img);
        } else {
            run.push(img);
        }
    }
    if !run.is_empty() {
        parts.push(run.join("\n"));
    }
    parts.join("\n\n")
}

/// Unknown or unsupported blocks: keep their text rather than lose it silently.
#[inline(never)]
fn render_unknown(e: &Element) -> Option<String> {
    // Unknown or unsupported blocks: keep their text rather than lose it silently.
    let text = Node::Block(e.clone()).plain_text();
    if text.is_empty() {
        return None;
    }
    Some(escape_text(&text, InlineCtx::Paragraph))
}

fn container(open: &str, body: &str, close: &str) -> String {
    if body.is_empty() {
        format!("{open}\n\n{close}")
    } else {
        format!("{open}\n\n{body}\n\n{close}")
    }
}

fn prefix_lines(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let p = if i == 0 { first } else { rest };
        if line.is_empty() {
            out.push_str(p.trim_end());
        } else {
            out.push_str(p);
            out.push_str(line);
        }
    }
    out
}

fn render_code(e: &Element) -> String {
    let lines: Vec<String> = e
        .children()
        .iter()
        .map(|l| match l.element() {
            Some(el) => el
                .children()
                .iter()
                .map(Node::plain_text_raw)
                .collect::<String>(),
            None => l.plain_text_raw(),
        })
        .collect();
    let body = lines.join("\n");
    let syntax = e
        .data_str("syntax")
        .unwrap_or("")
        .replace(char::is_whitespace, "");
    let mut info = syntax.clone();
    let mut push_attr = |k: &str, v: String| {
        if !info.is_empty() {
            info.push(' ');
        }
        info.push_str(&format!("{k}={}", quote_attr(&v)));
    };
    if let Some(t) = e.data_str("title") {
        push_attr("title", t.to_string());
    }
    if let Some(o) = e.data_str("overflow").filter(|o| *o == "wrap") {
        push_attr("overflow", o.to_string());
    }
    for k in ["lineNumbers", "fullWidth"] {
        if let Some(b) = e.data.get(k).and_then(Value::as_bool) {
            push_attr(k, b.to_string());
        }
    }
    // The parser unescapes backslashes and entities in info strings: escape them once more.
    let info = info.replace('\\', "\\\\").replace('&', "\\&");
    let fence_char = if info.contains('`') { '~' } else { '`' };
    let longest = body
        .split('\n')
        .map(|l| {
            l.trim_start()
                .chars()
                .take_while(|c| *c == fence_char)
                .count()
        })
        .max()
        .unwrap_or(0);
    let fence = fence_char.to_string().repeat(longest.max(2) + 1);
    format!("{fence}{info}\n{body}\n{fence}")
}

impl Node {
    /// Text of the node with nothing trimmed (code lines keep their spaces).
    fn plain_text_raw(&self) -> String {
        match self {
            Node::Text(t) => t.leaves.iter().map(|l| l.text.as_str()).collect(),
            Node::Inline(e) | Node::Block(e) => {
                e.children().iter().map(Node::plain_text_raw).collect()
            }
        }
    }
}

fn render_image(img: &Element) -> Option<String> {
    let r: ContentRef = serde_json::from_value(img.data.get("ref")?.clone()).ok()?;
    let href = ref_href(&r);
    let alt = img.data_str("alt").unwrap_or("");
    let caption = img
        .fragment("caption")
        .and_then(|f| f.nodes.first())
        .and_then(Node::element)
        .map(|p| render_inline(p.children(), InlineCtx::Line))
        .filter(|c| !c.is_empty());
    Some(match caption {
        Some(c) => format!(
            "<figure><img src={} alt={}><figcaption><p>{c}</p></figcaption></figure>",
            quote_attr(&href),
            quote_attr(alt)
        ),
        None => format!(
            "![{}]({})",
            escape_text(alt, InlineCtx::Line),
            link_dest(&href)
        ),
    })
}

fn render_table(e: &Element) -> Option<String> {
    let view = e.data.get("view")?;
    let columns: Vec<&str> = view
        .get("columns")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if columns.is_empty() {
        return None;
    }
    let definition = e.data.get("definition").and_then(Value::as_object);
    let def = |c: &str, k: &str| {
        definition
            .and_then(|d| d.get(c))
            .and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut records: Vec<(&String, &Value)> = e
        .data
        .get("records")
        .and_then(Value::as_object)
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    records.sort_by(|a, b| {
        let oa = a.1.get("orderIndex").and_then(Value::as_str).unwrap_or("");
        let ob = b.1.get("orderIndex").and_then(Value::as_str).unwrap_or("");
        oa.cmp(ob).then(a.0.cmp(b.0))
    });
    let cell = |v: Option<&Value>| -> String {
        match v {
            Some(Value::String(s)) => match e
                .fragments
                .iter()
                .flatten()
                .find(|f| f.fragment.as_deref() == Some(s))
            {
                Some(f) => f
                    .nodes
                    .iter()
                    .filter_map(Node::element)
                    .map(|p| render_inline(p.children(), InlineCtx::Cell))
                    .collect::<Vec<_>>()
                    .join("<br>"),
                None => escape_text(s, InlineCtx::Cell),
            },
            Some(Value::Null) | None => String::new(),
            Some(other) => escape_text(&other.to_string(), InlineCtx::Cell),
        }
    };
    let row = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut lines = vec![row(columns
        .iter()
        .map(|c| escape_text(&def(c, "title"), InlineCtx::Cell))
        .collect())];
    lines.push(row(columns
        .iter()
        .map(|c| match def(c, "textAlignment").as_str() {
            "center" => ":-:".to_string(),
            "right" => "--:".to_string(),
            _ => "---".to_string(),
        })
        .collect()));
    for (_, rec) in records {
        let values = rec.get("values");
        lines.push(row(columns
            .iter()
            .map(|c| cell(values.and_then(|v| v.get(*c))))
            .collect()));
    }
    Some(lines.join("\n"))
}

fn link_dest(href: &str) -> String {
    if href.is_empty() || href.contains([' ', '(', ')', '<', '>', '\n']) {
        let mut out = String::from("<");
        for c in href.chars() {
            if matches!(c, '<' | '>' | '\\' | '|' | '&') {
                out.push('\\');
            }
            out.push(if c == '\n' { ' ' } else { c });
        }
        out.push('>');
        out
    } else {
        href.replace('\\', "\\\\")
            .replace('|', "\\|")
            .replace('&', "\\&")
    }
}

/// Where inline content is rendered: it decides how line breaks are written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum InlineCtx {
    /// A paragraph: breaks are backslash line ends.
    Paragraph,
    /// A single line (heading, summary, caption): breaks are `<br>`.
    Line,
    /// A table cell: like a line, and `|` must stay escaped.
    Cell,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Markdown,
    Html,
}

/// Renders inline nodes; markdown delimiters when they re-parse to the same nodes, else HTML.
fn render_inline(nodes: &[Node], ctx: InlineCtx) -> String {
    let pretty = render_inline_styled(nodes, Style::Markdown, ctx);
    let reparsed = reparse_inline(&pretty, ctx);
    if reparsed.as_deref() == Some(nodes) {
        return pretty;
    }
    let html = render_inline_styled(nodes, Style::Html, ctx);
    if reparsed.is_some() && reparsed == reparse_inline(&html, ctx) {
        return pretty;
    }
    html
}

fn reparse_inline(text: &str, ctx: InlineCtx) -> Option<Vec<Node>> {
    if text.is_empty() {
        return Some(vec![Node::Text(Text {
            key: None,
            leaves: vec![Leaf::default()],
        })]);
    }
    let src = if ctx == InlineCtx::Paragraph {
        text.to_string()
    } else {
        text.replace('\n', " ")
    };
    let scanner = Scanner {
        links: &DefaultLinks,
        too_deep: RefCell::new(None),
    };
    let mut blocks = scanner.cmark(&src, false, 1);
    if blocks.len() != 1 || scanner.failed() {
        return None;
    }
    match blocks.pop() {
        Some(Node::Block(e)) if e.kind == "paragraph" => e.nodes,
        _ => None,
    }
}

fn render_inline_styled(nodes: &[Node], style: Style, ctx: InlineCtx) -> String {
    let mut out = String::new();
    let mut leaves: Vec<&Leaf> = Vec::new();
    let flush = |leaves: &mut Vec<&Leaf>, out: &mut String| {
        if !leaves.is_empty() {
            let owned: Vec<Leaf> = leaves.drain(..).cloned().collect();
            out.push_str(&render_marked(&owned, &[], style, ctx));
        }
    };
    for n in nodes {
        match n {
            Node::Text(t) => leaves.extend(t.leaves.iter()),
            Node::Inline(e) => {
                flush(&mut leaves, &mut out);
                out.push_str(&render_inline_element(e, style, ctx));
            }
            Node::Block(e) => {
                flush(&mut leaves, &mut out);
                out.push_str(&render_inline_styled(e.children(), style, ctx));
            }
        }
    }
    flush(&mut leaves, &mut out);
    out
}

fn render_inline_element(e: &Element, style: Style, ctx: InlineCtx) -> String {
    let r: Option<ContentRef> = e
        .data
        .get("ref")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    match (e.kind.as_str(), r) {
        ("link", Some(r)) => format!(
            "[{}]({})",
            render_inline_styled(e.children(), style, ctx),
            link_dest(&ref_href(&r))
        ),
        ("inline-image", Some(r)) => format!(
            "![{}]({})",
            escape_text(e.data_str("caption").unwrap_or(""), InlineCtx::Line),
            link_dest(&ref_href(&r))
        ),
        ("emoji", _) => e
            .data_str("code")
            .and_then(|c| u32::from_str_radix(c, 16).ok())
            .and_then(char::from_u32)
            .map(|c| c.to_string())
            .unwrap_or_default(),
        _ => render_inline_styled(e.children(), style, ctx),
    }
}

/// Renders leaves, nesting marks in canonical order (code innermost).
fn render_marked(leaves: &[Leaf], opened: &[&Mark], style: Style, ctx: InlineCtx) -> String {
    let pending = |l: &Leaf| -> Vec<Mark> {
        let mut p: Vec<Mark> = l
            .marks
            .iter()
            .filter(|m| !opened.contains(m))
            .cloned()
            .collect();
        p.sort_by_key(mark_rank);
        p
    };
    let mut out = String::new();
    let mut i = 0;
    while i < leaves.len() {
        let p = pending(&leaves[i]);
        let Some(m) = p.first() else {
            out.push_str(&escape_text(&leaves[i].text, ctx));
            i += 1;
            continue;
        };
        let mut j = i;
        while j < leaves.len()
            && leaves[j].marks.contains(m)
            && (m.kind != "code" || pending(&leaves[j]).len() == 1)
        {
            j += 1;
        }
        let j = j.max(i + 1);
        if m.kind == "code" {
            let text: String = leaves[i..j]
                .iter()
                .map(|l| l.text.replace('\n', " "))
                .collect();
            out.push_str(&wrap_code(&text, style, ctx));
        } else {
            let mut now: Vec<&Mark> = opened.to_vec();
            now.push(m);
            let inner = render_marked(&leaves[i..j], &now, style, ctx);
            out.push_str(&wrap_mark(m, &inner, style));
        }
        i = j;
    }
    out
}

fn wrap_code(text: &str, style: Style, ctx: InlineCtx) -> String {
    if text.is_empty() {
        return String::new();
    }
    if style == Style::Html || (ctx == InlineCtx::Cell && text.contains('|')) {
        return format!("<code>{}</code>", escape_text(text, InlineCtx::Line));
    }
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = text.starts_with('`')
        || text.ends_with('`')
        || (text.starts_with(' ') && text.ends_with(' ') && !text.trim().is_empty());
    if pad {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

fn wrap_mark(m: &Mark, inner: &str, style: Style) -> String {
    if inner.is_empty() {
        return String::new();
    }
    let (md, tag) = match m.kind.as_str() {
        "bold" => (Some("**"), "strong"),
        "italic" => (Some("*"), "em"),
        "strikethrough" => (Some("~~"), "s"),
        "keyboard" => (None, "kbd"),
        "superscript" => (None, "sup"),
        "subscript" => (None, "sub"),
        "color" => {
            let get = |k: &str| {
                m.data
                    .as_ref()
                    .and_then(|d| d.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or("default")
                    .to_string()
            };
            let mut style_attr = String::new();
            let (text, bg) = (get("text"), get("background"));
            if text != "default" {
                style_attr.push_str(&format!("color:{text};"));
            }
            if bg != "default" {
                style_attr.push_str(&format!("background-color:{bg};"));
            }
            return format!("<mark style={}>{inner}</mark>", quote_attr(&style_attr));
        }
        _ => return inner.to_string(),
    };
    match (style, md) {
        (Style::Markdown, Some(d)) => format!("{d}{inner}{d}"),
        _ => format!("<{tag}>{inner}</{tag}>"),
    }
}

/// Escapes text so that it parses back as the same text.
fn escape_text(text: &str, ctx: InlineCtx) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut line_start = true;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            match ctx {
                InlineCtx::Paragraph => out.push_str("\\\n"),
                _ => out.push_str("<br>"),
            }
            line_start = true;
            i += 1;
            continue;
        }
        if line_start {
            if matches!(c, '-' | '+' | '=') {
                out.push('\\');
            }
            if c.is_ascii_digit() {
                // "1." or "1)" at a line start would begin an ordered list.
                let mut j = i;
                while j < chars.len() && chars[j].is_ascii_digit() {
                    out.push(chars[j]);
                    j += 1;
                }
                if j < chars.len() && matches!(chars[j], '.' | ')') {
                    out.push('\\');
                }
                line_start = false;
                i = j;
                continue;
            }
        }
        if matches!(
            c,
            '\\' | '`'
                | '*'
                | '_'
                | '['
                | ']'
                | '<'
                | '>'
                | '|'
                | '~'
                | '{'
                | '}'
                | '#'
                | '&'
                | '!'
                | '$'
        ) {
            out.push('\\');
        }
        out.push(c);
        line_start = false;
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(md: &str) -> String {
        let once = normalize_markdown(md);
        let twice = normalize_markdown(&once);
        assert_eq!(once, twice, "not stable for {md:?}");
        once
    }

    fn json(md: &str) -> Value {
        serde_json::to_value(markdown_to_document(md)).unwrap()
    }

    #[test]
    fn basic_blocks() {
        let md = "# Title\n\nSome **bold** and *italic* and `code` and ~~gone~~.\n\n## Sub {#custom}\n\n- a\n- b\n  - nested\n\n1. one\n2. two\n\n- [ ] todo\n- [x] done\n\n> quoted\n\n***\n";
        let out = roundtrip(md);
        assert_eq!(out, md);
        let v = json(md);
        assert_eq!(v["nodes"][0]["type"], "heading-1");
        assert_eq!(v["nodes"][2]["data"]["id"], "custom");
        assert_eq!(
            v["nodes"][1]["nodes"][0]["leaves"][1]["marks"][0]["type"],
            "bold"
        );
        assert_eq!(v["nodes"][3]["type"], "list-unordered");
        assert_eq!(v["nodes"][4]["type"], "list-ordered");
        assert_eq!(v["nodes"][5]["type"], "list-tasks");
        assert_eq!(v["nodes"][5]["nodes"][1]["data"]["checked"], true);
        assert_eq!(v["nodes"][6]["type"], "blockquote");
        assert_eq!(v["nodes"][7]["type"], "divider");
        assert_eq!(v["nodes"][7]["isVoid"], true);
    }

    #[test]
    fn code_blocks_with_titles() {
        let md = "```js title=\"app.js\"\nconst a = 1;\n\nconsole.log(a);\n```\n";
        assert_eq!(roundtrip(md), md);
        let v = json(md);
        assert_eq!(v["nodes"][0]["data"]["syntax"], "js");
        assert_eq!(v["nodes"][0]["data"]["title"], "app.js");
        assert_eq!(v["nodes"][0]["nodes"].as_array().unwrap().len(), 3);
        assert_eq!(v["nodes"][0]["nodes"][0]["type"], "code-line");
        let wrapped = "{% code title=\"x.py\" overflow=\"wrap\" lineNumbers=\"true\" %}\n```python\nprint(1)\n```\n{% endcode %}\n";
        let v = json(wrapped);
        assert_eq!(v["nodes"][0]["data"]["title"], "x.py");
        assert_eq!(v["nodes"][0]["data"]["lineNumbers"], true);
        assert_eq!(
            roundtrip(wrapped),
            "```python title=\"x.py\" overflow=\"wrap\" lineNumbers=\"true\"\nprint(1)\n```\n"
        );
        // Fences inside code are lengthened.
        let nested = "````md\n```\ninner\n```\n````\n";
        assert_eq!(roundtrip(nested), nested);
    }

    #[test]
    fn gitbook_containers() {
        let md = "{% hint style=\"warning\" %}\nCareful **now**.\n{% endhint %}\n\n{% tabs %}\n{% tab title=\"First\" %}\nOne\n{% endtab %}\n{% tab title=\"Second\" %}\n```sh\nls\n```\n{% endtab %}\n{% endtabs %}\n\n<details>\n<summary>More *info*</summary>\nHidden text.\n</details>\n\n{% embed url=\"https://www.youtube.com/watch?v=x\" %}\n";
        let out = roundtrip(md);
        let v = json(&out);
        assert_eq!(v["nodes"][0]["type"], "hint");
        assert_eq!(v["nodes"][0]["data"]["style"], "warning");
        assert_eq!(v["nodes"][1]["type"], "tabs");
        assert_eq!(v["nodes"][1]["nodes"][1]["data"]["title"], "Second");
        assert_eq!(v["nodes"][1]["nodes"][1]["nodes"][0]["type"], "code");
        assert_eq!(v["nodes"][2]["type"], "expandable");
        assert_eq!(
            v["nodes"][2]["fragments"][0]["fragment"],
            "expandable-title"
        );
        assert_eq!(
            v["nodes"][2]["fragments"][1]["nodes"][0]["type"],
            "paragraph"
        );
        assert_eq!(v["nodes"][3]["type"], "embed");
        assert_eq!(
            v["nodes"][3]["data"]["url"],
            "https://www.youtube.com/watch?v=x"
        );
        assert_eq!(json(md), v);
        // Tags inside fenced code are code.
        let code = "```\n{% hint style=\"info\" %}\n```\n";
        assert_eq!(json(code)["nodes"][0]["type"], "code");
        // Nested hints in tabs.
        let nested = "{% tabs %}\n{% tab title=\"A\" %}\n{% hint style=\"info\" %}\nx\n{% endhint %}\n{% endtab %}\n{% endtabs %}\n";
        let v = json(nested);
        assert_eq!(v["nodes"][0]["nodes"][0]["nodes"][0]["type"], "hint");
        roundtrip(nested);
    }

    #[test]
    fn tables() {
        let md = "| Name | Value |\n| --- | --: |\n| **a** | 1 |\n| b \\| c |  |\n";
        let out = roundtrip(md);
        let v = json(md);
        let t = &v["nodes"][0];
        assert_eq!(t["type"], "table");
        assert_eq!(t["isVoid"], true);
        assert_eq!(t["data"]["view"]["type"], "grid");
        assert_eq!(t["data"]["definition"]["c1"]["textAlignment"], "right");
        assert_eq!(t["data"]["definition"]["c0"]["title"], "Name");
        assert_eq!(t["data"]["records"]["r1"]["values"]["c0"], "r1-c0");
        assert!(t["data"]["records"]["r1"]["values"].get("c1").is_none());
        assert_eq!(
            out,
            "| Name | Value |\n| --- | --: |\n| **a** | 1 |\n| b \\| c |  |\n"
        );
    }

    #[test]
    fn links_images_and_files() {
        let md = "See [the page](/pages/abc123), [anchor](/pages/abc123#setup), [site](https://example.com) and [here](#top).\n\n![Diagram](/files/f1)\n\nInline ![icon](https://x.y/i.png) image.\n\n{% file src=\"/files/f2\" %}\n\n{% endfile %}\n\n{% content-ref url=\"/pages/p2\" %}\n[/pages/p2](/pages/p2)\n{% endcontent-ref %}\n";
        assert_eq!(roundtrip(md), md);
        let v = json(md);
        let p = &v["nodes"][0]["nodes"];
        assert_eq!(p[1]["type"], "link");
        assert_eq!(
            p[1]["data"]["ref"],
            serde_json::json!({"kind": "page", "page": "abc123"})
        );
        assert_eq!(p[3]["data"]["ref"]["kind"], "anchor");
        assert_eq!(p[5]["data"]["ref"]["kind"], "url");
        assert_eq!(
            p[7]["data"]["ref"],
            serde_json::json!({"kind": "anchor", "anchor": "top"})
        );
        assert_eq!(v["nodes"][1]["type"], "images");
        assert_eq!(v["nodes"][1]["nodes"][0]["data"]["ref"]["kind"], "file");
        assert_eq!(v["nodes"][2]["nodes"][1]["type"], "inline-image");
        assert_eq!(v["nodes"][3]["type"], "file");
        assert_eq!(v["nodes"][4]["type"], "content-ref");
    }

    #[test]
    fn figures_keep_captions() {
        let md = "<figure><img src=\"/files/f1\" alt=\"A\"><figcaption><p>The <em>caption</em></p></figcaption></figure>\n";
        let v = json(md);
        assert_eq!(
            v["nodes"][0]["nodes"][0]["fragments"][0]["fragment"],
            "caption"
        );
        assert_eq!(roundtrip(md), "<figure><img src=\"/files/f1\" alt=\"A\"><figcaption><p>The *caption*</p></figcaption></figure>\n");
    }

    #[test]
    fn resolver_can_drop_links() {
        struct Drop;
        impl LinkResolver for Drop {
            fn resolve(&self, href: &str) -> Option<LinkTarget> {
                (href == "missing.md").then_some(LinkTarget::Text)
            }
        }
        let out = normalize_markdown_with("A [broken](missing.md) link.\n", &Drop);
        assert_eq!(out, "A broken link.\n");
    }

    #[test]
    fn tricky_inline_content_is_stable() {
        for md in [
            "**a **b",
            "*a*b*c*",
            "x<strong>a </strong>y",
            "1. not a list",
            "\\# not a heading",
            "a  \nb",
            "a\\\nb",
            "`` a`b ``",
            "***both***",
            "**bold *and italic* inside**",
            "<kbd>Ctrl</kbd> + <kbd>C</kbd>",
            "<mark style=\"color:red;\">red</mark>",
            "[**bold link**](https://x.y)",
            "{% hint %} in text",
            "&copy; &amp; entities",
            "trailing backslash \\",
            "<span>html</span>",
            "- [ ]",
            "-",
            "> a\n\n> b",
            "- a\n\n\n- b",
            "* a\n- b",
            "<!-- comment -->\n\ntext",
            "Setext\n===",
            "| a |\n| - |\n| `x|y` |",
        ] {
            roundtrip(md);
        }
    }

    #[test]
    fn empty_and_whitespace() {
        assert_eq!(normalize_markdown(""), "");
        assert_eq!(normalize_markdown("\n\n  \n"), "");
        assert_eq!(markdown_to_document("").nodes.len(), 0);
    }
}
