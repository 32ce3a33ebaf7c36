//! Bounds on the shape of content, enforced where content enters the engine.
//!
//! Parsing, rendering, diffing and merging walk the document tree, mostly by recursion. An
//! attacker who can post a comment could otherwise nest blocks a few thousand levels deep in
//! a few kilobytes of markdown and overflow the stack of the thread doing the work, which
//! aborts the whole server. So nesting is bounded: markdown parsing and JSON document
//! checks reject deeper input with [`TooDeep`], every document the engine stores is within
//! [`MAX_DEPTH`], and the walks that remain recursive are bounded by it.

use crate::document::{Document, Node};

/// Deepest nesting of blocks and inlines a document may have: a top-level block is at level
/// 1, its children at level 2, and so on (texts are leaves and do not count).
///
/// Real pages stay far below it: a list nested ten levels deep inside tabs, a hint, an
/// expandable and a stepper, ending in a link, is about 30 levels. It is also low enough
/// that parsing and rendering at this depth fit in a small thread stack (see the tests).
pub const MAX_DEPTH: usize = 48;

/// Content nested deeper than [`MAX_DEPTH`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "content is nested too deeply: a {within} holds content more than {MAX_DEPTH} levels deep (blocks and inlines may nest at most {MAX_DEPTH} levels)"
)]
pub struct TooDeep {
    /// What holds the content that is too deep (`blockquote`, `list`, `hint`, `link`…).
    pub within: String,
}

impl TooDeep {
    /// The error for content too deep inside a `within`.
    pub fn new(within: impl Into<String>) -> TooDeep {
        TooDeep {
            within: within.into(),
        }
    }
}

impl Document {
    /// Checks that no element is nested deeper than [`MAX_DEPTH`]. Iterative, so it is safe
    /// on a document of any depth.
    pub fn check_depth(&self) -> Result<(), TooDeep> {
        check_nodes(&self.nodes)
    }

    /// Depth of the deepest element (0 for an empty document). Iterative.
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        walk(&self.nodes, |_, _, depth| {
            deepest = deepest.max(depth);
            true
        });
        deepest
    }
}

/// [`Document::check_depth`] for a list of top-level nodes.
pub fn check_nodes(nodes: &[Node]) -> Result<(), TooDeep> {
    let mut err = None;
    walk(nodes, |_, parent, depth| {
        if depth > MAX_DEPTH {
            err = Some(TooDeep::new(parent.unwrap_or("document")));
            return false;
        }
        true
    });
    err.map_or(Ok(()), Err)
}

/// Visits every element (block or inline) with its parent's type and its depth, depth first,
/// with an explicit stack; stops when `visit` returns false.
pub(crate) fn walk<'a>(
    nodes: &'a [Node],
    mut visit: impl FnMut(&'a Node, Option<&'a str>, usize) -> bool,
) {
    let mut stack: Vec<(&'a Node, Option<&'a str>, usize)> =
        nodes.iter().rev().map(|n| (n, None, 1)).collect();
    while let Some((node, parent, depth)) = stack.pop() {
        let Some(e) = node.element() else { continue };
        if !visit(node, parent, depth) {
            return;
        }
        for f in e.fragments.iter().flatten().rev() {
            for n in f.nodes.iter().rev() {
                stack.push((n, Some(&e.kind), depth + 1));
            }
        }
        for n in e.children().iter().rev() {
            stack.push((n, Some(&e.kind), depth + 1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn nested(levels: usize) -> Document {
        let mut node = Node::paragraph(vec![Node::text("x")]);
        for _ in 1..levels {
            node = Node::block("blockquote", Map::new(), vec![node]);
        }
        Document::new(vec![node])
    }

    #[test]
    fn depth_is_counted_in_elements() {
        assert_eq!(Document::default().depth(), 0);
        assert_eq!(nested(1).depth(), 1);
        assert_eq!(nested(MAX_DEPTH).depth(), MAX_DEPTH);
        assert!(nested(MAX_DEPTH).check_depth().is_ok());
        let err = nested(MAX_DEPTH + 1).check_depth().unwrap_err();
        assert_eq!(err.within, "blockquote");
        assert!(err.to_string().contains("nested too deeply"));
    }

    #[test]
    fn checking_a_very_deep_document_does_not_recurse() {
        let doc = nested(100_000);
        let handle = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                let r = doc.check_depth().is_err() && doc.depth() == 100_000;
                // Dropping is recursive: keep the document alive past this thread.
                std::mem::forget(doc);
                r
            })
            .unwrap();
        assert!(handle.join().unwrap());
    }
}
