//! Page documents as safe, server-rendered HTML.
//!
//! Every block and inline of the GitBook dialect renders (unknown types render their
//! children), and every input is treated as hostile: all text and attribute values are
//! escaped, the HTML of raw paragraphs (content the parser kept verbatim) is written again
//! from a browser's parse of it through a strict allowlist (module `sanitize`), URLs are
//! limited to `http:`, `https:`, `mailto:`, `tel:`, relative paths and anchors, and no
//! `style`, event attribute or iframe is ever written. Links to pages and
//! files go through the caller's [`Resolve`]; what it cannot resolve is written as text.
//!
//! The walk uses an explicit stack, never recursion, so no document can exhaust the
//! thread's stack; elements deeper than [`MAX_DEPTH`] are written as their plain text.
//! Each node and fragment is written at most once, so the output is linear in the input.
//!
//! Heading anchors are the anchors of search [`sections`](mod@crate::sections), so that
//! search results link into the rendered page. A document's `heading-1` is an `<h2>`
//! (Git Sync's `##`): the page title is the page's `<h1>`, written by the page layout.

mod highlight;
mod sanitize;
#[cfg(test)]
mod tests;
mod text_diff;

pub use text_diff::markdown_diff;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::document::{Document, Element, Fragment, Leaf, Node, Text};
use crate::limits::MAX_DEPTH;
use crate::model::ContentRef;
use crate::sections::{heading, Anchors};

pub use highlight::{highlight_css, legible_hex, MAX_HIGHLIGHT_BYTES};

/// Total bytes of code highlighted in one document; later code blocks are plain text, so
/// that a page of many large blocks costs bounded time.
const HIGHLIGHT_BUDGET: usize = 1024 * 1024;

/// A file of the revision as the renderer links to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileRef {
    /// Where the file is served.
    pub url: String,
    /// File name, shown on download links.
    pub name: String,
    /// Content type (`image/png`…).
    pub content_type: String,
    /// Width in pixels, for images, when known.
    pub width: Option<u32>,
    /// Height in pixels, for images, when known.
    pub height: Option<u32>,
}

/// What the renderer asks the caller about the revision being published.
pub trait Resolve {
    /// Published URL of a page of the same revision (by page id), with an optional anchor;
    /// `None` if unknown or hidden.
    fn page_url(&self, page_id: &str, anchor: Option<&str>) -> Option<String>;

    /// A file of the revision (by file id); `None` if unknown.
    fn file(&self, file_id: &str) -> Option<FileRef>;

    /// URL of any other reference (another space's page or anchor, a space, a collection,
    /// a user…); `None` when it cannot be resolved.
    fn other(&self, r: &ContentRef) -> Option<String>;

    /// Title of a referenced page or space, for content-reference cards and mentions.
    fn title(&self, _r: &ContentRef) -> Option<String> {
        None
    }

    /// Whether the content of an `{% if %}` block with this expression is shown. Hidden
    /// by default: adaptive content is for the visitors it was written for.
    fn condition(&self, _expression: &str) -> bool {
        false
    }
}

/// A [`Resolve`] that resolves nothing: only URLs and same-page anchors become links.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLinks;

impl Resolve for NoLinks {
    fn page_url(&self, _page_id: &str, _anchor: Option<&str>) -> Option<String> {
        None
    }
    fn file(&self, _file_id: &str) -> Option<FileRef> {
        None
    }
    fn other(&self, _r: &ContentRef) -> Option<String> {
        None
    }
}

/// One heading of the page's outline (a top-level heading, as in search sections).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutlineEntry {
    /// Heading level, 1–3 (`heading-1` is 1).
    pub level: u8,
    /// The heading's anchor (its `id` in the HTML).
    pub anchor: String,
    /// Plain text of the heading.
    pub text: String,
}

/// A rendered document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The HTML of the document's blocks (no page layout around them).
    pub html: String,
    /// The document's top-level headings, in order.
    pub outline: Vec<OutlineEntry>,
}

/// Renders a document as HTML, with its outline.
pub fn render_document(doc: &Document, resolve: &dyn Resolve) -> Rendered {
    let mut r = Renderer::new(resolve);
    // Top-level headings take their anchors first, in order, exactly as search sections
    // do; nested headings then take anchors that are still free.
    let mut top_ids = Vec::with_capacity(doc.nodes.len());
    for node in &doc.nodes {
        top_ids.push(heading(node).map(|(e, level)| {
            let text = node.plain_text();
            let anchor = r.anchors.assign(e, &text);
            r.outline.push(OutlineEntry {
                level,
                anchor: anchor.clone(),
                text,
            });
            anchor
        }));
    }
    for (node, id) in doc.nodes.iter().zip(top_ids) {
        r.top_id = id;
        r.run(vec![Task::Node(node, 1)]);
    }
    r.top_id = None;
    r.write_notes();
    Rendered {
        html: r.out,
        outline: r.outline,
    }
}

/// Renders inline content (a title, a description, a caption) as HTML, without blocks'
/// wrappers; annotations are written as their text.
pub fn render_inline(nodes: &[Node], resolve: &dyn Resolve) -> String {
    let mut r = Renderer::new(resolve);
    r.inline_only = true;
    r.run(nodes.iter().rev().map(|n| Task::Node(n, 1)).collect());
    r.out
}

/// Escapes text for HTML content.
pub fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    escape_text_into(&mut out, s);
    out
}

/// The empty element a `reusable-content` block renders as: the server replaces this exact
/// HTML with the reusable content's own rendering.
pub fn reusable_content_placeholder(id: &str) -> String {
    format!(
        "<div class=\"reusable-content\" data-reusable-content=\"{}\"></div>",
        escape_attr(id)
    )
}

/// Escapes text for a quoted HTML attribute value.
pub fn escape_attr(s: &str) -> String {
    // The same five characters are escaped in both places: one rule that is always safe.
    escape_text(s)
}

/// Appends `s` escaped (`& < > " '`; NUL, which HTML refuses, as U+FFFD).
pub(crate) fn escape_text_into(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            0 => "\u{FFFD}",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

/// The URL of a reference a document names: a link (when [`safe_url`]), and a file, page or
/// anchor of the same revision through `resolve`; another space's page or anchor, or a
/// space, through `space_url` (given the space's id). Anything else (a collection, a user)
/// has none here.
pub fn ref_url(
    resolve: &(impl Resolve + ?Sized),
    r: &ContentRef,
    space_url: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    match r {
        ContentRef::Url { url } => safe_url(url).map(str::to_string),
        ContentRef::File { file } => resolve.file(file).map(|f| f.url),
        ContentRef::Page { page, space: None } => resolve.page_url(page, None),
        ContentRef::Anchor {
            anchor,
            page: Some(page),
            space: None,
        } => resolve.page_url(page, Some(anchor)),
        ContentRef::Anchor {
            anchor,
            page: None,
            space: None,
        } => Some(format!("#{anchor}")),
        ContentRef::Page { space: Some(s), .. }
        | ContentRef::Anchor { space: Some(s), .. }
        | ContentRef::Space { space: s } => space_url(s),
        _ => None,
    }
}

/// The URL if it is safe in an `href` or `src`: `http:`, `https:`, `mailto:`, `tel:`, a
/// relative path or an anchor. Surrounding spaces are trimmed; any control character
/// (browsers drop tabs and newlines inside URLs, which hides schemes) refuses the URL.
pub fn safe_url(url: &str) -> Option<&str> {
    let url = url.trim_matches(|c: char| c <= ' ');
    if url.is_empty() || url.chars().any(char::is_control) {
        return None;
    }
    match url.find([':', '/', '?', '#']) {
        Some(i) if url.as_bytes()[i] == b':' => {
            let scheme = &url[..i];
            ["http", "https", "mailto", "tel"]
                .iter()
                .any(|s| s.eq_ignore_ascii_case(scheme))
                .then_some(url)
        }
        _ => Some(url),
    }
}

/// A URL as the one candidate of a `srcset`, which is a list split at commas and spaces:
/// those are written as percent escapes (`a (1).png` is `a%20(1).png`), the same URL.
pub(crate) fn srcset_url(url: &str) -> String {
    url.replace(' ', "%20").replace(',', "%2C")
}

/// Whether a safe URL leaves the site (it then gets `rel="noopener noreferrer"`).
fn is_external(url: &str) -> bool {
    let lower = |n: usize| url.get(..n).map(str::to_ascii_lowercase);
    url.starts_with("//")
        || lower(5).as_deref() == Some("http:")
        || lower(6).as_deref() == Some("https:")
}

/// A piece of work of the walk.
enum Task<'a> {
    /// A node at a depth (a top-level block is at depth 1).
    Node(&'a Node, usize),
    /// Nodes in order, at a depth.
    Nodes(&'a [Node], usize),
    /// Markup, written as is (built by the renderer, every value in it escaped).
    Html(Cow<'static, str>),
}

fn html(s: impl Into<Cow<'static, str>>) -> Task<'static> {
    Task::Html(s.into())
}

struct Renderer<'a> {
    resolve: &'a dyn Resolve,
    out: String,
    anchors: Anchors,
    outline: Vec<OutlineEntry>,
    /// Anchor of the top-level heading being written.
    top_id: Option<String>,
    /// Bodies of the annotations met, written as notes at the end.
    notes: Vec<&'a [Node]>,
    /// Numbers the tab groups of the page, for their ids.
    tab_groups: usize,
    /// Bytes of code highlighting may still take.
    highlight_budget: usize,
    /// Inline rendering: annotations are not collected.
    inline_only: bool,
}

impl<'a> Renderer<'a> {
    fn new(resolve: &'a dyn Resolve) -> Self {
        Renderer {
            resolve,
            out: String::new(),
            anchors: Anchors::default(),
            outline: Vec::new(),
            top_id: None,
            notes: Vec::new(),
            tab_groups: 0,
            highlight_budget: HIGHLIGHT_BUDGET,
            inline_only: false,
        }
    }

    /// Runs the walk until `stack` is empty. Tasks are popped, so they are pushed in
    /// reverse order.
    fn run(&mut self, mut stack: Vec<Task<'a>>) {
        while let Some(task) = stack.pop() {
            match task {
                Task::Html(s) => self.out.push_str(&s),
                Task::Nodes(nodes, depth) => {
                    stack.extend(nodes.iter().rev().map(|n| Task::Node(n, depth)))
                }
                Task::Node(Node::Text(t), _) => self.text(t),
                Task::Node(node @ (Node::Block(e) | Node::Inline(e)), depth) => {
                    if depth > MAX_DEPTH {
                        // Too deep to be real content: its text, without structure.
                        let block = matches!(node, Node::Block(_));
                        if block {
                            self.out.push_str("<p>");
                        }
                        self.escaped_with_breaks(&node.plain_text());
                        if block {
                            self.out.push_str("</p>");
                        }
                        continue;
                    }
                    let parts = self.element(e, depth);
                    stack.extend(parts.into_iter().rev());
                }
            }
        }
    }

    fn escaped_with_breaks(&mut self, text: &str) {
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                self.out.push_str("<br>");
            }
            escape_text_into(&mut self.out, line);
        }
    }

    /// A run of text: each leaf in its marks.
    fn text(&mut self, t: &Text) {
        for leaf in &t.leaves {
            self.leaf(leaf);
        }
    }

    fn leaf(&mut self, leaf: &Leaf) {
        if leaf.text.is_empty() {
            return;
        }
        let mut closes: Vec<&'static str> = Vec::new();
        let mut marks: Vec<_> = leaf.marks.iter().collect();
        marks.sort_by_key(|m| mark_order(&m.kind));
        for m in marks {
            let (open, close): (Cow<'static, str>, &'static str) = match m.kind.as_str() {
                "bold" => ("<strong>".into(), "</strong>"),
                "italic" => ("<em>".into(), "</em>"),
                "strikethrough" => ("<s>".into(), "</s>"),
                "code" => ("<code>".into(), "</code>"),
                "keyboard" => ("<kbd>".into(), "</kbd>"),
                "superscript" => ("<sup>".into(), "</sup>"),
                "subscript" => ("<sub>".into(), "</sub>"),
                "color" => match color_classes(m.data.as_ref()) {
                    Some(classes) => (format!("<mark class=\"{classes}\">").into(), "</mark>"),
                    None => continue,
                },
                _ => continue,
            };
            self.out.push_str(&open);
            closes.push(close);
        }
        self.escaped_with_breaks(&leaf.text);
        for c in closes.iter().rev() {
            self.out.push_str(c);
        }
    }

    /// The URL a reference resolves to, when it is safe to link to.
    fn ref_url(&self, r: &ContentRef) -> Option<String> {
        let url = match r {
            ContentRef::Url { url } => url.clone(),
            ContentRef::Page { page, space: None } => self.resolve.page_url(page, None)?,
            ContentRef::Anchor {
                anchor,
                page: None,
                space: None,
            } => format!("#{anchor}"),
            ContentRef::Anchor {
                anchor,
                page: Some(page),
                space: None,
            } => self.resolve.page_url(page, Some(anchor))?,
            ContentRef::File { file } => self.resolve.file(file)?.url,
            other => self.resolve.other(other)?,
        };
        safe_url(&url).map(str::to_string)
    }

    /// The URL a destination written in raw content resolves to (as a reference of the
    /// dialect: `/pages/…`, `/files/…`, a URL…), when it is safe.
    fn raw_url(&self, href: &str) -> Option<String> {
        self.ref_url(&crate::markdown::default_ref(href.trim()))
    }

    /// `<a href="…" …>` for a safe URL.
    fn open_link(url: &str, class: Option<&str>) -> String {
        let mut a = String::from("<a href=\"");
        escape_text_into(&mut a, url);
        a.push('"');
        if let Some(c) = class {
            a.push_str(" class=\"");
            a.push_str(c);
            a.push('"');
        }
        if is_external(url) {
            a.push_str(" rel=\"noopener noreferrer\"");
        }
        a.push('>');
        a
    }

    /// The parts of one element at `depth`; its children are at `depth + 1`.
    fn element(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let kids = Task::Nodes(e.children(), depth + 1);
        match e.kind.as_str() {
            "paragraph" => self.paragraph(e, depth),
            // Every `heading-*` (as search sections count them), so that anchors match.
            k if k.starts_with("heading-") => self.heading(e, depth),
            "list-unordered" | "list-ordered" | "list-tasks" => self.list(e, depth),
            "list-item" => vec![html("<li>"), kids, html("</li>")],
            "blockquote" => vec![html("<blockquote>"), kids, html("</blockquote>")],
            "code" => {
                let code = self.code(e);
                vec![Task::Html(code.into())]
            }
            "divider" => vec![html("<hr>")],
            "math" => vec![html(format!(
                "<div class=\"math\">{}</div>",
                escape_text(e.data_str("formula").unwrap_or(""))
            ))],
            "hint" => {
                let (style, label) = match e.data_str("style") {
                    Some("success") => ("success", "Success"),
                    Some("warning") => ("warning", "Warning"),
                    Some("danger") => ("danger", "Danger"),
                    _ => ("info", "Info"),
                };
                vec![
                    html(format!(
                        "<aside class=\"hint hint-{style}\" role=\"note\" aria-label=\"{label}\">"
                    )),
                    kids,
                    html("</aside>"),
                ]
            }
            "tabs" => self.tabs(e, depth),
            "stepper" => items(
                e,
                depth,
                ("<ol class=\"stepper\">", "</ol>"),
                "</li>",
                |_| "<li class=\"step\">".into(),
            ),
            "columns" => items(
                e,
                depth,
                ("<div class=\"columns\">", "</div>"),
                "</div>",
                |_| "<div class=\"column\">".into(),
            ),
            "updates" => items(
                e,
                depth,
                ("<div class=\"updates\">", "</div>"),
                "</article>",
                |item| {
                    let mut open = String::from("<article class=\"update\">");
                    if let Some(date) = item.data_str("date") {
                        let day = date.get(..10).unwrap_or(date);
                        open.push_str(&format!(
                            "<p class=\"update-date\"><time datetime=\"{}\">{}</time></p>",
                            escape_attr(date),
                            escape_text(day)
                        ));
                    }
                    let tags: Vec<&str> = item
                        .data
                        .get("tags")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|t| t.get("tag").and_then(Value::as_str))
                                .collect()
                        })
                        .unwrap_or_default();
                    if !tags.is_empty() {
                        open.push_str("<ul class=\"update-tags\">");
                        for t in tags {
                            open.push_str(&format!("<li>{}</li>", escape_text(t)));
                        }
                        open.push_str("</ul>");
                    }
                    open
                },
            ),
            "if" => {
                if self
                    .resolve
                    .condition(e.data_str("expression").unwrap_or(""))
                {
                    vec![kids]
                } else {
                    Vec::new()
                }
            }
            "prompt" => vec![html("<div class=\"prompt\">"), kids, html("</div>")],
            "expandable" => self.expandable(e, depth),
            "embed" => self.embed(e, depth),
            "file" => self.file(e, depth),
            "content-ref" => self.content_ref(e),
            "reusable-content" => {
                let id = match data_ref(e, "ref") {
                    Some(ContentRef::ReusableContent {
                        reusable_content, ..
                    }) => reusable_content,
                    _ => String::new(),
                };
                // The server puts the reusable content's own rendering here.
                vec![html(reusable_content_placeholder(&id))]
            }
            "swagger" | "openapi-operation" | "openapi-webhook" | "openapi-schemas" => {
                vec![html(openapi(e))]
            }
            "integration" => vec![html(format!(
                "<div class=\"integration\"><span class=\"integration-name\">{}</span></div>",
                escape_text(&format!(
                    "{} / {}",
                    e.data_str("integration").unwrap_or(""),
                    e.data_str("block").unwrap_or("")
                ))
            ))],
            "images" => vec![html("<div class=\"images\">"), kids, html("</div>")],
            "image" => self.image(e, depth),
            "drawing" => match self.img(e, "drawing") {
                Some(img) => vec![html(format!("<figure class=\"drawing\">{img}</figure>"))],
                None => Vec::new(),
            },
            "table" => self.table(e, depth),
            "link" => self.link(e, depth),
            "mention" => self.mention(e),
            "emoji" => {
                let code = e.data_str("code").unwrap_or("");
                match emoji_char(code) {
                    Some(c) => vec![html(format!(
                        "<span class=\"emoji\">{}</span>",
                        escape_text(&c)
                    ))],
                    None => Vec::new(),
                }
            }
            "icon" => vec![html(format!(
                "<span class=\"icon\" data-icon=\"{}\" aria-hidden=\"true\"></span>",
                escape_attr(e.data_str("icon").unwrap_or(""))
            ))],
            "expression" => vec![html(format!(
                "<code class=\"expression\">{}</code>",
                escape_text(e.data_str("expression").unwrap_or(""))
            ))],
            "inline-math" => vec![html(format!(
                "<span class=\"math\">{}</span>",
                escape_text(e.data_str("formula").unwrap_or(""))
            ))],
            "inline-image" => match self.img(e, "inline-image") {
                Some(img) => vec![html(img)],
                None => Vec::new(),
            },
            "button" => vec![html(self.button(e))],
            "annotation" => {
                let mut parts = vec![kids];
                if !self.inline_only {
                    let body = e
                        .fragment("annotation-body")
                        .map(|f| f.nodes.as_slice())
                        .unwrap_or(&[]);
                    self.notes.push(body);
                    let n = self.notes.len();
                    parts.push(html(format!(
                        "<sup class=\"note-ref\"><a href=\"#note:{n}\" id=\"note-ref:{n}\">{n}</a></sup>"
                    )));
                }
                parts
            }
            _ => {
                // Unknown types keep their content: children, then fragments.
                let mut parts = vec![kids];
                for f in e.fragments.iter().flatten() {
                    parts.push(Task::Nodes(&f.nodes, depth + 1));
                }
                parts
            }
        }
    }

    fn paragraph(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        if let Some(raw) = crate::markdown::raw_text(e) {
            // Markdown the parser kept verbatim (unknown tags, HTML that has no node):
            // rendered, its HTML through the allowlist, its destinations resolved.
            if let Some(body) = sanitize::raw_html(&raw, depth, &|href| self.raw_url(href)) {
                return vec![html(format!("<div class=\"raw\">{body}</div>"))];
            }
            // Too deeply nested to read: shown as text.
            let mut p = String::from("<p class=\"raw\">");
            for (i, line) in raw.split('\n').enumerate() {
                if i > 0 {
                    p.push_str("<br>");
                }
                escape_text_into(&mut p, line);
            }
            p.push_str("</p>");
            return vec![html(p)];
        }
        let open = match e.data_str("align") {
            Some("center") => "<p class=\"align-center\">",
            Some("end") => "<p class=\"align-end\">",
            _ => "<p>",
        };
        vec![
            html(open),
            Task::Nodes(e.children(), depth + 1),
            html("</p>"),
        ]
    }

    fn heading(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let level = e.kind[8..].parse::<usize>().unwrap_or(1).clamp(1, 3);
        let id = match self.top_id.take().filter(|_| depth == 1) {
            Some(id) => id,
            None => {
                let text = Node::Block(e.clone()).plain_text();
                self.anchors.assign(e, &text)
            }
        };
        let id = escape_attr(&id);
        let tag = level + 1;
        vec![
            html(format!("<h{tag} id=\"{id}\">")),
            Task::Nodes(e.children(), depth + 1),
            html(format!(
                " <a class=\"anchor\" href=\"#{id}\" aria-label=\"Link to this section\">#</a></h{tag}>"
            )),
        ]
    }

    fn list(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let (open, close) = match e.kind.as_str() {
            "list-ordered" => match e.data.get("start").and_then(Value::as_u64) {
                Some(n) if n != 1 => (format!("<ol start=\"{n}\">"), "</ol>"),
                _ => ("<ol>".to_string(), "</ol>"),
            },
            "list-tasks" => ("<ul class=\"task-list\">".to_string(), "</ul>"),
            _ => ("<ul>".to_string(), "</ul>"),
        };
        let tasks = e.kind == "list-tasks";
        let mut parts = vec![html(open)];
        for item in e.children() {
            match item.element().filter(|i| i.kind == "list-item") {
                Some(i) => {
                    let open = if !tasks {
                        "<li>"
                    } else if i.data.get("checked").and_then(Value::as_bool) == Some(true) {
                        "<li class=\"task\"><input type=\"checkbox\" aria-label=\"Task\" disabled checked> "
                    } else {
                        "<li class=\"task\"><input type=\"checkbox\" aria-label=\"Task\" disabled> "
                    };
                    parts.push(html(open));
                    parts.push(Task::Nodes(i.children(), depth + 2));
                    parts.push(html("</li>"));
                }
                None => parts.push(Task::Node(item, depth + 1)),
            }
        }
        parts.push(html(close));
        parts
    }

    /// Tabs that work without script: a tab list of links to the panels, and every panel
    /// shown with its title as a heading; a script can hide the panels and the titles.
    /// Ids contain `:`, which heading anchors never do, so they cannot clash.
    fn tabs(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        self.tab_groups += 1;
        let g = self.tab_groups;
        let tabs: Vec<&Element> = e.children().iter().filter_map(Node::element).collect();
        let mut head = format!(
            "<div class=\"tabs\" id=\"tabs:{g}\"><div class=\"tab-list\" role=\"tablist\">"
        );
        for (i, t) in tabs.iter().enumerate() {
            let i = i + 1;
            head.push_str(&format!(
                "<a class=\"tab\" role=\"tab\" id=\"tabs:{g}:tab:{i}\" href=\"#tabs:{g}:panel:{i}\" aria-controls=\"tabs:{g}:panel:{i}\" aria-selected=\"{}\">{}</a>",
                i == 1,
                escape_text(t.data_str("title").unwrap_or(""))
            ));
        }
        head.push_str("</div>");
        let mut parts = vec![html(head)];
        for (i, t) in tabs.iter().enumerate() {
            let i = i + 1;
            parts.push(html(format!(
                "<section class=\"tab-panel\" role=\"tabpanel\" id=\"tabs:{g}:panel:{i}\" aria-labelledby=\"tabs:{g}:tab:{i}\"><p class=\"tab-title\" role=\"heading\" aria-level=\"{}\">{}</p>",
                // Below the heading level the tabs are under, at most 6.
                (depth + 3).min(6),
                escape_text(t.data_str("title").unwrap_or(""))
            )));
            parts.push(Task::Nodes(t.children(), depth + 2));
            parts.push(html("</section>"));
        }
        parts.push(html("</div>"));
        parts
    }

    fn expandable(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let open = if e.data.get("defaultExpanded") == Some(&Value::Bool(true)) {
            "<details class=\"expandable\" open><summary>"
        } else {
            "<details class=\"expandable\"><summary>"
        };
        let mut parts = vec![html(open)];
        if let Some(title) = e.fragment("expandable-title") {
            // The title is one paragraph: its inline content goes in the summary.
            for n in &title.nodes {
                match n.element().filter(|p| p.kind == "paragraph") {
                    Some(p) => parts.push(Task::Nodes(p.children(), depth + 2)),
                    None => parts.push(Task::Node(n, depth + 1)),
                }
            }
        }
        parts.push(html("</summary>"));
        if let Some(body) = e.fragment("expandable-body") {
            parts.push(Task::Nodes(&body.nodes, depth + 1));
        }
        parts.push(html("</details>"));
        parts
    }

    /// A caption fragment's paragraphs as inline content in `open`…`close`, or nothing.
    fn caption(
        e: &'a Element,
        depth: usize,
        open: &'static str,
        close: &'static str,
    ) -> Vec<Task<'a>> {
        let Some(f) = e.fragment("caption").filter(|f| !f.nodes.is_empty()) else {
            return Vec::new();
        };
        let mut parts = vec![html(open)];
        for n in &f.nodes {
            match n.element().filter(|p| p.kind == "paragraph") {
                Some(p) => parts.push(Task::Nodes(p.children(), depth + 2)),
                None => parts.push(Task::Node(n, depth + 1)),
            }
        }
        parts.push(html(close));
        parts
    }

    /// An embed: a plain link card to its URL, never a frame.
    fn embed(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let raw = e.data_str("url").unwrap_or("");
        let mut card = String::from("<div class=\"embed\">");
        match safe_url(raw) {
            Some(url) => {
                card.push_str(&Self::open_link(url, Some("embed-link")));
                escape_text_into(&mut card, url);
                card.push_str("</a>");
            }
            None => {
                card.push_str("<span class=\"embed-link\">");
                escape_text_into(&mut card, raw);
                card.push_str("</span>");
            }
        }
        let mut parts = vec![html(card)];
        parts.extend(Self::caption(e, depth, "<p class=\"caption\">", "</p>"));
        parts.push(html("</div>"));
        parts
    }

    fn file(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let file = match data_ref(e, "ref") {
            Some(ContentRef::File { file }) => self.resolve.file(&file),
            _ => None,
        };
        let mut card = String::from("<div class=\"file\">");
        if let Some(f) = &file {
            let label = if f.name.is_empty() { &f.url } else { &f.name };
            match safe_url(&f.url) {
                Some(url) => {
                    card.push_str("<a class=\"file-link\" download href=\"");
                    escape_text_into(&mut card, url);
                    card.push_str("\">");
                    escape_text_into(&mut card, label);
                    card.push_str("</a>");
                }
                None => {
                    card.push_str("<span class=\"file-link\">");
                    escape_text_into(&mut card, label);
                    card.push_str("</span>");
                }
            }
            if !f.content_type.is_empty() {
                card.push_str(" <span class=\"file-type\">");
                escape_text_into(&mut card, &f.content_type);
                card.push_str("</span>");
            }
        }
        let mut parts = vec![html(card)];
        parts.extend(Self::caption(e, depth, "<p class=\"caption\">", "</p>"));
        parts.push(html("</div>"));
        if file.is_none() && parts.len() == 2 {
            // Nothing to show.
            return Vec::new();
        }
        parts
    }

    fn content_ref(&mut self, e: &'a Element) -> Vec<Task<'a>> {
        let Some(r) = data_ref(e, "ref") else {
            return Vec::new();
        };
        let url = self.ref_url(&r);
        let title = self.resolve.title(&r).or_else(|| match &r {
            ContentRef::Url { url } => Some(url.clone()),
            ContentRef::File { file } => self.resolve.file(file).map(|f| f.name),
            _ => None,
        });
        let (Some(url), title) = (url, title) else {
            return match self.resolve.title(&r) {
                Some(t) => vec![html(format!(
                    "<div class=\"content-ref\"><span class=\"content-ref-link\">{}</span></div>",
                    escape_text(&t)
                ))],
                None => Vec::new(),
            };
        };
        let title = title.unwrap_or_else(|| url.clone());
        vec![html(format!(
            "<div class=\"content-ref\">{}{}</a></div>",
            Self::open_link(&url, Some("content-ref-link")),
            escape_text(&title)
        ))]
    }

    /// An `<img>` for an element's `ref` (a file or a URL), with its alt text and size.
    fn img(&self, e: &Element, class: &str) -> Option<String> {
        let r = data_ref(e, "ref")?;
        let (url, mut width, mut height) = match &r {
            ContentRef::File { file } => {
                let f = self.resolve.file(file)?;
                (f.url, f.width, f.height)
            }
            other => (self.ref_url(other)?, None, None),
        };
        let url = safe_url(&url)?.to_string();
        for (k, slot) in [("width", &mut width), ("height", &mut height)] {
            if let Some(n) = e.data.get(k).and_then(Value::as_u64) {
                *slot = u32::try_from(n).ok();
            }
        }
        let alt = e
            .data_str("alt")
            .filter(|a| !a.is_empty())
            .or(e.data_str("caption"))
            .unwrap_or("");
        let mut img = format!(
            "<img class=\"{class}\" src=\"{}\" alt=\"{}\"",
            escape_attr(&url),
            escape_attr(alt)
        );
        if let Some(w) = width {
            img.push_str(&format!(" width=\"{w}\""));
        }
        if let Some(h) = height {
            img.push_str(&format!(" height=\"{h}\""));
        }
        img.push_str(" loading=\"lazy\">");
        // A dark variant.
        let dark = data_ref(e, "refDark").and_then(|d| match &d {
            ContentRef::File { file } => self.resolve.file(file).map(|f| f.url),
            other => self.ref_url(other),
        });
        if let Some(d) = dark.as_deref().and_then(safe_url) {
            img = format!(
                "<picture><source srcset=\"{}\" media=\"(prefers-color-scheme: dark)\">{img}</picture>",
                escape_attr(&srcset_url(d))
            );
        }
        Some(img)
    }

    fn image(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let Some(img) = self.img(e, "image") else {
            // No image to show: its caption still says what it was.
            return Self::caption(e, depth, "<p class=\"caption\">", "</p>");
        };
        let mut parts = vec![html(format!("<figure class=\"image\">{img}"))];
        parts.extend(Self::caption(e, depth, "<figcaption>", "</figcaption>"));
        parts.push(html("</figure>"));
        parts
    }

    fn link(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let kids = Task::Nodes(e.children(), depth + 1);
        match data_ref(e, "ref").and_then(|r| self.ref_url(&r)) {
            Some(url) => vec![html(Self::open_link(&url, None)), kids, html("</a>")],
            None => vec![kids],
        }
    }

    fn mention(&mut self, e: &'a Element) -> Vec<Task<'a>> {
        let Some(r) = data_ref(e, "ref") else {
            return Vec::new();
        };
        // The title of what it mentions; else the label it was written with; else, for a
        // URL, the URL.
        let title = self
            .resolve
            .title(&r)
            .or_else(|| crate::markdown::mention_label(e).map(str::to_string))
            .or_else(|| match &r {
                ContentRef::Url { url } => Some(url.clone()),
                _ => None,
            });
        let Some(title) = title else {
            return Vec::new();
        };
        match self.ref_url(&r) {
            Some(url) => vec![html(format!(
                "{}{}</a>",
                Self::open_link(&url, Some("mention")),
                escape_text(&title)
            ))],
            None => vec![html(format!(
                "<span class=\"mention\">{}</span>",
                escape_text(&title)
            ))],
        }
    }

    fn button(&self, e: &Element) -> String {
        let label = escape_text(e.data_str("label").unwrap_or(""));
        let kind = match e.data_str("kind") {
            Some("secondary") => "secondary",
            _ => "primary",
        };
        match data_ref(e, "ref").and_then(|r| self.ref_url(&r)) {
            Some(url) => format!(
                "{}{label}</a>",
                Self::open_link(&url, Some(&format!("button button-{kind}")))
            ),
            // Action buttons (search, ask) need the site's script: shown as a label.
            None => format!("<span class=\"button button-{kind}\">{label}</span>"),
        }
    }

    /// A code block: a figure with its title, highlighted lines in `<pre><code>`.
    fn code(&mut self, e: &Element) -> String {
        let lines: Vec<String> = e
            .children()
            .iter()
            .map(crate::markdown::plain_text_raw)
            .collect();
        let marked: Vec<bool> = e
            .children()
            .iter()
            .map(|l| {
                l.element()
                    .and_then(|l| l.data.get("highlighted"))
                    .and_then(Value::as_bool)
                    == Some(true)
            })
            .collect();
        let syntax = e.data_str("syntax").unwrap_or("");
        let size: usize = lines.iter().map(|l| l.len() + 1).sum();
        let highlighted = if size <= self.highlight_budget && !syntax.is_empty() {
            self.highlight_budget -= size;
            highlight::highlight_lines(syntax, &lines)
        } else {
            None
        };
        let mut out = String::from("<figure class=\"code-block");
        if e.data_str("overflow") == Some("wrap") {
            out.push_str(" code-wrap");
        }
        out.push_str("\">");
        if let Some(title) = e.data_str("title").filter(|t| !t.is_empty()) {
            out.push_str("<figcaption class=\"code-title\">");
            escape_text_into(&mut out, title);
            out.push_str("</figcaption>");
        }
        out.push_str("<pre class=\"code hl-code");
        if e.data.get("lineNumbers") == Some(&Value::Bool(true)) {
            out.push_str(" line-numbers");
        }
        // Focusable, so that a keyboard can scroll a long line.
        out.push_str("\" tabindex=\"0\"><code");
        if let Some(lang) = language_class(syntax) {
            out.push_str(&format!(" class=\"language-{lang}\""));
        }
        out.push('>');
        for (i, line) in lines.iter().enumerate() {
            out.push_str(if marked[i] {
                "<span class=\"line highlighted\">"
            } else {
                "<span class=\"line\">"
            });
            match &highlighted {
                Some(h) => out.push_str(&h[i]),
                None => escape_text_into(&mut out, line),
            }
            out.push_str("</span>\n");
        }
        out.push_str("</code></pre></figure>");
        out
    }

    /// A table: a grid, or cards; every cell's fragment written once.
    fn table(&mut self, e: &'a Element, depth: usize) -> Vec<Task<'a>> {
        let empty = Map::new();
        let definition = e
            .data
            .get("definition")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let view = e
            .data
            .get("view")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut columns: Vec<&str> = view
            .get("columns")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter(|c| definition.contains_key(*c))
                    .collect()
            })
            .unwrap_or_default();
        if columns.is_empty() && !view.contains_key("columns") {
            columns = definition.keys().map(String::as_str).collect();
            let number = |id: &str| id.strip_prefix('c').and_then(|n| n.parse::<usize>().ok());
            columns.sort_by_key(|c| (number(c), c.to_string()));
        }
        let mut seen = HashSet::new();
        columns.retain(|c| seen.insert(*c));
        let records = crate::markdown::sorted_records(e);
        let fragments: HashMap<&str, &'a Fragment> = e
            .fragments
            .iter()
            .flatten()
            .filter_map(|f| Some((f.fragment.as_deref()?, f)))
            .collect();
        let mut used: HashSet<&str> = HashSet::new();
        let column_def = |c: &str| definition.get(c).and_then(Value::as_object);
        let align = |c: &str| match column_def(c)
            .and_then(|d| d.get("textAlignment"))
            .and_then(Value::as_str)
        {
            Some("center") => " class=\"align-center\"",
            Some("right") => " class=\"align-end\"",
            _ => "",
        };
        let cards = view.get("type").and_then(Value::as_str) == Some("cards");
        let mut parts = Vec::new();
        if cards {
            parts.push(html("<div class=\"cards\">"));
        } else {
            parts.push(html("<div class=\"table-wrap\" tabindex=\"0\"><table>"));
            if view.get("hideHeader") != Some(&Value::Bool(true)) {
                let mut head = String::from("<thead><tr>");
                for c in &columns {
                    let title = column_def(c)
                        .and_then(|d| d.get("title"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    head.push_str(&format!(
                        "<th scope=\"col\"{}>{}</th>",
                        align(c),
                        escape_text(title)
                    ));
                }
                head.push_str("</tr></thead>");
                parts.push(html(head));
            }
            parts.push(html("<tbody>"));
        }
        let view_column = |k: &str| view.get(k).and_then(Value::as_str).filter(|_| cards);
        let (target, cover, cover_dark) = (
            view_column("targetDefinition"),
            view_column("coverDefinition"),
            view_column("coverDefinitionDark"),
        );
        for (rid, record) in records {
            let values = record.get("values").and_then(Value::as_object);
            let value_of = |c: Option<&str>| values.and_then(|v| v.get(c?));
            if cards {
                let mut open = String::from("<article class=\"card\">");
                if let Some(img) =
                    value_of(cover).and_then(|v| self.card_cover(v, value_of(cover_dark)))
                {
                    open.push_str(&img);
                }
                parts.push(html(open));
            } else {
                parts.push(html("<tr>"));
            }
            for c in &columns {
                parts.push(html(if cards {
                    "<div class=\"card-cell\">".to_string()
                } else {
                    format!("<td{}>", align(c))
                }));
                let value = values.and_then(|v| v.get(*c));
                let kind = column_def(c)
                    .and_then(|d| d.get("type"))
                    .and_then(Value::as_str)
                    .unwrap_or("text");
                // A link cell shows the label it was written with.
                let label = value
                    .filter(|_| matches!(kind, "content-ref" | "files"))
                    .and_then(|v| crate::markdown::cell_label(e, rid, c, v))
                    .and_then(|f| fragments.get_key_value(f.fragment.as_deref()?));
                let fragment = value
                    .and_then(Value::as_str)
                    .and_then(|k| fragments.get_key_value(k))
                    .or(label);
                if let Some((key, f)) = fragment {
                    // A fragment named by several cells is written for the first only.
                    if used.insert(*key) {
                        parts.push(Task::Nodes(&f.nodes, depth + 1));
                    }
                } else if let Some(v) = value {
                    parts.push(html(self.cell_value(v, column_def(c))));
                }
                parts.push(html(if cards { "</div>" } else { "</td>" }));
            }
            if cards {
                if let Some(link) = value_of(target).and_then(|v| self.card_target(v)) {
                    parts.push(html(link));
                }
                parts.push(html("</article>"));
            } else {
                parts.push(html("</tr>"));
            }
        }
        parts.push(html(if cards {
            "</div>"
        } else {
            "</tbody></table></div>"
        }));
        parts
    }

    /// A cell value that is not a fragment: a number, a rating, a checkbox, a select's
    /// options, files, an image, a reference. Arrays hold only strings: nothing nests.
    fn cell_value(&self, v: &Value, def: Option<&Map<String, Value>>) -> String {
        let kind = def
            .and_then(|d| d.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("text");
        let strings = |items: &[Value]| -> Vec<String> {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect()
        };
        match v {
            Value::Bool(b) => format!(
                "<input type=\"checkbox\" disabled{}>",
                if *b { " checked" } else { "" }
            ),
            Value::Number(n) if kind == "rating" => {
                let max = def.and_then(|d| d.get("max")).and_then(Value::as_f64);
                rating(n.as_f64().unwrap_or(0.0), max)
            }
            Value::Number(n) => escape_text(&n.to_string()),
            Value::String(s) => escape_text(s),
            Value::Array(items) if kind == "select" => {
                let options = def.and_then(|d| d.get("options")).and_then(Value::as_array);
                strings(items)
                    .iter()
                    .map(|id| {
                        let label = options
                            .into_iter()
                            .flatten()
                            .find(|o| o.get("value").and_then(Value::as_str) == Some(id))
                            .and_then(|o| o.get("label").and_then(Value::as_str))
                            .unwrap_or(id);
                        format!("<span class=\"option\">{}</span>", escape_text(label))
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            Value::Array(items) if kind == "files" => strings(items)
                .iter()
                .filter_map(|id| self.resolve.file(id))
                .map(|f| match safe_url(&f.url) {
                    Some(url) => format!(
                        "<a class=\"file-link\" download href=\"{}\">{}</a>",
                        escape_attr(url),
                        escape_text(&f.name)
                    ),
                    None => escape_text(&f.name),
                })
                .collect::<Vec<_>>()
                .join(", "),
            Value::Array(items) => escape_text(&strings(items).join(", ")),
            Value::Object(_) if kind == "image" => self
                .card_image(v, "cell-image")
                .map(|(img, _)| img)
                .unwrap_or_default(),
            Value::Object(_) => match serde_json::from_value::<ContentRef>(v.clone()) {
                Ok(r) => {
                    let label = self.resolve.title(&r).unwrap_or_default();
                    match self.ref_url(&r) {
                        Some(url) => {
                            let label = if label.is_empty() { url.clone() } else { label };
                            format!("{}{}</a>", Self::open_link(&url, None), escape_text(&label))
                        }
                        None => escape_text(&label),
                    }
                }
                Err(_) => String::new(),
            },
            Value::Null => String::new(),
        }
    }

    /// The URL of an image cell's value (the first of files, a file or URL reference, or
    /// the `ref` of an image record) with its alternative text, when it is safe to show.
    fn image_url(&self, v: &Value) -> Option<(String, String)> {
        let (r, alt) = match v {
            Value::Array(ids) => (
                ContentRef::File {
                    file: ids.first()?.as_str()?.to_string(),
                },
                "",
            ),
            Value::Object(o) if !o.contains_key("kind") => (
                serde_json::from_value(o.get("ref")?.clone()).ok()?,
                o.get("alt").and_then(Value::as_str).unwrap_or(""),
            ),
            Value::Object(_) => (serde_json::from_value(v.clone()).ok()?, ""),
            _ => return None,
        };
        let url = match &r {
            ContentRef::File { file } => self.resolve.file(file)?.url,
            ContentRef::Url { url } => url.clone(),
            _ => return None,
        };
        Some((safe_url(&url)?.to_string(), alt.to_string()))
    }

    /// An `<img>` of an image cell's value, with its URL.
    fn card_image(&self, v: &Value, class: &str) -> Option<(String, String)> {
        let (url, alt) = self.image_url(v)?;
        Some((
            format!(
                "<img class=\"{class}\" src=\"{}\" alt=\"{}\" loading=\"lazy\">",
                escape_attr(&url),
                escape_attr(&alt)
            ),
            url,
        ))
    }

    /// A card's cover, with its dark variant when there is one.
    fn card_cover(&self, v: &Value, dark: Option<&Value>) -> Option<String> {
        let (img, _) = self.card_image(v, "card-cover")?;
        match dark.and_then(|d| self.image_url(d)) {
            Some((d, _)) => Some(format!(
                "<picture><source srcset=\"{}\" media=\"(prefers-color-scheme: dark)\">{img}</picture>",
                escape_attr(&srcset_url(&d))
            )),
            _ => Some(img),
        }
    }

    /// A card's link to its target: a page through the caller's [`Resolve`], or a URL.
    fn card_target(&self, v: &Value) -> Option<String> {
        let r: ContentRef = serde_json::from_value(v.clone()).ok()?;
        let url = self.ref_url(&r)?;
        let title = self.resolve.title(&r).unwrap_or_else(|| url.clone());
        Some(format!(
            "{}{}</a>",
            Self::open_link(&url, Some("card-target")),
            escape_text(&title)
        ))
    }

    /// Annotations' bodies as numbered notes after the document. A note's own annotations
    /// are added to the list while it is written.
    fn write_notes(&mut self) {
        if self.notes.is_empty() {
            return;
        }
        self.out
            .push_str("<section class=\"notes\" aria-label=\"Notes\"><ol>");
        let mut i = 0;
        while i < self.notes.len() {
            let body = self.notes[i];
            i += 1;
            self.out.push_str(&format!("<li id=\"note:{i}\">"));
            self.run(vec![Task::Nodes(body, 2)]);
            self.out.push_str(&format!(
                " <a class=\"note-back\" href=\"#note-ref:{i}\" aria-label=\"Back to the text\">↩</a></li>"
            ));
        }
        self.out.push_str("</ol></section>");
    }
}

/// The items of a container (stepper, columns, updates), each in `item_open` and
/// `item_close`.
fn items<'a>(
    e: &'a Element,
    depth: usize,
    (open, close): (&'static str, &'static str),
    item_close: &'static str,
    item_open: impl Fn(&Element) -> String,
) -> Vec<Task<'a>> {
    let mut parts = vec![html(open)];
    for item in e.children() {
        match item.element() {
            Some(i) => {
                parts.push(html(item_open(i)));
                parts.push(Task::Nodes(i.children(), depth + 2));
                parts.push(html(item_close));
            }
            None => parts.push(Task::Node(item, depth + 1)),
        }
    }
    parts.push(html(close));
    parts
}

/// An OpenAPI block: a placeholder with the operation's method and path (or the webhook's
/// name, or the schemas' names), for the site to fill in.
fn openapi(e: &Element) -> String {
    let method = e.data_str("method").unwrap_or("");
    let method_class: String = method
        .chars()
        .filter(char::is_ascii_alphabetic)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let mut out = format!(
        "<div class=\"openapi {}\"",
        if e.kind == "swagger" {
            "openapi-operation"
        } else {
            e.kind.as_str()
        }
    );
    // An operation of an organization's spec names it, for the site to put the operation
    // in its place ([`openapi_placeholders`]).
    if let (Some(ContentRef::Openapi { spec }), "openapi-operation") =
        (data_ref(e, "ref"), e.kind.as_str())
    {
        out.push_str(&format!(
            " data-openapi-spec=\"{}\" data-openapi-path=\"{}\" data-openapi-method=\"{}\"",
            escape_attr(&spec),
            escape_attr(e.data_str("path").unwrap_or("")),
            escape_attr(method)
        ));
    }
    out.push('>');
    if !method.is_empty() {
        out.push_str(&format!(
            "<span class=\"openapi-method method-{method_class}\">{}</span> ",
            escape_text(&method.to_ascii_uppercase())
        ));
    }
    let target = match e.kind.as_str() {
        "openapi-webhook" => e.data_str("name").unwrap_or("").to_string(),
        "openapi-schemas" => e
            .data
            .get("schemas")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
        _ => e.data_str("path").unwrap_or("").to_string(),
    };
    out.push_str("<code class=\"openapi-path\">");
    escape_text_into(&mut out, &target);
    out.push_str("</code></div>");
    out
}

/// A rating as stars out of its maximum (at most ten stars; past that, as a fraction).
fn rating(n: f64, max: Option<f64>) -> String {
    let max = max.filter(|m| m.is_finite() && *m >= 1.0).unwrap_or(5.0);
    let n = if n.is_finite() {
        n.clamp(0.0, max)
    } else {
        0.0
    };
    let label = format!("{} / {}", n, max);
    if max > 10.0 {
        return format!("<span class=\"rating\">{}</span>", escape_text(&label));
    }
    let full = (n.round() as usize).min(max as usize);
    let stars = "\u{2605}".repeat(full) + &"\u{2606}".repeat(max as usize - full);
    format!(
        "<span class=\"rating\" role=\"img\" aria-label=\"{}\">{stars}</span>",
        escape_attr(&label)
    )
}

/// The reference in `data[key]`.
fn data_ref(e: &Element, key: &str) -> Option<ContentRef> {
    serde_json::from_value(e.data.get(key)?.clone()).ok()
}

/// A code block's language as a class name: letters, digits and `+#._-` only.
fn language_class(syntax: &str) -> Option<&str> {
    let ok = !syntax.is_empty()
        && syntax.len() <= 40
        && syntax
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '#' | '.' | '_' | '-'));
    ok.then_some(syntax)
}

/// Order of marks from outermost to innermost (code innermost).
fn mark_order(kind: &str) -> usize {
    [
        "color",
        "bold",
        "italic",
        "strikethrough",
        "superscript",
        "subscript",
        "keyboard",
        "code",
    ]
    .iter()
    .position(|k| *k == kind)
    .unwrap_or(usize::MAX)
}

/// Classes of a colour mark (`color-red bg-yellow`): named colours only, never a style.
fn color_classes(data: Option<&Map<String, Value>>) -> Option<String> {
    let named = |k: &str| {
        data.and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .filter(|c| {
                *c != "default"
                    && !c.is_empty()
                    && c.len() <= 20
                    && c.chars().all(|ch| ch.is_ascii_lowercase())
            })
    };
    let mut classes = Vec::new();
    if let Some(c) = named("text") {
        classes.push(format!("color-{c}"));
    }
    if let Some(c) = named("background") {
        classes.push(format!("bg-{c}"));
    }
    (!classes.is_empty()).then(|| classes.join(" "))
}

/// The character(s) of an emoji code (`1f600`, `1f469-200d-1f4bb`).
fn emoji_char(code: &str) -> Option<String> {
    if code.is_empty() || code.len() > 64 {
        return None;
    }
    code.split('-')
        .map(|p| u32::from_str_radix(p, 16).ok().and_then(char::from_u32))
        .collect()
}

/// An operation placeholder of rendered HTML: where it is, and what it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenapiPlaceholder {
    /// Byte range of the whole placeholder (`<div ...>...</div>`).
    pub range: std::ops::Range<usize>,
    /// The spec's slug.
    pub spec: String,
    /// The operation's path.
    pub path: String,
    /// The operation's method.
    pub method: String,
}

/// The placeholders of `openapi-operation` blocks that name an organization's spec, in
/// order, as [`render_document`] writes them.
pub fn openapi_placeholders(html: &str) -> Vec<OpenapiPlaceholder> {
    const OPEN: &str = "<div class=\"openapi openapi-operation\" data-openapi-spec=\"";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = html[from..].find(OPEN) {
        let start = from + at;
        let Some(end) = html[start..]
            .find("</div>")
            .map(|e| start + e + "</div>".len())
        else {
            break;
        };
        let tag = &html[start..end];
        let attr = |name: &str| -> Option<String> {
            let key = format!("{name}=\"");
            let at = tag.find(&key)? + key.len();
            let len = tag[at..].find('"')?;
            Some(unescape_attr(&tag[at..at + len]))
        };
        if let (Some(spec), Some(path), Some(method)) = (
            attr("data-openapi-spec"),
            attr("data-openapi-path"),
            attr("data-openapi-method"),
        ) {
            out.push(OpenapiPlaceholder {
                range: start..end,
                spec,
                path,
                method,
            });
        }
        from = end;
    }
    out
}

/// Undoes [`escape_attr`].
fn unescape_attr(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}
