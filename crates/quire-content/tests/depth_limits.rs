//! No input may overflow the stack: markdown and JSON documents nested thousands of levels
//! deep are refused with a depth error, and every operation on content (parse, render, plain
//! text, sections, diff, merge) stays within a small stack.
//!
//! Every check runs on a thread with a 256 KiB stack, far below the 2 MiB of the server's
//! worker threads, so that a recursion that escapes the bound fails loudly here (the test
//! process aborts) instead of passing on a large test stack.

use quire_content::document::{Document, Element, Fragment, Node};
use quire_content::limits::{TooDeep, MAX_DEPTH};
use quire_content::markdown::{
    document_to_markdown, markdown_to_document, normalize_markdown, try_document_to_markdown,
    try_markdown_to_document, try_normalize_markdown,
};
use quire_content::sections::sections;
use serde_json::Map;

const SMALL_STACK: usize = 256 * 1024;

/// Runs `f` on a thread with a small stack and returns its result.
fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(SMALL_STACK)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic and no overflow")
}

/// The attack payloads: markdown nested thousands of levels deep, each a few kilobytes.
fn payloads() -> Vec<(&'static str, String)> {
    vec![
        ("quotes", "> ".repeat(4000) + "deep\n"),
        ("lists", "- ".repeat(4000) + "deep\n"),
        (
            "hints",
            "{% hint style=\"info\" %}\n".repeat(3000) + "deep\n" + &"{% endhint %}\n".repeat(3000),
        ),
        (
            "details",
            "<details>\n\n<summary>s</summary>\n\n".repeat(3000)
                + "deep\n\n"
                + &"</details>\n\n".repeat(3000),
        ),
        (
            "links and images",
            "[![".repeat(5000) + "deep" + &"](u)](u)".repeat(5000) + "\n",
        ),
    ]
}

#[test]
fn deep_markdown_is_refused_with_a_depth_error() {
    for (name, md) in payloads() {
        let (parsed, normalized) = small_stack(move || {
            (
                try_markdown_to_document(&md).map(|d| d.depth()),
                try_normalize_markdown(&md).map(|m| m.len()),
            )
        });
        let err: TooDeep = parsed.expect_err(name);
        assert!(
            err.to_string().contains("nested too deeply"),
            "{name}: {err}"
        );
        assert!(normalized.is_err(), "{name}");
    }
}

#[test]
fn reading_deep_markdown_as_stored_content_never_crashes() {
    for (name, md) in payloads() {
        let ok = small_stack(move || {
            let doc = markdown_to_document(&md);
            let text = doc.plain_text();
            let again = normalize_markdown(&md);
            let secs = sections(&md);
            doc.depth() <= MAX_DEPTH && !text.is_empty() && !again.is_empty() && !secs.is_empty()
        });
        assert!(ok, "{name}");
    }
}

fn block(kind: &str, nodes: Vec<Node>) -> Node {
    let mut data = Map::new();
    match kind {
        "hint" => {
            data.insert("style".into(), "info".into());
        }
        "list-item" => {}
        _ => {}
    }
    Node::block(kind, data, nodes)
}

fn expandable(body: Vec<Node>) -> Node {
    let mut el = Element::void("expandable", Map::new());
    el.fragments = Some(vec![
        Fragment {
            key: None,
            fragment: Some("expandable-title".into()),
            kind: Some("expandable-title".into()),
            nodes: vec![Node::paragraph(vec![Node::text("t")])],
        },
        Fragment {
            key: None,
            fragment: Some("expandable-body".into()),
            kind: Some("expandable-body".into()),
            nodes: body,
        },
    ]);
    Node::Block(el)
}

fn link(nodes: Vec<Node>) -> Node {
    let mut data = Map::new();
    data.insert("ref".into(), serde_json::json!({"kind": "url", "url": "u"}));
    Node::Inline(Element::with_nodes("link", data, nodes))
}

/// The document forms of the payloads, `levels` containers deep.
fn deep_document(shape: &str, levels: usize) -> Document {
    let mut node = if shape == "links" {
        Node::text("deep")
    } else {
        Node::paragraph(vec![Node::text("deep")])
    };
    for _ in 0..levels {
        node = match shape {
            "quotes" => block("blockquote", vec![node]),
            "lists" => block("list-unordered", vec![block("list-item", vec![node])]),
            "hints" => block("hint", vec![node]),
            "details" => expandable(vec![node]),
            "links" => link(vec![Node::text("a"), node, Node::text("b")]),
            _ => unreachable!(),
        };
    }
    if shape == "links" {
        node = Node::paragraph(vec![node]);
    }
    Document::new(vec![node])
}

const SHAPES: [&str; 5] = ["quotes", "lists", "hints", "details", "links"];

/// Shapes whose deepest JSON form that the JSON parser accepts is deeper than the engine's
/// bound (an expandable costs four JSON levels a level, so it cannot get that deep).
const DEEP_IN_JSON: [&str; 4] = ["quotes", "lists", "hints", "links"];

#[test]
fn deep_documents_are_refused_and_render_bounded() {
    for shape in SHAPES {
        let ok = small_stack(move || {
            let doc = deep_document(shape, 4000);
            let refused = doc.check_depth().is_err() && try_document_to_markdown(&doc).is_err();
            // Rendering clamps what is too deep to text instead of recursing without end.
            let md = document_to_markdown(&doc);
            let text = doc.plain_text();
            // Dropping a document is recursive: this one must outlive the small stack.
            std::mem::forget(doc);
            refused && md.contains("deep") && text.contains("deep")
        });
        assert!(ok, "{shape}");
    }
}

/// The JSON text of `deep_document(shape, levels)`, built without recursion.
fn deep_json(shape: &str, levels: usize) -> String {
    let (open, close) = match shape {
        "quotes" => (
            r#"{"object":"block","type":"blockquote","data":{},"nodes":["#,
            "]}",
        ),
        "lists" => (
            r#"{"object":"block","type":"list-unordered","data":{},"nodes":[{"object":"block","type":"list-item","data":{},"nodes":["#,
            "]}]}",
        ),
        "hints" => (
            r#"{"object":"block","type":"hint","data":{"style":"info"},"nodes":["#,
            "]}",
        ),
        "details" => (
            r#"{"object":"block","type":"expandable","isVoid":true,"data":{},"fragments":[{"object":"fragment","fragment":"expandable-body","type":"expandable-body","nodes":["#,
            "]}]}",
        ),
        "links" => (
            r#"{"object":"inline","type":"link","data":{"ref":{"kind":"url","url":"u"}},"nodes":["#,
            "]}",
        ),
        _ => unreachable!(),
    };
    let leaf = r#"{"object":"text","leaves":[{"object":"leaf","text":"deep","marks":[]}]}"#;
    let inner = if shape == "links" {
        leaf.to_string()
    } else {
        format!(r#"{{"object":"block","type":"paragraph","data":{{}},"nodes":[{leaf}]}}"#)
    };
    let mut body = open.repeat(levels) + &inner + &close.repeat(levels);
    if shape == "links" {
        body = format!(r#"{{"object":"block","type":"paragraph","data":{{}},"nodes":[{body}]}}"#);
    }
    format!(r#"{{"object":"document","data":{{}},"nodes":[{body}]}}"#)
}

#[test]
fn deep_json_documents_are_refused() {
    for shape in SHAPES {
        // Thousands of levels: the JSON parser's own recursion limit refuses them. (Decoding
        // is serde's recursion, bounded by that limit; it runs on the test's own stack.)
        let json = deep_json(shape, 4000);
        assert!(serde_json::from_str::<Document>(&json).is_err(), "{shape}");
        // As deep as the JSON parser allows, which for most shapes is deeper than the engine
        // allows: decoded, then refused by the engine's depth check, and safe to render.
        let levels = (1..200)
            .rev()
            .find(|l| serde_json::from_str::<Document>(&deep_json(shape, *l)).is_ok())
            .expect("some depth decodes");
        let doc: Document = serde_json::from_str(&deep_json(shape, levels)).expect("decodes");
        let (ok, deeper) = small_stack(move || {
            let deeper = doc.depth() > MAX_DEPTH;
            let refused = try_document_to_markdown(&doc).is_err() && doc.check_depth().is_err();
            let md = document_to_markdown(&doc);
            let text = doc.plain_text();
            (
                deeper == refused && md.contains("deep") && text.contains("deep"),
                deeper,
            )
        });
        assert!(ok, "{shape} at {levels} levels");
        assert_eq!(DEEP_IN_JSON.contains(&shape), deeper, "{shape}");
    }
}

/// Markdown for `levels` nested containers of a shape, and the element levels each adds.
fn nested_markdown(shape: &str, levels: usize) -> (String, usize) {
    match shape {
        "quotes" => ("> ".repeat(levels) + "x\n", 1),
        "lists" => ("- ".repeat(levels) + "x\n", 2),
        "hints" => (
            "{% hint style=\"info\" %}\n".repeat(levels)
                + "x\n"
                + &"{% endhint %}\n".repeat(levels),
            1,
        ),
        "details" => (
            "<details>\n\n<summary>s</summary>\n\n".repeat(levels)
                + "x\n\n"
                + &"</details>\n\n".repeat(levels),
            1,
        ),
        "tabs" => (
            "{% tabs %}\n{% tab title=\"t\" %}\n".repeat(levels)
                + "x\n"
                + &"{% endtab %}\n{% endtabs %}\n".repeat(levels),
            2,
        ),
        _ => unreachable!(),
    }
}

#[test]
fn the_bound_is_exact_and_content_at_the_bound_round_trips() {
    for shape in ["quotes", "lists", "hints", "details", "tabs"] {
        let ok = small_stack(move || {
            let mut last_ok = None;
            for levels in 1..=MAX_DEPTH + 1 {
                let (md, step) = nested_markdown(shape, levels);
                match try_markdown_to_document(&md) {
                    Ok(doc) => {
                        assert!(doc.depth() <= MAX_DEPTH);
                        last_ok = Some((doc, step));
                    }
                    Err(_) => break,
                }
            }
            let (doc, step) = last_ok.expect("shallow content parses");
            // Refused only because one more level would pass the bound.
            assert!(doc.depth() + step > MAX_DEPTH, "{shape}: {}", doc.depth());
            // Content at the bound goes through rendering and parsing unchanged.
            let md = try_document_to_markdown(&doc).expect("within the bound");
            let back = try_markdown_to_document(&md).expect("parses back");
            back == doc
        });
        assert!(ok, "{shape}");
    }
}

#[test]
fn pages_cannot_nest_without_bound() {
    use quire_content::edit::{apply_changes, ApplyContext, Change};
    use quire_content::model::{Revision, MAX_PAGE_DEPTH};
    use std::collections::HashMap;
    // Batches of 50 inserts, each page under the previous one, until the engine refuses.
    let mut rev = Revision::default();
    let mut parent: Option<String> = None;
    let mut next = 0;
    let refused = loop {
        let changes: Vec<Change> = (0..50)
            .map(|i| {
                let into = if i == 0 {
                    parent.clone().map_or(serde_json::Value::Null, Into::into)
                } else {
                    format!("r{}", i - 1).into()
                };
                let mut c = serde_json::json!({
                    "operation": "insert_page", "title": "P", "ref": format!("r{i}"),
                    "document": { "markdown": "x" }
                });
                if !into.is_null() {
                    c["into"] = into;
                }
                serde_json::from_value(c).unwrap()
            })
            .collect();
        let mut new_id = || {
            next += 1;
            format!("p{next}")
        };
        let mut ctx = ApplyContext {
            base: None,
            revisions: HashMap::new(),
            new_id: &mut new_id,
        };
        match apply_changes(&rev, &changes, &mut ctx) {
            Ok(applied) => {
                rev = applied.revision;
                parent = Some(format!("p{next}"));
            }
            Err(e) => break e,
        }
    };
    assert!(refused.message.contains("nested too deeply"), "{refused}");
    let deepest = rev.flatten().iter().map(|f| f.depth).max().unwrap();
    assert!(deepest < MAX_PAGE_DEPTH, "{deepest}");
    // The deepest accepted tree is safe for every walk.
    small_stack(move || {
        let other = rev.clone();
        let _ = quire_content::diff::diff(&Revision::default(), &rev, &|_| String::new());
        let _ = quire_content::merge::merge(&Revision::default(), &rev, &other);
        rev.validate().is_ok()
    });
}
