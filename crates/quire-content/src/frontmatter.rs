//! Page-level markdown as Git Sync writes it: YAML frontmatter for the page properties, a
//! leading `# Title` heading for the title, then the body.
//!
//! Only the small YAML subset GitBook emits is understood (nested maps, plain and quoted
//! scalars, `>-`/`|` block scalars); this avoids depending on an unmaintained YAML crate.

use crate::markdown::{default_ref, ref_href};
use crate::model::{ContentRef, Page, PageCover, PageKind, PageLayout};
use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};

/// Page properties read from frontmatter; `None` means "not given".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frontmatter {
    /// `title`.
    pub title: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `icon`.
    pub icon: Option<String>,
    /// `emoji`.
    pub emoji: Option<String>,
    /// `hidden`.
    pub hidden: Option<bool>,
    /// `noIndex`.
    pub no_index: Option<bool>,
    /// `noRobotsIndex`.
    pub no_robots_index: Option<bool>,
    /// `if`: the adaptive-content condition.
    pub condition: Option<String>,
    /// `layout`, applied over the defaults.
    pub layout: Option<PageLayout>,
    /// `cover` and `coverY`.
    pub cover: Option<PageCover>,
}

/// A page's markdown split into its parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageSource {
    /// Properties from the frontmatter.
    pub frontmatter: Frontmatter,
    /// Text of the leading level-1 heading, which Git Sync uses as the title.
    pub heading: Option<String>,
    /// The rest of the markdown.
    pub body: String,
}

/// Malformed frontmatter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("frontmatter line {line}: {message}")]
pub struct FrontmatterError {
    /// One-based line number within the frontmatter.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Splits page markdown into frontmatter, leading title heading and body.
pub fn split_page_markdown(md: &str) -> Result<PageSource, FrontmatterError> {
    let md = md.replace("\r\n", "\n");
    let (frontmatter, rest) = match md.strip_prefix("---\n") {
        Some(after) => match find_end(after) {
            Some((yaml, rest)) => (parse_frontmatter(yaml)?, rest.to_string()),
            None => (Frontmatter::default(), md.clone()),
        },
        None => (Frontmatter::default(), md.clone()),
    };
    let (heading, body) = leading_title(&rest);
    Ok(PageSource {
        frontmatter,
        heading,
        body,
    })
}

fn find_end(after: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in after.split_inclusive('\n') {
        let t = line.trim_end();
        if t == "---" || t == "..." {
            return Some((&after[..offset], &after[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

fn leading_title(md: &str) -> (Option<String>, String) {
    let mut events = Parser::new_ext(md, pulldown_cmark::Options::empty()).into_offset_iter();
    let Some((
        Event::Start(Tag::Heading {
            level: HeadingLevel::H1,
            ..
        }),
        _,
    )) = events.next()
    else {
        return (None, md.to_string());
    };
    let mut title = String::new();
    for (e, range) in events {
        match e {
            Event::Text(t) | Event::Code(t) => title.push_str(&t),
            Event::SoftBreak | Event::HardBreak => title.push(' '),
            Event::End(TagEnd::Heading(_)) => {
                let body = md[range.end..].trim_start_matches('\n').to_string();
                return (Some(title.trim().to_string()), body);
            }
            _ => {}
        }
    }
    (None, md.to_string())
}

/// A node of the YAML subset.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Yaml {
    Scalar(String),
    Map(Vec<(String, Yaml)>),
    List(Vec<Yaml>),
}

impl Yaml {
    fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Yaml::Scalar(s) => Some(s),
            _ => None,
        }
    }

    fn bool(&self) -> Option<bool> {
        match self.str()? {
            "true" | "True" | "yes" => Some(true),
            "false" | "False" | "no" => Some(false),
            _ => None,
        }
    }
}

struct Lines<'a> {
    lines: Vec<&'a str>,
    at: usize,
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

fn err(line: usize, message: &str) -> FrontmatterError {
    FrontmatterError {
        line: line + 1,
        message: message.into(),
    }
}

impl Lines<'_> {
    fn skip_blank(&mut self) {
        while self.at < self.lines.len() && is_blank(self.lines[self.at]) {
            self.at += 1;
        }
    }

    /// A map at `indent`, nested `depth` levels deep (bounded: maps nest by recursion).
    fn map(&mut self, indent: usize, depth: usize) -> Result<Yaml, FrontmatterError> {
        if depth > crate::limits::MAX_DEPTH {
            return Err(err(self.at, "maps are nested too deeply"));
        }
        let mut out = Vec::new();
        loop {
            self.skip_blank();
            if self.at >= self.lines.len() {
                break;
            }
            let line = self.lines[self.at];
            let ind = indent_of(line);
            if ind < indent {
                break;
            }
            if ind > indent {
                return Err(err(self.at, "unexpected indentation"));
            }
            let text = line.trim();
            let Some((key, rest)) = split_key(text) else {
                return Err(err(self.at, "expected `key: value`"));
            };
            let line_no = self.at;
            self.at += 1;
            let rest = rest.trim();
            let value = if rest.is_empty() {
                self.skip_blank();
                match self.lines.get(self.at) {
                    Some(next)
                        if indent_of(next) > indent && next.trim_start().starts_with("- ") =>
                    {
                        self.list(indent_of(next))?
                    }
                    Some(next) if indent_of(next) > indent => {
                        self.map(indent_of(next), depth + 1)?
                    }
                    _ => Yaml::Scalar(String::new()),
                }
            } else if matches!(rest, ">" | ">-" | ">+" | "|" | "|-" | "|+") {
                self.block_scalar(indent, rest)
            } else {
                Yaml::Scalar(scalar(rest).map_err(|m| err(line_no, &m))?)
            };
            out.push((key.to_string(), value));
        }
        Ok(Yaml::Map(out))
    }

    fn list(&mut self, indent: usize) -> Result<Yaml, FrontmatterError> {
        let mut out = Vec::new();
        loop {
            self.skip_blank();
            let Some(line) = self.lines.get(self.at) else {
                break;
            };
            if indent_of(line) != indent || !line.trim_start().starts_with("- ") {
                break;
            }
            let item = line.trim_start()[2..].trim();
            out.push(Yaml::Scalar(scalar(item).map_err(|m| err(self.at, &m))?));
            self.at += 1;
        }
        Ok(Yaml::List(out))
    }

    fn block_scalar(&mut self, indent: usize, style: &str) -> Yaml {
        let mut parts: Vec<&str> = Vec::new();
        let mut block_indent = None;
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            if line.trim().is_empty() {
                parts.push("");
                self.at += 1;
                continue;
            }
            let ind = indent_of(line);
            if ind <= indent {
                break;
            }
            let bi = *block_indent.get_or_insert(ind);
            parts.push(line.get(bi.min(ind)..).unwrap_or(""));
            self.at += 1;
        }
        while parts.last() == Some(&"") {
            parts.pop();
        }
        let text = if style.starts_with('>') {
            // Folded: single newlines become spaces, blank lines become newlines.
            let mut out = String::new();
            for p in &parts {
                if p.is_empty() {
                    out.push('\n');
                } else {
                    if !out.is_empty() && !out.ends_with('\n') {
                        out.push(' ');
                    }
                    out.push_str(p);
                }
            }
            out
        } else {
            parts.join("\n")
        };
        // Chomping indicators are ignored: page properties never end with a newline.
        Yaml::Scalar(text.trim_end_matches('\n').to_string())
    }
}

fn split_key(text: &str) -> Option<(&str, &str)> {
    let (key, rest) = if let Some(stripped) = text.strip_prefix('"') {
        let end = stripped.find('"')?;
        (&stripped[..end], stripped[end + 1..].strip_prefix(':')?)
    } else {
        let colon = text
            .find(": ")
            .or_else(|| text.strip_suffix(':').map(|t| t.len()))?;
        (&text[..colon], &text[colon + 1..])
    };
    Some((key.trim(), rest))
}

fn scalar(raw: &str) -> Result<String, String> {
    if raw.starts_with('"') {
        // YAML double-quoted strings use JSON-compatible escapes for what Git Sync writes.
        let end = raw
            .rfind('"')
            .filter(|e| *e > 0)
            .ok_or("unterminated string")?;
        return serde_json::from_str::<String>(&raw[..=end]).map_err(|e| e.to_string());
    }
    if let Some(inner) = raw.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'').ok_or("unterminated string")?;
        return Ok(inner.replace("''", "'"));
    }
    let value = match raw.find(" #") {
        Some(i) => &raw[..i],
        None => raw,
    };
    Ok(value.trim().to_string())
}

fn parse_frontmatter(yaml: &str) -> Result<Frontmatter, FrontmatterError> {
    let mut lines = Lines {
        lines: yaml.lines().collect(),
        at: 0,
    };
    let root = lines.map(0, 1)?;
    let s = |k: &str| root.get(k).and_then(Yaml::str).map(str::to_string);
    let b = |k: &str| root.get(k).and_then(Yaml::bool);
    let mut fm = Frontmatter {
        title: s("title"),
        description: s("description"),
        icon: s("icon"),
        emoji: s("emoji"),
        hidden: b("hidden"),
        no_index: b("noIndex"),
        no_robots_index: b("noRobotsIndex"),
        condition: s("if"),
        layout: None,
        cover: None,
    };
    if let Some(layout) = root.get("layout") {
        let mut l = PageLayout::default();
        let visible = |k: &str| {
            layout
                .get(k)
                .and_then(|v| v.get("visible").or(Some(v)))
                .and_then(Yaml::bool)
        };
        if let Some(w) = layout.get("width").and_then(Yaml::str) {
            l.width = if w == "wide" {
                "wide".into()
            } else {
                "default".into()
            };
        }
        if let Some(size) = layout
            .get("cover")
            .and_then(|c| c.get("size"))
            .and_then(Yaml::str)
        {
            l.cover_size = if size == "full" {
                "full".into()
            } else {
                "hero".into()
            };
        }
        for (key, field) in [
            ("cover", &mut l.cover),
            ("title", &mut l.title),
            ("description", &mut l.description),
            ("tableOfContents", &mut l.table_of_contents),
            ("outline", &mut l.outline),
            ("pagination", &mut l.pagination),
            ("metadata", &mut l.metadata),
            ("tags", &mut l.tags),
            ("actions", &mut l.actions),
            ("anchors", &mut l.anchors),
        ] {
            if let Some(v) = visible(key) {
                *field = v;
            }
        }
        fm.layout = Some(l);
    }
    if let Some(cover) = s("cover").filter(|c| !c.is_empty()) {
        let reference = match default_ref(&cover) {
            r @ (ContentRef::File { .. } | ContentRef::Url { .. }) => r,
            _ => ContentRef::Url { url: cover },
        };
        fm.cover = Some(PageCover {
            reference: Some(reference),
            ref_dark: None,
            y_pos: s("coverY").and_then(|y| y.parse().ok()).unwrap_or(0),
        });
    }
    Ok(fm)
}

/// Quotes a YAML scalar when a plain one would be read differently.
fn yaml_str(s: &str) -> String {
    let plain_ok = !s.is_empty()
        && !s.starts_with([
            ' ', '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"',
            '%', '@', '`',
        ])
        && !s.ends_with(' ')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.contains('\n')
        && !matches!(
            s,
            "true" | "false" | "True" | "False" | "yes" | "no" | "null" | "~"
        )
        && s.parse::<f64>().is_err();
    if plain_ok {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("strings serialise")
    }
}

/// The frontmatter block (with its `---` fences) describing a page's properties, or an
/// empty string when every property has its default value.
pub fn render_frontmatter(page: &Page) -> String {
    let mut lines: Vec<String> = Vec::new();
    if let Some(d) = &page.description {
        lines.push(format!("description: {}", yaml_str(d)));
    }
    if let Some(i) = &page.icon {
        lines.push(format!("icon: {}", yaml_str(i)));
    }
    if let Some(e) = &page.emoji {
        lines.push(format!("emoji: {}", yaml_str(e)));
    }
    if page.hidden {
        lines.push("hidden: true".into());
    }
    if page.no_index {
        lines.push("noIndex: true".into());
    }
    if page.no_robots_index {
        lines.push("noRobotsIndex: true".into());
    }
    if let Some(c) = &page.condition {
        lines.push(format!("if: {}", yaml_str(c)));
    }
    if let PageKind::Document(doc) = &page.kind {
        if let Some(cover) = &doc.cover {
            if let Some(r) = &cover.reference {
                lines.push(format!("cover: {}", yaml_str(&ref_href(r))));
                lines.push(format!("coverY: {}", cover.y_pos));
            }
        }
        if doc.layout != PageLayout::default() {
            let l = &doc.layout;
            lines.push("layout:".into());
            lines.push(format!("  width: {}", l.width));
            lines.push(format!(
                "  cover:\n    visible: {}\n    size: {}",
                l.cover, l.cover_size
            ));
            for (k, v) in [
                ("title", l.title),
                ("description", l.description),
                ("tableOfContents", l.table_of_contents),
                ("outline", l.outline),
                ("pagination", l.pagination),
                ("metadata", l.metadata),
                ("tags", l.tags),
                ("actions", l.actions),
                ("anchors", l.anchors),
            ] {
                lines.push(format!("  {k}:\n    visible: {v}"));
            }
        }
    }
    if lines.is_empty() {
        String::new()
    } else {
        format!("---\n{}\n---\n\n", lines.join("\n"))
    }
}

/// A document page as Git Sync markdown: frontmatter, `# Title`, body.
pub fn page_to_markdown(page: &Page) -> String {
    let body = page.markdown().unwrap_or("");
    // The title is the page's `#` heading; the body's headings start at `##`.
    let heading = crate::markdown::normalize_markdown(&format!("## {}", title_source(&page.title)));
    let title = heading.strip_prefix('#').unwrap_or(&heading);
    let mut out = render_frontmatter(page);
    out.push_str(title);
    if !body.is_empty() {
        out.push('\n');
        out.push_str(body);
    }
    out
}

/// The title as heading text, with markdown characters escaped so it reads back verbatim.
fn title_source(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(if c == '\n' { ' ' } else { c });
    }
    out
}

/// Applies frontmatter properties to a page (only those given).
pub fn apply_frontmatter(page: &mut Page, fm: &Frontmatter) {
    let set = |field: &mut Option<String>, v: &Option<String>| {
        if let Some(v) = v {
            *field = if v.is_empty() { None } else { Some(v.clone()) };
        }
    };
    if let Some(t) = fm.title.as_ref().filter(|t| !t.is_empty()) {
        page.title = t.clone();
    }
    set(&mut page.description, &fm.description);
    set(&mut page.icon, &fm.icon);
    set(&mut page.emoji, &fm.emoji);
    set(&mut page.condition, &fm.condition);
    if let Some(h) = fm.hidden {
        page.hidden = h;
    }
    if let Some(v) = fm.no_index {
        page.no_index = v;
    }
    if let Some(v) = fm.no_robots_index {
        page.no_robots_index = v;
    }
    if let PageKind::Document(doc) = &mut page.kind {
        // Only touch the document when there is something to set: changing it copies it
        // if other revisions share it.
        if let Some(l) = &fm.layout {
            doc.layout = l.clone();
        }
        if let Some(c) = &fm.cover {
            doc.cover = Some(c.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_frontmatter_title_and_body() {
        let md = "---\ndescription: >-\n  A long\n  description\nicon: book-open\nhidden: true\nlayout:\n  width: wide\n  title:\n    visible: false\n---\n\n# Getting *started*\n\nBody text.\n";
        let src = split_page_markdown(md).unwrap();
        assert_eq!(
            src.frontmatter.description.as_deref(),
            Some("A long description")
        );
        assert_eq!(src.frontmatter.icon.as_deref(), Some("book-open"));
        assert_eq!(src.frontmatter.hidden, Some(true));
        let layout = src.frontmatter.layout.clone().unwrap();
        assert_eq!(layout.width, "wide");
        assert!(!layout.title);
        assert!(layout.outline);
        assert_eq!(src.heading.as_deref(), Some("Getting started"));
        assert_eq!(src.body, "Body text.\n");
    }

    #[test]
    fn no_frontmatter_no_heading() {
        let src = split_page_markdown("Just text\n").unwrap();
        assert_eq!(src.frontmatter, Frontmatter::default());
        assert_eq!(src.heading, None);
        assert_eq!(src.body, "Just text\n");
        let src = split_page_markdown("## Not a title\n").unwrap();
        assert_eq!(src.heading, None);
    }

    #[test]
    fn quoted_scalars_and_errors() {
        let src =
            split_page_markdown("---\ndescription: \"a: b\\nc\"\nicon: 'it''s'\n---\nx\n").unwrap();
        assert_eq!(src.frontmatter.description.as_deref(), Some("a: b\nc"));
        assert_eq!(src.frontmatter.icon.as_deref(), Some("it's"));
        let e = split_page_markdown("---\njust words\n---\n").unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn page_markdown_round_trips() {
        let mut page = Page::document("p", "C# & *stars*", "c", "Body.\n");
        page.description = Some("Says: hello".into());
        page.hidden = true;
        if let PageKind::Document(d) = &mut page.kind {
            d.layout.width = "wide".into();
            d.layout.pagination = false;
        }
        let md = page_to_markdown(&page);
        let src = split_page_markdown(&md).unwrap();
        assert_eq!(src.heading.as_deref(), Some("C# & *stars*"));
        assert_eq!(src.body, "Body.\n");
        let mut back = Page::document("p", "x", "c", &src.body);
        back.title = src.heading.clone().unwrap();
        apply_frontmatter(&mut back, &src.frontmatter);
        assert_eq!(back, page);
    }
}
