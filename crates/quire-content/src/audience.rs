//! What one visitor sees of a page body: its document without the `{% if %}` blocks whose
//! condition does not hold for them, each block that holds giving way to its content, so
//! that no output (HTML, markdown, agents' files, the renderer's API) carries a block the
//! visitor may not see, nor a condition left for someone else to evaluate.
//!
//! And which conditions a body may hold, found in its text without parsing it: callers key
//! what they cache for a visitor on the claims those conditions read.

use crate::document::{Document, Element, Fragment, Node};
use crate::limits::MAX_DEPTH;
use crate::markdown::split_tag;

/// `doc` as a visitor sees it: each `if` block is replaced by its content when
/// `shows(expression)` holds, and removed otherwise. A container left empty by a removal
/// gets an empty paragraph, as the markdown parser gives an empty container.
pub fn visible_document(doc: &Document, shows: &mut dyn FnMut(&str) -> bool) -> Document {
    Document {
        data: doc.data.clone(),
        nodes: visible_nodes(&doc.nodes, shows, 1),
    }
}

/// Whether `doc` holds an `if` block anywhere.
pub fn has_if_blocks(doc: &Document) -> bool {
    let mut found = false;
    crate::limits::walk(&doc.nodes, |node, _, _| {
        if node.element().is_some_and(|e| e.kind == "if") {
            found = true;
        }
        !found
    });
    found
}

fn visible_nodes(nodes: &[Node], shows: &mut dyn FnMut(&str) -> bool, depth: usize) -> Vec<Node> {
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        push_visible(node, shows, depth, &mut out);
    }
    out
}

fn push_visible(
    node: &Node,
    shows: &mut dyn FnMut(&str) -> bool,
    depth: usize,
    out: &mut Vec<Node>,
) {
    let (e, inline) = match node {
        Node::Text(_) => {
            out.push(node.clone());
            return;
        }
        Node::Block(e) => (e, false),
        Node::Inline(e) => (e, true),
    };
    // Stored documents are never this deep; what lies deeper is dropped, not shown.
    if depth > MAX_DEPTH {
        return;
    }
    if e.kind == "if" {
        if shows(e.data_str("expression").unwrap_or("")) {
            for child in e.children() {
                push_visible(child, shows, depth + 1, out);
            }
        }
        return;
    }
    let keep = |nodes: &[Node], shows: &mut dyn FnMut(&str) -> bool| {
        let kept = visible_nodes(nodes, shows, depth + 1);
        if kept.is_empty() && !nodes.is_empty() {
            vec![Node::paragraph(vec![Node::text("")])]
        } else {
            kept
        }
    };
    let element = Element {
        kind: e.kind.clone(),
        key: e.key.clone(),
        data: e.data.clone(),
        nodes: e.nodes.as_ref().map(|n| keep(n, shows)),
        fragments: e.fragments.as_ref().map(|fragments| {
            fragments
                .iter()
                .map(|f| Fragment {
                    key: f.key.clone(),
                    fragment: f.fragment.clone(),
                    kind: f.kind.clone(),
                    nodes: keep(&f.nodes, shows),
                })
                .collect()
        }),
        is_void: e.is_void,
        meta: e.meta.clone(),
    };
    out.push(if inline {
        Node::Inline(element)
    } else {
        Node::Block(element)
    });
}

/// The expression of every line of `markdown` that may open an `if` block: each `{%` of a
/// line read as the start of a tag line. The markdown parser reads a tag from a line whose
/// container markers (quotes, list indents) it has stripped, which is one of these suffixes,
/// so every `if` block's expression is among them (with some that open nothing, such as
/// tags quoted in code blocks).
pub fn condition_texts(markdown: &str) -> impl Iterator<Item = &str> {
    markdown
        .lines()
        .filter(|line| line.contains("{%"))
        .flat_map(|line| {
            line.match_indices("{%")
                .filter_map(move |(at, _)| match split_tag(&line[at..]) {
                    Some(("if", expression)) if !expression.is_empty() => Some(expression),
                    _ => None,
                })
        })
}

/// Whether `markdown` may hold an `if` block (see [`condition_texts`]): without one, its
/// visible document is the whole document.
pub fn may_have_conditions(markdown: &str) -> bool {
    condition_texts(markdown).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::{document_to_markdown, markdown_to_document};

    const PAGE: &str = "Open text.\n\n{% if visitor.claims.pro %}\nPro only: walrus.\n\n{% hint style=\"info\" %}\n{% if visitor.claims.admin %}\nAdmins: narwhal.\n{% endif %}\n{% endhint %}\n{% endif %}\n\n{% if visitor.claims.beta %}\nBeta: okapi.\n{% endif %}\n\nEnd.\n";

    fn seen(claims: &[&str]) -> String {
        let doc = markdown_to_document(PAGE);
        let shown = visible_document(&doc, &mut |e| {
            claims.iter().any(|c| e == format!("visitor.claims.{c}"))
        });
        document_to_markdown(&shown)
    }

    #[test]
    fn hidden_blocks_are_removed_and_shown_ones_unwrapped() {
        let nobody = seen(&[]);
        assert!(
            nobody.contains("Open text.") && nobody.contains("End."),
            "{nobody}"
        );
        for word in ["walrus", "narwhal", "okapi", "{% if", "visitor.claims"] {
            assert!(!nobody.contains(word), "{word} in {nobody}");
        }
        let pro = seen(&["pro"]);
        assert!(pro.contains("walrus") && !pro.contains("narwhal"), "{pro}");
        assert!(!pro.contains("{% if"), "{pro}");
        // The hint emptied by the removal stays a valid container.
        assert!(pro.contains("{% hint"), "{pro}");
        let all = seen(&["pro", "admin", "beta"]);
        for word in ["walrus", "narwhal", "okapi"] {
            assert!(all.contains(word), "{word} not in {all}");
        }
        assert!(!has_if_blocks(&markdown_to_document(&all)));
        assert!(has_if_blocks(&markdown_to_document(PAGE)));
    }

    #[test]
    fn every_condition_is_found_in_the_text() {
        let found: Vec<&str> = condition_texts(PAGE).collect();
        assert_eq!(
            found,
            [
                "visitor.claims.pro",
                "visitor.claims.admin",
                "visitor.claims.beta"
            ]
        );
        assert!(may_have_conditions(PAGE));
        assert!(!may_have_conditions(
            "{% hint style=\"info\" %}\nNo.\n{% endhint %}\n"
        ));
        assert!(!may_have_conditions("{% if %}\n"));
    }
}
