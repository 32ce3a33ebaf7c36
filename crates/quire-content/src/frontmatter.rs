//! Page-level markdown as Git Sync writes it: YAML frontmatter for the page properties, a
//! leading `# Title` heading for the title, then the body.
//!
//! The frontmatter is YAML 1.2, read with `saphyr-parser` (the maintained successor of
//! yaml-rust2); errors name the line and column. Nesting and alias expansion are bounded.

use crate::markdown::{default_ref, ref_href};
use crate::model::{ContentRef, Page, PageCover, PageKind, PageLayout, VariableValue, Variables};
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
    /// `vars`: the page's variables.
    pub vars: Option<Variables>,
    /// `tags`: the slugs of the tags the page carries.
    pub tags: Option<Vec<String>>,
    /// The first of `tags` written with `primary: true`; read only with `tags`.
    pub primary_tag: Option<String>,
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
#[error("frontmatter line {line}, column {column}: {message}")]
pub struct FrontmatterError {
    /// One-based line in the page's markdown (the frontmatter starts on line 2).
    pub line: usize,
    /// One-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// Splits page markdown into frontmatter, leading title heading and body.
pub fn split_page_markdown(md: &str) -> Result<PageSource, FrontmatterError> {
    let md = md.replace("\r\n", "\n");
    let (frontmatter, rest) = match md.strip_prefix("---\n") {
        Some(after) => match find_end(after) {
            Some((yaml, rest)) => (
                parse_frontmatter(yaml).map_err(|e| FrontmatterError {
                    line: e.line + 1,
                    ..e
                })?,
                rest.to_string(),
            ),
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

/// A YAML value of the frontmatter.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Yaml {
    /// A scalar: its text, and whether it was quoted or a block (always a string then).
    Scalar(String, bool),
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
            Yaml::Scalar(s, quoted) if *quoted || !matches!(s.as_str(), "~" | "null") => Some(s),
            _ => None,
        }
    }

    fn bool(&self) -> Option<bool> {
        match self {
            Yaml::Scalar(s, false) => match s.as_str() {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Most values one frontmatter may build, aliases expanded: `&a [*b, *b, …]` chains
/// ("billion laughs") would otherwise expand exponentially.
const MAX_YAML_NODES: usize = 10_000;

/// Most bytes that anchors and aliases may add to what the source itself holds: a long
/// anchored string repeated by aliases is a few values but gigabytes.
const MAX_YAML_EXPANSION: usize = 1 << 20;

fn err(line: usize, column: usize, message: impl Into<String>) -> FrontmatterError {
    FrontmatterError {
        line,
        column,
        message: message.into(),
    }
}

/// What values cost once built: how many, and how many bytes of text they hold.
#[derive(Clone, Copy, Default)]
struct Cost {
    nodes: usize,
    bytes: usize,
}

impl Cost {
    fn add(self, other: Cost) -> Cost {
        Cost {
            nodes: self.nodes.saturating_add(other.nodes),
            bytes: self.bytes.saturating_add(other.bytes),
        }
    }
}

/// Parses YAML into a tree with `saphyr-parser` (a YAML 1.2 parser), iteratively, with the
/// nesting bounded by [`MAX_DEPTH`](crate::limits::MAX_DEPTH) and what is built by
/// [`MAX_YAML_NODES`] values and the source's length plus [`MAX_YAML_EXPANSION`] bytes.
/// Every copy (an anchor kept, an alias expanded) is counted before it is made, so a bomb
/// stops at the first copy past a bound. Keys must be scalars; tags are not interpreted.
fn parse_yaml(src: &str) -> Result<Option<Yaml>, FrontmatterError> {
    use saphyr_parser::{Event, Parser, ScalarStyle};
    let max_bytes = src.len().saturating_add(MAX_YAML_EXPANSION);
    let mut stack: Vec<Open> = Vec::new();
    // What was built under each open collection, so an anchored one knows its own cost.
    let mut sizes: Vec<Cost> = Vec::new();
    let mut anchors: std::collections::HashMap<usize, (Yaml, Cost)> = Default::default();
    let mut total = Cost::default();
    let mut root: Option<Yaml> = None;
    let mut documents = 0;
    let check = |total: Cost, line: usize, col: usize| {
        if total.nodes > MAX_YAML_NODES {
            return Err(err(line, col, "too many values (aliases expand too much)"));
        }
        if total.bytes > max_bytes {
            return Err(err(
                line,
                col,
                format!(
                    "aliases expand the values past {} KiB more than the frontmatter holds",
                    MAX_YAML_EXPANSION / 1024
                ),
            ));
        }
        Ok(())
    };
    for item in Parser::new_from_str(src) {
        let (event, span) =
            item.map_err(|e| err(e.marker().line(), e.marker().col() + 1, e.info()))?;
        let (line, col) = (span.start.line(), span.start.col() + 1);
        let (value, cost, anchor) = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(err(line, col, "only one YAML document is allowed"));
                }
                continue;
            }
            Event::Scalar(text, style, anchor, _) => {
                let quoted = !matches!(style, ScalarStyle::Plain);
                let cost = Cost {
                    nodes: 1,
                    bytes: text.len(),
                };
                (Yaml::Scalar(text.into_owned(), quoted), cost, anchor)
            }
            Event::Alias(id) => {
                let (v, cost) = anchors
                    .get(&id)
                    .ok_or_else(|| err(line, col, "unknown alias"))?;
                // Counted before cloning: an expansion past a bound is never made.
                check(total.add(*cost), line, col)?;
                (v.clone(), *cost, 0)
            }
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                if stack.len() >= crate::limits::MAX_DEPTH {
                    return Err(err(line, col, "values are nested too deeply"));
                }
                stack.push(match event {
                    Event::MappingStart(..) => Open::Map(Vec::new(), None, anchor),
                    _ => Open::List(Vec::new(), anchor),
                });
                sizes.push(Cost::default());
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let (v, anchor) = match stack.pop() {
                    Some(Open::Map(m, _, anchor)) => (Yaml::Map(m), anchor),
                    Some(Open::List(l, anchor)) => (Yaml::List(l), anchor),
                    None => continue,
                };
                // Its values were counted as they came; only the collection itself is new.
                let inner = sizes.pop().unwrap_or_default();
                let own = Cost { nodes: 1, bytes: 0 };
                total = total.add(own);
                check(total, line, col)?;
                if let Some(parent) = sizes.last_mut() {
                    *parent = parent.add(inner).add(own);
                }
                if anchor > 0 {
                    // Keeping a copy costs as much as the values copied: anchors nested in
                    // anchors would otherwise copy one large value once per level.
                    let cost = inner.add(own);
                    total = total.add(cost);
                    check(total, line, col)?;
                    anchors.insert(anchor, (v.clone(), cost));
                }
                attach(&mut stack, &mut root, v, line, col)?;
                continue;
            }
            _ => continue,
        };
        total = total.add(cost);
        check(total, line, col)?;
        if let Some(parent) = sizes.last_mut() {
            *parent = parent.add(cost);
        }
        if anchor > 0 {
            total = total.add(cost);
            check(total, line, col)?;
            anchors.insert(anchor, (value.clone(), cost));
        }
        attach(&mut stack, &mut root, value, line, col)?;
    }
    Ok(root)
}

/// A collection being read: a map (with the key waiting for its value) or a list, each
/// with its anchor id (0: none).
enum Open {
    Map(Vec<(String, Yaml)>, Option<String>, usize),
    List(Vec<Yaml>, usize),
}

/// Puts a finished value in its parent (or makes it the root).
fn attach(
    stack: &mut [Open],
    root: &mut Option<Yaml>,
    value: Yaml,
    line: usize,
    col: usize,
) -> Result<(), FrontmatterError> {
    match stack.last_mut() {
        None => *root = Some(value),
        Some(Open::List(l, _)) => l.push(value),
        Some(Open::Map(m, key, _)) => match key.take() {
            None => match value {
                Yaml::Scalar(k, _) => *key = Some(k),
                _ => return Err(err(line, col, "keys must be plain values")),
            },
            Some(k) => m.push((k, value)),
        },
    }
    Ok(())
}

/// Variables from a YAML map of names to plain values (strings, numbers, booleans).
fn variables(map: &Yaml) -> Result<Variables, FrontmatterError> {
    let Yaml::Map(entries) = map else {
        return Err(err(1, 1, "variables must be a map of names to values"));
    };
    let mut out = Variables::new();
    for (k, v) in entries {
        let value = match v {
            Yaml::Scalar(s, true) => VariableValue::String(s.clone()),
            Yaml::Scalar(s, false) => match v.bool() {
                Some(b) => VariableValue::Bool(b),
                None => match s.parse::<serde_json::Number>() {
                    Ok(n) => VariableValue::Number(n),
                    Err(_) => VariableValue::String(s.clone()),
                },
            },
            _ => return Err(err(1, 1, format!("variable `{k}` must be a plain value"))),
        };
        out.insert(k.clone(), value);
    }
    Ok(out)
}

/// The space's variables from Git Sync's `.gitbook/vars.yaml` (a map of names to values).
pub fn parse_space_variables(yaml: &str) -> Result<Variables, FrontmatterError> {
    match parse_yaml(yaml)? {
        None => Ok(Variables::new()),
        Some(map) => variables(&map),
    }
}

/// Git Sync's `.gitbook/tags.yaml`: a list of tags, each `tag` (its slug), `label`, and
/// optionally `icon` and `color`.
pub fn parse_tags(yaml: &str) -> Result<Vec<crate::model::Tag>, FrontmatterError> {
    let items = match parse_yaml(yaml)? {
        None => return Ok(Vec::new()),
        Some(Yaml::List(items)) => items,
        Some(_) => return Err(err(1, 1, "must be a list of tags")),
    };
    items
        .iter()
        .map(|item| {
            let field = |k: &str| item.get(k).and_then(Yaml::str).map(str::to_string);
            let slug = field("tag")
                .filter(|s| !s.is_empty())
                .ok_or_else(|| err(1, 1, "every tag needs its `tag` (slug)"))?;
            Ok(crate::model::Tag {
                label: field("label").unwrap_or_else(|| slug.clone()),
                slug,
                icon: field("icon"),
                color: field("color"),
            })
        })
        .collect()
}

/// The `redirects:` of Git Sync's `.gitbook.yaml`: `(old path, file)` pairs, in order, from a
/// map of old paths to the markdown files now at them. Other keys are not read.
pub fn parse_git_redirects(yaml: &str) -> Result<Vec<(String, String)>, FrontmatterError> {
    let Some(Yaml::Map(root)) = parse_yaml(yaml)? else {
        return Ok(Vec::new());
    };
    let Some((_, redirects)) = root.iter().find(|(k, _)| k == "redirects") else {
        return Ok(Vec::new());
    };
    let Yaml::Map(entries) = redirects else {
        return Err(err(1, 1, "`redirects` must be a map of old paths to files"));
    };
    entries
        .iter()
        .map(|(from, to)| match to {
            Yaml::Scalar(to, _) => Ok((from.clone(), to.clone())),
            _ => Err(err(1, 1, format!("redirect `{from}` must name one file"))),
        })
        .collect()
}

fn parse_frontmatter(yaml: &str) -> Result<Frontmatter, FrontmatterError> {
    let root = match parse_yaml(yaml)? {
        None => Yaml::Map(Vec::new()),
        Some(r @ Yaml::Map(_)) => r,
        Some(_) => return Err(err(1, 1, "frontmatter must be a map of `key: value`")),
    };
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
        vars: None,
        tags: None,
        primary_tag: None,
    };
    // Each tag as GitBook writes it (`- tag: new`, with `primary`) or as a plain slug; an
    // entry of another shape is left to the file, which keeps it.
    if let Some(tags) = root.get("tags") {
        let slug = |t: &Yaml| {
            t.str()
                .or_else(|| t.get("tag").and_then(Yaml::str))
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let items = match tags {
            Yaml::List(items) => items.iter().collect(),
            other => vec![other],
        };
        fm.primary_tag = items
            .iter()
            .find(|t| t.get("primary").and_then(Yaml::bool) == Some(true))
            .and_then(|t| slug(t));
        fm.tags = Some(items.into_iter().filter_map(slug).collect());
    }
    if let Some(vars) = root.get("vars") {
        fm.vars = Some(variables(vars)?);
    }
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
            l.cover_size = match size {
                "full" | "background" => size.into(),
                _ => "hero".into(),
            };
        }
        if let Some(mask) = layout
            .get("cover")
            .and_then(|c| c.get("mask"))
            .and_then(Yaml::str)
        {
            l.cover_mask = if mask == "radial" { "radial" } else { "none" }.into();
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
            height: s("coverHeight")
                .and_then(|h| h.parse::<f64>().ok())
                .map(|h| (h.round() as i64).clamp(10, 700)),
        });
    }
    Ok(fm)
}

/// Quotes a YAML scalar when a plain one would be read differently.
pub(crate) fn yaml_str(s: &str) -> String {
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
    if !page.tags.is_empty() {
        lines.push("tags:".into());
        for t in &page.tags {
            lines.push(format!("  - tag: {}", yaml_str(t)));
            if page.primary_tag.as_ref() == Some(t) {
                lines.push("    primary: true".into());
            }
        }
    }
    if let PageKind::Document(doc) = &page.kind {
        if let Some(cover) = &doc.cover {
            if let Some(r) = &cover.reference {
                lines.push(format!("cover: {}", yaml_str(&ref_href(r))));
                lines.push(format!("coverY: {}", cover.y_pos));
                if let Some(h) = cover.height {
                    lines.push(format!("coverHeight: {h}"));
                }
            }
        }
        if !doc.variables.is_empty() {
            lines.push("vars:".into());
            for (k, v) in &doc.variables {
                let v = match v {
                    VariableValue::String(s) => yaml_str(s),
                    VariableValue::Bool(b) => b.to_string(),
                    VariableValue::Number(n) => n.to_string(),
                };
                lines.push(format!("  {}: {v}", yaml_str(k)));
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
            if l.cover_mask != "none" {
                lines.push(format!("    mask: {}", l.cover_mask));
            }
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
    if let Some(tags) = &fm.tags {
        page.tags = tags.clone();
        page.primary_tag = fm.primary_tag.clone();
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
        if let Some(v) = &fm.vars {
            doc.variables = v.clone();
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
    fn cover_size_mask_and_height_are_read_and_written_back() {
        let md = "---\ncover: .gitbook/assets/hero.png\ncoverY: 0\ncoverHeight: 461\nlayout:\n  width: wide\n  cover:\n    visible: true\n    size: background\n    mask: radial\n---\n\n# Home\n";
        let src = split_page_markdown(md).unwrap();
        let layout = src.frontmatter.layout.clone().unwrap();
        assert_eq!(layout.cover_size, "background");
        assert_eq!(layout.cover_mask, "radial");
        assert_eq!(src.frontmatter.cover.as_ref().unwrap().height, Some(461));
        let mut page = Page::document("p", "Home", "home", "");
        apply_frontmatter(&mut page, &src.frontmatter);
        let written = render_frontmatter(&page);
        for line in [
            "coverHeight: 461",
            "    size: background",
            "    mask: radial",
        ] {
            assert!(written.contains(line), "{line} in {written}");
        }
        let again = split_page_markdown(&written).unwrap();
        assert_eq!(again.frontmatter.layout, src.frontmatter.layout);
        assert_eq!(again.frontmatter.cover, src.frontmatter.cover);
    }

    #[test]
    fn tags_are_read_and_written_back() {
        let src = split_page_markdown("---\ntags:\n  - beta\n  - add-on\n---\n\n# Home\n").unwrap();
        assert_eq!(
            src.frontmatter.tags,
            Some(vec!["beta".into(), "add-on".into()])
        );
        let mut page = Page::document("p", "Home", "home", "");
        apply_frontmatter(&mut page, &src.frontmatter);
        assert_eq!(page.tags, ["beta", "add-on"]);
        let again = split_page_markdown(&render_frontmatter(&page)).unwrap();
        assert_eq!(again.frontmatter.tags, src.frontmatter.tags);
        let tags = parse_tags(
            "- tag: new\n  label: New\n  icon: sparkles\n  color: $primary\n- tag: beta\n",
        )
        .unwrap();
        assert_eq!(tags[0].label, "New");
        assert_eq!(tags[0].color.as_deref(), Some("$primary"));
        assert_eq!(tags[1].label, "beta");
        assert!(parse_tags("tag: one\n").is_err());
        // GitBook's own form, with a primary tag.
        let src =
            split_page_markdown("---\ntags:\n  - tag: new\n    primary: true\n---\nx\n").unwrap();
        assert_eq!(src.frontmatter.tags, Some(vec!["new".into()]));
        assert!(render_frontmatter(&page).contains("tags:\n  - tag: beta\n  - tag: add-on\n"));
    }

    #[test]
    fn a_primary_tag_is_read_and_written_back() {
        let md = "---\ntags:\n  - tag: beta\n  - tag: new\n    primary: true\n  - tag: add-on\n    primary: true\n---\n\n# Home\n";
        let src = split_page_markdown(md).unwrap();
        assert_eq!(
            src.frontmatter.tags,
            Some(vec!["beta".into(), "new".into(), "add-on".into()])
        );
        // The first entry marked primary is the page's primary tag.
        assert_eq!(src.frontmatter.primary_tag.as_deref(), Some("new"));
        let mut page = Page::document("p", "Home", "home", "");
        apply_frontmatter(&mut page, &src.frontmatter);
        assert_eq!(page.tags, ["beta", "new", "add-on"]);
        assert_eq!(page.primary_tag.as_deref(), Some("new"));
        let written = render_frontmatter(&page);
        assert!(
            written.contains(
                "tags:\n  - tag: beta\n  - tag: new\n    primary: true\n  - tag: add-on\n"
            ),
            "{written}"
        );
        let again = split_page_markdown(&written).unwrap();
        assert_eq!(again.frontmatter.tags, src.frontmatter.tags);
        assert_eq!(again.frontmatter.primary_tag, src.frontmatter.primary_tag);
        // `primary: false`, or none: no primary tag; new tags replace the primary one too.
        let src =
            split_page_markdown("---\ntags:\n  - tag: beta\n    primary: false\n---\nx\n").unwrap();
        assert_eq!(src.frontmatter.primary_tag, None);
        apply_frontmatter(&mut page, &src.frontmatter);
        assert_eq!(
            (&page.tags[..], &page.primary_tag),
            (&["beta".to_string()][..], &None)
        );
        assert!(!render_frontmatter(&page).contains("primary"));
        // Frontmatter without `tags` leaves both as they were.
        page.primary_tag = Some("beta".into());
        let src = split_page_markdown("---\nhidden: true\n---\nx\n").unwrap();
        apply_frontmatter(&mut page, &src.frontmatter);
        assert_eq!(page.primary_tag.as_deref(), Some("beta"));
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
        assert_eq!(e.line, 2);
    }

    #[test]
    fn yaml_is_read_by_a_yaml_parser() {
        // YAML escapes that are not JSON's (`\_` is a no-break space), block scalars,
        // comments, flow collections, page variables.
        let src = split_page_markdown(
            "---\ndescription: \"A \\_ B \\x41\"\nicon: >-\n  book\n  open\n# note\nhidden: yes\nvars:\n  version: v1.2\n  count: 3\n  beta: true\n  quoted: \"true\"\ntags: [a, b]\n---\nBody\n",
        )
        .unwrap();
        let fm = &src.frontmatter;
        assert_eq!(fm.description.as_deref(), Some("A \u{a0} B A"));
        assert_eq!(fm.icon.as_deref(), Some("book open"));
        // YAML 1.2: `yes` is a string, not a boolean.
        assert_eq!(fm.hidden, None);
        let vars = fm.vars.as_ref().unwrap();
        assert_eq!(vars["version"], VariableValue::String("v1.2".into()));
        assert_eq!(vars["count"], VariableValue::Number(3.into()));
        assert_eq!(vars["beta"], VariableValue::Bool(true));
        assert_eq!(vars["quoted"], VariableValue::String("true".into()));
    }

    #[test]
    fn space_variables() {
        let vars =
            parse_space_variables("food: apple\nlatest_version: v3.0.4\nyear: 2026\n").unwrap();
        assert_eq!(vars["food"], VariableValue::String("apple".into()));
        assert_eq!(vars["year"], VariableValue::Number(2026.into()));
        assert!(parse_space_variables("- a\n").is_err());
        assert!(parse_space_variables("").unwrap().is_empty());
    }

    #[test]
    fn invalid_yaml_names_line_and_column() {
        let e = split_page_markdown("---\ndescription: ok\nicon: [unclosed\n---\nx\n").unwrap_err();
        assert!(e.line >= 3, "{e}");
        assert!(e.column >= 1);
        assert!(e.to_string().starts_with("frontmatter line "), "{e}");
        let e = split_page_markdown("---\na: b\n  c: d\n---\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_bounded() {
        let mut bomb = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let prev = format!("*a{}", i - 1);
            bomb.push_str(&format!(
                "a{i}: &a{i} [{}]\n",
                [prev.as_str(); 10].join(", ")
            ));
        }
        bomb.push_str("---\n");
        let e = split_page_markdown(&bomb).unwrap_err();
        assert!(e.message.contains("aliases"), "{e}");
        // Few values but many bytes: one long anchored string repeated by aliases.
        let long = "x".repeat(256 * 1024);
        let strings = format!(
            "---
s: &s {long}
l: [{}]
---
",
            ["*s"; 3000].join(", ")
        );
        let e = split_page_markdown(&strings).unwrap_err();
        assert!(e.message.contains("aliases"), "{e}");
        assert_eq!(
            e.line, 3,
            "the error names the line of the alias past the bound: {e}"
        );
        // Anchors nested in anchors copy the inner value once per level: counted too.
        let mut nested = format!(
            "---
a0: &a0 [{long}]
"
        );
        for i in 1..8 {
            nested.push_str(&format!(
                "a{i}: &a{i} [*a{}]
",
                i - 1
            ));
        }
        nested.push_str(
            "---
",
        );
        assert!(split_page_markdown(&nested).is_err());
        // Ordinary use of anchors stays accepted.
        let fine = "---
d: &d Shared text
title: *d
description: *d
---
Body
";
        let page = split_page_markdown(fine).unwrap();
        assert_eq!(page.frontmatter.description.as_deref(), Some("Shared text"));
        let deep = format!("---\na: {}{}\n---\n", "[".repeat(5000), "]".repeat(5000));
        let r = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || split_page_markdown(&deep).map(|_| ()))
            .unwrap()
            .join()
            .unwrap();
        let e = r.unwrap_err();
        assert!(
            e.message.contains("nested too deeply") || e.message.contains("recursion"),
            "{e}"
        );
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
