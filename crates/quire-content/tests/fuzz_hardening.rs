//! Fuzz target of the hardening work (no input may overflow the stack): adversarial
//! generators of deep and weird markdown and of random JSON documents, run through every
//! operation on content (parse, render, parse again, plain text, sections, authoring,
//! diff, three-way merge) on a thread with a small stack.
//!
//! Asserted: nothing panics or overflows, the only error is the nesting error, and whatever
//! is accepted is within the bound and parses back after rendering. The case counts keep
//! the whole file well under 30 s in a debug build.

use std::collections::HashMap;

use proptest::prelude::*;
use quire_content::document::Document;
use quire_content::edit::{apply_changes, ApplyContext, Change};
use quire_content::limits::MAX_DEPTH;
use quire_content::markdown::{
    document_to_markdown, markdown_to_document, try_document_to_markdown, try_markdown_to_document,
};
use quire_content::model::{Page, Revision};
use quire_content::sections::sections;
use serde_json::{json, Value};

/// Runs `f` on a thread with a 256 KiB stack (the server's workers have 2 MiB).
fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic and no stack overflow")
}

/// Pieces of GitBook markdown that open, close or nest things, plus some text.
const PIECES: &[&str] = &[
    "> ",
    "- ",
    "* ",
    "1. ",
    "  ",
    "    ",
    "\n",
    "\n\n",
    "text ",
    "**",
    "*",
    "`",
    "~~",
    "{% hint style=\"info\" %}\n",
    "{% endhint %}\n",
    "{% tabs %}\n",
    "{% tab title=\"T\" %}\n",
    "{% endtab %}\n",
    "{% endtabs %}\n",
    "{% code title=\"a.js\" %}\n",
    "{% endcode %}\n",
    "{% embed url=\"https://e.x\" %}\n",
    "{% file src=\"/files/f\" %}\n",
    "{% content-ref url=\"/pages/p\" %}\n",
    "{% endcontent-ref %}\n",
    "{% stepper %}\n",
    "{% step %}\n",
    "{% endstep %}\n",
    "{% endstepper %}\n",
    "<details>\n",
    "<summary>S</summary>\n",
    "</details>\n",
    "<figure>",
    "<img src=\"/files/f\" alt=\"a\">",
    "<figcaption><p>c</p></figcaption>",
    "</figure>\n",
    "[",
    "![",
    "](u)",
    "](/pages/p)",
    "<a href=\"x\">",
    "</a>",
    "<div>",
    "</div>",
    "<mark style=\"color:red;\">",
    "</mark>",
    "```\n",
    "```js\n",
    "~~~\n",
    "| a | b |\n| - | - |\n",
    "| c | d |\n",
    "# ",
    "$$x$$",
    "\\",
    "&amp;",
];

/// Adversarial markdown: random pieces, some repeated in long runs to build deep nesting.
fn weird_markdown() -> impl Strategy<Value = String> {
    let run = (
        0..PIECES.len(),
        prop_oneof![3 => 1..4usize, 1 => 20..200usize],
    );
    prop::collection::vec(run, 0..24).prop_map(|runs| {
        runs.into_iter()
            .map(|(piece, times)| PIECES[piece].repeat(times))
            .collect()
    })
}

/// The same pieces nested symmetrically: openers, a text, then their closers in reverse.
fn nested_markdown() -> impl Strategy<Value = String> {
    const PAIRS: &[(&str, &str)] = &[
        ("> ", ""),
        ("- ", ""),
        ("{% hint style=\"info\" %}\n", "{% endhint %}\n"),
        (
            "{% tabs %}\n{% tab title=\"T\" %}\n",
            "{% endtab %}\n{% endtabs %}\n",
        ),
        ("<details>\n<summary>S</summary>\n", "</details>\n"),
        ("[", "](u)"),
        ("[![", "](u)](u)"),
        ("**[*", "*](u)**"),
    ];
    prop::collection::vec((0..PAIRS.len(), 1..30usize), 1..6).prop_map(|levels| {
        let mut open = String::new();
        let mut close = Vec::new();
        for (pair, times) in levels {
            open.push_str(&PAIRS[pair].0.repeat(times));
            close.push(PAIRS[pair].1.repeat(times));
        }
        close.reverse();
        open + "deep\n" + &close.concat()
    })
}

fn revision(markdown: &str) -> Revision {
    Revision {
        pages: vec![
            Page::document("a", "A", "a", markdown),
            Page::document("b", "B", "b", "Same.\n"),
        ],
        ..Revision::default()
    }
}

/// Every operation on one markdown input.
fn exercise_markdown(md: String) -> Result<(), String> {
    small_stack(move || -> Result<(), String> {
        let parsed = try_markdown_to_document(&md);
        // Stored-content reads never fail, whatever the input.
        let lenient = markdown_to_document(&md);
        let _ = lenient.plain_text();
        let _ = document_to_markdown(&lenient);
        let _ = sections(&md);
        let stored = match parsed {
            Err(e) => {
                if !e.to_string().contains("nested too deeply") {
                    return Err(format!("unexpected error {e}"));
                }
                None
            }
            Ok(doc) => {
                if doc.depth() > MAX_DEPTH {
                    return Err(format!("accepted depth {}", doc.depth()));
                }
                let out = try_document_to_markdown(&doc).map_err(|e| e.to_string())?;
                let back = try_markdown_to_document(&out)
                    .map_err(|e| format!("rendered form refused: {e}\n{out}"))?;
                if back.depth() > MAX_DEPTH {
                    return Err("rendered form deeper".into());
                }
                Some(out)
            }
        };
        // Authoring: the server's path for page content.
        let base = revision("Base.\n");
        let change: Change = serde_json::from_value(json!({
            "operation": "update_page", "page": "a", "document": { "markdown": md }
        }))
        .expect("a valid change");
        let mut next = 0;
        let mut new_id = || {
            next += 1;
            format!("n{next}")
        };
        let mut ctx = ApplyContext {
            base: None,
            revisions: HashMap::new(),
            new_id: &mut new_id,
        };
        match apply_changes(&base, &[change], &mut ctx) {
            Ok(applied) => {
                let ours = applied.revision;
                let theirs = revision("Base.\n\nTheirs.\n");
                let _ = quire_content::diff::diff(&base, &ours, &|_| String::new());
                let _ = quire_content::merge::merge(&base, &ours, &theirs);
                let _ = quire_content::merge::merge(&base, &theirs, &ours);
            }
            Err(e) => {
                if !e.message.contains("nested too deeply") || stored.is_some() {
                    return Err(format!("unexpected edit error {e}"));
                }
            }
        }
        // Stored content (even content the strict parser refuses) diffs and merges.
        let ours = revision(&md);
        let theirs = revision(&format!("{md}\nTheirs.\n"));
        let base = revision("Base.\n");
        let _ = quire_content::diff::diff(&base, &ours, &|_| String::new());
        let _ = quire_content::merge::merge(&base, &ours, &theirs);
        Ok(())
    })
}

/// Random JSON nodes: known and unknown types, fragments, odd data, up to 70 levels deep.
fn json_node() -> impl Strategy<Value = Value> {
    let text = "[a-z *_<>{}%#\\[\\]]{0,8}".prop_map(
        |t| json!({"object": "text", "leaves": [{"object": "leaf", "text": t, "marks": []}]}),
    );
    let leaf = prop_oneof![
        text.clone(),
        Just(json!({"object": "block", "type": "divider", "isVoid": true, "data": {}})),
        Just(
            json!({"object": "inline", "type": "emoji", "isVoid": true, "data": {"code": "1f600"}})
        ),
        Just(
            json!({"object": "block", "type": "code", "data": {"syntax": "js"}, "nodes": [
            {"object": "block", "type": "code-line", "data": {}, "nodes": [
                {"object": "text", "leaves": [{"object": "leaf", "text": "x()", "marks": []}]}]}]})
        ),
    ];
    leaf.prop_recursive(70, 400, 3, |inner| {
        let kinds = prop_oneof![
            Just(("block", "paragraph")),
            Just(("block", "blockquote")),
            Just(("block", "hint")),
            Just(("block", "list-unordered")),
            Just(("block", "list-item")),
            Just(("block", "tabs")),
            Just(("block", "tabs-item")),
            Just(("block", "heading-2")),
            Just(("block", "stepper")),
            Just(("block", "made-up")),
            Just(("inline", "link")),
            Just(("inline", "made-up")),
        ];
        (
            kinds,
            prop::collection::vec(inner.clone(), 0..3),
            prop::option::of(prop::collection::vec(inner, 0..2)),
        )
            .prop_map(|((object, kind), nodes, fragment)| {
                let mut node = json!({
                    "object": object, "type": kind,
                    "data": {"style": "info", "title": "t", "ref": {"kind": "url", "url": "u"}},
                    "nodes": nodes,
                });
                if let Some(f) = fragment {
                    node["fragments"] = json!([{
                        "object": "fragment", "fragment": "expandable-body",
                        "type": "expandable-body", "nodes": f
                    }]);
                }
                node
            })
    })
}

fn exercise_document(nodes: Vec<Value>) -> Result<(), TestCaseError> {
    let text = json!({"object": "document", "data": {}, "nodes": nodes}).to_string();
    // Decoding is serde's recursion, bounded by the JSON parser's limit; the engine's own
    // walks then run on the small stack.
    let Ok(doc) = serde_json::from_str::<Document>(&text) else {
        return Ok(());
    };
    let result = small_stack(move || -> Result<(), String> {
        let _ = doc.plain_text();
        let _ = document_to_markdown(&doc);
        match try_document_to_markdown(&doc) {
            Err(e) => {
                if doc.depth() <= MAX_DEPTH || !e.to_string().contains("nested too deeply") {
                    return Err(format!("unexpected error {e}"));
                }
            }
            Ok(md) => {
                if doc.depth() > MAX_DEPTH {
                    return Err("accepted a document too deep".into());
                }
                try_markdown_to_document(&md).map_err(|e| format!("rendered form refused: {e}"))?;
                let ours = revision(&md);
                let _ = quire_content::diff::diff(&revision(""), &ours, &|_| String::new());
                let _ = quire_content::merge::merge(&revision(""), &ours, &revision("x\n"));
            }
        }
        Ok(())
    });
    result.map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn weird_markdown_is_handled_within_bounds(md in weird_markdown()) {
        exercise_markdown(md).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn nested_markdown_is_handled_within_bounds(md in nested_markdown()) {
        exercise_markdown(md).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn random_documents_are_handled_within_bounds(
        nodes in prop::collection::vec(json_node(), 1..4)
    ) {
        exercise_document(nodes)?;
    }
}

/// Tags cut off at the end of their text (found by the round-trip properties) parse as text.
#[test]
fn unterminated_tags_are_handled() {
    for md in [
        "<details>\n<summary><a%\n</summary>\n\n\n</details>\n",
        "<details>\n<summary><a",
        "<details>\n<summary><a b=\"x",
        "<details>\n<summary><a b=",
        "<details>\n<summary><a b/",
        "<a%",
    ] {
        exercise_markdown(md.to_string()).unwrap();
    }
}

/// Inline HTML links and marks nested up to and past the bounds (a run of 30 nested
/// `<a href>` once overflowed the small stack, in a debug build).
#[test]
fn nested_html_links_and_marks_fit_a_small_stack() {
    let cases = [
        ("<a href=\"x\">", "</a>", 30),
        ("<a href=\"x\">", "</a>", MAX_DEPTH),
        ("<a href=\"x\">", "</a>", MAX_DEPTH * 2),
        ("<strong>", "</strong>", MAX_DEPTH * 2),
        ("<strong><a href=\"x\">", "</a></strong>", MAX_DEPTH),
        ("<mark style=\"color:red;\"><em>", "</em></mark>", MAX_DEPTH),
    ];
    for (open, close, n) in cases {
        let md = format!("{}deep{}\n", open.repeat(n), close.repeat(n));
        exercise_markdown(md).unwrap_or_else(|e| panic!("{open} x {n}: {e}"));
    }
}
