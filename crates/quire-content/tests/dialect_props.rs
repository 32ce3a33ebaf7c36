//! Property tests of the GitBook dialect:
//!
//! * markdown in Git Sync's form survives markdown → document → markdown byte for byte;
//! * document → markdown → document is the identity, for random documents of every block
//!   family, with text full of markdown's special characters;
//! * the content of any markdown (every word, link target, image and code block) is still
//!   there after a round trip, and what the engine does not understand is kept verbatim.

use proptest::prelude::*;
use quire_content::document::{Document, Element, Fragment, Leaf, Mark, Node, Text};
use quire_content::markdown::{document_to_markdown, markdown_to_document, normalize_markdown};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------------------
// Markdown in Git Sync's form.

/// Words that need no escaping anywhere.
fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,7}"
}

fn words() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..6).prop_map(|w| w.join(" "))
}

fn inline_md() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => words(),
            1 => words().prop_map(|w| format!("**{w}**")),
            1 => words().prop_map(|w| format!("_{w}_")),
            1 => word().prop_map(|w| format!("`{w}`")),
            1 => words().prop_map(|w| format!("~~{w}~~")),
            1 => word().prop_map(|w| format!("<kbd>{w}</kbd>")),
            1 => words().prop_map(|w| format!("<mark style=\"color:red;\">{w}</mark>")),
            1 => (words(), word()).prop_map(|(t, u)| format!("[{t}](https://example.com/{u})")),
            1 => word().prop_map(|p| format!("[{p}](/pages/{p} \"mention\")")),
            1 => word().prop_map(|e| format!("<code class=\"expression\">space.vars.{e}</code>")),
            1 => word().prop_map(|i| format!("<i class=\"fa-{i}\">:{i}:</i>")),
        ],
        1..5,
    )
    .prop_map(|parts| parts.join(" "))
}

fn block_md() -> impl Strategy<Value = String> {
    let t = inline_md;
    prop_oneof![
        3 => t(),
        1 => t().prop_map(|a| format!("## {a}")),
        1 => t().prop_map(|a| format!("#### {a}")),
        1 => (t(), t()).prop_map(|(a, b)| format!("* {a}\n* {b}")),
        1 => (t(), t()).prop_map(|(a, b)| format!("1. {a}\n   * {b}")),
        1 => (t(), t()).prop_map(|(a, b)| format!("* [ ] {a}\n* [x] {b}")),
        1 => t().prop_map(|a| format!("> {a}")),
        1 => (word(), words()).prop_map(|(a, b)| format!("```{a}\n{b}\n```")),
        1 => (word(), words()).prop_map(|(a, b)| format!(
            "{{% code title=\"{a}.js\" lineNumbers=\"true\" %}}\n```js\n{b}\n```\n{{% endcode %}}"
        )),
        1 => t().prop_map(|a| format!("{{% hint style=\"danger\" %}}\n{a}\n{{% endhint %}}")),
        1 => (word(), t(), t()).prop_map(|(a, b, c)| format!(
            "{{% tabs %}}\n{{% tab title=\"{a}\" %}}\n{b}\n{{% endtab %}}\n\n{{% tab title=\"x\" %}}\n{c}\n{{% endtab %}}\n{{% endtabs %}}"
        )),
        1 => (t(), t()).prop_map(|(a, b)| format!(
            "{{% stepper %}}\n{{% step %}}\n{a}\n{{% endstep %}}\n\n{{% step %}}\n{b}\n{{% endstep %}}\n{{% endstepper %}}"
        )),
        1 => (words(), t()).prop_map(|(a, b)| format!(
            "<details>\n\n<summary>{a}</summary>\n\n{b}\n\n</details>"
        )),
        1 => (word(), words()).prop_map(|(f, c)| format!(
            "<figure><img src=\"/files/{f}\" alt=\"\"><figcaption><p>{c}</p></figcaption></figure>"
        )),
        1 => word().prop_map(|u| format!("{{% embed url=\"https://example.com/{u}\" %}}")),
        1 => Just("***".to_string()),
        1 => word().prop_map(|f| format!("$${f}^2$$")),
        1 => (word(), word()).prop_map(|(a, b)| {
            let w = a.len().max(b.len());
            format!("| {a:w$} |\n| {} |\n| {b:w$} |", "-".repeat(w))
        }),
    ]
}

fn page_md() -> impl Strategy<Value = String> {
    // Two quotes, or two lists, in a row are one in markdown: not a form Git Sync writes.
    let kind = |b: &str| ["> ", "* ", "1. "].iter().position(|p| b.starts_with(p));
    prop::collection::vec(block_md(), 1..6)
        .prop_filter("blocks that would merge", move |b| {
            b.windows(2)
                .all(|w| kind(&w[0]).is_none() || kind(&w[0]) != kind(&w[1]))
        })
        .prop_map(|b| b.join("\n\n") + "\n")
}

// ---------------------------------------------------------------------------------------
// Random documents.

fn mark(kind: &str) -> Mark {
    Mark {
        kind: kind.into(),
        data: None,
    }
}

/// Text with markdown's special characters, never empty, without edge whitespace.
fn any_text() -> impl Strategy<Value = String> {
    "[a-z*_`#<>&!\\[\\]|~{}%$\\\\():;'\"=+.-][a-z0-9 *_`#<>&!\\[\\]|~{}%$\\\\():;'\"=+.-]{0,10}"
        .prop_filter("no edge spaces", |s| s.trim() == s)
}

fn leaf() -> impl Strategy<Value = Leaf> {
    let marks = prop::sample::subsequence(
        vec!["italic", "bold", "strikethrough", "keyboard", "code"],
        0..3,
    );
    (any_text(), marks).prop_map(|(text, kinds)| {
        let code = kinds.contains(&"code");
        Leaf {
            // Code keeps its text as is, without edge spaces or line breaks.
            text: if code { text.replace(' ', "_") } else { text },
            marks: kinds.into_iter().map(mark).collect(),
        }
    })
}

/// Inline nodes in the engine's canonical shape: leaves merged, a text node around each
/// inline element.
fn inlines() -> impl Strategy<Value = Vec<Node>> {
    prop::collection::vec(
        prop_oneof![
            4 => leaf().prop_map(Ok),
            1 => (any_text(), "[a-z]{1,6}").prop_map(|(t, u)| Err((t, u))),
        ],
        1..5,
    )
    .prop_map(|parts| {
        let mut nodes = Vec::new();
        let mut leaves: Vec<Leaf> = Vec::new();
        let flush = |leaves: &mut Vec<Leaf>, nodes: &mut Vec<Node>| {
            let mut merged: Vec<Leaf> = Vec::new();
            for l in leaves.drain(..) {
                match merged.last_mut() {
                    Some(last) if last.marks == l.marks => last.text.push_str(&l.text),
                    _ => merged.push(l),
                }
            }
            if merged.is_empty() {
                merged.push(Leaf::default());
            }
            nodes.push(Node::Text(Text {
                key: None,
                leaves: merged,
            }));
        };
        for p in parts {
            match p {
                Ok(l) => {
                    if !leaves.is_empty() {
                        // Words apart, so that marks have room to start and end.
                        leaves.push(Leaf {
                            text: " ".into(),
                            marks: vec![],
                        });
                    }
                    leaves.push(l);
                }
                Err((text, url)) => {
                    flush(&mut leaves, &mut nodes);
                    let mut data = Map::new();
                    data.insert(
                        "ref".into(),
                        json!({"kind": "url", "url": format!("https://x.y/{url}")}),
                    );
                    nodes.push(Node::Inline(Element::with_nodes(
                        "link",
                        data,
                        vec![Node::text(&text)],
                    )));
                }
            }
        }
        flush(&mut leaves, &mut nodes);
        nodes
    })
}

fn paragraph() -> BoxedStrategy<Node> {
    inlines().prop_map(Node::paragraph).boxed()
}

fn leaf_block() -> impl Strategy<Value = Node> {
    prop_oneof![
        4 => paragraph(),
        1 => (1..4usize, inlines()).prop_map(|(n, i)| Node::block(&format!("heading-{n}"), Map::new(), i)),
        1 => ("[a-z]{0,5}", prop::collection::vec("[ -~]{0,12}", 1..4)).prop_map(|(syntax, lines)| {
            let mut data = Map::new();
            if !syntax.is_empty() {
                data.insert("syntax".into(), json!(syntax));
            }
            let lines = lines
                .into_iter()
                .map(|l| Node::block("code-line", Map::new(), vec![Node::text(&l)]))
                .collect();
            Node::block("code", data, lines)
        }),
        1 => Just(Node::Block(Element::void("divider", Map::new()))),
        1 => "[a-z+^ ]{1,8}".prop_filter("formula", |f| f.trim() == f).prop_map(|f| {
            Node::Block(Element::void("math", json_map(json!({"formula": f}))))
        }),
    ]
}

fn json_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn list(kind: &'static str, inner: BoxedStrategy<Node>) -> impl Strategy<Value = Node> {
    prop::collection::vec(prop::collection::vec(inner, 1..3), 1..4).prop_map(move |items| {
        let items = items
            .into_iter()
            .enumerate()
            .map(|(i, nodes)| {
                let mut data = Map::new();
                if kind == "list-tasks" {
                    data.insert("checked".into(), json!(i % 2 == 0));
                }
                Node::block("list-item", data, nodes)
            })
            .collect();
        Node::block(kind, Map::new(), items)
    })
}

fn block() -> impl Strategy<Value = Node> {
    leaf_block().prop_recursive(3, 24, 3, |inner| {
        let par = paragraph;
        prop_oneof![
            2 => list("list-unordered", par()),
            1 => list("list-ordered", par()),
            1 => list("list-tasks", par()),
            1 => prop::collection::vec(par(), 1..3).prop_map(|n| Node::block("blockquote", Map::new(), n)),
            1 => (prop::sample::select(vec!["info", "warning", "danger", "success"]), prop::collection::vec(par(), 1..3))
                .prop_map(|(s, n)| Node::block("hint", json_map(json!({"style": s})), n)),
            1 => prop::collection::vec(("[a-z]{1,6}", prop::collection::vec(inner.clone(), 1..3)), 1..3).prop_map(|tabs| {
                let items = tabs.into_iter().map(|(t, n)| Node::block("tabs-item", json_map(json!({"title": t})), n)).collect();
                Node::block("tabs", Map::new(), items)
            }),
            1 => prop::collection::vec(prop::collection::vec(inner.clone(), 1..3), 1..3).prop_map(|steps| {
                let items = steps.into_iter().map(|n| Node::block("stepper-step", Map::new(), n)).collect();
                Node::block("stepper", Map::new(), items)
            }),
            1 => (inlines(), prop::collection::vec(inner, 1..3)).prop_map(|(title, body)| {
                let mut el = Element::void("expandable", Map::new());
                el.fragments = Some(vec![
                    Fragment { key: None, fragment: Some("expandable-title".into()), kind: Some("expandable-title".into()), nodes: vec![Node::paragraph(title)] },
                    Fragment { key: None, fragment: Some("expandable-body".into()), kind: Some("expandable-body".into()), nodes: body },
                ]);
                Node::Block(el)
            }),
        ]
    })
}

/// Whether a document is one the parser could give: quotes in a row merge in markdown.
fn representable(doc: &Document) -> bool {
    let mut stack: Vec<&[Node]> = vec![&doc.nodes];
    while let Some(nodes) = stack.pop() {
        for w in nodes.windows(2) {
            let k = |n: &Node| n.element().map(|e| e.kind.clone());
            if k(&w[0]).as_deref() == Some("blockquote")
                && k(&w[1]).as_deref() == Some("blockquote")
            {
                return false;
            }
        }
        for n in nodes {
            if let Some(e) = n.element() {
                stack.push(e.children());
                for f in e.fragments.iter().flatten() {
                    stack.push(&f.nodes);
                }
            }
        }
    }
    true
}

/// Words of markdown: what must survive a round trip.
fn tokens(md: &str) -> Vec<String> {
    content_words(&without_tags(md))
}

/// Every alphanumeric word, tags included.
fn words_of(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in md.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}

/// Markdown without its tags (their names and attributes are markup, not content): a
/// `<` starting a tag up to the `>` that closes it on the same line.
fn without_tags(md: &str) -> String {
    let chars: Vec<char> = md.chars().collect();
    let mut text = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '<'
            && chars
                .get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '/')
        {
            let end = chars[i + 1..]
                .iter()
                .position(|c| matches!(c, '>' | '<' | '\n'))
                .map(|p| i + 1 + p);
            if let Some(e) = end.filter(|e| chars[*e] == '>') {
                text.push(' ');
                i = e + 1;
                continue;
            }
        }
        text.push(c);
        i += 1;
    }
    text
}

/// Alphanumeric words, less the names of character references (`&amp;`).
fn content_words(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut after_amp = false;
    for c in md.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() {
            cur.push(c);
        } else {
            if !cur.is_empty() && !after_amp {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
            after_amp = c == '&' || (after_amp && c == '#');
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn git_sync_markdown_survives_byte_for_byte(md in page_md()) {
        prop_assert_eq!(normalize_markdown(&md), md);
    }

    #[test]
    fn documents_survive_a_round_trip(nodes in prop::collection::vec(block(), 1..5)) {
        let doc = Document::new(nodes);
        prop_assume!(representable(&doc));
        let md = document_to_markdown(&doc);
        let back = markdown_to_document(&md);
        prop_assert_eq!(&back, &doc, "markdown:\n{}", md);
    }

    #[test]
    fn content_survives_and_unknown_stays_verbatim(
        blocks in prop::collection::vec(prop_oneof![
            4 => block_md(),
            1 => "[a-z &*_<>`\\[\\]()!#|~{}%=+.-]{1,30}",
            1 => word().prop_map(|w| format!("<div class=\"{w}\">\n{w} <b>x</b>\n</div>")),
            1 => word().prop_map(|w| format!("{{% {w}-tag option=\"1\" %}}")),
            1 => word().prop_map(|w| format!("Text with <span>{w}</span> inside.")),
        ], 1..6)
    ) {
        let md = blocks.join("\n\n") + "\n";
        let out = normalize_markdown(&md);
        let kept = words_of(&out);
        for t in tokens(&md) {
            prop_assert!(kept.contains(&t), "{:?} lost from {:?}: {:?}", t, md, out);
        }
        // What is not understood comes back exactly as written (when no random text
        // before it opened some HTML construct that swallows it).
        let random = |b: &String| !b.contains('\n') && !b.starts_with("<div") && !b.starts_with("{%") && !b.contains("<span>");
        for (i, b) in blocks.iter().enumerate() {
            if blocks[..i].iter().any(random) {
                break;
            }
            if b.starts_with("<div") || b.starts_with("{% ") && b.contains("-tag") || b.contains("<span>") {
                prop_assert!(out.contains(b.as_str()), "{:?} not verbatim in {:?}", b, out);
            }
        }
        // And a second round trip changes nothing.
        prop_assert_eq!(normalize_markdown(&out), out.clone());
    }
}
