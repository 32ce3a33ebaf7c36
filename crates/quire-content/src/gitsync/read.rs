//! A repository's files read back as a revision: the inverse of [`super::layout`].
//!
//! What the files name keeps its identity: a page whose path the base revision's layout
//! gives keeps that page's id, a file at the same path with the same bytes keeps its id, a
//! group with the same title keeps its id. A page whose file is byte for byte what the base
//! revision's layout writes is the base revision's page itself, so that reading back what
//! was written changes nothing. Everything else is read with Git Sync's rules and the
//! dialect: `SUMMARY.md` for the structure (folders without it), frontmatter for a page's
//! settings, `.gitbook/assets` for files, `.gitbook/includes` for reusable contents,
//! `.gitbook/vars.yaml` for the space's variables. What cannot be read is refused with the
//! file named.

use std::collections::{BTreeMap, HashMap};

use super::{layout, paths_of, Content, ASSETS, INCLUDES};
use crate::convert::archive::{Content as Held, Entry};
use crate::convert::{
    archive_key, assemble_keeping, norm_key, tree::from_entries, ConvertError, Keep, Limits,
};
use crate::frontmatter::{apply_frontmatter, parse_space_variables, split_page_markdown};
use crate::markdown::try_normalize_markdown;
use crate::model::{ContentRef, Page, PageKind, ReusableContent, Revision};
use crate::store::ObjectHash;

/// A file of the repository that is new to the revision: the caller stores its bytes and
/// adds it to the revision's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewFile {
    /// The id the revision's pages use for it.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// What the files make.
#[derive(Clone, Debug, PartialEq)]
pub struct Read {
    /// The revision, its files only those kept from the base revision.
    pub revision: Revision,
    /// The files to store and add.
    pub new_files: Vec<NewFile>,
    /// The redirects `.gitbook.yaml` lists, in its order.
    pub redirects: Vec<GitRedirect>,
    /// Where the revision's pages, files and reusable contents were read from.
    pub placement: super::carry::Placement,
}

/// A redirect of `.gitbook.yaml`: from an old path of the space's published site to the page
/// of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitRedirect {
    /// The old path, relative to the space's address (`old/page`, no leading `/`).
    pub source: String,
    /// The file as written.
    pub file: String,
    /// The page at that file, `None` when no page is.
    pub page: Option<String>,
}

/// Most redirects `.gitbook.yaml` may list (a site holds no more).
pub const MAX_GIT_REDIRECTS: usize = 2000;

fn refuse(path: &str, why: impl std::fmt::Display) -> ConvertError {
    ConvertError::new(format!("`{path}`: {why}"))
}

/// A file of the tree [`read_tree`] reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeFile {
    /// Its bytes.
    Bytes(Vec<u8>),
    /// Byte for byte the file [`layout`] writes at its path for the base revision (as the
    /// base revision's own commit holds it): the base's page, reusable content, file,
    /// table of contents or variables are kept without reading the file again. A caller
    /// that marks files so has compared the whole tree with the base's, so the files it
    /// gives as bytes are taken as differing from what the layout writes.
    Unchanged,
}

/// Reads `files` (path from the repository's root, bytes) as a revision, keeping the
/// identities `base` gives.
pub fn read(
    files: Vec<(String, Vec<u8>)>,
    base: &Revision,
    limits: &Limits,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Read, ConvertError> {
    let files = files
        .into_iter()
        .map(|(path, bytes)| (path, TreeFile::Bytes(bytes)))
        .collect();
    read_tree(files, base, limits, new_id)
}

/// [`read`], where the files the caller knows to be as the base's layout writes them are
/// marked [`TreeFile::Unchanged`]: what a push did not touch costs neither reading nor
/// parsing (nor laying the base out to compare with).
pub fn read_tree(
    files: Vec<(String, TreeFile)>,
    base: &Revision,
    limits: &Limits,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Read, ConvertError> {
    read_tree_placed(files, base, None, limits, new_id)
}

/// [`read_tree`] against a base whose commit's tree holds its content where `placement`
/// says (a tree carried from a push: `super::carry`) rather than where Quire's layout puts
/// it; a file marked [`TreeFile::Unchanged`] is then one with the same blob as that tree
/// holds at that path, which the placement names.
pub fn read_tree_placed(
    files: Vec<(String, TreeFile)>,
    base: &Revision,
    placement: Option<&super::carry::Placement>,
    limits: &Limits,
    new_id: &mut dyn FnMut() -> String,
) -> Result<Read, ConvertError> {
    let compared = files.iter().any(|(_, f)| matches!(f, TreeFile::Unchanged));
    // The base's layout, to find the files given as bytes that are what it writes; not
    // needed when the caller compared.
    let written: HashMap<String, Content> = if compared {
        HashMap::new()
    } else {
        layout(base)
            .into_iter()
            .map(|e| (e.path, e.content))
            .collect()
    };
    let base_paths = match placement {
        Some(p) => p.paths(),
        None => paths_of(base),
    };
    let same_text = |path: &str, bytes: &[u8]| matches!(written.get(path), Some(Content::Text(t)) if t.as_bytes() == bytes);
    let mut unchanged: std::collections::HashSet<String> = std::collections::HashSet::new();
    // The paths a placement names: the only ones that can be unchanged against it.
    let placed: Option<std::collections::HashSet<&str>> = placement.map(|p| p.named());

    let mut keep = Keep::default();
    for (id, path) in &base_paths.pages {
        keep.pages.insert(norm_key(&archive_key(path)), id.clone());
    }
    let mut entries = Vec::new();
    let mut includes: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut variables = None;
    let mut tags = Vec::new();
    let mut redirects = Vec::new();
    for (path, file) in files {
        let bytes = match file {
            TreeFile::Bytes(bytes) => bytes,
            // The structure and the variables as the base's layout writes them (cheap to
            // make again); pages, reusable contents and files are the base's own, below.
            TreeFile::Unchanged if path == "SUMMARY.md" => {
                super::summary(base, &base_paths).into_bytes()
            }
            TreeFile::Unchanged if path == ".gitbook/vars.yaml" => {
                variables = Some(base.variables.clone());
                continue;
            }
            TreeFile::Unchanged => {
                let laid = match &placed {
                    Some(named) => named.contains(path.as_str()),
                    None => {
                        path.starts_with(&format!("{ASSETS}/"))
                            || super::super::convert::tree::is_markdown(&path)
                                && (!path.starts_with(".gitbook/")
                                    || path.starts_with(&format!("{INCLUDES}/")))
                    }
                };
                if !laid {
                    return Err(refuse(
                        &path,
                        "is no file the base revision's layout writes",
                    ));
                }
                unchanged.insert(path.clone());
                Vec::new()
            }
        };
        if path == ".gitbook.yaml" {
            let text = String::from_utf8_lossy(&bytes);
            redirects =
                crate::frontmatter::parse_git_redirects(&text).map_err(|e| refuse(&path, e))?;
            if redirects.len() > MAX_GIT_REDIRECTS {
                return Err(refuse(
                    &path,
                    format!("lists more than {MAX_GIT_REDIRECTS} redirects"),
                ));
            }
        }
        if path == ".gitbook/tags.yaml" {
            let text = String::from_utf8(bytes).map_err(|_| refuse(&path, "is not UTF-8 text"))?;
            tags = crate::frontmatter::parse_tags(&text).map_err(|e| refuse(&path, e))?;
        } else if path == ".gitbook/vars.yaml" {
            let text = String::from_utf8(bytes).map_err(|_| refuse(&path, "is not UTF-8 text"))?;
            variables = Some(parse_space_variables(&text).map_err(|e| refuse(&path, e))?);
        } else if let Some(name) = path.strip_prefix(&format!("{INCLUDES}/")) {
            if name.ends_with(".md") && !name.contains('/') {
                includes.insert(path, bytes);
            }
        } else if path.starts_with(".gitbook/") && !path.starts_with(&format!("{ASSETS}/")) {
            // Other files Git Sync keeps for itself.
        } else {
            if super::super::convert::tree::is_markdown(&path)
                && std::str::from_utf8(&bytes).is_err()
            {
                return Err(refuse(&path, "is not UTF-8 text"));
            }
            entries.push(Entry {
                path,
                content: Held::Held(bytes),
            });
        }
    }

    // Reusable contents first: pages include them by path.
    let by_path: HashMap<&str, &str> = base_paths
        .includes
        .iter()
        .map(|(id, p)| (p.as_str(), id.as_str()))
        .collect();
    let mut reusable = Vec::new();
    let mut placement = super::carry::Placement::default();
    for (path, bytes) in includes {
        let id = by_path
            .get(path.as_str())
            .map(|id| id.to_string())
            .unwrap_or_else(&mut *new_id);
        keep.includes
            .insert(norm_key(&archive_key(&path)), id.clone());
        placement.includes.insert(id.clone(), path.clone());
        if unchanged.contains(&path) || same_text(&path, &bytes) {
            if let Some(r) = base.reusable_contents.iter().find(|r| r.id == id) {
                reusable.push(r.clone());
                continue;
            }
            if unchanged.contains(&path) {
                return Err(refuse(
                    &path,
                    "is not a reusable content of the base revision",
                ));
            }
        }
        let text = String::from_utf8(bytes).map_err(|_| refuse(&path, "is not UTF-8 text"))?;
        let src = split_page_markdown(&text).map_err(|e| refuse(&path, e))?;
        let title = src
            .frontmatter
            .title
            .or(src.heading)
            .unwrap_or_else(|| crate::convert::title_from_name(&path));
        let markdown = try_normalize_markdown(&src.body).map_err(|e| refuse(&path, e))?;
        reusable.push(ReusableContent {
            id,
            title,
            markdown,
        });
    }

    let texts: HashMap<String, Vec<u8>> = entries
        .iter()
        .filter(|e| super::super::convert::tree::is_markdown(&e.path))
        .filter_map(|e| match &e.content {
            Held::Held(b) => Some((e.path.clone(), b.clone())),
            Held::Archived(_) => None,
        })
        .collect();
    let bundle = if entries
        .iter()
        .any(|e| super::super::convert::tree::is_markdown(&e.path))
    {
        from_entries(entries)?
    } else {
        Default::default()
    };
    // A file keeps its id where the same bytes are at the same path.
    let base_files: HashMap<&str, &crate::model::File> = base
        .files
        .iter()
        .filter_map(|f| base_paths.files.get(&f.id).map(|p| (p.as_str(), f)))
        .collect();
    for (i, asset) in bundle.assets.iter().enumerate() {
        let path = key_path(&asset.key);
        match (base_files.get(path.as_str()), &asset.content) {
            (Some(f), _) if unchanged.contains(&path) => {
                keep.files.insert(i, f.id.clone());
            }
            (None, _) if unchanged.contains(&path) => {
                return Err(refuse(&path, "is not a file of the base revision"));
            }
            (Some(f), Held::Held(bytes)) if ObjectHash::of(bytes).to_hex() == f.blob => {
                keep.files.insert(i, f.id.clone());
            }
            _ => {}
        }
    }
    let assembled = assemble_keeping(&bundle, &[], false, limits, &keep, new_id)?;

    // Pages: the base's own where the file is what it wrote, the frontmatter applied
    // otherwise; groups keep their ids by title.
    let base_pages: HashMap<&str, &Page> = base
        .flatten()
        .into_iter()
        .map(|f| (f.page.id.as_str(), f.page))
        .collect();
    let base_groups: HashMap<&str, &Page> = base
        .pages
        .iter()
        .filter(|p| matches!(p.kind, PageKind::Group))
        .map(|p| (p.title.as_str(), p))
        .collect();
    // Redirects name files: the pages at them.
    let page_at: HashMap<String, &String> = assembled
        .keys
        .iter()
        .map(|(id, key)| (key_path(key), id))
        .collect();
    let redirects = redirects
        .into_iter()
        .map(|(source, file)| {
            let at = file.trim().trim_start_matches("./").trim_start_matches('/');
            GitRedirect {
                source: source.trim().trim_matches('/').to_string(),
                page: page_at.get(at).map(|id| id.to_string()),
                file,
            }
        })
        .collect();
    let mut pages = assembled.pages;
    let base_links: HashMap<(&str, &ContentRef), &Page> = base
        .flatten()
        .into_iter()
        .filter_map(|f| match &f.page.kind {
            PageKind::Link(l) => Some(((f.page.title.as_str(), &l.target), f.page)),
            _ => None,
        })
        .collect();
    let mut taken: std::collections::HashSet<String> = assembled.keys.keys().cloned().collect();
    let mut stack: Vec<&mut Page> = pages.iter_mut().collect();
    while let Some(page) = stack.pop() {
        // Groups and link pages have no file: they keep their ids by title (and target).
        let kept = match &page.kind {
            PageKind::Group => base_groups.get(page.title.as_str()).copied(),
            PageKind::Link(l) => match_link(&base_links, &page.title, &l.target),
            PageKind::Document(_) => None,
        };
        if let Some(before) = kept.filter(|b| taken.insert(b.id.clone())) {
            page.id = before.id.clone();
            page.slug = before.slug.clone();
        }
        if let Some(key) = assembled.keys.get(&page.id) {
            let path = key_path(key);
            if matches!(page.kind, PageKind::Document(_)) {
                placement.pages.insert(page.id.clone(), path.clone());
            }
            if let Some(bytes) = texts.get(&path) {
                let as_laid = unchanged.contains(&path);
                match base_pages.get(page.id.as_str()) {
                    Some(before) if as_laid || same_text(&path, bytes) => {
                        let children = std::mem::take(&mut page.pages);
                        *page = before.without_children();
                        page.pages = children;
                    }
                    _ if as_laid => {
                        return Err(refuse(&path, "is not a page of the base revision"));
                    }
                    before => {
                        let text = std::str::from_utf8(bytes).expect("checked above");
                        let src = split_page_markdown(text).map_err(|e| refuse(&path, e))?;
                        // The summary names the page as before: a new `# heading` renames it.
                        if let (Some(before), Some(heading)) = (before, &src.heading) {
                            if page.title == before.title && *heading != before.title {
                                page.title = heading.clone();
                            }
                        }
                        apply_frontmatter(page, &src.frontmatter);
                    }
                }
            }
        }
        stack.extend(page.pages.iter_mut());
    }

    let mut files = Vec::new();
    let mut new_files = Vec::new();
    // Every file under `.gitbook/assets` is the space's, used by a page or not, and so is
    // every file of the base left as it was (the pages using it were not read again).
    let mut listed = assembled.files;
    let listed_now: std::collections::HashSet<usize> = listed.iter().map(|(i, _)| *i).collect();
    for (i, asset) in bundle.assets.iter().enumerate() {
        let path = key_path(&asset.key);
        let kept = path.starts_with(&format!("{ASSETS}/")) || unchanged.contains(&path);
        if kept && !listed_now.contains(&i) {
            let id = keep.files.get(&i).cloned().unwrap_or_else(&mut *new_id);
            listed.push((i, id));
        }
    }
    for (index, id) in listed {
        placement
            .files
            .insert(id.clone(), key_path(&bundle.assets[index].key));
        match base.files.iter().find(|f| f.id == id) {
            Some(f) if keep.files.get(&index) == Some(&id) => files.push(f.clone()),
            _ => {
                let asset = &bundle.assets[index];
                let bytes = asset.content.read()?.into_owned();
                new_files.push(NewFile {
                    id,
                    name: asset.name.clone(),
                    bytes,
                });
            }
        }
    }
    Ok(Read {
        revision: Revision {
            pages,
            files,
            reusable_contents: reusable,
            variables: variables.unwrap_or_default(),
            tags,
        },
        new_files,
        redirects,
        placement,
    })
}

/// The base revision's link page with this title and target.
fn match_link<'a>(
    links: &HashMap<(&str, &ContentRef), &'a Page>,
    title: &str,
    target: &ContentRef,
) -> Option<&'a Page> {
    links.get(&(title, target)).copied()
}

/// The repository path of a source key.
fn key_path(key: &str) -> String {
    let key = norm_key(key);
    key.strip_prefix(crate::convert::ARCHIVE_BASE)
        .unwrap_or(&key)
        .to_string()
}
