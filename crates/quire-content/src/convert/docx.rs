//! Word documents (`.docx`, Office Open XML) as one page: headings (by paragraph style),
//! paragraphs with bold, italic, strikethrough and code runs, bulleted and numbered lists
//! (from the numbering definitions), tables, images (the document's media become assets),
//! hyperlinks and code blocks (paragraphs in a code or preformatted style).
//!
//! The XML is read as a stream of events (quick-xml): no tree is built and nothing recurses.

use std::collections::HashMap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::archive::{read_zip, Bytes, Entry};
use super::{archive_key, escape_text, Asset, Bundle, ConvertError, Limits, SourcePage};

/// Converts a `.docx` file into a bundle of one page named `fallback_title` unless the
/// document has a title.
pub fn convert(
    bytes: Bytes,
    fallback_title: &str,
    limits: &Limits,
) -> Result<Bundle, ConvertError> {
    let entries = read_zip(bytes, limits)
        .map_err(|e| ConvertError::new(format!("is not a Word document: {}", e.0)))?;
    let text = |path: &str| -> Result<Option<String>, ConvertError> {
        entries
            .iter()
            .find(|e| e.path == path)
            .map(|e: &Entry| {
                let bytes = e.content.clone().document()?;
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            })
            .transpose()
    };
    let document = text("word/document.xml")?.ok_or_else(|| {
        ConvertError::new("is not a Word document: `word/document.xml` is missing")
    })?;
    let rels = text("word/_rels/document.xml.rels")?
        .map(|r| relationships(&r))
        .unwrap_or_default();
    let styles = text("word/styles.xml")?
        .map(|s| style_names(&s))
        .unwrap_or_default();
    let numbering = text("word/numbering.xml")?
        .map(|n| numbering_formats(&n))
        .unwrap_or_default();
    let core_title = text("docProps/core.xml")?.and_then(|c| core_title(&c));
    let mut conv = Converter {
        rels,
        styles,
        numbering,
        ..Converter::default()
    };
    conv.run(&document)?;
    let title = core_title
        .or(conv.title.take())
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| fallback_title.to_string());
    let assets = entries
        .into_iter()
        .filter(|e| e.path.starts_with("word/media/"))
        .map(|e| Asset {
            key: archive_key(&e.path),
            name: e.path.rsplit('/').next().unwrap_or("image").to_string(),
            content: e.content,
        })
        .collect();
    Ok(Bundle {
        pages: vec![SourcePage {
            key: archive_key("word/document.xml"),
            title,
            body: Some(conv.blocks.join("\n\n") + "\n"),
            ..SourcePage::default()
        }],
        assets,
        remote_images: Vec::new(),
        includes: Vec::new(),
    })
}

/// The local part of a qualified XML name.
fn local(name: &[u8]) -> &[u8] {
    match name.iter().rposition(|&b| b == b':') {
        Some(i) => &name[i + 1..],
        None => name,
    }
}

/// An attribute's value by its local name.
fn attr(e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes().flatten().find_map(|a| {
        (local(a.key.as_ref()) == name).then(|| a.unescape_value().map(|v| v.into_owned()).ok())?
    })
}

/// A relationship: its target and whether it leaves the package.
struct Rel {
    target: String,
    external: bool,
}

fn relationships(xml: &str) -> HashMap<String, Rel> {
    let mut out = HashMap::new();
    let mut reader = Reader::from_str(xml);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e))
                if local(e.name().as_ref()) == b"Relationship" =>
            {
                if let (Some(id), Some(target)) = (attr(&e, b"Id"), attr(&e, b"Target")) {
                    let external = attr(&e, b"TargetMode").as_deref() == Some("External");
                    out.insert(id, Rel { target, external });
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    out
}

/// Style ids to their lower-cased names.
fn style_names(xml: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut reader = Reader::from_str(xml);
    let mut current: Option<String> = None;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => match local(e.name().as_ref()) {
                b"style" => current = attr(&e, b"styleId"),
                b"name" => {
                    if let (Some(id), Some(name)) = (current.as_ref(), attr(&e, b"val")) {
                        out.insert(id.clone(), name.to_lowercase());
                    }
                }
                _ => {}
            },
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    out
}

/// `(numId, level)` to whether the list is numbered (not bulleted).
fn numbering_formats(xml: &str) -> HashMap<(String, String), bool> {
    let mut abstract_formats: HashMap<(String, String), bool> = HashMap::new();
    let mut nums: Vec<(String, String)> = Vec::new();
    let mut reader = Reader::from_str(xml);
    let (mut abs, mut lvl, mut num): (Option<String>, Option<String>, Option<String>) =
        (None, None, None);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => match local(e.name().as_ref()) {
                b"abstractNum" => abs = attr(&e, b"abstractNumId"),
                b"lvl" => lvl = attr(&e, b"ilvl"),
                b"numFmt" => {
                    if let (Some(a), Some(l), Some(v)) =
                        (abs.as_ref(), lvl.as_ref(), attr(&e, b"val"))
                    {
                        abstract_formats
                            .insert((a.clone(), l.clone()), v != "bullet" && v != "none");
                    }
                }
                b"num" => num = attr(&e, b"numId"),
                b"abstractNumId" => {
                    if let (Some(n), Some(v)) = (num.as_ref(), attr(&e, b"val")) {
                        nums.push((n.clone(), v));
                    }
                }
                _ => {}
            },
            Ok(Event::End(e)) if local(e.name().as_ref()) == b"abstractNum" => abs = None,
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    let mut out = HashMap::new();
    for (num, abs) in nums {
        for ((a, l), ordered) in &abstract_formats {
            if *a == abs {
                out.insert((num.clone(), l.clone()), *ordered);
            }
        }
    }
    out
}

fn core_title(xml: &str) -> Option<String> {
    let mut reader = Reader::from_str(xml);
    let mut inside = false;
    let mut title = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) if local(e.name().as_ref()) == b"title" => inside = true,
            Ok(Event::End(e)) if local(e.name().as_ref()) == b"title" => break,
            Ok(Event::Text(t)) if inside => title.push_str(&t.decode().ok()?),
            Ok(Event::GeneralRef(r)) if inside => title.push_str(&general_ref(&r)),
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    let t = title.trim().to_string();
    (!t.is_empty()).then_some(t)
}

fn general_ref(r: &quick_xml::events::BytesRef<'_>) -> String {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return c.to_string();
    }
    r.decode()
        .ok()
        .and_then(|name| quick_xml::escape::resolve_predefined_entity(&name))
        .unwrap_or("")
        .to_string()
}

/// What a paragraph is, from its properties.
#[derive(Default)]
struct Para {
    style: String,
    list: Option<(String, usize)>,
    text: String,
    /// Raw text (for code paragraphs).
    raw: String,
}

#[derive(Default, Clone, Copy)]
struct RunProps {
    bold: bool,
    italic: bool,
    strike: bool,
    code: bool,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
}

#[derive(Default)]
struct Converter {
    rels: HashMap<String, Rel>,
    styles: HashMap<String, String>,
    numbering: HashMap<(String, String), bool>,
    blocks: Vec<String>,
    title: Option<String>,
    para: Option<Para>,
    run: RunProps,
    run_text: String,
    in_run_props: bool,
    in_text: bool,
    /// Open hyperlinks: destination and where their text starts in the paragraph.
    link: Option<(Option<String>, usize)>,
    image_alt: String,
    table: Option<Table>,
    table_depth: usize,
    /// Consecutive code paragraphs, and consecutive list items.
    code: Vec<String>,
    list: Vec<String>,
}

impl Converter {
    fn run(&mut self, xml: &str) -> Result<(), ConvertError> {
        let mut reader = Reader::from_str(xml);
        reader.config_mut().expand_empty_elements = true;
        loop {
            let event = reader.read_event().map_err(|e| {
                ConvertError::new(format!(
                    "is not a readable Word document (document.xml at byte {}: {e})",
                    reader.buffer_position()
                ))
            })?;
            match event {
                Event::Start(e) => self.start(&e),
                Event::End(e) => self.end(local(e.name().as_ref())),
                Event::Text(t) if self.in_text => {
                    let t = t.decode().map_err(|e| {
                        ConvertError::new(format!("holds text that is not UTF-8 ({e})"))
                    })?;
                    self.run_text.push_str(&t);
                }
                Event::GeneralRef(r) if self.in_text => {
                    let t = general_ref(&r);
                    self.run_text.push_str(&t);
                }
                Event::Eof => break,
                _ => {}
            }
        }
        self.flush_code();
        self.flush_list();
        Ok(())
    }

    fn start(&mut self, e: &BytesStart<'_>) {
        match local(e.name().as_ref()) {
            b"tbl" => {
                self.table_depth += 1;
                if self.table_depth == 1 {
                    self.flush_code();
                    self.flush_list();
                    self.table = Some(Table::default());
                }
            }
            b"tr" if self.table_depth == 1 => {
                if let Some(t) = self.table.as_mut() {
                    t.row.clear();
                }
            }
            b"tc" if self.table_depth == 1 => {
                if let Some(t) = self.table.as_mut() {
                    t.cell.clear();
                }
            }
            b"p" => self.para = Some(Para::default()),
            b"pStyle" => {
                if let (Some(p), Some(v)) = (self.para.as_mut(), attr(e, b"val")) {
                    p.style = v;
                }
            }
            b"ilvl" => {
                if let (Some(p), Some(v)) = (self.para.as_mut(), attr(e, b"val")) {
                    let level = v.parse().unwrap_or(0usize).min(8);
                    let num = p.list.take().map(|l| l.0).unwrap_or_default();
                    p.list = Some((num, level));
                }
            }
            b"numId" => {
                if let (Some(p), Some(v)) = (self.para.as_mut(), attr(e, b"val")) {
                    let level = p.list.take().map_or(0, |l| l.1);
                    // numId 0 removes numbering.
                    if v != "0" {
                        p.list = Some((v, level));
                    }
                }
            }
            b"r" => {
                self.run = RunProps::default();
                self.run_text.clear();
            }
            b"rPr" => self.in_run_props = true,
            b"b" if self.in_run_props => self.run.bold = on(e),
            b"i" if self.in_run_props => self.run.italic = on(e),
            b"strike" | b"dstrike" if self.in_run_props => self.run.strike = on(e),
            b"rStyle" if self.in_run_props => {
                let v = attr(e, b"val").unwrap_or_default();
                let name = self.styles.get(&v).cloned().unwrap_or_default();
                if v.contains("Verbatim") || v.contains("Code") || name.contains("code") {
                    self.run.code = true;
                }
            }
            b"rFonts" if self.in_run_props => {
                let font = attr(e, b"ascii").unwrap_or_default().to_lowercase();
                if ["courier", "consolas", "mono", "menlo"]
                    .iter()
                    .any(|f| font.contains(f))
                {
                    self.run.code = true;
                }
            }
            b"t" => self.in_text = true,
            b"tab" if self.para.is_some() => self.run_text.push(' '),
            b"br" | b"cr" if self.para.is_some() => self.run_text.push('\n'),
            b"hyperlink" => {
                let href = attr(e, b"id")
                    .and_then(|id| self.rels.get(&id))
                    .filter(|r| r.external)
                    .map(|r| r.target.clone())
                    .or_else(|| attr(e, b"anchor").map(|a| format!("#{a}")));
                let at = self.para.as_ref().map_or(0, |p| p.text.len());
                self.link = Some((href, at));
            }
            b"docPr" => {
                self.image_alt = attr(e, b"descr")
                    .or_else(|| attr(e, b"title"))
                    .unwrap_or_default()
            }
            b"blip" => {
                let target = attr(e, b"embed")
                    .and_then(|id| self.rels.get(&id))
                    .filter(|r| !r.external)
                    .map(|r| r.target.trim_start_matches("./").to_string());
                if let (Some(target), Some(p)) = (target, self.para.as_mut()) {
                    let alt = escape_text(&self.image_alt);
                    p.text.push_str(&format!("![{alt}]({target})"));
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, name: &[u8]) {
        match name {
            b"t" => self.in_text = false,
            b"rPr" => self.in_run_props = false,
            b"r" => self.end_run(),
            b"hyperlink" => {
                if let (Some((Some(href), at)), Some(p)) = (self.link.take(), self.para.as_mut()) {
                    if at < p.text.len() {
                        let text = p.text.split_off(at);
                        p.text.push_str(&format!("[{}]({href})", text.trim()));
                    }
                }
            }
            b"p" => self.end_paragraph(),
            b"tc" if self.table_depth == 1 => {
                if let Some(t) = self.table.as_mut() {
                    let cell = std::mem::take(&mut t.cell);
                    t.row.push(cell.trim().to_string());
                }
            }
            b"tr" if self.table_depth == 1 => {
                if let Some(t) = self.table.as_mut() {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            b"tbl" => {
                self.table_depth = self.table_depth.saturating_sub(1);
                if self.table_depth == 0 {
                    if let Some(t) = self.table.take() {
                        if let Some(md) = table_markdown(&t.rows) {
                            self.blocks.push(md);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn is_code_para(&self, p: &Para) -> bool {
        let name = self.styles.get(&p.style).map(String::as_str).unwrap_or("");
        let s = p.style.to_lowercase();
        s.contains("sourcecode")
            || s.contains("preformatted")
            || s == "code"
            || name.contains("source code")
            || name.contains("preformatted")
            || name == "code"
    }

    fn end_run(&mut self) {
        let text = std::mem::take(&mut self.run_text);
        let Some(p) = self.para.as_mut() else { return };
        p.raw.push_str(&text);
        if text.is_empty() {
            return;
        }
        let r = self.run;
        if r.code {
            let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
            let fence = "`".repeat(longest + 1);
            p.text.push_str(&format!("{fence}{text}{fence}"));
            return;
        }
        let escaped = escape_text(&text).replace('\n', "\\\n");
        let lead = &escaped[..escaped.len() - escaped.trim_start().len()];
        let core = escaped.trim();
        let trail = &escaped[escaped.trim_end().len()..];
        if core.is_empty() {
            p.text.push_str(&escaped);
            return;
        }
        let mut core = core.to_string();
        if r.strike {
            core = format!("~~{core}~~");
        }
        if r.italic {
            core = format!("_{core}_");
        }
        if r.bold {
            core = format!("**{core}**");
        }
        p.text.push_str(lead);
        p.text.push_str(&core);
        p.text.push_str(trail);
    }

    fn end_paragraph(&mut self) {
        let Some(p) = self.para.take() else { return };
        if self.table_depth > 0 {
            if let Some(t) = self.table.as_mut() {
                if !t.cell.is_empty() {
                    t.cell.push(' ');
                }
                t.cell.push_str(&p.text.replace("\\\n", " "));
            }
            return;
        }
        if self.is_code_para(&p) {
            self.flush_list();
            self.code.push(p.raw);
            return;
        }
        self.flush_code();
        let text = p.text.trim().to_string();
        let style_name = self
            .styles
            .get(&p.style)
            .cloned()
            .unwrap_or_else(|| p.style.to_lowercase());
        if style_name == "title" {
            if self.title.is_none() && !p.raw.trim().is_empty() {
                self.title = Some(p.raw.trim().to_string());
            }
            return;
        }
        let heading = style_name
            .strip_prefix("heading ")
            .or_else(|| style_name.strip_prefix("heading"))
            .and_then(|n| n.trim().parse::<usize>().ok());
        if let Some(level) = heading {
            self.flush_list();
            if !text.is_empty() {
                let hashes = (level + 1).clamp(2, 4);
                self.blocks.push(format!(
                    "{} {}",
                    "#".repeat(hashes),
                    text.replace("\\\n", " ")
                ));
            }
            return;
        }
        if let Some((num, level)) = &p.list {
            let ordered = self
                .numbering
                .get(&(num.clone(), level.to_string()))
                .copied()
                .unwrap_or(false);
            let marker = if ordered { "1." } else { "-" };
            self.list.push(format!(
                "{}{marker} {}",
                "   ".repeat(*level),
                text.replace("\\\n", " ")
            ));
            return;
        }
        self.flush_list();
        if !text.is_empty() {
            let starts_block = text.starts_with(['-', '+', '='])
                || text.bytes().take_while(u8::is_ascii_digit).count() > 0;
            self.blocks.push(if starts_block {
                format!("\\{text}")
            } else {
                text
            });
        }
    }

    fn flush_code(&mut self) {
        if self.code.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.code).join("\n");
        let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat(longest.max(2) + 1);
        self.blocks.push(format!("{fence}\n{text}\n{fence}"));
    }

    fn flush_list(&mut self) {
        if !self.list.is_empty() {
            let items = std::mem::take(&mut self.list).join("\n");
            self.blocks.push(items);
        }
    }
}

/// Whether a toggle property (`<w:b/>`, `<w:b w:val="0"/>`) is on.
fn on(e: &BytesStart<'_>) -> bool {
    !matches!(
        attr(e, b"val").as_deref(),
        Some("0" | "false" | "off" | "none")
    )
}

fn table_markdown(rows: &[Vec<String>]) -> Option<String> {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0).min(64);
    if width == 0 {
        return None;
    }
    let line = |cells: &[String]| {
        let mut s = String::from("|");
        for i in 0..width {
            s.push(' ');
            s.push_str(cells.get(i).map_or("", String::as_str));
            s.push_str(" |");
        }
        s
    };
    let mut out = vec![line(&rows[0]), format!("|{}", " --- |".repeat(width))];
    out.extend(rows[1..].iter().map(|r| line(r)));
    Some(out.join("\n"))
}
