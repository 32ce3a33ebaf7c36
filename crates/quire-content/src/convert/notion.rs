//! Notion exports (markdown and CSV): `Title <32 hex>.md` pages whose children and images sit
//! in a folder of the same name, and databases as `Title <32 hex>.csv` (or `_all.csv`)
//! beside a folder of their rows' pages. The id suffix is dropped from titles and slugs; a
//! database becomes a page holding its table, its rows' pages as children.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::archive::{read_nested_zip, read_zip, Bytes, Entry};
use super::{
    archive_key, escape_text, markdown_page, Asset, Bundle, ConvertError, Limits, SourcePage,
    MAX_TREE_DEPTH,
};

/// Converts a Notion export. An export of several parts (a zip of zips) is read part by
/// part within the same caps.
pub fn convert(bytes: Bytes, limits: &Limits) -> Result<Bundle, ConvertError> {
    let mut entries = read_zip(bytes, limits)?;
    if !entries.is_empty()
        && entries
            .iter()
            .all(|e| e.path.to_ascii_lowercase().ends_with(".zip"))
    {
        let mut inner = Vec::new();
        for part in &entries {
            let got = part
                .content
                .clone()
                .document()
                .and_then(|bytes| read_nested_zip(bytes, part))
                .map_err(|e| ConvertError::new(format!("part `{}`: {}", part.path, e.0)))?;
            inner.extend(got);
        }
        entries = inner;
    }
    from_entries(entries)
}

/// The title of a Notion file or folder name: without extension and id suffix.
pub fn strip_id(name: &str) -> &str {
    let stem = name
        .strip_suffix(".md")
        .or_else(|| name.strip_suffix(".csv"))
        .unwrap_or(name);
    let stem = stem.strip_suffix("_all").unwrap_or(stem);
    match stem.rsplit_once(' ') {
        Some((title, id)) if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) => title,
        _ => stem,
    }
}

fn from_entries(entries: Vec<Entry>) -> Result<Bundle, ConvertError> {
    let mut docs: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut assets = Vec::new();
    for e in entries {
        let lower = e.path.to_ascii_lowercase();
        // Every folder on the way, so that a folder without files of its own is known.
        let mut dir = String::new();
        for part in e
            .path
            .split('/')
            .collect::<Vec<_>>()
            .split_last()
            .map_or(&[][..], |(_, d)| d)
        {
            let parent = dir.clone();
            dir = if dir.is_empty() {
                (*part).to_string()
            } else {
                format!("{dir}/{part}")
            };
            folders.entry(parent).or_default().insert(dir.clone());
        }
        if lower.ends_with(".md") || lower.ends_with(".csv") {
            docs.insert(e.path, e.content.document()?);
        } else {
            assets.push(Asset {
                key: archive_key(&e.path),
                name: e.path.rsplit('/').next().unwrap_or(&e.path).to_string(),
                content: e.content,
            });
        }
    }
    if docs.is_empty() {
        return Err(ConvertError::new(
            "holds no Notion page (no .md or .csv file)",
        ));
    }
    let mut by_dir: HashMap<String, Vec<String>> = HashMap::new();
    for path in docs.keys() {
        let dir = path
            .rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_string());
        by_dir.entry(dir).or_default().push(path.clone());
    }
    let ctx = Ctx {
        docs: &docs,
        by_dir: &by_dir,
        folders: &folders,
    };
    Ok(Bundle {
        pages: ctx.level("", 0)?,
        assets,
        remote_images: Vec::new(),
        includes: Vec::new(),
    })
}

struct Ctx<'a> {
    docs: &'a BTreeMap<String, Vec<u8>>,
    by_dir: &'a HashMap<String, Vec<String>>,
    folders: &'a BTreeMap<String, BTreeSet<String>>,
}

impl Ctx<'_> {
    /// The pages of folder `dir`: its files, each with the folder of the same name as its
    /// children, then folders that belong to no file.
    fn level(&self, dir: &str, depth: usize) -> Result<Vec<SourcePage>, ConvertError> {
        let join = |name: &str| {
            if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            }
        };
        let files = self.by_dir.get(dir).cloned().unwrap_or_default();
        let mut owned: BTreeSet<String> = BTreeSet::new();
        let mut pages = Vec::new();
        // A database's `_all.csv` holds every row; the other CSV only the view's.
        let has_all: BTreeSet<String> = files
            .iter()
            .filter_map(|p| p.strip_suffix("_all.csv").map(|s| format!("{s}.csv")))
            .collect();
        for path in &files {
            if has_all.contains(path) {
                continue;
            }
            let name = path.rsplit('/').next().unwrap_or(path);
            let stem = name
                .strip_suffix(".md")
                .or_else(|| name.strip_suffix("_all.csv"))
                .or_else(|| name.strip_suffix(".csv"))
                .unwrap_or(name);
            let folder = join(stem);
            let title = strip_id(name).to_string();
            let mut page = if path.ends_with(".md") {
                let text = String::from_utf8(self.docs[path].clone())
                    .map_err(|_| ConvertError::new(format!("`{path}` is not UTF-8 text")))?;
                markdown_page(archive_key(path), &title, &title, &text)
            } else {
                self.database(path, stem, &title)?
            };
            page.slug_hint = title.clone();
            if self.folders.contains_key(&folder) || self.by_dir.contains_key(&folder) {
                owned.insert(folder.clone());
                page.children = self.below(&folder, depth)?;
            }
            pages.push(page);
        }
        for sub in self.folders.get(dir).into_iter().flatten() {
            if owned.contains(sub) {
                continue;
            }
            let children = self.below(sub, depth)?;
            if children.is_empty() {
                continue;
            }
            let name = sub.rsplit('/').next().unwrap_or(sub);
            pages.push(SourcePage {
                title: strip_id(name).to_string(),
                children,
                ..SourcePage::default()
            });
        }
        pages.sort_by_key(|a| a.title.to_lowercase());
        Ok(pages)
    }

    fn below(&self, folder: &str, depth: usize) -> Result<Vec<SourcePage>, ConvertError> {
        if depth + 1 < MAX_TREE_DEPTH {
            return self.level(folder, depth + 1);
        }
        // At the deepest level, everything below comes flat.
        let prefix = format!("{folder}/");
        let mut out = Vec::new();
        for (path, bytes) in self.docs.range(prefix.clone()..) {
            if !path.starts_with(&prefix) {
                break;
            }
            if path.ends_with(".md") {
                let title = strip_id(path.rsplit('/').next().unwrap_or(path)).to_string();
                let text = String::from_utf8_lossy(bytes);
                out.push(markdown_page(archive_key(path), &title, &title, &text));
            }
        }
        Ok(out)
    }

    /// A database as a page holding its table; a row's first cell links to the row's page.
    fn database(&self, path: &str, stem: &str, title: &str) -> Result<SourcePage, ConvertError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(self.docs[path].as_slice());
        let headers: Vec<String> = reader
            .headers()
            .map_err(|e| ConvertError::new(format!("`{path}` is not a readable CSV file ({e})")))?
            .iter()
            .map(|h| h.trim_start_matches('\u{feff}').to_string())
            .collect();
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let rows_dir = if dir.is_empty() {
            stem.to_string()
        } else {
            format!("{dir}/{stem}")
        };
        let row_pages: HashMap<String, String> = self
            .by_dir
            .get(&rows_dir)
            .into_iter()
            .flatten()
            .filter(|p| p.ends_with(".md"))
            .map(|p| {
                (
                    strip_id(p.rsplit('/').next().unwrap_or(p)).to_string(),
                    p.clone(),
                )
            })
            .collect();
        let width = headers.len().clamp(1, 64);
        let cell = |s: &str| escape_text(&s.split_whitespace().collect::<Vec<_>>().join(" "));
        let mut lines = vec![
            format!(
                "| {} |",
                headers
                    .iter()
                    .take(width)
                    .map(|h| cell(h))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
            format!("|{}", " --- |".repeat(width)),
        ];
        for (i, record) in reader.records().enumerate() {
            let record =
                record.map_err(|e| ConvertError::new(format!("`{path}` row {}: {e}", i + 1)))?;
            let cells: Vec<String> = (0..width)
                .map(|c| {
                    let v = record.get(c).unwrap_or("");
                    match row_pages.get(v).filter(|_| c == 0) {
                        Some(p) => {
                            // Relative to the database's own file.
                            let rel = p.strip_prefix(&format!("{dir}/")).unwrap_or(p);
                            format!("[{}](<{}>)", cell(v), rel.replace(['<', '>'], ""))
                        }
                        None => cell(v),
                    }
                })
                .collect();
            lines.push(format!("| {} |", cells.join(" | ")));
        }
        // Pages link to the database's own CSV (not the `_all` one holding every row).
        let key = if dir.is_empty() {
            format!("{stem}.csv")
        } else {
            format!("{dir}/{stem}.csv")
        };
        Ok(SourcePage {
            key: archive_key(&key),
            title: title.to_string(),
            body: Some(lines.join("\n") + "\n"),
            ..SourcePage::default()
        })
    }
}
