//! Content-addressed encoding of revisions with structural sharing.
//!
//! A revision becomes a graph of immutable objects, each named by the sha-256 of its
//! canonical bytes:
//!
//! * a *body* object per document page (its markdown) and per reusable content,
//! * a *record* object per page (its properties and the hash of its body, not its children),
//! * *chunk* objects forming each children list: the list is cut into chunks at
//!   content-defined boundaries (a chunk ends after an entry whose key hashes to a multiple
//!   of [`CHUNK_TARGET`]), and when a list needs several chunks a higher level lists the
//!   chunks, and so on until one chunk remains. Because boundaries depend only on the keys
//!   (page ids), editing, inserting or deleting one entry rewrites one chunk per level, not
//!   the whole list — this is what keeps a one-page change in a 10,000-page space small;
//! * an *index*: the same chunked structure over `(page id, record hash)` sorted by id,
//!   so that one page can be loaded without decoding the whole tree,
//! * the *files* list, chunked the same way with each file's metadata inline,
//! * a *root* object naming the above plus the variables.
//!
//! A page change therefore produces its body and record, one chunk per level of its parent's
//! children list for each ancestor, a few index chunks and a root.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::model::{
    ContentRef, DocumentPage, File, LinkPage, Page, PageCover, PageKind, PageLayout,
    ReusableContent, Revision, Variables,
};

/// Average number of entries per chunk; boundaries fall where a key's hash is a multiple of it.
pub const CHUNK_TARGET: u64 = 32;

/// Hard cap on a chunk's length, so that adversarial keys cannot make one huge chunk.
const CHUNK_MAX: usize = 512;

/// A sha-256 naming an object; shown and serialised as 64 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectHash(pub [u8; 32]);

impl ObjectHash {
    /// The hash of these bytes.
    pub fn of(bytes: &[u8]) -> ObjectHash {
        ObjectHash(Sha256::digest(bytes).into())
    }

    /// Lower-case hex spelling.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses 64 hex digits.
    pub fn from_hex(s: &str) -> Option<ObjectHash> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).ok()?;
        Some(ObjectHash(out))
    }
}

impl fmt::Display for ObjectHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectHash({})", &self.to_hex()[..12])
    }
}

impl Serialize for ObjectHash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 64];
        hex::encode_to_slice(self.0, &mut buf).expect("64 hex digits fit");
        s.serialize_str(std::str::from_utf8(&buf).expect("hex is ASCII"))
    }
}

impl<'de> Deserialize<'de> for ObjectHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ObjectHash::from_hex(&s).ok_or_else(|| serde::de::Error::custom("invalid object hash"))
    }
}

/// The objects of an encoded revision and the hash of its root object.
#[derive(Clone, Debug)]
pub struct Encoded {
    /// Hash of the root object: the identity of the revision's content.
    pub root: ObjectHash,
    /// Objects to store, each once, in a deterministic order (children before parents).
    pub objects: Vec<(ObjectHash, Vec<u8>)>,
    /// Sum of the sizes of `objects`.
    pub new_bytes: usize,
    /// Sum of the sizes of every object of the revision, stored or not.
    pub total_bytes: usize,
}

/// Why a revision could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The object store has no object with this hash.
    #[error("object {0} is missing")]
    Missing(ObjectHash),
    /// The object's bytes do not hash to its name.
    #[error("object {0} does not match its hash")]
    HashMismatch(ObjectHash),
    /// The object's bytes are not what its place in the graph requires.
    #[error("object {0} is malformed: {1}")]
    Malformed(ObjectHash, String),
}

const TAG_BODY: &[u8] = b"quire/body/1\n";
const TAG_RECORD: &[u8] = b"quire/page/1\n";
const TAG_CHUNK: &[u8] = b"quire/chunk/1\n";
const TAG_ROOT: &[u8] = b"quire/root/1\n";
const TAG_REUSABLE: &[u8] = b"quire/reusable/1\n";

/// Page properties without children; the body is referenced by hash.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageRecord {
    id: String,
    title: String,
    slug: String,
    emoji: Option<String>,
    icon: Option<String>,
    description: Option<String>,
    hidden: bool,
    no_index: bool,
    no_robots_index: bool,
    condition: Option<String>,
    kind: RecordKind,
}

// Records are built and dropped one at a time: boxing the large variant buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum RecordKind {
    Document {
        body: ObjectHash,
        layout: PageLayout,
        cover: Option<PageCover>,
        variables: Variables,
    },
    Group,
    Link {
        target: ContentRef,
    },
}

/// One chunk of a chunked list: leaves hold entries, higher levels hold chunk references.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Chunk {
    /// Entries of a page tree list: record hash, and the root of the children list if any.
    Pages {
        entries: Vec<(ObjectHash, Option<ObjectHash>)>,
    },
    /// Entries of the id index, sorted by id.
    Index { entries: Vec<(String, ObjectHash)> },
    /// Entries of the files list.
    Files { entries: Vec<File> },
    /// References to lower chunks: hash, number of entries below, last key below.
    Node {
        level: u32,
        entries: Vec<(ObjectHash, u64, String)>,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RootObject {
    pages: ObjectHash,
    index: ObjectHash,
    files: ObjectHash,
    reusable_contents: Vec<ObjectHash>,
    variables: Variables,
}

#[derive(Serialize, Deserialize)]
struct ReusableRecord {
    id: String,
    title: String,
    body: ObjectHash,
}

/// The serialised form of a [`PageRecord`], borrowing the page instead of copying it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageRecordOut<'a> {
    id: &'a str,
    title: &'a str,
    slug: &'a str,
    emoji: &'a Option<String>,
    icon: &'a Option<String>,
    description: &'a Option<String>,
    hidden: bool,
    no_index: bool,
    no_robots_index: bool,
    condition: &'a Option<String>,
    kind: RecordKindOut<'a>,
}

/// The serialised form of a [`RecordKind`].
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum RecordKindOut<'a> {
    Document {
        body: ObjectHash,
        layout: &'a PageLayout,
        cover: &'a Option<PageCover>,
        variables: &'a Variables,
    },
    Group,
    Link {
        target: &'a ContentRef,
    },
}

impl<'a> PageRecordOut<'a> {
    /// The record of `page`; `body` is the hash of its body when it is a document.
    fn of(page: &'a Page, body: Option<ObjectHash>) -> PageRecordOut<'a> {
        let kind = match (&page.kind, body) {
            (PageKind::Document(doc), Some(body)) => RecordKindOut::Document {
                body,
                layout: &doc.layout,
                cover: &doc.cover,
                variables: &doc.variables,
            },
            (PageKind::Document(_), None) => unreachable!("documents are recorded with a body"),
            (PageKind::Group, _) => RecordKindOut::Group,
            (PageKind::Link(l), _) => RecordKindOut::Link { target: &l.target },
        };
        PageRecordOut {
            id: &page.id,
            title: &page.title,
            slug: &page.slug,
            emoji: &page.emoji,
            icon: &page.icon,
            description: &page.description,
            hidden: page.hidden,
            no_index: page.no_index,
            no_robots_index: page.no_robots_index,
            condition: &page.condition,
            kind,
        }
    }
}

/// The serialised form of a [`Chunk`], borrowing its entries.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum ChunkOut<'a> {
    Pages {
        entries: &'a [(ObjectHash, Option<ObjectHash>)],
    },
    Index {
        entries: &'a [(&'a str, ObjectHash)],
    },
    Files {
        entries: &'a [&'a File],
    },
    Node {
        level: u32,
        entries: &'a [(ObjectHash, u64, &'a str)],
    },
}

/// The hash of an object made of `tag` and `payload`, without concatenating them.
fn hash_object(tag: &[u8], payload: &[u8]) -> ObjectHash {
    let mut h = Sha256::new();
    h.update(tag);
    h.update(payload);
    ObjectHash(h.finalize().into())
}

fn concat(tag: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(tag.len() + payload.len());
    bytes.extend_from_slice(tag);
    bytes.extend_from_slice(payload);
    bytes
}

/// Collects the objects of an encoding, skipping those the caller already has.
struct Sink<'a> {
    known: &'a dyn Fn(&ObjectHash) -> bool,
    seen: HashSet<ObjectHash>,
    objects: Vec<(ObjectHash, Vec<u8>)>,
    new_bytes: usize,
    total_bytes: usize,
    /// Scratch space for serialising objects.
    buf: Vec<u8>,
}

impl Sink<'_> {
    /// Adds the object named `hash`, of `len` bytes; `bytes` makes it, and is only called
    /// when the caller lacks the object, so that known objects cost no allocation.
    fn put_hashed(
        &mut self,
        hash: ObjectHash,
        len: usize,
        bytes: impl FnOnce() -> Vec<u8>,
    ) -> ObjectHash {
        if self.seen.insert(hash) {
            self.total_bytes += len;
            if !(self.known)(&hash) {
                let bytes = bytes();
                debug_assert_eq!(bytes.len(), len);
                debug_assert_eq!(ObjectHash::of(&bytes), hash);
                self.new_bytes += len;
                self.objects.push((hash, bytes));
            }
        }
        hash
    }

    fn put(&mut self, tag: &[u8], payload: &[u8]) -> ObjectHash {
        let hash = hash_object(tag, payload);
        self.put_hashed(hash, tag.len() + payload.len(), || concat(tag, payload))
    }

    /// Adds the object made of `tag` and `value` as JSON; returns its hash and size.
    fn put_json<T: Serialize>(&mut self, tag: &[u8], value: &T) -> (ObjectHash, usize) {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(tag);
        serde_json::to_writer(&mut buf, value).expect("store objects serialise");
        let hash = ObjectHash::of(&buf);
        let len = buf.len();
        self.put_hashed(hash, len, || buf.clone());
        self.buf = buf;
        (hash, len)
    }
}

/// FNV-1a: a cheap, stable hash for chunk boundaries (not for naming objects).
fn boundary_hash(level: u32, key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in level.to_le_bytes().iter().chain(key.as_bytes()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // Mix the high bits down: FNV's low bits are weak for short keys.
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

fn is_boundary(level: u32, key: &str, len: usize) -> bool {
    // CHUNK_TARGET is a power of two, so masking is the remainder.
    len >= CHUNK_MAX || boundary_hash(level, key) & (CHUNK_TARGET - 1) == 0
}

/// Builds a chunked list from leaf entries and their keys and returns the hash of its top
/// chunk; `leaf` makes a leaf chunk of entries.
fn build_list<'k, E>(
    sink: &mut Sink<'_>,
    entries: impl ExactSizeIterator<Item = (&'k str, E)>,
    leaf: fn(&[E]) -> ChunkOut<'_>,
) -> ObjectHash {
    let mut refs: Vec<(ObjectHash, u64, &str)> = Vec::new();
    let mut current: Vec<E> = Vec::new();
    let total = entries.len();
    for (i, (key, entry)) in entries.enumerate() {
        current.push(entry);
        if is_boundary(0, key, current.len()) || i + 1 == total {
            let count = current.len() as u64;
            let (hash, _) = sink.put_json(TAG_CHUNK, &leaf(&current));
            current.clear();
            refs.push((hash, count, key));
        }
    }
    if refs.is_empty() {
        return sink.put_json(TAG_CHUNK, &leaf(&[])).0;
    }
    let mut level = 1;
    let mut current = Vec::new();
    while refs.len() > 1 {
        let mut next = Vec::new();
        let n = refs.len();
        for (i, r) in refs.into_iter().enumerate() {
            let key = r.2;
            current.push(r);
            if is_boundary(level, key, current.len()) || i + 1 == n {
                let count = current.iter().map(|e| e.1).sum();
                let chunk = ChunkOut::Node {
                    level,
                    entries: &current,
                };
                let (hash, _) = sink.put_json(TAG_CHUNK, &chunk);
                current.clear();
                next.push((hash, count, key));
            }
        }
        refs = next;
        level += 1;
    }
    refs[0].0
}

/// Adds the body and record of a page, then its children; returns its pages-list entry.
fn encode_page<'r>(
    sink: &mut Sink<'_>,
    page: &'r Page,
    index: &mut Vec<(&'r str, ObjectHash)>,
) -> (ObjectHash, Option<ObjectHash>) {
    let record_hash = match &page.kind {
        PageKind::Document(doc) => {
            // A document remembers the hashes of its body and record from earlier encodings
            // (or from decoding), so an unchanged page is neither serialised nor hashed again.
            let markdown = doc.markdown.as_bytes();
            let body = doc.body_hash(|md| hash_object(TAG_BODY, md.as_bytes()));
            sink.put_hashed(body, TAG_BODY.len() + markdown.len(), || {
                concat(TAG_BODY, markdown)
            });
            match doc.record_hash(page) {
                Some((hash, len)) => sink.put_hashed(hash, len, || {
                    let mut bytes = TAG_RECORD.to_vec();
                    serde_json::to_writer(&mut bytes, &PageRecordOut::of(page, Some(body)))
                        .expect("store objects serialise");
                    bytes
                }),
                None => {
                    let record = PageRecordOut::of(page, Some(body));
                    let (hash, len) = sink.put_json(TAG_RECORD, &record);
                    doc.remember_record(page, hash, len);
                    hash
                }
            }
        }
        _ => sink.put_json(TAG_RECORD, &PageRecordOut::of(page, None)).0,
    };
    index.push((&page.id, record_hash));
    let children = if page.pages.is_empty() {
        None
    } else {
        Some(encode_pages(sink, &page.pages, index))
    };
    (record_hash, children)
}

fn encode_pages<'r>(
    sink: &mut Sink<'_>,
    pages: &'r [Page],
    index: &mut Vec<(&'r str, ObjectHash)>,
) -> ObjectHash {
    let entries: Vec<(ObjectHash, Option<ObjectHash>)> =
        pages.iter().map(|p| encode_page(sink, p, index)).collect();
    build_list(
        sink,
        pages.iter().map(|p| p.id.as_str()).zip(entries),
        |entries| ChunkOut::Pages { entries },
    )
}

fn encode_with(rev: &Revision, known: &dyn Fn(&ObjectHash) -> bool) -> Encoded {
    let mut sink = Sink {
        known,
        seen: HashSet::new(),
        objects: Vec::new(),
        new_bytes: 0,
        total_bytes: 0,
        buf: Vec::new(),
    };
    let mut index = Vec::with_capacity(rev.page_count());
    let pages = encode_pages(&mut sink, &rev.pages, &mut index);
    index.sort_by(|a, b| a.0.cmp(b.0));
    let index = build_list(&mut sink, index.iter().map(|e| (e.0, *e)), |entries| {
        ChunkOut::Index { entries }
    });
    let files = build_list(
        &mut sink,
        rev.files.iter().map(|f| (f.id.as_str(), f)),
        |entries| ChunkOut::Files { entries },
    );
    let reusable_contents = rev
        .reusable_contents
        .iter()
        .map(|r| {
            let body = sink.put(TAG_BODY, r.markdown.as_bytes());
            sink.put_json(
                TAG_REUSABLE,
                &ReusableRecord {
                    id: r.id.clone(),
                    title: r.title.clone(),
                    body,
                },
            )
            .0
        })
        .collect();
    let root = sink
        .put_json(
            TAG_ROOT,
            &RootObject {
                pages,
                index,
                files,
                reusable_contents,
                variables: rev.variables.clone(),
            },
        )
        .0;
    Encoded {
        root,
        objects: sink.objects,
        new_bytes: sink.new_bytes,
        total_bytes: sink.total_bytes,
    }
}

/// Encodes a revision into all of its objects.
pub fn encode(rev: &Revision) -> Encoded {
    encode_with(rev, &|_| false)
}

/// Encodes a revision but returns only the objects for which `known` is false.
///
/// Every object is still named (the root depends on all of them), but objects the store
/// already holds are never copied out; unchanged subtrees hash to the same names as before,
/// so after a one-page edit only that page's objects and the chunks above it are returned.
/// Document pages remember the hashes of their body and record (see
/// [`SharedDocument`](crate::model::SharedDocument)), so pages that a revision shares with
/// one encoded or decoded before are not serialised nor hashed again: the cost is that of
/// the changed pages plus the chunk lists.
pub fn encode_delta(rev: &Revision, known: impl Fn(&ObjectHash) -> bool) -> Encoded {
    encode_with(rev, &known)
}

/// Reads objects back, checking each against its hash.
struct Reader<'a> {
    get: &'a dyn Fn(&ObjectHash) -> Option<Vec<u8>>,
}

impl Reader<'_> {
    /// The payload of an object (its bytes after `tag`).
    fn raw(&self, hash: &ObjectHash, tag: &[u8]) -> Result<Vec<u8>, StoreError> {
        let mut bytes = (self.get)(hash).ok_or(StoreError::Missing(*hash))?;
        if ObjectHash::of(&bytes) != *hash {
            return Err(StoreError::HashMismatch(*hash));
        }
        if !bytes.starts_with(tag) {
            return Err(StoreError::Malformed(
                *hash,
                "unexpected object type".into(),
            ));
        }
        bytes.drain(..tag.len());
        Ok(bytes)
    }

    fn json<T: for<'de> Deserialize<'de>>(
        &self,
        hash: &ObjectHash,
        tag: &[u8],
    ) -> Result<T, StoreError> {
        let payload = self.raw(hash, tag)?;
        serde_json::from_slice(&payload).map_err(|e| StoreError::Malformed(*hash, e.to_string()))
    }

    fn body(&self, hash: &ObjectHash) -> Result<String, StoreError> {
        String::from_utf8(self.raw(hash, TAG_BODY)?)
            .map_err(|_| StoreError::Malformed(*hash, "body is not UTF-8".into()))
    }

    /// Visits the leaf chunks of a list in order.
    fn leaves(
        &self,
        hash: &ObjectHash,
        visit: &mut dyn FnMut(Chunk) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        match self.json::<Chunk>(hash, TAG_CHUNK)? {
            Chunk::Node { entries, .. } => {
                for (h, _, _) in entries {
                    self.leaves(&h, visit)?;
                }
                Ok(())
            }
            leaf => visit(leaf),
        }
    }

    fn pages(&self, hash: &ObjectHash) -> Result<Vec<Page>, StoreError> {
        let mut out = Vec::new();
        self.leaves(hash, &mut |chunk| match chunk {
            Chunk::Pages { entries } => {
                for (record, children) in entries {
                    let mut page = self.record(&record)?;
                    if let Some(children) = children {
                        page.pages = self.pages(&children)?;
                    }
                    out.push(page);
                }
                Ok(())
            }
            _ => Err(StoreError::Malformed(
                *hash,
                "expected a pages chunk".into(),
            )),
        })?;
        Ok(out)
    }

    fn record(&self, hash: &ObjectHash) -> Result<Page, StoreError> {
        let payload = self.raw(hash, TAG_RECORD)?;
        let r: PageRecord = serde_json::from_slice(&payload)
            .map_err(|e| StoreError::Malformed(*hash, e.to_string()))?;
        let mut body_hash = None;
        let kind = match r.kind {
            RecordKind::Document {
                body,
                layout,
                cover,
                variables,
            } => {
                body_hash = Some(body);
                PageKind::Document(
                    DocumentPage {
                        markdown: self.body(&body)?,
                        layout,
                        cover,
                        variables,
                    }
                    .into(),
                )
            }
            RecordKind::Group => PageKind::Group,
            RecordKind::Link { target } => PageKind::Link(LinkPage { target }),
        };
        let page = Page {
            id: r.id,
            title: r.title,
            slug: r.slug,
            emoji: r.emoji,
            icon: r.icon,
            description: r.description,
            hidden: r.hidden,
            no_index: r.no_index,
            no_robots_index: r.no_robots_index,
            condition: r.condition,
            kind,
            pages: Vec::new(),
        };
        if let (PageKind::Document(doc), Some(body)) = (&page.kind, body_hash) {
            // Both objects were just checked against their names: remember them, so that
            // encoding this page again costs nothing.
            doc.remember_body(body);
            doc.remember_record(&page, *hash, TAG_RECORD.len() + payload.len());
        }
        Ok(page)
    }
}

/// Decodes the revision whose root object is `root`, fetching objects with `get`.
pub fn decode(
    root: &ObjectHash,
    get: impl Fn(&ObjectHash) -> Option<Vec<u8>>,
) -> Result<Revision, StoreError> {
    let reader = Reader { get: &get };
    let root_obj: RootObject = reader.json(root, TAG_ROOT)?;
    let pages = reader.pages(&root_obj.pages)?;
    let mut files = Vec::new();
    reader.leaves(&root_obj.files, &mut |chunk| match chunk {
        Chunk::Files { entries } => {
            files.extend(entries);
            Ok(())
        }
        _ => Err(StoreError::Malformed(
            root_obj.files,
            "expected a files chunk".into(),
        )),
    })?;
    let mut reusable_contents = Vec::new();
    for h in &root_obj.reusable_contents {
        let r: ReusableRecord = reader.json(h, TAG_REUSABLE)?;
        reusable_contents.push(ReusableContent {
            id: r.id,
            title: r.title,
            markdown: reader.body(&r.body)?,
        });
    }
    Ok(Revision {
        pages,
        files,
        reusable_contents,
        variables: root_obj.variables,
    })
}

/// Loads one page (without its children) through the id index, reading only the index
/// chunks on the way to it, its record and its body.
pub fn load_page(
    root: &ObjectHash,
    page_id: &str,
    get: impl Fn(&ObjectHash) -> Option<Vec<u8>>,
) -> Result<Option<Page>, StoreError> {
    let reader = Reader { get: &get };
    let root_obj: RootObject = reader.json(root, TAG_ROOT)?;
    let mut at = root_obj.index;
    loop {
        match reader.json::<Chunk>(&at, TAG_CHUNK)? {
            Chunk::Node { entries, .. } => {
                // Entries are sorted by their last key: descend into the first that can hold it.
                match entries.iter().find(|e| e.2.as_str() >= page_id) {
                    Some(e) => at = e.0,
                    None => return Ok(None),
                }
            }
            Chunk::Index { entries } => {
                return match entries.binary_search_by(|e| e.0.as_str().cmp(page_id)) {
                    Ok(i) => reader.record(&entries[i].1).map(Some),
                    Err(_) => Ok(None),
                };
            }
            _ => return Err(StoreError::Malformed(at, "expected an index chunk".into())),
        }
    }
}

/// Hashes of the objects an object refers to, so that the server can walk what a root keeps
/// alive (for garbage collection or copying) without knowing the formats.
pub fn references(bytes: &[u8]) -> Result<Vec<ObjectHash>, StoreError> {
    let hash = ObjectHash::of(bytes);
    let payload = |tag: &[u8]| bytes.strip_prefix(tag);
    let bad = |e: serde_json::Error| StoreError::Malformed(hash, e.to_string());
    if payload(TAG_BODY).is_some() {
        return Ok(Vec::new());
    }
    if let Some(p) = payload(TAG_RECORD) {
        let r: PageRecord = serde_json::from_slice(p).map_err(bad)?;
        return Ok(match r.kind {
            RecordKind::Document { body, .. } => vec![body],
            _ => Vec::new(),
        });
    }
    if let Some(p) = payload(TAG_CHUNK) {
        let c: Chunk = serde_json::from_slice(p).map_err(bad)?;
        return Ok(match c {
            Chunk::Pages { entries } => entries
                .into_iter()
                .flat_map(|(r, c)| std::iter::once(r).chain(c))
                .collect(),
            Chunk::Index { entries } => entries.into_iter().map(|e| e.1).collect(),
            Chunk::Files { .. } => Vec::new(),
            Chunk::Node { entries, .. } => entries.into_iter().map(|e| e.0).collect(),
        });
    }
    if let Some(p) = payload(TAG_REUSABLE) {
        let r: ReusableRecord = serde_json::from_slice(p).map_err(bad)?;
        return Ok(vec![r.body]);
    }
    if let Some(p) = payload(TAG_ROOT) {
        let r: RootObject = serde_json::from_slice(p).map_err(bad)?;
        let mut out = vec![r.pages, r.index, r.files];
        out.extend(r.reusable_contents);
        return Ok(out);
    }
    Err(StoreError::Malformed(hash, "unknown object type".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Dimensions, VariableValue};
    use std::collections::HashMap;

    fn big(n: usize) -> Revision {
        let mut pages = Vec::new();
        for s in 0..(n / 100).max(1) {
            let mut section = Page::document(
                &format!("s{s}"),
                &format!("Section {s}"),
                &format!("section-{s}"),
                "Section intro.\n",
            );
            for i in 0..100.min(n) {
                section.pages.push(Page::document(
                    &format!("p{s}-{i}"),
                    &format!("Page {i}"),
                    &format!("page-{i}"),
                    &format!(
                        "# Page {i}\n\n{}\n",
                        "Lorem ipsum dolor sit amet. ".repeat(40)
                    ),
                ));
            }
            pages.push(section);
        }
        let mut rev = Revision {
            pages,
            ..Revision::default()
        };
        rev.files.push(File {
            id: "f1".into(),
            name: "a.png".into(),
            content_type: "image/png".into(),
            size: 10,
            dimensions: Some(Dimensions {
                width: 1,
                height: 2,
            }),
            blob: "00".repeat(32),
        });
        rev.reusable_contents.push(ReusableContent {
            id: "r1".into(),
            title: "Shared".into(),
            markdown: "shared\n".into(),
        });
        rev.variables
            .insert("version".into(), VariableValue::String("1.0".into()));
        rev
    }

    fn store_of(enc: &Encoded) -> HashMap<ObjectHash, Vec<u8>> {
        enc.objects.iter().cloned().collect()
    }

    /// A revision using every kind of field, so that the golden hashes below pin the byte
    /// format of every object type.
    fn varied() -> Revision {
        let mut rev = big(300);
        let mut doc = Page::document("v-doc", "Varied \"doc\" é", "varied", "Body é\n\u{1}\n");
        doc.emoji = Some("1f600".into());
        doc.icon = Some("book".into());
        doc.description = Some("Says: <hi> & bye".into());
        doc.hidden = true;
        doc.no_index = true;
        doc.no_robots_index = true;
        doc.condition = Some("visitor.claims.x == 1".into());
        if let PageKind::Document(d) = &mut doc.kind {
            d.layout.width = "wide".into();
            d.layout.outline = false;
            d.cover = Some(PageCover {
                reference: Some(ContentRef::File { file: "f1".into() }),
                ref_dark: Some(ContentRef::Url {
                    url: "https://x.y/dark.png".into(),
                }),
                y_pos: -12,
            });
            d.variables
                .insert("n".into(), VariableValue::Number(42.into()));
            d.variables.insert("b".into(), VariableValue::Bool(false));
        }
        doc.pages.push(Page::link(
            "v-link",
            "Link",
            ContentRef::Anchor {
                anchor: "top".into(),
                page: Some("p1-1".into()),
                space: None,
            },
        ));
        rev.pages.insert(1, doc);
        rev.pages.push(Page::group("v-group", "Group", "group"));
        rev.pages
            .push(Page::document("v-empty", "Empty", "empty", ""));
        rev
    }

    #[test]
    fn encoding_is_stable() {
        // Stored content is addressed by these hashes: they must never change.
        assert_eq!(
            encode(&big(1000)).root.to_hex(),
            "b337be56e1a55885612011eac2599923b642c4bc7565fde97b43c08de00dd617"
        );
        let varied = varied();
        let enc = encode(&varied);
        assert_eq!(
            enc.root.to_hex(),
            "e340745b279f997a841234c5fa1bf15d383b45679bc6f49e0115103836a3d76b"
        );
        // The objects, their order and the byte counts, in one digest.
        let mut h = Sha256::new();
        for (hash, bytes) in &enc.objects {
            assert_eq!(ObjectHash::of(bytes), *hash);
            h.update(hash.0);
        }
        let digest = hex::encode(h.finalize());
        assert_eq!(
            (
                enc.objects.len(),
                enc.new_bytes,
                enc.total_bytes,
                digest.as_str()
            ),
            (
                440,
                327024,
                327024,
                "b377ec344cf00762cd23f74562d88a4514f1650ad3f04598c3ea1f81209e35cd"
            )
        );
        // A delta against the full store of a sibling revision.
        let store = store_of(&encode(&big(300)));
        let delta = encode_delta(&varied, |h| store.contains_key(h));
        let objects: Vec<String> = delta
            .objects
            .iter()
            .map(|o| o.0.to_hex()[..8].to_string())
            .collect();
        assert_eq!(
            (delta.root, delta.new_bytes, delta.total_bytes, objects.join(",")),
            (enc.root, 6480, 327024, "0115dfd7,addae991,dc770278,e1db0d82,79319d98,96223d79,23499f85,6855ef11,6667bb95,51099456,e340745b".to_string())
        );
    }

    #[test]
    fn round_trip() {
        let rev = big(1000);
        let enc = encode(&rev);
        let store = store_of(&enc);
        let back = decode(&enc.root, |h| store.get(h).cloned()).unwrap();
        assert_eq!(back, rev);
        assert_eq!(enc.new_bytes, enc.total_bytes);
    }

    #[test]
    fn encoding_is_deterministic() {
        let rev = big(300);
        assert_eq!(encode(&rev).root, encode(&rev.clone()).root);
    }

    #[test]
    fn one_page_change_is_small() {
        let rev = big(10_000);
        let enc = encode(&rev);
        let store = store_of(&enc);
        let mut changed = rev.clone();
        if let PageKind::Document(d) = &mut changed.page_mut("p42-17").unwrap().kind {
            d.markdown.push_str("One more line.\n");
        }
        let delta = encode_delta(&changed, |h| store.contains_key(h));
        assert_ne!(delta.root, enc.root);
        let ratio = delta.new_bytes as f64 / enc.total_bytes as f64;
        assert!(
            ratio < 0.01,
            "ratio {ratio} ({} new bytes)",
            delta.new_bytes
        );
        let mut store2 = store.clone();
        store2.extend(delta.objects.iter().cloned());
        let back = decode(&delta.root, |h| store2.get(h).cloned()).unwrap();
        assert_eq!(back, changed);
    }

    #[test]
    fn inserting_a_page_rewrites_few_chunks() {
        let rev = big(2000);
        let store = store_of(&encode(&rev));
        let mut changed = rev.clone();
        changed.pages[3]
            .pages
            .insert(50, Page::document("new", "New", "new", "hello\n"));
        let delta = encode_delta(&changed, |h| store.contains_key(h));
        assert!(delta.objects.len() < 20, "{} objects", delta.objects.len());
    }

    #[test]
    fn load_single_page() {
        let rev = big(5000);
        let enc = encode(&rev);
        let store = store_of(&enc);
        let reads = std::cell::Cell::new(0);
        let get = |h: &ObjectHash| {
            reads.set(reads.get() + 1);
            store.get(h).cloned()
        };
        let page = load_page(&enc.root, "p7-3", get).unwrap().unwrap();
        assert_eq!(page.title, "Page 3");
        assert!(page.markdown().unwrap().contains("Lorem"));
        assert!(reads.get() < 8, "{} reads", reads.get());
        assert!(load_page(&enc.root, "nope", |h| store.get(h).cloned())
            .unwrap()
            .is_none());
        assert!(load_page(&enc.root, "zzz", |h| store.get(h).cloned())
            .unwrap()
            .is_none());
    }

    #[test]
    fn empty_revision() {
        let rev = Revision::default();
        let enc = encode(&rev);
        let store = store_of(&enc);
        assert_eq!(decode(&enc.root, |h| store.get(h).cloned()).unwrap(), rev);
    }

    #[test]
    fn missing_and_corrupt_objects_are_reported() {
        let rev = big(100);
        let enc = encode(&rev);
        let mut store = store_of(&enc);
        let victim = enc.objects[0].0;
        store.remove(&victim);
        assert_eq!(
            decode(&enc.root, |h| store.get(h).cloned()),
            Err(StoreError::Missing(victim))
        );
        store.insert(victim, b"quire/body/1\nevil".to_vec());
        assert_eq!(
            decode(&enc.root, |h| store.get(h).cloned()),
            Err(StoreError::HashMismatch(victim))
        );
    }

    #[test]
    fn references_reach_every_object() {
        let rev = big(500);
        let enc = encode(&rev);
        let store = store_of(&enc);
        let mut seen = HashSet::new();
        let mut todo = vec![enc.root];
        while let Some(h) = todo.pop() {
            if seen.insert(h) {
                todo.extend(references(&store[&h]).unwrap());
            }
        }
        assert_eq!(seen.len(), store.len());
    }
}
