//! The corpus of test pages (`tests/corpus/*.md`), written in the form GitBook's Git Sync
//! writes, with every block, inline and mark of the official document and their allowed
//! nesting. Each page must survive markdown → document → markdown byte for byte, and
//! document → markdown → document unchanged; the test prints a fidelity report.
//!
//! The documents are also written to `target/corpus-documents.json`, which the conformance
//! suite (`conformance/test/documents.test.js`) validates against the official document
//! schema.

use std::collections::BTreeSet;

use quire_content::document::{Document, Node};
use quire_content::frontmatter::split_page_markdown;
use quire_content::markdown::{document_to_markdown, try_markdown_to_document};
use serde_json::{json, Value};

fn corpus() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("corpus folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read_to_string(&p).expect("utf-8 page"))
        })
        .collect();
    pages.sort();
    pages
}

/// Every element type and mark used in a document, with raw paragraphs apart.
fn kinds(doc: &Document, out: &mut BTreeSet<String>, raw: &mut usize) {
    let value = serde_json::to_value(doc).unwrap();
    let mut stack = vec![&value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(o) => {
                if o.get("meta").and_then(|m| m.get("raw")) == Some(&json!(true)) {
                    *raw += 1;
                }
                match o.get("object").and_then(Value::as_str) {
                    Some("block") | Some("inline") => {
                        out.insert(o["type"].as_str().unwrap_or("").to_string());
                    }
                    Some("mark") => {
                        out.insert(format!("mark:{}", o["type"].as_str().unwrap_or("")));
                    }
                    _ => {}
                }
                stack.extend(o.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
}

/// The block, inline and mark types of the official document (0.137.0, with `prompt`,
/// `updates` and `update` of 0.202.0), less what the corpus cannot show yet.
const TYPES: &[&str] = &[
    "paragraph",
    "heading-1",
    "heading-2",
    "heading-3",
    "list-ordered",
    "list-unordered",
    "list-tasks",
    "list-item",
    "divider",
    "blockquote",
    "hint",
    "if",
    "images",
    "image",
    "file",
    "drawing",
    "embed",
    "code",
    "code-line",
    "math",
    "expandable",
    "tabs",
    "tabs-item",
    "table",
    "swagger",
    "openapi-operation",
    "openapi-schemas",
    "openapi-webhook",
    "content-ref",
    "integration",
    "reusable-content",
    "stepper",
    "stepper-step",
    "columns",
    "column",
    "prompt",
    "updates",
    "update",
    "link",
    "emoji",
    "icon",
    "expression",
    "inline-math",
    "inline-image",
    "mention",
    "button",
    "annotation",
    "mark:bold",
    "mark:italic",
    "mark:code",
    "mark:keyboard",
    "mark:strikethrough",
    "mark:color",
    "mark:superscript",
    "mark:subscript",
];

#[test]
fn corpus_pages_survive_both_ways() {
    let mut intact = 0;
    let mut report = Vec::new();
    let mut seen = BTreeSet::new();
    let mut documents = Vec::new();
    let pages = corpus();
    for (name, src) in &pages {
        let page = split_page_markdown(src).unwrap_or_else(|e| panic!("{name}: {e}"));
        let doc = try_markdown_to_document(&page.body).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut raw = 0;
        kinds(&doc, &mut seen, &mut raw);
        let back = document_to_markdown(&doc);
        let again = try_markdown_to_document(&back).expect("written markdown parses");
        let same_markdown = back == page.body;
        let same_document = again == doc;
        // Only the page about unknown content may hold raw content.
        let understood = raw == 0 || name.contains("unknown");
        if same_markdown && same_document && understood {
            intact += 1;
        } else {
            let line = page
                .body
                .lines()
                .zip(back.lines())
                .position(|(a, b)| a != b)
                .map_or(String::new(), |i| {
                    format!(
                        " (line {}: {:?} became {:?})",
                        i + 1,
                        page.body.lines().nth(i).unwrap_or(""),
                        back.lines().nth(i).unwrap_or("")
                    )
                });
            report.push(format!(
                "{name}: markdown {} document {} raw blocks {raw}{line}",
                if same_markdown { "kept" } else { "changed" },
                if same_document { "kept" } else { "changed" },
            ));
        }
        documents.push(json!({"page": name, "document": doc}));
    }
    println!("corpus fidelity: {intact} / {} pages intact", pages.len());
    for r in &report {
        println!("  {r}");
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").to_string());
    let _ = std::fs::create_dir_all(&target);
    std::fs::write(
        format!("{target}/corpus-documents.json"),
        serde_json::to_string_pretty(&documents).unwrap(),
    )
    .expect("write the corpus documents");
    let missing: Vec<&&str> = TYPES.iter().filter(|t| !seen.contains(**t)).collect();
    assert!(missing.is_empty(), "the corpus lacks {missing:?}");
    assert_eq!(intact, pages.len(), "{report:#?}");
}

#[test]
fn corpus_documents_are_plain_json_documents() {
    // Every node of every page's document is one of the official node objects.
    for (name, src) in corpus() {
        let page = split_page_markdown(&src).unwrap();
        let doc = try_markdown_to_document(&page.body).unwrap();
        let mut stack: Vec<&Node> = doc.nodes.iter().collect();
        while let Some(n) = stack.pop() {
            if let Some(e) = n.element() {
                assert!(!e.kind.is_empty(), "{name}");
                stack.extend(e.children());
                for f in e.fragments.iter().flatten() {
                    stack.extend(f.nodes.iter());
                }
            }
        }
    }
}
