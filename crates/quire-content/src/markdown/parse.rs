//! Parsing the text between container tags: `pulldown-cmark` events to blocks and inlines,
//! and the HTML GitBook writes (figures, pictures, aligned paragraphs and headings, tables,
//! buttons, mentions, icons, emoji, expressions, marks).
//!
//! Each top-level block is parsed on its own; if anything in it is not understood (unknown
//! HTML, a footnote without definition…), the whole block is kept as raw content, with its
//! source text verbatim.

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};
use serde_json::{json, Map, Value};

use super::html::{self, HElement, HNode};
use super::scan::Scanner;
use super::{fragment, obj, options, raw_block, ref_json, LinkTarget, SOFT_BREAK};
use crate::document::{Element, Leaf, Mark, Node, Text};
use crate::model::ContentRef;

/// Inline content being collected.
#[derive(Clone, Debug)]
pub(super) enum Item {
    /// Text with its marks.
    Leaf(String, Vec<Mark>),
    /// Text written as a character reference (`&#x20;`): kept even where whitespace is
    /// trimmed.
    Entity(String, Vec<Mark>),
    /// A link and its content.
    Link(ContentRef, Vec<Item>),
    /// An image written in markdown (`![alt](src)`).
    Image(ContentRef, String),
    /// A finished inline element (emoji, icon, expression, mention, button, images…).
    El(Element),
    /// `<a href="#id" id="id"></a>`: a heading's anchor.
    Anchor(String),
    /// A footnote reference: an annotation of the word before it, with its blocks.
    Annotation(Vec<Node>),
}

pub(super) fn mark(kind: &str) -> Mark {
    Mark {
        kind: kind.into(),
        data: None,
    }
}

/// Order of marks in a leaf, which is also how they nest when written, outermost first:
/// the order Git Sync writes them in (`<mark>**_…_**</mark>`, code innermost).
pub(super) const MARK_ORDER: [&str; 8] = [
    "color",
    "italic",
    "bold",
    "strikethrough",
    "keyboard",
    "superscript",
    "subscript",
    "code",
];

pub(super) fn mark_rank(m: &Mark) -> usize {
    MARK_ORDER
        .iter()
        .position(|k| *k == m.kind)
        .unwrap_or(MARK_ORDER.len())
}

pub(super) fn canonical_marks(marks: &[Mark]) -> Vec<Mark> {
    let mut out: Vec<Mark> = Vec::new();
    for m in marks {
        if !out.iter().any(|x| x.kind == m.kind) {
            out.push(m.clone());
        }
    }
    out.sort_by_key(mark_rank);
    out
}

/// Colours a `color` mark, an icon and a revision's tag may take (official
/// `DocumentTextColor`).
pub const COLORS: [&str; 16] = [
    "default", "green", "blue", "red", "orange", "yellow", "purple", "pink", "violet", "cyan",
    "$primary", "$info", "$success", "$warning", "$danger", "$tint",
];

/// The `color` mark of `<mark style="color:x;background-color:y;">`.
pub(super) fn color_mark(style: &str) -> Option<Mark> {
    let mut text = "default".to_string();
    let mut background = "default".to_string();
    for decl in style.split(';').filter(|d| !d.trim().is_empty()) {
        let (k, v) = decl.split_once(':')?;
        let v = v.trim();
        if !COLORS.contains(&v) {
            return None;
        }
        match k.trim() {
            "color" => text = v.to_string(),
            "background-color" => background = v.to_string(),
            _ => return None,
        }
    }
    Some(Mark {
        kind: "color".into(),
        data: Some(obj([
            ("text", json!(text)),
            ("background", json!(background)),
        ])),
    })
}

/// The kind of mark an HTML tag stands for, if any.
fn mark_tag(el: &HElement) -> Option<&'static str> {
    let plain = el.attrs.is_empty();
    Some(match el.name.as_str() {
        "strong" | "b" if plain => "bold",
        "em" if plain => "italic",
        "i" if plain => "italic",
        "s" | "del" | "strike" if plain => "strikethrough",
        "code" if plain => "code",
        "kbd" if plain => "keyboard",
        "sup" if plain => "superscript",
        "sub" if plain => "subscript",
        "mark" if el.attr_names().eq(["style"]) => "color",
        _ => return None,
    })
}

/// Resolves a destination with the scanner's link resolver.
fn resolve(scanner: &Scanner<'_>, href: &str) -> LinkTarget {
    scanner.resolve(href)
}

/// The button kinds GitBook writes in `class="button …"`.
fn button_kind(class: &str) -> Option<&str> {
    match class.strip_prefix("button ")? {
        k @ ("primary" | "secondary") => Some(k),
        _ => None,
    }
}

/// An inline element made from one HTML element that holds no other elements (not a mark,
/// not a link), or `None` when it is not one GitBook writes.
fn html_inline_element(el: &HElement, scanner: &Scanner<'_>) -> Option<Item> {
    let names: Vec<&str> = el.attr_names().collect();
    match el.name.as_str() {
        "a" if names == ["data-mention", "href"] => {
            let LinkTarget::Ref(r) = resolve(scanner, el.attr("href")?) else {
                return None;
            };
            only_text(el)
                .then(|| Item::El(super::mention(r, &el.text(), el.attr("href").unwrap_or(""))))
        }
        "a" if names.first() == Some(&"href") && names.get(1) == Some(&"class") => {
            let kind = button_kind(el.attr("class")?)?;
            let extra: Vec<&str> = names[2..].to_vec();
            if !(extra.is_empty() || extra == ["data-icon"]) {
                return None;
            }
            let LinkTarget::Ref(r) = resolve(scanner, el.attr("href")?) else {
                return None;
            };
            let mut data = obj([("label", json!(el.text())), ("kind", json!(kind))]);
            if let Some(icon) = el.attr("data-icon") {
                data.insert("icon".into(), json!(icon));
            }
            data.insert("ref".into(), ref_json(&r));
            only_text(el).then(|| Item::El(Element::void("button", data)))
        }
        // A button that leads nowhere (GitBook's inactive button).
        "a" if names == ["class"] || names == ["class", "data-icon"] => {
            let kind = button_kind(el.attr("class")?)?;
            let mut data = obj([("label", json!(el.text())), ("kind", json!(kind))]);
            if let Some(icon) = el.attr("data-icon") {
                data.insert("icon".into(), json!(icon));
            }
            only_text(el).then(|| Item::El(Element::void("button", data)))
        }
        "a" if names == ["href", "id"] => {
            let id = el.attr("id")?;
            (el.children.is_empty() && el.attr("href")? == format!("#{id}"))
                .then(|| Item::Anchor(id.to_string()))
        }
        "button" if names.first() == Some(&"type") && el.attr("type") == Some("button") => {
            let kind = button_kind(el.attr("class")?)?;
            let action = el.attr("data-action")?;
            let mut act = obj([("action", json!(action))]);
            let mut allowed = vec!["type", "class", "data-action"];
            match action {
                "search" | "ask" => {
                    if let Some(q) = el.attr("data-query") {
                        act.insert("query".into(), json!(q));
                        allowed.push("data-query");
                    }
                }
                "select" => {
                    act.insert("slug".into(), json!(el.attr("data-slug")?));
                    allowed.push("data-slug");
                }
                _ => return None,
            }
            let mut data = obj([("label", json!(el.text())), ("kind", json!(kind))]);
            if let Some(icon) = el.attr("data-icon") {
                data.insert("icon".into(), json!(icon));
                allowed.push("data-icon");
            }
            if names != allowed || !only_text(el) {
                return None;
            }
            data.insert("action".into(), Value::Object(act));
            Some(Item::El(Element::void("button", data)))
        }
        "code" if names == ["class"] && el.attr("class") == Some("expression") => {
            if !only_text(el) {
                return None;
            }
            Some(Item::El(Element::void(
                "expression",
                obj([("expression", json!(el.text()))]),
            )))
        }
        "i" if names.first() == Some(&"class") => {
            let icon = el.attr("class")?.strip_prefix("fa-")?;
            let mut data = obj([("icon", json!(icon))]);
            match &names[1..] {
                [] => {}
                ["style"] => {
                    let color = el
                        .attr("style")?
                        .strip_prefix("color:")?
                        .strip_suffix(';')?;
                    if !COLORS.contains(&color) {
                        return None;
                    }
                    data.insert("color".into(), json!(color));
                }
                _ => return None,
            }
            let text = el.text();
            (only_text(el) && text == format!(":{icon}:"))
                .then(|| Item::El(Element::void("icon", data)))
        }
        "span" if names == ["data-gb-custom-inline", "data-tag", "data-code"] => {
            if el.attr("data-tag") != Some("emoji") || !only_text(el) {
                return None;
            }
            let code = el.attr("data-code")?;
            emoji_char(code)?;
            Some(Item::El(Element::void(
                "emoji",
                obj([("code", json!(code))]),
            )))
        }
        "img" => inline_image(el, None, scanner).map(Item::El),
        "picture" => {
            let kids = el.element_children()?;
            let [source, img] = kids.as_slice() else {
                return None;
            };
            let dark = dark_source(source)?;
            inline_image(img, Some(dark), scanner).map(Item::El)
        }
        _ => None,
    }
}

/// Whether an element holds nothing but text.
fn only_text(el: &HElement) -> bool {
    el.children.iter().all(|c| matches!(c, HNode::Text(_)))
}

/// The character of an emoji code (`1f600`, or several code points joined by `-`).
pub(super) fn emoji_char(code: &str) -> Option<String> {
    code.split('-')
        .map(|p| u32::from_str_radix(p, 16).ok().and_then(char::from_u32))
        .collect()
}

/// The dark-mode image of `<source srcset="…" media="(prefers-color-scheme: dark)">`.
pub(super) fn dark_source(el: &HElement) -> Option<&str> {
    (el.name == "source"
        && el.attr_names().eq(["srcset", "media"])
        && el.attr("media") == Some("(prefers-color-scheme: dark)"))
    .then(|| el.attr("srcset"))
    .flatten()
}

/// An image reference; only files and URLs can be images.
fn image_ref(scanner: &Scanner<'_>, src: &str) -> Option<ContentRef> {
    match resolve(scanner, src) {
        LinkTarget::Ref(r @ (ContentRef::File { .. } | ContentRef::Url { .. })) => Some(r),
        _ => None,
    }
}

/// An inline image from `<img src alt [data-size]>` (and a dark variant).
fn inline_image(el: &HElement, dark: Option<&str>, scanner: &Scanner<'_>) -> Option<Element> {
    if el.name != "img" {
        return None;
    }
    let names: Vec<&str> = el.attr_names().collect();
    if !(names == ["src", "alt"] || names == ["src", "alt", "data-size"]) {
        return None;
    }
    let mut data = Map::new();
    data.insert(
        "ref".into(),
        ref_json(&image_ref(scanner, el.attr("src")?)?),
    );
    if let Some(d) = dark {
        data.insert("refDark".into(), ref_json(&image_ref(scanner, d)?));
    }
    data.insert("alt".into(), json!(el.attr("alt")?));
    if let Some(size) = el.attr("data-size") {
        if !matches!(size, "line" | "original") {
            return None;
        }
        data.insert("size".into(), json!(size));
    }
    Some(Element::void("inline-image", data))
}

/// Inline items of HTML content (figure captions, summaries, HTML table cells, aligned
/// paragraphs); `None` when it holds HTML GitBook does not write there.
pub(super) fn html_items(
    nodes: &[HNode],
    scanner: &Scanner<'_>,
    depth: usize,
    marks: &[Mark],
) -> Option<Vec<Item>> {
    let mut out = Vec::new();
    html_items_into(nodes, scanner, depth, marks, &mut out)?;
    Some(out)
}

// Nested marks and links recurse through `html_items_into`, `html_mark_into`,
// `html_link_into` and `html_items`, once per level of the input's HTML (at most
// `MAX_DEPTH * 2` levels, links at most `MAX_DEPTH`). Their frames stay small, so that the
// deepest input fits a small stack even in a debug build: the items are built in helpers
// that do not recurse.

fn html_items_into(
    nodes: &[HNode],
    scanner: &Scanner<'_>,
    depth: usize,
    marks: &[Mark],
    out: &mut Vec<Item>,
) -> Option<()> {
    for n in nodes {
        match n {
            HNode::El(el) if mark_tag(el).is_some() => {
                html_mark_into(el, scanner, depth, marks, out)?
            }
            HNode::El(el) if el.name == "a" && el.attr_names().eq(["href"]) => {
                html_link_into(el, scanner, depth, marks, out)?
            }
            _ => html_leaf_into(n, scanner, depth, marks, out)?,
        }
    }
    Some(())
}

/// The children of a mark tag, with the mark added to theirs.
fn html_mark_into(
    el: &HElement,
    scanner: &Scanner<'_>,
    depth: usize,
    marks: &[Mark],
    out: &mut Vec<Item>,
) -> Option<()> {
    let inner = with_mark(el, marks)?;
    html_items_into(&el.children, scanner, depth, &inner, out)
}

/// `marks` and the mark of the tag `el`.
#[inline(never)]
fn with_mark(el: &HElement, marks: &[Mark]) -> Option<Vec<Mark>> {
    let m = match mark_tag(el)? {
        "color" => color_mark(el.attr("style")?)?,
        kind => mark(kind),
    };
    let mut inner = marks.to_vec();
    inner.push(m);
    Some(inner)
}

/// A link written as `<a href>`, with its children converted.
fn html_link_into(
    el: &HElement,
    scanner: &Scanner<'_>,
    depth: usize,
    marks: &[Mark],
    out: &mut Vec<Item>,
) -> Option<()> {
    if !scanner.enter(depth, "link") {
        return None;
    }
    let inner = html_items(&el.children, scanner, depth + 1, marks)?;
    push_link(el, scanner, inner, out)
}

#[inline(never)]
fn push_link(
    el: &HElement,
    scanner: &Scanner<'_>,
    inner: Vec<Item>,
    out: &mut Vec<Item>,
) -> Option<()> {
    match resolve(scanner, el.attr("href")?) {
        LinkTarget::Ref(r) => {
            out.push(Item::Link(r, inner));
            Some(())
        }
        LinkTarget::Text => None,
    }
}

/// Text, a line break, or an inline element that holds no other elements.
#[inline(never)]
fn html_leaf_into(
    n: &HNode,
    scanner: &Scanner<'_>,
    depth: usize,
    marks: &[Mark],
    out: &mut Vec<Item>,
) -> Option<()> {
    match n {
        HNode::Text(t) => out.push(Item::Leaf(t.clone(), canonical_marks(marks))),
        HNode::El(el) if el.name == "br" && el.attrs.is_empty() => {
            out.push(Item::Leaf("\n".into(), canonical_marks(marks)))
        }
        HNode::El(el) => {
            if !scanner.enter(depth, "link") {
                return None;
            }
            let item = html_inline_element(el, scanner)?;
            if matches!(item, Item::Anchor(_)) {
                return None;
            }
            out.push(item);
        }
    }
    Some(())
}

/// A `(event, source range)` stream with a cursor.
pub(super) struct Events<'a> {
    ev: Vec<(Event<'a>, Range<usize>)>,
    pos: usize,
}

impl<'a> Events<'a> {
    fn new(src: &'a str) -> Events<'a> {
        Events {
            ev: Parser::new_ext(src, options()).into_offset_iter().collect(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<&Event<'a>> {
        self.ev.get(self.pos).map(|(e, _)| e)
    }

    fn range(&self) -> Option<Range<usize>> {
        self.ev.get(self.pos).map(|(_, r)| r.clone())
    }

    pub(super) fn next(&mut self) -> Option<Event<'a>> {
        let (e, _) = self.ev.get_mut(self.pos)?;
        self.pos += 1;
        Some(std::mem::replace(e, Event::SoftBreak))
    }

    /// The range of the event just consumed.
    fn last_range(&self) -> Range<usize> {
        self.ev[self.pos - 1].1.clone()
    }

    /// Skips every event that lies within the source before `end` (not the end of the
    /// enclosing block, whose range goes beyond).
    fn skip_to(&mut self, end: usize) {
        while self
            .ev
            .get(self.pos)
            .is_some_and(|(_, r)| r.start < end && r.end <= end)
        {
            self.pos += 1;
        }
    }

    fn stop(&mut self) {
        self.pos = self.ev.len();
    }
}

pub(super) struct EventParser<'s, 'r> {
    scanner: &'s Scanner<'r>,
    /// The text being parsed, for raw content and inline HTML.
    src: &'s str,
    /// Where the text ends (footnote definitions may follow it).
    limit: usize,
    marks: Vec<Mark>,
    /// The task marker seen in the current list item, wherever the parser put it.
    task: Option<bool>,
    /// Something in the current top-level block is not understood: keep it raw.
    unknown: bool,
    /// The blocks being read are a list item's: HTML figures are images there (Git Sync
    /// writes a list item's images so), markdown images stay inline.
    in_item: bool,
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

/// Parses a text without container tags into blocks at `depth`.
pub(super) fn cmark(scanner: &Scanner<'_>, src: &str, images: bool, depth: usize) -> Vec<Node> {
    cmark_between(scanner, src, images, depth, None)
}

/// Where a text sits among its siblings: whether blocks come before and after it. Runs of
/// blank lines then stand for the empty paragraphs Git Sync writes as blank lines.
#[derive(Clone, Copy, Debug)]
pub(super) struct Siblings {
    pub before: bool,
    pub after: bool,
}

/// Empty paragraphs that `blank` blank lines stand for: each adds a blank line to the
/// one separating two blocks (two at the start or the end of a container).
fn empty_paragraphs(blank: usize, between: bool) -> usize {
    if between {
        blank.saturating_sub(1) / 2
    } else {
        blank / 2
    }
}

fn empty_paragraph() -> Node {
    Node::paragraph(vec![Node::text("")])
}

/// [`cmark`], with the empty paragraphs of runs of blank lines when `siblings` is given.
pub(super) fn cmark_between(
    scanner: &Scanner<'_>,
    src: &str,
    images: bool,
    depth: usize,
    siblings: Option<Siblings>,
) -> Vec<Node> {
    if scanner.failed() {
        return Vec::new();
    }
    if src.trim().is_empty() {
        let n = match siblings {
            Some(s) if s.before || s.after => {
                let blank = src.matches('\n').count();
                empty_paragraphs(blank, s.before && s.after)
            }
            _ => 0,
        };
        return (0..n).map(|_| empty_paragraph()).collect();
    }
    // The definitions go along with text that refers to them; the parser stops at the end
    // of the text itself.
    let extended;
    let (full, limit) = if !scanner.definitions.is_empty() && src.contains("[^") {
        extended = format!("{src}\n\n{}", scanner.definitions);
        (extended.as_str(), src.len())
    } else {
        (src, src.len())
    };
    let mut ev = Events::new(full);
    let mut p = EventParser {
        scanner,
        src: full,
        limit,
        marks: Vec::new(),
        task: None,
        unknown: false,
        in_item: false,
    };
    p.top(&mut ev, images, depth, siblings)
}

/// Inline nodes of one line of markdown (table cells, captions of old forms), or `None`
/// when it does not parse as one plain paragraph.
pub(super) fn inline_line(scanner: &Scanner<'_>, src: &str, depth: usize) -> Option<Vec<Node>> {
    if src.trim().is_empty() {
        return Some(vec![Node::Text(Text::default())]);
    }
    let mut blocks = cmark(scanner, src, false, depth);
    match (blocks.len(), blocks.pop()) {
        (1, Some(Node::Block(e))) if e.kind == "paragraph" && e.meta.is_none() => e.nodes,
        _ => None,
    }
}

impl EventParser<'_, '_> {
    /// Whether an element may be made at `depth`. If not, records an error naming
    /// `within` and skips the rest of the events, so that every loop ends at once.
    fn enter(&mut self, ev: &mut Events<'_>, depth: usize, within: &str) -> bool {
        if self.scanner.enter(depth, within) {
            return true;
        }
        ev.stop();
        false
    }

    /// The top-level blocks: each is kept raw (its source verbatim) if any part of it is
    /// not understood.
    fn top(
        &mut self,
        ev: &mut Events<'_>,
        images: bool,
        depth: usize,
        siblings: Option<Siblings>,
    ) -> Vec<Node> {
        let mut out = Vec::new();
        if !self.enter(ev, depth, "document") {
            return out;
        }
        // Line of each offset, to count the blank lines between blocks.
        let newlines: Vec<usize> = self.src.match_indices('\n').map(|(i, _)| i).collect();
        let line_of = |offset: usize| newlines.partition_point(|&n| n < offset);
        let mut last_line: Option<usize> = None;
        while let Some(range) = ev.range() {
            if range.start >= self.limit {
                break;
            }
            if let Some(Event::Start(Tag::FootnoteDefinition(_))) = ev.peek() {
                // Definitions were read beforehand; they make no block here.
                ev.next();
                self.skip_element(ev);
                let end = ev.last_range().end.min(self.src.len());
                let trimmed = self.src[..end].trim_end_matches('\n');
                last_line = Some(line_of(trimmed.len()));
                continue;
            }
            self.unknown = false;
            let start = range.start;
            let before = out.len();
            let end = self.one_block(ev, images, depth, &mut out).max(range.end);
            if self.unknown && !self.scanner.failed() {
                out.truncate(before);
                let text = self.src[start..end.min(self.src.len())].trim_end_matches('\n');
                if !text.trim().is_empty() {
                    out.push(raw_block(text));
                }
            }
            if out.len() > before {
                if let Some(s) = siblings {
                    let first = line_of(start);
                    let (blank, between) = match last_line {
                        Some(l) => (first.saturating_sub(l + 1), true),
                        None => (first, s.before),
                    };
                    let n = empty_paragraphs(blank, between);
                    out.splice(before..before, (0..n).map(|_| empty_paragraph()));
                }
                let trimmed = self.src[..end.min(self.src.len())].trim_end_matches('\n');
                last_line = Some(line_of(trimmed.len()));
            }
        }
        if let (Some(s), Some(l)) = (siblings, last_line) {
            let text = &self.src[..self.limit];
            let last_index = text
                .matches('\n')
                .count()
                .saturating_sub(usize::from(text.ends_with('\n')));
            let blank = last_index.saturating_sub(l);
            let n = empty_paragraphs(blank, s.after);
            out.extend((0..n).map(|_| empty_paragraph()));
        }
        merge_adjacent_quotes(&mut out);
        out
    }

    /// Parses the block at the cursor into `out`; returns the end of its source.
    fn one_block(
        &mut self,
        ev: &mut Events<'_>,
        images: bool,
        depth: usize,
        out: &mut Vec<Node>,
    ) -> usize {
        match ev.peek() {
            Some(e) if is_inline(e) => {
                let start = ev.pos;
                self.marks.clear();
                let items = self.inlines(ev, depth + 1);
                out.extend(self.paragraph_or_images(items, images, depth));
                if ev.pos > start {
                    ev.last_range().end
                } else {
                    ev.next();
                    ev.last_range().end
                }
            }
            Some(Event::End(_)) | Some(Event::TaskListMarker(_)) => {
                ev.next();
                ev.last_range().end
            }
            Some(Event::Start(Tag::Paragraph)) if self.math_paragraph(ev).is_some() => {
                let (formula, end) = self.math_paragraph(ev).expect("checked");
                ev.next();
                self.skip_element(ev);
                out.push(Node::Block(Element::void(
                    "math",
                    obj([("formula", json!(formula))]),
                )));
                end
            }
            Some(_) => {
                let e = ev.next().expect("peeked");
                let r = ev.last_range();
                if let Some(n) = self.block(e, ev, images, depth) {
                    out.push(n);
                }
                r.end
            }
            None => 0,
        }
    }

    /// The formula of a paragraph that is one `$$…$$` (possibly over several lines), taken
    /// verbatim from the source, and the paragraph's end.
    fn math_paragraph(&self, ev: &Events<'_>) -> Option<(String, usize)> {
        let r = ev.range()?;
        let text = self.src[r.clone()].trim_end_matches('\n');
        let inner = text.strip_prefix("$$")?.strip_suffix("$$")?;
        (!inner.is_empty() && !inner.contains("$$")).then(|| (inner.to_string(), r.end))
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
                    out.extend(self.paragraph_or_images(items, images, depth));
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
            Event::Start(Tag::Paragraph) => self.paragraph(ev, images, depth),
            Event::Start(Tag::Heading { level, id, .. }) => {
                self.heading(ev, level, id.as_deref(), depth)
            }
            Event::Start(Tag::BlockQuote(kind)) => {
                if kind.is_some() {
                    self.unknown = true;
                }
                Some(self.blockquote(ev, depth))
            }
            Event::Start(Tag::CodeBlock(kind)) => self.code_block(ev, kind, depth),
            Event::Start(Tag::HtmlBlock) => self.html_block(ev, images, depth),
            Event::Start(Tag::List(start)) => self.list(ev, start, depth),
            Event::Start(Tag::Table(aligns)) => {
                if !self.enter(ev, depth + 1, "table") {
                    return None;
                }
                let node = super::table::pipe_table(self, ev, aligns, depth);
                if node.is_none() {
                    self.unknown = true;
                }
                node
            }
            Event::Html(_) | Event::InlineHtml(_) => {
                self.unknown = true;
                None
            }
            // Footnote definitions outside annotations, definition lists, metadata…: not
            // part of GitBook's model, kept raw.
            Event::Start(_) => {
                self.unknown = true;
                self.skip_element(ev);
                None
            }
            _ => None,
        }
    }

    /// Skips to the end of the element whose start was just consumed.
    fn skip_element(&mut self, ev: &mut Events<'_>) {
        let mut depth = 1;
        while let Some(e) = ev.next() {
            match e {
                Event::Start(_) => depth += 1,
                Event::End(_) => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// A paragraph, an images block (a paragraph of markdown images only) or a math block
    /// (a paragraph of one `$$…$$` formula only).
    fn paragraph_or_images(
        &mut self,
        items: Vec<Item>,
        images: bool,
        depth: usize,
    ) -> Option<Node> {
        if items.iter().any(|i| matches!(i, Item::Anchor(_))) {
            self.unknown = true;
            return None;
        }
        let blank =
            |i: &Item| matches!(i, Item::Leaf(t, m) if t.chars().all(is_space) && m.is_empty());
        let only_images = items.iter().any(|i| matches!(i, Item::Image(..)))
            && items
                .iter()
                .all(|i| matches!(i, Item::Image(..)) || blank(i));
        if images && only_images && self.scanner.enter(depth + 1, "images") {
            let imgs = items
                .into_iter()
                .filter_map(|i| match i {
                    Item::Image(r, alt) => Some(image_block(r, None, &alt, depth + 1)),
                    _ => None,
                })
                .collect();
            return Some(images_block(Map::new(), imgs));
        }
        let meaningful: Vec<&Item> = items.iter().filter(|i| !blank(i)).collect();
        if let [Item::El(e)] = meaningful.as_slice() {
            if e.kind == "inline-math" && e.data.get("display") == Some(&Value::Bool(true)) {
                let formula = e.data.get("formula").cloned().unwrap_or(json!(""));
                return Some(Node::Block(Element::void(
                    "math",
                    obj([("formula", formula)]),
                )));
            }
        }
        let nodes = inline_nodes(items, true);
        if is_empty_inline(&nodes) {
            return None;
        }
        Some(Node::paragraph(nodes))
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
        self.paragraph_or_images(items, images, depth)
    }

    #[inline(never)]
    fn heading(
        &mut self,
        ev: &mut Events<'_>,
        level: HeadingLevel,
        id: Option<&str>,
        depth: usize,
    ) -> Option<Node> {
        // A task item whose text is underlined (`- [ ] a` over `=`) puts its marker inside
        // a setext heading: no GitBook block is a checkable heading, so the block stays raw.
        if let Some(Event::TaskListMarker(_)) = ev.peek() {
            ev.next();
            self.unknown = true;
        }
        self.marks.clear();
        let mut items = self.inlines(ev, depth + 1);
        ev.next();
        // Git Sync writes the page title as `#`, so headings are one level lower.
        let n = match level {
            HeadingLevel::H1 | HeadingLevel::H2 => 1,
            HeadingLevel::H3 => 2,
            _ => 3,
        };
        let mut data = Map::new();
        let mut anchor = id.filter(|id| is_anchor(id)).map(str::to_string);
        if let Some(Item::Anchor(a)) = items.last() {
            if is_anchor(a) && anchor.is_none() {
                anchor = Some(a.clone());
                items.pop();
                // The space Git Sync writes before the anchor.
                if let Some(Item::Leaf(t, m)) = items.last_mut() {
                    if m.is_empty() && t.ends_with(' ') {
                        t.pop();
                    }
                }
            }
        }
        if let Some(a) = anchor {
            data.insert("id".into(), json!(a));
        }
        if items.iter().any(|i| matches!(i, Item::Anchor(_))) {
            self.unknown = true;
        }
        let items = items
            .into_iter()
            .map(|i| match i {
                Item::Leaf(t, m) => Item::Leaf(t.replace('\n', " "), m),
                Item::Image(r, alt) => Item::El(markdown_inline_image(r, &alt)),
                other => other,
            })
            .collect();
        let mut nodes = inline_nodes(items, true);
        one_line(&mut nodes);
        Some(Node::block(&format!("heading-{n}"), data, nodes))
    }

    #[inline(never)]
    fn blockquote(&mut self, ev: &mut Events<'_>, depth: usize) -> Node {
        let in_item = std::mem::replace(&mut self.in_item, false);
        let mut nodes = self.blocks(ev, false, depth + 1, "blockquote");
        self.in_item = in_item;
        nodes.retain(|c| !is_empty_paragraph(c));
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
        match kind {
            CodeBlockKind::Fenced(info) => {
                let info = info.trim();
                let (syntax, rest) = match info.find(char::is_whitespace) {
                    Some(i) => (&info[..i], info[i..].trim()),
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
                // Attributes in the info string: an older form Quire wrote.
                match super::parse_attrs(rest) {
                    Some(attrs) if super::scan::code_attrs(&mut data, &attrs) => {}
                    _ => self.unknown = true,
                }
            }
            // An indented block has no syntax; it is written back fenced.
            CodeBlockKind::Indented => {}
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
                    let in_item = std::mem::replace(&mut self.in_item, true);
                    let nodes = non_empty(self.blocks(ev, false, depth + 2, "list"));
                    self.in_item = in_item;
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

    /// An HTML block: a figure, an image, an aligned paragraph or heading, a table…; any
    /// other HTML (comments included) is kept raw.
    #[inline(never)]
    fn html_block(&mut self, ev: &mut Events<'_>, images: bool, depth: usize) -> Option<Node> {
        let mut html = String::new();
        while let Some(e) = ev.next() {
            match e {
                Event::Html(t) | Event::Text(t) => html.push_str(&t),
                Event::End(_) => break,
                _ => {}
            }
        }
        let node = html::parse_fragment(html.trim_end_matches('\n'))
            .and_then(|nodes| self.html_blocks(&nodes, images, depth));
        if node.is_none() {
            self.unknown = true;
        }
        node
    }

    /// The block of a parsed HTML block, or `None` when it is not a form GitBook writes.
    fn html_blocks(&mut self, nodes: &[HNode], images: bool, depth: usize) -> Option<Node> {
        let els: Vec<&HElement> = nodes
            .iter()
            .map(|n| match n {
                HNode::El(e) => Some(e),
                HNode::Text(_) => None,
            })
            .collect::<Option<_>>()?;
        let [el] = els.as_slice() else {
            return None;
        };
        let names: Vec<&str> = el.attr_names().collect();
        match el.name.as_str() {
            "figure" | "div"
                if (images || self.in_item) && self.scanner.enter(depth + 1, "images") =>
            {
                images_html(el, self.scanner, depth)
            }
            "img" if names == ["src", "alt", "class"] => {
                if el.attr("class") != Some("gitbook-drawing") {
                    return None;
                }
                let LinkTarget::Ref(r @ ContentRef::File { .. }) =
                    resolve(self.scanner, el.attr("src")?)
                else {
                    return None;
                };
                let mut data = obj([("ref", ref_json(&r))]);
                let alt = el.attr("alt")?;
                if !alt.is_empty() {
                    data.insert("alt".into(), json!(alt));
                }
                Some(Node::Block(Element::void("drawing", data)))
            }
            "p" if names == ["align"] => {
                let align = align_from_html(el.attr("align")?)?;
                let items = html_items(&el.children, self.scanner, depth + 1, &[])?;
                let mut data = Map::new();
                data.insert("align".into(), json!(align));
                Some(Node::block("paragraph", data, inline_nodes(items, true)))
            }
            "h2" | "h3" | "h4" if names == ["align"] => {
                let align = align_from_html(el.attr("align")?)?;
                let n = el.name[1..].parse::<usize>().ok()? - 1;
                let items = html_items(&el.children, self.scanner, depth + 1, &[])?;
                let mut data = Map::new();
                data.insert("align".into(), json!(align));
                Some(Node::block(
                    &format!("heading-{n}"),
                    data,
                    inline_nodes(items, true),
                ))
            }
            "table" => super::table::html_table(el, self.scanner, depth),
            "pre" if self.scanner.enter(depth + 1, "code block") => pre_code(el),
            _ => None,
        }
    }

    /// Inline content up to the first non-inline event; its elements are at `depth`. Links
    /// and images recurse; everything else is handled out of the recursion's path, so that
    /// each level of nesting costs little stack.
    fn inlines(&mut self, ev: &mut Events<'_>, depth: usize) -> Vec<Item> {
        let mut out = Vec::new();
        while ev.peek().is_some_and(is_inline) {
            let e = ev.next().expect("peeked");
            match e {
                Event::Start(Tag::Link {
                    dest_url, title, ..
                }) => {
                    if !self.enter(ev, depth, "link") {
                        break;
                    }
                    self.link(ev, &dest_url, &title, depth, &mut out);
                }
                Event::Start(Tag::Image { dest_url, .. }) => {
                    if !self.enter(ev, depth, "image") {
                        break;
                    }
                    self.image(ev, &dest_url, depth, &mut out);
                }
                Event::InlineHtml(h) => {
                    let r = ev.last_range();
                    self.inline_html(ev, &h, r, depth, &mut out);
                }
                e => self.inline_event(e, ev, &mut out),
            }
        }
        out
    }

    /// A link; with the title `mention`, a mention of a page (Git Sync's form).
    #[inline(never)]
    fn link(
        &mut self,
        ev: &mut Events<'_>,
        dest: &str,
        title: &str,
        depth: usize,
        out: &mut Vec<Item>,
    ) {
        let inner = self.inlines(ev, depth + 1);
        ev.next();
        let target = self.scanner.resolve(dest);
        match (title, target) {
            ("", LinkTarget::Ref(r)) => out.push(Item::Link(r, inner)),
            ("", LinkTarget::Text) => out.extend(inner),
            ("mention", LinkTarget::Ref(r)) => {
                let plain = inner
                    .iter()
                    .all(|i| matches!(i, Item::Leaf(_, m) | Item::Entity(_, m) if m.is_empty()));
                let label = items_text(&inner);
                if plain && !label.contains(['\n', SOFT_BREAK]) {
                    out.push(Item::El(super::mention(r, &label, dest)));
                } else {
                    self.unknown = true;
                }
            }
            // Link titles are not part of GitBook's model.
            _ => self.unknown = true,
        }
    }

    #[inline(never)]
    fn image(&mut self, ev: &mut Events<'_>, dest: &str, depth: usize, out: &mut Vec<Item>) {
        let marks = canonical_marks(&self.marks);
        let saved = std::mem::take(&mut self.marks);
        let inner = self.inlines(ev, depth + 1);
        self.marks = saved;
        ev.next();
        // An image's text is one line (its caption or alt): a break inside it is a space.
        let alt = items_text(&inner).replace(['\n', SOFT_BREAK], " ");
        match self.scanner.resolve(dest) {
            LinkTarget::Ref(r @ (ContentRef::File { .. } | ContentRef::Url { .. })) => {
                out.push(Item::Image(r, alt))
            }
            LinkTarget::Ref(_) => self.unknown = true,
            LinkTarget::Text => out.push(Item::Leaf(alt, marks)),
        }
    }

    /// Inline HTML: a mark's opening or closing tag, a line break, or an element GitBook
    /// writes (taken whole from the source up to its closing tag); anything else is not
    /// understood.
    #[inline(never)]
    fn inline_html(
        &mut self,
        ev: &mut Events<'_>,
        tag: &str,
        range: Range<usize>,
        depth: usize,
        out: &mut Vec<Item>,
    ) {
        let tag = tag.trim();
        if let Some(name) = tag.strip_prefix("</").and_then(|t| t.strip_suffix('>')) {
            let kind = match name.trim().to_ascii_lowercase().as_str() {
                "strong" | "b" => "bold",
                "em" | "i" => "italic",
                "s" | "del" | "strike" => "strikethrough",
                "code" => "code",
                "kbd" => "keyboard",
                "sup" => "superscript",
                "sub" => "subscript",
                "mark" => "color",
                _ => {
                    self.unknown = true;
                    return;
                }
            };
            self.pop_mark(kind);
            return;
        }
        let Some(HNode::El(open)) = html::parse_fragment(&format!("{tag}{}", closing_for(tag)))
            .and_then(|mut n| (n.len() == 1).then(|| n.remove(0)))
        else {
            self.unknown = true;
            return;
        };
        if open.name == "br" && open.attrs.is_empty() {
            out.push(Item::Leaf("\n".into(), canonical_marks(&self.marks)));
            return;
        }
        if let Some(kind) = mark_tag(&open) {
            if kind == "code" {
                // Code written as HTML keeps its content verbatim.
                self.element_from_source(ev, &open.name, range, depth, out);
                return;
            }
            let m = if kind == "color" {
                match open.attr("style").and_then(color_mark) {
                    Some(m) => m,
                    None => {
                        self.unknown = true;
                        return;
                    }
                }
            } else {
                mark(kind)
            };
            self.marks.push(m);
            return;
        }
        self.element_from_source(ev, &open.name, range, depth, out);
    }

    /// Takes the element starting at `range` whole from the source (up to its closing
    /// tag), skipping the events inside it, and interprets it.
    fn element_from_source(
        &mut self,
        ev: &mut Events<'_>,
        name: &str,
        range: Range<usize>,
        depth: usize,
        out: &mut Vec<Item>,
    ) {
        let void = matches!(name, "img" | "br" | "source");
        let end = if void {
            Some(range.end)
        } else {
            matching_close(self.src, range.start, name)
        };
        let Some(end) = end else {
            self.unknown = true;
            return;
        };
        let source = &self.src[range.start..end];
        ev.skip_to(end);
        if source.contains('\n') {
            self.unknown = true;
            return;
        }
        let marks = self.marks.clone();
        // A heading's anchor (only understood at the end of a heading).
        if let Some([HNode::El(a)]) = html::parse_fragment(source).as_deref() {
            if let Some(item @ Item::Anchor(_)) = html_inline_element(a, self.scanner) {
                out.push(item);
                return;
            }
        }
        match html::parse_fragment(source).and_then(|nodes| {
            html_items(&nodes, self.scanner, depth, &marks).and_then(|items| {
                // Only whole elements (not text) may come out of one tag.
                (!items.is_empty()).then_some(items)
            })
        }) {
            Some(items) => out.extend(items),
            None => self.unknown = true,
        }
    }

    /// One inline event other than a link, an image or HTML.
    #[inline(never)]
    fn inline_event(&mut self, e: Event<'_>, ev: &mut Events<'_>, out: &mut Vec<Item>) {
        let marks = canonical_marks(&self.marks);
        match e {
            Event::Text(t) => {
                let r = ev.last_range();
                let source = &self.src[r.clone()];
                if source.starts_with('&') && source.ends_with(';') && source != &*t {
                    out.push(Item::Entity(t.to_string(), marks));
                } else if t.contains("$$") && source == &*t {
                    self.text_with_math(ev, t.to_string(), r.start, marks, out);
                } else {
                    out.push(Item::Leaf(t.to_string(), marks));
                }
            }
            Event::Code(t) => {
                let mut m = marks;
                m.push(mark("code"));
                out.push(Item::Leaf(t.to_string(), canonical_marks(&m)));
            }
            Event::DisplayMath(_) | Event::InlineMath(_) => self.unknown = true,
            Event::FootnoteReference(label) => match self.scanner.footnotes.get(&*label) {
                Some(body) => out.push(Item::Annotation(body.clone())),
                None => self.unknown = true,
            },
            Event::SoftBreak if self.scanner.keep_lines => {
                out.push(Item::Leaf(SOFT_BREAK.into(), marks))
            }
            Event::SoftBreak => out.push(Item::Leaf(" ".into(), marks)),
            Event::HardBreak => out.push(Item::Leaf("\n".into(), marks)),
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

    /// Plain text (`text`, written verbatim from `start` in the source) holding `$$`:
    /// GitBook's formulas, `$$…$$` on one line, taken verbatim from the source. A formula
    /// that ends inside some other construct is not understood.
    fn text_with_math(
        &mut self,
        ev: &mut Events<'_>,
        mut text: String,
        mut start: usize,
        marks: Vec<Mark>,
        out: &mut Vec<Item>,
    ) {
        while let Some(k) = text.find("$$") {
            let open = start + k;
            let Some(close) = self.src[open + 2..]
                .find("$$")
                .map(|c| open + 2 + c)
                .filter(|c| !self.src[open + 2..*c].contains('\n') && *c > open + 2)
            else {
                break;
            };
            out.push(Item::Leaf(text[..k].to_string(), marks.clone()));
            out.push(Item::El(Element::void(
                "inline-math",
                obj([
                    ("formula", json!(self.src[open + 2..close])),
                    ("display", json!(true)),
                ]),
            )));
            let end = close + 2;
            let event_end = start + text.len();
            if end <= event_end {
                text = text[end - start..].to_string();
                start = end;
                continue;
            }
            ev.skip_to(end);
            text = String::new();
            start = end;
            if let Some(r) = ev.range().filter(|r| r.start < end) {
                match ev.peek() {
                    Some(Event::Text(t)) if self.src[r.clone()] == **t => {
                        text = self.src[end..r.end].to_string();
                        ev.next();
                    }
                    _ => {
                        self.unknown = true;
                        return;
                    }
                }
            }
        }
        out.push(Item::Leaf(text, marks));
    }

    /// The inline content of a table cell.
    pub(super) fn cell_inlines(&mut self, ev: &mut Events<'_>, depth: usize) -> Vec<Item> {
        self.marks.clear();
        self.inlines(ev, depth)
    }

    fn pop_mark(&mut self, kind: &str) {
        if let Some(i) = self.marks.iter().rposition(|m| m.kind == kind) {
            self.marks.remove(i);
        }
    }
}

/// The closing tag that makes `tag` a complete fragment for parsing it alone.
fn closing_for(tag: &str) -> String {
    let name: String = tag
        .trim_start_matches('<')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    if tag.ends_with("/>") || matches!(name.as_str(), "img" | "br" | "source" | "hr" | "wbr") {
        String::new()
    } else {
        format!("</{name}>")
    }
}

/// The end of the element `name` opened at `start` in `src`, counting nested ones.
fn matching_close(src: &str, start: usize, name: &str) -> Option<usize> {
    let open = format!("<{name}");
    let close = format!("</{name}>");
    let mut depth = 0usize;
    let mut i = start;
    while i < src.len() {
        let rest = &src[i..];
        if rest.starts_with(&close) {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(i + close.len());
            }
            i += close.len();
        } else if rest.starts_with(&open)
            && rest[open.len()..]
                .chars()
                .next()
                .is_some_and(|c| c == '>' || c.is_whitespace())
        {
            depth += 1;
            i += open.len();
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    None
}

/// A code block written as HTML, as GitBook does when lines are highlighted:
/// `<pre class="language-x" data-title=…><code class="lang-x">…<strong>line
/// </strong>…</code></pre>`.
fn pre_code(pre: &HElement) -> Option<Node> {
    let mut data = Map::new();
    let mut syntax = None;
    for (k, v) in &pre.attrs {
        match (k.as_str(), v.as_deref()) {
            ("class", Some(c)) => syntax = Some(c.strip_prefix("language-")?.to_string()),
            ("data-title", Some(t)) => {
                data.insert("title".into(), json!(t));
            }
            ("data-overflow", Some(o)) if matches!(o, "wrap" | "scroll") => {
                data.insert("overflow".into(), json!(o));
            }
            ("data-line-numbers", None) => {
                data.insert("lineNumbers".into(), json!(true));
            }
            ("data-expandable", Some(b)) => {
                data.insert("expandable".into(), json!(parse_bool(b)?));
            }
            ("data-full-width", Some(b)) => {
                data.insert("fullWidth".into(), json!(parse_bool(b)?));
            }
            _ => return None,
        }
    }
    let [HNode::El(code)] = pre.children.as_slice() else {
        return None;
    };
    let expected: Vec<(String, Option<String>)> = match &syntax {
        Some(s) => vec![("class".into(), Some(format!("lang-{s}")))],
        None => Vec::new(),
    };
    if code.name != "code" || code.attrs != expected {
        return None;
    }
    if let Some(s) = syntax {
        data.insert("syntax".into(), json!(s));
    }
    let mut lines: Vec<(String, bool)> = Vec::new();
    let (mut buf, mut highlighted) = (String::new(), false);
    for child in &code.children {
        let (text, strong) = match child {
            HNode::Text(t) => (t.as_str(), false),
            HNode::El(s) if s.name == "strong" && s.attrs.is_empty() => match s.children.as_slice()
            {
                [HNode::Text(t)] => (t.as_str(), true),
                _ => return None,
            },
            HNode::El(_) => return None,
        };
        for c in text.chars() {
            highlighted |= strong;
            if c == '\n' {
                lines.push((std::mem::take(&mut buf), highlighted));
                highlighted = false;
            } else {
                buf.push(c);
            }
        }
    }
    if !buf.is_empty() || lines.is_empty() {
        lines.push((buf, highlighted));
    }
    let lines = lines
        .into_iter()
        .map(|(text, hl)| {
            let mut d = Map::new();
            if hl {
                d.insert("highlighted".into(), json!(true));
            }
            Node::block("code-line", d, vec![Node::text(&text)])
        })
        .collect();
    Some(Node::block("code", data, lines))
}

/// `left`/`center`/`right` of HTML as the official `start`/`center`/`end`.
pub(super) fn align_from_html(a: &str) -> Option<&'static str> {
    match a {
        "left" => Some("start"),
        "center" => Some("center"),
        "right" => Some("end"),
        _ => None,
    }
}

/// An images block from `<figure>…</figure>` or `<div …>figures</div>`.
fn images_html(el: &HElement, scanner: &Scanner<'_>, depth: usize) -> Option<Node> {
    if el.name == "figure" {
        return Some(images_block(
            Map::new(),
            vec![figure(el, scanner, depth + 1)?],
        ));
    }
    let mut data = Map::new();
    let mut expected = Vec::new();
    for (k, v) in &el.attrs {
        let v = v.as_deref()?;
        match k.as_str() {
            "align" => {
                if !matches!(v, "left" | "center" | "right") {
                    return None;
                }
                data.insert("align".into(), json!(v));
            }
            "data-full-width" => {
                data.insert("fullWidth".into(), json!(parse_bool(v)?));
            }
            "data-with-frame" => {
                data.insert("withFrame".into(), json!(parse_bool(v)?));
            }
            _ => return None,
        }
        expected.push(k.as_str());
    }
    let kids = el.element_children()?;
    if kids.is_empty() {
        return None;
    }
    let mut imgs = Vec::new();
    for k in kids {
        imgs.push(match k.name.as_str() {
            "figure" => figure(k, scanner, depth + 1)?,
            "img" => {
                let e = figure_img(k, None, scanner)?;
                image_with(e, None, depth + 1)
            }
            _ => return None,
        });
    }
    Some(images_block(data, imgs))
}

/// `true`/`false` of an HTML attribute.
pub(super) fn parse_bool_attr(v: &str) -> Option<bool> {
    parse_bool(v)
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// One image of a figure: `<img>` or `<picture>`, then an optional `<figcaption>`.
fn figure(el: &HElement, scanner: &Scanner<'_>, depth: usize) -> Option<Node> {
    if !el.attrs.is_empty() {
        return None;
    }
    let kids = el.element_children()?;
    let (img, caption) = match kids.as_slice() {
        [img] => (*img, None),
        [img, cap] if cap.name == "figcaption" && cap.attrs.is_empty() => (*img, Some(*cap)),
        _ => return None,
    };
    let data = match img.name.as_str() {
        "img" => figure_img(img, None, scanner)?,
        "picture" if img.attrs.is_empty() => {
            let pk = img.element_children()?;
            let [source, inner] = pk.as_slice() else {
                return None;
            };
            figure_img(inner, Some(dark_source(source)?), scanner)?
        }
        _ => return None,
    };
    let caption = match caption {
        None => None,
        Some(cap) => {
            let ck = cap.element_children()?;
            match ck.as_slice() {
                [] => None,
                [p] if p.name == "p" && p.attrs.is_empty() => {
                    let items = html_items(&p.children, scanner, depth + 2, &[])?;
                    let nodes = inline_nodes(items, true);
                    (!is_empty_inline(&nodes)).then_some(nodes)
                }
                _ => return None,
            }
        }
    };
    Some(image_with(data, caption, depth))
}

/// The data of a block image from `<img src alt [width] [height]>`.
fn figure_img(
    el: &HElement,
    dark: Option<&str>,
    scanner: &Scanner<'_>,
) -> Option<Map<String, Value>> {
    if el.name != "img" {
        return None;
    }
    let mut data = Map::new();
    let names: Vec<&str> = el.attr_names().collect();
    let allowed = ["src", "alt", "width", "height"];
    if names.len() < 2 || names[..2] != ["src", "alt"] || !names.iter().all(|n| allowed.contains(n))
    {
        return None;
    }
    data.insert(
        "ref".into(),
        ref_json(&image_ref(scanner, el.attr("src")?)?),
    );
    if let Some(d) = dark {
        data.insert("refDark".into(), ref_json(&image_ref(scanner, d)?));
    }
    data.insert("alt".into(), json!(el.attr("alt")?));
    for k in ["width", "height"] {
        if let Some(v) = el.attr(k) {
            data.insert(k.into(), length(v)?);
        }
    }
    Some(data)
}

/// A length attribute: a number of pixels, or a percentage.
pub(super) fn length(v: &str) -> Option<Value> {
    if let Some(p) = v.strip_suffix('%') {
        let n: f64 = p.parse().ok()?;
        let n = serde_json::Number::from_f64(n)?;
        return (super::render::number_text(&n) == p).then(|| json!({"unit": "%", "value": n}));
    }
    let n: serde_json::Number = v.parse().ok()?;
    (super::render::number_text(&n) == v).then_some(Value::Number(n))
}

/// An image block element with its data and caption.
fn image_with(data: Map<String, Value>, caption: Option<Vec<Node>>, _depth: usize) -> Node {
    let mut el = Element::void("image", data);
    el.fragments = Some(
        caption
            .map(|nodes| {
                let mut f = fragment("caption", vec![Node::paragraph(nodes)]);
                f.kind = None;
                f
            })
            .into_iter()
            .collect(),
    );
    Node::Block(el)
}

/// A block image from a markdown image: its alt text is the caption (as Git Sync reads it).
fn image_block(r: ContentRef, _dark: Option<ContentRef>, alt: &str, depth: usize) -> Node {
    let mut data = Map::new();
    data.insert("ref".into(), ref_json(&r));
    data.insert("alt".into(), json!(""));
    let caption = (!alt.trim().is_empty()).then(|| vec![Node::text(alt.trim())]);
    image_with(data, caption, depth)
}

/// An inline image from a markdown image: its alt text is the caption.
pub(super) fn markdown_inline_image(r: ContentRef, alt: &str) -> Element {
    let mut data = Map::new();
    data.insert("ref".into(), ref_json(&r));
    if !alt.is_empty() {
        data.insert("caption".into(), json!(alt));
    }
    Element::void("inline-image", data)
}

pub(super) fn images_block(data: Map<String, Value>, images: Vec<Node>) -> Node {
    let mut el = Element::with_nodes("images", data, images);
    el.is_void = Some(false);
    Node::Block(el)
}

pub(super) fn non_empty(mut nodes: Vec<Node>) -> Vec<Node> {
    if nodes.is_empty() {
        nodes.push(Node::paragraph(vec![Node::text("")]));
    }
    nodes
}

/// Whether a block is a paragraph with no text.
fn is_empty_paragraph(n: &Node) -> bool {
    matches!(n, Node::Block(e) if e.kind == "paragraph" && e.meta.is_none() && e.data.is_empty()
        && is_empty_inline(e.children()))
}

pub(super) fn merge_adjacent_quotes(nodes: &mut Vec<Node>) {
    // Two quotes in a row cannot be written apart in markdown, so keep them as one; empty
    // paragraphs cannot be written in a quote either.
    let mut out: Vec<Node> = Vec::with_capacity(nodes.len());
    for n in nodes.drain(..) {
        if let (Some(Node::Block(prev)), Node::Block(cur)) = (out.last_mut(), &n) {
            if prev.kind == "blockquote" && cur.kind == "blockquote" {
                let children = prev.nodes.get_or_insert_with(Vec::new);
                children.extend(cur.children().iter().cloned());
                children.retain(|c| !is_empty_paragraph(c));
                if children.is_empty() {
                    children.push(Node::paragraph(vec![Node::text("")]));
                }
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

pub(super) fn is_anchor(id: &str) -> bool {
    !id.is_empty()
        && id.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '+' | '_')
        })
}

fn items_text(items: &[Item]) -> String {
    let mut out = String::new();
    for i in items {
        match i {
            Item::Leaf(t, _) | Item::Entity(t, _) => out.push_str(t),
            Item::Link(_, inner) => out.push_str(&items_text(inner)),
            Item::Image(_, alt) => out.push_str(alt),
            Item::El(e) => out.push_str(&Node::Inline(e.clone()).plain_text()),
            Item::Anchor(_) | Item::Annotation(_) => {}
        }
    }
    out
}

/// Turns into spaces the soft breaks of merged leaves that could not be written as a line
/// end: next to another break (that would make a blank line, or follow a backslash break),
/// or at the edge of marked text (where `**` would not open or close).
fn writable_soft_breaks(leaves: &mut [Leaf]) {
    // Every parse merges leaves; only those keeping lines hold a soft break.
    if !leaves.iter().any(|l| l.text.contains(SOFT_BREAK)) {
        return;
    }
    let chars: Vec<Vec<char>> = leaves.iter().map(|l| l.text.chars().collect()).collect();
    let is_break = |c: Option<&char>| matches!(c.copied(), Some('\n' | SOFT_BREAK));
    for (i, l) in leaves.iter_mut().enumerate() {
        let text = &chars[i];
        if !text.contains(&SOFT_BREAK) {
            continue;
        }
        let edge = |k: usize| !l.marks.is_empty() && (k == 0 || k + 1 == text.len());
        l.text = (0..text.len())
            .map(|k| {
                let prev = match k {
                    0 => i.checked_sub(1).and_then(|j| chars[j].last()),
                    _ => text.get(k - 1),
                };
                let next = text
                    .get(k + 1)
                    .or_else(|| chars.get(i + 1).and_then(|c| c.first()));
                match text[k] {
                    SOFT_BREAK if is_break(prev) || is_break(next) || edge(k) => ' ',
                    c => c,
                }
            })
            .collect();
    }
}

/// Whitespace, or a soft break.
fn is_space(c: char) -> bool {
    c.is_whitespace() || c == SOFT_BREAK
}

/// Soft breaks in `nodes` (and the inline elements in them) as spaces, for content that is
/// one line (headings, captions).
pub(super) fn one_line(nodes: &mut [Node]) {
    for n in nodes {
        match n {
            Node::Text(t) => {
                for l in &mut t.leaves {
                    if l.text.contains(SOFT_BREAK) {
                        l.text = l.text.replace(SOFT_BREAK, " ");
                    }
                }
            }
            Node::Inline(e) => one_line(e.nodes.as_deref_mut().unwrap_or_default()),
            Node::Block(_) => {}
        }
    }
}

pub(super) fn is_empty_inline(nodes: &[Node]) -> bool {
    nodes.iter().all(|n| match n {
        Node::Text(t) => t.leaves.iter().all(|l| l.text.is_empty()),
        _ => false,
    })
}

/// A code block of `text`, one `code-line` per line.
pub(super) fn code_block(data: Map<String, Value>, text: &str) -> Node {
    let lines = text
        .split('\n')
        .map(|l| Node::block("code-line", Map::new(), vec![Node::text(l)]))
        .collect();
    Node::block("code", data, lines)
}

fn is_code(marks: &[Mark]) -> bool {
    marks.iter().any(|m| m.kind == "code")
}

/// Builds normalised inline nodes: leaves merged, whitespace around line breaks and (at the
/// top of a paragraph) at both ends removed — except text written as character references
/// — and a text node around every inline element.
pub(super) fn inline_nodes(items: Vec<Item>, top: bool) -> Vec<Node> {
    enum Piece {
        Leaf(Leaf, bool),
        El(Element),
    }
    let mut pieces: Vec<Piece> = Vec::new();
    for item in items {
        match item {
            Item::Leaf(text, marks) | Item::Entity(text, marks) if is_code(&marks) => {
                pieces.push(Piece::Leaf(
                    Leaf {
                        text: text.replace('\n', " "),
                        marks: canonical_marks(&marks),
                    },
                    true,
                ));
            }
            Item::Leaf(text, marks) => pieces.push(Piece::Leaf(
                Leaf {
                    text,
                    marks: canonical_marks(&marks),
                },
                false,
            )),
            Item::Entity(text, marks) => pieces.push(Piece::Leaf(
                Leaf {
                    text,
                    marks: canonical_marks(&marks),
                },
                true,
            )),
            Item::Link(r, inner) => {
                let mut data = Map::new();
                data.insert("ref".into(), ref_json(&r));
                pieces.push(Piece::El(Element::with_nodes(
                    "link",
                    data,
                    inline_nodes(inner, false),
                )));
            }
            Item::Image(r, alt) => pieces.push(Piece::El(markdown_inline_image(r, &alt))),
            Item::El(mut e) => {
                e.data.remove("display");
                pieces.push(Piece::El(e));
            }
            Item::Anchor(_) => {}
            Item::Annotation(body) => {
                // The annotated text is the word just before the reference.
                let mut word = Leaf::default();
                if let Some(Piece::Leaf(l, _)) = pieces.last_mut() {
                    let at = l.text.rfind(is_space).map_or(0, |i| {
                        i + l.text[i..].chars().next().map_or(1, char::len_utf8)
                    });
                    word = Leaf {
                        text: l.text[at..].to_string(),
                        marks: l.marks.clone(),
                    };
                    l.text.truncate(at);
                }
                let mut el = Element::with_nodes(
                    "annotation",
                    Map::new(),
                    vec![Node::Text(Text {
                        key: None,
                        leaves: vec![word],
                    })],
                );
                el.is_void = Some(false);
                el.fragments = Some(vec![fragment("annotation-body", non_empty(body))]);
                pieces.push(Piece::El(el));
            }
        }
    }
    // Whitespace normalisation on plain leaves, repeated until nothing changes because
    // trimming can empty a leaf and expose its neighbour.
    loop {
        let before: usize = pieces.len();
        let mut changed = false;
        let n = pieces.len();
        for (i, piece) in pieces.iter_mut().enumerate() {
            if let Piece::Leaf(l, false) = piece {
                // Spaces at the ends of a paragraph mean nothing (unless written as
                // `&#x20;`); spaces around line breaks are kept as written.
                let mut t = l.text.clone();
                if top && i == 0 {
                    t = t.trim_start_matches([' ', '\t', SOFT_BREAK]).to_string();
                }
                if top && i + 1 == n {
                    t = t.trim_end_matches([' ', '\t', SOFT_BREAK]).to_string();
                }
                // Line breaks at either end are kept: Git Sync writes them as `<br>`.
                if t != l.text {
                    l.text = t;
                    changed = true;
                }
            }
        }
        pieces.retain(|p| !matches!(p, Piece::Leaf(l, _) if l.text.is_empty()));
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
        writable_soft_breaks(&mut merged);
        nodes.push(Node::Text(Text {
            key: None,
            leaves: merged,
        }));
    };
    for p in pieces {
        match p {
            Piece::Leaf(l, _) => leaves.push(l),
            Piece::El(e) => {
                flush(&mut leaves, &mut nodes);
                nodes.push(Node::Inline(e));
            }
        }
    }
    flush(&mut leaves, &mut nodes);
    nodes
}
