//! Git repositories over the smart HTTP protocol (what GitHub serves wikis with), read
//! without a git program: the reference advertisement, the `git-upload-pack` request for one
//! commit (shallow, depth 1), the pack the server answers with (objects inflated, deltas
//! applied, ids computed), and the commit's tree as files. Then GitHub wikis as pages:
//! every markdown file a page named after it (`Home` first), `[[Page Name]]` links made
//! page links, `_Sidebar`/`_Footer` left out.
//!
//! The caller does the two HTTP requests (through its safe fetcher); everything here works
//! on bytes in memory, within the caps of [`Limits`].

use std::collections::HashMap;
use std::io::Read;

use sha1::{Digest, Sha1};

use super::archive::{Content, Entry};
use super::{archive_key, markdown_page, title_from_name, Asset, Bundle, ConvertError, Limits};

/// What the server advertised.
#[derive(Clone, Debug)]
pub struct Advertisement {
    /// The commit to fetch (`HEAD`, else `main`/`master`, else the first branch).
    pub head: String,
    /// Capabilities the server offers.
    pub capabilities: Vec<String>,
    /// Every advertised ref with its commit, as `(name, id)`.
    pub refs: Vec<(String, String)>,
}

impl Advertisement {
    /// The commit the ref `name` (`refs/heads/main`) is at, if advertised.
    pub fn commit_of(&self, name: &str) -> Option<&str> {
        self.refs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id.as_str())
    }

    /// Whether the server offers `capability`.
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }
}

fn bad(what: &str) -> ConvertError {
    ConvertError::new(format!("is not a git repository served over HTTP ({what})"))
}

/// Pkt-lines (`None` for flush packets) and what follows them.
type PktLines<'a> = (Vec<Option<&'a [u8]>>, &'a [u8]);

/// Splits pkt-lines; `None` items are flush packets.
fn pkt_lines(mut data: &[u8]) -> Result<PktLines<'_>, ConvertError> {
    let mut out = Vec::new();
    while data.len() >= 4 {
        let len = std::str::from_utf8(&data[..4])
            .ok()
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("malformed pkt-line"))?;
        if len == 0 || len == 1 || len == 2 {
            out.push(None);
            data = &data[4..];
            continue;
        }
        if len < 4 || len > data.len() {
            return Err(bad("truncated pkt-line"));
        }
        out.push(Some(&data[4..len]));
        data = &data[len..];
    }
    Ok((out, data))
}

/// Reads the answer to `GET <repo>/info/refs?service=git-upload-pack` (or
/// `git-receive-pack`): every ref and the capabilities. A repository without any commit
/// advertises none.
pub fn parse_refs(data: &[u8]) -> Result<Advertisement, ConvertError> {
    let (lines, _) = pkt_lines(data)?;
    let mut refs: Vec<(String, String)> = Vec::new();
    let mut capabilities = Vec::new();
    let mut saw_line = false;
    for line in lines.into_iter().flatten() {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches('\n');
        if text.starts_with("# service=") {
            continue;
        }
        saw_line = true;
        let (refpart, caps) = match text.split_once('\0') {
            Some((r, c)) => (r, Some(c)),
            None => (text, None),
        };
        if let Some(c) = caps {
            capabilities = c.split(' ').map(str::to_string).collect();
        }
        if let Some((sha, name)) = refpart.split_once(' ') {
            if sha.len() == 40
                && sha.bytes().all(|b| b.is_ascii_hexdigit())
                && sha != "0".repeat(40)
            {
                refs.push((name.to_string(), sha.to_ascii_lowercase()));
            }
        }
    }
    if !saw_line {
        return Err(bad("no reference advertisement"));
    }
    Ok(Advertisement {
        head: String::new(),
        capabilities,
        refs,
    })
}

/// Reads the answer to `GET <repo>/info/refs?service=git-upload-pack`, with the commit to
/// fetch when no ref is named: `HEAD`, else `main` or `master`, else the first branch.
pub fn parse_advertisement(data: &[u8]) -> Result<Advertisement, ConvertError> {
    let mut ad = parse_refs(data)?;
    let head = ad
        .commit_of("HEAD")
        .or_else(|| ad.commit_of("refs/heads/main"))
        .or_else(|| ad.commit_of("refs/heads/master"))
        .or_else(|| {
            ad.refs
                .iter()
                .find(|(n, _)| n.starts_with("refs/heads/"))
                .map(|(_, s)| s.as_str())
        })
        .ok_or_else(|| bad("no branch is advertised"))?
        .to_string();
    ad.head = head;
    Ok(ad)
}

fn pkt(line: &str) -> String {
    format!("{:04x}{line}", line.len() + 4)
}

/// The body of `POST <repo>/git-upload-pack` asking for the commit `want` alone, without
/// its history where the server can cut it (`deepen 1`).
pub fn upload_request(ad: &Advertisement, want: &str) -> Vec<u8> {
    let has = |c: &str| ad.has(c);
    let mut caps = Vec::new();
    for c in ["ofs-delta", "no-progress"] {
        if has(c) {
            caps.push(c);
        }
    }
    if has("side-band-64k") {
        caps.push("side-band-64k");
    } else if has("side-band") {
        caps.push("side-band");
    }
    let mut body = pkt(&format!("want {want} {}\n", caps.join(" ")));
    if has("shallow") {
        body.push_str(&pkt("deepen 1\n"));
    }
    body.push_str("0000");
    body.push_str(&pkt("done\n"));
    body.into_bytes()
}

/// The pack inside the answer of `git-upload-pack`.
pub fn pack_of_response(data: &[u8], ad: &Advertisement) -> Result<Vec<u8>, ConvertError> {
    let sideband = ad
        .capabilities
        .iter()
        .any(|c| c == "side-band-64k" || c == "side-band");
    let mut rest = data;
    // Shallow lines, a flush, then NAK (or ACK) before the pack.
    loop {
        if rest.starts_with(b"PACK") {
            return Ok(rest.to_vec());
        }
        if rest.len() < 4 {
            return Err(bad("the answer holds no pack"));
        }
        let len = std::str::from_utf8(&rest[..4])
            .ok()
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("malformed answer"))?;
        if len == 0 {
            rest = &rest[4..];
            continue;
        }
        if len < 4 || len > rest.len() {
            return Err(bad("truncated answer"));
        }
        let line = &rest[4..len];
        rest = &rest[len..];
        if line.starts_with(b"NAK") || line.starts_with(b"ACK") {
            break;
        }
        if line.starts_with(b"ERR ") {
            return Err(bad(&String::from_utf8_lossy(&line[4..])
                .chars()
                .take(200)
                .collect::<String>()));
        }
    }
    if !sideband {
        return Ok(rest.to_vec());
    }
    let (lines, _) = pkt_lines(rest)?;
    let mut pack = Vec::new();
    for line in lines.into_iter().flatten() {
        match line.first() {
            Some(1) => pack.extend_from_slice(&line[1..]),
            Some(3) => {
                return Err(bad(&String::from_utf8_lossy(&line[1..])
                    .chars()
                    .take(200)
                    .collect::<String>()))
            }
            _ => {}
        }
    }
    Ok(pack)
}

/// The body of `POST <repo>/git-receive-pack` moving `name` from `old` (zeros: a new
/// ref) to `new`, with the `pack` of objects `new` needs; `ad` is what
/// `info/refs?service=git-receive-pack` advertised.
pub fn receive_request(
    ad: &Advertisement,
    old: &str,
    new: &str,
    name: &str,
    pack: &[u8],
) -> Vec<u8> {
    let mut caps = vec!["report-status", "agent=quire"];
    if ad.has("side-band-64k") {
        caps.push("side-band-64k");
    }
    if ad.has("quiet") {
        caps.push("quiet");
    }
    let mut body = pkt(&format!("{old} {new} {name}\0{}\n", caps.join(" "))).into_bytes();
    body.extend_from_slice(b"0000");
    body.extend_from_slice(pack);
    body
}

/// Reads the answer of `git-receive-pack` to [`receive_request`]: `Ok` when the pack was
/// unpacked and every ref updated, else the server's reason.
pub fn parse_report(data: &[u8], ad: &Advertisement) -> Result<(), String> {
    let report: Vec<u8> = if ad.has("side-band-64k") {
        let (lines, _) = pkt_lines(data).map_err(|e| e.0)?;
        let mut out = Vec::new();
        for line in lines.into_iter().flatten() {
            match line.split_first() {
                Some((1, rest)) => out.extend_from_slice(rest),
                Some((3, rest)) => {
                    return Err(String::from_utf8_lossy(rest)
                        .trim()
                        .chars()
                        .take(300)
                        .collect())
                }
                _ => {}
            }
        }
        out
    } else {
        data.to_vec()
    };
    let (lines, _) = pkt_lines(&report).map_err(|e| e.0)?;
    let mut unpacked = false;
    let mut updated = false;
    for line in lines.into_iter().flatten() {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if let Some(status) = text.strip_prefix("unpack ") {
            if status != "ok" {
                return Err(format!(
                    "the repository could not unpack the commit: {status}"
                ));
            }
            unpacked = true;
        } else if text.starts_with("ok ") {
            updated = true;
        } else if let Some(rest) = text.strip_prefix("ng ") {
            let reason = rest.split_once(' ').map(|(_, r)| r).unwrap_or(rest);
            return Err(format!("the repository refused the update: {reason}"));
        }
    }
    if unpacked && updated {
        Ok(())
    } else {
        Err("the repository answered no status for the update".into())
    }
}

/// A git object.
#[derive(Clone, Debug)]
pub struct Object {
    /// 1 commit, 2 tree, 3 blob, 4 tag.
    pub kind: u8,
    /// Its content.
    pub data: Vec<u8>,
}

/// Object id (SHA-1) in hex.
fn object_id(kind: u8, data: &[u8]) -> String {
    let name = match kind {
        1 => "commit",
        2 => "tree",
        3 => "blob",
        _ => "tag",
    };
    let mut h = Sha1::new();
    h.update(format!("{name} {}\0", data.len()).as_bytes());
    h.update(data);
    hex::encode(h.finalize())
}

enum Base {
    None,
    Offset(usize),
    Id(String),
}

/// Every object of a pack, by id, with deltas applied.
pub fn read_pack(pack: &[u8], limits: &Limits) -> Result<HashMap<String, Object>, ConvertError> {
    if pack.len() < 12 || &pack[..4] != b"PACK" {
        return Err(bad("the pack has no header"));
    }
    let count = u32::from_be_bytes([pack[8], pack[9], pack[10], pack[11]]) as usize;
    if count > limits.max_entries.saturating_mul(4) {
        return Err(ConvertError::new(format!(
            "the repository holds {count} objects, more than {}",
            limits.max_entries.saturating_mul(4)
        )));
    }
    let mut budget = limits.max_expanded;
    let mut pos = 12;
    let byte = |p: usize| {
        pack.get(p)
            .copied()
            .ok_or_else(|| bad("the pack is truncated"))
    };
    // (offset, kind, base, inflated data)
    let mut raw: Vec<(usize, u8, Base, Vec<u8>)> = Vec::with_capacity(count.min(65_536));
    for _ in 0..count {
        let start = pos;
        let mut c = byte(pos)?;
        pos += 1;
        let kind = (c >> 4) & 7;
        let mut size = u64::from(c & 15);
        let mut shift = 4;
        while c & 0x80 != 0 {
            c = byte(pos)?;
            pos += 1;
            if shift > 56 {
                return Err(bad("an object size is malformed"));
            }
            size |= u64::from(c & 0x7f) << shift;
            shift += 7;
        }
        let base = match kind {
            6 => {
                let mut c = byte(pos)?;
                pos += 1;
                let mut off = u64::from(c & 0x7f);
                while c & 0x80 != 0 {
                    c = byte(pos)?;
                    pos += 1;
                    off = ((off + 1) << 7) | u64::from(c & 0x7f);
                    if off > pack.len() as u64 {
                        return Err(bad("a delta base offset is malformed"));
                    }
                }
                let base = (start as u64)
                    .checked_sub(off)
                    .ok_or_else(|| bad("a delta base offset is malformed"))?;
                Base::Offset(base as usize)
            }
            7 => {
                let id = pack
                    .get(pos..pos + 20)
                    .ok_or_else(|| bad("the pack is truncated"))?;
                pos += 20;
                Base::Id(hex::encode(id))
            }
            1..=4 => Base::None,
            _ => return Err(bad("an object has an unknown type")),
        };
        if size > budget {
            return Err(ConvertError::new(format!(
                "the repository expands to more than {} bytes",
                limits.max_expanded
            )));
        }
        let mut decoder = flate2::bufread::ZlibDecoder::new(&pack[pos..]);
        let mut data = Vec::with_capacity(size as usize);
        (&mut decoder)
            .take(size + 1)
            .read_to_end(&mut data)
            .map_err(|_| bad("an object does not inflate"))?;
        if data.len() as u64 != size {
            return Err(bad("an object's size does not match"));
        }
        budget -= size;
        pos += decoder.total_in() as usize;
        raw.push((start, kind, base, data));
    }
    // Ofs-deltas name earlier objects: one pass in pack order resolves them; ref-deltas may
    // name any object, so a few more passes follow, bounded.
    let by_offset: HashMap<usize, usize> = raw.iter().enumerate().map(|(i, r)| (r.0, i)).collect();
    let mut resolved: Vec<Option<(u8, Vec<u8>)>> = vec![None; raw.len()];
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut pending = raw.len();
    for _pass in 0..64 {
        let mut progressed = false;
        for i in 0..raw.len() {
            if resolved[i].is_some() {
                continue;
            }
            let (_, kind, base, data) = &raw[i];
            let from = match base {
                Base::None => Some((*kind, data.clone())),
                Base::Offset(o) => by_offset
                    .get(o)
                    .and_then(|&b| resolved[b].as_ref())
                    .map(|(k, d)| (*k, d.clone())),
                Base::Id(id) => ids
                    .get(id)
                    .and_then(|&b| resolved[b].as_ref())
                    .map(|(k, d)| (*k, d.clone())),
            };
            let Some((base_kind, base_data)) = from else {
                continue;
            };
            let out = if matches!(base, Base::None) {
                base_data
            } else {
                let out = apply_delta(&base_data, data, budget)?;
                budget = budget.saturating_sub(out.len() as u64);
                out
            };
            ids.insert(object_id(base_kind, &out), i);
            resolved[i] = Some((base_kind, out));
            pending -= 1;
            progressed = true;
        }
        if pending == 0 || !progressed {
            break;
        }
    }
    if pending != 0 {
        return Err(bad("a delta names an object the pack lacks"));
    }
    let mut out = HashMap::with_capacity(ids.len());
    for (id, i) in ids {
        if let Some((kind, data)) = resolved[i].take() {
            out.insert(id, Object { kind, data });
        }
    }
    Ok(out)
}

fn apply_delta(base: &[u8], delta: &[u8], budget: u64) -> Result<Vec<u8>, ConvertError> {
    let mut pos = 0;
    let varint = |pos: &mut usize| -> Result<u64, ConvertError> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let c = *delta.get(*pos).ok_or_else(|| bad("a delta is truncated"))?;
            *pos += 1;
            v |= u64::from(c & 0x7f) << shift;
            if c & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 56 {
                return Err(bad("a delta is malformed"));
            }
        }
    };
    let src = varint(&mut pos)?;
    let dst = varint(&mut pos)?;
    if src != base.len() as u64 {
        return Err(bad("a delta does not fit its base"));
    }
    if dst > budget {
        return Err(bad("a delta expands too far"));
    }
    let mut out = Vec::with_capacity(dst as usize);
    while pos < delta.len() {
        let op = delta[pos];
        pos += 1;
        if op & 0x80 != 0 {
            let mut off = 0usize;
            let mut size = 0usize;
            for i in 0..4 {
                if op & (1 << i) != 0 {
                    off |= usize::from(*delta.get(pos).ok_or_else(|| bad("a delta is truncated"))?)
                        << (8 * i);
                    pos += 1;
                }
            }
            for i in 0..3 {
                if op & (0x10 << i) != 0 {
                    size |=
                        usize::from(*delta.get(pos).ok_or_else(|| bad("a delta is truncated"))?)
                            << (8 * i);
                    pos += 1;
                }
            }
            if size == 0 {
                size = 0x10000;
            }
            let piece = base
                .get(off..off.saturating_add(size))
                .ok_or_else(|| bad("a delta copies outside its base"))?;
            out.extend_from_slice(piece);
        } else if op != 0 {
            let n = usize::from(op);
            let piece = delta
                .get(pos..pos + n)
                .ok_or_else(|| bad("a delta is truncated"))?;
            out.extend_from_slice(piece);
            pos += n;
        } else {
            return Err(bad("a delta is malformed"));
        }
        if out.len() as u64 > dst {
            return Err(bad("a delta is longer than it says"));
        }
    }
    if out.len() as u64 != dst {
        return Err(bad("a delta is shorter than it says"));
    }
    Ok(out)
}

/// The files of `commit`'s tree (symbolic links and submodules left out).
pub fn files_of(
    objects: &HashMap<String, Object>,
    commit: &str,
    limits: &Limits,
) -> Result<Vec<Entry>, ConvertError> {
    Ok(leaves_of(objects, commit, limits)?
        .into_iter()
        .filter_map(|leaf| {
            let b = objects.get(&leaf.blob).filter(|o| o.kind == 3)?;
            Some(Entry {
                path: leaf.path,
                content: Content::Held(b.data.clone()),
            })
        })
        .collect())
}

/// A file of a commit's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeLeaf {
    /// Its path from the tree's root.
    pub path: String,
    /// Its blob's id (hex).
    pub blob: String,
    /// Mode `100755` rather than `100644`.
    pub executable: bool,
}

/// The files `commit`'s tree names, in path order (symbolic links and submodules left out),
/// whether or not `objects` holds their blobs.
pub fn leaves_of(
    objects: &HashMap<String, Object>,
    commit: &str,
    limits: &Limits,
) -> Result<Vec<TreeLeaf>, ConvertError> {
    let c = objects
        .get(commit)
        .filter(|o| o.kind == 1)
        .ok_or_else(|| bad("the pack lacks the commit"))?;
    let text = String::from_utf8_lossy(&c.data);
    let tree = text
        .lines()
        .find_map(|l| l.strip_prefix("tree "))
        .ok_or_else(|| bad("the commit names no tree"))?
        .trim()
        .to_string();
    let mut out = Vec::new();
    let mut stack = vec![(tree, String::new(), 0usize)];
    while let Some((id, prefix, depth)) = stack.pop() {
        let t = objects
            .get(&id)
            .filter(|o| o.kind == 2)
            .ok_or_else(|| bad("the pack lacks a tree"))?;
        let mut d = &t.data[..];
        while !d.is_empty() {
            let sp = d
                .iter()
                .position(|&b| b == b' ')
                .ok_or_else(|| bad("a tree is malformed"))?;
            let mode = String::from_utf8_lossy(&d[..sp]).to_string();
            let nul = d
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| bad("a tree is malformed"))?;
            let name = String::from_utf8_lossy(&d[sp + 1..nul]).to_string();
            let sha = d
                .get(nul + 1..nul + 21)
                .ok_or_else(|| bad("a tree is malformed"))?;
            let sha = hex::encode(sha);
            d = &d[nul + 21..];
            if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\']) {
                return Err(ConvertError::new(format!(
                    "repository entry `{name}` points outside the repository"
                )));
            }
            let path = format!("{prefix}{name}");
            match mode.as_str() {
                "40000" if depth < 16 => stack.push((sha, format!("{path}/"), depth + 1)),
                "100644" | "100755" => {
                    if out.len() >= limits.max_entries {
                        return Err(ConvertError::new(format!(
                            "the repository holds more than {} files",
                            limits.max_entries
                        )));
                    }
                    out.push(TreeLeaf {
                        path,
                        blob: sha,
                        executable: mode == "100755",
                    });
                }
                _ => {}
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// A GitHub wiki's files as pages.
pub fn wiki(entries: Vec<Entry>) -> Result<Bundle, ConvertError> {
    let mut pages = Vec::new();
    let mut assets = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for e in entries {
        let name = e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".md") || lower.ends_with(".markdown") {
            let stem = name
                .rsplit_once('.')
                .map_or(name.as_str(), |(s, _)| s)
                .to_string();
            if stem.starts_with('_') || !seen.insert(stem.to_lowercase()) {
                continue;
            }
            let text = String::from_utf8(e.content.document()?)
                .map_err(|_| ConvertError::new(format!("`{}` is not UTF-8 text", e.path)))?;
            let title = title_from_name(&stem);
            // Wiki pages are named by file name, wherever they sit.
            pages.push(markdown_page(
                archive_key(&name),
                &stem,
                &title,
                &wiki_links(&text),
            ));
        } else {
            assets.push(Asset {
                key: archive_key(&e.path),
                name,
                content: e.content,
            });
        }
    }
    if pages.is_empty() {
        return Err(ConvertError::new("holds no wiki page (no markdown file)"));
    }
    pages.sort_by(|a, b| {
        let home = |p: &super::SourcePage| !p.slug_hint.eq_ignore_ascii_case("home");
        (home(a), a.title.to_lowercase()).cmp(&(home(b), b.title.to_lowercase()))
    });
    Ok(Bundle {
        pages,
        assets,
        remote_images: Vec::new(),
        includes: Vec::new(),
    })
}

/// `[[Target]]` and `[[Text|Target]]` as markdown links (outside fenced code).
pub fn wiki_links(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut fenced = false;
    for line in md.split_inclusive('\n') {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fenced = !fenced;
        }
        if fenced || !line.contains("[[") {
            out.push_str(line);
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("[[") {
            let Some(end) = rest[at + 2..].find("]]") else {
                break;
            };
            let inner = &rest[at + 2..at + 2 + end];
            out.push_str(&rest[..at]);
            let (text, target) = match inner.split_once('|') {
                Some((t, g)) => (t.trim(), g.trim()),
                None => (inner.trim(), inner.trim()),
            };
            let lower = target.to_ascii_lowercase();
            let href = target.replace(' ', "-").replace(['<', '>'], "");
            if [".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"]
                .iter()
                .any(|x| lower.ends_with(x))
            {
                out.push_str(&format!("![{}](<{href}>)", super::escape_text(text)));
            } else {
                out.push_str(&format!("[{}](<{href}>)", super::escape_text(text)));
            }
            rest = &rest[at + 2 + end + 2..];
        }
        out.push_str(rest);
    }
    out
}
