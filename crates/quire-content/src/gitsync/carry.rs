//! A revision's tree made from its parents' trees: what the revision did not change is
//! carried over as it is (the bytes a person pushed, files Quire does not model, the paths
//! they chose), and only what it changed is laid out. A page edited since is its parent's
//! file with the edit's lines applied (a three-way merge of the parent's file, the page as
//! Quire writes it before, and after), so that its other lines, its frontmatter's order and
//! style, and its wrapped paragraphs stay as they were.
//!
//! [`plan`] decides, for every path, where its bytes come from, and which bytes of the
//! parents it needs ([`Plan::needs`]); the caller reads those and [`Plan::lay`] writes the
//! rest.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::objects::Oid;
use super::{page_file, paths_of, rewrite_links, same_page, segment, summary, vars_text, Paths};
use super::{ASSETS, INCLUDES};
use crate::merge::{merge_regions, Region};
use crate::model::{slugify, Page, PageKind, Revision};

/// A file of a commit's tree: its blob and whether it is executable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// The blob's id.
    pub oid: Oid,
    /// Mode `100755` rather than `100644`.
    pub executable: bool,
}

/// A commit's files by path.
pub type Tree = BTreeMap<String, Leaf>;

/// Where a revision's document pages, files and reusable contents are in its commit's
/// tree, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Document pages' files.
    pub pages: BTreeMap<String, String>,
    /// Files under `.gitbook/assets`.
    pub files: BTreeMap<String, String>,
    /// Reusable contents' files.
    pub includes: BTreeMap<String, String>,
}

impl Placement {
    /// Where [`super::layout`] writes everything of `rev`.
    pub fn of(rev: &Revision) -> Placement {
        let p = paths_of(rev);
        Placement {
            pages: p.pages.into_iter().collect(),
            files: p.files.into_iter().collect(),
            includes: p.includes.into_iter().collect(),
        }
    }

    pub(super) fn paths(&self) -> Paths {
        let map = |m: &BTreeMap<String, String>| m.clone().into_iter().collect::<HashMap<_, _>>();
        Paths {
            pages: map(&self.pages),
            files: map(&self.files),
            includes: map(&self.includes),
        }
    }

    /// Every path it names, as a set.
    pub fn named(&self) -> HashSet<&str> {
        self.all().map(String::as_str).collect()
    }

    /// Every path it names.
    fn all(&self) -> impl Iterator<Item = &String> {
        self.pages
            .values()
            .chain(self.files.values())
            .chain(self.includes.values())
    }
}

/// A parent revision with its commit's tree.
pub struct Parent<'a> {
    /// Its content.
    pub revision: &'a Revision,
    /// Where its content is in `tree`.
    pub placement: &'a Placement,
    /// Its commit's files.
    pub tree: &'a Tree,
}

/// What a path of the new tree holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Made {
    /// A blob a parent's tree holds.
    Same(Leaf),
    /// New text.
    Text(String),
    /// A file of the revision: the blob named by this sha-256 (hex).
    Blob(String),
}

/// Where one path's bytes come from.
enum Source {
    Same(Leaf),
    /// A page file: the page of `after`, written over the file `old` of parent `parent`
    /// (when it had the page at the same path).
    Page {
        id: String,
        old: Option<(usize, Oid)>,
    },
    Include {
        id: String,
        old: Option<(usize, Oid)>,
    },
    Summary {
        old: Option<Oid>,
    },
    Vars {
        old: Option<Oid>,
    },
    Blob {
        sha: String,
    },
}

/// The tree of a revision, decided.
pub struct Plan {
    paths: Vec<(String, Source)>,
    placement: Placement,
}

impl Plan {
    /// The parents' blobs whose bytes [`Plan::lay`] needs.
    pub fn needs(&self) -> Vec<Oid> {
        let mut out: Vec<Oid> = self
            .paths
            .iter()
            .filter_map(|(_, s)| match s {
                Source::Page { old, .. } | Source::Include { old, .. } => old.map(|(_, o)| o),
                Source::Summary { old } | Source::Vars { old } => *old,
                _ => None,
            })
            .collect();
        out.sort_unstable_by_key(|o| o.0);
        out.dedup();
        out
    }

    /// Where everything of the revision is in its tree.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The files of the tree, in path order. `old` holds the bytes of [`Plan::needs`]; one
    /// missing is laid out afresh.
    pub fn lay(
        self,
        parents: &[Parent<'_>],
        after: &Revision,
        old: &HashMap<Oid, Vec<u8>>,
    ) -> Vec<(String, Made)> {
        let after_paths = self.placement.paths();
        let parent_paths: Vec<Paths> = parents.iter().map(|p| p.placement.paths()).collect();
        let pages: HashMap<&str, &Page> = after
            .flatten()
            .into_iter()
            .map(|f| (f.page.id.as_str(), f.page))
            .collect();
        let old_text = |o: &Option<(usize, Oid)>| {
            o.and_then(|(i, oid)| Some((i, std::str::from_utf8(old.get(&oid)?).ok()?)))
        };
        let mut out = Vec::with_capacity(self.paths.len());
        for (path, source) in self.paths {
            let made = match source {
                Source::Same(leaf) => Made::Same(leaf),
                Source::Blob { sha } => Made::Blob(sha),
                Source::Page { id, old } => {
                    let page = pages[id.as_str()];
                    let new = page_file(page, &path, &after_paths);
                    Made::Text(match old_text(&old) {
                        Some((i, ours)) => {
                            let before = parents[i]
                                .revision
                                .page(&id)
                                .map(|p| page_file(p, &path, &parent_paths[i]))
                                .unwrap_or_default();
                            apply(&before, ours, &new)
                        }
                        None => new,
                    })
                }
                Source::Include { id, old } => {
                    let text = |rev: &Revision, paths: &Paths| {
                        rev.reusable_contents
                            .iter()
                            .find(|r| r.id == id)
                            .map(|r| include_file(r, &path, paths))
                            .unwrap_or_default()
                    };
                    let new = text(after, &after_paths);
                    Made::Text(match old_text(&old) {
                        Some((i, ours)) => {
                            apply(&text(parents[i].revision, &parent_paths[i]), ours, &new)
                        }
                        None => new,
                    })
                }
                Source::Summary { old: o } => {
                    let new = summary(after, &after_paths);
                    let before = summary(parents[0].revision, &parent_paths[0]);
                    Made::Text(
                        match o.and_then(|o| std::str::from_utf8(old.get(&o)?).ok()) {
                            Some(ours) => apply(&before, ours, &new),
                            None => new,
                        },
                    )
                }
                Source::Vars { old: o } => {
                    let new = vars_text(after);
                    let before = vars_text(parents[0].revision);
                    Made::Text(
                        match o.and_then(|o| std::str::from_utf8(old.get(&o)?).ok()) {
                            Some(ours) => apply(&before, ours, &new),
                            None => new,
                        },
                    )
                }
            };
            out.push((path, made));
        }
        out
    }
}

/// `ours` (a parent's file as its tree holds it) with the lines changed from `before` (the
/// parent's content as Quire writes it) to `after` applied; where both differ on the same
/// lines, `after`'s lines win: they are the edit.
fn apply(before: &str, ours: &str, after: &str) -> String {
    let mut out = String::with_capacity(after.len());
    for region in merge_regions(before, ours, after) {
        match region {
            Region::Merged(text) => out.push_str(&text),
            Region::Conflict { theirs, .. } => out.push_str(&theirs),
        }
    }
    out
}

/// A reusable content's file: frontmatter with its title, then its body.
pub(super) fn include_file(r: &crate::model::ReusableContent, path: &str, paths: &Paths) -> String {
    let body = rewrite_links(&r.markdown, path, paths);
    let mut text = format!(
        "---\ntitle: {}\n---\n\n",
        crate::frontmatter::yaml_str(&r.title)
    );
    text.push_str(&body);
    text
}

/// Decides the tree of `after` from its parents' (the first is the one whose files Quire
/// does not model are kept; the others add theirs where it has nothing at the path).
pub fn plan(parents: &[Parent<'_>], after: &Revision) -> Plan {
    let mut placement = Placement::default();
    let mut paths: BTreeMap<String, Source> = BTreeMap::new();
    // Files of the parents Quire does not model stay.
    let modelled: Vec<HashSet<&String>> = parents
        .iter()
        .map(|p| p.placement.all().collect())
        .collect();
    let own = |path: &str| path == "SUMMARY.md" || path == ".gitbook/vars.yaml";
    for (i, parent) in parents.iter().enumerate() {
        for (path, leaf) in parent.tree {
            let theirs = modelled[i].contains(path) || own(path);
            let in_first = i > 0 && parents[0].tree.contains_key(path);
            if !theirs && !in_first {
                paths.entry(path.clone()).or_insert(Source::Same(*leaf));
            }
        }
    }
    let mut taken: HashSet<String> = paths.keys().map(|p| p.to_ascii_lowercase()).collect();
    for p in parents {
        taken.extend(p.placement.all().map(|p| p.to_ascii_lowercase()));
    }

    // Each parent's pages by id (a lookup in the tree is a walk of it).
    let by_id: Vec<HashMap<&str, &Page>> = parents
        .iter()
        .map(|p| {
            p.revision
                .flatten()
                .into_iter()
                .map(|f| (f.page.id.as_str(), f.page))
                .collect()
        })
        .collect();
    // Pages, parents before children.
    let mut first = true;
    let mut stack: Vec<(&Page, Option<String>)> =
        after.pages.iter().rev().map(|p| (p, None)).collect();
    while let Some((page, parent_path)) = stack.pop() {
        let mut here = parent_path.clone();
        if let PageKind::Document(_) = page.kind {
            let kept = parents
                .iter()
                .enumerate()
                .find_map(|(i, p)| Some((i, p.placement.pages.get(&page.id)?.clone())));
            let path = match &kept {
                Some((_, path)) => path.clone(),
                // The first page opens the repository, as in Quire's own layout.
                None if first && taken.insert("readme.md".into()) => "README.md".into(),
                None => new_page_path(page, parent_path.as_deref(), &mut taken),
            };
            first = false;
            placement.pages.insert(page.id.clone(), path.clone());
            here = Some(path.clone());
            if let std::collections::btree_map::Entry::Vacant(slot) = paths.entry(path.clone()) {
                // A parent holding the same page at the same path gives its file as it is.
                let same = parents.iter().zip(&by_id).find_map(|(p, pages)| {
                    let before = *pages.get(page.id.as_str())?;
                    (p.placement.pages.get(&page.id) == Some(&path) && same_page(before, page))
                        .then(|| p.tree.get(&path).copied())
                });
                match same {
                    Some(Some(leaf)) => {
                        slot.insert(Source::Same(leaf));
                    }
                    // Listed, but no file was pushed for it: none is made while it is as it was.
                    Some(None) => {}
                    None => {
                        let old = parents.iter().enumerate().find_map(|(i, p)| {
                            (p.placement.pages.get(&page.id) == Some(&path))
                                .then(|| p.tree.get(&path).map(|l| (i, l.oid)))
                                .flatten()
                        });
                        slot.insert(Source::Page {
                            id: page.id.clone(),
                            old,
                        });
                    }
                }
            }
        }
        stack.extend(page.pages.iter().rev().map(|c| (c, here.clone())));
    }

    // Files: where a parent had them; new ones in the assets folder.
    let blobs: Vec<HashMap<&str, &str>> = parents
        .iter()
        .map(|p| {
            p.revision
                .files
                .iter()
                .map(|f| (f.id.as_str(), f.blob.as_str()))
                .collect()
        })
        .collect();
    for f in &after.files {
        let kept = parents
            .iter()
            .enumerate()
            .find_map(|(i, p)| Some((i, p.placement.files.get(&f.id)?.clone())));
        let path = match &kept {
            Some((_, path)) => path.clone(),
            None => {
                let name = unique(segment(&f.name, &f.id), &mut taken, ASSETS);
                format!("{ASSETS}/{name}")
            }
        };
        placement.files.insert(f.id.clone(), path.clone());
        let same = kept.and_then(|(i, _)| {
            let before = blobs[i].get(f.id.as_str())?;
            (*before == f.blob)
                .then(|| parents[i].tree.get(&path).copied())
                .flatten()
        });
        paths.insert(
            path,
            match same {
                Some(leaf) => Source::Same(leaf),
                None => Source::Blob {
                    sha: f.blob.clone(),
                },
            },
        );
    }

    // Reusable contents, as pages are.
    for r in &after.reusable_contents {
        let kept = parents
            .iter()
            .enumerate()
            .find_map(|(i, p)| Some((i, p.placement.includes.get(&r.id)?.clone())));
        let path = match &kept {
            Some((_, path)) => path.clone(),
            None => {
                let base = slugify(&r.title);
                let base = if base.is_empty() { r.id.clone() } else { base };
                let name = unique(format!("{base}.md"), &mut taken, INCLUDES);
                format!("{INCLUDES}/{name}")
            }
        };
        placement.includes.insert(r.id.clone(), path.clone());
        let same = parents.iter().find_map(|p| {
            let before = p.revision.reusable_contents.iter().find(|b| b.id == r.id)?;
            (p.placement.includes.get(&r.id) == Some(&path) && before == r)
                .then(|| p.tree.get(&path).copied())
                .flatten()
        });
        let old = kept.and_then(|(i, _)| parents[i].tree.get(&path).map(|l| (i, l.oid)));
        paths.insert(
            path,
            match same {
                Some(leaf) => Source::Same(leaf),
                None => Source::Include {
                    id: r.id.clone(),
                    old,
                },
            },
        );
    }

    // The table of contents and the variables, from the first parent's.
    let first = parents.first();
    let first_paths = first.map(|p| p.placement.paths());
    let first_leaf = |path: &str| first.and_then(|p| p.tree.get(path).copied());
    let before_summary = first.map(|p| summary(p.revision, first_paths.as_ref().expect("set")));
    let after_summary = summary(after, &placement.paths());
    match first_leaf("SUMMARY.md") {
        Some(leaf) if before_summary.as_deref() == Some(after_summary.as_str()) => {
            paths.insert("SUMMARY.md".into(), Source::Same(leaf));
        }
        // A tree read from its folders has no table of contents until its structure changes.
        None if before_summary.as_deref() == Some(after_summary.as_str()) => {}
        leaf => {
            paths.insert(
                "SUMMARY.md".into(),
                Source::Summary {
                    old: leaf.map(|l| l.oid),
                },
            );
        }
    }
    let vars = ".gitbook/vars.yaml";
    let same_vars = first.is_some_and(|p| p.revision.variables == after.variables);
    match first_leaf(vars) {
        Some(leaf) if same_vars => {
            paths.insert(vars.into(), Source::Same(leaf));
        }
        None if same_vars || after.variables.is_empty() => {}
        leaf => {
            if !after.variables.is_empty() {
                paths.insert(
                    vars.into(),
                    Source::Vars {
                        old: leaf.map(|l| l.oid),
                    },
                );
            }
        }
    }
    Plan {
        paths: paths.into_iter().collect(),
        placement,
    }
}

/// The path of a page no parent placed: beside its parent page's file (in the folder a
/// `README.md` opens, or the folder named as a file without its `.md`), named by its slug.
fn new_page_path(page: &Page, parent: Option<&str>, taken: &mut HashSet<String>) -> String {
    let folder = match parent {
        None => String::new(),
        Some("README.md") => String::new(),
        Some(p) => match p.strip_suffix("/README.md") {
            Some(dir) => dir.to_string(),
            None => p.strip_suffix(".md").unwrap_or(p).to_string(),
        },
    };
    let name = segment(&page.slug, &page.id);
    let at = |n: &str| {
        let file = if page.pages.is_empty() {
            format!("{n}.md")
        } else {
            format!("{n}/README.md")
        };
        if folder.is_empty() {
            file
        } else {
            format!("{folder}/{file}")
        }
    };
    let mut path = at(&name);
    let mut n = 1;
    while !taken.insert(path.to_ascii_lowercase()) {
        path = at(&format!("{name}-{n}"));
        n += 1;
    }
    path
}

/// `name`, or `name (1)`, `name (2)`… before its extension, the first not taken in
/// `folder`.
fn unique(name: String, taken: &mut HashSet<String>, folder: &str) -> String {
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
        _ => (name.clone(), String::new()),
    };
    let mut candidate = name;
    let mut n = 1;
    while !taken.insert(format!("{folder}/{candidate}").to_ascii_lowercase()) {
        candidate = format!("{stem} ({n}){ext}");
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::Limits;
    use crate::gitsync::objects::{id_of, Kind};

    /// A pushed tree read as a revision: the revision, where it is, the tree, the bytes.
    fn pushed(files: &[(&str, &str)]) -> (Revision, Placement, Tree, HashMap<Oid, Vec<u8>>) {
        let given: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
            .collect();
        let mut n = 0;
        let mut ids = || {
            n += 1;
            format!("id{n}")
        };
        let read =
            super::super::read(given, &Revision::default(), &Limits::default(), &mut ids).unwrap();
        let mut tree = Tree::new();
        let mut bytes = HashMap::new();
        for (p, t) in files {
            let oid = id_of(Kind::Blob, t.as_bytes());
            tree.insert(
                p.to_string(),
                Leaf {
                    oid,
                    executable: p.ends_with(".sh"),
                },
            );
            bytes.insert(oid, t.as_bytes().to_vec());
        }
        (read.revision, read.placement, tree, bytes)
    }

    const SUMMARY: &str = "# Contents\n\n* [Welcome](README.md)\n* [Getting started](getting-started/README.md)\n  * [Install](getting-started/install.md)\n";
    const INSTALL: &str = "---\ndescription: >-\n  How to install,\n  folded.\nunknown: kept\n---\n\n# Install\n\nA paragraph\nwrapped by hand.\n\nRun it.\n";

    fn files() -> Vec<(&'static str, &'static str)> {
        vec![
            ("SUMMARY.md", SUMMARY),
            ("README.md", "# Welcome\n\nHello.\n"),
            (
                "getting-started/README.md",
                "# Getting started\n\nStart here.\n",
            ),
            ("getting-started/install.md", INSTALL),
            ("LICENSE", "Some license.\n"),
            ("scripts/build.sh", "#!/bin/sh\n"),
            ("unlisted.md", "# Not in the summary\n"),
        ]
    }

    fn laid(
        parent: (&Revision, &Placement, &Tree),
        after: &Revision,
        bytes: &HashMap<Oid, Vec<u8>>,
    ) -> (BTreeMap<String, Made>, Placement) {
        let parents = [Parent {
            revision: parent.0,
            placement: parent.1,
            tree: parent.2,
        }];
        let plan = plan(&parents, after);
        let old: HashMap<Oid, Vec<u8>> = plan
            .needs()
            .into_iter()
            .map(|o| (o, bytes[&o].clone()))
            .collect();
        let placement = plan.placement().clone();
        (
            plan.lay(&parents, after, &old).into_iter().collect(),
            placement,
        )
    }

    #[test]
    fn nothing_changed_is_the_pushed_tree() {
        let (rev, placement, tree, bytes) = pushed(&files());
        let (made, again) = laid((&rev, &placement, &tree), &rev, &bytes);
        assert_eq!(again, placement);
        let same: Tree = made
            .into_iter()
            .map(|(p, m)| match m {
                Made::Same(leaf) => (p, leaf),
                other => panic!("{p} was made again: {other:?}"),
            })
            .collect();
        assert_eq!(same, tree);
    }

    #[test]
    fn an_edit_rewrites_only_its_lines_of_its_file() {
        let (rev, placement, tree, bytes) = pushed(&files());
        let id = placement
            .pages
            .iter()
            .find(|(_, p)| *p == "getting-started/install.md")
            .map(|(id, _)| id.clone())
            .unwrap();
        let mut after = rev.clone();
        if let PageKind::Document(d) = &mut after.page_mut(&id).unwrap().kind {
            d.markdown = d.markdown.replace("Run it.", "Run it twice.");
        }
        let (made, _) = laid((&rev, &placement, &tree), &after, &bytes);
        for (path, m) in &made {
            match (path.as_str(), m) {
                ("getting-started/install.md", Made::Text(t)) => {
                    assert_eq!(t, &INSTALL.replace("Run it.", "Run it twice."))
                }
                (_, Made::Same(leaf)) => assert_eq!(tree[path], *leaf, "{path}"),
                (_, other) => panic!("{path} was made again: {other:?}"),
            }
        }
        assert_eq!(made.len(), tree.len());
        assert!(tree["scripts/build.sh"].executable);
    }

    #[test]
    fn a_new_page_goes_beside_its_parent_and_a_deleted_one_goes() {
        let (rev, placement, tree, bytes) = pushed(&files());
        let start = placement
            .pages
            .iter()
            .find(|(_, p)| *p == "getting-started/README.md")
            .map(|(id, _)| id.clone())
            .unwrap();
        let install = placement
            .pages
            .iter()
            .find(|(_, p)| *p == "getting-started/install.md")
            .map(|(id, _)| id.clone())
            .unwrap();
        let mut after = rev.clone();
        let parent = after.page_mut(&start).unwrap();
        parent.pages.retain(|p| p.id != install);
        parent
            .pages
            .push(Page::document("new", "Upgrade", "upgrade", "Upgrade it.\n"));
        let (made, now) = laid((&rev, &placement, &tree), &after, &bytes);
        assert_eq!(now.pages["new"], "getting-started/upgrade.md");
        assert!(!made.contains_key("getting-started/install.md"));
        assert!(
            matches!(&made["getting-started/upgrade.md"], Made::Text(t) if t.contains("Upgrade it."))
        );
        let Made::Text(summary) = &made["SUMMARY.md"] else {
            panic!("the table of contents is unchanged");
        };
        assert_eq!(
            summary,
            &SUMMARY.replace(
                "[Install](getting-started/install.md)",
                "[Upgrade](getting-started/upgrade.md)"
            )
        );
        for kept in ["LICENSE", "unlisted.md", "README.md", "scripts/build.sh"] {
            assert_eq!(made[kept], Made::Same(tree[kept]), "{kept}");
        }
    }
}
