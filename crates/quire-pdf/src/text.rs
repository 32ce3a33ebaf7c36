//! Fonts, shaping and line breaking: text in styled spans becomes lines of shaped glyphs.
//!
//! Each character is set in the first font of its style's chain that has it (the shipped
//! serif or monospace face, then the other shipped family, then the operator's fonts), so
//! that Cyrillic, CJK or Arabic text prints with whatever font covers it. Lines break at
//! the Unicode line-break opportunities (UAX #14); a word wider than the line is cut
//! between characters. A paragraph whose first strong character is right-to-left is set
//! from the right, its words in reverse order; each word is shaped in its own direction.

use std::sync::{Arc, LazyLock};

use krilla::text::{GlyphId, KrillaGlyph};
use rustybuzz::ttf_parser;

/// The fonts shipped in `fonts/` (see `fonts/LICENSES.txt`), in the order [`Style::primary`]
/// counts on: Libertinus Serif regular, bold, italic and bold italic (Latin, Greek,
/// Cyrillic), then DejaVu Sans Mono regular and bold for code.
const SHIPPED: &[&[u8]] = &[
    include_bytes!("../fonts/LibertinusSerif-Regular.otf"),
    include_bytes!("../fonts/LibertinusSerif-Bold.otf"),
    include_bytes!("../fonts/LibertinusSerif-Italic.otf"),
    include_bytes!("../fonts/LibertinusSerif-BoldItalic.otf"),
    include_bytes!("../fonts/DejaVuSansMono.ttf"),
    include_bytes!("../fonts/DejaVuSansMono-Bold.ttf"),
];

static EMBEDDED: LazyLock<Vec<FontFile>> = LazyLock::new(|| {
    SHIPPED
        .iter()
        .flat_map(|data| FontFile::all(krilla::Data::from(*data)))
        .collect()
});

/// One face of a font file.
#[derive(Clone)]
struct FontFile {
    data: krilla::Data,
    index: u32,
    pdf: krilla::text::Font,
    family: String,
    bold: bool,
}

impl FontFile {
    /// Every face of a font file or collection that can be read.
    fn all(data: krilla::Data) -> Vec<FontFile> {
        let count = ttf_parser::fonts_in_collection(data.as_ref()).unwrap_or(1);
        (0..count)
            .filter_map(|index| {
                let face = ttf_parser::Face::parse(data.as_ref(), index).ok()?;
                let family = [
                    ttf_parser::name_id::TYPOGRAPHIC_FAMILY,
                    ttf_parser::name_id::FAMILY,
                ]
                .iter()
                .find_map(|id| {
                    face.names()
                        .into_iter()
                        .filter(|n| n.name_id == *id && n.is_unicode())
                        .find_map(|n| n.to_string())
                })
                .unwrap_or_default();
                let bold = face.is_bold();
                // Shaping needs the face in rustybuzz's terms too: a font it cannot read is left out.
                rustybuzz::Face::from_slice(data.as_ref(), index)?;
                let pdf = krilla::text::Font::new(data.clone(), index)?;
                Some(FontFile {
                    data: data.clone(),
                    index,
                    pdf,
                    family,
                    bold,
                })
            })
            .collect()
    }
}

/// Fonts available to the PDF export: the shipped ones, plus extra ones.
#[derive(Clone)]
pub struct Fonts {
    files: Arc<Vec<FontFile>>,
}

impl std::fmt::Debug for Fonts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fonts({})", self.files.len())
    }
}

impl Fonts {
    /// The shipped fonts, and the fonts in `extra` (TrueType/OpenType files or collections;
    /// what cannot be read is skipped).
    pub fn new(extra: Vec<Vec<u8>>) -> Fonts {
        let mut files: Vec<FontFile> = EMBEDDED.clone();
        for data in extra {
            files.extend(FontFile::all(krilla::Data::from(data)));
        }
        Fonts {
            files: Arc::new(files),
        }
    }

    /// Names of the font families available.
    pub fn families(&self) -> Vec<String> {
        let mut names: Vec<String> = self.files.iter().map(|f| f.family.clone()).collect();
        names.dedup();
        names
    }
}

/// How a span's text is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Style {
    pub mono: bool,
    pub bold: bool,
    pub italic: bool,
}

impl Style {
    /// Bold serif.
    pub const BOLD: Style = Style {
        mono: false,
        bold: true,
        italic: false,
    };
    /// Italic serif.
    pub const ITALIC: Style = Style {
        mono: false,
        bold: false,
        italic: true,
    };
    /// Monospace.
    pub const MONO: Style = Style {
        mono: true,
        bold: false,
        italic: false,
    };

    /// Index of its shipped face in [`SHIPPED`] (monospace has no italic).
    fn primary(self) -> usize {
        match (self.mono, self.bold, self.italic) {
            (true, bold, _) => 4 + bold as usize,
            (false, bold, italic) => bold as usize + 2 * italic as usize,
        }
    }

    fn index(self) -> usize {
        self.mono as usize * 4 + self.bold as usize * 2 + self.italic as usize
    }
}

/// An RGB colour.
pub(crate) type Rgb = (u8, u8, u8);

/// A run of text with one style.
#[derive(Clone, Debug)]
pub(crate) struct Span {
    pub text: String,
    pub style: Style,
    pub size: f32,
    pub color: Rgb,
    pub strike: bool,
    /// Index of its link target in the layout's links, if it is a link.
    pub link: Option<usize>,
}

impl Span {
    /// Text of one style, neither struck nor linked.
    pub fn new(text: &str, style: Style, size: f32, color: Rgb) -> Span {
        Span {
            text: text.to_string(),
            style,
            size,
            color,
            strike: false,
            link: None,
        }
    }
}

/// Shaped text in one face, placed on a line.
#[derive(Clone, Debug)]
pub(crate) struct Piece {
    /// Offset from the line's left edge.
    pub x: f32,
    pub width: f32,
    pub span: usize,
    pub face: usize,
    pub glyphs: Vec<KrillaGlyph>,
    pub text: String,
}

/// One line of a paragraph.
#[derive(Clone, Debug, Default)]
pub(crate) struct Line {
    pub width: f32,
    /// The largest text size on it (the line's height is set from it).
    pub size: f32,
    pub pieces: Vec<Piece>,
}

/// The fonts of one rendering, parsed for shaping.
pub(crate) struct Faces<'a> {
    files: &'a [FontFile],
    faces: Vec<rustybuzz::Face<'a>>,
    /// For each [`Style::index`], the faces to try, in order.
    chains: Vec<Vec<usize>>,
}

impl<'a> Faces<'a> {
    pub fn new(fonts: &'a Fonts) -> Faces<'a> {
        let files = fonts.files.as_slice();
        let faces = files
            .iter()
            .map(|f| {
                rustybuzz::Face::from_slice(f.data.as_ref(), f.index)
                    .expect("checked when the font was loaded")
            })
            .collect();
        let chains = (0..8)
            .map(|i| {
                let style = Style {
                    mono: i & 4 != 0,
                    bold: i & 2 != 0,
                    italic: i & 1 != 0,
                };
                let first = style.primary();
                let other = Style {
                    mono: !style.mono,
                    ..style
                }
                .primary();
                let mut chain = vec![first, other];
                // The operator's fonts of the same weight first, then the rest.
                let extra = SHIPPED.len()..files.len();
                chain.extend(extra.clone().filter(|&i| files[i].bold == style.bold));
                chain.extend(extra.filter(|&i| files[i].bold != style.bold));
                let rest: Vec<usize> = (0..SHIPPED.len()).filter(|i| !chain.contains(i)).collect();
                chain.extend(rest);
                chain
            })
            .collect();
        Faces {
            files,
            faces,
            chains,
        }
    }

    /// The PDF font of a face.
    pub fn pdf(&self, face: usize) -> krilla::text::Font {
        self.files[face].pdf.clone()
    }

    /// The face that sets `c` in `style`, given the face of the character before it.
    fn face_for(&self, style: Style, c: char, prev: Option<usize>) -> usize {
        let chain = &self.chains[style.index()];
        if c.is_whitespace() || c.is_control() {
            return prev.unwrap_or(chain[0]);
        }
        // Marks and joiners stay with the character they modify.
        if let Some(p) = prev.filter(|_| combining(c)) {
            if self.faces[p].glyph_index(c).is_some() {
                return p;
            }
        }
        chain
            .iter()
            .copied()
            .find(|&f| self.faces[f].glyph_index(c).is_some())
            .unwrap_or(chain[0])
    }

    /// Shapes `text` in one face at `size`: its glyphs and its width.
    fn shape(&self, face: usize, text: &str, size: f32) -> (Vec<KrillaGlyph>, f32) {
        let f = &self.faces[face];
        let mut buffer = rustybuzz::UnicodeBuffer::new();
        buffer.push_str(text);
        buffer.guess_segment_properties();
        let out = rustybuzz::shape(f, &[], buffer);
        let upem = f.units_per_em() as f32;
        let infos = out.glyph_infos();
        // A glyph's text is its cluster up to the next larger cluster (clusters run
        // backwards in right-to-left text).
        let mut starts: Vec<usize> = infos.iter().map(|i| i.cluster as usize).collect();
        starts.sort_unstable();
        starts.dedup();
        let mut width = 0.0;
        let glyphs = infos
            .iter()
            .zip(out.glyph_positions())
            .map(|(info, pos)| {
                let start = info.cluster as usize;
                let next = starts.partition_point(|&s| s <= start);
                let end = starts.get(next).copied().unwrap_or(text.len());
                width += pos.x_advance as f32 / upem * size;
                KrillaGlyph::new(
                    GlyphId::new(info.glyph_id),
                    pos.x_advance as f32 / upem,
                    pos.x_offset as f32 / upem,
                    -pos.y_offset as f32 / upem,
                    pos.y_advance as f32 / upem,
                    start..end,
                    None,
                )
            })
            .collect();
        (glyphs, width)
    }

    /// The pieces of `text` (all of one span) split where the face changes, shaped.
    fn pieces(&self, span: usize, s: &Span, text: &str, out: &mut Vec<Piece>) -> f32 {
        let mut width = 0.0;
        let mut start = 0;
        let mut face: Option<usize> = None;
        let mut flush = |from: usize, to: usize, face: usize, out: &mut Vec<Piece>| {
            if from < to {
                let t = &text[from..to];
                let (glyphs, w) = self.shape(face, t, s.size);
                out.push(Piece {
                    x: 0.0,
                    width: w,
                    span,
                    face,
                    glyphs,
                    text: t.to_string(),
                });
                width += w;
            }
        };
        for (i, c) in text.char_indices() {
            let f = self.face_for(s.style, c, face);
            if face.is_some_and(|p| p != f) {
                flush(start, i, face.unwrap_or(f), out);
                start = i;
            }
            face = Some(f);
        }
        if let Some(f) = face {
            flush(start, text.len(), f, out);
        }
        width
    }

    /// Breaks styled text into lines at most `width` wide.
    pub fn lines(&self, spans: &[Span], width: f32) -> Vec<Line> {
        let mut text = String::new();
        let mut bounds = Vec::with_capacity(spans.len());
        for s in spans {
            text.push_str(&s.text);
            bounds.push(text.len());
        }
        if text.trim().is_empty() {
            return Vec::new();
        }
        let mut lines = Vec::new();
        let mut line = Line::default();
        // Width of the spaces after the line's last word: counted only if a word follows.
        let mut pending = 0.0;
        let mut prev = 0;
        for (at, opportunity) in unicode_linebreak::linebreaks(&text) {
            let segment = &text[prev..at];
            let body_len = segment.trim_end().len();
            let (body, gap) = (prev..prev + body_len, prev + body_len..at);
            prev = at;
            let mut pieces = Vec::new();
            let w = self.range(spans, &bounds, &text, body.clone(), &mut pieces);
            if !pieces.is_empty() {
                if !line.pieces.is_empty() && line.width + pending + w > width {
                    lines.push(std::mem::take(&mut line));
                    pending = 0.0;
                }
                if w > width && line.pieces.is_empty() {
                    // Wider than a line alone: cut between characters.
                    self.cut(spans, &bounds, &text, body, width, &mut lines, &mut line);
                } else {
                    place(&mut line, pieces, pending, spans);
                }
                pending = 0.0;
            }
            let mut spaces = Vec::new();
            pending += self.range(spans, &bounds, &text, gap, &mut spaces);
            if opportunity == unicode_linebreak::BreakOpportunity::Mandatory {
                lines.push(std::mem::take(&mut line));
                pending = 0.0;
            }
        }
        if !line.pieces.is_empty() {
            lines.push(line);
        }
        // A line of no text still takes a line's height (two breaks in a row).
        let size = spans.iter().map(|s| s.size).fold(0.0, f32::max);
        for l in &mut lines {
            if l.size == 0.0 {
                l.size = size;
            }
        }
        while lines.last().is_some_and(|l| l.pieces.is_empty()) {
            lines.pop();
        }
        if starts_right_to_left(&text) {
            for l in &mut lines {
                for p in &mut l.pieces {
                    p.x = width - p.x - p.width;
                }
            }
        }
        lines
    }

    /// Shapes the text of `range`, which may cross spans; its width.
    fn range(
        &self,
        spans: &[Span],
        bounds: &[usize],
        text: &str,
        range: std::ops::Range<usize>,
        out: &mut Vec<Piece>,
    ) -> f32 {
        let mut width = 0.0;
        let mut from = range.start;
        let first = bounds.partition_point(|&b| b <= range.start);
        for (i, &end) in bounds.iter().enumerate().skip(first) {
            let to = end.min(range.end);
            if from < to {
                width += self.pieces(i, &spans[i], &text[from..to], out);
            }
            from = to;
            if end >= range.end {
                break;
            }
        }
        width
    }

    /// Sets a word wider than `width` on as many lines as it needs, cut between characters.
    #[allow(clippy::too_many_arguments)]
    fn cut(
        &self,
        spans: &[Span],
        bounds: &[usize],
        text: &str,
        range: std::ops::Range<usize>,
        width: f32,
        lines: &mut Vec<Line>,
        line: &mut Line,
    ) {
        let mut start = range.start;
        let mut chars = text[range.clone()].char_indices().peekable();
        while start < range.end {
            // Take characters while they fit, at least one.
            let mut end = start;
            let mut used = 0.0;
            let mut face = None;
            while let Some(&(i, c)) = chars.peek() {
                let at = range.start + i;
                let s = &spans[bounds.partition_point(|&b| b <= at)];
                let f = self.face_for(s.style, c, face);
                face = Some(f);
                // The character's own advance: shaping each one alone would cost as much
                // as the rest of the paragraph.
                let font = &self.faces[f];
                let w = font
                    .glyph_index(c)
                    .and_then(|g| font.glyph_hor_advance(g))
                    .unwrap_or(0) as f32
                    / font.units_per_em() as f32
                    * s.size;
                if end > start && used + w > width {
                    break;
                }
                used += w;
                end = at + c.len_utf8();
                chars.next();
            }
            let mut pieces = Vec::new();
            self.range(spans, bounds, text, start..end, &mut pieces);
            place(line, pieces, 0.0, spans);
            start = end;
            if start < range.end {
                lines.push(std::mem::take(line));
            }
        }
    }
}

/// Appends pieces to a line after `gap` of space.
fn place(line: &mut Line, pieces: Vec<Piece>, gap: f32, spans: &[Span]) {
    let mut x = line.width + gap;
    for mut p in pieces {
        p.x = x;
        x += p.width;
        line.size = line.size.max(spans[p.span].size);
        line.pieces.push(p);
    }
    line.width = x;
}

/// Characters that modify the one before them: combining marks, joiners, variation selectors.
fn combining(c: char) -> bool {
    matches!(c as u32,
        0x0300..=0x036F | 0x0483..=0x0489 | 0x0591..=0x05BD | 0x064B..=0x065F | 0x0670
        | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x200C..=0x200D | 0x20D0..=0x20FF
        | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F)
}

/// Whether the first strong character of `text` is written right to left (Hebrew, Arabic,
/// Syriac, Thaana, N'Ko and their presentation forms).
fn starts_right_to_left(text: &str) -> bool {
    text.chars()
        .find(|c| c.is_alphabetic())
        .is_some_and(|c| matches!(c as u32, 0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF))
}
