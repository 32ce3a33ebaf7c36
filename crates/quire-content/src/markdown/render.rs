//! Writing blocks in the form Git Sync writes them.
//!
//! Blocks are separated by a blank line; a container tag's content starts on the line after
//! the tag and its closing tag follows the content's last line; the items of a container
//! (tabs, steps, columns, updates) are separated by a blank line.

use std::cell::RefCell;

use serde_json::{Number, Value};

use super::html;
use super::inline::{escape_label, link_dest, render_inline, Ctx};
use super::{data_ref, path_label, quote_attr, raw_text, ref_href};
use crate::document::{Element, Node};
use crate::model::ContentRef;

/// Annotations met while writing a document: the element's address and its body.
type Notes = Vec<(usize, Vec<Node>)>;

thread_local! {
    /// The annotations met while writing a document, in order: each is written as a
    /// footnote reference where it is and a definition at the end.
    static NOTES: RefCell<Option<Notes>> = const { RefCell::new(None) };
}

/// The footnote number of an annotation in the document being written (the same each time
/// it is written), or `None` outside a document.
pub(super) fn note_label(e: &Element) -> Option<usize> {
    let key = e as *const Element as usize;
    let body = e
        .fragment("annotation-body")
        .map(|f| f.nodes.clone())
        .unwrap_or_default();
    NOTES.with(|n| {
        let mut n = n.borrow_mut();
        let notes = n.as_mut()?;
        Some(match notes.iter().position(|(k, _)| *k == key) {
            Some(i) => i + 1,
            None => {
                notes.push((key, body));
                notes.len()
            }
        })
    })
}

/// The bodies of the annotations met so far, by footnote number.
pub(super) fn notes_so_far() -> Vec<Vec<Node>> {
    NOTES.with(|n| {
        n.borrow()
            .as_ref()
            .map(|v| v.iter().map(|(_, b)| b.clone()).collect())
            .unwrap_or_default()
    })
}

/// The markdown of a document's top-level blocks, then its annotations' definitions.
pub(super) fn render_document(nodes: &[Node]) -> String {
    let outer = NOTES.with(|n| n.replace(Some(Vec::new())));
    let mut body = render_blocks(nodes);
    let notes = NOTES.with(|n| n.replace(outer)).unwrap_or_default();
    for (i, (_, note)) in notes.iter().enumerate() {
        let text = render_blocks(note);
        let definition = prefix_lines(&text, &format!("[^{}]: ", i + 1), "    ");
        body.push_str("\n\n");
        body.push_str(&definition);
    }
    if body.is_empty() {
        body
    } else {
        body + "\n"
    }
}

#[derive(Default)]
struct BlockState {
    /// Marker of the list rendered just before, so that two lists in a row stay apart.
    prev_list: Option<char>,
}

/// An inline node where a block was expected, written as a paragraph.
#[inline(never)]
fn render_loose_inline(node: &Node) -> String {
    render_inline(std::slice::from_ref(node), Ctx::Paragraph)
}

pub(super) fn render_blocks(nodes: &[Node]) -> String {
    render_blocks_in(nodes, false)
}

/// Renders blocks; `in_item` writes a list that follows a paragraph tight, as in list items.
fn render_blocks_in(nodes: &[Node], in_item: bool) -> String {
    let mut out = String::new();
    let mut state = BlockState::default();
    let mut prev_paragraph = false;
    let mut prev_list = false;
    let mut written = 0;
    for node in nodes {
        let (rendered, kind) = match node {
            Node::Block(e) => (render_block(e, &mut state), e.kind.as_str()),
            other => {
                state.prev_list = None;
                (Some(render_loose_inline(other)), "paragraph")
            }
        };
        // Empty paragraphs are kept: they stand for blank lines.
        let Some(mut s) = rendered.filter(|s| !s.is_empty() || kind == "paragraph") else {
            continue;
        };
        let is_list = matches!(kind, "list-unordered" | "list-ordered" | "list-tasks");
        // Source kept verbatim may start indented by up to three spaces, which means nothing
        // at the start of a block; after a list, it would make the text a child of the list's
        // last item (whose content may start further left than in the source).
        if prev_list && is_raw(node) {
            let indent = s.len() - s.trim_start_matches(' ').len();
            if (1..=3).contains(&indent) {
                s.drain(..indent);
            }
        }
        if !out.is_empty() || written > 0 {
            // A list right after a paragraph is written tight ("* a\n  * b") when it can
            // interrupt the paragraph: bullets, or numbering from 1, with a non-empty item.
            let first = s.lines().next().unwrap_or("");
            let interrupts = (kind == "list-unordered"
                || kind == "list-tasks"
                || (kind == "list-ordered" && first.starts_with('1')))
                && first.trim_end().contains(' ');
            out.push_str(if in_item && prev_paragraph && interrupts {
                "\n"
            } else {
                "\n\n"
            });
        }
        out.push_str(&s);
        written += 1;
        prev_paragraph = kind == "paragraph";
        prev_list = is_list;
    }
    out
}

/// Whether a block is source text kept verbatim (see [`raw_text`]).
fn is_raw(node: &Node) -> bool {
    matches!(node, Node::Block(e) if raw_text(e).is_some())
}

/// Renders one block. Each kind has its own function, so that this one, which is on the
/// path of every nested block, keeps a small stack frame.
fn render_block(e: &Element, state: &mut BlockState) -> Option<String> {
    let prev_list = state.prev_list.take();
    let out = match e.kind.as_str() {
        "paragraph" => {
            let out = render_paragraph(e);
            // An empty paragraph is blank lines, which do not part two lists of one marker:
            // the list after it still takes the other marker.
            if out.is_empty() && raw_text(e).is_none() {
                state.prev_list = prev_list;
            }
            out
        }
        "heading-1" | "heading-2" | "heading-3" => render_heading(e),
        "list-unordered" | "list-tasks" | "list-ordered" => {
            let (out, marker) = render_list(e, prev_list)?;
            state.prev_list = Some(marker);
            out
        }
        "blockquote" => render_quote(e),
        "code" => render_code(e),
        "divider" => "***".into(),
        "math" => format!("$${}$$", e.data_str("formula").unwrap_or("")),
        "hint" => render_hint(e),
        "tabs" | "stepper" | "columns" | "updates" => render_items(e),
        "if" => container(
            &format!("{{% if {} %}}", e.data_str("expression").unwrap_or("true")),
            &render_blocks(e.children()),
            "{% endif %}",
        ),
        "prompt" => render_prompt(e),
        "expandable" => render_expandable(e),
        "embed" => render_embed(e),
        "file" => render_file(e)?,
        "content-ref" => render_content_ref(e)?,
        "reusable-content" => {
            let r = data_ref(e, "ref")?;
            format!("{{% include {} %}}", quote_attr(&ref_href(&r)))
        }
        "swagger" => render_swagger(e)?,
        "openapi-operation" | "openapi-webhook" | "openapi-schemas" => render_openapi(e),
        "integration" => render_integration(e),
        "images" => render_images(e),
        "drawing" => render_drawing(e)?,
        "table" => super::table::render_table(e)?,
        _ => render_unknown(e)?,
    };
    Some(out)
}

#[inline(never)]
fn render_paragraph(e: &Element) -> String {
    if let Some(raw) = raw_text(e) {
        return raw;
    }
    match e.data_str("align").and_then(align_to_html) {
        Some(a) => format!(
            "<p align=\"{a}\">{}</p>",
            render_inline(e.children(), Ctx::Html)
        ),
        None => render_inline(e.children(), Ctx::Paragraph),
    }
}

/// `start`/`center`/`end` as HTML's `left`/`center`/`right`.
fn align_to_html(a: &str) -> Option<&'static str> {
    match a {
        "start" => Some("left"),
        "center" => Some("center"),
        "end" => Some("right"),
        _ => None,
    }
}

#[inline(never)]
fn render_heading(e: &Element) -> String {
    // Git Sync writes the page title as `#`: headings are one level lower.
    let level = e.kind[8..].parse::<usize>().unwrap_or(1) + 1;
    if let Some(a) = e.data_str("align").and_then(align_to_html) {
        return format!(
            "<h{level} align=\"{a}\">{}</h{level}>",
            render_inline(e.children(), Ctx::Html)
        );
    }
    let text = render_inline(e.children(), Ctx::Line);
    let id = e
        .data_str("id")
        .filter(|id| super::parse::is_anchor(id))
        .map(|id| format!(" <a href=\"#{id}\" id=\"{id}\"></a>"))
        .unwrap_or_default();
    format!("{} {}{}", "#".repeat(level), text, id)
}

/// A list and the marker it used.
#[inline(never)]
fn render_list(e: &Element, prev_list: Option<char>) -> Option<(String, char)> {
    let ordered = e.kind == "list-ordered";
    let marker = match (ordered, prev_list) {
        (false, Some('*')) => '-',
        (false, _) => '*',
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
        // An item whose blocks are apart (any block after the first but a nested list) is
        // written as Git Sync writes a spread item: its content at the next tab stop
        // (`1.  `, `*   `) and every block after a blank line.
        let spread = item.children().iter().skip(1).any(
            |b| !matches!(b.element().map(|e| e.kind.as_str()), Some(k) if k.starts_with("list-")),
        );
        let prefix = if spread {
            format!("{prefix:<width$}", width = prefix.len().div_ceil(4) * 4)
        } else {
            prefix
        };
        let body = render_blocks_in(item.children(), !spread);
        let first_kind = item
            .children()
            .first()
            .and_then(Node::element)
            .map(|b| b.kind.as_str());
        let starts_with_text = first_kind == Some("paragraph");
        // A task marker must be followed by text, and a nested list or a divider on the
        // marker's line could read as a divider ("- - -"): those blocks go on the next
        // lines.
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

fn container(open: &str, body: &str, close: &str) -> String {
    if body.is_empty() {
        format!("{open}\n{close}")
    } else {
        format!("{open}\n{body}\n{close}")
    }
}

/// ` key="value"` for each attribute that is present.
fn attrs(pairs: &[(&str, Option<String>)]) -> String {
    let mut out = String::new();
    for (k, v) in pairs {
        if let Some(v) = v {
            out.push_str(&format!(" {k}={}", quote_attr(v)));
        }
    }
    out
}

/// A data field as the text of an attribute.
fn field(e: &Element, key: &str) -> Option<String> {
    match e.data.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(number_text(n)),
        _ => None,
    }
}

/// A number as written in attributes: integers without a fraction.
pub(super) fn number_text(n: &Number) -> String {
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => n.to_string(),
    }
}

/// A `Length` (pixels, or a value with a unit) as an attribute.
fn length_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(number_text(n)),
        Value::Object(o) => {
            let value = o.get("value")?.as_number()?;
            let unit = o.get("unit")?.as_str()?;
            Some(format!("{}{unit}", number_text(value)))
        }
        _ => None,
    }
}

#[inline(never)]
fn render_hint(e: &Element) -> String {
    let open = format!(
        "{{% hint{} %}}",
        attrs(&[
            (
                "style",
                Some(e.data_str("style").unwrap_or("info").to_string())
            ),
            ("icon", field(e, "icon")),
        ])
    );
    container(&open, &render_blocks(e.children()), "{% endhint %}")
}

/// Tabs, steppers, columns and updates: the container's tag, then each item.
#[inline(never)]
fn render_items(e: &Element) -> String {
    let (tag, item_tag, open_attrs): (&str, &str, Vec<(&str, Option<String>)>) =
        match e.kind.as_str() {
            "tabs" => ("tabs", "tab", vec![("fullWidth", field(e, "fullWidth"))]),
            "stepper" => ("stepper", "step", vec![]),
            "columns" => (
                "columns",
                "column",
                vec![("fullWidth", field(e, "fullWidth"))],
            ),
            _ => (
                "updates",
                "update",
                vec![(
                    "format",
                    Some(e.data_str("format").unwrap_or("full").to_string()),
                )],
            ),
        };
    let items: Vec<String> = e
        .children()
        .iter()
        .filter_map(Node::element)
        .map(|item| {
            let item_attrs: Vec<(&str, Option<String>)> = match tag {
                "tabs" => vec![
                    (
                        "title",
                        Some(item.data_str("title").unwrap_or("").to_string()),
                    ),
                    ("icon", field(item, "icon")),
                ],
                "stepper" => vec![("icon", field(item, "icon"))],
                "columns" => vec![
                    ("width", item.data.get("width").and_then(length_text)),
                    ("valign", field(item, "verticalAlignment")),
                ],
                _ => vec![
                    (
                        "date",
                        Some(update_day(item.data_str("date").unwrap_or(""))),
                    ),
                    ("tags", update_tags(item)),
                ],
            };
            container(
                &format!("{{% {item_tag}{} %}}", attrs(&item_attrs)),
                &render_blocks(item.children()),
                &format!("{{% end{item_tag} %}}"),
            )
        })
        .collect();
    format!(
        "{{% {tag}{} %}}\n{}\n{{% end{tag} %}}",
        attrs(&open_attrs),
        items.join("\n\n")
    )
}

/// An update's date as written: the day when the time is midnight UTC.
fn update_day(date: &str) -> String {
    match date.strip_suffix("T00:00:00.000Z") {
        Some(day) if day.len() == 10 => day.to_string(),
        _ => date.to_string(),
    }
}

fn update_tags(e: &Element) -> Option<String> {
    let tags: Vec<&str> = e
        .data
        .get("tags")?
        .as_array()?
        .iter()
        .filter_map(|t| t.get("tag").and_then(Value::as_str))
        .collect();
    (!tags.is_empty()).then(|| tags.join(","))
}

#[inline(never)]
fn render_prompt(e: &Element) -> String {
    let mut pairs = Vec::new();
    for k in [
        "description",
        "icon",
        "openInAIProviders",
        "defaultExpanded",
    ] {
        pairs.push((k, field(e, k)));
    }
    container(
        &format!("{{% prompt{} %}}", attrs(&pairs)),
        &render_blocks(e.children()),
        "{% endprompt %}",
    )
}

#[inline(never)]
fn render_expandable(e: &Element) -> String {
    let title = e
        .fragment("expandable-title")
        .and_then(|f| f.nodes.first())
        .and_then(Node::element)
        .map(|p| render_inline(p.children(), Ctx::Html))
        .unwrap_or_default();
    let body = e
        .fragment("expandable-body")
        .map(|f| render_blocks(&f.nodes))
        .unwrap_or_default();
    let open = if e.data.get("defaultExpanded") == Some(&Value::Bool(true)) {
        "<details open>"
    } else {
        "<details>"
    };
    let mut out = format!("{open}\n\n<summary>{title}</summary>\n\n");
    if !body.is_empty() {
        out.push_str(&body);
        out.push_str("\n\n");
    }
    out.push_str("</details>");
    out
}

/// The caption of a block, written inline.
fn caption(e: &Element) -> Option<String> {
    e.fragment("caption")
        .and_then(|f| f.nodes.first())
        .and_then(Node::element)
        .map(|p| render_inline(p.children(), Ctx::Line))
        .filter(|c| !c.is_empty())
}

/// A tag with an optional caption before its closing tag.
fn captioned(open: String, e: &Element, end: &str) -> String {
    match caption(e) {
        Some(c) => format!("{open}\n{c}\n{{% {end} %}}"),
        None => open,
    }
}

#[inline(never)]
fn render_embed(e: &Element) -> String {
    let open = format!(
        "{{% embed{} %}}",
        attrs(&[
            ("url", Some(e.data_str("url").unwrap_or("").to_string())),
            ("fullWidth", field(e, "fullWidth")),
        ])
    );
    captioned(open, e, "endembed")
}

#[inline(never)]
fn render_file(e: &Element) -> Option<String> {
    let r = data_ref(e, "ref")?;
    let open = format!("{{% file src={} %}}", quote_attr(&ref_href(&r)));
    Some(captioned(open, e, "endfile"))
}

#[inline(never)]
fn render_content_ref(e: &Element) -> Option<String> {
    let href = ref_href(&data_ref(e, "ref")?);
    Some(format!(
        "{{% content-ref url={} %}}\n[{}]({})\n{{% endcontent-ref %}}",
        quote_attr(&href),
        escape_label(&path_label(&href)),
        link_dest(&href)
    ))
}

#[inline(never)]
fn render_swagger(e: &Element) -> Option<String> {
    let src = ref_href(&data_ref(e, "ref")?);
    let open = format!(
        "{{% openapi{} %}}",
        attrs(&[
            ("src", Some(src.clone())),
            ("path", field(e, "path")),
            ("method", field(e, "method")),
            ("expanded", field(e, "expanded")),
            ("fullWidth", field(e, "fullWidth")),
        ])
    );
    Some(format!(
        "{open}\n[{}]({})\n{{% endopenapi %}}",
        escape_label(&src),
        link_dest(&src)
    ))
}

#[inline(never)]
fn render_openapi(e: &Element) -> String {
    let spec = e
        .data
        .get("ref")
        .and_then(|r| r.get("spec"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut pairs = vec![("spec", Some(spec.clone()))];
    match e.kind.as_str() {
        "openapi-operation" => {
            pairs.push(("path", field(e, "path")));
            pairs.push(("method", field(e, "method")));
        }
        "openapi-webhook" => {
            pairs.push(("name", field(e, "name")));
            pairs.push(("method", field(e, "method")));
        }
        _ => {
            let schemas: Vec<&str> = e
                .data
                .get("schemas")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            pairs.push(("schemas", Some(schemas.join(","))));
            pairs.push(("grouped", field(e, "grouped")));
        }
    }
    let inner = if e.kind == "openapi-schemas" {
        e.data_str("title").unwrap_or("").to_string()
    } else if e
        .meta
        .as_ref()
        .and_then(|m| m.get("specLink"))
        .is_some_and(|v| v == "broken")
    {
        super::scan::BROKEN_SPEC.to_string()
    } else {
        e.data_str("specUrl")
            .map(|u| format!("[OpenAPI {}]({u})", escape_label(&spec)))
            .unwrap_or_default()
    };
    container(
        &format!("{{% {}{} %}}", e.kind, attrs(&pairs)),
        &inner,
        &format!("{{% end{} %}}", e.kind),
    )
}

#[inline(never)]
fn render_integration(e: &Element) -> String {
    let mut out = format!(
        "{{% @{}/{}",
        e.data_str("integration").unwrap_or(""),
        e.data_str("block").unwrap_or("")
    );
    if let Some(props) = e.data.get("props").and_then(Value::as_object) {
        for (k, v) in props {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push_str(&format!(" {k}={}", quote_attr(&v)));
        }
    }
    out.push_str(" %}");
    out
}

/// An image of an images block: `<figure>` with its image (or picture) and caption.
fn render_figure(img: &Element) -> Option<String> {
    let src = ref_href(&data_ref(img, "ref")?);
    let mut tag = format!(
        "<img src=\"{}\" alt=\"{}\"",
        html::escape_attr(&src),
        html::escape_attr(img.data_str("alt").unwrap_or(""))
    );
    for k in ["width", "height"] {
        if let Some(v) = img.data.get(k).and_then(length_text) {
            tag.push_str(&format!(" {k}=\"{}\"", html::escape_attr(&v)));
        }
    }
    tag.push('>');
    if let Some(dark) = data_ref(img, "refDark") {
        tag = format!(
            "<picture><source srcset=\"{}\" media=\"(prefers-color-scheme: dark)\">{tag}</picture>",
            html::escape_attr(&ref_href(&dark))
        );
    }
    let caption = img
        .fragment("caption")
        .and_then(|f| f.nodes.first())
        .and_then(Node::element)
        .map(|p| render_inline(p.children(), Ctx::Html))
        .filter(|c| !c.is_empty())
        .map(|c| format!("<p>{c}</p>"))
        .unwrap_or_default();
    Some(format!(
        "<figure>{tag}<figcaption>{caption}</figcaption></figure>"
    ))
}

#[inline(never)]
fn render_images(e: &Element) -> String {
    let figures: Vec<String> = e
        .children()
        .iter()
        .filter_map(Node::element)
        .filter_map(render_figure)
        .collect();
    let mut div = String::new();
    if let Some(a) = e.data_str("align") {
        div.push_str(&format!(" align=\"{}\"", html::escape_attr(a)));
    }
    for (k, attr) in [
        ("fullWidth", "data-full-width"),
        ("withFrame", "data-with-frame"),
    ] {
        if let Some(b) = e.data.get(k).and_then(Value::as_bool) {
            div.push_str(&format!(" {attr}=\"{b}\""));
        }
    }
    if figures.len() == 1 && div.is_empty() {
        return figures.into_iter().next().unwrap_or_default();
    }
    format!("<div{div}>{}</div>", figures.join(" "))
}

#[inline(never)]
fn render_drawing(e: &Element) -> Option<String> {
    let r = data_ref(e, "ref")?;
    if !matches!(r, ContentRef::File { .. }) {
        return None;
    }
    Some(format!(
        "<img src=\"{}\" alt=\"{}\" class=\"gitbook-drawing\">",
        html::escape_attr(&ref_href(&r)),
        html::escape_attr(e.data_str("alt").unwrap_or(""))
    ))
}

pub(super) fn prefix_lines(text: &str, first: &str, rest: &str) -> String {
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

/// A code block with highlighted lines, as HTML (markdown fences cannot mark lines).
fn render_pre(e: &Element) -> String {
    let syntax = e.data_str("syntax").filter(|s| !s.is_empty());
    let mut pre = String::new();
    if let Some(s) = syntax {
        pre.push_str(&format!(" class=\"language-{}\"", html::escape_attr(s)));
    }
    if let Some(t) = e.data_str("title") {
        pre.push_str(&format!(" data-title=\"{}\"", html::escape_attr(t)));
    }
    if let Some(o) = e.data_str("overflow") {
        pre.push_str(&format!(" data-overflow=\"{}\"", html::escape_attr(o)));
    }
    if e.data.get("lineNumbers") == Some(&Value::Bool(true)) {
        pre.push_str(" data-line-numbers");
    }
    for (k, attr) in [
        ("expandable", "data-expandable"),
        ("fullWidth", "data-full-width"),
    ] {
        if let Some(b) = e.data.get(k).and_then(Value::as_bool) {
            pre.push_str(&format!(" {attr}=\"{b}\""));
        }
    }
    let code = match syntax {
        Some(s) => format!("<code class=\"lang-{}\">", html::escape_attr(s)),
        None => "<code>".to_string(),
    };
    let mut body = String::new();
    for line in e.children() {
        let text = html::escape_text(&plain_text_raw(line));
        let hl = line
            .element()
            .and_then(|l| l.data.get("highlighted"))
            .and_then(Value::as_bool)
            == Some(true);
        if hl {
            body.push_str(&format!("<strong>{text}\n</strong>"));
        } else {
            body.push_str(&text);
            body.push('\n');
        }
    }
    format!("<pre{pre}>{code}{body}</code></pre>")
}

/// A code block: a fence, inside `{% code %}` when it has a title or options.
fn render_code(e: &Element) -> String {
    let highlighted = e.children().iter().any(|l| {
        l.element()
            .and_then(|l| l.data.get("highlighted"))
            .and_then(Value::as_bool)
            == Some(true)
    });
    // Options the HTML form cannot write keep the markdown form.
    if highlighted && e.data.get("lineNumbers") != Some(&Value::Bool(false)) {
        return render_pre(e);
    }
    let lines: Vec<String> = e
        .children()
        .iter()
        .map(|l| match l.element() {
            Some(el) => el.children().iter().map(plain_text_raw).collect::<String>(),
            None => plain_text_raw(l),
        })
        .collect();
    let body = lines.join("\n");
    let syntax = e
        .data_str("syntax")
        .unwrap_or("")
        .replace(char::is_whitespace, "");
    let info = syntax.replace('\\', "\\\\").replace('&', "\\&");
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
    let block = format!("{fence}{info}\n{body}\n{fence}");
    let wrapper = attrs(&[
        ("title", field(e, "title")),
        ("overflow", field(e, "overflow")),
        ("lineNumbers", field(e, "lineNumbers")),
        ("fullWidth", field(e, "fullWidth")),
        ("expandable", field(e, "expandable")),
        ("collapsedLineCount", field(e, "collapsedLineCount")),
    ]);
    if wrapper.is_empty() {
        block
    } else {
        format!("{{% code{wrapper} %}}\n{block}\n{{% endcode %}}")
    }
}

/// Text of a node with nothing trimmed (code lines keep their spaces). Iterative.
pub(crate) fn plain_text_raw(node: &Node) -> String {
    let mut out = String::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match n {
            Node::Text(t) => t.leaves.iter().for_each(|l| out.push_str(&l.text)),
            Node::Inline(e) | Node::Block(e) => stack.extend(e.children().iter().rev()),
        }
    }
    out
}

/// Unknown or unsupported blocks: keep their text rather than lose it silently.
#[inline(never)]
fn render_unknown(e: &Element) -> Option<String> {
    let text = Node::Block(e.clone()).plain_text();
    if text.is_empty() {
        return None;
    }
    Some(render_inline(&[Node::text(&text)], Ctx::Paragraph))
}
