//! The HTML GitBook writes into Git Sync markdown (snippets of GitBook's own documentation
//! in `tests/fixtures/gitbook-html`): each comes back byte for byte from the document, is
//! read into nodes (or kept raw where the document has none) and renders as elements,
//! never as its escaped source.

use quire_content::document::Node;
use quire_content::html::{render_document, FileRef, Resolve};
use quire_content::markdown::{markdown_to_document, normalize_markdown};
use quire_content::model::ContentRef;

/// Resolves every file and page, so that every image and link is written.
struct Site;

impl Resolve for Site {
    fn page_url(&self, page_id: &str, anchor: Option<&str>) -> Option<String> {
        Some(match anchor {
            Some(a) => format!("/docs/{page_id}#{a}"),
            None => format!("/docs/{page_id}"),
        })
    }
    fn file(&self, file_id: &str) -> Option<FileRef> {
        Some(FileRef {
            url: format!("/files/{file_id}/image.png"),
            name: "image.png".into(),
            content_type: "image/png".into(),
            width: None,
            height: None,
        })
    }
    fn other(&self, _r: &ContentRef) -> Option<String> {
        None
    }
}

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/gitbook-html/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// How many raw paragraphs (content kept verbatim) are in `nodes`.
fn raw_blocks(nodes: &[Node]) -> usize {
    let mut n = 0;
    let mut stack: Vec<&Node> = nodes.iter().collect();
    while let Some(node) = stack.pop() {
        if let Node::Block(e) | Node::Inline(e) = node {
            if e.meta.as_ref().and_then(|m| m.get("raw")).is_some() {
                n += 1;
            }
            stack.extend(e.children());
            for f in e.fragments.iter().flatten() {
                stack.extend(&f.nodes);
            }
        }
    }
    n
}

/// The tags of `html` shown as text outside code (`&lt;` then a tag name).
fn escaped_tags(html: &str) -> Vec<String> {
    let mut text = String::new();
    let mut rest = html;
    while let Some(at) = rest.find("<code") {
        text.push_str(&rest[..at]);
        rest = match rest[at..].find("</code>") {
            Some(end) => &rest[at + end..],
            None => "",
        };
    }
    text.push_str(rest);
    text.match_indices("&lt;")
        .filter_map(|(i, _)| {
            let after = text[i + 4..].trim_start_matches('/');
            let name: String = after
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            name.starts_with(|c: char| c.is_ascii_alphabetic())
                .then_some(name)
        })
        .collect()
}

/// Checks one fixture: its round trip, its raw blocks, its rendering; returns the HTML.
fn check(name: &str, raw: usize, expected: &[&str]) -> String {
    let md = fixture(name);
    assert_eq!(normalize_markdown(&md), md, "{name}: round trip");
    let doc = markdown_to_document(&md);
    assert_eq!(raw_blocks(&doc.nodes), raw, "{name}: raw blocks");
    let html = render_document(&doc, &Site).html;
    assert_eq!(escaped_tags(&html), Vec::<String>::new(), "{name}: {html}");
    for e in expected {
        assert!(html.contains(e), "{name}: no {e} in {html}");
    }
    for bad in ["<script", " style=", "javascript:"] {
        assert!(!html.contains(bad), "{name}: {bad} in {html}");
    }
    let handler = html.match_indices(" on").any(|(i, _)| {
        let rest = &html[i + 3..];
        let name = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        name > 0 && rest[name..].starts_with('=')
    });
    assert!(!handler, "{name}: an event handler in {html}");
    html
}

#[test]
fn buttons() {
    check(
        "buttons.md",
        0,
        &[
            "<a href=\"../../ai-for-your-readers/gitbook-ai-assistant.md\" class=\"button button-primary\">Learn more about Assistant</a>",
            "<span class=\"button button-primary\">Search...</span>",
            "<span class=\"button button-primary\">Inactive button</span>",
            "class=\"button button-secondary\">Go to top</a>",
            "<p class=\"align-center\"><span class=\"button button-primary\">Ask a question...</span></p>",
        ],
    );
}

#[test]
fn figures_pictures_and_drawings() {
    check(
        "figures.md",
        0,
        &[
            "<figure class=\"image\"><img class=\"image\" src=\"../.gitbook/assets/25_03_31_gitbook_assistant@2x (1).png\" alt=\"GitBook Assistant\" loading=\"lazy\"><figcaption>The GitBook Assistant<br>and its panel</figcaption></figure>",
            "width=\"375\"",
            "<picture><source srcset=\"../../.gitbook/assets/dark.png\" media=\"(prefers-color-scheme: dark)\"><img class=\"image\" src=\"../../.gitbook/assets/light.png\"",
            "<picture><source srcset=\"../../.gitbook/assets/25_07_16_quick_find_1%20(1).svg\" media=\"(prefers-color-scheme: dark)\"><img class=\"inline-image\"",
            "<figure class=\"drawing\"><img class=\"drawing\" src=\"/files/drawing1/image.png\" alt=\"A diagram drawn in GitBook\"",
        ],
    );
}

#[test]
fn icons_marks_keys_and_breaks() {
    check(
        "inline.md",
        0,
        &[
            "<span class=\"icon\" data-icon=\"github\" aria-hidden=\"true\"></span>",
            "<mark class=\"color-orange\">This text is orange.</mark>",
            "<mark class=\"color-orange bg-purple\">line using an unordered list and color</mark>",
            "<kbd>⌘</kbd> + <kbd>I</kbd>",
            "native Mermaid blocks.<br></p>",
        ],
    );
}

#[test]
fn aligned_headings_and_paragraphs() {
    check(
        "aligned.md",
        0,
        &[
            "<h3 id=\"how-do-you-want-to-work\">How do you want to work?",
            "<p class=\"align-center\">The same docs, three ways in.",
        ],
    );
}

#[test]
fn expandables() {
    check(
        "details.md",
        0,
        &["<details class=\"expandable\"><summary>What is your policy around PII?</summary><p>Generally"],
    );
}

#[test]
fn cards_tables() {
    let html = check(
        "cards.md",
        0,
        &[
            "<div class=\"cards\">",
            "<span class=\"icon\" data-icon=\"hand-pointer\" aria-hidden=\"true\"></span>",
            "<a href=\"https://app.gitbook.com/s/2SyQSbIa1iYS7z6Dx5di/gitbook-api/api-reference\" class=\"mention\" rel=\"noopener noreferrer\">API reference</a>",
            ">Build a custom component</a>",
            "<span class=\"option\">CREATE</span>",
            "class=\"card-target\"",
        ],
    );
    assert!(!html.contains("<table"), "{html}");
}

#[test]
fn figures_in_list_items() {
    check(
        "list-figures.md",
        0,
        &[
            "<li><p>Click on the <strong>Integrations</strong> button in the top right from your site’s settings.<br></p><div class=\"images\"><figure class=\"image\"><img",
            "<figcaption>Register an app for the GitBook VA integration.</figcaption>",
        ],
    );
}

#[test]
fn html_without_a_node_is_kept_raw_and_sanitized() {
    check(
        "raw-legacy-hint.md",
        1,
        &[
            "<div class=\"raw\"><ul>",
            "<div class=\"hint hint-success\"><p><strong>Support handoff</strong> is a great way",
        ],
    );
}
