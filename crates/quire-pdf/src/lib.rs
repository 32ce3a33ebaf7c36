//! Quire's PDF export: the pages of a revision typeset by typst, used as a library.
//!
//! The page documents are turned into a [`Book`] of plain data (runs of text, code, tables,
//! images…), passed to one fixed typst template as a JSON file and image bytes; the template
//! places every string as text, so nothing a page contains is ever parsed as typst markup or
//! code. Fonts: Libertinus Serif and DejaVu Sans Mono, shipped in `fonts/` (Latin, Greek and
//! Cyrillic), plus any the caller adds (CJK, Arabic…).
//!
//! Pure: no I/O and no async. Typesetting is CPU heavy: callers run it on a blocking thread
//! with the caps of [`Limits`].

#![warn(missing_docs)]

pub mod book;

use std::sync::{Arc, LazyLock, Mutex};

pub use book::{build, Book, Selection};

use typst::diag::{FileError, FileResult};
use typst::foundations::{Bytes, Datetime, Dict, Str, Value};
use typst::syntax::{FileId, RootedPath, Source, VirtualPath, VirtualRoot};
use typst::text::{Font, FontBook};
use typst::utils::LazyHash;
use typst::{Library, LibraryExt, World};
use typst_layout::PagedDocument;

/// The fixed template (never changed by input).
const TEMPLATE: &str = include_str!("template.typ");

/// The default [`Selection::max_blocks`]: typesetting takes about 10 KiB a block, so a
/// book at the cap takes some 500 MiB while it is typeset.
pub const DEFAULT_MAX_BLOCKS: usize = 50_000;

/// Bounds of one rendering.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most bytes of images embedded in all; images past it are shown as their alt text.
    pub max_image_bytes: usize,
    /// Most pixels of one image, read from its header before anything decodes it: the
    /// typesetter holds every image decoded (up to 8 bytes a pixel) until the PDF is
    /// written. A larger image is left out with a note in its place.
    pub max_image_pixels: u64,
    /// Most pixels of all the images of one PDF together; the images past it are left out
    /// with a note in their place.
    pub max_total_pixels: u64,
    /// Most output pages; a longer result is refused.
    pub max_output_pages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_image_bytes: 64 * 1024 * 1024,
            max_image_pixels: 25_000_000,
            max_total_pixels: 64_000_000,
            max_output_pages: 5_000,
        }
    }
}

/// Why a book could not be typeset.
#[derive(Debug, thiserror::Error)]
pub enum PdfError {
    /// The typesetter refused the book (its first error).
    #[error("typesetting failed: {0}")]
    Typeset(String),
    /// The result was longer than [`Limits::max_output_pages`].
    #[error("the PDF would have {0} pages, more than the {1} allowed")]
    TooLong(usize, usize),
    /// The book was larger than [`Selection::max_blocks`] (at least this many blocks, of
    /// that many allowed); it was not typeset.
    #[error("the content has at least {0} blocks, more than the {1} a PDF may have")]
    TooLarge(usize, usize),
}

/// Fonts available to the typesetter: the shipped ones, plus extra ones.
#[derive(Clone)]
pub struct Fonts {
    book: Arc<LazyHash<FontBook>>,
    fonts: Arc<Vec<Font>>,
}

impl std::fmt::Debug for Fonts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fonts({})", self.fonts.len())
    }
}

/// The fonts shipped in `fonts/` (see `fonts/LICENSES.txt`): Libertinus Serif for text
/// (Latin, Greek, Cyrillic), DejaVu Sans Mono for code.
const SHIPPED: &[&[u8]] = &[
    include_bytes!("../fonts/LibertinusSerif-Regular.otf"),
    include_bytes!("../fonts/LibertinusSerif-Bold.otf"),
    include_bytes!("../fonts/LibertinusSerif-Italic.otf"),
    include_bytes!("../fonts/LibertinusSerif-BoldItalic.otf"),
    include_bytes!("../fonts/DejaVuSansMono.ttf"),
    include_bytes!("../fonts/DejaVuSansMono-Bold.ttf"),
];

static EMBEDDED: LazyLock<Vec<Font>> = LazyLock::new(|| {
    SHIPPED
        .iter()
        .flat_map(|data| Font::iter(Bytes::new(*data)))
        .collect()
});

impl Fonts {
    /// The shipped fonts, and the fonts in `extra` (TrueType/OpenType files or collections;
    /// what cannot be read is skipped).
    pub fn new(extra: Vec<Vec<u8>>) -> Fonts {
        let mut fonts: Vec<Font> = EMBEDDED.clone();
        for data in extra {
            fonts.extend(Font::iter(Bytes::new(data)));
        }
        Fonts {
            book: Arc::new(LazyHash::new(FontBook::from_fonts(&fonts))),
            fonts: Arc::new(fonts),
        }
    }

    /// Names of the font families available.
    pub fn families(&self) -> Vec<String> {
        let mut names: Vec<String> = self.fonts.iter().map(|f| f.info().family.clone()).collect();
        names.dedup();
        names
    }
}

/// Typesets `book` with `images` (key → bytes, as [`Book::images`] names them) into a PDF.
/// Images that do not decode are left out (their alt text shows instead); images past the
/// caps of [`Limits`] are never decoded and show a note saying why they are missing.
pub fn render(
    book: &Book,
    images: &[(String, Vec<u8>)],
    fonts: &Fonts,
    limits: &Limits,
) -> Result<Vec<u8>, PdfError> {
    if book.blocks > book.max_blocks {
        return Err(PdfError::TooLarge(book.blocks, book.max_blocks));
    }
    let (kept, notes) = admit(images, limits);
    let first = match typeset(book, &kept, &notes, fonts, limits) {
        // An image that does not decode fails the whole document: typeset it without images.
        Err(PdfError::Typeset(_)) if !kept.is_empty() => typeset(book, &[], &notes, fonts, limits),
        other => other,
    };
    match first {
        // Whatever else the typesetter could not place, the text is still printed.
        Err(PdfError::Typeset(_)) => typeset(&book.plain(), &[], &Dict::new(), fonts, limits),
        other => other,
    }
}

/// The images within the caps, in order, and a note (key → text) for each one left out.
/// Sizes come from the images' headers: nothing is decoded here, and an image whose header
/// cannot be read is left to the typesetter, which shows its alt text when it fails.
fn admit<'a>(
    images: &'a [(String, Vec<u8>)],
    limits: &Limits,
) -> (Vec<&'a (String, Vec<u8>)>, Dict) {
    let mut bytes_left = limits.max_image_bytes;
    let mut pixels_left = limits.max_total_pixels;
    let mut kept = Vec::new();
    let mut notes = Dict::new();
    for image in images {
        let (key, bytes) = image;
        let Ok(size) = imagesize::blob_size(bytes) else {
            continue;
        };
        let pixels = (size.width as u64).saturating_mul(size.height as u64);
        let refused = if pixels > limits.max_image_pixels {
            Some(format!(
                "image left out: {} × {} pixels, more than the {} an image may have in a PDF",
                size.width, size.height, limits.max_image_pixels
            ))
        } else if pixels > pixels_left || bytes.len() > bytes_left {
            Some(format!(
                "image left out: the images before it take all the room a PDF has for images ({} pixels, {} bytes)",
                limits.max_total_pixels, limits.max_image_bytes
            ))
        } else {
            None
        };
        match refused {
            Some(note) => {
                notes.insert(Str::from(key.as_str()), Value::Str(Str::from(note)));
            }
            None => {
                pixels_left -= pixels;
                bytes_left -= bytes.len();
                kept.push(image);
            }
        }
    }
    (kept, notes)
}

/// One typesetting run at a time per process: typst's memoisation cache is global, and
/// emptied after each run so that it never grows with the documents rendered.
static RUN: Mutex<()> = Mutex::new(());

fn typeset(
    book: &Book,
    images: &[&(String, Vec<u8>)],
    notes: &Dict,
    fonts: &Fonts,
    limits: &Limits,
) -> Result<Vec<u8>, PdfError> {
    let json = serde_json::to_vec(book).map_err(|e| PdfError::Typeset(e.to_string()))?;
    let image_dict: Dict = images
        .iter()
        .map(|(k, b)| (Str::from(k.as_str()), Value::Bytes(Bytes::new(b.clone()))))
        .collect();
    let inputs: Dict = [
        (Str::from("images"), Value::Dict(image_dict)),
        (Str::from("notes"), Value::Dict(notes.clone())),
    ]
    .into_iter()
    .collect();
    let world = BookWorld {
        library: LazyHash::new(Library::builder().with_inputs(inputs).build()),
        fonts: fonts.clone(),
        main: Source::new(*MAIN, TEMPLATE.to_string()),
        json: Bytes::new(json),
    };
    let _guard = RUN.lock().unwrap_or_else(|p| p.into_inner());
    let result = typst::compile::<PagedDocument>(&world).output;
    let out = match result {
        Ok(doc) if doc.pages().len() > limits.max_output_pages => Err(PdfError::TooLong(
            doc.pages().len(),
            limits.max_output_pages,
        )),
        Ok(doc) => typst_pdf::pdf(&doc, &typst_pdf::PdfOptions::default()).map_err(first_error),
        Err(errors) => Err(first_error(errors)),
    };
    typst::comemo::evict(0);
    out
}

fn first_error(errors: impl IntoIterator<Item = typst::diag::SourceDiagnostic>) -> PdfError {
    PdfError::Typeset(
        errors
            .into_iter()
            .next()
            .map(|e| e.message.to_string())
            .unwrap_or_else(|| "unknown error".into()),
    )
}

static MAIN: LazyLock<FileId> = LazyLock::new(|| path_id("/main.typ"));
static JSON: LazyLock<FileId> = LazyLock::new(|| path_id("/book.json"));

fn path_id(path: &str) -> FileId {
    RootedPath::new(
        VirtualRoot::Project,
        VirtualPath::new(path).expect("a fixed, valid path"),
    )
    .intern()
}

/// The typesetter's whole world: the template, the book's JSON, fonts. Nothing else can be
/// read (no files, no packages), and the date is fixed, so a book always typesets the same.
struct BookWorld {
    library: LazyHash<Library>,
    fonts: Fonts,
    main: Source,
    json: Bytes,
}

impl World for BookWorld {
    fn library(&self) -> &LazyHash<Library> {
        &self.library
    }

    fn book(&self) -> &LazyHash<FontBook> {
        &self.fonts.book
    }

    fn main(&self) -> FileId {
        self.main.id()
    }

    fn source(&self, id: FileId) -> FileResult<Source> {
        if id == self.main.id() {
            Ok(self.main.clone())
        } else {
            Err(FileError::AccessDenied)
        }
    }

    fn file(&self, id: FileId) -> FileResult<Bytes> {
        if id == *JSON {
            Ok(self.json.clone())
        } else if id == self.main.id() {
            Ok(Bytes::from_string(self.main.clone()))
        } else {
            Err(FileError::AccessDenied)
        }
    }

    fn font(&self, index: usize) -> Option<Font> {
        self.fonts.fonts.get(index).cloned()
    }

    fn today(&self, _offset: Option<typst::foundations::Duration>) -> Option<Datetime> {
        Datetime::from_ymd(2000, 1, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_content::model::{Page, Revision};

    fn book(pages: Vec<Page>) -> Book {
        build(
            &Revision {
                pages,
                ..Revision::default()
            },
            &Selection {
                title: "Title #panic(\"t\")",
                subtitle: None,
                footer: None,
                page: None,
                only: false,
                max_pages: 100,
                max_blocks: DEFAULT_MAX_BLOCKS,
            },
        )
    }

    #[test]
    fn typesets_a_book_with_hostile_text() {
        let b = book(vec![
            Page::document(
                "a",
                "Привет #let x = 1",
                "a",
                "## Head ] [ #read(\"/etc/passwd\")\n\nText with $x$ and @ref and <lbl> and \\ and `#code()`.\n\n```typst\n#panic(\"inside code\")\n```\n\n| a | b |\n| --- | --- |\n| #x | ] |\n\n{% hint style=\"danger\" %}\n#panic(\"hint\")\n{% endhint %}\n",
            ),
            Page::document("b", "Second", "b", "See [first](/pages/a) and [web](https://example.com) and [js](javascript:alert(1)).\n"),
        ]);
        let pdf = render(&b, &[], &Fonts::new(Vec::new()), &Limits::default()).unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
        assert!(!String::from_utf8_lossy(&pdf).contains("javascript:"));
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let mut md = String::new();
        for depth in 0..40 {
            md.push_str(&"  ".repeat(depth));
            md.push_str("- item\n");
        }
        let mut quote = String::new();
        for _ in 0..60 {
            quote.push('>');
        }
        quote.push_str(" deep\n");
        let b = book(vec![Page::document(
            "a",
            "A",
            "a",
            &format!("{md}\n{quote}"),
        )]);
        let pdf = render(&b, &[], &Fonts::new(Vec::new()), &Limits::default()).unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
    }

    #[test]
    fn broken_images_fall_back_to_text() {
        let mut b = book(vec![Page::document("a", "A", "a", "Text.\n")]);
        b.pages[0].blocks.push(book::Block::Img {
            key: "i0".into(),
            alt: "broken".into(),
            caption: Vec::new(),
        });
        let pdf = render(
            &b,
            &[("i0".to_string(), b"\x89PNG not really".to_vec())],
            &Fonts::new(Vec::new()),
            &Limits::default(),
        )
        .unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
    }

    #[test]
    fn what_does_not_typeset_is_printed_as_plain_text() {
        let mut b = book(vec![Page::document("a", "A", "a", "Before.\n")]);
        // A table of no columns, which the template cannot lay out.
        b.pages[0].blocks.push(book::Block::Table {
            cols: 0,
            header: Vec::new(),
            rows: vec![vec![vec![book::Run {
                t: "kept cell".into(),
                ..book::Run::default()
            }]]],
        });
        let fonts = Fonts::new(Vec::new());
        assert!(matches!(
            typeset(&b, &[], &Dict::new(), &fonts, &Limits::default()),
            Err(PdfError::Typeset(_))
        ));
        let pdf = render(&b, &[], &fonts, &Limits::default()).unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
        let plain = serde_json::to_string(&b.plain()).unwrap();
        assert!(
            plain.contains("kept cell") && plain.contains("Before."),
            "{plain}"
        );
        assert!(!plain.contains("\"table\""), "{plain}");
    }

    #[test]
    fn output_page_cap() {
        let pages = (0..5)
            .map(|i| Page::document(&format!("p{i}"), "P", &format!("p{i}"), "Text.\n"))
            .collect();
        let b = book(pages);
        let err = render(
            &b,
            &[],
            &Fonts::new(Vec::new()),
            &Limits {
                max_output_pages: 2,
                ..Limits::default()
            },
        )
        .unwrap_err();
        assert!(matches!(err, PdfError::TooLong(_, 2)));
    }
}
