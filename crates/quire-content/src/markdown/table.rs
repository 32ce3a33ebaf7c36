//! Tables: markdown tables (GitHub's pipes) and the HTML tables GitBook writes when a table
//! has options markdown cannot hold (column widths, alignments, cards…).
//!
//! A table block holds its columns in `definition`, its rows in `records` and the content
//! of each cell in a fragment named after the record and the column.

use pulldown_cmark::{Alignment, Event, Tag, TagEnd};
use serde_json::{json, Map, Value};

use super::html::HElement;
use super::inline::{render_inline, Ctx};
use super::parse::{inline_nodes, EventParser, Events};
use super::scan::Scanner;
use super::{order_index, raw_text};
use crate::document::{Element, Fragment, Node};

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

/// An HTML table GitBook wrote; `None` keeps it raw.
pub(super) fn html_table(_el: &HElement, _scanner: &Scanner<'_>, _depth: usize) -> Option<Node> {
    None
}

/// Length of a cell as GitBook's serializer measures it (UTF-16 code units).
fn width(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Writes a table: as a markdown table when it is a plain grid, else as HTML.
pub(super) fn render_table(e: &Element) -> Option<String> {
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
