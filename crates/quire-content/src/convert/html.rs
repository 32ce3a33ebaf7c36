//! HTML pages as markdown of the dialect: headings, paragraphs with marks and links, lists,
//! code blocks (language from the usual class names), tables, quotes, images.
//!
//! The document is parsed as browsers parse it (html5ever, through `scraper`). The walk over
//! the tree is bounded: below [`MAX_HTML_DEPTH`] elements an element's text is kept as text.

use scraper::{ElementRef, Html, Node, Selector};
use url::Url;

use super::{escape_text, SourcePage};

/// Element nesting the converter follows; deeper content is kept as plain text.
pub const MAX_HTML_DEPTH: usize = 48;

/// A converted HTML page.
#[derive(Clone, Debug, Default)]
pub struct Converted {
    /// Its title: the first `<h1>`, else `<title>`.
    pub title: Option<String>,
    /// Markdown of the dialect, links and images as written.
    pub body: String,
    /// Image sources as written.
    pub images: Vec<String>,
    /// Link destinations as written.
    pub links: Vec<String>,
}

/// Converts a page; `content` names the element holding the content (`main`, `#id`...),
/// tried in order, the body when none matches.
pub fn convert(html: &str, content: &[&str]) -> Converted {
    let doc = Html::parse_document(html);
    let mut root = None;
    for sel in content {
        if let Ok(s) = Selector::parse(sel) {
            if let Some(el) = doc.select(&s).next() {
                root = Some(el);
                break;
            }
        }
    }
    let root = root
        .or_else(|| {
            doc.select(&Selector::parse("body").expect("selector"))
                .next()
        })
        .unwrap_or_else(|| doc.root_element());
    let mut w = Writer::default();
    let mut blocks = Vec::new();
    w.blocks(root, 0, &mut blocks);
    // The first level-1 heading is the page's title.
    let title_from_tag = doc
        .select(&Selector::parse("title").expect("selector"))
        .next()
        .map(|t| collapse(&t.text().collect::<String>()))
        .filter(|t| !t.is_empty());
    let mut title = None;
    if let Some(pos) = blocks.iter().position(|b| b.starts_with("# ")) {
        if blocks[..pos].iter().all(|b| !b.starts_with('#')) {
            let h = blocks.remove(pos);
            title = Some(unescape_heading(&h[2..]));
        }
    }
    // Other level-1 headings are headings of the body.
    for b in &mut blocks {
        if b.starts_with("# ") {
            b.insert(0, '#');
        }
    }
    Converted {
        title: title.or(title_from_tag),
        body: blocks.join("\n\n") + "\n",
        images: w.images,
        links: w.links,
    }
}

/// A page of a bundle from an HTML document at `key` (see the module of [`super`]), with
/// the absolute URLs of its images and its links as written.
pub fn page(
    key: &str,
    html: &str,
    content: &[&str],
    fallback_title: &str,
) -> (SourcePage, Vec<String>, Vec<String>) {
    let c = convert(html, content);
    let base = Url::parse(key).ok();
    let images = c
        .images
        .iter()
        .filter_map(|src| base.as_ref()?.join(src).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(|u| u.to_string())
        .collect();
    let page = SourcePage {
        key: key.to_string(),
        title: c
            .title
            .clone()
            .unwrap_or_else(|| fallback_title.to_string()),
        body: Some(c.body.clone()),
        ..SourcePage::default()
    };
    (page, images, c.links)
}

fn unescape_heading(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out.trim().to_string()
}

/// Whitespace runs as one space.
/// What a page says of itself for a link preview (`getEmbedByUrl`): its title, its site's
/// name and its icon, each as the page gives it (the icon's address may be relative).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageSummary {
    /// `og:title`, else `<title>`.
    pub title: Option<String>,
    /// `og:site_name`.
    pub site_name: Option<String>,
    /// The `href` of its first icon link.
    pub icon: Option<String>,
}

/// Reads a page's [`PageSummary`]: `og:title` else `<title>`, `og:site_name`, and the first
/// `<link rel="icon">` (or `shortcut icon`, `apple-touch-icon`). Each text is collapsed to
/// one line of at most 300 characters.
pub fn summary(html: &str) -> PageSummary {
    let doc = Html::parse_document(html);
    let short = |t: &str| -> Option<String> {
        let t = collapse(t);
        (!t.is_empty()).then(|| t.chars().take(300).collect())
    };
    let meta = |property: &str| {
        doc.select(&Selector::parse("meta").expect("selector"))
            .find(|m| {
                let v = m.value();
                v.attr("property").or_else(|| v.attr("name")) == Some(property)
            })
            .and_then(|m| m.value().attr("content"))
            .and_then(short)
    };
    let title = meta("og:title").or_else(|| {
        doc.select(&Selector::parse("title").expect("selector"))
            .next()
            .and_then(|t| short(&t.text().collect::<String>()))
    });
    let icon = doc
        .select(&Selector::parse("link[rel][href]").expect("selector"))
        .find(|l| {
            l.value().attr("rel").is_some_and(|rel| {
                rel.split_ascii_whitespace().any(|r| {
                    r.eq_ignore_ascii_case("icon") || r.eq_ignore_ascii_case("apple-touch-icon")
                })
            })
        })
        .and_then(|l| l.value().attr("href"))
        .map(str::trim)
        .filter(|h| !h.is_empty() && h.len() <= 2048)
        .map(str::to_string);
    PageSummary {
        title,
        site_name: meta("og:site_name"),
        icon,
    }
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Default)]
struct Writer {
    images: Vec<String>,
    links: Vec<String>,
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "main"
            | "aside"
            | "header"
            | "footer"
            | "nav"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "ul"
            | "ol"
            | "li"
            | "pre"
            | "table"
            | "blockquote"
            | "hr"
            | "figure"
            | "dl"
            | "dt"
            | "dd"
            | "details"
            | "summary"
            | "form"
            | "fieldset"
            | "address"
            | "body"
            | "html"
    )
}

fn skipped(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "head"
            | "iframe"
            | "object"
            | "embed"
            | "svg"
            | "canvas"
            | "form"
            | "button"
            | "input"
            | "select"
            | "textarea"
            | "nav"
    )
}

impl Writer {
    /// Appends the blocks of `el`'s children to `out`.
    fn blocks(&mut self, el: ElementRef<'_>, depth: usize, out: &mut Vec<String>) {
        if depth > MAX_HTML_DEPTH {
            let text = collapse(&el.text().collect::<String>());
            if !text.is_empty() {
                out.push(paragraph(&escape_text(&text)));
            }
            return;
        }
        let mut inline = String::new();
        for child in el.children() {
            match child.value() {
                Node::Text(t) => inline.push_str(&escape_text(&collapse_keep_edges(t))),
                Node::Element(e) => {
                    let name = e.name();
                    let Some(child_el) = ElementRef::wrap(child) else {
                        continue;
                    };
                    if skipped(name) {
                        continue;
                    }
                    if is_block(name) {
                        flush(&mut inline, out);
                        self.block(child_el, name, depth + 1, out);
                    } else if name == "img" && is_alone(child_el) {
                        flush(&mut inline, out);
                        let img = self.inline(child_el, depth + 1, false);
                        if !img.is_empty() {
                            out.push(img);
                        }
                    } else {
                        inline.push_str(&self.inline(child_el, depth + 1, false));
                    }
                }
                _ => {}
            }
        }
        flush(&mut inline, out);
    }

    fn block(&mut self, el: ElementRef<'_>, name: &str, depth: usize, out: &mut Vec<String>) {
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let text = self.inline_children(el, depth, true);
                let text = text.trim();
                if text.is_empty() {
                    return;
                }
                let level = match name {
                    "h1" => 1,
                    "h2" => 2,
                    "h3" => 3,
                    _ => 4,
                };
                out.push(format!("{} {text}", "#".repeat(level)));
            }
            "p" | "dt" | "summary" => {
                let text = self.inline_children(el, depth, false);
                let text = text.trim();
                if !text.is_empty() {
                    out.push(paragraph(text));
                }
            }
            "ul" | "ol" => {
                if let Some(list) = self.list(el, name == "ol", depth) {
                    out.push(list);
                }
            }
            "pre" => out.push(code_block(el)),
            "table" => {
                if let Some(t) = self.table(el, depth) {
                    out.push(t);
                }
            }
            "blockquote" => {
                let mut inner = Vec::new();
                self.blocks(el, depth, &mut inner);
                if !inner.is_empty() {
                    let text = inner.join("\n\n");
                    out.push(
                        text.lines()
                            .map(|l| {
                                if l.is_empty() {
                                    ">".to_string()
                                } else {
                                    format!("> {l}")
                                }
                            })
                            .collect::<Vec<_>>()
                            .join("\n"),
                    );
                }
            }
            "hr" => out.push("***".to_string()),
            _ => self.blocks(el, depth, out),
        }
    }

    fn inline_children(&mut self, el: ElementRef<'_>, depth: usize, in_heading: bool) -> String {
        let mut s = String::new();
        if depth > MAX_HTML_DEPTH {
            return escape_text(&collapse(&el.text().collect::<String>()));
        }
        for child in el.children() {
            match child.value() {
                Node::Text(t) => s.push_str(&escape_text(&collapse_keep_edges(t))),
                Node::Element(e) => {
                    if skipped(e.name()) {
                        continue;
                    }
                    if let Some(c) = ElementRef::wrap(child) {
                        let part = self.inline(c, depth + 1, in_heading);
                        if is_block(e.name()) && !s.ends_with(' ') && !s.is_empty() {
                            s.push(' ');
                        }
                        s.push_str(&part);
                    }
                }
                _ => {}
            }
        }
        s
    }

    /// Inline markdown of one element.
    fn inline(&mut self, el: ElementRef<'_>, depth: usize, in_heading: bool) -> String {
        let name = el.value().name();
        match name {
            "br" => {
                return if in_heading {
                    " ".into()
                } else {
                    "\\\n".into()
                }
            }
            "img" => {
                let src = el.value().attr("src").unwrap_or("").trim();
                if src.is_empty() || src.starts_with("data:") {
                    return String::new();
                }
                self.images.push(src.to_string());
                let alt = escape_text(&collapse(el.value().attr("alt").unwrap_or("")));
                return format!("![{alt}]({})", destination(src));
            }
            _ => {}
        }
        let inner = self.inline_children(el, depth, in_heading);
        match name {
            "strong" | "b" => wrap_mark(&inner, "**"),
            "em" | "i" | "cite" => wrap_mark(&inner, "_"),
            "del" | "s" | "strike" => wrap_mark(&inner, "~~"),
            "code" | "kbd" | "samp" | "tt" => {
                let text = collapse(&el.text().collect::<String>());
                if text.is_empty() {
                    String::new()
                } else {
                    code_span(&text)
                }
            }
            "a" => {
                let href = el.value().attr("href").unwrap_or("").trim();
                if href.is_empty() || href.starts_with("javascript:") || inner.trim().is_empty() {
                    return inner;
                }
                self.links.push(href.to_string());
                let (lead, text, trail) = split_edges(&inner);
                format!("{lead}[{text}]({}){trail}", destination(href))
            }
            _ => inner,
        }
    }

    fn list(&mut self, el: ElementRef<'_>, ordered: bool, depth: usize) -> Option<String> {
        let mut items = Vec::new();
        let mut n = 1;
        for child in el.children() {
            let Some(li) = ElementRef::wrap(child) else {
                continue;
            };
            if li.value().name() != "li" {
                continue;
            }
            let mut blocks = Vec::new();
            self.blocks(li, depth + 1, &mut blocks);
            let marker = if ordered {
                format!("{n}. ")
            } else {
                "- ".to_string()
            };
            n += 1;
            let indent = " ".repeat(marker.len());
            let mut text = String::new();
            for (i, b) in blocks.iter().enumerate() {
                if i > 0 {
                    text.push_str(if b.starts_with("- ") || starts_numbered(b) {
                        "\n"
                    } else {
                        "\n\n"
                    });
                }
                text.push_str(b);
            }
            let body = text
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    if i == 0 {
                        format!("{marker}{l}")
                    } else if l.is_empty() {
                        String::new()
                    } else {
                        format!("{indent}{l}")
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            items.push(if body.is_empty() {
                marker.trim_end().to_string()
            } else {
                body
            });
        }
        (!items.is_empty()).then(|| items.join("\n"))
    }

    fn table(&mut self, el: ElementRef<'_>, depth: usize) -> Option<String> {
        let mut rows: Vec<Vec<String>> = Vec::new();
        // Rows of this table only (not of tables nested in its cells), in order.
        let mut ordered = Vec::new();
        for child in el.children().filter_map(ElementRef::wrap) {
            match child.value().name() {
                "tr" => ordered.push(child),
                "thead" | "tbody" | "tfoot" => ordered.extend(
                    child
                        .children()
                        .filter_map(ElementRef::wrap)
                        .filter(|r| r.value().name() == "tr"),
                ),
                _ => {}
            }
        }
        for tr in ordered {
            let mut cells = Vec::new();
            for child in tr.children() {
                let Some(cell) = ElementRef::wrap(child) else {
                    continue;
                };
                if matches!(cell.value().name(), "td" | "th") {
                    let text = self.inline_children(cell, depth + 1, true);
                    cells.push(collapse(&text.replace("\\\n", " ")));
                }
            }
            if !cells.is_empty() {
                rows.push(cells);
            }
        }
        if rows.is_empty() {
            return None;
        }
        let width = rows.iter().map(Vec::len).max().unwrap_or(1).min(64);
        let line = |cells: &[String]| {
            let mut s = String::from("|");
            for i in 0..width {
                s.push(' ');
                s.push_str(cells.get(i).map_or("", String::as_str));
                s.push_str(" |");
            }
            s
        };
        let mut out = vec![line(&rows[0]), format!("|{}", " --- |".repeat(width))];
        for r in &rows[1..] {
            out.push(line(r));
        }
        Some(out.join("\n"))
    }
}

/// Whether an image stands alone in its parent (no text beside it).
fn is_alone(img: ElementRef<'_>) -> bool {
    img.parent().is_some_and(|p| {
        p.children().all(|c| match c.value() {
            Node::Text(t) => t.trim().is_empty(),
            Node::Element(e) => c.id() == img.id() || e.name() == "br",
            _ => true,
        })
    })
}

fn starts_numbered(b: &str) -> bool {
    let digits = b.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && b[digits..].starts_with(". ")
}

/// Text with whitespace runs collapsed, keeping one space at either edge if there was any.
fn collapse_keep_edges(t: &str) -> String {
    if t.is_empty() {
        return String::new();
    }
    let core = collapse(t);
    let lead = t.starts_with(char::is_whitespace);
    let trail = t.ends_with(char::is_whitespace);
    if core.is_empty() {
        return " ".into();
    }
    format!(
        "{}{core}{}",
        if lead { " " } else { "" },
        if trail { " " } else { "" }
    )
}

fn split_edges(s: &str) -> (&str, &str, &str) {
    let start = s.len() - s.trim_start().len();
    let end = s.trim_end().len();
    if start >= end {
        return ("", s.trim(), "");
    }
    (&s[..start], &s[start..end], &s[end..])
}

fn wrap_mark(inner: &str, mark: &str) -> String {
    let (lead, text, trail) = split_edges(inner);
    if text.is_empty() {
        return inner.to_string();
    }
    format!("{lead}{mark}{text}{mark}{trail}")
}

fn code_span(text: &str) -> String {
    let longest = longest_run(text, '`');
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in text.chars() {
        if ch == c {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

/// A link destination as markdown writes it: in angle brackets when it holds spaces or
/// parentheses.
fn destination(href: &str) -> String {
    if href.contains([' ', '(', ')', '<', '>']) {
        format!("<{}>", href.replace('<', "%3C").replace('>', "%3E"))
    } else {
        href.to_string()
    }
}

/// A paragraph whose first character would otherwise start another block.
fn paragraph(text: &str) -> String {
    let starts_block = text.starts_with(['-', '+', '='])
        || starts_numbered(text)
        || text.bytes().take_while(u8::is_ascii_digit).count() > 0
            && text[text.bytes().take_while(u8::is_ascii_digit).count()..].starts_with(")");
    if starts_block {
        format!("\\{text}")
    } else {
        text.to_string()
    }
}

fn flush(inline: &mut String, out: &mut Vec<String>) {
    let t = inline.trim();
    if !t.is_empty() {
        out.push(paragraph(t));
    }
    inline.clear();
}

/// A fenced code block of a `<pre>`, its language from the class names in use.
fn code_block(pre: ElementRef<'_>) -> String {
    let text: String = pre.text().collect();
    let text = text.trim_end_matches('\n').trim_start_matches('\n');
    let mut lang = None;
    let code = pre
        .children()
        .filter_map(ElementRef::wrap)
        .find(|c| c.value().name() == "code");
    for el in [Some(pre), code].into_iter().flatten() {
        for class in el.value().classes() {
            for prefix in ["language-", "lang-", "highlight-source-", "sourceCode "] {
                if let Some(l) = class.strip_prefix(prefix) {
                    lang.get_or_insert_with(|| l.to_string());
                }
            }
        }
        if let Some(params) = el.value().attr("data-syntaxhighlighter-params") {
            if let Some(b) = params
                .split(';')
                .find_map(|p| p.trim().strip_prefix("brush:"))
            {
                lang.get_or_insert_with(|| b.trim().to_string());
            }
        }
        if let Some(l) = el.value().attr("data-language") {
            lang.get_or_insert_with(|| l.to_string());
        }
    }
    let lang: String = lang
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '#' | '.'))
        .collect();
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    format!("{fence}{lang}\n{text}\n{fence}")
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    #[test]
    fn a_page_summary_prefers_open_graph() {
        let html = r#"<html><head><title> Plain
            title </title><meta property="og:title" content="Shared title">
            <meta property="og:site_name" content="Example Docs">
            <link rel="stylesheet" href="/s.css"><link rel="shortcut icon" href="/favicon.ico">
            </head><body><h1>Heading</h1></body></html>"#;
        assert_eq!(
            summary(html),
            PageSummary {
                title: Some("Shared title".into()),
                site_name: Some("Example Docs".into()),
                icon: Some("/favicon.ico".into()),
            }
        );
        let bare = summary("<title>Only\n a title</title>");
        assert_eq!(bare.title.as_deref(), Some("Only a title"));
        assert_eq!(bare.site_name, None);
        assert_eq!(summary("no html at all").title, None);
    }
}
