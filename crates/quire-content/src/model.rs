//! The revision snapshot: an ordered page tree, files, reusable contents and variables.
//!
//! Field names follow the official GitBook schemas (camelCase) so that the server can put
//! these values in its responses with little translation. A page's `path` is not stored: it
//! is derived from the slugs of the page and its ancestors, so moving or renaming a page can
//! never leave a stale path behind.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::store::ObjectHash;

/// Space- or page-level variables, keyed by name; a `BTreeMap` keeps them in a canonical order.
pub type Variables = BTreeMap<String, VariableValue>;

/// The value of a variable: the official schema allows a string, a number or a boolean.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum VariableValue {
    /// A boolean value.
    Bool(bool),
    /// A JSON number.
    Number(serde_json::Number),
    /// A string value.
    String(String),
}

/// One immutable state of a space's content.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    /// The root pages, in navigation order; each holds its children.
    pub pages: Vec<Page>,
    /// Files (images and attachments) that documents reference by id.
    #[serde(default)]
    pub files: Vec<File>,
    /// Blocks of content shared between pages.
    #[serde(default)]
    pub reusable_contents: Vec<ReusableContent>,
    /// Space-level variables.
    #[serde(default)]
    pub variables: Variables,
    /// The tags pages may carry (Git Sync's `.gitbook/tags.yaml`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Tag>,
}

/// A tag pages carry (the official `RevisionTag`): its slug, which pages name, and how it
/// shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tag {
    /// Its identifier.
    pub slug: String,
    /// What it shows.
    pub label: String,
    /// Its icon's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Its colour (`$primary`, a name or a hex value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

/// A page of the tree: a document, a group or a link, with its nested children.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// Stable identifier, unique in the revision.
    pub id: String,
    /// Title shown in the navigation and on the page.
    pub title: String,
    /// Path segment of the page within its parent; empty for link pages, which have no path.
    #[serde(default)]
    pub slug: String,
    /// Emoji code shown before the title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
    /// Icon name shown before the title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Short description (document pages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Hidden from the navigation while still reachable.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hidden: bool,
    /// Excluded from search and ask.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_index: bool,
    /// Excluded from search engine robots.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_robots_index: bool,
    /// Adaptive-content condition deciding whether the page is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// The slugs of the revision's tags the page carries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The one of `tags` marked primary (GitBook's `primary: true`: the tag shown in the
    /// table of contents); kept apart from `tags` so that pages stored before it read alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_tag: Option<String>,
    /// What kind of page this is, with the fields particular to that kind.
    #[serde(flatten)]
    pub kind: PageKind,
    /// Child pages, in navigation order.
    #[serde(default)]
    pub pages: Vec<Page>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The three kinds of pages this engine stores, tagged by the official `type` field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PageKind {
    /// A page with a markdown body; its fields are shared between revisions until changed.
    Document(SharedDocument),
    /// A heading in the navigation that only holds children.
    Group,
    /// A navigation entry pointing elsewhere.
    Link(LinkPage),
}

/// Fields particular to document pages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentPage {
    /// The body in normalised GitBook-flavoured markdown, without frontmatter and title.
    pub markdown: String,
    /// Which parts of the page layout are shown.
    #[serde(default)]
    pub layout: PageLayout,
    /// Cover image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cover: Option<PageCover>,
    /// Page-level variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: Variables,
}

/// The fields of a document page, shared copy-on-write between the revisions that hold them.
///
/// Cloning a revision (to edit it, to merge it) then costs no copy of its bodies, and the
/// store remembers here the hashes it computed for a document, so that encoding a revision
/// again only hashes the pages that changed. It reads as a [`DocumentPage`] (through
/// `Deref`); changing it through `DerefMut` first makes it private to its page (copying it
/// if it is shared) and forgets the remembered hashes.
pub struct SharedDocument(Arc<DocumentCell>);

// The remembered hashes first, so that encoding, which reads only them, reads the first
// cache lines of the cell.
#[repr(C)]
struct DocumentCell {
    /// Hash of the body object of `doc.markdown`.
    body: OnceLock<ObjectHash>,
    /// The page record last encoded with this document: the page's own properties, the
    /// record's hash and size.
    record: OnceLock<(RecordKey, ObjectHash, usize)>,
    doc: DocumentPage,
}

impl Clone for DocumentCell {
    fn clone(&self) -> Self {
        DocumentCell::new(self.doc.clone())
    }
}

impl DocumentCell {
    fn new(doc: DocumentPage) -> DocumentCell {
        DocumentCell {
            doc,
            body: OnceLock::new(),
            record: OnceLock::new(),
        }
    }
}

/// The properties of a page that its store record holds besides its document fields, in
/// one allocation (it is compared with the page on every encoding, so it should cost one
/// cache line to read, not one per field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordKey {
    /// Id, title, slug, emoji, icon, description and condition, one after the other.
    text: Box<str>,
    /// Where each of them ends in `text`.
    ends: [u32; 7],
    /// Which optional ones are present, and the flags (see [`RecordKey::bits`]).
    bits: u8,
    /// The page's tags and its primary tag, when it has either (most pages have none, and
    /// then this costs a pointer's check).
    tags: Option<Box<(Vec<String>, Option<String>)>>,
}

/// String equality without a call to the C library's `memcmp`, whose setup costs more than
/// comparing the short strings page properties are (and which the engine does for every
/// page of a revision when encoding or merging it).
#[inline]
pub(crate) fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let word = |s: &[u8], i: usize| u64::from_ne_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let mut i = 0;
    while i + 8 <= a.len() {
        if word(a, i) != word(b, i) {
            return false;
        }
        i += 8;
    }
    a[i..].iter().zip(&b[i..]).all(|(x, y)| x == y)
}

/// [`same_text`] for optional strings.
#[inline]
pub(crate) fn same_opt(a: &Option<String>, b: &Option<String>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_text(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl RecordKey {
    fn bits(p: &Page) -> u8 {
        [
            p.emoji.is_some(),
            p.icon.is_some(),
            p.description.is_some(),
            p.condition.is_some(),
            p.hidden,
            p.no_index,
            p.no_robots_index,
        ]
        .iter()
        .enumerate()
        .fold(0, |bits, (i, &on)| bits | (u8::from(on) << i))
    }

    fn fields(p: &Page) -> [&str; 7] {
        fn opt(o: &Option<String>) -> &str {
            o.as_deref().unwrap_or("")
        }
        [
            &p.id,
            &p.title,
            &p.slug,
            opt(&p.emoji),
            opt(&p.icon),
            opt(&p.description),
            opt(&p.condition),
        ]
    }

    pub(crate) fn of(p: &Page) -> RecordKey {
        let fields = RecordKey::fields(p);
        let mut ends = [0; 7];
        let mut bits = RecordKey::bits(p);
        let mut end = 0;
        for (slot, field) in ends.iter_mut().zip(fields) {
            end += field.len();
            *slot = u32::try_from(end).unwrap_or_else(|_| {
                // Beyond 4 GiB: a key that matches no page (`bits` never sets bit 7).
                bits = u8::MAX;
                0
            });
        }
        let text = fields.concat().into_boxed_str();
        let tags = (!p.tags.is_empty() || p.primary_tag.is_some())
            .then(|| Box::new((p.tags.clone(), p.primary_tag.clone())));
        RecordKey {
            text,
            ends,
            bits,
            tags,
        }
    }

    pub(crate) fn matches(&self, p: &Page) -> bool {
        if self.bits != RecordKey::bits(p) {
            return false;
        }
        let same_tags = match &self.tags {
            None => p.tags.is_empty() && p.primary_tag.is_none(),
            Some(t) => t.0 == p.tags && t.1 == p.primary_tag,
        };
        if !same_tags {
            return false;
        }
        let mut start = 0;
        for (&end, field) in self.ends.iter().zip(RecordKey::fields(p)) {
            match self.text.get(start..end as usize) {
                Some(stored) if same_text(stored, field) => {}
                _ => return false,
            }
            start = end as usize;
        }
        true
    }
}

impl SharedDocument {
    /// Wraps the fields of a document page.
    pub fn new(doc: DocumentPage) -> SharedDocument {
        SharedDocument(Arc::new(DocumentCell::new(doc)))
    }

    /// The fields, copied only if another page shares them.
    pub fn into_inner(self) -> DocumentPage {
        match Arc::try_unwrap(self.0) {
            Ok(cell) => cell.doc,
            Err(shared) => shared.doc.clone(),
        }
    }

    /// Whether both have the same markdown, comparing the hashes of their bodies when both
    /// are known (bodies are named by their sha-256, as in the store: equal names, equal
    /// bodies) rather than the texts.
    pub fn same_markdown(&self, other: &SharedDocument) -> bool {
        if SharedDocument::ptr_eq(self, other) {
            return true;
        }
        match (self.0.body.get(), other.0.body.get()) {
            (Some(x), Some(y)) => x == y,
            _ => self.0.doc.markdown == other.0.doc.markdown,
        }
    }

    /// Whether both hold the very same fields (not merely equal ones).
    pub fn ptr_eq(a: &SharedDocument, b: &SharedDocument) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// The same number for every holder of this document, and another for every other
    /// document alive: a cache of revisions weighs a body its revisions share once.
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The hash of the body object, computing it with `hash` the first time.
    pub(crate) fn body_hash(&self, hash: impl FnOnce(&str) -> ObjectHash) -> ObjectHash {
        *self.0.body.get_or_init(|| hash(&self.0.doc.markdown))
    }

    /// The remembered record hash and size of `page`, which holds this document.
    pub(crate) fn record_hash(&self, page: &Page) -> Option<(ObjectHash, usize)> {
        let (key, hash, len) = self.0.record.get()?;
        key.matches(page).then_some((*hash, *len))
    }

    /// Remembers the record hash and size of `page` (unless another page's are remembered).
    pub(crate) fn remember_record(&self, page: &Page, hash: ObjectHash, len: usize) {
        if self.0.record.get().is_none() {
            let _ = self.0.record.set((RecordKey::of(page), hash, len));
        }
    }

    /// Asks the processor to start loading what checking the remembered record of `page`
    /// reads (see [`prefetch`]): the properties of the page, then (`step` 1, once the cell
    /// has arrived) the remembered ones.
    pub(crate) fn prefetch(page: &Page, step: u8) {
        let PageKind::Document(doc) = &page.kind else {
            return;
        };
        if step == 0 {
            for field in [&page.id, &page.title, &page.slug] {
                prefetch(field.as_ptr());
            }
            let cell = Arc::as_ptr(&doc.0).cast::<u8>();
            prefetch(cell);
            prefetch(cell.wrapping_add(64));
            prefetch(cell.wrapping_add(128));
        } else if let Some((key, _, _)) = doc.0.record.get() {
            prefetch(key.text.as_ptr());
        }
    }

    /// Remembers the body hash (known from the store when decoding).
    pub(crate) fn remember_body(&self, hash: ObjectHash) {
        let _ = self.0.body.set(hash);
    }
}

impl Default for SharedDocument {
    fn default() -> Self {
        SharedDocument::new(DocumentPage::default())
    }
}

impl From<DocumentPage> for SharedDocument {
    fn from(doc: DocumentPage) -> Self {
        SharedDocument::new(doc)
    }
}

impl Clone for SharedDocument {
    fn clone(&self) -> Self {
        SharedDocument(Arc::clone(&self.0))
    }
}

impl Deref for SharedDocument {
    type Target = DocumentPage;

    fn deref(&self) -> &DocumentPage {
        &self.0.doc
    }
}

impl DerefMut for SharedDocument {
    fn deref_mut(&mut self) -> &mut DocumentPage {
        let cell = Arc::make_mut(&mut self.0);
        cell.body.take();
        cell.record.take();
        &mut cell.doc
    }
}

impl PartialEq for SharedDocument {
    fn eq(&self, other: &Self) -> bool {
        if SharedDocument::ptr_eq(self, other) {
            return true;
        }
        let (a, b) = (&self.0, &other.0);
        if let (Some(x), Some(y)) = (a.record.get(), b.record.get()) {
            // Records hold the body hash, layout, cover and variables: equal names, equal
            // fields (without reading them, which costs more than these two cache lines).
            if x.1 == y.1 {
                return true;
            }
        }
        self.same_markdown(other)
            && a.doc.layout == b.doc.layout
            && a.doc.cover == b.doc.cover
            && a.doc.variables == b.doc.variables
    }
}

impl Eq for SharedDocument {}

impl fmt::Debug for SharedDocument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.doc.fmt(f)
    }
}

impl Serialize for SharedDocument {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.doc.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SharedDocument {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DocumentPage::deserialize(d).map(SharedDocument::new)
    }
}

/// Asks the processor to start loading the cache line at `p`: a hint that lets the loads of
/// several pages' scattered fields overlap, instead of waiting for each in turn.
#[inline]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Fields particular to link pages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkPage {
    /// Where the link points.
    pub target: ContentRef,
}

/// Official `RevisionPageLayoutOptions`; every field is present, as the schema requires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PageLayout {
    /// `default` or `wide`.
    pub width: String,
    /// Whether the cover is visible.
    pub cover: bool,
    /// `hero`, `full` or `background`.
    pub cover_size: String,
    /// `none` or `radial`.
    pub cover_mask: String,
    /// Whether the title is visible.
    pub title: bool,
    /// Whether the description is visible.
    pub description: bool,
    /// Whether the table of contents is visible.
    pub table_of_contents: bool,
    /// Whether the outline is visible.
    pub outline: bool,
    /// Whether the pagination is visible.
    pub pagination: bool,
    /// Whether the page metadata is visible.
    pub metadata: bool,
    /// Whether tags are visible.
    pub tags: bool,
    /// Whether page actions are visible.
    pub actions: bool,
    /// Whether heading anchors are visible.
    pub anchors: bool,
}

impl Default for PageLayout {
    fn default() -> Self {
        PageLayout {
            width: "default".into(),
            cover: true,
            cover_size: "hero".into(),
            cover_mask: "none".into(),
            title: true,
            description: true,
            table_of_contents: true,
            outline: true,
            pagination: true,
            metadata: true,
            tags: true,
            actions: true,
            anchors: true,
        }
    }
}

/// Official `RevisionPageDocumentCover`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageCover {
    /// The image (a file or a URL).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<ContentRef>,
    /// The image in dark mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_dark: Option<ContentRef>,
    /// Vertical position of the image.
    #[serde(default)]
    pub y_pos: i64,
    /// Height of the image in pixels (10 to 700), when not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<i64>,
}

/// Official `ContentRef`: what a link, an image or a link page points at.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ContentRef {
    /// A file of the revision.
    File {
        /// File id.
        file: String,
    },
    /// An external URL.
    Url {
        /// The URL.
        url: String,
    },
    /// A page of this (or another) space.
    Page {
        /// Page id.
        page: String,
        /// Space id when the page is in another space.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        space: Option<String>,
    },
    /// An anchor (heading id) in a page.
    Anchor {
        /// The anchor.
        anchor: String,
        /// Page id; the current page when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        page: Option<String>,
        /// Space id when the page is in another space.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        space: Option<String>,
    },
    /// A user.
    User {
        /// User id.
        user: String,
    },
    /// A collection.
    Collection {
        /// Collection id.
        collection: String,
    },
    /// A space.
    Space {
        /// Space id.
        space: String,
    },
    /// A reusable content block.
    #[serde(rename_all = "camelCase")]
    ReusableContent {
        /// Reusable content id.
        reusable_content: String,
        /// Space id when in another space.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        space: Option<String>,
    },
    /// An OpenAPI specification.
    Openapi {
        /// Specification slug.
        spec: String,
    },
}

/// A file of the revision; the bytes live elsewhere, named by `blob` (sha-256, hex).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct File {
    /// Stable identifier, unique in the revision.
    pub id: String,
    /// File name with its extension.
    pub name: String,
    /// MIME type.
    pub content_type: String,
    /// Size in bytes.
    pub size: u64,
    /// Pixel dimensions of images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<Dimensions>,
    /// Hex sha-256 of the bytes, naming the blob in the server's blob store.
    pub blob: String,
    /// Git's id of the bytes as a blob (hex sha-1), as a repository of the space holds
    /// them; recorded when the file is stored (`None` for files stored before that was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_oid: Option<String>,
}

/// Pixel dimensions of an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimensions {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// A block of content shared between pages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReusableContent {
    /// Stable identifier.
    pub id: String,
    /// Title.
    pub title: String,
    /// Body in normalised markdown.
    pub markdown: String,
}

/// Where a page sits: its parent (none for a root page) and index among its siblings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// Parent page id, `None` at the root.
    pub parent: Option<String>,
    /// Zero-based index among the siblings.
    pub index: usize,
}

/// One page of a flattened tree, as produced by [`Revision::flatten`].
#[derive(Clone, Debug)]
pub struct FlatPage<'a> {
    /// The page (with its children still attached).
    pub page: &'a Page,
    /// Where it sits.
    pub location: Location,
    /// Number of ancestors.
    pub depth: usize,
    /// Derived path (slugs of the ancestors and the page joined by `/`).
    pub path: String,
}

impl Page {
    /// A document page with default properties and the given body.
    pub fn document(id: &str, title: &str, slug: &str, markdown: &str) -> Page {
        Page {
            id: id.into(),
            title: title.into(),
            slug: slug.into(),
            emoji: None,
            icon: None,
            description: None,
            hidden: false,
            no_index: false,
            no_robots_index: false,
            tags: Vec::new(),
            primary_tag: None,
            condition: None,
            kind: PageKind::Document(
                DocumentPage {
                    markdown: markdown.into(),
                    ..DocumentPage::default()
                }
                .into(),
            ),
            pages: Vec::new(),
        }
    }

    /// A group page with the given title and slug.
    pub fn group(id: &str, title: &str, slug: &str) -> Page {
        Page {
            kind: PageKind::Group,
            ..Page::document(id, title, slug, "")
        }
    }

    /// A link page pointing at `target`.
    pub fn link(id: &str, title: &str, target: ContentRef) -> Page {
        Page {
            kind: PageKind::Link(LinkPage { target }),
            ..Page::document(id, title, "", "")
        }
    }

    /// The official `type` of the page: `document`, `group` or `link`.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            PageKind::Document(_) => "document",
            PageKind::Group => "group",
            PageKind::Link(_) => "link",
        }
    }

    /// The markdown body of a document page.
    pub fn markdown(&self) -> Option<&str> {
        match &self.kind {
            PageKind::Document(d) => Some(&d.markdown),
            _ => None,
        }
    }

    /// A copy of the page without its children, for property comparisons.
    pub fn without_children(&self) -> Page {
        Page {
            id: self.id.clone(),
            title: self.title.clone(),
            slug: self.slug.clone(),
            emoji: self.emoji.clone(),
            icon: self.icon.clone(),
            description: self.description.clone(),
            hidden: self.hidden,
            no_index: self.no_index,
            no_robots_index: self.no_robots_index,
            condition: self.condition.clone(),
            tags: self.tags.clone(),
            primary_tag: self.primary_tag.clone(),
            kind: self.kind.clone(),
            pages: Vec::new(),
        }
    }

    /// Number of pages in this subtree, the page included.
    pub fn subtree_len(&self) -> usize {
        1 + self.pages.iter().map(Page::subtree_len).sum::<usize>()
    }
}

impl Revision {
    /// Every page in depth-first (navigation) order with its location, depth and path.
    pub fn flatten(&self) -> Vec<FlatPage<'_>> {
        fn walk<'a>(
            pages: &'a [Page],
            parent: Option<&'a Page>,
            parent_path: &str,
            depth: usize,
            out: &mut Vec<FlatPage<'a>>,
        ) {
            for (index, page) in pages.iter().enumerate() {
                let path = join_path(parent_path, &page.slug);
                out.push(FlatPage {
                    page,
                    location: Location {
                        parent: parent.map(|p| p.id.clone()),
                        index,
                    },
                    depth,
                    path: path.clone(),
                });
                walk(&page.pages, Some(page), &path, depth + 1, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.pages, None, "", 0, &mut out);
        out
    }

    /// The page with this id, anywhere in the tree.
    pub fn page(&self, id: &str) -> Option<&Page> {
        find_in(&self.pages, id)
    }

    /// The page with this id, mutably.
    pub fn page_mut(&mut self, id: &str) -> Option<&mut Page> {
        find_in_mut(&mut self.pages, id)
    }

    /// Derived path of every page that has one, by page id.
    pub fn page_paths(&self) -> HashMap<String, String> {
        self.flatten()
            .into_iter()
            .map(|f| (f.page.id.clone(), f.path))
            .collect()
    }

    /// Derived path of one page.
    pub fn path_of(&self, id: &str) -> Option<String> {
        fn walk(pages: &[Page], id: &str, prefix: &str) -> Option<String> {
            for p in pages {
                let path = join_path(prefix, &p.slug);
                if same_text(&p.id, id) {
                    return Some(path);
                }
                if let Some(found) = walk(&p.pages, id, &path) {
                    return Some(found);
                }
            }
            None
        }
        walk(&self.pages, id, "")
    }

    /// Where the page sits, or `None` when it is not in the tree.
    pub fn locate(&self, id: &str) -> Option<Location> {
        fn walk(pages: &[Page], parent: Option<&str>, id: &str) -> Option<Location> {
            for (index, p) in pages.iter().enumerate() {
                if same_text(&p.id, id) {
                    return Some(Location {
                        parent: parent.map(str::to_string),
                        index,
                    });
                }
                if let Some(l) = walk(&p.pages, Some(&p.id), id) {
                    return Some(l);
                }
            }
            None
        }
        walk(&self.pages, None, id)
    }

    /// The children list under `parent` (the root list when `None`).
    pub fn children(&self, parent: Option<&str>) -> Option<&Vec<Page>> {
        match parent {
            None => Some(&self.pages),
            Some(id) => self.page(id).map(|p| &p.pages),
        }
    }

    /// The children list under `parent`, mutably.
    pub fn children_mut(&mut self, parent: Option<&str>) -> Option<&mut Vec<Page>> {
        match parent {
            None => Some(&mut self.pages),
            Some(id) => self.page_mut(id).map(|p| &mut p.pages),
        }
    }

    /// Detaches the page (with its subtree) and returns it with the location it had.
    pub fn remove_page(&mut self, id: &str) -> Option<(Page, Location)> {
        let loc = self.locate(id)?;
        let list = self.children_mut(loc.parent.as_deref())?;
        Some((list.remove(loc.index), loc))
    }

    /// Ids of the page and all its descendants.
    pub fn subtree_ids(&self, id: &str) -> HashSet<String> {
        fn walk(p: &Page, out: &mut HashSet<String>) {
            out.insert(p.id.clone());
            for c in &p.pages {
                walk(c, out);
            }
        }
        let mut out = HashSet::new();
        if let Some(p) = self.page(id) {
            walk(p, &mut out);
        }
        out
    }

    /// Total number of pages.
    pub fn page_count(&self) -> usize {
        self.pages.iter().map(Page::subtree_len).sum()
    }

    /// The file with this id.
    pub fn file(&self, id: &str) -> Option<&File> {
        self.files.iter().find(|f| f.id == id)
    }

    /// Checks the invariants the rest of the engine relies on.
    pub fn validate(&self) -> Result<(), ModelError> {
        self.check(true)
    }

    /// [`Revision::validate`], except that page ids are taken to be unique when `ids` is
    /// false (for trees built so that they are, which saves a set of every id).
    pub(crate) fn check(&self, ids: bool) -> Result<(), ModelError> {
        let mut ids = ids.then(|| HashSet::with_capacity(self.page_count()));
        fn walk<'a>(
            pages: &'a [Page],
            parent: Option<&'a Page>,
            depth: usize,
            ids: &mut Option<HashSet<&'a str>>,
        ) -> Result<(), ModelError> {
            let mut slugs = HashSet::new();
            for p in pages {
                if depth > MAX_PAGE_DEPTH {
                    return Err(ModelError::TooDeep(p.id.clone()));
                }
                if ids.as_mut().is_some_and(|ids| !ids.insert(p.id.as_str())) {
                    return Err(ModelError::DuplicatePageId(p.id.clone()));
                }
                if p.title.is_empty() {
                    return Err(ModelError::EmptyTitle(p.id.clone()));
                }
                match p.kind {
                    PageKind::Link(_) => {
                        if !p.pages.is_empty() {
                            return Err(ModelError::InvalidNesting(p.id.clone()));
                        }
                    }
                    _ => {
                        if !slugs.insert(p.slug.as_str()) {
                            return Err(ModelError::DuplicateSlug {
                                page: p.id.clone(),
                                slug: p.slug.clone(),
                            });
                        }
                    }
                }
                if matches!(p.kind, PageKind::Group) && parent.is_some() {
                    // GitBook only allows groups at the top of the tree.
                    return Err(ModelError::InvalidNesting(p.id.clone()));
                }
                if let Some(parent) = parent {
                    if matches!(parent.kind, PageKind::Link(_)) {
                        return Err(ModelError::InvalidNesting(p.id.clone()));
                    }
                }
                walk(&p.pages, Some(p), depth + 1, ids)?;
            }
            Ok(())
        }
        walk(&self.pages, None, 1, &mut ids)?;
        let mut file_ids = HashSet::new();
        for f in &self.files {
            if !file_ids.insert(f.id.as_str()) {
                return Err(ModelError::DuplicateFileId(f.id.clone()));
            }
        }
        Ok(())
    }
}

/// Deepest nesting of pages in a revision (a root page is at level 1).
///
/// Walks over the page tree recurse, and a tree is built by authoring batches that anyone
/// with edit rights can send: without a bound, a few hundred batches could nest pages deep
/// enough to overflow a thread's stack. Real spaces stay below ten levels.
pub const MAX_PAGE_DEPTH: usize = 64;

/// A broken invariant of a revision.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Two pages share an id.
    #[error("duplicate page id {0}")]
    DuplicatePageId(String),
    /// Two files share an id.
    #[error("duplicate file id {0}")]
    DuplicateFileId(String),
    /// Two siblings share a slug.
    #[error("page {page}: slug {slug:?} is already used by a sibling")]
    DuplicateSlug {
        /// The second page with the slug.
        page: String,
        /// The slug.
        slug: String,
    },
    /// A page has an empty title.
    #[error("page {0} has an empty title")]
    EmptyTitle(String),
    /// A page sits where its kind cannot (a group below the root, a child of a link).
    #[error("page {0} cannot be nested there")]
    InvalidNesting(String),
    /// A page is nested deeper than [`MAX_PAGE_DEPTH`].
    #[error("page {0} is nested too deeply: pages may nest at most {MAX_PAGE_DEPTH} levels")]
    TooDeep(String),
}

fn find_in<'a>(pages: &'a [Page], id: &str) -> Option<&'a Page> {
    for p in pages {
        if same_text(&p.id, id) {
            return Some(p);
        }
        if let Some(found) = find_in(&p.pages, id) {
            return Some(found);
        }
    }
    None
}

fn find_in_mut<'a>(pages: &'a mut [Page], id: &str) -> Option<&'a mut Page> {
    for p in pages.iter_mut() {
        if same_text(&p.id, id) {
            return Some(p);
        }
        if let Some(found) = find_in_mut(&mut p.pages, id) {
            return Some(found);
        }
    }
    None
}

/// Joins a parent path and a slug; empty slugs (link pages) contribute nothing.
pub fn join_path(parent: &str, slug: &str) -> String {
    match (parent.is_empty(), slug.is_empty()) {
        (true, _) => slug.to_string(),
        (false, true) => parent.to_string(),
        (false, false) => format!("{parent}/{slug}"),
    }
}

/// Derives a slug from a title: lower-case ASCII letters and digits separated by hyphens.
pub fn slugify(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    let mut pending_dash = false;
    let push = |out: &mut String, m: char, pending_dash: &mut bool| {
        if *pending_dash && !out.is_empty() {
            out.push('-');
        }
        *pending_dash = false;
        out.push(m);
    };
    for ch in title.chars().flat_map(char::to_lowercase) {
        if ch.is_ascii_alphanumeric() {
            push(&mut out, ch, &mut pending_dash);
            continue;
        }
        let mapped = transliterate(ch);
        if mapped.is_empty() {
            pending_dash = true;
        }
        for m in mapped.chars() {
            push(&mut out, m, &mut pending_dash);
        }
    }
    if out.is_empty() {
        "page".to_string()
    } else {
        out
    }
}

/// ASCII spelling of common Latin letters with diacritics, so that slugs stay readable.
pub(crate) fn transliterate(c: char) -> &'static str {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'č' => "c",
        'ď' | 'đ' | 'ð' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' => "e",
        'ğ' => "g",
        'ì' | 'í' | 'î' | 'ï' | 'ī' | 'į' | 'ı' => "i",
        'ł' | 'ľ' => "l",
        'ñ' | 'ń' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => "o",
        'œ' => "oe",
        'ř' => "r",
        'ś' | 'š' | 'ş' => "s",
        'ß' => "ss",
        'ť' | 'ţ' => "t",
        'þ' => "th",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' | 'ų' => "u",
        'ý' | 'ÿ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        _ => "",
    }
}

/// Makes `base` unique among `taken` by appending `-1`, `-2`, … as GitBook does.
pub fn unique_slug<'a>(base: &str, taken: impl IntoIterator<Item = &'a str>) -> String {
    let taken: HashSet<&str> = taken.into_iter().collect();
    if !taken.contains(base) {
        return base.to_string();
    }
    (1..)
        .map(|n| format!("{base}-{n}"))
        .find(|s| !taken.contains(s.as_str()))
        .expect("an unused suffix exists")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Revision {
        let mut guide = Page::group("g", "Guides", "guides");
        let mut start = Page::document("a", "Getting started", "getting-started", "Hi\n");
        start
            .pages
            .push(Page::document("b", "Install", "install", "x\n"));
        guide.pages.push(start);
        guide.pages.push(Page::link(
            "l",
            "Elsewhere",
            ContentRef::Url {
                url: "https://example.com".into(),
            },
        ));
        Revision {
            pages: vec![Page::document("r", "Home", "home", ""), guide],
            ..Revision::default()
        }
    }

    #[test]
    fn paths_are_derived_from_slugs() {
        let rev = sample();
        let paths = rev.page_paths();
        assert_eq!(paths["r"], "home");
        assert_eq!(paths["g"], "guides");
        assert_eq!(paths["a"], "guides/getting-started");
        assert_eq!(paths["b"], "guides/getting-started/install");
        assert_eq!(rev.path_of("b").unwrap(), "guides/getting-started/install");
        assert_eq!(rev.page_count(), 5);
        rev.validate().unwrap();
    }

    #[test]
    fn locate_and_remove() {
        let mut rev = sample();
        assert_eq!(
            rev.locate("l"),
            Some(Location {
                parent: Some("g".into()),
                index: 1
            })
        );
        let (page, loc) = rev.remove_page("a").unwrap();
        assert_eq!(page.id, "a");
        assert_eq!(loc.index, 0);
        assert!(rev.page("b").is_none());
        assert_eq!(rev.subtree_ids("g").len(), 2);
    }

    #[test]
    fn slugs() {
        assert_eq!(slugify("Getting Started!"), "getting-started");
        assert_eq!(slugify("  Crème brûlée & Co. "), "creme-brulee-co");
        assert_eq!(slugify("API v2.0"), "api-v2-0");
        assert_eq!(slugify("日本"), "page");
        assert_eq!(unique_slug("a", ["a", "a-1"]), "a-2");
        assert_eq!(unique_slug("b", ["a"]), "b");
    }

    #[test]
    fn validation_catches_duplicates() {
        let mut rev = sample();
        rev.pages.push(Page::document("x", "Home 2", "home", ""));
        assert!(matches!(
            rev.validate(),
            Err(ModelError::DuplicateSlug { .. })
        ));
        let mut rev = sample();
        rev.pages.push(Page::document("a", "Again", "again", ""));
        assert_eq!(rev.validate(), Err(ModelError::DuplicatePageId("a".into())));
    }

    #[test]
    fn serde_uses_official_names() {
        let rev = sample();
        let json = serde_json::to_value(&rev).unwrap();
        assert_eq!(json["pages"][1]["type"], "group");
        assert_eq!(json["pages"][1]["pages"][1]["target"]["kind"], "url");
        assert_eq!(json["pages"][0]["layout"]["tableOfContents"], true);
        let back: Revision = serde_json::from_value(json).unwrap();
        assert_eq!(back, rev);
    }

    #[test]
    fn text_equality_is_string_equality() {
        let texts = [
            "",
            "a",
            "b",
            "ab",
            "abcdefg",
            "abcdefgh",
            "abcdefgi",
            "abcdefghi",
            "bbcdefghi",
            "abcdefghijklmnop",
            "abcdefghijklmnoq",
            "abcdefghijklmnopq",
            "é",
            "e\u{301}",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(same_text(a, b), a == b, "{a:?} {b:?}");
                let (a, b) = (Some(a.to_string()), Some(b.to_string()));
                assert_eq!(same_opt(&a, &b), a == b);
                assert!(!same_opt(&a, &None) && same_opt(&None, &None));
            }
        }
    }

    #[test]
    fn revisions_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Revision>();
        shared::<SharedDocument>();
    }

    #[test]
    fn record_keys_tell_every_property_apart() {
        let mut page = Page::document("ab", "c", "s", "body");
        page.emoji = Some(String::new());
        let key = RecordKey::of(&page);
        assert!(key.matches(&page));
        let edits: Vec<fn(&mut Page)> = vec![
            |p| {
                // The same text, cut elsewhere.
                p.id = "a".into();
                p.title = "bc".into();
            },
            |p| p.title = "C".into(),
            |p| p.slug = String::new(),
            |p| p.emoji = None,
            |p| p.icon = Some(String::new()),
            |p| p.description = Some("d".into()),
            |p| p.condition = Some(String::new()),
            |p| p.hidden = true,
            |p| p.no_index = true,
            |p| p.no_robots_index = true,
            |p| p.tags = vec!["beta".into()],
            |p| p.primary_tag = Some("beta".into()),
        ];
        for edit in edits {
            let mut other = page.clone();
            edit(&mut other);
            assert!(!key.matches(&other), "{other:?}");
            assert!(RecordKey::of(&other).matches(&other));
        }
        // Tags tell apart by their order and by which is primary.
        let mut tagged = page.clone();
        tagged.tags = vec!["a".into(), "b".into()];
        tagged.primary_tag = Some("a".into());
        let key = RecordKey::of(&tagged);
        assert!(key.matches(&tagged));
        let edits: [fn(&mut Page); 3] = [
            |p| p.tags.reverse(),
            |p| p.primary_tag = Some("b".into()),
            |p| p.primary_tag = None,
        ];
        for edit in edits {
            let mut other = tagged.clone();
            edit(&mut other);
            assert!(!key.matches(&other), "{other:?}");
        }
    }

    #[test]
    fn shared_documents_copy_on_write() {
        let page = Page::document("a", "A", "a", "one\n");
        let mut copy = page.clone();
        let (PageKind::Document(x), PageKind::Document(y)) = (&page.kind, &mut copy.kind) else {
            unreachable!()
        };
        assert!(SharedDocument::ptr_eq(x, y));
        y.markdown.push_str("two\n");
        assert!(!SharedDocument::ptr_eq(x, y));
        assert_eq!(page.markdown(), Some("one\n"));
        assert_eq!(copy.markdown(), Some("one\ntwo\n"));
        assert_ne!(page, copy);
        // Equal fields in different cells are equal.
        assert_eq!(page, Page::document("a", "A", "a", "one\n"));
    }
}
