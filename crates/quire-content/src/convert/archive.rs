//! Zip archives read in memory under caps: entry count, expanded bytes (counted while
//! inflating, whatever the archive declares) and compression ratio; an entry whose path
//! would leave the archive's folder refuses the whole archive.

use std::io::Read;

use super::{ConvertError, Limits};

/// A file of an archive.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Slash-separated path inside the archive, never absolute, never with `..`.
    pub path: String,
    /// Expanded bytes.
    pub bytes: Vec<u8>,
}

/// Entries above this size are held to the ratio cap (small files compress well legitimately).
const RATIO_FLOOR: u64 = 1024 * 1024;

/// Reads every file of the zip archive `bytes` (folders and platform litter skipped).
pub fn read_zip(bytes: &[u8], limits: &Limits) -> Result<Vec<Entry>, ConvertError> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| ConvertError::new(format!("is not a readable zip archive ({e})")))?;
    if archive.len() > limits.max_entries {
        return Err(ConvertError::new(format!(
            "the archive holds {} entries, more than {}",
            archive.len(),
            limits.max_entries
        )));
    }
    let mut out = Vec::new();
    let mut expanded: u64 = 0;
    for i in 0..archive.len() {
        let mut file = archive
            .by_index(i)
            .map_err(|e| ConvertError::new(format!("archive entry {i} cannot be read ({e})")))?;
        let raw = file.name().to_string();
        let path = safe_path(&raw)?;
        if file.is_dir() || path.is_empty() || ignored(&path) {
            continue;
        }
        let compressed = file.compressed_size().max(1);
        let budget = limits.max_expanded.saturating_sub(expanded);
        let ratio_cap = compressed.saturating_mul(limits.max_ratio).max(RATIO_FLOOR);
        let cap = budget.min(ratio_cap);
        let mut data = Vec::new();
        file.by_ref()
            .take(cap.saturating_add(1))
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
        if len > budget {
            return Err(ConvertError::new(format!(
                "the archive expands to more than {} bytes",
                limits.max_expanded
            )));
        }
        expanded += len;
        out.push(Entry { path, bytes: data });
    }
    Ok(out)
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
}
