//! The official JSON document (`format=document`): blocks, inlines, texts with leaves and
//! marks, and fragments.
//!
//! Node types are kept as strings with free-form `data` maps rather than one Rust type per
//! block kind: the official schema has dozens of block types and grows with every API
//! version, and a document received from a client must survive even when it holds types this
//! engine does not interpret. The constructors below produce the shapes the schema requires
//! (`isVoid`, `data`, `fragments` where mandatory).

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A whole document: `{object: "document", data: {schemaVersion?}, nodes: [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "object", rename = "document")]
pub struct Document {
    /// Document-level data.
    #[serde(default)]
    pub data: DocumentData,
    /// Top-level blocks.
    pub nodes: Vec<Node>,
}

/// Document-level data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DocumentData {
    /// Version of the document schema.
    #[serde(
        rename = "schemaVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub schema_version: Option<u32>,
}

/// A node: block, inline or text, tagged by the official `object` field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "object", rename_all = "lowercase")]
pub enum Node {
    /// A block node (paragraph, heading, list, hint, …).
    Block(Element),
    /// An inline node (link, inline image, …).
    Inline(Element),
    /// A run of text made of leaves.
    Text(Text),
}

/// A block or inline node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Element {
    /// The official node type (`paragraph`, `heading-1`, `link`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// Client-side key, kept when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Type-specific data; always present (an empty object is valid everywhere).
    #[serde(default)]
    pub data: Map<String, Value>,
    /// Children, absent on void nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<Node>>,
    /// Named sub-documents (captions, expandable title and body, table cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragments: Option<Vec<Fragment>>,
    /// Whether the node has no editable children.
    #[serde(rename = "isVoid", default, skip_serializing_if = "Option::is_none")]
    pub is_void: Option<bool>,
    /// Extra metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A run of text: `{object: "text", leaves: [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Text {
    /// Client-side key, kept when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Leaves: pieces of text sharing the same marks.
    pub leaves: Vec<Leaf>,
}

/// A piece of text with its marks: `{object: "leaf", text, marks}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "object", rename = "leaf")]
pub struct Leaf {
    /// The text.
    pub text: String,
    /// Formatting marks.
    #[serde(default)]
    pub marks: Vec<Mark>,
}

/// A formatting mark: `{object: "mark", type, data?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "object", rename = "mark")]
pub struct Mark {
    /// `bold`, `italic`, `code`, `strikethrough`, `keyboard`, `superscript`, `subscript`, `color`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Mark data (the colours of a `color` mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
}

/// A named sub-document of a node: `{object: "fragment", fragment, type, nodes}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "object", rename = "fragment")]
pub struct Fragment {
    /// Client-side key, kept when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Fragment name, unique in its node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment: Option<String>,
    /// Fragment type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Blocks of the fragment.
    pub nodes: Vec<Node>,
}

impl Document {
    /// A document with these top-level blocks.
    pub fn new(nodes: Vec<Node>) -> Document {
        Document {
            data: DocumentData::default(),
            nodes,
        }
    }

    /// Gives every block, inline, text and fragment that has no key one, unique in the
    /// document and the same each time for the same document and `seed` (the page or
    /// comment the document is the body of, so that two documents shown together differ).
    /// Readers rely on keys: GitBook's renderer refuses tabs without them and uses them as
    /// element ids.
    pub fn assign_keys(&mut self, seed: &str) {
        use sha2::Digest;
        enum Item<'a> {
            Nodes(&'a mut [Node]),
            Fragments(&'a mut [Fragment]),
        }
        // A letter first, so that a key is also a plain CSS identifier.
        let prefix = format!(
            "k{}",
            hex::encode(&sha2::Sha256::digest(seed.as_bytes())[..4])
        );
        let mut count = 0u64;
        let mut next = || {
            count += 1;
            format!("{prefix}{count:x}")
        };
        let mut stack = vec![Item::Nodes(&mut self.nodes)];
        while let Some(item) = stack.pop() {
            match item {
                Item::Nodes(nodes) => {
                    for node in nodes {
                        match node {
                            Node::Text(t) => {
                                t.key.get_or_insert_with(&mut next);
                            }
                            Node::Block(e) | Node::Inline(e) => {
                                e.key.get_or_insert_with(&mut next);
                                if let Some(f) = e.fragments.as_mut() {
                                    stack.push(Item::Fragments(f));
                                }
                                if let Some(c) = e.nodes.as_mut() {
                                    stack.push(Item::Nodes(c));
                                }
                            }
                        }
                    }
                }
                Item::Fragments(fragments) => {
                    for f in fragments {
                        f.key.get_or_insert_with(&mut next);
                        stack.push(Item::Nodes(&mut f.nodes));
                    }
                }
            }
        }
    }

    /// Plain text of the whole document, blocks separated by newlines.
    pub fn plain_text(&self) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            push_plain(n, &mut out);
        }
        out.trim_end().to_string()
    }
}

impl Element {
    /// A non-void element with children.
    pub fn with_nodes(kind: &str, data: Map<String, Value>, nodes: Vec<Node>) -> Element {
        Element {
            kind: kind.into(),
            key: None,
            data,
            nodes: Some(nodes),
            fragments: None,
            is_void: None,
            meta: None,
        }
    }

    /// A void element (no children).
    pub fn void(kind: &str, data: Map<String, Value>) -> Element {
        Element {
            kind: kind.into(),
            key: None,
            data,
            nodes: None,
            fragments: None,
            is_void: Some(true),
            meta: None,
        }
    }

    /// Children, or an empty slice for void nodes.
    pub fn children(&self) -> &[Node] {
        self.nodes.as_deref().unwrap_or(&[])
    }

    /// The fragment with this name.
    pub fn fragment(&self, name: &str) -> Option<&Fragment> {
        self.fragments
            .as_ref()?
            .iter()
            .find(|f| f.fragment.as_deref() == Some(name))
    }

    /// A string field of `data`.
    pub fn data_str(&self, key: &str) -> Option<&str> {
        self.data.get(key).and_then(Value::as_str)
    }
}

impl Node {
    /// A block node.
    pub fn block(kind: &str, data: Map<String, Value>, nodes: Vec<Node>) -> Node {
        Node::Block(Element::with_nodes(kind, data, nodes))
    }

    /// A text node with one unmarked leaf.
    pub fn text(text: &str) -> Node {
        Node::Text(Text {
            key: None,
            leaves: vec![Leaf {
                text: text.into(),
                marks: Vec::new(),
            }],
        })
    }

    /// A paragraph holding these inline nodes.
    pub fn paragraph(nodes: Vec<Node>) -> Node {
        Node::block("paragraph", Map::new(), nodes)
    }

    /// The element of a block or inline node.
    pub fn element(&self) -> Option<&Element> {
        match self {
            Node::Block(e) | Node::Inline(e) => Some(e),
            Node::Text(_) => None,
        }
    }

    /// Plain text of the node and its descendants.
    pub fn plain_text(&self) -> String {
        let mut out = String::new();
        push_plain(self, &mut out);
        out.trim_end().to_string()
    }
}

/// Appends the plain text of `node`. Iterative (an explicit stack instead of recursion), so
/// that no document, however deep, can exhaust the thread's stack.
fn push_plain(node: &Node, out: &mut String) {
    push_plain_apart(node, out, None);
}

/// The plain text of `node` without the `if` blocks in it (`node` itself included), which
/// are set aside in `ifs`, in document order, for the caller to read on their own.
/// `code` receives the byte ranges of the text that are lines of code blocks.
pub(crate) fn plain_text_apart<'a>(
    node: &'a Node,
    ifs: &mut Vec<&'a Element>,
    code: &mut Vec<Range<usize>>,
) -> String {
    let mut out = String::new();
    push_plain_apart(node, &mut out, Some((ifs, code)));
    let out = out.trim_end().to_string();
    code.retain_mut(|r| {
        r.end = r.end.min(out.len());
        r.start < r.end
    });
    out
}

/// [`push_plain`], setting `if` blocks aside and noting where code lines are, when given.
fn push_plain_apart<'a>(
    node: &'a Node,
    out: &mut String,
    mut apart: Option<(&mut Vec<&'a Element>, &mut Vec<Range<usize>>)>,
) {
    enum Task<'a> {
        Node(&'a Node),
        /// End of a block that started at this length of `out`.
        EndBlock(usize),
        /// End of a code line that started at this length of `out`.
        EndLine(usize),
        /// A table cell: its text is trimmed and ends with a newline when not empty.
        Cell(&'a [Node]),
        EndCell(usize),
    }
    let mut stack = vec![Task::Node(node)];
    while let Some(task) = stack.pop() {
        match task {
            Task::Node(Node::Text(t)) => {
                for l in &t.leaves {
                    out.push_str(&l.text);
                }
            }
            Task::Node(Node::Inline(e)) => {
                stack.extend(e.children().iter().rev().map(Task::Node));
            }
            Task::Node(Node::Block(e)) if e.kind == "if" && apart.is_some() => {
                if let Some((ifs, _)) = apart.as_mut() {
                    ifs.push(e);
                }
            }
            Task::Node(Node::Block(e)) if e.kind == "code-line" => {
                stack.push(Task::EndLine(out.len()));
                stack.extend(e.children().iter().rev().map(Task::Node));
            }
            Task::Node(Node::Block(e)) => {
                stack.push(Task::EndBlock(out.len()));
                if e.kind == "table" {
                    for f in e.fragments.iter().flatten().rev() {
                        stack.push(Task::Cell(&f.nodes));
                    }
                } else {
                    for f in e.fragments.iter().flatten().rev() {
                        stack.extend(f.nodes.iter().rev().map(Task::Node));
                    }
                }
                stack.extend(e.children().iter().rev().map(Task::Node));
            }
            Task::EndLine(start) => {
                if let Some((_, code)) = apart.as_mut() {
                    if out.len() > start {
                        code.push(start..out.len());
                    }
                }
                out.push('\n');
            }
            Task::EndBlock(before) => {
                if out.len() > before && !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            Task::Cell(nodes) => {
                stack.push(Task::EndCell(out.len()));
                stack.extend(nodes.iter().rev().map(Task::Node));
            }
            Task::EndCell(start) => {
                let cell = out[start..].trim().to_string();
                out.truncate(start);
                // Trimming moves the cell's text: no code range may point into it.
                if let Some((_, code)) = apart.as_mut() {
                    code.retain(|r| r.end <= start);
                }
                if !cell.is_empty() {
                    out.push_str(&cell);
                    out.push('\n');
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_given_to_every_node_once_and_are_unique() {
        let md = "A [link](https://example.com).\n\n{% tabs %}\n{% tab title=\"One\" %}\nOne.\n{% endtab %}\n{% endtabs %}\n\n| a | b |\n| - | - |\n| 1 | 2 |\n";
        let mut doc = crate::markdown::markdown_to_document(md);
        doc.nodes[0] = Node::Block(Element {
            key: Some("given".into()),
            ..Element::with_nodes("paragraph", Map::new(), vec![Node::text("kept")])
        });
        doc.assign_keys("page-1");
        let v = serde_json::to_value(&doc).unwrap();
        let mut keys = Vec::new();
        let mut stack = vec![&v];
        while let Some(n) = stack.pop() {
            if n["object"] != "document" {
                keys.push(
                    n["key"]
                        .as_str()
                        .unwrap_or_else(|| panic!("no key: {n}"))
                        .to_string(),
                );
            }
            for list in ["nodes", "fragments"] {
                stack.extend(n[list].as_array().into_iter().flatten());
            }
        }
        assert!(keys.len() > 8, "{keys:?}");
        assert!(keys.contains(&"given".to_string()));
        let unique: std::collections::BTreeSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        // The same document and seed: the same keys; another seed: other keys.
        let mut again = doc.clone();
        again.assign_keys("page-1");
        assert_eq!(again, doc);
        let mut other = crate::markdown::markdown_to_document(md);
        other.assign_keys("page-2");
        let mut same = crate::markdown::markdown_to_document(md);
        same.assign_keys("page-1");
        assert_ne!(other.nodes[1], same.nodes[1]);
    }

    #[test]
    fn serialises_in_the_official_shape() {
        let doc = Document::new(vec![Node::paragraph(vec![Node::Text(Text {
            key: None,
            leaves: vec![Leaf {
                text: "hi".into(),
                marks: vec![Mark {
                    kind: "bold".into(),
                    data: None,
                }],
            }],
        })])]);
        let v = serde_json::to_value(&doc).unwrap();
        assert_eq!(
            v,
            json!({
                "object": "document",
                "data": {},
                "nodes": [{
                    "object": "block",
                    "type": "paragraph",
                    "data": {},
                    "nodes": [{
                        "object": "text",
                        "leaves": [{"object": "leaf", "text": "hi", "marks": [{"object": "mark", "type": "bold"}]}]
                    }]
                }]
            })
        );
        let back: Document = serde_json::from_value(v).unwrap();
        assert_eq!(back, doc);
        assert_eq!(doc.plain_text(), "hi");
    }

    #[test]
    fn unknown_types_survive() {
        let v = json!({
            "object": "document",
            "data": {"schemaVersion": 2},
            "nodes": [{"object": "block", "type": "openapi-operation", "isVoid": true,
                       "data": {"path": "/x", "method": "get", "ref": {"kind": "openapi", "spec": "s"}}}]
        });
        let doc: Document = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&doc).unwrap(), v);
    }
}
