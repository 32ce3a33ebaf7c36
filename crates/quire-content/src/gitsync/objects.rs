//! Git objects made in memory: blobs, trees and commits with their ids (SHA-1 of the
//! object's header and body, as git names them). Nothing here touches a repository: the
//! server writes the objects where git can serve them.

use std::collections::BTreeMap;
use std::fmt;

use sha1::{Digest, Sha1};

/// A git object id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Oid(pub [u8; 20]);

impl Oid {
    /// The id as 40 hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Reads 40 hex digits.
    pub fn from_hex(s: &str) -> Option<Oid> {
        if s.len() != 40 {
            return None;
        }
        let mut out = [0u8; 20];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Oid(out))
    }
}

impl fmt::Debug for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Display for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The kind of a git object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// File contents.
    Blob,
    /// A folder.
    Tree,
    /// A commit.
    Commit,
}

impl Kind {
    /// The name git writes in the object's header.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Blob => "blob",
            Kind::Tree => "tree",
            Kind::Commit => "commit",
        }
    }
}

/// An object and its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// Its id.
    pub id: Oid,
    /// Its kind.
    pub kind: Kind,
    /// Its body (without git's `kind size\0` header).
    pub body: Vec<u8>,
}

impl Object {
    /// The object of `kind` holding `body`.
    pub fn new(kind: Kind, body: Vec<u8>) -> Object {
        Object {
            id: id_of(kind, &body),
            kind,
            body,
        }
    }
}

/// The id git gives an object of `kind` holding `body`.
pub fn id_of(kind: Kind, body: &[u8]) -> Oid {
    let mut h = Sha1::new();
    h.update(format!("{} {}\0", kind.as_str(), body.len()).as_bytes());
    h.update(body);
    Oid(h.finalize().into())
}

/// Folders nested deeper than this are refused (page trees are far shallower).
pub const MAX_TREE_DEPTH: usize = 64;

/// A path in a tree that cannot be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadPath(pub String);

impl fmt::Display for BadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` cannot be a path in a repository", self.0)
    }
}

/// One level of a tree being built: files and sub-folders by name.
#[derive(Default)]
struct Folder {
    files: BTreeMap<String, (Oid, bool)>,
    folders: BTreeMap<String, Folder>,
}

/// Builds the trees holding `files` (paths with `/` between folders, each with its blob
/// id); returns the root tree's id and every tree object, sub-trees first. A path that is
/// empty, has an empty, `.` or `..` segment, names both a file and a folder, or is nested
/// deeper than [`MAX_TREE_DEPTH`] is refused.
pub fn trees<'a>(
    files: impl IntoIterator<Item = (&'a str, Oid)>,
) -> Result<(Oid, Vec<Object>), BadPath> {
    trees_with_modes(files.into_iter().map(|(p, id)| (p, id, false)))
}

/// [`trees`] of files each marked executable (mode `100755`) or not.
pub fn trees_with_modes<'a>(
    files: impl IntoIterator<Item = (&'a str, Oid, bool)>,
) -> Result<(Oid, Vec<Object>), BadPath> {
    let mut root = Folder::default();
    for (path, id, executable) in files {
        let segments: Vec<&str> = path.split('/').collect();
        let bad = || BadPath(path.to_string());
        if segments.len() > MAX_TREE_DEPTH
            || segments
                .iter()
                .any(|s| s.is_empty() || *s == "." || *s == ".." || s.contains('\0'))
        {
            return Err(bad());
        }
        let (name, dirs) = segments.split_last().ok_or_else(bad)?;
        let mut at = &mut root;
        for d in dirs {
            if at.files.contains_key(*d) {
                return Err(bad());
            }
            at = at.folders.entry((*d).to_string()).or_default();
        }
        if at.folders.contains_key(*name)
            || at
                .files
                .insert((*name).to_string(), (id, executable))
                .is_some()
        {
            return Err(bad());
        }
    }
    let mut out = Vec::new();
    let id = write_folder(root, &mut out);
    Ok((id, out))
}

/// Writes a folder's tree after its sub-trees. Depth is bounded by [`MAX_TREE_DEPTH`].
fn write_folder(folder: Folder, out: &mut Vec<Object>) -> Oid {
    // Git orders entries by name, a folder's name compared as if it ended with `/`.
    let mut entries: Vec<(Vec<u8>, &'static str, String, Oid)> = Vec::new();
    for (name, (id, executable)) in folder.files {
        let mode = if executable { "100755" } else { "100644" };
        entries.push((name.as_bytes().to_vec(), mode, name, id));
    }
    for (name, sub) in folder.folders {
        let id = write_folder(sub, out);
        let mut key = name.as_bytes().to_vec();
        key.push(b'/');
        entries.push((key, "40000", name, id));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut body = Vec::new();
    for (_, mode, name, id) in entries {
        body.extend_from_slice(mode.as_bytes());
        body.push(b' ');
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend_from_slice(&id.0);
    }
    let tree = Object::new(Kind::Tree, body);
    let id = tree.id;
    out.push(tree);
    id
}

/// Who made a commit, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Name.
    pub name: String,
    /// E-mail address.
    pub email: String,
    /// Seconds since the Unix epoch (UTC).
    pub seconds: i64,
}

impl Signature {
    /// The signature as a commit header writes it; `<`, `>` and line breaks, which would
    /// end the field, are dropped.
    fn header(&self) -> String {
        let clean = |s: &str| -> String {
            s.chars()
                .filter(|c| !matches!(c, '<' | '>' | '\n' | '\r' | '\0'))
                .collect::<String>()
                .trim()
                .to_string()
        };
        format!(
            "{} <{}> {} +0000",
            clean(&self.name),
            clean(&self.email),
            self.seconds
        )
    }
}

/// The commit of `tree` with `parents`, by `author`, committed by `committer`.
pub fn commit(
    tree: Oid,
    parents: &[Oid],
    author: &Signature,
    committer: &Signature,
    message: &str,
) -> Object {
    let mut body = format!("tree {tree}\n");
    for p in parents {
        body.push_str(&format!("parent {p}\n"));
    }
    body.push_str(&format!("author {}\n", author.header()));
    body.push_str(&format!("committer {}\n\n", committer.header()));
    body.push_str(message.replace('\0', "").trim_end());
    body.push('\n');
    Object::new(Kind::Commit, body.into_bytes())
}

/// A pack of `objects` (version 2, each object whole: no deltas), as `git index-pack` and
/// a remote's `git-receive-pack` read it.
pub fn pack<'a>(objects: impl IntoIterator<Item = &'a Object>) -> Vec<u8> {
    let mut pack = PackWriter::default();
    for o in objects {
        pack.add(o);
    }
    pack.finish()
}

/// A pack made one object at a time (see [`pack`]): each object is compressed as it is
/// added, so what it holds is about the size of the pack.
pub struct PackWriter {
    /// The pack so far, its header's count still to be written.
    bytes: Vec<u8>,
    count: u32,
}

impl Default for PackWriter {
    fn default() -> Self {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"PACK");
        bytes.extend_from_slice(&2u32.to_be_bytes());
        bytes.extend_from_slice(&0u32.to_be_bytes());
        PackWriter { bytes, count: 0 }
    }
}

impl PackWriter {
    /// Adds an object.
    pub fn add(&mut self, o: &Object) {
        use std::io::Write;
        let kind: u8 = match o.kind {
            Kind::Commit => 1,
            Kind::Tree => 2,
            Kind::Blob => 3,
        };
        // Type and size: four bits of size in the first byte, seven in each next one.
        let mut size = o.body.len();
        let mut byte = (kind << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            self.bytes.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        self.bytes.push(byte);
        let mut z = flate2::write::ZlibEncoder::new(&mut self.bytes, flate2::Compression::fast());
        // Writing to a Vec cannot fail.
        let _ = z.write_all(&o.body);
        let _ = z.finish();
        self.count += 1;
    }

    /// How many objects it holds.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The pack's bytes: header, objects, checksum.
    pub fn finish(self) -> Vec<u8> {
        let mut out = self.bytes;
        out[8..12].copy_from_slice(&self.count.to_be_bytes());
        let sum: [u8; 20] = Sha1::digest(&out).into();
        out.extend_from_slice(&sum);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`
        let blob = Object::new(Kind::Blob, b"hello\n".to_vec());
        assert_eq!(blob.id.to_hex(), "ce013625030ba8dba906f756967f9e9ca394464a");
        // The empty tree every git knows.
        let (empty, _) = trees(std::iter::empty()).unwrap();
        assert_eq!(empty.to_hex(), "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
        assert_eq!(Oid::from_hex(&blob.id.to_hex()), Some(blob.id));
    }

    #[test]
    fn trees_order_folders_as_git_does() {
        let a = Object::new(Kind::Blob, b"a".to_vec()).id;
        // `a.md` sorts before the folder `a` (compared as `a/`), and `a-b` before both.
        let (root, objects) = trees([("a.md", a), ("a/x.md", a), ("a-b", a)]).unwrap();
        let top = objects.last().unwrap();
        assert_eq!(top.id, root);
        let mut names: Vec<&[u8]> = Vec::new();
        let mut rest = top.body.as_slice();
        while let Some(nul) = rest.iter().position(|b| *b == 0) {
            let space = rest.iter().position(|b| *b == b' ').unwrap();
            names.push(&rest[space + 1..nul]);
            rest = &rest[nul + 21..];
        }
        assert_eq!(names, [b"a-b".as_slice(), b"a.md", b"a"]);
    }

    #[test]
    fn packs_read_back() {
        let blob = Object::new(Kind::Blob, vec![b'x'; 300]);
        let (root, trees) = trees([("a/b.md", blob.id)]).unwrap();
        let me = Signature {
            name: "A".into(),
            email: "a@example.com".into(),
            seconds: 1,
        };
        let c = commit(root, &[], &me, &me, "m");
        let mut all = vec![blob.clone(), c.clone()];
        all.extend(trees);
        let bytes = pack(&all);
        let limits = crate::convert::Limits::default();
        let read = crate::convert::git::read_pack(&bytes, &limits).unwrap();
        assert_eq!(read.len(), 4);
        assert_eq!(read[&blob.id.to_hex()].data, blob.body);
        let files = crate::convert::git::files_of(&read, &c.id.to_hex(), &limits).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "a/b.md");
    }

    #[test]
    fn bad_paths_are_refused() {
        let a = Object::new(Kind::Blob, b"a".to_vec()).id;
        for p in ["", "a//b", "../x", "a/./b", "x/"] {
            assert!(trees([(p, a)]).is_err(), "{p}");
        }
        assert!(trees([("a", a), ("a/b", a)]).is_err());
        assert!(trees([("a/b", a), ("a", a)]).is_err());
        assert!(trees([("a", a), ("a", a)]).is_err());
    }
}
