//! Content the parser kept verbatim (a raw paragraph: unknown markup, HTML GitBook wrote
//! that has no node) shown as a page shows it: its markdown rendered, the HTML in it
//! passed through a strict allowlist.
//!
//! The markdown is written as HTML here, then the whole is parsed as a browser parses it
//! (html5ever, through `scraper`) and written again from the tree: only allowed elements
//! and attributes, every text and value escaped, so the output is well formed whatever the
//! input. Kept: text formatting (`a b i em strong s del mark kbd code sub sup br`), blocks
//! (`p div span h2`–`h6 blockquote pre hr ul ol li`), figures and pictures, expandables
//! and tables. `script`, `style`, frames, objects, forms and templates are dropped with
//! their content; any other element is replaced by its content. No `style`, event
//! handler or `id` is ever written: `align` becomes a class, classes are limited to the
//! ones GitBook writes (buttons, Font Awesome icons, hints), and every `href`, `src` and
//! `srcset` goes through the caller's URL check.

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use scraper::{Html, Node};

use super::{escape_text, escape_text_into};
use crate::limits::MAX_DEPTH;

/// What is done with an element.
enum Action {
    /// Written, with its allowed attributes.
    Keep,
    /// Not written, nor its content.
    Drop,
    /// Not written; its content is.
    Unwrap,
}

fn action(name: &str) -> Action {
    match name {
        "a" | "b" | "i" | "em" | "strong" | "s" | "del" | "mark" | "kbd" | "code" | "sub"
        | "sup" | "br" | "p" | "div" | "span" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6"
        | "blockquote" | "pre" | "hr" | "ul" | "ol" | "li" | "figure" | "figcaption"
        | "picture" | "source" | "img" | "details" | "summary" | "table" | "thead" | "tbody"
        | "tfoot" | "tr" | "th" | "td" | "caption" | "button" => Action::Keep,
        "script" | "style" | "template" | "iframe" | "frame" | "frameset" | "object" | "embed"
        | "applet" | "noscript" | "noembed" | "noframes" | "textarea" | "select" | "option"
        | "optgroup" | "input" | "form" | "title" | "head" | "meta" | "link" | "base" | "svg"
        | "math" | "canvas" | "audio" | "video" | "track" | "param" | "xmp" | "plaintext"
        | "dialog" | "portal" => Action::Drop,
        _ => Action::Unwrap,
    }
}

/// HTML of a raw paragraph's text: its markdown rendered and its HTML sanitized. `url`
/// says what a destination (`href`, `src`, `srcset`) becomes, or `None` to drop it.
/// Written at `depth`, its elements are replaced by their content past [`MAX_DEPTH`].
/// `None` when its tags nest too deep to be read in bounded time: it is then shown as
/// text.
pub(super) fn raw_html(
    raw: &str,
    depth: usize,
    url: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let html = markdown_html(raw);
    (tag_depth(&html) <= MAX_NESTING).then(|| sanitize(&html, depth, url))
}

/// How deep tags may nest in raw content. An HTML parser's work per tag can grow with the
/// number of open elements, so deeper input is not parsed at all.
const MAX_NESTING: usize = MAX_DEPTH * 4;

/// An upper bound of how deep the tags of `html` nest: every opening tag but the void ones
/// opens, every closing tag closes.
fn tag_depth(html: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let bytes = html.as_bytes();
    for (i, _) in html.match_indices('<') {
        match bytes.get(i + 1) {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(c) if c.is_ascii_alphabetic() => {
                let name: String = html[i + 1..]
                    .chars()
                    .take_while(char::is_ascii_alphanumeric)
                    .take(8)
                    .collect::<String>()
                    .to_ascii_lowercase();
                if !matches!(
                    name.as_str(),
                    "br" | "hr"
                        | "img"
                        | "source"
                        | "wbr"
                        | "input"
                        | "meta"
                        | "link"
                        | "col"
                        | "area"
                        | "base"
                        | "embed"
                        | "param"
                        | "track"
                ) {
                    depth += 1;
                    max = max.max(depth);
                }
            }
            _ => {}
        }
    }
    max
}

/// The HTML of markdown, written without any check: the sanitizer does those.
fn markdown_html(md: &str) -> String {
    let mut out = String::with_capacity(md.len() + md.len() / 4);
    let mut in_head = false;
    // Text of the image being written goes to its `alt`.
    let mut alt: Option<String> = None;
    for event in Parser::new_ext(md, crate::markdown::cmark_options()) {
        if let Some(a) = alt.as_mut() {
            match event {
                Event::End(TagEnd::Image) => {
                    out.push_str(" alt=\"");
                    escape_text_into(&mut out, a);
                    out.push_str("\">");
                    alt = None;
                }
                Event::Text(t) | Event::Code(t) => a.push_str(&t),
                Event::SoftBreak | Event::HardBreak => a.push(' '),
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(tag) => match tag {
                Tag::Paragraph => out.push_str("<p>"),
                Tag::Heading { level, .. } => out.push_str(&format!("<{level}>")),
                Tag::BlockQuote(_) => out.push_str("<blockquote>"),
                Tag::CodeBlock(kind) => {
                    out.push_str("<pre><code");
                    if let CodeBlockKind::Fenced(info) = kind {
                        let lang = info.split_whitespace().next().unwrap_or("");
                        if !lang.is_empty() {
                            out.push_str(" class=\"language-");
                            escape_text_into(&mut out, lang);
                            out.push('"');
                        }
                    }
                    out.push('>');
                }
                Tag::List(Some(n)) => out.push_str(&format!("<ol start=\"{n}\">")),
                Tag::List(None) => out.push_str("<ul>"),
                Tag::Item => out.push_str("<li>"),
                Tag::Table(_) => out.push_str("<table>"),
                Tag::TableHead => {
                    in_head = true;
                    out.push_str("<thead><tr>");
                }
                Tag::TableRow => out.push_str("<tr>"),
                Tag::TableCell => out.push_str(if in_head { "<th>" } else { "<td>" }),
                Tag::Emphasis => out.push_str("<em>"),
                Tag::Strong => out.push_str("<strong>"),
                Tag::Strikethrough => out.push_str("<s>"),
                Tag::Superscript => out.push_str("<sup>"),
                Tag::Subscript => out.push_str("<sub>"),
                Tag::Link { dest_url, .. } => {
                    out.push_str("<a href=\"");
                    escape_text_into(&mut out, &dest_url);
                    out.push_str("\">");
                }
                Tag::Image { dest_url, .. } => {
                    out.push_str("<img src=\"");
                    escape_text_into(&mut out, &dest_url);
                    out.push('"');
                    alt = Some(String::new());
                }
                Tag::FootnoteDefinition(label) => {
                    out.push_str("<div class=\"footnote\"><sup>");
                    escape_text_into(&mut out, &label);
                    out.push_str("</sup> ");
                }
                _ => {}
            },
            Event::End(tag) => match tag {
                TagEnd::Paragraph => out.push_str("</p>\n"),
                TagEnd::Heading(level) => out.push_str(&format!("</{level}>\n")),
                TagEnd::BlockQuote(_) => out.push_str("</blockquote>\n"),
                TagEnd::CodeBlock => out.push_str("</code></pre>\n"),
                TagEnd::List(true) => out.push_str("</ol>\n"),
                TagEnd::List(false) => out.push_str("</ul>\n"),
                TagEnd::Item => out.push_str("</li>\n"),
                TagEnd::Table => out.push_str("</tbody></table>\n"),
                TagEnd::TableHead => {
                    in_head = false;
                    out.push_str("</tr></thead><tbody>");
                }
                TagEnd::TableRow => out.push_str("</tr>"),
                TagEnd::TableCell => out.push_str(if in_head { "</th>" } else { "</td>" }),
                TagEnd::Emphasis => out.push_str("</em>"),
                TagEnd::Strong => out.push_str("</strong>"),
                TagEnd::Strikethrough => out.push_str("</s>"),
                TagEnd::Superscript => out.push_str("</sup>"),
                TagEnd::Subscript => out.push_str("</sub>"),
                TagEnd::Link => out.push_str("</a>"),
                TagEnd::FootnoteDefinition => out.push_str("</div>\n"),
                _ => {}
            },
            Event::Text(t) => escape_text_into(&mut out, &t),
            Event::Code(t) => {
                out.push_str("<code>");
                escape_text_into(&mut out, &t);
                out.push_str("</code>");
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => escape_text_into(&mut out, &t),
            // The HTML written in the markdown, for the sanitizer to read.
            Event::Html(h) | Event::InlineHtml(h) => out.push_str(&h),
            Event::FootnoteReference(label) => {
                out.push_str("<sup>");
                escape_text_into(&mut out, &label);
                out.push_str("</sup>");
            }
            Event::SoftBreak => out.push('\n'),
            Event::HardBreak => out.push_str("<br>\n"),
            Event::Rule => out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
        }
    }
    out
}

/// A step of the writing walk (over nodes of the parsed tree, `N`).
enum Step<N> {
    /// A node of the parsed tree, at a depth.
    Node(N, usize),
    /// A closing tag.
    Close(&'static str),
}

/// `html` written again with only what the allowlist keeps, its elements starting below
/// `depth`. Elements nested deeper than [`MAX_DEPTH`] are replaced by their content.
pub(super) fn sanitize(html: &str, depth: usize, url: &dyn Fn(&str) -> Option<String>) -> String {
    let doc = Html::parse_fragment(html);
    let mut out = String::with_capacity(html.len());
    let root = doc.root_element();
    let mut stack: Vec<Step<_>> = root
        .children()
        .rev()
        .map(|n| Step::Node(n, depth + 1))
        .collect();
    while let Some(step) = stack.pop() {
        let (node, depth) = match step {
            Step::Close(tag) => {
                out.push_str("</");
                out.push_str(tag);
                out.push('>');
                continue;
            }
            Step::Node(node, depth) => (node, depth),
        };
        let el = match node.value() {
            Node::Text(t) => {
                escape_text_into(&mut out, t);
                continue;
            }
            Node::Element(el) => el,
            // Comments, doctypes, processing instructions.
            _ => continue,
        };
        let name = el.name();
        let keep = match action(name) {
            Action::Drop => continue,
            Action::Unwrap => false,
            Action::Keep => depth <= MAX_DEPTH,
        };
        let open = if keep { open_tag(el, url) } else { None };
        let close = match open {
            Some((tag, close)) => {
                out.push_str(&tag);
                close
            }
            None => None,
        };
        if let Some(close) = close {
            stack.push(Step::Close(close));
        }
        // An icon's text is its name between colons: the icon stands for it.
        if keep && name == "i" && icon_name(el).is_some() {
            continue;
        }
        let inner = depth + usize::from(close.is_some());
        stack.extend(node.children().rev().map(|n| Step::Node(n, inner)));
    }
    out
}

/// The Font Awesome icon of `<i class="fa-name">`.
fn icon_name(el: &scraper::node::Element) -> Option<&str> {
    let class = el.attr("class")?;
    let name = class.trim().strip_prefix("fa-")?;
    (!name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    .then_some(name)
}

/// The classes kept of a `class` attribute: GitBook's buttons (`button primary`) as the
/// renderer's own, and hints.
fn classes(name: &str, class: &str) -> Vec<&'static str> {
    let tokens: Vec<&str> = class.split_ascii_whitespace().collect();
    let has = |t: &str| tokens.contains(&t);
    let mut out = Vec::new();
    if matches!(name, "a" | "button" | "span") && has("button") {
        out.push("button");
        out.push(if has("secondary") {
            "button-secondary"
        } else {
            "button-primary"
        });
    }
    if name == "div" && has("hint") {
        out.push("hint");
        for (t, c) in [
            ("hint-info", "hint-info"),
            ("hint-success", "hint-success"),
            ("hint-warning", "hint-warning"),
            ("hint-danger", "hint-danger"),
        ] {
            if has(t) {
                out.push(c);
                break;
            }
        }
    }
    out
}

/// The class of an `align` value.
fn align_class(v: &str) -> Option<&'static str> {
    match v.trim().to_ascii_lowercase().as_str() {
        "center" => Some("align-center"),
        "right" => Some("align-end"),
        _ => None,
    }
}

/// The classes of a `<mark style="color:…;background-color:…">`: named colours only.
fn mark_classes(style: &str) -> Vec<String> {
    let mut out = Vec::new();
    for decl in style.split(';') {
        let Some((k, v)) = decl.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let named = !v.is_empty()
            && v != "default"
            && v.len() <= 20
            && v.chars().all(|c| c.is_ascii_lowercase());
        if !named {
            continue;
        }
        match k.trim() {
            "color" => out.push(format!("color-{v}")),
            "background-color" => out.push(format!("bg-{v}")),
            _ => {}
        }
    }
    out
}

/// Whether a number attribute (a width, a span, a start) is plain digits.
fn digits(v: &str) -> bool {
    !v.is_empty() && v.len() <= 9 && v.bytes().all(|b| b.is_ascii_digit())
}

/// The opening tag of an allowed element with its allowed attributes, and the tag that
/// closes it (`None` for a void element). `None` when the element is not written (an
/// image without a safe source): its content still is.
fn open_tag(
    el: &scraper::node::Element,
    url: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, Option<&'static str>)> {
    let name = el.name();
    if name == "i" {
        if let Some(icon) = icon_name(el) {
            let mut tag = String::from("<span class=\"icon\" data-icon=\"");
            escape_text_into(&mut tag, icon);
            tag.push_str("\" aria-hidden=\"true\">");
            return Some((tag, Some("span")));
        }
    }
    // Action buttons need the site's script: shown as a label, as the renderer does.
    let (name, close): (&'static str, Option<&'static str>) = match name {
        "button" => ("span", Some("span")),
        "h1" => ("h2", Some("h2")),
        n => {
            let n = STATIC_NAMES.iter().find(|s| **s == n)?;
            let void = matches!(*n, "br" | "hr" | "img" | "source");
            (n, (!void).then_some(*n))
        }
    };
    let mut tag = format!("<{name}");
    let mut class: Vec<String> = Vec::new();
    let mut external = false;
    let attr = |k: &str| el.attr(k);
    match name {
        "a" => {
            if let Some(href) = attr("href").and_then(url) {
                external = super::is_external(&href);
                push_attr(&mut tag, "href", &href);
            }
        }
        "img" => {
            let src = attr("src").and_then(url)?;
            push_attr(&mut tag, "src", &src);
            push_attr(&mut tag, "alt", attr("alt").unwrap_or(""));
            for k in ["width", "height"] {
                if let Some(v) = attr(k).filter(|v| digits(v)) {
                    push_attr(&mut tag, k, v);
                }
            }
        }
        "source" => {
            // GitBook writes one URL, as it is (spaces included): it is read so.
            let set = attr("srcset")?.trim();
            push_attr(&mut tag, "srcset", &super::srcset_url(&url(set)?));
            let media = attr("media")?.trim();
            if !matches!(
                media,
                "(prefers-color-scheme: dark)" | "(prefers-color-scheme: light)"
            ) {
                return None;
            }
            push_attr(&mut tag, "media", media);
        }
        "ol" => {
            if let Some(v) = attr("start").filter(|v| digits(v)) {
                push_attr(&mut tag, "start", v);
            }
        }
        "td" | "th" => {
            for k in ["colspan", "rowspan"] {
                if let Some(v) = attr(k).filter(|v| digits(v)) {
                    push_attr(&mut tag, k, v);
                }
            }
        }
        "details" if attr("open").is_some() => tag.push_str(" open"),
        "mark" => class.extend(mark_classes(attr("style").unwrap_or(""))),
        _ => {}
    }
    if let Some(t) = attr("title") {
        push_attr(&mut tag, "title", t);
    }
    if let Some(c) = attr("align").and_then(align_class) {
        class.push(c.to_string());
    }
    if let Some(c) = attr("class") {
        class.extend(classes(el.name(), c).into_iter().map(str::to_string));
    }
    if !class.is_empty() {
        push_attr(&mut tag, "class", &class.join(" "));
    }
    if name == "img" {
        tag.push_str(" loading=\"lazy\"");
    }
    if external {
        tag.push_str(" rel=\"noopener noreferrer\"");
    }
    tag.push('>');
    Some((tag, close))
}

/// Names of the elements written as themselves.
const STATIC_NAMES: &[&str] = &[
    "a",
    "b",
    "i",
    "em",
    "strong",
    "s",
    "del",
    "mark",
    "kbd",
    "code",
    "sub",
    "sup",
    "br",
    "p",
    "div",
    "span",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "pre",
    "hr",
    "ul",
    "ol",
    "li",
    "figure",
    "figcaption",
    "picture",
    "source",
    "img",
    "details",
    "summary",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "th",
    "td",
    "caption",
];

/// ` name="value"`, escaped.
fn push_attr(tag: &mut String, name: &str, value: &str) {
    tag.push(' ');
    tag.push_str(name);
    tag.push_str("=\"");
    tag.push_str(&escape_text(value));
    tag.push('"');
}
