//! Splits a page into search sections at its top-level headings, so that a search index
//! can return the heading (anchor) where a match is.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use serde::Serialize;

use crate::document::{plain_text_apart, Element, Node};
use crate::markdown::markdown_to_document;

/// One search section of a page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Section {
    /// Heading anchor, unique in the page; empty for the text before the first heading.
    pub id: String,
    /// Heading text; empty for the text before the first heading.
    pub title: String,
    /// Heading level (1–3), 0 for the text before the first heading.
    pub level: u8,
    /// Plain text of the section's blocks, one block per line.
    pub body: String,
    /// The conditions of the `{% if %}` blocks its text lies in, outermost first: only a
    /// visitor for whom each holds may see it. Empty for text every visitor sees. The text
    /// of a heading's conditional blocks is a section of its own (same anchor and title),
    /// apart from the heading's other text.
    pub guard: Vec<String>,
    /// The byte ranges of `body` that are lines of code blocks, in order: search weighs
    /// code samples below prose.
    pub code: Vec<Range<usize>>,
}

/// GitBook-style anchor of a heading: lower-case ASCII letters and digits, spaces as
/// hyphens, other punctuation dropped.
pub fn heading_anchor(text: &str) -> String {
    let mut out = String::new();
    for c in text.trim().chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if c.is_whitespace() {
            out.push('-');
        } else {
            out.push_str(crate::model::transliterate(c));
        }
    }
    out
}

/// Appends `text` (whose code lines are `text_code`) to a section's `body` (whose code
/// lines are `code`), one block per line.
fn append(body: &mut String, code: &mut Vec<Range<usize>>, text: &str, text_code: &[Range<usize>]) {
    if text.is_empty() {
        return;
    }
    if !body.is_empty() {
        body.push('\n');
    }
    let at = body.len();
    body.push_str(text);
    code.extend(text_code.iter().map(|r| r.start + at..r.end + at));
}

/// The sections of a markdown body, in order.
pub fn sections(markdown: &str) -> Vec<Section> {
    let doc = markdown_to_document(markdown);
    let mut out: Vec<Section> = vec![Section {
        id: String::new(),
        title: String::new(),
        level: 0,
        body: String::new(),
        guard: Vec::new(),
        code: Vec::new(),
    }];
    // The section that the text of each heading's conditional blocks goes to, by the
    // heading's section and the conditions.
    let mut guarded: HashMap<(usize, Vec<String>), usize> = HashMap::new();
    let mut current = 0;
    let mut anchors = Anchors::default();
    for node in &doc.nodes {
        if let Some((e, level)) = heading(node) {
            let title = node.plain_text();
            let id = anchors.assign(e, &title);
            out.push(Section {
                id,
                title,
                level,
                body: String::new(),
                guard: Vec::new(),
                code: Vec::new(),
            });
            current = out.len() - 1;
            continue;
        }
        let (mut ifs, mut code) = (Vec::new(), Vec::new());
        let text = plain_text_apart(node, &mut ifs, &mut code);
        let section = &mut out[current];
        append(&mut section.body, &mut section.code, &text, &code);
        // Conditional blocks, nested ones after their parents: each one's own text (its
        // nested blocks set aside in turn) under its conditions.
        let mut pending: Vec<(Vec<String>, &Element)> =
            ifs.into_iter().rev().map(|e| (Vec::new(), e)).collect();
        while let Some((outer, e)) = pending.pop() {
            let mut guard = outer;
            guard.push(e.data_str("expression").unwrap_or("").to_string());
            let mut inner = Vec::new();
            let (mut text, mut text_code) = (String::new(), Vec::new());
            for child in e.children() {
                let mut code = Vec::new();
                let child = plain_text_apart(child, &mut inner, &mut code);
                append(&mut text, &mut text_code, &child, &code);
            }
            if !text.is_empty() {
                let at = *guarded.entry((current, guard.clone())).or_insert_with(|| {
                    let heading = &out[current];
                    let section = Section {
                        id: heading.id.clone(),
                        title: heading.title.clone(),
                        level: heading.level,
                        body: String::new(),
                        guard: guard.clone(),
                        code: Vec::new(),
                    };
                    out.push(section);
                    out.len() - 1
                });
                let section = &mut out[at];
                append(&mut section.body, &mut section.code, &text, &text_code);
            }
            pending.extend(inner.into_iter().rev().map(|e| (guard.clone(), e)));
        }
    }
    if out[0].body.is_empty() {
        out.remove(0);
    }
    out
}

/// A top-level heading block and its level (1–3): the blocks that start sections.
pub(crate) fn heading(node: &Node) -> Option<(&Element, u8)> {
    node.element()
        .filter(|e| e.kind.starts_with("heading-"))
        .map(|e| (e, e.kind[8..].parse::<u8>().unwrap_or(1)))
}

/// Gives headings their anchors in page order, unique in the page: the heading's own `id`
/// or the anchor of its text, then `-1`, `-2`… for repeats. Shared by search sections and
/// the HTML renderer, so that search results link to the rendered anchors.
#[derive(Default)]
pub(crate) struct Anchors {
    used: HashSet<String>,
    /// Per base anchor, the suffix to try next: used anchors only accumulate, so the first
    /// free suffix never goes down, and many equal headings cost linear time, not quadratic.
    next: HashMap<String, usize>,
}

impl Anchors {
    /// The anchor of heading `e` whose plain text is `title`.
    pub(crate) fn assign(&mut self, e: &Element, title: &str) -> String {
        let base = e
            .data_str("id")
            .map(str::to_string)
            .unwrap_or_else(|| heading_anchor(title));
        let base = if base.is_empty() {
            "section".to_string()
        } else {
            base
        };
        let id = if self.used.contains(&base) {
            let n = self.next.entry(base.clone()).or_insert(1);
            loop {
                let candidate = format!("{base}-{n}");
                *n += 1;
                if !self.used.contains(&candidate) {
                    break candidate;
                }
            }
        } else {
            base
        };
        self.used.insert(id.clone());
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_headings() {
        let md = "Intro text.\n\n## Install the CLI\n\nRun `npm i`.\n\n- one\n- two\n\n## Configure {#config}\n\n{% hint style=\"info\" %}\n### Not a section\n\nTip.\n{% endhint %}\n\n## Install the CLI\n\nAgain.\n";
        let s = sections(md);
        assert_eq!(s.len(), 4);
        assert_eq!(s[0].id, "");
        assert_eq!(s[0].body, "Intro text.");
        assert_eq!(s[1].id, "install-the-cli");
        assert_eq!(s[1].title, "Install the CLI");
        // Git Sync's `##` is the first heading level.
        assert_eq!(s[1].level, 1);
        assert_eq!(s[1].body, "Run npm i.\none\ntwo");
        assert_eq!(s[2].id, "config");
        assert_eq!(s[2].body, "Not a section\nTip.");
        assert_eq!(s[3].id, "install-the-cli-1");
    }

    #[test]
    fn code_lines_are_marked() {
        let md = "Send a request.\n\n```js\nfetch(url);\nrequest.send();\n```\n\n| a |\n| - |\n| cell |\n\n{% if visitor.claims.pro %}\nPro.\n\n```\npro_call()\n```\n{% endif %}\n";
        let s = sections(md);
        let code = |x: &Section| -> Vec<String> {
            x.code
                .iter()
                .map(|r| x.body[r.clone()].to_string())
                .collect()
        };
        assert_eq!(
            s[0].body,
            "Send a request.\nfetch(url);\nrequest.send();\ncell"
        );
        assert_eq!(code(&s[0]), ["fetch(url);", "request.send();"]);
        assert_eq!(s[1].guard, ["visitor.claims.pro"]);
        assert_eq!(code(&s[1]), ["pro_call()"]);
    }

    #[test]
    fn conditional_text_is_a_section_of_its_own() {
        let md = "Open intro.\n\n{% if visitor.claims.pro %}\nPro intro.\n{% endif %}\n\n## Setup\n\nRun it.\n\n{% if visitor.claims.pro %}\nPro walrus.\n\n{% hint style=\"info\" %}\n{% if visitor.claims.admin %}\nAdmin narwhal.\n{% endif %}\n{% endhint %}\n{% endif %}\n\nMore setup.\n\n{% if visitor.claims.pro %}\nPro again.\n{% endif %}\n";
        let s = sections(md);
        let shown: Vec<(&str, &str, Vec<&str>)> = s
            .iter()
            .map(|x| {
                (
                    x.id.as_str(),
                    x.body.as_str(),
                    x.guard.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("", "Open intro.", vec![]),
                ("", "Pro intro.", vec!["visitor.claims.pro"]),
                ("setup", "Run it.\nMore setup.", vec![]),
                (
                    "setup",
                    "Pro walrus.\nPro again.",
                    vec!["visitor.claims.pro"]
                ),
                (
                    "setup",
                    "Admin narwhal.",
                    vec!["visitor.claims.pro", "visitor.claims.admin"]
                ),
            ]
        );
        assert!(s
            .iter()
            .all(|x| x.guard.is_empty() || x.title == x.id.replace("setup", "Setup")));
    }

    #[test]
    fn anchors() {
        assert_eq!(heading_anchor("Hello, World!"), "hello-world");
        assert_eq!(heading_anchor("Café au lait"), "cafe-au-lait");
        assert_eq!(heading_anchor("snake_case and-dash"), "snake_case-and-dash");
        assert!(sections("").is_empty());
    }
}
