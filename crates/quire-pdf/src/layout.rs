//! The layout: a book's blocks become boxes of lines stacked down the page, then pages.
//!
//! Blocks are laid out once into a flat stream of [`Elem`]s: boxes (a line of text, a row
//! of a table, an image…) that never break, spaces between them, and the start and end of
//! frames (a code block's background, a hint's or a quotation's bar) that may span pages.
//! Pagination then fills pages from the stream in one pass: a box that does not fit starts
//! a new page, where open frames go on and a table's header is repeated. The work is linear
//! in the book's size, and nesting is bounded by the book ([`crate::book`]'s `MAX_NEST`).

use std::collections::HashMap;

use krilla::text::KrillaGlyph;

use crate::book::{Block, Book, Run};
use crate::text::{Faces, Line, Rgb, Span, Style};

/// A4, in points.
pub(crate) const PAGE_W: f32 = 595.28;
pub(crate) const PAGE_H: f32 = 841.89;
/// Margins: 2.2 cm on the sides, 2.4 cm at the top and the foot.
const MARGIN_X: f32 = 62.36;
const MARGIN_Y: f32 = 68.03;
const BODY_W: f32 = PAGE_W - 2.0 * MARGIN_X;
const TOP: f32 = MARGIN_Y;
const BOTTOM: f32 = PAGE_H - MARGIN_Y;
/// Text and code sizes, and a line's height as a multiple of its size.
const TEXT: f32 = 10.5;
const CODE: f32 = 8.6;
const LEADING: f32 = 1.3;
/// Space after a paragraph or another block.
const GAP: f32 = 6.5;

const BLACK: Rgb = (0, 0, 0);
const LINK: Rgb = (0x1f, 0x5f, 0xa8);
const ACCENT: Rgb = (0x3f, 0x7f, 0xd0);

const fn luma(l: u8) -> Rgb {
    (l, l, l)
}

/// Something drawn on a page; `y` is from the top of its box (of the page once placed).
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// Glyphs of one face; `y` is the baseline.
    Text {
        x: f32,
        y: f32,
        face: usize,
        size: f32,
        color: Rgb,
        glyphs: Vec<KrillaGlyph>,
        text: String,
    },
    /// A filled rectangle (backgrounds, rules, borders, bars).
    Rect {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        color: Rgb,
    },
    /// The image of [`Document::images`]' index `key`.
    Image {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        key: usize,
    },
    /// A clickable area leading to [`Document::links`]' index `to`.
    Link {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        to: usize,
    },
}

impl Op {
    fn shift(&mut self, dy: f32) {
        match self {
            Op::Text { y, .. } | Op::Rect { y, .. } | Op::Image { y, .. } | Op::Link { y, .. } => {
                *y += dy
            }
        }
    }
}

/// Where a link leads.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    Uri(String),
    /// An anchor (see [`Document::anchors`]).
    Anchor(usize),
}

/// A heading, for the bookmarks and the table of contents.
#[derive(Clone, Debug)]
pub(crate) struct Heading {
    pub level: usize,
    pub title: String,
    pub anchor: usize,
}

/// A laid out book.
pub(crate) struct Document {
    /// Each page's drawing, in order.
    pub pages: Vec<Vec<Op>>,
    pub links: Vec<Target>,
    /// Where each anchor is: page index and `y`.
    pub anchors: Vec<(usize, f32)>,
    pub headings: Vec<Heading>,
}

/// A box: drawn whole on one page.
#[derive(Clone, Debug, Default)]
struct Bx {
    h: f32,
    ops: Vec<Op>,
    /// Its first baseline (list markers align with it).
    base: Option<f32>,
    /// Kept on the same page as the next box (headings).
    keep: bool,
}

/// A frame drawn around the boxes between its start and its end, on every page they reach.
#[derive(Clone, Debug, Default)]
struct Frame {
    x: f32,
    w: f32,
    fill: Option<Rgb>,
    border: Option<Rgb>,
    /// A bar on the left edge: colour and width.
    bar: Option<(Rgb, f32)>,
    /// Placed again at the top of each page the frame goes on to (a table's header).
    repeat: Option<Bx>,
}

enum Elem {
    Box(Bx),
    /// Space; none at the top of a page.
    Space(f32),
    Open(Frame),
    Close,
    PageBreak,
    Anchor(usize),
}

/// An image the layout may place: its index among the PDF's images and its size in pixels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Picture {
    pub index: usize,
    pub width: u32,
    pub height: u32,
}

struct Flow<'a> {
    faces: &'a Faces<'a>,
    pictures: &'a HashMap<&'a str, Picture>,
    notes: &'a HashMap<&'a str, String>,
    labels: HashMap<&'a str, usize>,
    links: Vec<Target>,
    headings: Vec<Heading>,
    anchors: usize,
    out: Vec<Elem>,
}

/// Lays `book` out: a title page, a table of contents when there are several pages, then
/// the pages, numbered from 1. `pictures` are the images that can be shown, `notes` say why
/// the others are missing.
pub(crate) fn lay_out(
    book: &Book,
    faces: &Faces<'_>,
    pictures: &HashMap<&str, Picture>,
    notes: &HashMap<&str, String>,
) -> Document {
    let mut flow = Flow {
        faces,
        pictures,
        notes,
        // Chapter i is anchor i; headings within pages come after.
        labels: book
            .pages
            .iter()
            .enumerate()
            .map(|(i, c)| (c.label.as_str(), i))
            .collect(),
        links: Vec::new(),
        headings: Vec::new(),
        anchors: book.pages.len(),
        out: Vec::new(),
    };
    for (i, c) in book.pages.iter().enumerate() {
        if i > 0 && c.depth == 0 {
            flow.out.push(Elem::PageBreak);
        }
        let level = (c.depth + 1).min(9);
        flow.heading(level, &[plain(&c.title)], i);
        if let Some(d) = &c.description {
            let spans = flow.spans(&[plain(d)], Style::ITALIC, TEXT, luma(90));
            flow.para(&spans, MARGIN_X, BODY_W, false);
            flow.out.push(Elem::Space(GAP));
        }
        flow.blocks(&c.blocks, MARGIN_X, BODY_W, level, 0);
    }
    let mut anchors = vec![(0, 0.0); flow.anchors];
    let body = paginate(std::mem::take(&mut flow.out), &mut anchors);

    let toc = if book.toc {
        flow.contents(&anchors);
        paginate(std::mem::take(&mut flow.out), &mut Vec::new())
    } else {
        Vec::new()
    };
    let front = 1 + toc.len();
    for a in &mut anchors {
        a.0 += front;
    }
    let mut pages = vec![title_page(book, faces)];
    pages.extend(toc);
    for (i, mut ops) in body.into_iter().enumerate() {
        let number = flow.spans(&[plain(&(i + 1).to_string())], Style::default(), 9.0, BLACK);
        if let Some(line) = faces.lines(&number, BODY_W).into_iter().next() {
            let x = MARGIN_X + (BODY_W - line.width) / 2.0;
            ops.extend(text_ops(&line, x, PAGE_H - MARGIN_Y / 2.0, &number));
        }
        pages.push(ops);
    }
    Document {
        pages,
        links: flow.links,
        anchors,
        headings: flow.headings,
    }
}

fn plain(t: &str) -> Run {
    Run {
        t: t.to_string(),
        ..Run::default()
    }
}

/// The drawing of one line whose baseline is at `y`.
fn text_ops(line: &Line, x: f32, y: f32, spans: &[Span]) -> Vec<Op> {
    let mut ops = Vec::new();
    for p in &line.pieces {
        let s = &spans[p.span];
        ops.push(Op::Text {
            x: x + p.x,
            y,
            face: p.face,
            size: s.size,
            color: s.color,
            glyphs: p.glyphs.clone(),
            text: p.text.clone(),
        });
        if s.strike {
            ops.push(Op::Rect {
                x: x + p.x,
                y: y - s.size * 0.28,
                w: p.width,
                h: s.size * 0.06,
                color: s.color,
            });
        }
        if let Some(to) = s.link {
            ops.push(Op::Link {
                x: x + p.x,
                y: y - s.size,
                w: p.width,
                h: s.size * LEADING,
                to,
            });
        }
    }
    ops
}

fn title_page(book: &Book, faces: &Faces<'_>) -> Vec<Op> {
    let (x, w) = (70.87, PAGE_W - 2.0 * 70.87);
    let mut ops = Vec::new();
    let mut y = PAGE_H * 0.3;
    let lines = |text: &str, size: f32, bold: bool, color: Rgb, y: &mut f32, ops: &mut Vec<Op>| {
        let style = if bold { Style::BOLD } else { Style::default() };
        let spans = [Span::new(text, style, size, color)];
        // A title that would fill the page is cut: it is printed, not laid out at length.
        for line in faces.lines(&spans, w).into_iter().take(12) {
            *y += size * 1.15;
            ops.extend(text_ops(&line, x, *y, &spans));
        }
    };
    lines(&book.title, 30.0, true, BLACK, &mut y, &mut ops);
    if let Some(s) = &book.subtitle {
        y += 10.0;
        lines(s, 14.0, false, luma(90), &mut y, &mut ops);
    }
    y += 14.0;
    ops.push(Op::Rect {
        x,
        y,
        w: w * 0.4,
        h: 1.2,
        color: ACCENT,
    });
    if let Some(f) = &book.footer {
        let mut y = PAGE_H - 85.0 - 12.0;
        lines(f, 9.0, false, luma(120), &mut y, &mut ops);
    }
    ops
}

impl Flow<'_> {
    /// A run list as spans of `base` style, size and colour.
    fn spans(&mut self, runs: &[Run], base: Style, size: f32, color: Rgb) -> Vec<Span> {
        runs.iter()
            .filter(|r| !r.t.is_empty())
            .map(|r| {
                let link = match (&r.href, &r.to) {
                    (Some(href), _) => Some(Target::Uri(href.clone())),
                    (None, Some(to)) => self.labels.get(to.as_str()).map(|&a| Target::Anchor(a)),
                    _ => None,
                }
                .map(|t| {
                    self.links.push(t);
                    self.links.len() - 1
                });
                Span {
                    text: r.t.clone(),
                    style: Style {
                        mono: base.mono || r.c,
                        bold: base.bold || r.b,
                        italic: base.italic || r.i,
                    },
                    size: if r.c && !base.mono { size * 0.82 } else { size },
                    color: if link.is_some() { LINK } else { color },
                    strike: r.s,
                    link,
                }
            })
            .collect()
    }

    /// A paragraph's lines, one box each, at `x`, `w` wide, centred if asked.
    fn para(&mut self, spans: &[Span], x: f32, w: f32, center: bool) {
        for line in self.faces.lines(spans, w) {
            let dx = if center {
                (w - line.width).max(0.0) / 2.0
            } else {
                0.0
            };
            let base = line.size;
            self.out.push(Elem::Box(Bx {
                h: line.size * LEADING,
                ops: text_ops(&line, x + dx, base, spans),
                base: Some(base),
                keep: false,
            }));
        }
    }

    /// A heading at `level` (1 the largest), with its anchor, kept with what follows.
    fn heading(&mut self, level: usize, runs: &[Run], anchor: usize) {
        let size = match level {
            1 => 20.0,
            2 => 16.0,
            3 => 13.5,
            4 => 12.0,
            _ => 11.0,
        };
        self.headings.push(Heading {
            level,
            title: runs.iter().map(|r| r.t.as_str()).collect(),
            anchor,
        });
        self.out.push(Elem::Space(size * 1.1));
        self.out.push(Elem::Anchor(anchor));
        let spans = self.spans(runs, Style::BOLD, size, BLACK);
        self.para(&spans, MARGIN_X, BODY_W, false);
        if let Some(Elem::Box(b)) = self.out.last_mut() {
            b.keep = true;
        }
        self.out.push(Elem::Space(size * 0.5));
    }

    fn new_anchor(&mut self) -> usize {
        self.anchors += 1;
        self.anchors - 1
    }

    /// Blocks at `x`, `w` wide, in a page whose heading is at `level`; `list` counts the
    /// lists they are in (for the bullets).
    fn blocks(&mut self, blocks: &[Block], x: f32, w: f32, level: usize, list: usize) {
        for b in blocks {
            self.block(b, x, w, level, list);
        }
    }

    fn block(&mut self, b: &Block, x: f32, w: f32, level: usize, list: usize) {
        // Too narrow to set anything in (deep nesting): laid out at the page's width.
        let (x, w) = if w < 60.0 { (MARGIN_X, BODY_W) } else { (x, w) };
        match b {
            Block::H { level: l, runs } => {
                let anchor = self.new_anchor();
                self.heading((level + *l as usize).min(9), runs, anchor);
            }
            Block::P { runs } => {
                let spans = self.spans(runs, Style::default(), TEXT, BLACK);
                self.para(&spans, x, w, false);
                self.out.push(Elem::Space(GAP));
            }
            Block::Code { text, .. } => {
                self.out.push(Elem::Open(Frame {
                    x,
                    w,
                    fill: Some(luma(246)),
                    border: Some(luma(215)),
                    ..Frame::default()
                }));
                self.pad(7.0);
                self.code(text, x + 7.0, w - 14.0);
                self.pad(7.0);
                self.out.push(Elem::Close);
                self.out.push(Elem::Space(GAP));
            }
            Block::Math { text } => {
                self.code(text, x, w);
                self.out.push(Elem::Space(GAP));
            }
            Block::List {
                ordered,
                start,
                items,
            } => self.list(*ordered, *start, items, x, w, level, list),
            Block::Quote { blocks } => {
                self.out.push(Elem::Open(Frame {
                    x,
                    w,
                    bar: Some((luma(190), 2.0)),
                    ..Frame::default()
                }));
                self.blocks(blocks, x + 10.0, w - 10.0, level, list);
                self.out.push(Elem::Close);
                self.out.push(Elem::Space(GAP));
            }
            Block::Hint { style, blocks } => {
                let (bg, fg, name) = match style.as_str() {
                    "success" => ((0xe9, 0xf7, 0xee), (0x2f, 0x9e, 0x5b), "Success"),
                    "warning" => ((0xfd, 0xf5, 0xe3), (0xd2, 0x9b, 0x20), "Warning"),
                    "danger" => ((0xfb, 0xea, 0xea), (0xc9, 0x41, 0x41), "Danger"),
                    _ => ((0xe8, 0xf1, 0xfb), ACCENT, "Info"),
                };
                self.out.push(Elem::Open(Frame {
                    x,
                    w,
                    fill: Some(bg),
                    bar: Some((fg, 3.0)),
                    ..Frame::default()
                }));
                self.pad(8.0);
                let title = self.spans(&[plain(name)], Style::BOLD, TEXT, fg);
                self.para(&title, x + 11.0, w - 19.0, false);
                self.blocks(blocks, x + 11.0, w - 19.0, level, list);
                // The last block's space stands for the padding.
                if let Some(Elem::Space(_)) = self.out.last() {
                    self.out.pop();
                }
                self.pad(8.0);
                self.out.push(Elem::Close);
                self.out.push(Elem::Space(GAP));
            }
            Block::Table { cols, header, rows } => self.table(*cols, header, rows, x, w),
            Block::Img { key, alt, caption } => self.image(key, alt, caption, x, w),
            Block::Hr => {
                self.out.push(Elem::Box(Bx {
                    h: 8.0,
                    ops: vec![Op::Rect {
                        x,
                        y: 4.0,
                        w,
                        h: 0.5,
                        color: luma(190),
                    }],
                    ..Bx::default()
                }));
                self.out.push(Elem::Space(GAP));
            }
            Block::Group { blocks } => self.blocks(blocks, x, w, level, list),
        }
    }

    /// Space that stays even at the top of a page (the inside of a frame).
    fn pad(&mut self, h: f32) {
        self.out.push(Elem::Box(Bx { h, ..Bx::default() }));
    }

    /// Code, line by line in monospace; a line wider than `w` goes on to the next.
    fn code(&mut self, text: &str, x: f32, w: f32) {
        for line in text.lines() {
            let line = line.replace('\t', "    ");
            if line.trim().is_empty() {
                self.pad(CODE * LEADING);
                continue;
            }
            let spans = [Span::new(&line, Style::MONO, CODE, BLACK)];
            self.para(&spans, x, w, false);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn list(
        &mut self,
        ordered: bool,
        start: Option<u64>,
        items: &[crate::book::Item],
        x: f32,
        w: f32,
        level: usize,
        list: usize,
    ) {
        let first = start.unwrap_or(1);
        let marker = |i: usize| {
            if ordered {
                format!("{}.", first.saturating_add(i as u64))
            } else {
                ["•", "‣", "–"][list % 3].to_string()
            }
        };
        let widest = marker(items.len().saturating_sub(1));
        let widest = self.faces.lines(&[self.plain_span(&widest)], w);
        let indent = widest.first().map_or(0.0, |l| l.width).max(10.0) + 8.0;
        for (i, item) in items.iter().enumerate() {
            let mut mark = marker(i);
            if let Some(checked) = item.checked {
                mark = if checked { "☑" } else { "☐" }.to_string();
            }
            let at = self.out.len();
            self.blocks(&item.blocks, x + indent, w - indent, level, list + 1);
            // The marker sits on the item's first line.
            let spans = [self.plain_span(&mark)];
            let line = self.faces.lines(&spans, indent).into_iter().next();
            let first = self.out[at..].iter_mut().find_map(|e| match e {
                Elem::Box(b) => Some(b),
                _ => None,
            });
            match (line, first) {
                (Some(line), Some(b)) => {
                    let base = b.base.unwrap_or(TEXT);
                    let mx = x + indent - 6.0 - line.width;
                    b.ops.extend(text_ops(&line, mx, base, &spans));
                }
                (Some(line), None) => self.out.push(Elem::Box(Bx {
                    h: TEXT * LEADING,
                    ops: text_ops(&line, x, TEXT, &spans),
                    base: Some(TEXT),
                    keep: false,
                })),
                _ => {}
            }
            // Items are closer together than paragraphs.
            if let Some(Elem::Space(s)) = self.out.last_mut() {
                *s = 2.0;
            }
        }
        self.out.push(Elem::Space(GAP));
    }

    fn plain_span(&self, text: &str) -> Span {
        Span::new(text, Style::default(), TEXT, BLACK)
    }

    fn table(&mut self, cols: usize, header: &[Vec<Run>], rows: &[Vec<Vec<Run>>], x: f32, w: f32) {
        if cols == 0 {
            return;
        }
        let pad = 5.0;
        let bold = Style::BOLD;
        let head: Vec<Vec<Span>> = header
            .iter()
            .map(|c| self.spans(c, bold, TEXT, BLACK))
            .collect();
        let body: Vec<Vec<Vec<Span>>> = rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|c| self.spans(c, Style::default(), TEXT, BLACK))
                    .collect()
            })
            .collect();
        // Columns as wide as their widest line unset, within a fair share of the width.
        let mut natural = vec![0.0f32; cols];
        for row in std::iter::once(&head).chain(&body) {
            for (c, spans) in row.iter().enumerate().take(cols) {
                let wide = self
                    .faces
                    .lines(spans, f32::MAX / 4.0)
                    .iter()
                    .map(|l| l.width)
                    .fold(0.0, f32::max);
                natural[c] = natural[c].max(wide + 2.0 * pad);
            }
        }
        let widths = share(&natural, w);
        let header_box = (!head.is_empty()).then(|| self.row(&head, &widths, x, Some(luma(240))));
        self.out.push(Elem::Open(Frame {
            repeat: header_box.clone().and_then(|mut b| b.pop()),
            ..Frame::default()
        }));
        for b in header_box.into_iter().flatten() {
            self.out.push(Elem::Box(b));
        }
        for row in &body {
            for b in self.row(row, &widths, x, None) {
                self.out.push(Elem::Box(b));
            }
        }
        self.out.push(Elem::Close);
        self.out.push(Elem::Space(GAP));
    }

    /// A table row as boxes: one, or several when it is taller than a page.
    fn row(&self, cells: &[Vec<Span>], widths: &[f32], x: f32, fill: Option<Rgb>) -> Vec<Bx> {
        let pad = 5.0;
        let lines: Vec<Vec<Line>> = widths
            .iter()
            .enumerate()
            .map(|(c, w)| {
                cells
                    .get(c)
                    .map(|s| self.faces.lines(s, w - 2.0 * pad))
                    .unwrap_or_default()
            })
            .collect();
        let mut taken = vec![0; widths.len()];
        let mut boxes = Vec::new();
        loop {
            let mut ops = Vec::new();
            let mut h: f32 = 0.0;
            let mut cx = x;
            for (c, w) in widths.iter().enumerate() {
                let mut y = pad;
                while let Some(line) = lines[c].get(taken[c]) {
                    let lh = line.size * LEADING;
                    if y + lh + pad > BOTTOM - TOP && y > pad {
                        break;
                    }
                    ops.extend(text_ops(line, cx + pad, y + line.size, &cells[c]));
                    y += lh;
                    taken[c] += 1;
                }
                h = h.max(y + pad);
                cx += w;
            }
            let h = h.max(TEXT * LEADING + 2.0 * pad);
            let mut drawn = Vec::new();
            if let Some(color) = fill {
                drawn.push(Op::Rect {
                    x,
                    y: 0.0,
                    w: widths.iter().sum(),
                    h,
                    color,
                });
            }
            drawn.append(&mut ops);
            let mut cx = x;
            for w in widths {
                drawn.extend(outline(cx, 0.0, *w, h, 0.5, luma(200)));
                cx += w;
            }
            boxes.push(Bx {
                h,
                ops: drawn,
                base: None,
                keep: false,
            });
            if taken.iter().zip(&lines).all(|(t, l)| *t >= l.len()) {
                return boxes;
            }
        }
    }

    fn image(&mut self, key: &str, alt: &str, caption: &[Run], x: f32, w: f32) {
        let grey = Style::ITALIC;
        match self.pictures.get(key) {
            Some(p) => {
                // 96 pixels to the inch, within the column and most of a page.
                let (pw, ph) = (p.width as f32 * 0.75, p.height as f32 * 0.75);
                let scale = (w / pw).min((BOTTOM - TOP) * 0.75 / ph).min(1.0);
                let (iw, ih) = ((pw * scale).max(0.1), (ph * scale).max(0.1));
                self.out.push(Elem::Box(Bx {
                    h: ih,
                    ops: vec![Op::Image {
                        x: x + (w - iw) / 2.0,
                        y: 0.0,
                        w: iw,
                        h: ih,
                        key: p.index,
                    }],
                    ..Bx::default()
                }));
                if !caption.is_empty() {
                    self.out.push(Elem::Space(4.0));
                    let spans = self.spans(caption, Style::default(), 9.5, BLACK);
                    self.para(&spans, x, w, true);
                }
            }
            None => {
                let text = match self.notes.get(key) {
                    Some(note) => format!("[{alt}: {note}]"),
                    None => format!("[{alt}]"),
                };
                let spans = self.spans(&[plain(&text)], grey, TEXT, luma(110));
                self.para(&spans, x, w, false);
            }
        }
        self.out.push(Elem::Space(GAP));
    }

    /// The table of contents: headings down to level 2, with their page numbers.
    fn contents(&mut self, anchors: &[(usize, f32)]) {
        let title = [plain("Contents")];
        let spans = self.spans(&title, Style::BOLD, 20.0, BLACK);
        self.para(&spans, MARGIN_X, BODY_W, false);
        self.out.push(Elem::Space(10.0));
        let entries: Vec<Heading> = self
            .headings
            .iter()
            .filter(|h| h.level <= 2)
            .cloned()
            .collect();
        for h in entries {
            let indent = (h.level - 1) as f32 * 14.0;
            let style = Style {
                bold: h.level == 1,
                ..Style::default()
            };
            let title = self.spans(&[plain(&h.title)], style, TEXT, BLACK);
            let number = self.spans(
                &[plain(&(anchors[h.anchor].0 + 1).to_string())],
                style,
                TEXT,
                BLACK,
            );
            let at = self.out.len();
            self.para(&title, MARGIN_X + indent, BODY_W - indent - 40.0, false);
            let boxes: Vec<&mut Bx> = self.out[at..]
                .iter_mut()
                .filter_map(|e| match e {
                    Elem::Box(b) => Some(b),
                    _ => None,
                })
                .collect();
            let count = boxes.len();
            for (i, b) in boxes.into_iter().enumerate() {
                self.links.push(Target::Anchor(h.anchor));
                b.ops.push(Op::Link {
                    x: MARGIN_X + indent,
                    y: 0.0,
                    w: BODY_W - indent,
                    h: b.h,
                    to: self.links.len() - 1,
                });
                if i + 1 == count {
                    if let Some(line) = self.faces.lines(&number, 40.0).into_iter().next() {
                        let base = b.base.unwrap_or(TEXT);
                        b.ops.extend(text_ops(
                            &line,
                            PAGE_W - MARGIN_X - line.width,
                            base,
                            &number,
                        ));
                    }
                }
            }
            self.out
                .push(Elem::Space(if h.level == 1 { 4.0 } else { 1.0 }));
        }
    }
}

/// Column widths: their natural widths when these fit in `w`; else each keeps what it
/// needs up to a fair share, and the wider ones divide the rest in proportion.
fn share(natural: &[f32], w: f32) -> Vec<f32> {
    let total: f32 = natural.iter().sum();
    if total <= w {
        return natural.to_vec();
    }
    let fair = w / natural.len() as f32;
    let small: f32 = natural.iter().filter(|&&n| n <= fair).sum();
    let wide: f32 = natural.iter().filter(|&&n| n > fair).sum();
    let rest = w - small;
    natural
        .iter()
        .map(|&n| if n <= fair { n } else { n / wide * rest })
        .collect()
}

/// The four edges of a rectangle, `t` thick.
fn outline(x: f32, y: f32, w: f32, h: f32, t: f32, color: Rgb) -> [Op; 4] {
    [
        Op::Rect {
            x,
            y,
            w,
            h: t,
            color,
        },
        Op::Rect {
            x,
            y: y + h - t,
            w,
            h: t,
            color,
        },
        Op::Rect {
            x,
            y,
            w: t,
            h,
            color,
        },
        Op::Rect {
            x: x + w - t,
            y,
            w: t,
            h,
            color,
        },
    ]
}

/// A frame open on the current page: where it started and where its background goes.
struct Opened {
    frame: Frame,
    y: f32,
    at: usize,
}

/// Draws the part of a frame between `o.y` and `end` on the page's `ops`.
fn draw_frame(ops: &mut Vec<Op>, o: &Opened, end: f32) {
    let (f, h) = (&o.frame, end - o.y);
    if h <= 0.0 {
        return;
    }
    if let Some(color) = f.fill {
        ops.insert(
            o.at,
            Op::Rect {
                x: f.x,
                y: o.y,
                w: f.w,
                h,
                color,
            },
        );
    }
    if let Some(color) = f.border {
        ops.extend(outline(f.x, o.y, f.w, h, 0.5, color));
    }
    if let Some((color, bw)) = f.bar {
        ops.push(Op::Rect {
            x: f.x,
            y: o.y,
            w: bw,
            h,
            color,
        });
    }
}

/// Fills pages from the stream; records each anchor's page and `y` in `anchors`.
fn paginate(elems: Vec<Elem>, anchors: &mut [(usize, f32)]) -> Vec<Vec<Op>> {
    // The height of the next box after each element (for boxes kept with the next).
    let mut next = vec![0.0f32; elems.len() + 1];
    for i in (0..elems.len()).rev() {
        next[i] = match elems.get(i + 1) {
            Some(Elem::Box(b)) => b.h,
            _ => next[i + 1],
        };
    }
    let mut pages = Vec::new();
    let mut ops: Vec<Op> = Vec::new();
    let mut open: Vec<Opened> = Vec::new();
    let mut y = TOP;
    // Nothing placed on the page yet (a repeated header does not count).
    let mut fresh = true;
    let mut waiting = Vec::new();
    let new_page =
        |pages: &mut Vec<Vec<Op>>, ops: &mut Vec<Op>, open: &mut Vec<Opened>, y: &mut f32| {
            for o in open.iter().rev() {
                draw_frame(ops, o, *y);
            }
            pages.push(std::mem::take(ops));
            *y = TOP;
            for o in open.iter_mut() {
                o.y = *y;
                o.at = ops.len();
                if let Some(b) = &o.frame.repeat {
                    for op in &b.ops {
                        let mut op = op.clone();
                        op.shift(*y);
                        ops.push(op);
                    }
                    *y += b.h;
                }
            }
        };
    for (i, e) in elems.into_iter().enumerate() {
        match e {
            Elem::Space(h) => {
                if !fresh {
                    y += h;
                }
            }
            Elem::Box(b) => {
                let need = b.h + if b.keep { next[i] } else { 0.0 };
                if !fresh && y + need > BOTTOM {
                    new_page(&mut pages, &mut ops, &mut open, &mut y);
                }
                for a in waiting.drain(..) {
                    if let Some(slot) = anchors.get_mut(a) {
                        *slot = (pages.len(), y);
                    }
                }
                for mut op in b.ops {
                    op.shift(y);
                    ops.push(op);
                }
                y += b.h;
                fresh = false;
            }
            Elem::Open(frame) => open.push(Opened {
                frame,
                y,
                at: ops.len(),
            }),
            Elem::Close => {
                if let Some(o) = open.pop() {
                    draw_frame(&mut ops, &o, y);
                }
            }
            Elem::PageBreak => {
                if !fresh {
                    new_page(&mut pages, &mut ops, &mut open, &mut y);
                    fresh = true;
                }
            }
            // Placed with the box that follows it, wherever that lands.
            Elem::Anchor(a) => waiting.push(a),
        }
    }
    for o in open.iter().rev() {
        draw_frame(&mut ops, o, y);
    }
    if !ops.is_empty() || pages.is_empty() {
        pages.push(ops);
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Fonts;
    use quire_content::model::Page;

    fn laid_out(pages: Vec<Page>) -> Document {
        let book = crate::book::tests::book_of(pages, usize::MAX);
        let fonts = Fonts::new(Vec::new());
        let faces = Faces::new(&fonts);
        lay_out(&book, &faces, &HashMap::new(), &HashMap::new())
    }

    /// The text drawn on a page, piece by piece.
    fn texts(ops: &[Op]) -> Vec<&str> {
        ops.iter()
            .filter_map(|op| match op {
                Op::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_long_table_repeats_its_header_on_every_page() {
        let rows: String = (0..300).map(|i| format!("| r{i} | x |\n")).collect();
        let doc = laid_out(vec![Page::document(
            "a",
            "A",
            "a",
            &format!("| Heading | B |\n| --- | --- |\n{rows}"),
        )]);
        // Title page, then the body (one page: no table of contents).
        let body = &doc.pages[1..];
        assert!(body.len() >= 4, "{} pages", body.len());
        for page in body {
            assert!(texts(page).contains(&"Heading"), "{:?}", texts(page));
        }
        // Every row is there once, in order.
        let rows: Vec<&str> = body
            .iter()
            .flat_map(|p| texts(p))
            .filter(|t| t.starts_with('r'))
            .collect();
        assert_eq!(rows.len(), 300);
        assert_eq!(rows[299], "r299");
        // Nothing is drawn past the foot of the page.
        for page in body {
            for op in page {
                if let Op::Rect { y, h, .. } = op {
                    assert!(y + h <= PAGE_H - MARGIN_Y / 2.0, "{op:?}");
                }
            }
        }
    }

    #[test]
    fn links_to_pages_lead_to_their_headings() {
        let filler = "Some text.\n\n".repeat(200);
        let doc = laid_out(vec![
            Page::document(
                "a",
                "First",
                "a",
                &format!("See [second](/pages/b).\n\n{filler}"),
            ),
            Page::document("b", "Second", "b", "Here.\n"),
        ]);
        // The first link of the body (the table of contents, page 1, has its own).
        let link = doc.pages[2..]
            .iter()
            .flatten()
            .find_map(|op| match op {
                Op::Link { to, .. } => Some(*to),
                _ => None,
            })
            .expect("a link");
        let Target::Anchor(anchor) = doc.links[link] else {
            panic!("{:?}", doc.links[link]);
        };
        let (page, _) = doc.anchors[anchor];
        assert!(texts(&doc.pages[page]).contains(&"Second"));
        assert!(
            page > 3,
            "after the title, contents and the first chapter: {page}"
        );
        // The table of contents (one page, after the title) gives the same page's number:
        // the body is numbered from 1.
        let number = (page - 2 + 1).to_string();
        assert!(
            texts(&doc.pages[1]).contains(&number.as_str()),
            "{:?}",
            texts(&doc.pages[1])
        );
    }

    #[test]
    fn a_word_wider_than_the_line_is_cut_and_right_to_left_text_is_set_from_the_right() {
        // Long enough that shaping it in more than linear time would not end.
        let long = "x".repeat(100_000);
        let doc = laid_out(vec![Page::document(
            "a",
            "A",
            "a",
            &format!("{long}\n\nمرحبا بالعالم\n"),
        )]);
        let xs: Vec<(f32, &str)> = doc.pages[1..]
            .iter()
            .flatten()
            .filter_map(|op| match op {
                Op::Text { x, text, .. } => Some((*x, text.as_str())),
                _ => None,
            })
            .collect();
        let cut: usize = xs
            .iter()
            .filter(|(_, t)| t.starts_with('x'))
            .map(|(_, t)| t.len())
            .sum();
        assert_eq!(cut, 100_000);
        assert!(xs.iter().filter(|(_, t)| t.starts_with('x')).count() > 1_000);
        let (x, _) = xs.iter().find(|(_, t)| t.starts_with('م')).unwrap();
        assert!(*x > PAGE_W / 2.0, "the first word is on the right: {x}");
    }
}
