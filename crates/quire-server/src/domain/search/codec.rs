//! The byte format of postings. One row of `search_postings` holds, for one term, the
//! entries of up to [`BLOCK_PAGES`] consecutive page keys (a *block*): reading a term costs
//! one row per block, and changing a page rewrites only the blocks of its own terms.
//!
//! Block: a sequence of `(page key delta, entry length, entry)`, page keys ascending.
//! Entry: `title_len, head_len, body_len, title_tf, title positions, sections,
//! (index, head_tf, head positions, body_tf, body positions, code_tf)*`, positions as
//! deltas, every number an unsigned LEB128 varint. `code_tf` counts the body positions
//! that are in code samples.
//!
//! Manifest (what an index was built from): the number of pages, then per page `(id
//! length, id, key, text print, place print)`, prints as 16 bytes little-endian.

use std::collections::HashMap;

use super::analyze::{PageDoc, SectionHits, TermHits};

/// Page keys per block.
pub const BLOCK_PAGES: i64 = 64;

/// The block of a page key.
pub fn block_of(page_key: i64) -> i64 {
    page_key.div_euclid(BLOCK_PAGES)
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Reads varints from a byte slice; a truncated or corrupt input reads as zeros at its end.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    pub fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    pub fn varint(&mut self) -> u64 {
        let mut v: u64 = 0;
        let mut shift = 0;
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        v
    }

    /// Skips `n` varints (counting their last bytes, without decoding them).
    fn skip(&mut self, n: u32) {
        let mut left = n;
        while left > 0 {
            let Some(&b) = self.bytes.get(self.at) else {
                return;
            };
            self.at += 1;
            if b & 0x80 == 0 {
                left -= 1;
            }
        }
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let end = self.at.saturating_add(n).min(self.bytes.len());
        let s = &self.bytes[self.at..end];
        self.at = end;
        s
    }
}

fn put_positions(out: &mut Vec<u8>, positions: &[u32]) {
    put(out, positions.len() as u64);
    let mut last = 0;
    for &p in positions {
        put(out, u64::from(p.saturating_sub(last)));
        last = p;
    }
}

/// Encodes the entry of one term in one page.
pub fn entry(doc: &PageDoc, hits: &TermHits) -> Vec<u8> {
    encode_entry([doc.title_len, doc.head_len, doc.body_len], hits)
}

/// An entry with the hits of the sections `hidden` (section indices) left out, or `None`
/// when nothing is left (the term is then, for the reader, not in the page).
pub fn without_sections(bytes: &[u8], hidden: &[u32]) -> Option<Vec<u8>> {
    let mut hits = TermHits::default();
    let e = decode_entry(bytes, Some(&mut hits));
    hits.sections.retain(|s| !hidden.contains(&s.idx));
    if hits.title.is_empty() && hits.sections.is_empty() {
        return None;
    }
    Some(encode_entry([e.title_len, e.head_len, e.body_len], &hits))
}

/// Encodes an entry: the page's field lengths (title, headings, body), then the hits.
fn encode_entry(lens: [u32; 3], hits: &TermHits) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + hits.sections.len() * 6);
    for len in lens {
        put(&mut out, u64::from(len));
    }
    put_positions(&mut out, &hits.title);
    put(&mut out, hits.sections.len() as u64);
    for s in &hits.sections {
        put(&mut out, u64::from(s.idx));
        put_positions(&mut out, &s.head);
        put_positions(&mut out, &s.body);
        put(&mut out, u64::from(s.code));
    }
    out
}

/// A decoded entry header.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Entry {
    pub title_tf: u32,
    pub title_len: u32,
    pub head_len: u32,
    pub body_len: u32,
    /// Occurrences in all headings and in all bodies.
    pub head_tf: u32,
    pub body_tf: u32,
    /// Occurrences of `body_tf` in code samples.
    pub code_tf: u32,
}

fn small(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Reads `n` delta-coded positions into `out` (when given), or skips them.
fn positions(r: &mut Reader<'_>, out: Option<&mut Vec<u32>>) -> u32 {
    let n = small(r.varint());
    match out {
        Some(out) => {
            let mut at = 0u32;
            for _ in 0..n {
                // A count larger than the bytes left is corrupt: stop at their end.
                if r.done() {
                    break;
                }
                at = at.saturating_add(small(r.varint()));
                out.push(at);
            }
        }
        None => r.skip(n),
    }
    n
}

/// Decodes an entry; `detail` receives the positions when given (it is overwritten, and
/// the lists it already holds are reused: decoding many entries into one `TermHits`
/// allocates only while it grows).
pub fn decode_entry(bytes: &[u8], mut detail: Option<&mut TermHits>) -> Entry {
    let mut r = Reader::new(bytes);
    let mut e = Entry {
        title_len: small(r.varint()),
        head_len: small(r.varint()),
        body_len: small(r.varint()),
        ..Entry::default()
    };
    if let Some(d) = detail.as_deref_mut() {
        d.title.clear();
    }
    e.title_tf = positions(&mut r, detail.as_deref_mut().map(|d| &mut d.title));
    let n = r.varint();
    let mut used = 0;
    for _ in 0..n {
        if r.done() {
            break;
        }
        let idx = small(r.varint());
        match detail.as_deref_mut() {
            Some(d) => {
                if used == d.sections.len() {
                    d.sections.push(SectionHits::default());
                }
                let s = &mut d.sections[used];
                used += 1;
                s.idx = idx;
                s.head.clear();
                s.body.clear();
                e.head_tf = e
                    .head_tf
                    .saturating_add(positions(&mut r, Some(&mut s.head)));
                e.body_tf = e
                    .body_tf
                    .saturating_add(positions(&mut r, Some(&mut s.body)));
                s.code = small(r.varint());
                e.code_tf = e.code_tf.saturating_add(s.code);
            }
            None => {
                e.head_tf = e.head_tf.saturating_add(positions(&mut r, None));
                e.body_tf = e.body_tf.saturating_add(positions(&mut r, None));
                e.code_tf = e.code_tf.saturating_add(small(r.varint()));
            }
        }
    }
    if let Some(d) = detail {
        d.sections.truncate(used);
    }
    e
}

/// Iterates the `(page key, entry bytes)` of a block.
pub fn entries(block: &[u8]) -> impl Iterator<Item = (i64, &[u8])> {
    let mut r = Reader::new(block);
    let mut key: i64 = 0;
    std::iter::from_fn(move || {
        if r.done() {
            return None;
        }
        key = key.saturating_add(i64::try_from(r.varint()).unwrap_or(i64::MAX));
        let len = usize::try_from(r.varint()).unwrap_or(usize::MAX);
        Some((key, r.take(len)))
    })
}

/// Encodes a block from entries in ascending page-key order.
pub fn encode_block<'a>(items: impl IntoIterator<Item = (i64, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut last = 0i64;
    for (key, bytes) in items {
        put(&mut out, u64::try_from(key - last).unwrap_or(0));
        put(&mut out, bytes.len() as u64);
        out.extend_from_slice(bytes);
        last = key;
    }
    out
}

/// What an index records of one page: its key, and prints (128-bit hashes) of what it was
/// analysed from and of where it sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// Its page key in the index.
    pub key: i64,
    /// The print of its title, description and body object.
    pub text: u128,
    /// The print of its slug under its ancestors' slugs and titles.
    pub place: u128,
}

/// Encodes a manifest.
pub fn encode_manifest<'a>(pages: impl ExactSizeIterator<Item = (&'a str, Source)>) -> Vec<u8> {
    let mut out = Vec::with_capacity(pages.len() * 56);
    put(&mut out, pages.len() as u64);
    for (id, s) in pages {
        put(&mut out, id.len() as u64);
        out.extend_from_slice(id.as_bytes());
        put(&mut out, u64::try_from(s.key).unwrap_or(0));
        out.extend_from_slice(&s.text.to_le_bytes());
        out.extend_from_slice(&s.place.to_le_bytes());
    }
    out
}

/// Pages by id (foldhash, randomly seeded per map: faster than SipHash on every page).
pub type Manifest<'a> = HashMap<&'a str, Source, foldhash::fast::RandomState>;

/// Decodes a manifest (its ids borrowed from `bytes`); `None` when it is corrupt.
pub fn decode_manifest(bytes: &[u8]) -> Option<Manifest<'_>> {
    fn print(r: &mut Reader<'_>) -> Option<u128> {
        Some(u128::from_le_bytes(r.take(16).try_into().ok()?))
    }
    let mut r = Reader::new(bytes);
    let n = usize::try_from(r.varint()).ok()?;
    // Each page takes at least 34 bytes: a count beyond that is corrupt.
    let mut out = Manifest::with_capacity_and_hasher(n.min(bytes.len() / 34), Default::default());
    for _ in 0..n {
        let len = usize::try_from(r.varint()).ok()?;
        let id = std::str::from_utf8(r.take(len)).ok()?;
        let key = i64::try_from(r.varint()).ok()?;
        let (text, place) = (print(&mut r)?, print(&mut r)?);
        out.insert(id, Source { key, text, place });
    }
    r.done().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_round_trip() {
        let a = Source {
            key: 3,
            text: u128::MAX - 7,
            place: 1 << 100,
        };
        let b = Source {
            key: 70_000,
            text: 0,
            place: 42,
        };
        let bytes = encode_manifest([("page-a", a), ("b", b)].into_iter());
        let back = decode_manifest(&bytes).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back["page-a"], a);
        assert_eq!(back["b"], b);
        // Truncated or with bytes left over: corrupt.
        assert!(decode_manifest(&bytes[..bytes.len() - 1]).is_none());
        assert!(decode_manifest(&[bytes.as_slice(), &[0]].concat()).is_none());
        assert!(decode_manifest(&[255, 255, 255, 255, 15]).is_none());
    }

    #[test]
    fn blocks_round_trip() {
        let a = vec![1u8, 2, 3];
        let b = vec![200u8; 300];
        let block = encode_block([(5, a.as_slice()), (70_000, b.as_slice())]);
        let back: Vec<(i64, Vec<u8>)> = entries(&block).map(|(k, e)| (k, e.to_vec())).collect();
        assert_eq!(back, vec![(5, a), (70_000, b)]);
        assert_eq!(block_of(63), 0);
        assert_eq!(block_of(64), 1);
    }

    #[test]
    fn entries_round_trip() {
        let hits = TermHits {
            title: vec![1, 4],
            sections: vec![
                SectionHits {
                    idx: 0,
                    head: vec![],
                    body: vec![3, 7, 300],
                    code: 2,
                },
                SectionHits {
                    idx: 4,
                    head: vec![0],
                    body: (0..200).collect(),
                    code: 0,
                },
            ],
        };
        let doc = PageDoc {
            page_id: "p".into(),
            title: String::new(),
            description: String::new(),
            path: String::new(),
            ancestors: vec![],
            sections: vec![],
            title_len: 3,
            head_len: 9,
            body_len: 1000,
            terms: Default::default(),
            words: Default::default(),
        };
        let bytes = entry(&doc, &hits);
        let mut back = TermHits::default();
        let e = decode_entry(&bytes, Some(&mut back));
        assert_eq!(
            (
                e.title_tf,
                e.title_len,
                e.head_len,
                e.body_len,
                e.head_tf,
                e.body_tf,
                e.code_tf
            ),
            (2, 3, 9, 1000, 1, 203, 2)
        );
        assert_eq!(back, hits);
        assert_eq!(decode_entry(&bytes, None), e);
        // Decoding into hits that held a larger entry leaves exactly this one.
        let small = TermHits {
            title: vec![],
            sections: vec![SectionHits {
                idx: 2,
                head: vec![5],
                body: vec![],
                code: 0,
            }],
        };
        let small_bytes = entry(&doc, &small);
        decode_entry(&small_bytes, Some(&mut back));
        assert_eq!(back, small);
        decode_entry(&bytes, Some(&mut back));
        assert_eq!(back, hits);

        // A reader who may not see section 4 finds only the rest; without the title's hits
        // and section 0, nothing.
        let kept = without_sections(&bytes, &[4]).unwrap();
        let e = decode_entry(&kept, Some(&mut back));
        assert_eq!(
            (e.title_tf, e.body_len, e.head_tf, e.body_tf),
            (2, 1000, 0, 3)
        );
        assert_eq!(back.sections.len(), 1);
        let title_less = TermHits {
            title: vec![],
            ..hits.clone()
        };
        let bytes = entry(&doc, &title_less);
        assert!(without_sections(&bytes, &[0, 4]).is_none());
        assert_eq!(without_sections(&bytes, &[]).unwrap(), bytes);
    }
}
