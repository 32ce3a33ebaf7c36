//! The line scanner: container tags (`{% hint %}`, `{% tabs %}`, `{% stepper %}`…) and
//! `<details>` expandables, found at column 0 outside code; the text between them goes to
//! [`parse`](super::parse).
//!
//! The whole text is split into lines once, with what the scanner needs to know about each
//! (inside code or not, the line that closes it); containers are then parsed as ranges of
//! these lines, so nesting does not make the text parsed again at every level. A tag that
//! is not understood — unknown, unclosed, stray, or with attributes the engine does not
//! know — is kept verbatim as raw content, with the lines it spans.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use serde_json::{json, Map, Value};

use super::html::{self, HNode};
use super::parse::{self, inline_nodes, is_empty_inline, non_empty};
use super::{
    fragment, obj, options, parse_attrs, raw_block, ref_json, split_tag, LinkResolver, LinkTarget,
};
use crate::document::{Element, Node};
use crate::limits::{TooDeep, MAX_DEPTH};
use crate::model::ContentRef;

/// The body GitBook writes in an OpenAPI block whose specification link it could not
/// resolve.
pub(super) const BROKEN_SPEC: &str = "[Broken link](broken-reference)";

/// Parses container tags line by line and hands the text between them to `pulldown-cmark`.
pub(super) struct Scanner<'r> {
    links: &'r dyn LinkResolver,
    /// The first nesting error met; once set, parsing winds down and the parse fails.
    too_deep: RefCell<Option<TooDeep>>,
    /// Footnote definitions of the text (GitBook's annotations): their blocks by label.
    pub footnotes: HashMap<String, Vec<Node>>,
    /// The definitions' markdown, added to each piece of text that refers to one, so that
    /// the CommonMark parser sees the references.
    pub definitions: String,
    /// A paragraph's soft breaks are [`SOFT_BREAK`](super::SOFT_BREAK) rather than spaces.
    pub keep_lines: bool,
}

/// The lines of a text with what the scanner needs to know about them.
pub(super) struct Lines<'a> {
    lines: Vec<&'a str>,
    in_code: Vec<bool>,
    /// For container openers, their closing line (see [`pair_containers`]).
    close: Vec<Option<usize>>,
}

pub(super) fn parse_blocks(
    src: &str,
    links: &dyn LinkResolver,
    keep_lines: bool,
) -> Result<Vec<Node>, TooDeep> {
    let mut scanner = Scanner::standalone(links);
    scanner.keep_lines = keep_lines;
    let text = Lines::new(src);
    let (footnotes, definitions) = footnote_definitions(&scanner, &text);
    scanner.footnotes = footnotes;
    scanner.definitions = definitions;
    let mut nodes = scanner.blocks(&text, 0..text.lines.len(), true, 1, "document");
    if let Some(e) = scanner.too_deep.take() {
        return Err(e);
    }
    parse::merge_adjacent_quotes(&mut nodes);
    Ok(nodes)
}

/// The label of a footnote definition line, `[^label]: …`, and where its text starts.
fn definition_label(line: &str) -> Option<(&str, usize)> {
    let rest = line.strip_prefix("[^")?;
    let end = rest.find("]:")?;
    let label = &rest[..end];
    (!label.is_empty() && !label.contains(char::is_whitespace)).then_some((label, 2 + end + 2))
}

/// The footnote definitions of a text (outside code): a `[^label]: text` line and the
/// lines indented by four spaces after it (blank lines between them included). Their
/// blocks, by label, and their markdown.
fn footnote_definitions(
    scanner: &Scanner<'_>,
    text: &Lines<'_>,
) -> (HashMap<String, Vec<Node>>, String) {
    let mut found = HashMap::new();
    let mut definitions = String::new();
    let mut i = 0;
    while i < text.lines.len() {
        let Some((label, start)) = definition_label(text.lines[i]).filter(|_| !text.in_code[i])
        else {
            i += 1;
            continue;
        };
        let mut body = text.lines[i][start..].trim_start().to_string();
        let mut j = i + 1;
        while j < text.lines.len() {
            if text.lines[j].starts_with("    ") {
                body.push_str(&text.lines[j][4..]);
                j += 1;
            } else if text.blank(j) && text.lines.get(j + 1).is_some_and(|l| l.starts_with("    "))
            {
                body.push('\n');
                j += 1;
            } else {
                break;
            }
        }
        definitions.push_str(&text.text(i..j));
        if !definitions.ends_with('\n') {
            definitions.push('\n');
        }
        definitions.push('\n');
        let lines = Lines::new(&body);
        let nodes = scanner.blocks(&lines, 0..lines.lines.len(), false, 1, "annotation");
        found.entry(label.to_string()).or_insert(nodes);
        i = j;
    }
    (found, definitions)
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
    let (name, _) = split_tag(t)?;
    Some(match name.strip_prefix("end") {
        Some(kind) if !kind.is_empty() => (kind.to_string(), true),
        _ => (name.to_string(), false),
    })
}

/// For each line outside code that opens a container, the line that closes it: the first
/// later line where the closers of its kind outnumber the openers since it. Computed for
/// every container of a text in one pass with a stack per kind (instead of a scan per
/// opener, which made unclosed containers quadratic).
fn pair_containers(lines: &[&str], in_code: &[bool]) -> Vec<Option<usize>> {
    let mut close = vec![None; lines.len()];
    let mut open: HashMap<String, Vec<usize>> = HashMap::new();
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
    let masked = without_containers(lines);
    let src = masked.as_deref().unwrap_or(src);
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

/// The text with its container lines (and an expandable's `<summary>` line) turned into
/// plain text of the same length, or `None` when it has none. The scanner takes those lines
/// out before CommonMark sees the rest; left in, a `</details>` line would open an HTML
/// block running to the next blank line, and a fence inside it would be read differently
/// (a code block ending at a whitespace-only line then took the rest of the text).
fn without_containers(lines: &[&str]) -> Option<String> {
    let mut out: Option<String> = None;
    let mut after_details = false;
    for (j, line) in lines.iter().enumerate() {
        let container = container_line(line);
        let summary = after_details && line.trim_start().starts_with("<summary>");
        if !line.trim().is_empty() {
            after_details = matches!(&container, Some((kind, false)) if kind == "<details>");
        }
        if container.is_none() && !summary {
            if let Some(out) = &mut out {
                out.push_str(line);
            }
            continue;
        }
        let out = out.get_or_insert_with(|| lines[..j].concat());
        let body = line.trim_end_matches(['\n', '\r']);
        out.extend(std::iter::repeat_n('x', body.len()));
        out.push_str(&line[body.len()..]);
    }
    out
}

impl<'a> Lines<'a> {
    fn new(src: &'a str) -> Lines<'a> {
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        let in_code = code_lines(src, &lines);
        let close = pair_containers(&lines, &in_code);
        Lines {
            lines,
            in_code,
            close,
        }
    }

    /// The text of lines `range`.
    fn text(&self, range: Range<usize>) -> String {
        self.lines[range].concat()
    }

    fn blank(&self, j: usize) -> bool {
        self.lines[j].trim().is_empty()
    }
}

/// A container tag met by the scanner: where it is and what it says.
struct TagAt<'t, 'a> {
    text: &'t Lines<'a>,
    /// Its line.
    i: usize,
    /// The end of the range of lines being parsed: it closes before.
    limit: usize,
    /// What follows the tag's name.
    rest: &'t str,
    images: bool,
    /// Depth of the blocks it makes.
    depth: usize,
}

impl TagAt<'_, '_> {
    /// The line that closes it.
    fn close(&self) -> Option<usize> {
        self.text.close[self.i].filter(|e| *e < self.limit)
    }

    /// `key="value"` attributes, each known to the caller: `None` otherwise.
    fn attrs(&self, known: &[&str]) -> Option<Vec<(String, String)>> {
        let attrs = parse_attrs(self.rest)?;
        attrs
            .iter()
            .all(|(k, _)| known.contains(&k.as_str()))
            .then_some(attrs)
    }

    /// The inner lines, between the tag and `end`.
    fn inner(&self, end: usize) -> Range<usize> {
        self.i + 1..end
    }

    /// The line that ends a tag whose closing tag `end_name` is optional, and the inner
    /// lines before it: the closing tag when one comes before any other tag (outside
    /// code), else just the tag's own line.
    fn optional_close(&self, end_name: &str) -> (usize, Range<usize>) {
        for j in self.i + 1..self.limit {
            if !self.text.in_code[j] && self.text.lines[j].starts_with("{%") {
                if split_tag(self.text.lines[j]).is_some_and(|(n, _)| n == end_name) {
                    return (j + 1, self.i + 1..j);
                }
                break;
            }
        }
        (self.i + 1, self.i + 1..self.i + 1)
    }
}

fn attr<'v>(attrs: &'v [(String, String)], key: &str) -> Option<&'v str> {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn bool_attr(v: &str) -> Option<bool> {
    match v {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Applies the attributes of a code block (`{% code %}` or an older fence info string) to
/// its data; false when one is unknown or invalid.
pub(super) fn code_attrs(data: &mut Map<String, Value>, attrs: &[(String, String)]) -> bool {
    for (k, v) in attrs {
        let value = match k.as_str() {
            "title" => json!(v),
            "overflow" if v == "wrap" || v == "scroll" => json!(v),
            "lineNumbers" | "fullWidth" | "expandable" => match bool_attr(v) {
                Some(b) => json!(b),
                None => return false,
            },
            "collapsedLineCount" => match v.parse::<u64>() {
                Ok(n) if n >= 1 && n.to_string() == *v => json!(n),
                _ => return false,
            },
            _ => return false,
        };
        data.insert(k.clone(), value);
    }
    true
}

impl<'r> Scanner<'r> {
    /// A scanner for parsing a piece of content on its own (verifying what was written).
    pub(super) fn standalone(links: &'r dyn LinkResolver) -> Scanner<'r> {
        Scanner {
            links,
            too_deep: RefCell::new(None),
            footnotes: HashMap::new(),
            definitions: String::new(),
            keep_lines: false,
        }
    }

    /// Records a nesting error: the parse will fail with it.
    pub(super) fn fail(&self, within: &str) {
        let mut e = self.too_deep.borrow_mut();
        if e.is_none() {
            *e = Some(TooDeep::new(within));
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.too_deep.borrow().is_some()
    }

    /// Whether blocks may be made at `depth`; records an error naming `within` if not.
    pub(super) fn enter(&self, depth: usize, within: &str) -> bool {
        if self.failed() {
            return false;
        }
        if depth > MAX_DEPTH {
            self.fail(within);
            return false;
        }
        true
    }

    pub(super) fn resolve(&self, href: &str) -> LinkTarget {
        self.links
            .resolve(href)
            .unwrap_or_else(|| LinkTarget::Ref(super::default_ref(href)))
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
                let line = text.lines[i];
                let taken = if line.starts_with("{%") {
                    Some(
                        self.container(text, i, range.end, images, depth)
                            .unwrap_or_else(|| raw_lines(text, i, range.end)),
                    )
                } else if line.starts_with("<details") {
                    self.details(text, i, range.end, depth)
                } else {
                    None
                };
                if let Some((nodes, next)) = taken {
                    let siblings = parse::Siblings {
                        before: i > range.start && (!out.is_empty() || !buf.trim().is_empty()),
                        after: true,
                    };
                    let before = !out.is_empty();
                    out.extend(parse::cmark_between(
                        self,
                        &buf,
                        images,
                        depth,
                        Some(parse::Siblings { before, ..siblings }),
                    ));
                    buf.clear();
                    out.extend(nodes);
                    i = next;
                    continue;
                }
            }
            buf.push_str(text.lines[i]);
            i += 1;
        }
        let before = !out.is_empty();
        out.extend(parse::cmark_between(
            self,
            &buf,
            images,
            depth,
            Some(parse::Siblings {
                before,
                after: false,
            }),
        ));
        out
    }

    /// Parses the container tag at line `i` (its blocks at `depth`), returning its nodes
    /// and the next line; `None` when it is not understood. Each kind has its own
    /// function, so that this one, on the path of every nested container, keeps a small
    /// stack frame.
    fn container(
        &self,
        text: &Lines<'_>,
        i: usize,
        limit: usize,
        images: bool,
        depth: usize,
    ) -> Option<(Vec<Node>, usize)> {
        let (name, rest) = split_tag(text.lines[i])?;
        let at = TagAt {
            text,
            i,
            limit,
            rest,
            images,
            depth,
        };
        match name {
            "hint" => self.hint(&at),
            "tabs" => self.items(&at, &TABS),
            "stepper" => self.items(&at, &STEPPER),
            "columns" => self.items(&at, &COLUMNS),
            "updates" => self.items(&at, &UPDATES),
            "if" => self.if_block(&at),
            "prompt" => self.prompt(&at),
            "code" => self.code_tag(&at),
            "embed" => self.embed(&at),
            "file" => self.file(&at),
            "content-ref" => self.content_ref(&at),
            "include" => self.include(&at),
            "openapi" => self.swagger(&at),
            "openapi-operation" | "openapi-webhook" | "openapi-schemas" => self.openapi(&at, name),
            _ if name.starts_with('@') => self.integration(&at, name),
            _ => None,
        }
    }

    #[inline(never)]
    fn hint(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let attrs = at.attrs(&["style", "icon"])?;
        let style = attr(&attrs, "style").unwrap_or("info");
        if !matches!(style, "info" | "warning" | "danger" | "success") {
            return None;
        }
        let mut data = obj([("style", json!(style))]);
        if let Some(icon) = attr(&attrs, "icon") {
            data.insert("icon".into(), json!(icon));
        }
        let nodes = non_empty(self.blocks(at.text, at.inner(end), false, at.depth + 1, "hint"));
        Some((vec![Node::block("hint", data, nodes)], end + 1))
    }

    /// A container of items (`tabs`, `stepper`, `columns`, `updates`): only items, blank
    /// lines between them.
    #[inline(never)]
    fn items(&self, at: &TagAt<'_, '_>, kind: &ItemsKind) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let attrs = at.attrs(kind.attrs)?;
        let data = (kind.data)(&attrs)?;
        if !self.enter(at.depth + 1, kind.block) {
            return Some((Vec::new(), end + 1));
        }
        let text = at.text;
        let mut items = Vec::new();
        let mut j = at.i + 1;
        while j < end {
            if text.blank(j) {
                j += 1;
                continue;
            }
            let (name, rest) = split_tag(text.lines[j]).filter(|_| !text.in_code[j])?;
            if name != kind.item_tag {
                return None;
            }
            let close = text.close[j].filter(|c| *c < end)?;
            let item_attrs = parse_attrs(rest)?;
            if !item_attrs
                .iter()
                .all(|(k, _)| kind.item_attrs.contains(&k.as_str()))
            {
                return None;
            }
            let item_data = (kind.item_data)(&item_attrs)?;
            let nodes = self.blocks(
                text,
                j + 1..close,
                kind.images,
                at.depth + 2,
                kind.item_block,
            );
            items.push(Node::block(kind.item_block, item_data, non_empty(nodes)));
            j = close + 1;
        }
        if items.is_empty() {
            return None;
        }
        let mut el = Element::with_nodes(kind.block, data, items);
        if kind.block == "columns" {
            // The official schema requires it on columns.
            el.is_void = Some(false);
        }
        Some((vec![Node::Block(el)], end + 1))
    }

    #[inline(never)]
    fn if_block(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        if at.rest.is_empty() {
            return None;
        }
        let data = obj([("expression", json!(at.rest))]);
        let nodes = non_empty(self.blocks(at.text, at.inner(end), true, at.depth + 1, "if"));
        Some((vec![Node::block("if", data, nodes)], end + 1))
    }

    #[inline(never)]
    fn prompt(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let attrs = at.attrs(&[
            "description",
            "icon",
            "openInAIProviders",
            "defaultExpanded",
        ])?;
        let mut data = Map::new();
        for (k, v) in &attrs {
            let value = match k.as_str() {
                "openInAIProviders" => json!(bool_attr(v)?),
                "defaultExpanded" if matches!(v.as_str(), "hidden" | "partial" | "full") => {
                    json!(v)
                }
                "defaultExpanded" => return None,
                _ => json!(v),
            };
            data.insert(k.clone(), value);
        }
        let nodes = self.blocks(at.text, at.inner(end), false, at.depth + 1, "prompt");
        if nodes.len() != 1 || nodes[0].element().is_none_or(|e| e.kind != "code") {
            return None;
        }
        Some((vec![Node::block("prompt", data, nodes)], end + 1))
    }

    /// `{% code title=… %}` around a fenced block: the attributes go to the code block.
    #[inline(never)]
    fn code_tag(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let attrs = parse_attrs(at.rest)?;
        let mut nodes = self.blocks(at.text, at.inner(end), at.images, at.depth, "code");
        let [Node::Block(code)] = nodes.as_mut_slice() else {
            return None;
        };
        if code.kind != "code" || !code_attrs(&mut code.data, &attrs) {
            return None;
        }
        Some((nodes, end + 1))
    }

    /// A caption: the inline content of the lines between a tag and its optional closing
    /// tag, as a `caption` fragment.
    fn caption(&self, at: &TagAt<'_, '_>, inner: Range<usize>) -> Option<Option<Vec<Node>>> {
        let src = at.text.text(inner);
        if src.trim().is_empty() {
            return Some(None);
        }
        let mut nodes = parse::inline_line(self, src.trim(), at.depth + 2)?;
        parse::one_line(&mut nodes);
        Some((!is_empty_inline(&nodes)).then_some(nodes))
    }

    #[inline(never)]
    fn embed(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let attrs = at.attrs(&["url", "fullWidth"])?;
        let mut data = obj([("url", json!(attr(&attrs, "url")?))]);
        if let Some(fw) = attr(&attrs, "fullWidth") {
            data.insert("fullWidth".into(), json!(bool_attr(fw)?));
        }
        if attrs.first().map(|(k, _)| k.as_str()) != Some("url") {
            return None;
        }
        let (next, inner) = at.optional_close("endembed");
        let caption = self.caption(at, inner)?;
        Some((vec![captioned("embed", data, caption)], next))
    }

    #[inline(never)]
    fn file(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let attrs = at.attrs(&["src"])?;
        let src = attr(&attrs, "src")?;
        let LinkTarget::Ref(r @ ContentRef::File { .. }) = self.resolve(src) else {
            // A file block can only point at a file of the space.
            return None;
        };
        let (next, inner) = at.optional_close("endfile");
        let caption = self.caption(at, inner)?;
        let data = obj([("ref", ref_json(&r))]);
        Some((vec![captioned("file", data, caption)], next))
    }

    #[inline(never)]
    fn content_ref(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let attrs = at.attrs(&["url"])?;
        let url = attr(&attrs, "url")?;
        let end = at.close()?;
        let inner = at.text.text(at.inner(end));
        // The link Git Sync writes inside: `[label](url)`.
        let expected = format!(
            "[{}]({})",
            super::inline::escape_label(&super::path_label(url)),
            super::inline::link_dest(url)
        );
        if inner.trim() != expected && !inner.trim().is_empty() {
            return None;
        }
        let LinkTarget::Ref(r) = self.resolve(url) else {
            return None;
        };
        let node = Node::Block(Element::void("content-ref", obj([("ref", ref_json(&r))])));
        Some((vec![node], end + 1))
    }

    #[inline(never)]
    fn include(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let path = at.rest.strip_prefix('"')?.strip_suffix('"')?;
        if path.is_empty() || path.contains('"') {
            return None;
        }
        let id = self
            .links
            .include(path)
            .unwrap_or_else(|| super::default_include(path));
        let r = ContentRef::ReusableContent {
            reusable_content: id,
            space: None,
        };
        let node = Node::Block(Element::void(
            "reusable-content",
            obj([("ref", ref_json(&r))]),
        ));
        Some((vec![node], at.i + 1))
    }

    /// `{% openapi src path method %}`: the older OpenAPI block (`swagger`), with the
    /// specification's link inside.
    #[inline(never)]
    fn swagger(&self, at: &TagAt<'_, '_>) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let attrs = at.attrs(&["src", "path", "method", "expanded", "fullWidth"])?;
        let src = attr(&attrs, "src")?;
        let r = match self.resolve(src) {
            LinkTarget::Ref(r @ (ContentRef::File { .. } | ContentRef::Url { .. })) => r,
            _ => return None,
        };
        let mut data = obj([
            ("ref", ref_json(&r)),
            ("path", json!(attr(&attrs, "path")?)),
            ("method", json!(attr(&attrs, "method")?)),
        ]);
        for k in ["expanded", "fullWidth"] {
            if let Some(v) = attr(&attrs, k) {
                data.insert(k.into(), json!(bool_attr(v)?));
            }
        }
        let inner = at.text.text(at.inner(end));
        let expected = format!(
            "[{}]({})",
            super::inline::escape_label(src),
            super::inline::link_dest(src)
        );
        if inner.trim() != expected {
            return None;
        }
        let node = Node::Block(Element::void("swagger", data));
        Some((vec![node], end + 1))
    }

    /// The OpenAPI blocks of a specification of the organization: operations, schemas and
    /// webhooks. Their body is the specification's link, or [`BROKEN_SPEC`].
    #[inline(never)]
    fn openapi(&self, at: &TagAt<'_, '_>, name: &str) -> Option<(Vec<Node>, usize)> {
        let end = at.close()?;
        let (keys, kind): (&[&str], &str) = match name {
            "openapi-operation" => (&["spec", "path", "method"], name),
            "openapi-webhook" => (&["spec", "name", "method"], name),
            _ => (&["spec", "schemas", "grouped"], name),
        };
        let attrs = at.attrs(keys)?;
        let spec = attr(&attrs, "spec")?;
        let mut data = obj([("ref", json!({"kind": "openapi", "spec": spec}))]);
        for (k, v) in &attrs {
            match k.as_str() {
                "spec" => {}
                "grouped" => {
                    data.insert("grouped".into(), json!(bool_attr(v)?));
                }
                "schemas" => {
                    let list: Vec<&str> = v.split(',').map(str::trim).collect();
                    if list.join(",") != *v {
                        return None;
                    }
                    data.insert("schemas".into(), json!(list));
                }
                _ => {
                    data.insert(k.clone(), json!(v));
                }
            }
        }
        let inner = at.text.text(at.inner(end));
        let inner = inner.trim();
        if kind == "openapi-schemas" {
            if !inner.is_empty() {
                if inner.contains('\n') {
                    return None;
                }
                data.insert("title".into(), json!(inner));
            }
        } else if inner == BROKEN_SPEC {
            // The specification's link as GitBook writes one it could not resolve: kept to
            // be written back, the block read all the same.
            let mut node = Element::void(kind, data);
            node.meta = Some(obj([("specLink", json!("broken"))]));
            return Some((vec![Node::Block(node)], end + 1));
        } else if !inner.is_empty() {
            // `[OpenAPI <spec>](<url of the specification>)`.
            let prefix = format!("[OpenAPI {}](", super::inline::escape_label(spec));
            let url = inner.strip_prefix(&prefix)?.strip_suffix(')')?;
            if url.contains([' ', '(', ')', '<', '>']) || url.is_empty() {
                return None;
            }
            data.insert("specUrl".into(), json!(url));
        }
        let node = Node::Block(Element::void(kind, data));
        Some((vec![node], end + 1))
    }

    /// `{% @integration/block prop="value" %}`: a block of an installed integration.
    #[inline(never)]
    fn integration(&self, at: &TagAt<'_, '_>, name: &str) -> Option<(Vec<Node>, usize)> {
        let (integration, block) = name.strip_prefix('@')?.split_once('/')?;
        if integration.is_empty() || block.is_empty() {
            return None;
        }
        let attrs = parse_attrs(at.rest)?;
        let mut props = Map::new();
        for (k, v) in attrs {
            props.insert(k, json!(v));
        }
        let data = obj([
            ("integration", json!(integration)),
            ("block", json!(block)),
            ("props", Value::Object(props)),
        ]);
        Some((
            vec![Node::Block(Element::void("integration", data))],
            at.i + 1,
        ))
    }

    /// `<details>` … `</details>`: an expandable with its `<summary>` title.
    fn details(
        &self,
        text: &Lines<'_>,
        i: usize,
        limit: usize,
        depth: usize,
    ) -> Option<(Vec<Node>, usize)> {
        let open = text.lines[i].trim_end();
        let expanded = match open {
            "<details>" => false,
            "<details open>" => true,
            _ => return Some(raw_lines(text, i, limit)),
        };
        let Some(end) = text.close[i].filter(|e| *e < limit) else {
            return Some(raw_lines(text, i, limit));
        };
        match self.expandable(text, i + 1..end, expanded, depth) {
            Some(node) => Some((vec![node], end + 1)),
            None if self.failed() => Some((Vec::new(), end + 1)),
            None => Some(raw_lines(text, i, limit)),
        }
    }

    /// An expandable whose body is the lines `range` of `text`.
    fn expandable(
        &self,
        text: &Lines<'_>,
        range: Range<usize>,
        expanded: bool,
        depth: usize,
    ) -> Option<Node> {
        let mut title = vec![Node::text("")];
        let mut rest = range.clone();
        if let Some(first) = range.clone().find(|j| !text.blank(*j)) {
            let l = text.lines[first].trim();
            if l.starts_with("<summary>") {
                let Some(HNode::El(summary)) =
                    html::parse_fragment(l).and_then(|mut n| (n.len() == 1).then(|| n.remove(0)))
                else {
                    return None;
                };
                if summary.name != "summary" || !summary.attrs.is_empty() {
                    return None;
                }
                let items = parse::html_items(&summary.children, self, depth + 2, &[])?;
                title = inline_nodes(items, true);
                rest = first + 1..range.end;
            }
        }
        if !self.enter(depth + 1, "expandable") {
            return None;
        }
        let body = non_empty(self.blocks(text, rest, true, depth + 1, "expandable"));
        let mut data = Map::new();
        if expanded {
            data.insert("defaultExpanded".into(), json!(true));
        }
        let mut el = Element::void("expandable", data);
        el.fragments = Some(vec![
            fragment("expandable-title", vec![Node::paragraph(title)]),
            fragment("expandable-body", body),
        ]);
        Some(Node::Block(el))
    }
}

/// Raw content for a tag that is not understood: the tag with its whole range when it is
/// closed, else its lines up to the next blank line.
fn raw_lines(text: &Lines<'_>, i: usize, limit: usize) -> (Vec<Node>, usize) {
    let end = match text.close[i].filter(|e| *e < limit) {
        Some(close) => close + 1,
        None => {
            // A code block opened in these lines ends in them too: written back, an open
            // fence would take what follows.
            let mut j = i + 1;
            while j < limit
                && (text.in_code[j] || (!text.blank(j) && !text.lines[j].starts_with("{%")))
            {
                j += 1;
            }
            j
        }
    };
    let raw = text.text(i..end);
    (vec![raw_block(raw.trim_end_matches('\n'))], end)
}

/// A void block with an optional `caption` fragment.
fn captioned(kind: &str, data: Map<String, Value>, caption: Option<Vec<Node>>) -> Node {
    let mut el = Element::void(kind, data);
    if let Some(nodes) = caption {
        el.fragments = Some(vec![fragment("caption", vec![Node::paragraph(nodes)])]);
    }
    Node::Block(el)
}

/// Data of a block from its tag's attributes; `None` when one is invalid.
type DataOf = fn(&[(String, String)]) -> Option<Map<String, Value>>;

/// The shape of a container of items.
pub(super) struct ItemsKind {
    /// The container's block type.
    pub block: &'static str,
    /// Its attributes.
    attrs: &'static [&'static str],
    /// Its data from its attributes.
    data: DataOf,
    /// The item tag (`tab`, `step`…).
    pub item_tag: &'static str,
    /// The item's block type.
    pub item_block: &'static str,
    /// The item's attributes.
    item_attrs: &'static [&'static str],
    /// The item's data from its attributes.
    item_data: DataOf,
    /// Whether items may hold images blocks.
    images: bool,
}

/// Data holding every attribute as a string.
fn strings(attrs: &[(String, String)]) -> Option<Map<String, Value>> {
    Some(attrs.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

const TABS: ItemsKind = ItemsKind {
    block: "tabs",
    attrs: &["fullWidth"],
    data: |a| {
        let mut d = Map::new();
        if let Some(v) = attr(a, "fullWidth") {
            d.insert("fullWidth".into(), json!(bool_attr(v)?));
        }
        Some(d)
    },
    item_tag: "tab",
    item_block: "tabs-item",
    item_attrs: &["title", "icon"],
    item_data: |a| {
        let mut d = strings(a)?;
        d.entry("title").or_insert(json!(""));
        Some(d)
    },
    images: true,
};

const STEPPER: ItemsKind = ItemsKind {
    block: "stepper",
    attrs: &[],
    data: |_| Some(Map::new()),
    item_tag: "step",
    item_block: "stepper-step",
    item_attrs: &["icon"],
    item_data: strings,
    images: true,
};

const COLUMNS: ItemsKind = ItemsKind {
    block: "columns",
    attrs: &["fullWidth"],
    data: |a| {
        let mut d = Map::new();
        if let Some(v) = attr(a, "fullWidth") {
            d.insert("fullWidth".into(), json!(bool_attr(v)?));
        }
        Some(d)
    },
    item_tag: "column",
    item_block: "column",
    item_attrs: &["width", "valign"],
    item_data: |a| {
        let mut d = Map::new();
        for (k, v) in a {
            match k.as_str() {
                "width" => {
                    d.insert("width".into(), parse::length(v)?);
                }
                _ => {
                    if !matches!(v.as_str(), "top" | "middle" | "bottom") {
                        return None;
                    }
                    d.insert("verticalAlignment".into(), json!(v));
                }
            }
        }
        Some(d)
    },
    images: true,
};

const UPDATES: ItemsKind = ItemsKind {
    block: "updates",
    attrs: &["format"],
    data: |a| {
        let format = attr(a, "format").unwrap_or("full");
        matches!(format, "numeric" | "full" | "short").then(|| obj([("format", json!(format))]))
    },
    item_tag: "update",
    item_block: "update",
    item_attrs: &["date", "tags"],
    item_data: |a| {
        let date = attr(a, "date")?;
        let mut d = obj([("date", json!(update_date(date)?))]);
        if let Some(tags) = attr(a, "tags") {
            let list: Vec<Value> = tags
                .split(',')
                .map(|t| json!({"kind": "tag", "tag": t}))
                .collect();
            if tags.is_empty() || tags.split(',').any(|t| t.is_empty() || t.trim() != t) {
                return None;
            }
            d.insert("tags".into(), Value::Array(list));
        }
        Some(d)
    },
    images: true,
};

/// The timestamp of an update's `date="YYYY-MM-DD"` (midnight UTC), or the timestamp given.
fn update_date(date: &str) -> Option<String> {
    let valid_day = |d: &str| {
        let b = d.as_bytes();
        d.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && d.chars()
                .enumerate()
                .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
    };
    if valid_day(date) {
        return Some(format!("{date}T00:00:00.000Z"));
    }
    (date.len() > 10 && valid_day(&date[..10]) && date[10..].starts_with('T'))
        .then(|| date.to_string())
}
