//! Pages computed from a specification, as an OpenAPI reference shows it: a page per tag
//! holding its operations (each an `openapi-operation` block, rendered from the spec where
//! the page is shown), and a page of the spec's models. Nothing is stored: the same spec
//! and seed always give the same pages, with the same ids.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::document::{Document, Element, Node};
use crate::markdown::{document_to_markdown, try_normalize_markdown};
use crate::model::{slugify, unique_slug, Page};
use crate::openapi::render::clip;

/// Most operations placed on pages; a spec holding more shows the first ones.
pub const MAX_OPERATIONS: usize = 2000;
/// Most tag pages.
pub const MAX_TAGS: usize = 200;
/// Most models listed on the models page.
pub const MAX_MODELS: usize = 1000;
/// Longest tag description kept, in bytes.
const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;
/// The title of the page of operations without a tag.
const UNTAGGED: &str = "Other";

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// A page the spec gives: its tag (the key documents are asked for by), title, short
/// description and body in the markdown dialect.
#[derive(Clone, Debug, PartialEq)]
pub struct TagPage {
    /// The tag's name ([`UNTAGGED`] for operations without one).
    pub tag: String,
    /// Title.
    pub title: String,
    /// The tag's description, as the page's body starts.
    pub description: Option<String>,
    /// Body.
    pub markdown: String,
}

/// The tag pages of `doc` (the spec named `spec`), in the order of its `tags`, then of the
/// tags its operations use; operations in path and method order within a page.
pub fn tag_pages(doc: &Value, spec: &str) -> Vec<TagPage> {
    let mut order: Vec<String> = Vec::new();
    let mut about: BTreeMap<String, String> = BTreeMap::new();
    for t in doc
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = t.get("name").and_then(Value::as_str) {
            if !order.iter().any(|o| o == name) {
                order.push(name.to_string());
            }
            if let Some(d) = t.get("description").and_then(Value::as_str) {
                about.insert(name.to_string(), d.to_string());
            }
        }
    }
    let mut ops: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut count = 0;
    let paths = doc.get("paths").and_then(Value::as_object);
    'paths: for (path, item) in paths.into_iter().flatten() {
        let Some(item) = item.as_object() else {
            continue;
        };
        for method in METHODS {
            let Some(op) = item.get(*method) else {
                continue;
            };
            if count == MAX_OPERATIONS {
                break 'paths;
            }
            count += 1;
            let tag = op
                .get("tags")
                .and_then(Value::as_array)
                .and_then(|t| t.first())
                .and_then(Value::as_str)
                .unwrap_or(UNTAGGED)
                .to_string();
            if !order.contains(&tag) {
                order.push(tag.clone());
            }
            ops.entry(tag)
                .or_default()
                .push((path.clone(), method.to_string()));
        }
    }
    order
        .into_iter()
        .filter_map(|tag| {
            let list = ops.remove(&tag)?;
            let description = about.get(&tag).and_then(|d| {
                let cut = clip(d, MAX_DESCRIPTION_BYTES);
                try_normalize_markdown(cut).ok()
            });
            let blocks: Vec<Node> = list
                .iter()
                .map(|(path, method)| {
                    let mut data = spec_ref(spec);
                    data.insert("path".into(), json!(path));
                    data.insert("method".into(), json!(method));
                    Node::Block(Element::void("openapi-operation", data))
                })
                .collect();
            let mut markdown = description.clone().unwrap_or_default();
            if !markdown.is_empty() && !markdown.ends_with("\n\n") {
                markdown.push_str(if markdown.ends_with('\n') {
                    "\n"
                } else {
                    "\n\n"
                });
            }
            markdown.push_str(&document_to_markdown(&Document {
                nodes: blocks,
                ..Document::default()
            }));
            Some(TagPage {
                title: tag.chars().take(100).collect(),
                tag,
                description: description.map(|d| d.trim().chars().take(300).collect()),
                markdown,
            })
        })
        .take(MAX_TAGS)
        .collect()
}

/// The body of the models page: the spec's schemas (`components.schemas`), or `None` when
/// it has none.
pub fn models_markdown(doc: &Value, spec: &str) -> Option<String> {
    let names: Vec<&str> = doc
        .pointer("/components/schemas")?
        .as_object()?
        .keys()
        .map(String::as_str)
        // The block lists names separated by commas.
        .filter(|n| !n.is_empty() && !n.contains(','))
        .take(MAX_MODELS)
        .collect();
    if names.is_empty() {
        return None;
    }
    let mut data = spec_ref(spec);
    data.insert("schemas".into(), json!(names));
    data.insert("grouped".into(), json!(false));
    Some(document_to_markdown(&Document {
        nodes: vec![Node::Block(Element::void("openapi-schemas", data))],
        ..Document::default()
    }))
}

/// The body of the spec's introduction: its title and description.
pub fn info_markdown(doc: &Value) -> String {
    let info = doc.get("info");
    let title = info
        .and_then(|i| i.get("title"))
        .and_then(Value::as_str)
        .unwrap_or("API");
    let description = info
        .and_then(|i| i.get("description"))
        .and_then(Value::as_str)
        .map(|d| clip(d, MAX_DESCRIPTION_BYTES))
        .unwrap_or("");
    // The title is text, written by the dialect's own renderer (which escapes it); the
    // description is markdown, as the spec defines it.
    let title: String = title
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    let heading = document_to_markdown(&Document {
        nodes: vec![Node::block(
            "heading-1",
            Map::new(),
            vec![Node::text(&title)],
        )],
        ..Document::default()
    });
    try_normalize_markdown(&format!("{heading}\n{description}\n")).unwrap_or(heading)
}

/// The computed pages of `doc`: a page per tag, and the models page if `models` and the spec
/// has schemas; ids from `seed`, so that the same seed names the same pages.
pub fn revision_pages(doc: &Value, spec: &str, models: bool, seed: &str) -> Vec<Page> {
    let mut taken: Vec<String> = Vec::new();
    let mut page = |key: &str, title: &str, markdown: &str| {
        let slug = unique_slug(&slugify(title), taken.iter().map(String::as_str));
        taken.push(slug.clone());
        Page::document(&page_id(seed, key), title, &slug, markdown)
    };
    let mut pages: Vec<Page> = tag_pages(doc, spec)
        .into_iter()
        .map(|t| {
            let mut p = page(&format!("tag:{}", t.tag), &t.title, &t.markdown);
            p.description = t.description;
            p
        })
        .collect();
    if models {
        if let Some(md) = models_markdown(doc, spec) {
            pages.push(page("models", "Models", &md));
        }
    }
    pages
}

/// A page id made from the seed and what the page shows: 20 letters and digits.
fn page_id(seed: &str, key: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let digest = Sha256::digest(format!("{seed}\n{key}").as_bytes());
    digest
        .iter()
        .take(20)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

fn spec_ref(spec: &str) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("ref".into(), json!({"kind": "openapi", "spec": spec}));
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Value {
        json!({
            "openapi": "3.0.3",
            "info": { "title": "Pets API", "version": "1", "description": "All about *pets*." },
            "tags": [{ "name": "pets", "description": "Everything about your pets." }, { "name": "unused" }],
            "paths": {
                "/pets": {
                    "get": { "tags": ["pets"], "summary": "List" },
                    "post": { "tags": ["pets"] }
                },
                "/stores/{id}": { "get": { "tags": ["store \"front\""] } },
                "/health": { "get": {} }
            },
            "components": { "schemas": { "Pet": { "type": "object" }, "Error": {} } }
        })
    }

    #[test]
    fn a_page_per_tag_in_tag_order_then_models() {
        let pages = revision_pages(&spec(), "pets", true, "seed-1");
        let titles: Vec<&str> = pages.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["pets", "Other", "store \"front\"", "Models"]);
        let pets = pages[0].markdown().unwrap();
        assert!(pets.starts_with("Everything about your pets."), "{pets}");
        assert!(
            pets.contains("{% openapi-operation spec=\"pets\" path=\"/pets\" method=\"get\" %}"),
            "{pets}"
        );
        assert!(pets.contains("method=\"post\""), "{pets}");
        assert_eq!(
            pages[0].description.as_deref(),
            Some("Everything about your pets.")
        );
        let models = pages[3].markdown().unwrap();
        assert!(models.contains("schemas=\"Error,Pet\""), "{models}");
        // Every body reads back as the blocks it was made of.
        for p in &pages {
            let md = p.markdown().unwrap();
            assert_eq!(crate::markdown::normalize_markdown(md), md, "{}", p.title);
        }
        // The same seed names the same pages; another seed, others.
        let again = revision_pages(&spec(), "pets", true, "seed-1");
        assert_eq!(pages, again);
        let other = revision_pages(&spec(), "pets", false, "seed-2");
        assert_eq!(other.len(), 3);
        assert_ne!(other[0].id, pages[0].id);
        assert!(pages
            .iter()
            .all(|p| p.id.len() == 20 && p.id.chars().all(|c| c.is_ascii_alphanumeric())));
    }

    #[test]
    fn operations_past_the_cap_are_left_out() {
        let mut paths = Map::new();
        for i in 0..(MAX_OPERATIONS + 5) {
            paths.insert(format!("/p{i:05}"), json!({ "get": { "tags": ["t"] } }));
        }
        let doc = json!({ "openapi": "3.1.0", "paths": paths });
        let pages = tag_pages(&doc, "big");
        assert_eq!(
            pages[0].markdown.matches("openapi-operation spec").count(),
            MAX_OPERATIONS
        );
    }

    #[test]
    fn the_introduction_escapes_its_title() {
        let md = info_markdown(
            &json!({ "info": { "title": "A *bold* <b>API</b>", "description": "Hello." } }),
        );
        let doc = crate::markdown::markdown_to_document(&md);
        let text = serde_json::to_string(&doc).unwrap();
        assert!(text.contains("heading-1"), "{text}");
        assert!(text.contains("A *bold* <b>API</b>"), "{text}");
    }
}
