//! Quire's PDF export: the pages of a revision laid out and written as a PDF.
//!
//! The page documents are turned into a [`Book`] of plain data (runs of text, code, tables,
//! images…), laid out by [`layout`] (line breaking, pages, a table of contents) with the
//! fonts of [`text`] (shaped by rustybuzz), and written by krilla (fonts subset and
//! embedded, images, links, bookmarks). Every string of a page is placed as text: nothing
//! in it is interpreted. Fonts: Libertinus Serif and DejaVu Sans Mono, shipped in `fonts/`
//! (Latin, Greek and Cyrillic), plus any the caller adds (CJK, Arabic…).
//!
//! Pure: no I/O and no async. Rendering is CPU bound: callers run it on a blocking thread
//! with the caps of [`Limits`].

#![warn(missing_docs)]

pub mod book;
mod layout;
mod text;

use std::collections::HashMap;

pub use book::{build, Book, Selection};
pub use text::Fonts;

use krilla::action::{Action, LinkAction};
use krilla::annotation::{Annotation, LinkAnnotation, Target};
use krilla::destination::{Destination, XyzDestination};
use krilla::geom::{PathBuilder, Point, Rect, Size, Transform};
use krilla::image::Image;
use krilla::outline::{Outline, OutlineNode};
use krilla::page::PageSettings;
use layout::{Op, Picture, PAGE_H, PAGE_W};
use text::Faces;

/// The default [`Selection::max_blocks`]: it bounds the time and memory of one PDF
/// (BENCHMARKS.md, "PDF").
pub const DEFAULT_MAX_BLOCKS: usize = 50_000;

/// Bounds of one rendering.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most bytes of images embedded in all; images past it are shown as their alt text.
    pub max_image_bytes: usize,
    /// Most pixels of one image, read from its header before anything decodes it: an
    /// image is held decoded (up to 8 bytes a pixel) while the PDF is written. A larger
    /// image is left out with a note in its place.
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

/// Why a book could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum PdfError {
    /// The PDF writer refused the book (an image that does not decode, a font that cannot
    /// be embedded).
    #[error("writing the PDF failed: {0}")]
    Typeset(String),
    /// The result was longer than [`Limits::max_output_pages`].
    #[error("the PDF would have {0} pages, more than the {1} allowed")]
    TooLong(usize, usize),
    /// The book was larger than [`Selection::max_blocks`] (at least this many blocks, of
    /// that many allowed); it was not laid out.
    #[error("the content has at least {0} blocks, more than the {1} a PDF may have")]
    TooLarge(usize, usize),
}

/// Renders `book` with `images` (key → bytes, as [`Book::images`] names them) into a PDF.
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
    match write(book, &kept, &notes, fonts, limits) {
        // An image whose body does not decode fails the whole document (images are
        // decoded as the PDF is written): write it again without images.
        Err(PdfError::Typeset(_)) if !kept.is_empty() => write(book, &[], &notes, fonts, limits),
        other => other,
    }
}

/// Why images were left out, by key.
type Notes<'a> = HashMap<&'a str, String>;

/// The images within the caps, in order, and a note (key → text) for each one left out.
/// Sizes come from the images' headers: nothing is decoded here, and an image whose header
/// cannot be read is left out (its alt text shows).
fn admit<'a>(
    images: &'a [(String, Vec<u8>)],
    limits: &Limits,
) -> (Vec<&'a (String, Vec<u8>)>, Notes<'a>) {
    let mut bytes_left = limits.max_image_bytes;
    let mut pixels_left = limits.max_total_pixels;
    let mut kept = Vec::new();
    let mut notes = HashMap::new();
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
                notes.insert(key.as_str(), note);
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

/// Lays the book out and writes the PDF.
fn write(
    book: &Book,
    images: &[&(String, Vec<u8>)],
    notes: &Notes<'_>,
    fonts: &Fonts,
    limits: &Limits,
) -> Result<Vec<u8>, PdfError> {
    let faces = Faces::new(fonts);
    let mut pictures = HashMap::new();
    let mut list = Vec::new();
    for (key, bytes) in images.iter().map(|i| (&i.0, &i.1)) {
        let data = krilla::Data::from(bytes.clone());
        // Formats the PDF writer embeds; others (SVG…) show their alt text.
        let image = match imagesize::image_type(bytes) {
            Ok(imagesize::ImageType::Png) => Image::from_png(data, true),
            Ok(imagesize::ImageType::Jpeg) => Image::from_jpeg(data, true),
            Ok(imagesize::ImageType::Gif) => Image::from_gif(data, true),
            Ok(imagesize::ImageType::Webp) => Image::from_webp(data, true),
            _ => continue,
        };
        let Ok(image) = image else { continue };
        let (width, height) = image.size();
        pictures.insert(
            key.as_str(),
            Picture {
                index: list.len(),
                width,
                height,
            },
        );
        list.push(image);
    }
    let doc = layout::lay_out(book, &faces, &pictures, notes);
    if doc.pages.len() > limits.max_output_pages {
        return Err(PdfError::TooLong(doc.pages.len(), limits.max_output_pages));
    }
    let destination = |anchor: usize| {
        let (page, y) = doc.anchors.get(anchor).copied().unwrap_or((0, 0.0));
        XyzDestination::new(page, Point::from_xy(0.0, (y - 12.0).max(0.0)))
    };
    let size = Size::from_wh(PAGE_W, PAGE_H).expect("A4 is a size");
    let mut pdf = krilla::Document::new();
    for ops in &doc.pages {
        let mut page = pdf.start_page_with(PageSettings::new(size));
        let mut links = Vec::new();
        let mut surface = page.surface();
        for op in ops {
            match op {
                Op::Text {
                    x,
                    y,
                    face,
                    size,
                    color,
                    glyphs,
                    text,
                } => {
                    surface.set_fill(Some(fill(*color)));
                    surface.draw_glyphs(
                        Point::from_xy(*x, *y),
                        glyphs,
                        faces.pdf(*face),
                        text,
                        *size,
                        false,
                    );
                }
                Op::Rect { x, y, w, h, color } => {
                    let mut path = PathBuilder::new();
                    if let Some(rect) = Rect::from_xywh(*x, *y, *w, *h) {
                        path.push_rect(rect);
                        if let Some(path) = path.finish() {
                            surface.set_fill(Some(fill(*color)));
                            surface.draw_path(&path);
                        }
                    }
                }
                Op::Image { x, y, w, h, key } => {
                    if let (Some(image), Some(size)) = (list.get(*key), Size::from_wh(*w, *h)) {
                        surface.push_transform(&Transform::from_translate(*x, *y));
                        surface.draw_image(image.clone(), size);
                        surface.pop();
                    }
                }
                Op::Link { x, y, w, h, to } => {
                    if let Some(rect) = Rect::from_xywh(*x, *y, *w, *h) {
                        links.push((rect, *to));
                    }
                }
            }
        }
        surface.finish();
        for (rect, to) in links {
            let target = match &doc.links[to] {
                layout::Target::Uri(uri) => {
                    Target::Action(Action::Link(LinkAction::new(uri.clone())))
                }
                layout::Target::Anchor(a) => Target::Destination(Destination::Xyz(destination(*a))),
            };
            page.add_annotation(Annotation::new_link(
                LinkAnnotation::new(rect, target),
                None,
            ));
        }
        page.finish();
    }
    // Bookmarks: the headings, nested by level.
    let mut outline = Outline::new();
    let mut stack: Vec<(usize, OutlineNode)> = Vec::new();
    let close = |stack: &mut Vec<(usize, OutlineNode)>, outline: &mut Outline| {
        if let Some((_, node)) = stack.pop() {
            match stack.last_mut() {
                Some((_, parent)) => parent.push_child(node),
                None => outline.push_child(node),
            }
        }
    };
    for h in &doc.headings {
        while stack.last().is_some_and(|(level, _)| *level >= h.level) {
            close(&mut stack, &mut outline);
        }
        stack.push((
            h.level,
            OutlineNode::new(h.title.clone(), destination(h.anchor)),
        ));
    }
    while !stack.is_empty() {
        close(&mut stack, &mut outline);
    }
    pdf.set_outline(outline);
    pdf.set_metadata(
        krilla::metadata::Metadata::new()
            .title(book.title.clone())
            .creator("Quire".to_string()),
    );
    pdf.finish().map_err(|e| PdfError::Typeset(e.to_string()))
}

fn fill(color: text::Rgb) -> krilla::paint::Fill {
    krilla::paint::Fill {
        paint: krilla::color::rgb::Color::new(color.0, color.1, color.2).into(),
        ..Default::default()
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

        // A valid header over a body that does not decode: admitted, then the PDF is
        // written again without images.
        let crc32 = |bytes: &[u8]| {
            let mut crc = flate2::Crc::new();
            crc.update(bytes);
            crc.sum()
        };
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in [
            (&b"IHDR"[..], &[0, 0, 0, 4, 0, 0, 0, 3, 8, 2, 0, 0, 0][..]),
            (b"IDAT", b"not deflate"),
            (b"IEND", b""),
        ] {
            png.extend((data.len() as u32).to_be_bytes());
            let mut body = kind.to_vec();
            body.extend(data);
            png.extend(&body);
            png.extend(crc32(&body).to_be_bytes());
        }
        assert!(imagesize::blob_size(&png).is_ok());
        let fonts = Fonts::new(Vec::new());
        let kept = [("i0".to_string(), png)];
        let refs: Vec<&(String, Vec<u8>)> = kept.iter().collect();
        assert!(matches!(
            write(&b, &refs, &HashMap::new(), &fonts, &Limits::default()),
            Err(PdfError::Typeset(_))
        ));
        let pdf = render(&b, &kept, &fonts, &Limits::default()).unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
    }

    #[test]
    fn a_table_of_no_columns_is_left_out_and_the_rest_prints() {
        let mut b = book(vec![Page::document("a", "A", "a", "Before.\n")]);
        b.pages[0].blocks.push(book::Block::Table {
            cols: 0,
            header: Vec::new(),
            rows: vec![vec![vec![book::Run {
                t: "kept cell".into(),
                ..book::Run::default()
            }]]],
        });
        let pdf = render(&b, &[], &Fonts::new(Vec::new()), &Limits::default()).unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
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
