//! Writing inline content: texts with their marks, links and the inline elements, in the
//! form Git Sync writes them.
//!
//! Text is escaped the way GitBook's serializer does it: only where a character would
//! otherwise start markdown syntax (`*`, `_` at a word boundary, `[`, `` ` ``, `<` before a
//! tag, `&` before a reference, list and heading markers at a line start…). Every writing
//! is verified by parsing it again: when that does not give the same nodes, a more
//! cautious writing is used instead (every punctuation escaped, then HTML tags for marks).

use serde_json::Value;

use super::html;
use super::parse::{emoji_char, mark_rank};
use super::scan::Scanner;
use super::{data_ref, path_label, ref_href, DefaultLinks, SOFT_BREAK};
use crate::document::{Element, Leaf, Mark, Node, Text};

/// Where inline content is written: it decides how line breaks and some characters are
/// written. Only a paragraph has soft breaks (a line end): elsewhere one is a space.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Ctx {
    /// A paragraph: breaks are backslash line ends.
    Paragraph,
    /// A single line (heading): breaks are `<br>`.
    Line,
    /// A cell of a markdown table: like a line, and `|` is escaped.
    Cell,
    /// HTML content (captions, summaries, HTML tables, aligned paragraphs): HTML only.
    Html,
}

/// How much text is escaped and how marks are written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Style {
    /// Each leaf wrapped in its own marks, as Git Sync writes them (instead of marks
    /// shared by neighbouring leaves written once).
    per_leaf: bool,
    /// Escape every markdown punctuation instead of only the unsafe ones.
    full: bool,
    /// Italic as `*…*` instead of `_…_`.
    star: bool,
    /// Marks as HTML tags.
    html: bool,
}

const STYLES: [Style; 5] = [
    Style {
        per_leaf: true,
        full: false,
        star: false,
        html: false,
    },
    Style {
        per_leaf: false,
        full: false,
        star: false,
        html: false,
    },
    Style {
        per_leaf: false,
        full: false,
        star: true,
        html: false,
    },
    Style {
        per_leaf: false,
        full: true,
        star: true,
        html: false,
    },
    Style {
        per_leaf: false,
        full: true,
        star: true,
        html: true,
    },
];

/// Writes inline nodes: the first writing that parses back to the same nodes.
pub(super) fn render_inline(nodes: &[Node], ctx: Ctx) -> String {
    if ctx == Ctx::Html {
        return Writer {
            ctx,
            style: STYLES[4],
        }
        .nodes(nodes);
    }
    let mut last = String::new();
    for (i, style) in STYLES.iter().enumerate() {
        let mut text = Writer { ctx, style: *style }.nodes(nodes);
        encode_edge_spaces(&mut text);
        if ctx == Ctx::Paragraph {
            // A backslash break is only one before more text: at either end, `<br>`.
            if let Some(rest) = text.strip_suffix("\\\n") {
                text = format!("{rest}<br>");
            }
            if let Some(rest) = text.strip_prefix("\\\n") {
                text = format!("<br>{rest}");
            }
        }
        if i == STYLES.len() - 1 || reparse(&text, ctx).as_deref() == Some(nodes) {
            return text;
        }
        last = text;
    }
    last
}

/// Parses written inline content back.
fn reparse(text: &str, ctx: Ctx) -> Option<Vec<Node>> {
    if text.is_empty() {
        return Some(vec![Node::Text(Text::default())]);
    }
    let mut scanner = Scanner::standalone(&DefaultLinks);
    // Only a soft break is written as a bare line end: it must read back as one.
    scanner.keep_lines = true;
    // Footnote references read back as the annotations written so far.
    for (i, body) in super::render::notes_so_far().into_iter().enumerate() {
        scanner.footnotes.insert((i + 1).to_string(), body);
        scanner
            .definitions
            .push_str(&format!("[^{}]: x\n\n", i + 1));
    }
    match ctx {
        Ctx::Line => {
            let doc = super::parse::cmark(&scanner, &format!("## {text}"), false, 1);
            match doc.as_slice() {
                [Node::Block(e)] if e.kind == "heading-1" && e.data.is_empty() => e.nodes.clone(),
                _ => None,
            }
        }
        _ => super::parse::inline_line(&scanner, text, 1),
    }
}

struct Writer {
    ctx: Ctx,
    style: Style,
}

impl Writer {
    fn nodes(&self, nodes: &[Node]) -> String {
        let mut out = String::new();
        let mut leaves: Vec<&Leaf> = Vec::new();
        for n in nodes {
            match n {
                Node::Text(t) => leaves.extend(t.leaves.iter()),
                Node::Inline(e) => {
                    self.flush(&mut leaves, &mut out);
                    out.push_str(&self.element(e));
                }
                Node::Block(e) => {
                    self.flush(&mut leaves, &mut out);
                    out.push_str(&self.nodes(e.children()));
                }
            }
        }
        self.flush(&mut leaves, &mut out);
        out
    }

    fn flush(&self, leaves: &mut Vec<&Leaf>, out: &mut String) {
        if leaves.is_empty() {
            return;
        }
        let owned: Vec<Leaf> = leaves.drain(..).cloned().collect();
        // Only a paragraph's lines can start a block (a list, a heading…).
        let at_start = self.ctx == Ctx::Paragraph && (out.is_empty() || out.ends_with('\n'));
        out.push_str(&self.marked(&owned, &[], at_start));
    }

    /// Leaves with their marks, nested in canonical order (code innermost).
    fn marked(&self, leaves: &[Leaf], opened: &[&Mark], mut at_start: bool) -> String {
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
                out.push_str(&self.text(&leaves[i].text, at_start));
                at_start =
                    self.ctx == Ctx::Paragraph && leaves[i].text.ends_with(['\n', SOFT_BREAK]);
                i += 1;
                continue;
            };
            // Git Sync wraps each leaf in its marks, outermost first, and merges neighbours
            // whose outermost mark is the same; the looser writings merge any neighbours
            // sharing the mark.
            let mut j = i;
            while j < leaves.len()
                && leaves[j].marks.contains(m)
                && (m.kind != "code" || pending(&leaves[j]).len() == 1)
                && (!self.style.per_leaf || pending(&leaves[j]).first() == Some(m))
            {
                j += 1;
            }
            let j = j.max(i + 1);
            if m.kind == "code" {
                let text: String = leaves[i..j]
                    .iter()
                    .map(|l| l.text.replace('\n', " "))
                    .collect();
                out.push_str(&self.code(&text));
            } else {
                let mut now: Vec<&Mark> = opened.to_vec();
                now.push(m);
                let mut inner = self.marked(&leaves[i..j], &now, false);
                // Spaces at the edges of emphasis would end it: written `&#x20;`.
                if !self.tagged(m) {
                    if let Some(rest) = inner.strip_prefix(' ') {
                        inner = format!("&#x20;{rest}");
                    }
                    if let Some(rest) = inner.strip_suffix(' ') {
                        inner = format!("{rest}&#x20;");
                    }
                }
                out.push_str(&self.wrap(m, &inner));
            }
            at_start = false;
            i = j;
        }
        out
    }

    /// Whether a mark is written as an HTML tag.
    fn tagged(&self, m: &Mark) -> bool {
        self.style.html
            || self.ctx == Ctx::Html
            || !matches!(m.kind.as_str(), "bold" | "italic" | "strikethrough")
    }

    fn code(&self, text: &str) -> String {
        if text.is_empty() {
            return String::new();
        }
        if self.ctx == Ctx::Html {
            return format!("<code>{}</code>", html::escape_text(text));
        }
        // The shortest fence that is not a run of backticks in the text.
        let runs: Vec<usize> = text
            .split(|c| c != '`')
            .map(str::len)
            .filter(|n| *n > 0)
            .collect();
        let n = (1..).find(|n| !runs.contains(n)).unwrap_or(1);
        let fence = "`".repeat(n);
        // In a table cell, `|` ends the cell even inside code: it is escaped there too.
        let text = if self.ctx == Ctx::Cell {
            text.replace('|', "\\|")
        } else {
            text.to_string()
        };
        let pad = text.starts_with('`')
            || text.ends_with('`')
            || (text.starts_with(' ') && text.ends_with(' ') && !text.trim().is_empty());
        if pad {
            format!("{fence} {text} {fence}")
        } else {
            format!("{fence}{text}{fence}")
        }
    }

    fn wrap(&self, m: &Mark, inner: &str) -> String {
        if inner.is_empty() {
            return String::new();
        }
        let (md, tag) = match m.kind.as_str() {
            "bold" => ("**", "strong"),
            "italic" => (if self.style.star { "*" } else { "_" }, "em"),
            "strikethrough" => ("~~", "s"),
            "keyboard" => ("", "kbd"),
            "superscript" => ("", "sup"),
            "subscript" => ("", "sub"),
            "color" => {
                return format!("<mark style=\"{}\">{inner}</mark>", color_style(m));
            }
            _ => return inner.to_string(),
        };
        if self.tagged(m) {
            format!("<{tag}>{inner}</{tag}>")
        } else {
            format!("{md}{inner}{md}")
        }
    }

    fn text(&self, text: &str, at_start: bool) -> String {
        match self.ctx {
            Ctx::Html => {
                let escaped = html::escape_text(&text.replace(SOFT_BREAK, " "));
                escaped.replace('\n', "<br>")
            }
            _ if self.style.full => escape_full(text, self.ctx, at_start),
            _ => escape_minimal(text, self.ctx, at_start),
        }
    }

    /// One inline element.
    fn element(&self, e: &Element) -> String {
        let href = || data_ref(e, "ref").map(|r| ref_href(&r));
        match e.kind.as_str() {
            "link" => match href() {
                Some(h) if self.ctx == Ctx::Html => format!(
                    "<a href=\"{}\">{}</a>",
                    html::escape_attr(&h),
                    self.nodes(e.children())
                ),
                Some(h) => format!("[{}]({})", self.label(e.children()), link_dest(&h)),
                None => self.nodes(e.children()),
            },
            "mention" => match href() {
                Some(h) => {
                    let label = super::mention_label(e)
                        .map(str::to_string)
                        .unwrap_or_else(|| path_label(&h));
                    if self.ctx != Ctx::Html {
                        format!(
                            "[{}]({} \"mention\")",
                            self.plain_label(&label),
                            link_dest(&h)
                        )
                    } else {
                        format!(
                            "<a data-mention href=\"{}\">{}</a>",
                            html::escape_attr(&h),
                            html::escape_text(&label)
                        )
                    }
                }
                None => String::new(),
            },
            "emoji" => {
                let code = e.data_str("code").unwrap_or("");
                match emoji_char(code) {
                    Some(c) => format!(
                        "<span data-gb-custom-inline data-tag=\"emoji\" data-code=\"{}\">{c}</span>",
                        html::escape_attr(code)
                    ),
                    None => String::new(),
                }
            }
            "icon" => {
                let icon = e.data_str("icon").unwrap_or("");
                let style = e
                    .data_str("color")
                    .map(|c| format!(" style=\"color:{};\"", html::escape_attr(c)))
                    .unwrap_or_default();
                format!(
                    "<i class=\"fa-{}\"{style}>:{}:</i>",
                    html::escape_attr(icon),
                    html::escape_text(icon)
                )
            }
            "expression" => format!(
                "<code class=\"expression\">{}</code>",
                html::escape_text(e.data_str("expression").unwrap_or(""))
            ),
            "inline-math" => format!("$${}$$", e.data_str("formula").unwrap_or("")),
            "inline-image" => self.inline_image(e),
            "button" => button(e),
            "annotation" => {
                let text = self.nodes(e.children());
                match super::render::note_label(e) {
                    Some(n) if self.ctx != Ctx::Html => format!("{text}[^{n}]"),
                    _ => text,
                }
            }
            _ => self.nodes(e.children()),
        }
    }

    /// The text of a link: like any inline content, with `]` escaped as well.
    fn label(&self, nodes: &[Node]) -> String {
        let inner = self.nodes(nodes);
        if self.style.full {
            return inner;
        }
        // `]` is only special inside a label.
        let mut out = String::with_capacity(inner.len());
        let mut prev_backslash = false;
        for c in inner.chars() {
            if c == ']' && !prev_backslash {
                out.push('\\');
            }
            prev_backslash = c == '\\' && !prev_backslash;
            out.push(c);
        }
        out
    }

    /// A label written from plain text (an image's caption, a mention's path); in a table
    /// cell a `|` would end the cell, so it is escaped there.
    fn plain_label(&self, text: &str) -> String {
        let label = escape_label(text);
        match self.ctx {
            Ctx::Cell => label.replace('|', "\\|"),
            _ => label,
        }
    }

    fn inline_image(&self, e: &Element) -> String {
        let Some(src) = data_ref(e, "ref").map(|r| ref_href(&r)) else {
            return String::new();
        };
        let dark = data_ref(e, "refDark").map(|r| ref_href(&r));
        let alt = e.data_str("alt");
        let size = e.data_str("size");
        if dark.is_none() && alt.is_none() && size.is_none() && self.ctx != Ctx::Html {
            let caption = e.data_str("caption").unwrap_or("");
            return format!("![{}]({})", self.plain_label(caption), link_dest(&src));
        }
        let mut img = format!(
            "<img src=\"{}\" alt=\"{}\"",
            html::escape_attr(&src),
            html::escape_attr(alt.or(e.data_str("caption")).unwrap_or(""))
        );
        if let Some(s) = size {
            img.push_str(&format!(" data-size=\"{}\"", html::escape_attr(s)));
        }
        img.push('>');
        match dark {
            Some(d) => format!(
                "<picture><source srcset=\"{}\" media=\"(prefers-color-scheme: dark)\">{img}</picture>",
                html::escape_attr(&d)
            ),
            None => img,
        }
    }
}

/// `<a class="button">` for a link button, `<button>` for an action button.
fn button(e: &Element) -> String {
    let label = html::escape_text(e.data_str("label").unwrap_or(""));
    let kind = e.data_str("kind").unwrap_or("primary");
    let icon = e
        .data_str("icon")
        .map(|i| format!(" data-icon=\"{}\"", html::escape_attr(i)))
        .unwrap_or_default();
    if let Some(action) = e.data.get("action").and_then(Value::as_object) {
        let name = action.get("action").and_then(Value::as_str).unwrap_or("");
        let mut extra = String::new();
        for (k, attr) in [("query", "data-query"), ("slug", "data-slug")] {
            if let Some(v) = action.get(k).and_then(Value::as_str) {
                extra.push_str(&format!(" {attr}=\"{}\"", html::escape_attr(v)));
            }
        }
        return format!(
            "<button type=\"button\" class=\"button {kind}\" data-action=\"{}\"{extra}{icon}>{label}</button>",
            html::escape_attr(name)
        );
    }
    match data_ref(e, "ref").map(|r| ref_href(&r)) {
        Some(href) => format!(
            "<a href=\"{}\" class=\"button {kind}\"{icon}>{label}</a>",
            html::escape_attr(&href)
        ),
        // A button that leads nowhere.
        None => format!("<a class=\"button {kind}\"{icon}>{label}</a>"),
    }
}

/// The `style` of a `<mark>` for a colour mark: only the colours that are not `default`.
fn color_style(m: &Mark) -> String {
    let get = |k: &str| {
        m.data
            .as_ref()
            .and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string()
    };
    let mut style = String::new();
    let (text, bg) = (get("text"), get("background"));
    if text != "default" {
        style.push_str(&format!("color:{};", html::escape_attr(&text)));
    }
    if bg != "default" {
        style.push_str(&format!("background-color:{};", html::escape_attr(&bg)));
    }
    style
}

/// Writes the space or tab that starts a paragraph or a line after a break, and the one
/// that ends the paragraph or a line before a soft break, as a character reference:
/// parsing keeps those (plain ones there are trimmed). A line a hard break ends ends with
/// its backslash.
fn encode_edge_spaces(out: &mut String) {
    let blank = |c: &char| matches!(c, ' ' | '\t');
    let entity = |c: char| if c == ' ' { "&#x20;" } else { "&#9;" };
    if !out
        .split('\n')
        .any(|l| l.starts_with([' ', '\t']) || l.ends_with([' ', '\t']))
    {
        return;
    }
    let lines: Vec<String> = out
        .split('\n')
        .map(|line| {
            let mut line = line.to_string();
            if let Some(c) = line.chars().next().filter(blank) {
                line = format!("{}{}", entity(c), &line[1..]);
            }
            if let Some(c) = line.chars().next_back().filter(blank) {
                line = format!("{}{}", &line[..line.len() - 1], entity(c));
            }
            line
        })
        .collect();
    *out = lines.join("\n");
}

/// The destination of a link: raw when it can be, else between angle brackets.
pub(super) fn link_dest(href: &str) -> String {
    if href.is_empty() || href.contains([' ', '<', '>', '\n', '\t']) || unbalanced(href) {
        let mut out = String::from("<");
        for c in href.chars() {
            if matches!(c, '<' | '>' | '\\') {
                out.push('\\');
            }
            out.push(if c == '\n' { ' ' } else { c });
        }
        out.push('>');
        return out;
    }
    let chars: Vec<char> = href.chars().collect();
    let mut out = String::with_capacity(href.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        let escape = match c {
            '\\' => next.is_none_or(|n| n.is_ascii_punctuation()),
            '&' => next.is_some_and(|n| n == '#' || n.is_ascii_alphabetic()),
            '|' => true,
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether parentheses in a destination do not balance (it then needs angle brackets).
fn unbalanced(href: &str) -> bool {
    let mut depth = 0i32;
    for c in href.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => {}
        }
    }
    depth != 0
}

/// Escapes plain text for a link's label (content references, images).
pub(super) fn escape_label(s: &str) -> String {
    let mut out = escape_minimal(s, Ctx::Line, false);
    out = out.replace(']', "\\]");
    out
}

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation()
}

/// How a line break (`\n`) or a soft break is written in `ctx`, or `None` for another
/// character.
fn line_end(c: char, ctx: Ctx) -> Option<&'static str> {
    match (c, ctx) {
        ('\n', Ctx::Paragraph) => Some("\\\n"),
        ('\n', _) => Some("<br>"),
        (SOFT_BREAK, Ctx::Paragraph) => Some("\n"),
        (SOFT_BREAK, _) => Some(" "),
        _ => None,
    }
}

/// Escapes only what would start markdown syntax, as GitBook's serializer does.
fn escape_minimal(text: &str, ctx: Ctx, at_start: bool) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut line_start = at_start;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev = if i > 0 { Some(chars[i - 1]) } else { None };
        let next = chars.get(i + 1).copied();
        if let Some(line_end) = line_end(c, ctx) {
            out.push_str(line_end);
            line_start = c == '\n' || ctx == Ctx::Paragraph;
            i += 1;
            continue;
        }
        if line_start {
            line_start = false;
            match c {
                '#' | '-' | '+' | '=' | '>' | '~' => {
                    out.push('\\');
                    out.push(c);
                    i += 1;
                    continue;
                }
                '{' if next == Some('%') => {
                    out.push_str("\\{");
                    i += 1;
                    continue;
                }
                _ if c.is_ascii_digit() => {
                    // "1." or "1)" at a line start would begin an ordered list.
                    let mut j = i;
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        out.push(chars[j]);
                        j += 1;
                    }
                    if j < chars.len()
                        && matches!(chars[j], '.' | ')')
                        && chars.get(j + 1).is_none_or(|c| c.is_whitespace())
                    {
                        out.push('\\');
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
        }
        let escape = match c {
            '*' | '`' | '[' | '~' => true,
            // Before a line end, a backslash would make it a hard break.
            '\\' => next.is_none_or(|n| is_punct(n) || n == SOFT_BREAK),
            '_' => true,
            '<' => next.is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '!' | '/' | '?')),
            '&' => next.is_some_and(|n| n == '#' || n.is_ascii_alphabetic()),
            '!' => next == Some('['),
            '|' => ctx == Ctx::Cell,
            '$' => next == Some('$') || prev == Some('$'),
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Escapes every character that could mean something in markdown.
fn escape_full(text: &str, ctx: Ctx, at_start: bool) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut line_start = at_start;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(line_end) = line_end(c, ctx) {
            out.push_str(line_end);
            line_start = c == '\n' || ctx == Ctx::Paragraph;
            i += 1;
            continue;
        }
        if line_start {
            if matches!(c, '-' | '+' | '=') {
                out.push('\\');
            }
            if c.is_ascii_digit() {
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
