//! Zip archives read in place: the archive is listed once (entry count capped, every path
//! checked: one that would leave the archive's folder refuses the whole archive), and each
//! entry is inflated only when a converter asks for it, one at a time. Inflating is capped
//! while it happens, whatever the archive declares: per entry, by compression ratio, for
//! all the archive's entries together, and for the documents (pages, tables, XML, nested
//! archives) a converter holds in memory together. Images and attachments stay compressed
//! in the archive until the caller stores them, so an archive of large assets costs its
//! compressed size and one asset at a time.

use std::borrow::Cow;
use std::io::{Cursor, Read};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::{ConvertError, Limits};

/// A file of an archive or repository.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Slash-separated path inside the archive, never absolute, never with `..`.
    pub path: String,
    /// Its bytes.
    pub content: Content,
}

/// Bytes of an entry or asset: already in memory, or still compressed in an archive.
#[derive(Clone, Debug)]
pub enum Content {
    /// Bytes in memory.
    Held(Vec<u8>),
    /// An entry of an archive, inflated when read.
    Archived(Archived),
}

/// An entry still compressed in its archive.
#[derive(Clone)]
pub struct Archived {
    archive: Archive,
    index: usize,
    path: String,
}

impl std::fmt::Debug for Archived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Archived({})", self.path)
    }
}

impl Content {
    /// The bytes of an image or attachment (inflated under the archive's caps; not counted
    /// as a document, since the caller stores them and lets them go).
    pub fn read(&self) -> Result<Cow<'_, [u8]>, ConvertError> {
        match self {
            Content::Held(b) => Ok(Cow::Borrowed(b)),
            Content::Archived(a) => a.archive.inflate(a.index, &a.path, false).map(Cow::Owned),
        }
    }

    /// The bytes of a document the converter keeps in memory (counted against the
    /// archive's document budget).
    pub fn document(self) -> Result<Vec<u8>, ConvertError> {
        match self {
            Content::Held(b) => Ok(b),
            Content::Archived(a) => a.archive.inflate(a.index, &a.path, true),
        }
    }
}

/// Refuses, before any is read, archive entries whose declared sizes already pass the caps
/// (one entry, the ratio, all together with what the archive expanded so far), so that an
/// honest archive too large to import fails before its caller stores anything. The caps
/// still hold while inflating, whatever the sizes declared.
pub fn check_declared<'a>(
    contents: impl IntoIterator<Item = &'a Content>,
) -> Result<(), ConvertError> {
    let mut total: Option<(u64, u64, Arc<Used>)> = None;
    for c in contents {
        let Content::Archived(a) = c else { continue };
        let mut zip = a.archive.zip.clone();
        let file = zip.by_index_raw(a.index).map_err(|e| {
            ConvertError::new(format!("archive entry `{}` cannot be read ({e})", a.path))
        })?;
        let limits = &a.archive.limits;
        let (size, compressed) = (file.size(), file.compressed_size().max(1));
        if size > compressed.saturating_mul(limits.max_ratio).max(RATIO_FLOOR) {
            return Err(ConvertError::new(format!(
                "archive entry `{}` expands more than {} times its compressed size",
                a.path, limits.max_ratio
            )));
        }
        if size > limits.max_entry_bytes {
            return Err(ConvertError::new(format!(
                "archive entry `{}` expands to more than {} bytes",
                a.path, limits.max_entry_bytes
            )));
        }
        let t = total.get_or_insert_with(|| (0, limits.max_expanded, a.archive.used.clone()));
        t.0 = t.0.saturating_add(size);
        if t.0.saturating_add(t.2.expanded.load(Ordering::Relaxed)) > t.1 {
            return Err(ConvertError::new(format!(
                "the archive expands to more than {} bytes",
                t.1
            )));
        }
    }
    Ok(())
}

/// Bytes an archive is read from, shared by every entry read from it later.
#[derive(Clone)]
pub struct Bytes(Arc<dyn AsRef<[u8]> + Send + Sync>);

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl Bytes {
    /// Shares `bytes` (a `Vec<u8>`, or the caller's own shared buffer) without copying.
    pub fn new(bytes: impl AsRef<[u8]> + Send + Sync + 'static) -> Bytes {
        Bytes(Arc::new(bytes))
    }
}

/// What the archives of one import have used of its caps (nested archives share it).
#[derive(Debug, Default)]
struct Used {
    entries: AtomicUsize,
    expanded: AtomicU64,
    documents: AtomicU64,
}

/// A zip archive, listed; its entries are inflated on demand.
#[derive(Clone)]
pub struct Archive {
    zip: zip::ZipArchive<Cursor<Bytes>>,
    limits: Arc<Limits>,
    used: Arc<Used>,
}

/// Entries above this size are held to the ratio cap (small files compress well legitimately).
/// The most an entry's buffer is sized from its header before any byte is inflated.
const FIRST_BUFFER: u64 = 1 << 20;

const RATIO_FLOOR: u64 = 1024 * 1024;

/// Lists every file of the zip archive `bytes` (folders and platform litter skipped); no
/// entry is inflated yet.
pub fn read_zip(bytes: Bytes, limits: &Limits) -> Result<Vec<Entry>, ConvertError> {
    open(bytes, Arc::new(limits.clone()), Arc::default())
}

/// Lists the archive `bytes` found inside `within` (an entry of it), within the same caps.
pub fn read_nested_zip(bytes: Vec<u8>, within: &Entry) -> Result<Vec<Entry>, ConvertError> {
    match &within.content {
        Content::Archived(a) => open(
            Bytes::new(bytes),
            a.archive.limits.clone(),
            a.archive.used.clone(),
        ),
        Content::Held(_) => Err(ConvertError::new(format!(
            "`{}` is not an archive entry",
            within.path
        ))),
    }
}

fn open(bytes: Bytes, limits: Arc<Limits>, used: Arc<Used>) -> Result<Vec<Entry>, ConvertError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| ConvertError::new(format!("is not a readable zip archive ({e})")))?;
    let count = used.entries.fetch_add(zip.len(), Ordering::Relaxed) + zip.len();
    if count > limits.max_entries {
        return Err(ConvertError::new(format!(
            "the archive holds {} entries, more than {}",
            count, limits.max_entries
        )));
    }
    let mut listed = Vec::new();
    for i in 0..zip.len() {
        let file = zip
            .by_index_raw(i)
            .map_err(|e| ConvertError::new(format!("archive entry {i} cannot be read ({e})")))?;
        let path = safe_path(file.name())?;
        if file.is_dir() || path.is_empty() || ignored(&path) {
            continue;
        }
        listed.push((i, path));
    }
    let archive = Archive { zip, limits, used };
    Ok(listed
        .into_iter()
        .map(|(index, path)| Entry {
            content: Content::Archived(Archived {
                archive: archive.clone(),
                index,
                path: path.clone(),
            }),
            path,
        })
        .collect())
}

impl Archive {
    /// Inflates entry `index`, refusing it past any cap as soon as its bytes pass it.
    fn inflate(&self, index: usize, path: &str, document: bool) -> Result<Vec<u8>, ConvertError> {
        let limits = &self.limits;
        let mut zip = self.zip.clone();
        let file = zip.by_index(index).map_err(|e| {
            ConvertError::new(format!("archive entry `{path}` cannot be read ({e})"))
        })?;
        let compressed = file.compressed_size().max(1);
        let ratio_cap = compressed.saturating_mul(limits.max_ratio).max(RATIO_FLOOR);
        let expanded_left = limits
            .max_expanded
            .saturating_sub(self.used.expanded.load(Ordering::Relaxed));
        let documents_left = if document {
            limits
                .max_document_bytes
                .saturating_sub(self.used.documents.load(Ordering::Relaxed))
        } else {
            u64::MAX
        };
        let cap = limits
            .max_entry_bytes
            .min(ratio_cap)
            .min(expanded_left)
            .min(documents_left);
        // The declared size only sizes the first buffer (never past the cap, nor past
        // `FIRST_BUFFER`: a header may claim what the entry never holds); the bytes counted
        // are the ones inflated, and a kept document holds no more than its length.
        let mut data = Vec::with_capacity(file.size().min(cap).min(FIRST_BUFFER) as usize);
        file.take(cap.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(|e| {
                ConvertError::new(format!("archive entry `{path}` cannot be read ({e})"))
            })?;
        let len = data.len() as u64;
        if len > ratio_cap {
            return Err(ConvertError::new(format!(
                "archive entry `{path}` expands more than {} times its compressed size",
                limits.max_ratio
            )));
        }
        if len > limits.max_entry_bytes {
            return Err(ConvertError::new(format!(
                "archive entry `{path}` expands to more than {} bytes",
                limits.max_entry_bytes
            )));
        }
        let expanded = self.used.expanded.fetch_add(len, Ordering::Relaxed) + len;
        if len > expanded_left || expanded > limits.max_expanded {
            return Err(ConvertError::new(format!(
                "the archive expands to more than {} bytes",
                limits.max_expanded
            )));
        }
        if document {
            let held = self.used.documents.fetch_add(len, Ordering::Relaxed) + len;
            if len > documents_left || held > limits.max_document_bytes {
                return Err(ConvertError::new(format!(
                    "the archive's documents expand to more than {} bytes together",
                    limits.max_document_bytes
                )));
            }
        }
        data.shrink_to_fit();
        Ok(data)
    }
}

/// The entry's path, checked: refused when absolute, with a drive, or climbing out.
fn safe_path(raw: &str) -> Result<String, ConvertError> {
    let escapes = || {
        ConvertError::new(format!(
            "archive entry `{}` points outside the archive",
            raw.chars().take(200).collect::<String>()
        ))
    };
    let name = raw.replace('\\', "/");
    if name.starts_with('/') || name.contains('\0') {
        return Err(escapes());
    }
    let first = name.split('/').next().unwrap_or("");
    if first.len() >= 2 && first.as_bytes()[1] == b':' {
        return Err(escapes());
    }
    let mut parts = Vec::new();
    for seg in name.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(escapes()),
            s => parts.push(s),
        }
    }
    Ok(parts.join("/"))
}

fn ignored(path: &str) -> bool {
    path.starts_with("__MACOSX/") || path.rsplit('/').next() == Some(".DS_Store")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::tests::zip_of;

    #[test]
    fn escaping_paths_are_refused() {
        for bad in [
            "../x.md",
            "a/../../x.md",
            "/etc/passwd",
            "C:/x.md",
            "a\\..\\..\\x",
        ] {
            assert!(safe_path(bad).is_err(), "{bad}");
        }
        assert_eq!(safe_path("./a//b.md").unwrap(), "a/b.md");
    }

    fn one(limits: Limits, size: usize, document: bool) -> Result<usize, ConvertError> {
        let z = zip_of(&[("a.bin", &vec![b'a'; size])]);
        let entries = read_zip(Bytes::new(z), &limits)?;
        let content = entries.into_iter().next().unwrap().content;
        if document {
            content.document().map(|b| b.len())
        } else {
            content.read().map(|b| b.len())
        }
    }

    #[test]
    fn every_cap_holds_while_inflating() {
        let small = Limits {
            max_entry_bytes: 1000,
            max_document_bytes: 500,
            ..Limits::default()
        };
        assert_eq!(one(small.clone(), 400, true).unwrap(), 400);
        let err = one(small.clone(), 600, true).unwrap_err();
        assert!(err.0.contains("documents expand"), "{err}");
        // An asset is not held: only the entry cap applies.
        assert_eq!(one(small.clone(), 900, false).unwrap(), 900);
        let err = one(small, 1001, false).unwrap_err();
        assert!(err.0.contains("more than 1000 bytes"), "{err}");
        let total = Limits {
            max_expanded: 100,
            ..Limits::default()
        };
        assert!(one(total, 101, false).unwrap_err().0.contains("expands to"));
    }

    #[test]
    fn nested_archives_share_the_caps() {
        let inner = zip_of(&[("p.md", &[b'x'; 300])]);
        let outer = zip_of(&[("one.zip", &inner), ("two.zip", &inner)]);
        let limits = Limits {
            max_document_bytes: 2 * inner.len() as u64 + 500,
            ..Limits::default()
        };
        let mut total = 0;
        let mut refused = None;
        for part in read_zip(Bytes::new(outer), &limits).unwrap() {
            let bytes = part.content.clone().document().unwrap();
            for e in read_nested_zip(bytes, &part).unwrap() {
                match e.content.document() {
                    Ok(b) => total += b.len(),
                    Err(err) => refused = Some(err),
                }
            }
        }
        assert_eq!(total, 300);
        assert!(refused.unwrap().0.contains("documents expand"));
    }
}
