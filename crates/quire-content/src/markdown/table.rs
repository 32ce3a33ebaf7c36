//! Tables: markdown tables (GitHub's pipes) and the HTML tables GitBook writes when a table
//! has options markdown cannot hold (column widths, alignments, cards…).
//!
//! A table block holds its columns in `definition`, its rows in `records` and the content
//! of each cell in a fragment named after the record and the column.

use pulldown_cmark::{Alignment, Event, Tag, TagEnd};
use serde_json::{json, Map, Value};

use super::html::{self, HElement, HNode};

use super::inline::{render_inline, Ctx};
use super::parse::{html_items, inline_nodes, EventParser, Events};
use super::scan::Scanner;
use super::{obj, order_index, raw_text, ref_json, LinkTarget};
use crate::document::{Element, Fragment, Node};
use crate::model::ContentRef;

/// Column ids in order.
fn column_ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("c{i}")).collect()
}

/// A markdown table, whose start was just consumed.
pub(super) fn pipe_table(
    p: &mut EventParser<'_, '_>,
    ev: &mut Events<'_>,
    aligns: Vec<Alignment>,
    depth: usize,
) -> Option<Node> {
    let mut rows: Vec<Vec<Vec<Node>>> = Vec::new();
    let mut current: Vec<Vec<Node>> = Vec::new();
    while let Some(e) = ev.next() {
        match e {
            Event::Start(Tag::TableCell) => {
                let items = p.cell_inlines(ev, depth + 2);
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
    let columns = column_ids(aligns.len().max(header.len()));
    let mut definition = Map::new();
    for (i, col) in columns.iter().enumerate() {
        // Column titles are plain text.
        let title = match header.get(i).map(Vec::as_slice) {
            None => String::new(),
            Some([Node::Text(t)]) if t.leaves.iter().all(|l| l.marks.is_empty()) => {
                t.leaves.iter().map(|l| l.text.as_str()).collect()
            }
            Some(_) => return None,
        };
        if title.contains('\n') {
            return None;
        }
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
            if c >= columns.len() || super::parse::is_empty_inline(&cell) {
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
    Some(Node::Block(el))
}

/// Column types GitBook writes in `data-type` (text when absent).
const COLUMN_TYPES: [&str; 9] = [
    "text",
    "number",
    "checkbox",
    "files",
    "users",
    "rating",
    "select",
    "content-ref",
    "image",
];

/// Only the elements of a list of HTML nodes (whitespace between them ignored).
fn elements(nodes: &[HNode]) -> Option<Vec<&HElement>> {
    let mut out = Vec::new();
    for n in nodes {
        match n {
            HNode::El(e) => out.push(e),
            HNode::Text(t) if t.trim().is_empty() => {}
            HNode::Text(_) => return None,
        }
    }
    Some(out)
}

/// The blocks of a table cell: inline content is one paragraph; `<p>` and `<h2>`–`<h4>`
/// are paragraphs and headings.
fn cell_blocks(td: &HElement, scanner: &Scanner<'_>, depth: usize) -> Option<Vec<Node>> {
    let blocky = |e: &HElement| matches!(e.name.as_str(), "p" | "h2" | "h3" | "h4" | "ul" | "ol");
    let any_block = td
        .children
        .iter()
        .any(|c| matches!(c, HNode::El(e) if blocky(e)));
    if !any_block {
        // Spaces in cells are kept as written.
        let items = html_items(&td.children, scanner, depth + 2, &[])?;
        return Some(vec![Node::paragraph(inline_nodes(items, false))]);
    }
    let mut out = Vec::new();
    for e in elements(&td.children)? {
        if !blocky(e) || !e.attrs.is_empty() {
            return None;
        }
        if e.name == "ul" || e.name == "ol" {
            // A list of one-paragraph items.
            let mut items = Vec::new();
            for li in elements(&e.children)? {
                if li.name != "li" || !li.attrs.is_empty() {
                    return None;
                }
                let inline = html_items(&li.children, scanner, depth + 4, &[])?;
                items.push(Node::block(
                    "list-item",
                    Map::new(),
                    vec![Node::paragraph(inline_nodes(inline, false))],
                ));
            }
            let kind = if e.name == "ul" {
                "list-unordered"
            } else {
                "list-ordered"
            };
            out.push(Node::block(kind, Map::new(), items));
            continue;
        }
        let items = html_items(&e.children, scanner, depth + 2, &[])?;
        let kind = match e.name.as_str() {
            "p" => "paragraph".to_string(),
            h => format!("heading-{}", h[1..].parse::<usize>().ok()? - 1),
        };
        out.push(Node::block(&kind, Map::new(), inline_nodes(items, true)));
    }
    Some(out)
}

/// A number as GitBook writes it in a table (`3`, `2.5`), only in the form it is written
/// back in, so that the cell survives byte for byte.
fn number(text: &str) -> Option<Value> {
    let n: serde_json::Number = match text.parse::<i64>() {
        Ok(i) => i.into(),
        Err(_) => serde_json::Number::from_f64(text.parse::<f64>().ok()?)?,
    };
    (super::render::number_text(&n) == text).then_some(Value::Number(n))
}

/// The options of a select column, `<select [multiple]><option value label color>…`, and
/// whether a cell takes several of them.
fn select_options(sel: &HElement) -> Option<(bool, Vec<Value>)> {
    let multiple = match sel.attrs.as_slice() {
        [] => false,
        [(k, None)] if k == "multiple" => true,
        _ => return None,
    };
    let mut options = Vec::new();
    for o in elements(&sel.children)? {
        let [(v, Some(value)), (l, Some(label)), (c, Some(color))] = o.attrs.as_slice() else {
            return None;
        };
        if o.name != "option"
            || !o.children.is_empty()
            || (v.as_str(), l.as_str(), c.as_str()) != ("value", "label", "color")
        {
            return None;
        }
        options.push(json!({"value": value, "label": label, "color": color}));
    }
    Some((multiple, options))
}

/// The text of a cell that holds only text.
fn only_text(td: &HElement) -> Option<String> {
    td.children
        .iter()
        .map(|n| match n {
            HNode::Text(t) => Some(t.as_str()),
            HNode::El(_) => None,
        })
        .collect()
}

/// The references of a cell made of links with plain labels and nothing else (the form of
/// content-ref, image and files columns).
fn cell_links(td: &HElement, scanner: &Scanner<'_>) -> Option<Vec<ContentRef>> {
    let mut out = Vec::new();
    for n in &td.children {
        let HNode::El(a) = n else {
            return None;
        };
        if a.name != "a" || a.attr_names().ne(["href"]) || only_text(a).is_none() {
            return None;
        }
        match scanner.resolve(a.attr("href")?) {
            LinkTarget::Ref(r) => out.push(r),
            LinkTarget::Text => return None,
        }
    }
    Some(out)
}

/// The typed value of a cell of a column other than text, and whether its blocks are kept
/// as the cell's label (the text of its links, which the value cannot hold); `None` when
/// the cell is not in its column's form, which keeps the table raw.
fn typed_cell(
    kind: &str,
    def: &Map<String, Value>,
    td: &HElement,
    scanner: &Scanner<'_>,
) -> Option<(Value, bool)> {
    match kind {
        "number" | "rating" => Some((number(&only_text(td)?)?, false)),
        "checkbox" => match only_text(td)?.as_str() {
            "true" => Some((json!(true), false)),
            "false" => Some((json!(false), false)),
            _ => None,
        },
        "content-ref" => match cell_links(td, scanner)?.as_slice() {
            [r] => Some((ref_json(r), true)),
            _ => None,
        },
        "image" => match cell_links(td, scanner)?.as_slice() {
            [r @ (ContentRef::File { .. } | ContentRef::Url { .. })] => Some((ref_json(r), true)),
            _ => None,
        },
        // A link that is not one of the space's files has no place in a files column.
        "files" => {
            let ids = cell_links(td, scanner)?
                .into_iter()
                .map(|r| match r {
                    ContentRef::File { file } => Some(Value::String(file)),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some((Value::Array(ids), true))
        }
        "select" => {
            let multiple = def.get("multiple").and_then(Value::as_bool)?;
            let spans = elements(&td.children)?;
            if spans.len() > 1 && !multiple || spans.len() != td.children.len() {
                return None;
            }
            let mut ids = Vec::new();
            for (i, span) in spans.iter().enumerate() {
                let id = span.attr("data-option")?;
                if span.name != "span" || span.attrs.len() != 1 {
                    return None;
                }
                let label = option_label(def, id)?;
                let sep = if i + 1 < spans.len() { ", " } else { "" };
                if only_text(span)? != format!("{label}{sep}") {
                    return None;
                }
                ids.push(json!(id));
            }
            Some((Value::Array(ids), false))
        }
        // Users are not written in a form this reader knows.
        _ => None,
    }
}

/// The label of a select column's option.
fn option_label<'a>(def: &'a Map<String, Value>, id: &str) -> Option<&'a str> {
    def.get("options")?
        .as_array()?
        .iter()
        .find(|o| o.get("value").and_then(Value::as_str) == Some(id))?
        .get("label")?
        .as_str()
}

/// An HTML table GitBook wrote (column widths, alignments, hidden columns, cards…); `None`
/// keeps it raw.
pub(super) fn html_table(el: &HElement, scanner: &Scanner<'_>, depth: usize) -> Option<Node> {
    let mut data = Map::new();
    let mut cards = false;
    let mut card_size = "medium".to_string();
    let mut wrap = None;
    for (k, v) in &el.attrs {
        let v = v.as_deref()?;
        match k.as_str() {
            "data-view" if v == "cards" => cards = true,
            "data-card-size" if matches!(v, "medium" | "large") => card_size = v.to_string(),
            "data-card-wrap" => wrap = Some(super::parse::parse_bool_attr(v)?),
            "data-full-width" => {
                data.insert("fullWidth".into(), json!(super::parse::parse_bool_attr(v)?));
            }
            "data-search" => {
                data.insert("search".into(), json!(super::parse::parse_bool_attr(v)?));
            }
            _ => return None,
        }
    }
    let parts = elements(&el.children)?;
    let [thead, tbody] = parts.as_slice() else {
        return None;
    };
    if thead.name != "thead" || tbody.name != "tbody" || !thead.attrs.is_empty() {
        return None;
    }
    let head_rows = elements(&thead.children)?;
    let [head] = head_rows.as_slice() else {
        return None;
    };
    let ths = elements(&head.children)?;
    let columns = column_ids(ths.len());
    let mut definition = Map::new();
    let mut visible = Vec::new();
    let mut widths = Map::new();
    let mut view = Map::new();
    let mut aligns = Vec::new();
    let mut valigns = Vec::new();
    for (th, col) in ths.iter().zip(&columns) {
        // A select column's options follow its title.
        let (title, select) = match th.children.split_last() {
            Some((HNode::El(s), rest)) if s.name == "select" => (rest, Some(s)),
            _ => (th.children.as_slice(), None),
        };
        if th.name != "th" || title.iter().any(|c| matches!(c, HNode::El(_))) {
            return None;
        }
        let title: String = title
            .iter()
            .map(|n| match n {
                HNode::Text(t) => t.as_str(),
                HNode::El(_) => "",
            })
            .collect();
        let mut def = obj([("id", json!(col)), ("title", json!(title))]);
        let mut kind = "text";
        let mut max = None;
        let (mut align, mut valign, mut hidden) = ("left", None, false);
        for (k, v) in &th.attrs {
            let v = v.as_deref().unwrap_or("");
            match k.as_str() {
                "width" => {
                    widths.insert(col.clone(), super::parse::length(v)?);
                }
                "align" if matches!(v, "center" | "right") => {
                    align = if v == "center" { "center" } else { "right" }
                }
                "valign" if matches!(v, "top" | "middle" | "bottom") => {
                    valign = Some(v.to_string())
                }
                "data-hidden" if v.is_empty() => hidden = true,
                "data-card-target" if v.is_empty() => {
                    view.insert("targetDefinition".into(), json!(col));
                }
                "data-card-cover" if v.is_empty() => {
                    view.insert("coverDefinition".into(), json!(col));
                }
                "data-card-cover-dark" if v.is_empty() => {
                    view.insert("coverDefinitionDark".into(), json!(col));
                }
                // A select column is known by its options, never by its type.
                "data-type" if COLUMN_TYPES.contains(&v) && v != "select" => {
                    kind = COLUMN_TYPES.iter().find(|t| **t == v)?
                }
                "data-max" => max = Some(number(v)?),
                _ => return None,
            }
        }
        if let Some(sel) = select {
            if kind != "text" {
                return None;
            }
            kind = "select";
            let (multiple, options) = select_options(sel)?;
            def.insert("multiple".into(), json!(multiple));
            def.insert("options".into(), Value::Array(options));
        }
        match max {
            Some(m) if kind == "rating" => {
                def.insert("max".into(), m);
            }
            Some(_) => return None,
            None => {}
        }
        def.insert("type".into(), json!(kind));
        if kind == "text" {
            def.insert("textAlignment".into(), json!(align));
            if let Some(va) = &valign {
                def.insert("verticalAlignment".into(), json!(va));
            }
        } else if align != "left" || valign.is_some() {
            return None;
        }
        aligns.push(align);
        valigns.push(valign);
        if !hidden {
            visible.push(col.clone());
        }
        definition.insert(col.clone(), Value::Object(def));
    }
    // The rows: each cell's content is a fragment.
    let mut records = Map::new();
    let mut fragments = Vec::new();
    for (r, tr) in elements(&tbody.children)?.into_iter().enumerate() {
        if tr.name != "tr" || !tr.attrs.is_empty() {
            return None;
        }
        let tds = elements(&tr.children)?;
        if tds.len() != columns.len() {
            return None;
        }
        let rid = format!("r{r}");
        let mut values = Map::new();
        for (c, td) in tds.into_iter().enumerate() {
            // Cells repeat their column's alignments.
            let mut expected: Vec<(String, Option<String>)> = Vec::new();
            if aligns[c] != "left" {
                expected.push(("align".into(), Some(aligns[c].into())));
            }
            if let Some(va) = &valigns[c] {
                expected.push(("valign".into(), Some(va.clone())));
            }
            if td.name != "td" || td.attrs != expected {
                return None;
            }
            if td
                .children
                .iter()
                .all(|n| matches!(n, HNode::Text(t) if t.is_empty()))
            {
                continue;
            }
            let key = format!("{rid}-{}", columns[c]);
            let def = definition.get(&columns[c]).and_then(Value::as_object)?;
            let kind = def.get("type").and_then(Value::as_str).unwrap_or("text");
            let (value, label) = if kind == "text" {
                (json!(key), true)
            } else {
                typed_cell(kind, def, td, scanner)?
            };
            values.insert(columns[c].clone(), value);
            if label {
                fragments.push(Fragment {
                    key: None,
                    fragment: Some(key),
                    kind: None,
                    nodes: cell_blocks(td, scanner, depth)?,
                });
            }
        }
        records.insert(rid, json!({"orderIndex": order_index(r), "values": values}));
    }
    view.insert("columns".into(), json!(visible));
    if cards {
        view.insert("type".into(), json!("cards"));
        view.insert("cardSize".into(), json!(card_size));
        if let Some(w) = wrap {
            view.insert("wrap".into(), json!(w));
        }
        if !widths.is_empty() {
            return None;
        }
    } else {
        if wrap.is_some() || card_size != "medium" || view.len() > 1 {
            return None;
        }
        view.insert("type".into(), json!("grid"));
        view.insert("hideHeader".into(), json!(false));
        if !widths.is_empty() {
            view.insert("columnWidths".into(), Value::Object(widths));
        }
    }
    data.insert("view".into(), Value::Object(view));
    data.insert("records".into(), Value::Object(records));
    data.insert("definition".into(), Value::Object(definition));
    let mut el = Element::void("table", data);
    el.fragments = Some(fragments);
    // Tell the writer to keep it HTML even when markdown could hold it.
    Some(Node::Block(el))
}

/// Length of a cell as GitBook's serializer measures it (UTF-16 code units).
fn width(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Column ids of a table in order: `c0`, `c1`… by number, else the view's columns first.
fn ordered_columns(e: &Element) -> Vec<String> {
    let Some(def) = e.data.get("definition").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = def.keys().cloned().collect();
    let visible: Vec<String> = e
        .data
        .get("view")
        .and_then(|v| v.get("columns"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let number = |id: &str| id.strip_prefix('c').and_then(|n| n.parse::<usize>().ok());
    if ids.iter().all(|id| number(id).is_some()) {
        ids.sort_by_key(|id| number(id));
    } else {
        ids.sort_by_key(|id| visible.iter().position(|v| v == id).unwrap_or(usize::MAX));
    }
    ids
}

/// Whether a table needs HTML: anything a markdown table cannot hold.
fn needs_html(e: &Element, columns: &[String]) -> bool {
    let view = e.data.get("view");
    let def = e.data.get("definition").and_then(Value::as_object);
    let visible = view
        .and_then(|v| v.get("columns"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    view.and_then(|v| v.get("type")).and_then(Value::as_str) != Some("grid")
        || view.and_then(|v| v.get("columnWidths")).is_some()
        || e.data.contains_key("fullWidth")
        || e.data.contains_key("search")
        || visible != columns.len()
        || columns.iter().any(|c| {
            let d = def.and_then(|d| d.get(c));
            d.and_then(|d| d.get("type")).and_then(Value::as_str) != Some("text")
                || d.and_then(|d| d.get("verticalAlignment")).is_some()
        })
        || e.fragments.iter().flatten().any(|f| {
            f.nodes.len() != 1 || f.nodes[0].element().is_none_or(|p| p.kind != "paragraph")
        })
}

/// The content of a cell in HTML: inline for one paragraph, else its blocks.
fn html_cell(nodes: &[Node]) -> String {
    if let [Node::Block(p)] = nodes {
        if p.kind == "paragraph" {
            return render_inline(p.children(), Ctx::Html);
        }
    }
    nodes
        .iter()
        .filter_map(Node::element)
        .map(|b| {
            if b.kind == "list-unordered" || b.kind == "list-ordered" {
                let tag = if b.kind == "list-unordered" {
                    "ul"
                } else {
                    "ol"
                };
                let items: String = b
                    .children()
                    .iter()
                    .filter_map(Node::element)
                    .map(|li| format!("<li>{}</li>", html_cell(li.children())))
                    .collect();
                return format!("<{tag}>{items}</{tag}>");
            }
            let inner = render_inline(b.children(), Ctx::Html);
            match b
                .kind
                .strip_prefix("heading-")
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(n) => format!("<h{0}>{inner}</h{0}>", n + 1),
                None => format!("<p>{inner}</p>"),
            }
        })
        .collect()
}

/// The references a typed cell value links to: a content reference, an image (its
/// reference, or the `ref` of an image record) or files.
fn value_refs(v: &Value) -> Option<Vec<ContentRef>> {
    match v {
        Value::Array(ids) => ids
            .iter()
            .map(|id| {
                Some(ContentRef::File {
                    file: id.as_str()?.to_string(),
                })
            })
            .collect(),
        Value::Object(o) => {
            let r = o
                .get("ref")
                .filter(|_| !o.contains_key("kind"))
                .unwrap_or(v);
            Some(vec![serde_json::from_value(r.clone()).ok()?])
        }
        _ => None,
    }
}

/// The references of a label fragment: one paragraph holding links and nothing else.
fn label_refs(f: &Fragment) -> Option<Vec<ContentRef>> {
    let [Node::Block(p)] = f.nodes.as_slice() else {
        return None;
    };
    if p.kind != "paragraph" {
        return None;
    }
    let mut out = Vec::new();
    for n in p.children() {
        match n {
            Node::Inline(l) if l.kind == "link" => out.push(super::data_ref(l, "ref")?),
            Node::Text(t) if t.leaves.iter().all(|l| l.text.is_empty()) => {}
            _ => return None,
        }
    }
    Some(out)
}

/// The label fragment of a typed link cell (`{record}-{column}`), while it still links to
/// what the cell's value names.
pub(crate) fn cell_label<'a>(
    e: &'a Element,
    record: &str,
    column: &str,
    value: &Value,
) -> Option<&'a Fragment> {
    let key = format!("{record}-{column}");
    let f = e
        .fragments
        .iter()
        .flatten()
        .find(|f| f.fragment.as_deref() == Some(key.as_str()))?;
    (value_refs(value).is_some() && label_refs(f) == value_refs(value)).then_some(f)
}

/// A typed cell value as GitBook writes it in an HTML table: numbers and checkboxes as
/// text, a select's options as labelled spans, links (content references, images, files)
/// with the label the cell was read with while it still names the same targets.
fn typed_html(
    v: &Value,
    column: Option<&Map<String, Value>>,
    label: Option<&Fragment>,
) -> Option<String> {
    let kind = column
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("text");
    match v {
        Value::Number(n) => return Some(super::render::number_text(n)),
        Value::Bool(b) => return Some(b.to_string()),
        Value::Array(ids) if kind == "select" => {
            let mut out = String::new();
            for (i, id) in ids.iter().enumerate() {
                let id = id.as_str()?;
                let name = column.and_then(|d| option_label(d, id)).unwrap_or(id);
                let sep = if i + 1 < ids.len() { ", " } else { "" };
                out.push_str(&format!(
                    "<span data-option=\"{}\">{}{sep}</span>",
                    html::escape_attr(id),
                    html::escape_text(name)
                ));
            }
            return Some(out);
        }
        _ => {}
    }
    let refs = match (kind, v) {
        ("files", Value::Array(_)) | (_, Value::Object(_)) => value_refs(v)?,
        _ => return None,
    };
    if let Some(f) = label.filter(|f| label_refs(f).as_ref() == Some(&refs)) {
        return Some(html_cell(&f.nodes));
    }
    Some(
        refs.iter()
            .map(|r| {
                let href = super::ref_href(r);
                let text = match r {
                    ContentRef::Url { url } => url.clone(),
                    _ => super::path_label(&href),
                };
                format!(
                    "<a href=\"{}\">{}</a>",
                    html::escape_attr(&href),
                    html::escape_text(&text)
                )
            })
            .collect(),
    )
}

/// A table as HTML, the way GitBook writes tables with options.
fn render_html_table(e: &Element, columns: &[String]) -> String {
    let view = e.data.get("view").cloned().unwrap_or(Value::Null);
    let def = e.data.get("definition").and_then(Value::as_object);
    let field = |c: &str, k: &str| {
        def.and_then(|d| d.get(c))
            .and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let visible: Vec<&str> = view
        .get("columns")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let cards = view.get("type").and_then(Value::as_str) == Some("cards");
    let mut table = String::new();
    if cards {
        if let Some(size) = view
            .get("cardSize")
            .and_then(Value::as_str)
            .filter(|s| *s != "medium")
        {
            table.push_str(&format!(" data-card-size=\"{}\"", html::escape_attr(size)));
        }
        if let Some(w) = view.get("wrap").and_then(Value::as_bool) {
            table.push_str(&format!(" data-card-wrap=\"{w}\""));
        }
    }
    for (k, attr) in [("fullWidth", "data-full-width"), ("search", "data-search")] {
        if let Some(b) = e.data.get(k).and_then(Value::as_bool) {
            table.push_str(&format!(" {attr}=\"{b}\""));
        }
    }
    if cards {
        table.push_str(" data-view=\"cards\"");
    }
    let align_of = |c: &str| match field(c, "textAlignment").as_deref() {
        Some("center") => Some("center"),
        Some("right") => Some("right"),
        _ => None,
    };
    let mut head = String::new();
    for c in columns {
        let mut attrs = String::new();
        if let Some(w) = view
            .get("columnWidths")
            .and_then(|w| w.get(c.as_str()))
            .and_then(|w| match w {
                Value::Number(n) => Some(super::render::number_text(n)),
                _ => None,
            })
        {
            attrs.push_str(&format!(" width=\"{w}\""));
        }
        if let Some(a) = align_of(c) {
            attrs.push_str(&format!(" align=\"{a}\""));
        }
        if let Some(va) = field(c, "verticalAlignment") {
            attrs.push_str(&format!(" valign=\"{}\"", html::escape_attr(&va)));
        }
        if !visible.contains(&c.as_str()) {
            attrs.push_str(" data-hidden");
        }
        for (k, attr) in [
            ("targetDefinition", "data-card-target"),
            ("coverDefinition", "data-card-cover"),
            ("coverDefinitionDark", "data-card-cover-dark"),
        ] {
            if view.get(k).and_then(Value::as_str) == Some(c.as_str()) {
                attrs.push(' ');
                attrs.push_str(attr);
            }
        }
        let column = def.and_then(|d| d.get(c.as_str()));
        let kind = field(c, "type").unwrap_or_default();
        if !kind.is_empty() && kind != "text" && kind != "select" {
            attrs.push_str(&format!(" data-type=\"{}\"", html::escape_attr(&kind)));
        }
        if let Some(Value::Number(m)) = column.and_then(|d| d.get("max")) {
            attrs.push_str(&format!(" data-max=\"{}\"", super::render::number_text(m)));
        }
        let mut options = String::new();
        if kind == "select" {
            let multiple = column.and_then(|d| d.get("multiple")) == Some(&Value::Bool(true));
            options.push_str(if multiple {
                "<select multiple>"
            } else {
                "<select>"
            });
            let list = column
                .and_then(|d| d.get("options"))
                .and_then(Value::as_array);
            for o in list.into_iter().flatten() {
                let f = |k: &str| html::escape_attr(o.get(k).and_then(Value::as_str).unwrap_or(""));
                options.push_str(&format!(
                    "<option value=\"{}\" label=\"{}\" color=\"{}\"></option>",
                    f("value"),
                    f("label"),
                    f("color")
                ));
            }
            options.push_str("</select>");
        }
        head.push_str(&format!(
            "<th{attrs}>{}{options}</th>",
            html::escape_text(&field(c, "title").unwrap_or_default())
        ));
    }
    let mut body = String::new();
    for (rid, rec) in sorted_records(e) {
        body.push_str("<tr>");
        for c in columns {
            let mut attrs = String::new();
            if let Some(a) = align_of(c) {
                attrs.push_str(&format!(" align=\"{a}\""));
            }
            if let Some(va) = field(c, "verticalAlignment") {
                attrs.push_str(&format!(" valign=\"{}\"", html::escape_attr(&va)));
            }
            let fragment = |key: &str| {
                e.fragments
                    .iter()
                    .flatten()
                    .find(|f| f.fragment.as_deref() == Some(key))
            };
            let value = rec.get("values").and_then(|v| v.get(c.as_str()));
            let column = def
                .and_then(|d| d.get(c.as_str()))
                .and_then(Value::as_object);
            let content = match value {
                Some(Value::String(key)) => fragment(key)
                    .map(|f| html_cell(&f.nodes))
                    .unwrap_or_else(|| html::escape_text(key)),
                Some(Value::Null) | None => String::new(),
                Some(v) => match typed_html(v, column, fragment(&format!("{rid}-{c}"))) {
                    Some(html) => html,
                    None => html::escape_text(&v.to_string()),
                },
            };
            body.push_str(&format!("<td{attrs}>{content}</td>"));
        }
        body.push_str("</tr>");
    }
    format!("<table{table}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
}

/// Records in order (by `orderIndex`, then id).
pub(crate) fn sorted_records(e: &Element) -> Vec<(&String, &Value)> {
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
    records
}

/// Writes a table: as a markdown table when it is a plain grid, else as HTML.
pub(super) fn render_table(e: &Element) -> Option<String> {
    let all = ordered_columns(e);
    if !all.is_empty() && needs_html(e, &all) {
        return Some(render_html_table(e, &all));
    }
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
                    .map(|p| match raw_text(p) {
                        Some(raw) => raw,
                        None => render_inline(p.children(), Ctx::Cell),
                    })
                    .collect::<Vec<_>>()
                    .join("<br>"),
                None => render_inline(&[Node::text(s)], Ctx::Cell),
            },
            Some(Value::Null) | None => String::new(),
            Some(other) => render_inline(&[Node::text(&other.to_string())], Ctx::Cell),
        }
    };
    let mut rows: Vec<Vec<String>> = vec![columns
        .iter()
        .map(|c| render_inline(&[Node::text(&def(c, "title"))], Ctx::Cell))
        .collect()];
    for (_, rec) in &records {
        let values = rec.get("values");
        rows.push(
            columns
                .iter()
                .map(|c| cell(values.and_then(|v| v.get(*c))))
                .collect(),
        );
    }
    let widths: Vec<usize> = (0..columns.len())
        .map(|i| rows.iter().map(|r| width(&r[i])).max().unwrap_or(0).max(1))
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - width(c))))
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let mut out = vec![line(&rows[0])];
    out.push(format!(
        "| {} |",
        columns
            .iter()
            .zip(&widths)
            .map(|(c, w)| match def(c, "textAlignment").as_str() {
                "center" => format!(":{}:", "-".repeat(w.saturating_sub(2).max(1))),
                "right" => format!("{}:", "-".repeat(w.saturating_sub(1).max(1))),
                _ => "-".repeat(*w),
            })
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    for r in &rows[1..] {
        out.push(line(r));
    }
    Some(out.join("\n"))
}
