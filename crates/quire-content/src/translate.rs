//! The text of a page that a machine translator may see, and its reassembly.
//!
//! A page body is parsed into the official document; only its text runs (leaves) are handed
//! out, in document order. Code blocks, inline code and keys, math, embeds, files, images,
//! OpenAPI blocks and every `data` field (URLs, references, languages) stay where they are:
//! a translator never sees them, so it cannot change them. The translated runs are put back
//! into the same leaves, and the document is rendered again, so the structure, the marks and
//! the links of the page are those of the source; the renderer escapes whatever markup a
//! translation might hold.

use crate::document::{Document, Element, Node};
use crate::limits::MAX_DEPTH;
use crate::markdown::{document_to_markdown, markdown_to_document};

/// Block and inline kinds whose content is never translated.
const UNTRANSLATED: &[&str] = &[
    "code",
    "code-line",
    "math",
    "inline-math",
    "embed",
    "file",
    "images",
    "image",
    "inline-image",
    "drawing",
    "content-ref",
    "reusable-content",
    "swagger",
    "openapi-operation",
    "openapi-webhook",
    "openapi-schemas",
    "integration",
    "mention",
    "emoji",
];

/// Marks whose text is not prose.
const VERBATIM_MARKS: &[&str] = &["code", "keyboard"];

/// A page body split for translation: the parsed document and where its runs are.
#[derive(Debug, Clone)]
pub struct Segmented {
    doc: Document,
    /// The text of each translatable run, trimmed, in document order.
    texts: Vec<String>,
}

impl Segmented {
    /// Parses stored markdown and collects its translatable runs.
    pub fn of_markdown(markdown: &str) -> Segmented {
        let mut doc = markdown_to_document(markdown);
        let mut texts = Vec::new();
        walk(&mut doc.nodes, 1, &mut |text: &mut String| {
            texts.push(text.trim().to_string());
        });
        Segmented { doc, texts }
    }

    /// The runs to translate, in order.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    /// The markdown of the document with each run replaced by its translation (same order
    /// and count as [`Segmented::texts`]); the whitespace around each run is kept. `None`
    /// when the count differs.
    pub fn reassemble(mut self, translated: &[String]) -> Option<String> {
        if translated.len() != self.texts.len() {
            return None;
        }
        let mut next = translated.iter();
        walk(&mut self.doc.nodes, 1, &mut |text: &mut String| {
            if let Some(t) = next.next() {
                let lead = &text[..text.len() - text.trim_start().len()];
                let trail = &text[text.trim_end().len()..];
                *text = format!("{lead}{}{trail}", t.trim());
            }
        });
        Some(document_to_markdown(&self.doc))
    }
}

/// Whether a run holds words (not only spaces, digits or punctuation).
pub fn is_prose(text: &str) -> bool {
    text.chars().any(char::is_alphabetic)
}

/// Words in `text`, as a translation service counts them.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().filter(|w| is_prose(w)).count()
}

/// Calls `visit` on every translatable run under `nodes`, in document order. Recursion
/// stops at [`MAX_DEPTH`] (stored documents never reach it).
fn walk<F: FnMut(&mut String)>(nodes: &mut [Node], depth: usize, visit: &mut F) {
    if depth > MAX_DEPTH {
        return;
    }
    for node in nodes.iter_mut() {
        match node {
            Node::Text(t) => {
                for leaf in &mut t.leaves {
                    let verbatim = leaf
                        .marks
                        .iter()
                        .any(|m| VERBATIM_MARKS.contains(&m.kind.as_str()));
                    if !verbatim && is_prose(&leaf.text) {
                        visit(&mut leaf.text);
                    }
                }
            }
            Node::Block(e) | Node::Inline(e) => element(e, depth, visit),
        }
    }
}

fn element<F: FnMut(&mut String)>(e: &mut Element, depth: usize, visit: &mut F) {
    if UNTRANSLATED.contains(&e.kind.as_str()) {
        return;
    }
    if let Some(children) = e.nodes.as_mut() {
        walk(children, depth + 1, visit);
    }
    if let Some(fragments) = e.fragments.as_mut() {
        for f in fragments {
            walk(&mut f.nodes, depth + 1, visit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_prose_is_handed_out_and_structure_survives() {
        let md = "# Getting started\n\nInstall **the tool** with `cargo install` and read [the guide](https://example.com/guide).\n\n```rust\nfn main() { println!(\"hello\"); }\n```\n\n* First item\n* Second item\n";
        let seg = Segmented::of_markdown(md);
        let texts = seg.texts().to_vec();
        assert!(texts.iter().all(|t| !t.contains("cargo install")));
        assert!(texts.iter().all(|t| !t.contains("println")));
        assert!(texts.iter().all(|t| !t.contains("example.com")));
        assert!(texts.contains(&"Getting started".to_string()));
        assert!(texts.contains(&"the guide".to_string()));
        let upper: Vec<String> = texts.iter().map(|t| t.to_uppercase()).collect();
        let out = seg.reassemble(&upper).unwrap();
        assert!(out.contains("# GETTING STARTED"), "{out}");
        assert!(out.contains("**THE TOOL**"), "{out}");
        assert!(out.contains("`cargo install`"), "{out}");
        assert!(out.contains("(https://example.com/guide)"), "{out}");
        assert!(out.contains("fn main() { println!(\"hello\"); }"), "{out}");
        assert!(out.contains("* FIRST ITEM"), "{out}");
    }

    #[test]
    fn markup_in_a_translation_is_escaped_and_a_wrong_count_is_refused() {
        let seg = Segmented::of_markdown("Hello world\n");
        assert!(seg.clone().reassemble(&[]).is_none());
        let out = seg.reassemble(&["**bold** <b>x</b>".to_string()]).unwrap();
        let doc = markdown_to_document(&out);
        assert_eq!(doc.plain_text(), "**bold** <b>x</b>");
    }

    #[test]
    fn words_are_counted() {
        assert_eq!(word_count("Hello, big world — 42"), 3);
    }
}
