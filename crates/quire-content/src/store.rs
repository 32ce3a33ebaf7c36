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
//!
//! Encoding costs what changed, not the size of the revision: document pages remember the
//! names of their body and record (see [`SharedDocument`]),
//! filled in by encoding and by [`decode`], and revisions derived from one another share
//! unchanged documents, so only changed pages are serialised and hashed again (the chunk
//! lists are, being small). [`encode_missing`] also asks the store only about the objects
//! reachable through objects it lacks.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::model::{
    ContentRef, DocumentPage, File, LinkPage, Page, PageCover, PageKind, PageLayout,
    ReusableContent, Revision, SharedDocument, Variables,
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

    /// The first 8 bytes, as an integer.
    fn prefix(&self) -> u64 {
        u64::from_le_bytes(self.0[..8].try_into().expect("8 bytes"))
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
        // Read from the text in place: a revision's objects name tens of thousands of hashes,
        // and a `String` each was a tenth of decoding them.
        struct Hex;
        impl serde::de::Visitor<'_> for Hex {
            type Value = ObjectHash;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("64 hex digits")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ObjectHash, E> {
                ObjectHash::from_hex(s).ok_or_else(|| E::custom("invalid object hash"))
            }
        }
        d.deserialize_str(Hex)
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
    #[serde(default)]
    tags: Vec<String>,
    /// Absent from records written before pages kept a primary tag (and from those of
    /// pages without one): such records keep their names.
    #[serde(default)]
    primary_tag: Option<String>,
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<crate::model::Tag>,
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
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    primary_tag: &'a Option<String>,
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
            tags: &page.tags,
            primary_tag: &page.primary_tag,
            kind,
        }
    }
}

/// An object of an encoding: its name, and its place in the [`Sink`].
#[derive(Clone, Copy, Debug)]
struct Obj {
    hash: ObjectHash,
    at: u32,
}

/// An entry of a pages chunk: a page's record, and the top chunk of its children list.
#[derive(Clone, Copy, Debug)]
struct PageEntry {
    record: Obj,
    children: Option<Obj>,
}

/// A [`Chunk`] to write, borrowing its entries. Chunks are most of what an encoding
/// serialises, so they are written directly, byte for byte as serde writes a [`Chunk`].
enum ChunkOut<'a> {
    Pages {
        entries: &'a [PageEntry],
    },
    Index {
        entries: &'a [(&'a str, Obj)],
    },
    Files {
        entries: &'a [&'a File],
    },
    Node {
        level: u32,
        entries: &'a [(Obj, u64, &'a str)],
    },
}

impl ChunkOut<'_> {
    /// Appends the JSON of the chunk, as `serde_json::to_writer` writes the [`Chunk`].
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            ChunkOut::Pages { entries } => {
                out.extend_from_slice(br#"{"kind":"pages","entries":["#);
                for (i, e) in entries.iter().enumerate() {
                    out.extend_from_slice(if i == 0 { b"[" } else { b",[" });
                    write_hash(out, &e.record.hash);
                    match e.children {
                        Some(c) => {
                            out.push(b',');
                            write_hash(out, &c.hash);
                        }
                        None => out.extend_from_slice(b",null"),
                    }
                    out.push(b']');
                }
            }
            ChunkOut::Index { entries } => {
                out.extend_from_slice(br#"{"kind":"index","entries":["#);
                for (i, (id, record)) in entries.iter().enumerate() {
                    out.extend_from_slice(if i == 0 { b"[" } else { b",[" });
                    write_str(out, id);
                    out.push(b',');
                    write_hash(out, &record.hash);
                    out.push(b']');
                }
            }
            ChunkOut::Files { entries } => {
                out.extend_from_slice(br#"{"kind":"files","entries":"#);
                serde_json::to_writer(&mut *out, entries).expect("files serialise");
                out.push(b'}');
                return;
            }
            ChunkOut::Node { level, entries } => {
                out.extend_from_slice(br#"{"kind":"node","level":"#);
                out.extend_from_slice(level.to_string().as_bytes());
                out.extend_from_slice(br#","entries":["#);
                for (i, (chunk, count, key)) in entries.iter().enumerate() {
                    out.extend_from_slice(if i == 0 { b"[" } else { b",[" });
                    write_hash(out, &chunk.hash);
                    out.push(b',');
                    out.extend_from_slice(count.to_string().as_bytes());
                    out.push(b',');
                    write_str(out, key);
                    out.push(b']');
                }
            }
        }
        out.extend_from_slice(b"]}");
    }

    /// Appends the places of the objects the chunk refers to.
    fn refs(&self, out: &mut Vec<u32>) {
        match self {
            ChunkOut::Pages { entries } => {
                for e in *entries {
                    out.push(e.record.at);
                    out.extend(e.children.map(|c| c.at));
                }
            }
            ChunkOut::Index { entries } => out.extend(entries.iter().map(|e| e.1.at)),
            ChunkOut::Files { .. } => {}
            ChunkOut::Node { entries, .. } => out.extend(entries.iter().map(|e| e.0.at)),
        }
    }
}

/// Appends a hash as a JSON string of 64 hex digits.
fn write_hash(out: &mut Vec<u8>, hash: &ObjectHash) {
    out.push(b'"');
    let start = out.len();
    out.resize(start + 64, 0);
    hex::encode_to_slice(hash.0, &mut out[start..]).expect("64 hex digits fit");
    out.push(b'"');
}

/// Appends a JSON string, escaped as serde_json escapes it.
fn write_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, s).expect("strings serialise");
    }
}

/// The hash naming a document page's body object: equal hashes, equal bodies (whichever
/// revision holds the page), so that work derived from a body can be cached by it.
pub fn body_hash(doc: &crate::model::SharedDocument) -> ObjectHash {
    doc.body_hash(|text| hash_object(TAG_BODY, text.as_bytes()))
}

/// The hash naming the body object of this markdown (a page's or a reusable content's):
/// the id under which the API names that body as a document.
pub fn text_body_hash(markdown: &str) -> ObjectHash {
    hash_object(TAG_BODY, markdown.as_bytes())
}

/// The markdown of a stored body object named `hash`, or `None` when `bytes` are not a body
/// object of that name (another kind of object, or damaged).
pub fn body_text(hash: &ObjectHash, bytes: &[u8]) -> Option<String> {
    if ObjectHash::of(bytes) != *hash {
        return None;
    }
    let text = bytes.strip_prefix(TAG_BODY)?;
    String::from_utf8(text.to_vec()).ok()
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

fn record_bytes(page: &Page, body: Option<ObjectHash>) -> Vec<u8> {
    let mut bytes = TAG_RECORD.to_vec();
    serde_json::to_writer(&mut bytes, &PageRecordOut::of(page, body))
        .expect("store objects serialise");
    bytes
}

/// Where the bytes of an object come from, when they are wanted.
enum Source<'r> {
    /// A body: the tag, then this text.
    Body(&'r str),
    /// The record of a document page, whose body is the object at this place.
    Record(&'r Page, u32),
    /// Bytes written while encoding, in [`Sink::written`].
    Written(Range<usize>),
}

/// One distinct object of an encoding.
struct Entry<'r> {
    hash: ObjectHash,
    len: usize,
    source: Source<'r>,
    /// The objects it refers to, as a range of [`Sink::refs`].
    refs: Range<u32>,
}

/// The objects of a revision, children before parents, with what each refers to. An object
/// may be added several times (pages with the same body, say): the first time counts, and
/// [`Sink::firsts`] finds the repeats once everything is named, which costs less than
/// looking every object up in a table as it comes. Objects the revision shares with earlier
/// encodings (remembered by its documents) are named without being serialised; their bytes
/// are made only if they are wanted.
struct Sink<'r> {
    objects: Vec<Entry<'r>>,
    refs: Vec<u32>,
    /// The bytes of the objects serialised while encoding, one after the other.
    written: Vec<u8>,
}

impl<'r> Sink<'r> {
    fn new(pages: usize) -> Sink<'r> {
        // A body and a record per page, and about one chunk per 16 pages.
        let objects = 2 * pages + pages / 16 + 16;
        Sink {
            objects: Vec::with_capacity(objects),
            refs: Vec::with_capacity(3 * pages + 16),
            written: Vec::new(),
        }
    }

    /// Adds the object named `hash`, of `len` bytes.
    fn add(&mut self, hash: ObjectHash, len: usize, source: Source<'r>, refs: &[u32]) -> Obj {
        let at = self.objects.len() as u32;
        let start = self.refs.len() as u32;
        self.refs.extend_from_slice(refs);
        self.objects.push(Entry {
            hash,
            len,
            source,
            refs: start..self.refs.len() as u32,
        });
        Obj { hash, at }
    }

    /// Adds the object made of `tag` and what `write` appends.
    fn add_written(&mut self, tag: &[u8], write: impl FnOnce(&mut Vec<u8>), refs: &[u32]) -> Obj {
        let start = self.written.len();
        self.written.extend_from_slice(tag);
        write(&mut self.written);
        let hash = ObjectHash::of(&self.written[start..]);
        let end = self.written.len();
        self.add(hash, end - start, Source::Written(start..end), refs)
    }

    fn add_json<T: Serialize>(&mut self, tag: &[u8], value: &T, refs: &[u32]) -> Obj {
        self.add_written(
            tag,
            |out| serde_json::to_writer(out, value).expect("store objects serialise"),
            refs,
        )
    }

    fn add_body(&mut self, text: &'r str, hash: ObjectHash) -> Obj {
        self.add(hash, TAG_BODY.len() + text.len(), Source::Body(text), &[])
    }

    /// For each object, the place of the first object with the same name.
    fn firsts(&self) -> Vec<u32> {
        let mut first: Vec<u32> = (0..self.objects.len() as u32).collect();
        let mut by_name: Vec<(u64, u32)> = self
            .objects
            .iter()
            .zip(0..)
            .map(|(e, at)| (e.hash.prefix(), at))
            .collect();
        // By the first bytes of the name, then by place: repeats end up together, first first.
        by_name.sort_unstable();
        let mut distinct: Vec<u32> = Vec::new();
        for run in by_name.chunk_by(|a, b| a.0 == b.0) {
            if run.len() == 1 {
                continue;
            }
            // Usually one name repeated; names merely sharing their first bytes are kept apart.
            distinct.clear();
            for &(_, at) in run {
                let hash = &self.objects[at as usize].hash;
                match distinct
                    .iter()
                    .find(|&&d| self.objects[d as usize].hash == *hash)
                {
                    Some(&d) => first[at as usize] = d,
                    None => distinct.push(at),
                }
            }
        }
        first
    }

    /// The bytes of an object.
    fn bytes(&self, e: &Entry<'_>) -> Vec<u8> {
        let bytes = match &e.source {
            Source::Body(text) => concat(TAG_BODY, text.as_bytes()),
            Source::Record(page, body) => {
                record_bytes(page, Some(self.objects[*body as usize].hash))
            }
            Source::Written(range) => self.written[range.clone()].to_vec(),
        };
        debug_assert_eq!(bytes.len(), e.len);
        debug_assert_eq!(ObjectHash::of(&bytes), e.hash, "a remembered hash is stale");
        bytes
    }

    /// The encoding, with the bytes of the distinct objects `wanted` picks, in order.
    fn finish(
        self,
        root: Obj,
        first: &[u32],
        mut wanted: impl FnMut(usize, &Entry<'_>) -> bool,
    ) -> Encoded {
        let mut objects = Vec::new();
        let (mut new_bytes, mut total_bytes) = (0, 0);
        for (at, e) in self.objects.iter().enumerate() {
            if first[at] as usize != at {
                continue;
            }
            total_bytes += e.len;
            if wanted(at, e) {
                new_bytes += e.len;
                objects.push((e.hash, self.bytes(e)));
            }
        }
        Encoded {
            root: root.hash,
            objects,
            new_bytes,
            total_bytes,
        }
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

/// Builds a chunked list from leaf entries and their keys and returns its top chunk;
/// `leaf` makes a leaf chunk of entries.
fn build_list<'k, E>(
    sink: &mut Sink<'_>,
    entries: impl ExactSizeIterator<Item = (&'k str, E)>,
    leaf: fn(&[E]) -> ChunkOut<'_>,
) -> Obj {
    let mut refs = Vec::new();
    let mut add = |sink: &mut Sink<'_>, chunk: ChunkOut<'_>| {
        refs.clear();
        chunk.refs(&mut refs);
        sink.add_written(TAG_CHUNK, |out| chunk.write(out), &refs)
    };
    let mut chunks: Vec<(Obj, u64, &str)> = Vec::new();
    let mut current: Vec<E> = Vec::new();
    let total = entries.len();
    for (i, (key, entry)) in entries.enumerate() {
        current.push(entry);
        if is_boundary(0, key, current.len()) || i + 1 == total {
            let count = current.len() as u64;
            let chunk = add(sink, leaf(&current));
            current.clear();
            chunks.push((chunk, count, key));
        }
    }
    if chunks.is_empty() {
        return add(sink, leaf(&[]));
    }
    let mut level = 1;
    let mut current = Vec::new();
    while chunks.len() > 1 {
        let mut next = Vec::new();
        let n = chunks.len();
        for (i, c) in chunks.into_iter().enumerate() {
            let key = c.2;
            current.push(c);
            if is_boundary(level, key, current.len()) || i + 1 == n {
                let count = current.iter().map(|e| e.1).sum();
                let node = ChunkOut::Node {
                    level,
                    entries: &current,
                };
                let chunk = add(sink, node);
                current.clear();
                next.push((chunk, count, key));
            }
        }
        chunks = next;
        level += 1;
    }
    chunks[0].0
}

/// Adds the body and record of a page, then its children; returns its pages-list entry.
fn encode_page<'r>(
    sink: &mut Sink<'r>,
    page: &'r Page,
    index: &mut Vec<(&'r str, Obj)>,
) -> PageEntry {
    let record = match &page.kind {
        PageKind::Document(doc) => {
            // A document remembers the hashes of its body and record from earlier encodings
            // (or from decoding), so an unchanged page is neither serialised nor hashed again.
            let hash = doc.body_hash(|text| hash_object(TAG_BODY, text.as_bytes()));
            let body = sink.add_body(&doc.markdown, hash);
            match doc.record_hash(page) {
                Some((hash, len)) => sink.add(hash, len, Source::Record(page, body.at), &[body.at]),
                None => {
                    let record = PageRecordOut::of(page, Some(body.hash));
                    let obj = sink.add_json(TAG_RECORD, &record, &[body.at]);
                    doc.remember_record(page, obj.hash, sink.objects[obj.at as usize].len);
                    obj
                }
            }
        }
        _ => sink.add_json(TAG_RECORD, &PageRecordOut::of(page, None), &[]),
    };
    index.push((&page.id, record));
    let children = if page.pages.is_empty() {
        None
    } else {
        Some(encode_pages(sink, &page.pages, index))
    };
    PageEntry { record, children }
}

fn encode_pages<'r>(
    sink: &mut Sink<'r>,
    pages: &'r [Page],
    index: &mut Vec<(&'r str, Obj)>,
) -> Obj {
    // Most pages cost only the check of their remembered record, which reads fields spread
    // over memory: start loading those of the pages a few steps ahead.
    const AHEAD: usize = 8;
    let entries: Vec<PageEntry> = pages
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if let Some(ahead) = pages.get(i + AHEAD) {
                SharedDocument::prefetch(ahead, 0);
            }
            if let Some(ahead) = pages.get(i + AHEAD / 2) {
                SharedDocument::prefetch(ahead, 1);
            }
            encode_page(sink, p, index)
        })
        .collect();
    build_list(
        sink,
        pages.iter().map(|p| p.id.as_str()).zip(entries),
        |entries| ChunkOut::Pages { entries },
    )
}

/// Names every object of a revision; returns them and the root.
fn encode_objects(rev: &Revision) -> (Sink<'_>, Obj) {
    let pages = rev.page_count();
    let mut sink = Sink::new(pages);
    let mut index = Vec::with_capacity(pages);
    let pages = encode_pages(&mut sink, &rev.pages, &mut index);
    sort_by_id(&mut index);
    let index = build_list(&mut sink, index.iter().map(|e| (e.0, *e)), |entries| {
        ChunkOut::Index { entries }
    });
    let files = build_list(
        &mut sink,
        rev.files.iter().map(|f| (f.id.as_str(), f)),
        |entries| ChunkOut::Files { entries },
    );
    let reusable_contents: Vec<Obj> = rev
        .reusable_contents
        .iter()
        .map(|r| {
            let body = sink.add_body(&r.markdown, hash_object(TAG_BODY, r.markdown.as_bytes()));
            let record = ReusableRecord {
                id: r.id.clone(),
                title: r.title.clone(),
                body: body.hash,
            };
            sink.add_json(TAG_REUSABLE, &record, &[body.at])
        })
        .collect();
    let mut refs = vec![pages.at, index.at, files.at];
    refs.extend(reusable_contents.iter().map(|r| r.at));
    let root = RootObject {
        pages: pages.hash,
        index: index.hash,
        files: files.hash,
        reusable_contents: reusable_contents.iter().map(|r| r.hash).collect(),
        variables: rev.variables.clone(),
        tags: rev.tags.clone(),
    };
    let root = sink.add_json(TAG_ROOT, &root, &refs);
    (sink, root)
}

/// Sorts index entries by id, keeping the order of equal ids (as a stable sort does).
fn sort_by_id(index: &mut [(&str, Obj)]) {
    // Compare the first bytes of the ids as integers, which most comparisons need alone,
    // before reading the ids themselves; the position breaks ties between equal ids.
    let prefix = |id: &str| {
        let mut b = [0u8; 8];
        let n = id.len().min(8);
        b[..n].copy_from_slice(&id.as_bytes()[..n]);
        u64::from_be_bytes(b)
    };
    let mut keyed: Vec<(u64, u32, &str, Obj)> = index
        .iter()
        .enumerate()
        .map(|(i, (id, obj))| (prefix(id), i as u32, *id, *obj))
        .collect();
    keyed.sort_unstable_by(|a, b| (a.0, a.2, a.1).cmp(&(b.0, b.2, b.1)));
    for (slot, (_, _, id, obj)) in index.iter_mut().zip(keyed) {
        *slot = (id, obj);
    }
}

/// Encodes a revision into all of its objects.
pub fn encode(rev: &Revision) -> Encoded {
    let (sink, root) = encode_objects(rev);
    let first = sink.firsts();
    sink.finish(root, &first, |_, _| true)
}

/// Encodes a revision but returns only the objects for which `known` is false.
///
/// Every object is still named (the root depends on all of them), and `known` is asked
/// about each distinct object once, in order; objects the store already holds are never
/// copied out. Unchanged subtrees hash to the same names as before, so after a one-page edit
/// only that page's objects and the chunks above it are returned. Document pages remember
/// the hashes of their body and record (see [`SharedDocument`]),
/// so pages that a revision shares with one encoded or decoded before are neither serialised
/// nor hashed again: the cost is that of the changed pages plus the chunk lists.
pub fn encode_delta(rev: &Revision, known: impl Fn(&ObjectHash) -> bool) -> Encoded {
    let (sink, root) = encode_objects(rev);
    let first = sink.firsts();
    sink.finish(root, &first, |_, e| !known(&e.hash))
}

/// As [`encode_delta`], for a store that holds every object an object it holds refers to
/// (as one does that writes objects together with, or after, those they refer to): `stored`
/// is only asked about the objects reachable from the root through objects it lacks, so a
/// one-page change costs a few hundred questions instead of one per object of the revision.
///
/// The result is that of `encode_delta(rev, stored)` whenever `stored` has that property.
pub fn encode_missing(rev: &Revision, stored: impl Fn(&ObjectHash) -> bool) -> Encoded {
    let (sink, root) = encode_objects(rev);
    let first = sink.firsts();
    const UNSEEN: u8 = 0;
    const MISSING: u8 = 1;
    const STORED: u8 = 2;
    let mut state = vec![UNSEEN; sink.objects.len()];
    let mut todo = vec![root.at];
    while let Some(at) = todo.pop() {
        let at = first[at as usize] as usize;
        if state[at] != UNSEEN {
            continue;
        }
        let e = &sink.objects[at];
        if stored(&e.hash) {
            state[at] = STORED;
            continue;
        }
        state[at] = MISSING;
        todo.extend_from_slice(&sink.refs[e.refs.start as usize..e.refs.end as usize]);
    }
    sink.finish(root, &first, |at, _| state[at] == MISSING)
}

/// Reads objects back, checking each against its hash.
struct Reader<'a> {
    get: &'a dyn Fn(&ObjectHash) -> Option<Vec<u8>>,
    /// What earlier decodings kept, when decoding one revision after another.
    memo: Option<&'a RefCell<Decoded>>,
}

/// What decoding a space's revisions one after another keeps between them: the page
/// records and page lists decoded, by object name. Revisions of one history share almost
/// all of them (each differs from its parent by a few pages), so with it decoding the next
/// revision ([`decode_with`]) reads and decodes what changed, not every page again. What
/// one decoding did not use is dropped at its end, so that it holds about one revision.
#[derive(Default)]
pub struct Decoded {
    records: HashMap<ObjectHash, Page>,
    /// Each list with the records and lists below it, which a reuse of it uses too.
    lists: HashMap<ObjectHash, (Vec<Page>, Vec<ObjectHash>)>,
    /// The records and lists the current decoding used, in order.
    trail: Vec<ObjectHash>,
}

impl Decoded {
    /// The objects the object `bytes` points to that [`decode_with`] will read with what
    /// this holds: not the id index (decoding does not read it), nor records and lists
    /// already decoded (and nothing below them).
    pub fn references(&self, bytes: &[u8]) -> Result<Vec<ObjectHash>, StoreError> {
        let bad =
            |e: serde_json::Error| StoreError::Malformed(ObjectHash::of(bytes), e.to_string());
        if let Some(p) = bytes.strip_prefix(TAG_ROOT) {
            let r: RootObject = serde_json::from_slice(p).map_err(bad)?;
            let mut out: Vec<ObjectHash> = Some(r.pages)
                .filter(|h| !self.lists.contains_key(h))
                .into_iter()
                .collect();
            out.push(r.files);
            out.extend(r.reusable_contents);
            return Ok(out);
        }
        if let Some(p) = bytes.strip_prefix(TAG_CHUNK) {
            if let Chunk::Pages { entries } = serde_json::from_slice(p).map_err(bad)? {
                return Ok(entries
                    .into_iter()
                    .flat_map(|(r, c)| {
                        let record = Some(r).filter(|r| !self.records.contains_key(r));
                        let list = c.filter(|c| !self.lists.contains_key(c));
                        record.into_iter().chain(list)
                    })
                    .collect());
            }
        }
        references(bytes)
    }
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
        let start = match self.memo {
            Some(memo) => {
                let mut memo = memo.borrow_mut();
                if let Some((list, below)) = memo.lists.get(hash).cloned() {
                    memo.trail.push(*hash);
                    memo.trail.extend(below);
                    return Ok(list);
                }
                memo.trail.len()
            }
            None => 0,
        };
        let out = self.pages_read(hash)?;
        if let Some(memo) = self.memo {
            let mut memo = memo.borrow_mut();
            let below = memo.trail[start..].to_vec();
            memo.lists.insert(*hash, (out.clone(), below));
            memo.trail.push(*hash);
        }
        Ok(out)
    }

    fn pages_read(&self, hash: &ObjectHash) -> Result<Vec<Page>, StoreError> {
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
        if let Some(memo) = self.memo {
            let mut memo = memo.borrow_mut();
            if let Some(page) = memo.records.get(hash).cloned() {
                memo.trail.push(*hash);
                return Ok(page);
            }
        }
        let page = self.record_read(hash)?;
        if let Some(memo) = self.memo {
            let mut memo = memo.borrow_mut();
            memo.records.insert(*hash, page.clone());
            memo.trail.push(*hash);
        }
        Ok(page)
    }

    fn record_read(&self, hash: &ObjectHash) -> Result<Page, StoreError> {
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
            tags: r.tags,
            primary_tag: r.primary_tag,
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
    read_revision(
        &Reader {
            get: &get,
            memo: None,
        },
        root,
    )
}

/// [`decode`], reusing what `decoded` kept from the revisions decoded before (`get` is
/// asked only for the objects [`Decoded::references`] names), and keeping what this one
/// used.
pub fn decode_with(
    root: &ObjectHash,
    get: impl Fn(&ObjectHash) -> Option<Vec<u8>>,
    decoded: &mut Decoded,
) -> Result<Revision, StoreError> {
    let memo = RefCell::new(std::mem::take(decoded));
    memo.borrow_mut().trail.clear();
    let rev = read_revision(
        &Reader {
            get: &get,
            memo: Some(&memo),
        },
        root,
    );
    let mut memo = memo.into_inner();
    let used: HashSet<ObjectHash> = memo.trail.drain(..).collect();
    memo.records.retain(|h, _| used.contains(h));
    memo.lists.retain(|h, _| used.contains(h));
    *decoded = memo;
    rev
}

fn read_revision(reader: &Reader<'_>, root: &ObjectHash) -> Result<Revision, StoreError> {
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
        tags: root_obj.tags,
    })
}

/// Loads one page (without its children) through the id index, reading only the index
/// chunks on the way to it, its record and its body.
pub fn load_page(
    root: &ObjectHash,
    page_id: &str,
    get: impl Fn(&ObjectHash) -> Option<Vec<u8>>,
) -> Result<Option<Page>, StoreError> {
    let reader = Reader {
        get: &get,
        memo: None,
    };
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
    let payload = |tag: &[u8]| bytes.strip_prefix(tag);
    // The object's name only for an error: hashing every object walked was a tenth of
    // loading a revision.
    let bad = |e: serde_json::Error| StoreError::Malformed(ObjectHash::of(bytes), e.to_string());
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
    Err(StoreError::Malformed(
        ObjectHash::of(bytes),
        "unknown object type".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Dimensions, VariableValue};
    use std::collections::{HashMap, HashSet};

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
            git_oid: None,
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
                height: None,
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
    fn decoding_one_revision_after_another_reads_what_changed() {
        // A history: a body edited, a page moved into another section, a page deleted, a
        // file added, then the first revision again.
        let first = big(1000);
        let mut edited = first.clone();
        if let PageKind::Document(d) = &mut edited.pages[3].pages[7].kind {
            d.markdown = "Edited.\n".into();
        }
        let mut moved = edited.clone();
        let page = moved.pages[5].pages.remove(2);
        moved.pages[6].pages.insert(0, page);
        let mut deleted = moved.clone();
        deleted.pages[9].pages.pop();
        let mut filed = deleted.clone();
        let mut file = filed.files[0].clone();
        file.id = "f2".into();
        filed.files.push(file);
        let history = [first.clone(), edited, moved, deleted, filed, first];

        let mut store: HashMap<ObjectHash, Vec<u8>> = HashMap::new();
        let mut decoded = Decoded::default();
        let mut read = Vec::new();
        for rev in &history {
            let enc = encode(rev);
            store.extend(enc.objects.iter().cloned());
            // What a walk of the graph fetches with what the decodings before kept.
            let mut wanted = HashSet::new();
            let mut todo = vec![enc.root];
            while let Some(h) = todo.pop() {
                if wanted.insert(h) {
                    todo.extend(decoded.references(&store[&h]).unwrap());
                }
            }
            let got = decode_with(
                &enc.root,
                |h| wanted.contains(h).then(|| store[h].clone()),
                &mut decoded,
            )
            .unwrap();
            assert_eq!(&got, rev);
            read.push(wanted.len());
        }
        // The first reads every page's record (bodies repeat); the others what changed.
        assert!(read[0] > 1000, "{read:?}");
        assert!(read[1..].iter().all(|&n| n * 8 < read[0]), "{read:?}");
    }

    #[test]
    fn chunks_are_written_as_serde_writes_them() {
        let h = |n: u8| ObjectHash([n; 32]);
        let keys = [
            "plain",
            "",
            "quote\" back\\ slash",
            "ctl\u{1}\n\t\u{1f}\u{7f}",
            "é ü 日本 /slash",
        ];
        let file = File {
            id: "f\"1".into(),
            name: "a\nb.png".into(),
            content_type: "image/png".into(),
            size: u64::MAX,
            dimensions: Some(Dimensions {
                width: 1,
                height: 2,
            }),
            blob: "00".into(),
            git_oid: None,
        };
        let pages: Vec<(ObjectHash, Option<ObjectHash>)> = vec![(h(1), None), (h(2), Some(h(3)))];
        let index: Vec<(&str, ObjectHash)> = keys.iter().map(|k| (*k, h(4))).collect();
        let node: Vec<(ObjectHash, u64, &str)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (h(i as u8), [0, 1, 31, u64::MAX, 1000][i], *k))
            .collect();
        let files = [&file, &file];
        let obj = |hash: ObjectHash| Obj { hash, at: 0 };
        let page_entries: Vec<PageEntry> = pages
            .iter()
            .map(|(r, c)| PageEntry {
                record: obj(*r),
                children: c.map(obj),
            })
            .collect();
        let index_entries: Vec<(&str, Obj)> = index.iter().map(|(k, h)| (*k, obj(*h))).collect();
        let node_entries: Vec<(Obj, u64, &str)> =
            node.iter().map(|(h, c, k)| (obj(*h), *c, *k)).collect();
        let cases: Vec<(ChunkOut<'_>, Chunk)> = vec![
            (
                ChunkOut::Pages {
                    entries: &page_entries,
                },
                Chunk::Pages {
                    entries: pages.clone(),
                },
            ),
            (
                ChunkOut::Pages { entries: &[] },
                Chunk::Pages { entries: vec![] },
            ),
            (
                ChunkOut::Index {
                    entries: &index_entries,
                },
                Chunk::Index {
                    entries: index.iter().map(|(k, h)| (k.to_string(), *h)).collect(),
                },
            ),
            (
                ChunkOut::Files { entries: &files },
                Chunk::Files {
                    entries: vec![file.clone(), file.clone()],
                },
            ),
            (
                ChunkOut::Files { entries: &[] },
                Chunk::Files { entries: vec![] },
            ),
            (
                ChunkOut::Node {
                    level: 3,
                    entries: &node_entries,
                },
                Chunk::Node {
                    level: 3,
                    entries: node
                        .iter()
                        .map(|(h, c, k)| (*h, *c, k.to_string()))
                        .collect(),
                },
            ),
            (
                ChunkOut::Node {
                    level: u32::MAX,
                    entries: &[],
                },
                Chunk::Node {
                    level: u32::MAX,
                    entries: vec![],
                },
            ),
        ];
        for (out, chunk) in cases {
            let mut written = Vec::new();
            out.write(&mut written);
            assert_eq!(
                String::from_utf8(written).unwrap(),
                serde_json::to_string(&chunk).unwrap()
            );
        }
    }

    /// A copy sharing nothing with `rev`, so remembering no hash.
    fn fresh(rev: &Revision) -> Revision {
        serde_json::from_value(serde_json::to_value(rev).unwrap()).unwrap()
    }

    fn same_encoding(a: &Encoded, b: &Encoded) {
        assert_eq!(a.root, b.root);
        assert_eq!(a.objects, b.objects);
        assert_eq!((a.new_bytes, a.total_bytes), (b.new_bytes, b.total_bytes));
    }

    #[test]
    fn remembered_hashes_never_change_results() {
        let rev = varied();
        let enc = encode(&rev);
        let store = store_of(&enc);
        let decoded = decode(&enc.root, |h| store.get(h).cloned()).unwrap();
        // Each edit, on the encoded revision (hashes remembered by encoding) and on the
        // decoded one (remembered by decoding), must encode as a copy that remembers none.
        type Edit = fn(&mut Revision);
        let edits: Vec<(&str, Edit)> = vec![
            ("nothing", |_| {}),
            ("title", |r| {
                r.page_mut("p1-2").unwrap().title = "New".into()
            }),
            ("slug", |r| {
                r.page_mut("v-doc").unwrap().slug = "other".into()
            }),
            ("emoji", |r| {
                r.page_mut("p2-3").unwrap().emoji = Some("1f4a1".into())
            }),
            ("hidden", |r| r.page_mut("p0-0").unwrap().hidden = true),
            ("body", |r| {
                if let PageKind::Document(d) = &mut r.page_mut("p2-4").unwrap().kind {
                    d.markdown.push_str("more\n");
                }
            }),
            ("layout", |r| {
                if let PageKind::Document(d) = &mut r.page_mut("v-doc").unwrap().kind {
                    d.layout.outline = true;
                }
            }),
            ("kind", |r| {
                r.page_mut("p1-4").unwrap().kind = PageKind::Group
            }),
            ("shared document, other title", |r| {
                // Two pages holding the same document fields, with different properties.
                let mut copy = r.page("p1-1").unwrap().without_children();
                copy.id = "copy".into();
                copy.slug = "copy".into();
                copy.title = "Copy".into();
                r.pages.push(copy);
            }),
            ("moved", |r| {
                let (p, _) = r.remove_page("p2-5").unwrap();
                r.pages.insert(0, p);
            }),
        ];
        for (what, edit) in edits {
            for base in [&rev, &decoded] {
                let mut changed = base.clone();
                edit(&mut changed);
                let expected = encode_delta(&fresh(&changed), |h| store.contains_key(h));
                let got = encode_delta(&changed, |h| store.contains_key(h));
                same_encoding(&got, &expected);
                // Twice: the first encoding remembered new hashes.
                same_encoding(
                    &encode_delta(&changed, |h| store.contains_key(h)),
                    &expected,
                );
                same_encoding(&encode(&changed), &encode(&fresh(&changed)));
                same_encoding(
                    &encode_missing(&changed, |h| store.contains_key(h)),
                    &expected,
                );
                assert_eq!(
                    decode(&expected.root, |h| store
                        .get(h)
                        .or(expected.objects.iter().find(|o| o.0 == *h).map(|o| &o.1))
                        .cloned())
                    .unwrap(),
                    changed,
                    "{what}"
                );
            }
        }
    }

    #[test]
    fn encode_missing_asks_about_few_objects() {
        let rev = big(10_000);
        let store = store_of(&encode(&rev));
        let mut changed = rev.clone();
        if let PageKind::Document(d) = &mut changed.page_mut("p42-17").unwrap().kind {
            d.markdown.push_str("One more line.\n");
        }
        let asked = std::cell::Cell::new(0);
        let missing = encode_missing(&changed, |h| {
            asked.set(asked.get() + 1);
            store.contains_key(h)
        });
        same_encoding(&missing, &encode_delta(&changed, |h| store.contains_key(h)));
        assert!(asked.get() < 400, "{} questions", asked.get());
        // Nothing stored: every object is missing.
        same_encoding(&encode_missing(&changed, |_| false), &encode(&changed));
    }

    #[test]
    fn names_sharing_their_first_bytes_stay_apart() {
        let mut sink = Sink::new(4);
        let a = ObjectHash([7; 32]);
        let mut b = a;
        b.0[31] = 8;
        let mut c = a;
        c.0[0] = 9;
        for h in [a, b, c, a, b, c, b, a] {
            sink.add(h, 1, Source::Body(""), &[]);
        }
        assert_eq!(sink.firsts(), [0, 1, 2, 0, 1, 2, 1, 0]);
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
    fn tags_and_the_primary_tag_round_trip() {
        let mut rev = big(20);
        rev.pages[0].tags = vec!["beta".into(), "new".into()];
        rev.pages[0].primary_tag = Some("new".into());
        rev.pages[0].pages[1].tags = vec!["beta".into()];
        let enc = encode(&rev);
        let store = store_of(&enc);
        let back = decode(&enc.root, |h| store.get(h).cloned()).unwrap();
        assert_eq!(back, rev);
        // Only a page with a primary tag writes it: the others' records (and so the names
        // of every revision stored before) are as they were.
        let records: Vec<String> = enc
            .objects
            .iter()
            .filter_map(|(_, bytes)| bytes.strip_prefix(TAG_RECORD))
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .filter(|r| r.contains("\"tags\":["))
            .collect();
        assert_eq!(records.len(), 2, "{records:?}");
        assert_eq!(
            records
                .iter()
                .filter(|r| r.contains("\"primaryTag\":\"new\""))
                .count(),
            1,
            "{records:?}"
        );
        // Changing only which tag is primary makes a new revision.
        let mut again = back.clone();
        again.pages[0].primary_tag = Some("beta".into());
        let enc2 = encode(&again);
        assert_ne!(enc2.root, enc.root);
        let store2 = store_of(&enc2);
        let back2 = decode(&enc2.root, |h| store2.get(h).cloned()).unwrap();
        assert_eq!(back2.pages[0].primary_tag.as_deref(), Some("beta"));
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
