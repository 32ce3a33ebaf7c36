//! Three-way merge of revisions, matching pages by id.
//!
//! The tree is merged as a set of pages with a parent and a position each: insertions and
//! deletions, moves (parent changes), renames and property changes are merged per page and
//! per field, sibling order is merged per parent, and document bodies are merged line by line
//! (diff3). Only changes that truly overlap conflict: the same field changed differently on
//! both sides, overlapping line regions changed differently, a page deleted on one side and
//! edited on the other, a page moved to different places, or a cycle or orphan created by
//! combining moves and deletions.
//!
//! Pages are matched by giving each id a small integer key (ours' pages by their position, so
//! that pages in the same place on all sides match without a lookup), and most of the work
//! is skipped for what did not change: a page unchanged on one side is taken whole from the
//! other (documents compare by identity or by their remembered body hashes), and siblings
//! that no side reordered keep their order without a sequence merge. Revisions repeating a
//! page id (which break the model's invariants) go through the reference merge on ids.
//!
//! Line diffs use the `similar` crate rather than `diffy`: `diffy::merge` only returns text
//! with conflict markers, whereas this engine needs the structured hunks (`DiffOp` ranges)
//! to decide itself what overlaps, to report conflicting line ranges, and to reuse the same
//! longest-common-subsequence machinery for sibling order and for the semantic diff.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;

use serde::Serialize;
use similar::{Algorithm, DiffTag};

use crate::model::{
    same_opt, same_text, unique_slug, DocumentPage, File, LinkPage, Page, PageKind,
    ReusableContent, Revision, Variables,
};

/// Which side of a merge made a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The target (main) revision.
    Ours,
    /// The incoming (change request) revision.
    Theirs,
}

/// What a conflict is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConflictSubject {
    /// A page, with its title on our side (or theirs when we deleted it).
    Page {
        /// Page id.
        id: String,
        /// Page title.
        title: String,
    },
    /// A file.
    File {
        /// File id.
        id: String,
        /// File name.
        name: String,
    },
    /// A space variable.
    Variable {
        /// Variable name.
        name: String,
    },
    /// A reusable content.
    ReusableContent {
        /// Reusable content id.
        id: String,
        /// Its title.
        title: String,
    },
}

/// A region of a text that both sides changed differently; line ranges are zero-based and
/// end-exclusive, in the base, our and their versions of the text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextConflict {
    /// Lines of the base text.
    pub base: Range<usize>,
    /// Lines of our text.
    pub ours: Range<usize>,
    /// Lines of their text.
    pub theirs: Range<usize>,
}

/// How the two sides conflict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConflictKind {
    /// One side deleted what the other changed.
    DeletedAndEdited {
        /// The side that deleted it.
        deleted_by: Side,
    },
    /// Both sides set this field to different values.
    Property {
        /// Official name of the field (`title`, `slug`, `layout`, `variables.<name>`, …).
        field: String,
    },
    /// Both sides changed overlapping regions of the body differently.
    Body {
        /// The overlapping regions.
        regions: Vec<TextConflict>,
    },
    /// Both sides added an item with this id, differently.
    AddedTwice,
    /// Both sides moved the page to different parents.
    Moved,
    /// Both sides moved the page to different positions among the same siblings.
    Reordered,
    /// Combining the moves of both sides would make the page its own ancestor.
    Cycle,
    /// The page would end up under a parent that the other side deleted.
    ParentDeleted {
        /// The deleted parent's id.
        parent: String,
    },
    /// The merged tree breaks an invariant (for example a page under a link page).
    Invalid {
        /// What is wrong.
        reason: String,
    },
}

/// One reason why a merge cannot be completed automatically.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// What conflicts.
    pub subject: ConflictSubject,
    /// How.
    #[serde(flatten)]
    pub kind: ConflictKind,
}

/// Merges `theirs` into `ours`, both descending from `base`.
///
/// Returns the merged revision, or every conflict found (never a partial merge). The result
/// is deterministic, and merging with a side equal to `base` returns the other side.
pub fn merge(
    base: &Revision,
    ours: &Revision,
    theirs: &Revision,
) -> Result<Revision, Vec<Conflict>> {
    match Keyed::new(base, ours, theirs) {
        Some(keyed) => keyed.merge(base, ours, theirs),
        // A revision repeating a page id breaks the invariants; the reference merge defines
        // what happens then.
        None => merge_by_ids(base, ours, theirs),
    }
}

const BASE: usize = 0;
const OURS: usize = 1;
const THEIRS: usize = 2;

/// One side's pages in navigation order, with parents and children as positions in it.
struct Tree<'a> {
    pages: Vec<&'a Page>,
    parent: Vec<Option<u32>>,
    /// Positions of the children of each page, as a range of `kids`.
    kid_range: Vec<(u32, u32)>,
    kids: Vec<u32>,
    /// Positions of the root pages, as a range of `kids`.
    roots: (u32, u32),
    /// The key of each page (see [`Keyed`]).
    key: Vec<u32>,
}

impl<'a> Tree<'a> {
    fn new(rev: &'a Revision) -> Tree<'a> {
        fn walk<'a>(pages: &'a [Page], parent: Option<u32>, t: &mut Tree<'a>) -> (u32, u32) {
            let start = t.kids.len();
            t.kids.resize(start + pages.len(), 0);
            for (i, p) in pages.iter().enumerate() {
                let n = t.pages.len();
                t.pages.push(p);
                t.parent.push(parent);
                t.kid_range.push((0, 0));
                t.kids[start + i] = n as u32;
                let range = walk(&p.pages, Some(n as u32), t);
                t.kid_range[n] = range;
            }
            (start as u32, (start + pages.len()) as u32)
        }
        let mut t = Tree {
            pages: Vec::new(),
            parent: Vec::new(),
            kid_range: Vec::new(),
            kids: Vec::new(),
            roots: (0, 0),
            key: Vec::new(),
        };
        t.roots = walk(&rev.pages, None, &mut t);
        t.key = vec![0; t.pages.len()];
        t
    }

    /// The key of the parent of the page at `n`.
    fn parent_key(&self, n: u32) -> Option<u32> {
        self.parent[n as usize].map(|p| self.key[p as usize])
    }

    /// Positions of the children of the page at `n`, or of the roots.
    fn children(&self, n: Option<u32>) -> &[u32] {
        let (a, b) = match n {
            None => self.roots,
            Some(n) => self.kid_range[n as usize],
        };
        &self.kids[a as usize..b as usize]
    }
}

/// The pages of the three sides matched by id: each id gets a key (a small integer), and
/// each key the position of its page on each side. Keys of our pages are their positions
/// in our tree, so that pages at the same place on every side (most of them) are matched
/// without looking their ids up.
struct Keyed<'a> {
    trees: [Tree<'a>; 3],
    ids: Vec<&'a str>,
    at: Vec<[Option<u32>; 3]>,
    by_id: HashMap<&'a str, u32>,
}

impl<'a> Keyed<'a> {
    /// `None` when a side repeats a page id.
    fn new(base: &'a Revision, ours: &'a Revision, theirs: &'a Revision) -> Option<Keyed<'a>> {
        let mut trees = [Tree::new(base), Tree::new(ours), Tree::new(theirs)];
        let mut ids = Vec::with_capacity(trees[OURS].pages.len());
        let mut at = Vec::with_capacity(trees[OURS].pages.len());
        let mut by_id = HashMap::with_capacity(trees[OURS].pages.len());
        for (n, p) in trees[OURS].pages.iter().enumerate() {
            if by_id.insert(p.id.as_str(), n as u32).is_some() {
                return None;
            }
            ids.push(p.id.as_str());
            at.push([None, Some(n as u32), None]);
            trees[OURS].key[n] = n as u32;
        }
        for side in [BASE, THEIRS] {
            let [b, o, t] = &mut trees;
            let tree = if side == BASE { b } else { t };
            for (n, p) in tree.pages.iter().enumerate() {
                let id = p.id.as_str();
                let key = match o.pages.get(n) {
                    Some(op) if same_text(&op.id, id) => n as u32,
                    _ => *by_id.entry(id).or_insert_with(|| {
                        ids.push(id);
                        at.push([None; 3]);
                        (ids.len() - 1) as u32
                    }),
                };
                let slot = &mut at[key as usize][side];
                if slot.is_some() {
                    return None;
                }
                *slot = Some(n as u32);
                tree.key[n] = key;
            }
        }
        Some(Keyed {
            trees,
            ids,
            at,
            by_id,
        })
    }

    /// The page with this key on a side, and the key of its parent there.
    fn get(&self, key: u32, side: usize) -> Option<(&'a Page, Option<u32>)> {
        let n = self.at[key as usize][side]?;
        let tree = &self.trees[side];
        Some((tree.pages[n as usize], tree.parent_key(n)))
    }

    fn has(&self, key: u32, side: usize) -> bool {
        self.at[key as usize][side].is_some()
    }

    /// Keys of the children of `parent` (a key; `None` for the root) on a side.
    fn children(&self, parent: Option<u32>, side: usize) -> Vec<u32> {
        let tree = &self.trees[side];
        let n = match parent {
            None => None,
            Some(p) => match self.at[p as usize][side] {
                Some(n) => Some(n),
                None => return Vec::new(),
            },
        };
        tree.children(n)
            .iter()
            .map(|&c| tree.key[c as usize])
            .collect()
    }

    /// The same merge as [`merge_by_ids`], on keys instead of ids.
    fn merge(
        &self,
        base: &Revision,
        ours: &Revision,
        theirs: &Revision,
    ) -> Result<Revision, Vec<Conflict>> {
        let mut conflicts = Vec::new();
        let id_of = |k: u32| self.ids[k as usize];
        let subject = |k: u32, p: &Page| ConflictSubject::Page {
            id: id_of(k).to_string(),
            title: p.title.clone(),
        };

        // Keys in a deterministic order: ours' navigation order, then theirs' additions,
        // then the pages only the base has.
        let mut order: Vec<u32> = (0..self.trees[OURS].pages.len() as u32).collect();
        order.extend(
            self.trees[THEIRS]
                .key
                .iter()
                .copied()
                .filter(|&k| !self.has(k, OURS)),
        );
        order.extend(
            self.trees[BASE]
                .key
                .iter()
                .copied()
                .filter(|&k| !self.has(k, OURS) && !self.has(k, THEIRS)),
        );

        // Per page: merged properties (children detached) and parent.
        let mut merged: Vec<Option<(Page, Option<u32>)>> = Vec::new();
        merged.resize_with(self.ids.len(), || None);
        for &k in &order {
            let (bp, op, tp) = (self.get(k, BASE), self.get(k, OURS), self.get(k, THEIRS));
            let entry = &mut merged[k as usize];
            match (bp, op, tp) {
                (Some(bp), Some(op), Some(tp)) => {
                    let mut local = Vec::new();
                    let page = merge_page(bp.0, op.0, tp.0, &mut local);
                    conflicts.extend(local.into_iter().map(|kind| Conflict {
                        subject: subject(k, op.0),
                        kind,
                    }));
                    let parent = match merge_value(&bp.1, &op.1, &tp.1) {
                        Some(p) => *p,
                        None => {
                            conflicts.push(Conflict {
                                subject: subject(k, op.0),
                                kind: ConflictKind::Moved,
                            });
                            op.1
                        }
                    };
                    *entry = Some((page, parent));
                }
                (Some(bp), None, Some(tp)) => {
                    if !same_fields(bp.0, tp.0) || bp.1 != tp.1 {
                        conflicts.push(Conflict {
                            subject: subject(k, tp.0),
                            kind: ConflictKind::DeletedAndEdited {
                                deleted_by: Side::Ours,
                            },
                        });
                    }
                }
                (Some(bp), Some(op), None) => {
                    if !same_fields(bp.0, op.0) || bp.1 != op.1 {
                        conflicts.push(Conflict {
                            subject: subject(k, op.0),
                            kind: ConflictKind::DeletedAndEdited {
                                deleted_by: Side::Theirs,
                            },
                        });
                    }
                }
                (Some(_), None, None) | (None, None, None) => {}
                (None, Some(op), None) => *entry = Some((op.0.without_children(), op.1)),
                (None, None, Some(tp)) => *entry = Some((tp.0.without_children(), tp.1)),
                (None, Some(op), Some(tp)) => {
                    if same_fields(op.0, tp.0) && op.1 == tp.1 {
                        *entry = Some((op.0.without_children(), op.1));
                    } else {
                        conflicts.push(Conflict {
                            subject: subject(k, op.0),
                            kind: ConflictKind::AddedTwice,
                        });
                    }
                }
            }
        }

        // Orphans: a parent deleted on one side while the other side put a page under it.
        for &k in &order {
            if let Some((page, Some(parent))) = &merged[k as usize] {
                // When both sides lack the parent or both have it, a missing parent was
                // dropped for a conflict already reported.
                if merged[*parent as usize].is_none()
                    && self.has(*parent, OURS) != self.has(*parent, THEIRS)
                {
                    conflicts.push(Conflict {
                        subject: subject(k, page),
                        kind: ConflictKind::ParentDeleted {
                            parent: id_of(*parent).to_string(),
                        },
                    });
                }
            }
        }

        // Cycles: moves from both sides can make a page its own ancestor.
        let mut seen = HashSet::new();
        for &k in &order {
            let Some((page, _)) = &merged[k as usize] else {
                continue;
            };
            if key_in_cycle(&merged, k, &mut seen) {
                conflicts.push(Conflict {
                    subject: subject(k, page),
                    kind: ConflictKind::Cycle,
                });
            }
        }

        // Sibling order, per parent (the root is the last slot).
        let root = self.ids.len();
        let slot = |parent: Option<u32>| parent.map_or(root, |p| p as usize);
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); root + 1];
        for &k in &order {
            if let Some((_, parent)) = &merged[k as usize] {
                members[slot(*parent)].push(k);
            }
        }
        let mut orders: Vec<Option<Vec<u32>>> = vec![None; root + 1];
        let mut changed: Vec<Option<u32>> = Vec::new();
        for parent in std::iter::once(None).chain(order.iter().map(|&k| Some(k))) {
            let set = &members[slot(parent)];
            if set.is_empty() {
                continue;
            }
            let (bc, oc, tc) = (
                self.children(parent, BASE),
                self.children(parent, OURS),
                self.children(parent, THEIRS),
            );
            let all_here = || {
                oc.iter()
                    .all(|&k| matches!(&merged[k as usize], Some((_, p)) if *p == parent))
            };
            if bc == oc && oc == tc && set.len() == oc.len() && all_here() {
                // Nobody changed these siblings: the general merge keeps them as they are.
                orders[slot(parent)] = Some(oc);
            } else {
                changed.push(parent);
            }
        }
        // The general merge, for the parents whose children changed, in the order of their
        // ids (the order conflicts are reported in).
        changed.sort_by_key(|p| p.map(id_of));
        for parent in changed {
            let ids = |side: usize| -> Vec<&str> {
                self.children(parent, side).into_iter().map(id_of).collect()
            };
            let set: HashSet<&str> = members[slot(parent)].iter().map(|&k| id_of(k)).collect();
            let (order, reordered) = merge_order(&ids(BASE), &ids(OURS), &ids(THEIRS), &set);
            for id in reordered {
                let k = self.by_id[id];
                let (page, _) = merged[k as usize].as_ref().expect("members are merged");
                conflicts.push(Conflict {
                    subject: subject(k, page),
                    kind: ConflictKind::Reordered,
                });
            }
            orders[slot(parent)] = Some(order.into_iter().map(|id| self.by_id[id]).collect());
        }

        let (files, reusable_contents, variables) = merge_rest(base, ours, theirs, &mut conflicts);
        if !conflicts.is_empty() {
            return Err(conflicts);
        }

        // Slugs must stay unique among siblings: a page keeps its slug if it is where ours
        // has it with the slug ours gives it; others that collide get a suffix.
        for order in orders.iter().flatten() {
            let intact = |k: u32| {
                let (page, parent) = merged[k as usize]
                    .as_ref()
                    .expect("ordered pages are merged");
                self.get(k, OURS)
                    .is_some_and(|(op, opar)| op.slug == page.slug && opar == *parent)
            };
            if order.iter().all(|&k| intact(k)) {
                // Every page is where ours has it, with the slug ours gives it: no renames.
                continue;
            }
            let page = |k: u32| &merged[k as usize].as_ref().expect("merged").0;
            let mut taken: HashSet<String> = order
                .iter()
                .filter(|&&k| intact(k) && !page(k).slug.is_empty())
                .map(|&k| page(k).slug.clone())
                .collect();
            let mut renames = Vec::new();
            for &k in order {
                if intact(k) || matches!(page(k).kind, PageKind::Link(_)) {
                    continue;
                }
                let fresh = unique_slug(&page(k).slug, taken.iter().map(String::as_str));
                taken.insert(fresh.clone());
                renames.push((k, fresh));
            }
            for (k, slug) in renames {
                if let Some(entry) = &mut merged[k as usize] {
                    entry.0.slug = slug;
                }
            }
        }

        fn build(
            at: usize,
            orders: &[Option<Vec<u32>>],
            merged: &mut [Option<(Page, Option<u32>)>],
        ) -> Vec<Page> {
            let Some(order) = &orders[at] else {
                return Vec::new();
            };
            order
                .iter()
                .map(|&k| {
                    // Each page is in exactly one order, once: take it rather than copy it.
                    let (mut page, _) =
                        merged[k as usize].take().expect("ordered pages are merged");
                    page.pages = build(k as usize, orders, merged);
                    page
                })
                .collect()
        }
        let pages = build(root, &orders, &mut merged);
        // Each key is built at most once, so ids are unique: no need to check them again.
        let rev = Revision {
            pages,
            files,
            reusable_contents,
            variables,
            // Tag definitions come with pushes only: the side that changed them.
            tags: if theirs.tags != base.tags {
                theirs.tags.clone()
            } else {
                ours.tags.clone()
            },
        };
        finish(rev, true)
    }
}

/// Whether following the merged parents up from `key` leads back to it. `seen` is scratch
/// space, so that the walks of all pages share one allocation.
fn key_in_cycle(merged: &[Option<(Page, Option<u32>)>], key: u32, seen: &mut HashSet<u32>) -> bool {
    let parent = |k: u32| match &merged[k as usize] {
        Some((_, p)) => *p,
        None => None,
    };
    // Trees are shallow: walk without remembering the way while it is short, and fall back
    // to remembering it (to stop on a cycle that does not contain `key`) when it is not.
    let mut at = key;
    for _ in 0..64 {
        match parent(at) {
            Some(p) if p == key => return true,
            Some(p) => at = p,
            None => return false,
        }
    }
    seen.clear();
    let mut at = key;
    while let Some(p) = parent(at) {
        if !seen.insert(at) {
            return false;
        }
        if p == key {
            return true;
        }
        at = p;
    }
    false
}

/// Merges files, reusable contents and variables.
fn merge_rest(
    base: &Revision,
    ours: &Revision,
    theirs: &Revision,
    conflicts: &mut Vec<Conflict>,
) -> (Vec<File>, Vec<ReusableContent>, Variables) {
    let files = merge_files(&base.files, &ours.files, &theirs.files, conflicts);
    let reusable_contents = merge_reusable(
        &base.reusable_contents,
        &ours.reusable_contents,
        &theirs.reusable_contents,
        conflicts,
    );
    let mut var_conflicts = Vec::new();
    let variables = merge_variables(
        &base.variables,
        &ours.variables,
        &theirs.variables,
        &mut var_conflicts,
    );
    conflicts.extend(var_conflicts.into_iter().map(|name| Conflict {
        subject: ConflictSubject::Variable { name },
        kind: ConflictKind::Property {
            field: "value".into(),
        },
    }));
    (files, reusable_contents, variables)
}

/// The merged revision, or the invariant it breaks as a conflict. `unique_ids` when the
/// merge could not repeat an id.
fn finish(rev: Revision, unique_ids: bool) -> Result<Revision, Vec<Conflict>> {
    if let Err(e) = rev.check(!unique_ids) {
        let (id, title) = match &e {
            crate::model::ModelError::DuplicatePageId(id)
            | crate::model::ModelError::EmptyTitle(id)
            | crate::model::ModelError::InvalidNesting(id)
            | crate::model::ModelError::TooDeep(id)
            | crate::model::ModelError::DuplicateSlug { page: id, .. } => (
                id.clone(),
                rev.page(id).map(|p| p.title.clone()).unwrap_or_default(),
            ),
            crate::model::ModelError::DuplicateFileId(id) => (id.clone(), String::new()),
        };
        return Err(vec![Conflict {
            subject: ConflictSubject::Page { id, title },
            kind: ConflictKind::Invalid {
                reason: e.to_string(),
            },
        }]);
    }
    Ok(rev)
}

/// The reference merge, matching pages through maps of ids: [`merge`] computes the same on
/// keys, and defers to this when a revision repeats a page id.
fn merge_by_ids(
    base: &Revision,
    ours: &Revision,
    theirs: &Revision,
) -> Result<Revision, Vec<Conflict>> {
    let b = Flat::new(base);
    let o = Flat::new(ours);
    let t = Flat::new(theirs);
    let mut conflicts = Vec::new();

    // Union of ids in a deterministic order: ours' navigation order, then theirs' additions.
    let mut ids: Vec<&str> = o.order.clone();
    let in_ours: HashSet<&str> = o.order.iter().copied().collect();
    ids.extend(t.order.iter().copied().filter(|id| !in_ours.contains(id)));
    ids.extend(
        b.order
            .iter()
            .copied()
            .filter(|id| !in_ours.contains(id) && !t.pages.contains_key(id)),
    );

    // Per page: merged properties (children detached) and parent.
    let mut merged: HashMap<&str, (Page, Option<&str>)> = HashMap::new();
    for &id in &ids {
        let (bp, op, tp) = (b.pages.get(id), o.pages.get(id), t.pages.get(id));
        let subject = |p: &Page| ConflictSubject::Page {
            id: id.to_string(),
            title: p.title.clone(),
        };
        match (bp, op, tp) {
            (Some(bp), Some(op), Some(tp)) => {
                let mut local = Vec::new();
                let page = merge_page(bp.0, op.0, tp.0, &mut local);
                conflicts.extend(local.into_iter().map(|kind| Conflict {
                    subject: subject(op.0),
                    kind,
                }));
                let parent = match merge_value(&bp.1, &op.1, &tp.1) {
                    Some(p) => *p,
                    None => {
                        conflicts.push(Conflict {
                            subject: subject(op.0),
                            kind: ConflictKind::Moved,
                        });
                        op.1
                    }
                };
                merged.insert(id, (page, parent));
            }
            (Some(bp), None, Some(tp)) => {
                if !same_props(bp.0, tp.0) || bp.1 != tp.1 {
                    conflicts.push(Conflict {
                        subject: subject(tp.0),
                        kind: ConflictKind::DeletedAndEdited {
                            deleted_by: Side::Ours,
                        },
                    });
                }
            }
            (Some(bp), Some(op), None) => {
                if !same_props(bp.0, op.0) || bp.1 != op.1 {
                    conflicts.push(Conflict {
                        subject: subject(op.0),
                        kind: ConflictKind::DeletedAndEdited {
                            deleted_by: Side::Theirs,
                        },
                    });
                }
            }
            (Some(_), None, None) | (None, None, None) => {}
            (None, Some(op), None) => {
                merged.insert(id, (op.0.without_children(), op.1));
            }
            (None, None, Some(tp)) => {
                merged.insert(id, (tp.0.without_children(), tp.1));
            }
            (None, Some(op), Some(tp)) => {
                if same_props(op.0, tp.0) && op.1 == tp.1 {
                    merged.insert(id, (op.0.without_children(), op.1));
                } else {
                    conflicts.push(Conflict {
                        subject: subject(op.0),
                        kind: ConflictKind::AddedTwice,
                    });
                }
            }
        }
    }

    // Orphans: a parent deleted on one side while the other side put a page under it.
    for &id in &ids {
        if let Some((page, Some(parent))) = merged.get(id) {
            if !merged.contains_key(parent)
                && o.pages.contains_key(parent) == t.pages.contains_key(parent)
            {
                // Both sides lack it or both have it; a missing parent here means it was
                // dropped for a conflict already reported.
                continue;
            }
            if !merged.contains_key(parent) {
                conflicts.push(Conflict {
                    subject: ConflictSubject::Page {
                        id: id.to_string(),
                        title: page.title.clone(),
                    },
                    kind: ConflictKind::ParentDeleted {
                        parent: parent.to_string(),
                    },
                });
            }
        }
    }

    // Cycles: moves from both sides can make a page its own ancestor.
    let mut seen = HashSet::new();
    for &id in &ids {
        let Some((page, _)) = merged.get(id) else {
            continue;
        };
        if in_cycle(&merged, id, &mut seen) {
            conflicts.push(Conflict {
                subject: ConflictSubject::Page {
                    id: id.to_string(),
                    title: page.title.clone(),
                },
                kind: ConflictKind::Cycle,
            });
        }
    }

    // Sibling order, per parent.
    let mut members: BTreeMap<Option<&str>, HashSet<&str>> = BTreeMap::new();
    for (&id, (_, parent)) in &merged {
        members.entry(*parent).or_default().insert(id);
    }
    let mut orders: HashMap<Option<&str>, Vec<&str>> = HashMap::new();
    for (parent, set) in &members {
        let (bc, oc, tc) = (
            b.children_of(*parent),
            o.children_of(*parent),
            t.children_of(*parent),
        );
        let (order, reordered) = merge_order(bc, oc, tc, set);
        for id in reordered {
            conflicts.push(Conflict {
                subject: ConflictSubject::Page {
                    id: id.to_string(),
                    title: merged[id].0.title.clone(),
                },
                kind: ConflictKind::Reordered,
            });
        }
        orders.insert(*parent, order);
    }

    let (files, reusable_contents, variables) = merge_rest(base, ours, theirs, &mut conflicts);
    if !conflicts.is_empty() {
        return Err(conflicts);
    }

    // Slugs must stay unique among siblings: a page keeps its slug if it is where ours has
    // it with the slug ours gives it; others that collide get a suffix.
    for (parent, order) in &orders {
        let intact = |id: &str| {
            let (page, p) = &merged[id];
            o.pages
                .get(id)
                .is_some_and(|(op, opar)| op.slug == page.slug && opar == p)
        };
        if order.iter().all(|id| intact(id)) {
            // Every page is where ours has it, with the slug ours gives it: no renames.
            continue;
        }
        let mut taken: HashSet<String> = order
            .iter()
            .filter(|id| intact(id) && !merged[**id].0.slug.is_empty())
            .map(|id| merged[*id].0.slug.clone())
            .collect();
        let _ = parent;
        let mut renames = Vec::new();
        for id in order {
            if intact(id) || matches!(merged[id].0.kind, PageKind::Link(_)) {
                continue;
            }
            let fresh = unique_slug(&merged[id].0.slug, taken.iter().map(String::as_str));
            taken.insert(fresh.clone());
            renames.push((*id, fresh));
        }
        for (id, slug) in renames {
            if let Some(entry) = merged.get_mut(id) {
                entry.0.slug = slug;
            }
        }
    }

    fn build<'a>(
        parent: Option<&'a str>,
        orders: &HashMap<Option<&'a str>, Vec<&'a str>>,
        merged: &HashMap<&'a str, (Page, Option<&'a str>)>,
    ) -> Vec<Page> {
        let Some(order) = orders.get(&parent) else {
            return Vec::new();
        };
        order
            .iter()
            .map(|id| {
                let mut page = merged
                    .get(id)
                    .map(|e| e.0.clone())
                    .expect("ordered pages are merged");
                page.pages = build(Some(id), orders, merged);
                page
            })
            .collect()
    }
    let pages = build(None, &orders, &merged);
    let rev = Revision {
        pages,
        files,
        reusable_contents,
        variables,
        // Tag definitions come with pushes only: the side that changed them.
        tags: if theirs.tags != base.tags {
            theirs.tags.clone()
        } else {
            ours.tags.clone()
        },
    };
    finish(rev, false)
}

/// A revision's pages by id with their parent, and each parent's ordered children.
struct Flat<'a> {
    pages: HashMap<&'a str, (&'a Page, Option<&'a str>)>,
    children: HashMap<Option<&'a str>, Vec<&'a str>>,
    order: Vec<&'a str>,
}

impl<'a> Flat<'a> {
    fn new(rev: &'a Revision) -> Flat<'a> {
        let mut flat = Flat {
            pages: HashMap::new(),
            children: HashMap::new(),
            order: Vec::new(),
        };
        fn walk<'a>(pages: &'a [Page], parent: Option<&'a str>, flat: &mut Flat<'a>) {
            flat.children
                .insert(parent, pages.iter().map(|p| p.id.as_str()).collect());
            for p in pages {
                flat.pages.insert(&p.id, (p, parent));
                flat.order.push(&p.id);
                walk(&p.pages, Some(&p.id), flat);
            }
        }
        walk(&rev.pages, None, &mut flat);
        flat
    }

    fn children_of(&self, parent: Option<&'a str>) -> &[&'a str] {
        self.children.get(&parent).map_or(&[], Vec::as_slice)
    }
}

/// Whether following the merged parents up from `id` leads back to `id`. `seen` is scratch
/// space, so that the walks of all pages share one allocation.
fn in_cycle<'a>(
    merged: &HashMap<&'a str, (Page, Option<&'a str>)>,
    id: &'a str,
    seen: &mut HashSet<&'a str>,
) -> bool {
    // Trees are shallow: walk without remembering the way while it is short, and fall back
    // to remembering it (to stop on a cycle that does not contain `id`) when it is not.
    let mut at = id;
    for _ in 0..64 {
        match merged.get(at) {
            Some((_, Some(parent))) if *parent == id => return true,
            Some((_, Some(parent))) => at = parent,
            _ => return false,
        }
    }
    seen.clear();
    let mut at = id;
    while let Some((_, Some(parent))) = merged.get(at) {
        if !seen.insert(at) {
            return false;
        }
        if *parent == id {
            return true;
        }
        at = parent;
    }
    false
}

/// Whether two pages have the same properties and body, children aside.
pub fn same_props(a: &Page, b: &Page) -> bool {
    a.id == b.id && same_fields(a, b)
}

/// [`same_props`] for two pages known to have the same id (matched by it).
fn same_fields(a: &Page, b: &Page) -> bool {
    a.hidden == b.hidden
        && a.no_index == b.no_index
        && a.no_robots_index == b.no_robots_index
        && same_text(&a.title, &b.title)
        && same_text(&a.slug, &b.slug)
        && same_opt(&a.emoji, &b.emoji)
        && same_opt(&a.icon, &b.icon)
        && same_opt(&a.description, &b.description)
        && same_opt(&a.condition, &b.condition)
        && a.tags == b.tags
        && a.primary_tag == b.primary_tag
        && a.kind == b.kind
}

/// Three-way choice of a value: `None` when both sides changed it differently.
fn merge_value<'v, T: PartialEq>(base: &'v T, ours: &'v T, theirs: &'v T) -> Option<&'v T> {
    if ours == theirs || theirs == base {
        Some(ours)
    } else if ours == base {
        Some(theirs)
    } else {
        None
    }
}

fn merge_field<T: PartialEq + Clone>(
    base: &T,
    ours: &T,
    theirs: &T,
    field: &str,
    conflicts: &mut Vec<ConflictKind>,
) -> T {
    match merge_value(base, ours, theirs) {
        Some(v) => v.clone(),
        None => {
            conflicts.push(ConflictKind::Property {
                field: field.into(),
            });
            ours.clone()
        }
    }
}

/// Merges the properties and body of a page present on all three sides (under one id);
/// children detached.
fn merge_page(b: &Page, o: &Page, t: &Page, conflicts: &mut Vec<ConflictKind>) -> Page {
    // Most pages are unchanged on at least one side. Then every field below merges to the
    // value of the other side, so take that page whole (sharing its document) instead of
    // merging field by field and body by body.
    if same_fields(o, t) || same_fields(t, b) {
        return o.without_children();
    }
    if same_fields(o, b) {
        return t.without_children();
    }
    let kind = match (&b.kind, &o.kind, &t.kind) {
        (PageKind::Document(bd), PageKind::Document(od), PageKind::Document(td)) => {
            let markdown = match merge_text(&bd.markdown, &od.markdown, &td.markdown) {
                Ok(text) => text,
                Err(regions) => {
                    conflicts.push(ConflictKind::Body { regions });
                    od.markdown.clone()
                }
            };
            let mut var_conflicts = Vec::new();
            let variables = merge_variables(
                &bd.variables,
                &od.variables,
                &td.variables,
                &mut var_conflicts,
            );
            conflicts.extend(
                var_conflicts
                    .into_iter()
                    .map(|name| ConflictKind::Property {
                        field: format!("variables.{name}"),
                    }),
            );
            PageKind::Document(
                DocumentPage {
                    markdown,
                    layout: merge_field(&bd.layout, &od.layout, &td.layout, "layout", conflicts),
                    cover: merge_field(&bd.cover, &od.cover, &td.cover, "cover", conflicts),
                    variables,
                }
                .into(),
            )
        }
        (PageKind::Link(bl), PageKind::Link(ol), PageKind::Link(tl)) => PageKind::Link(LinkPage {
            target: merge_field(&bl.target, &ol.target, &tl.target, "target", conflicts),
        }),
        (bk, ok, tk) => merge_field(bk, ok, tk, "type", conflicts),
    };
    let mut page = Page {
        id: o.id.clone(),
        title: merge_field(&b.title, &o.title, &t.title, "title", conflicts),
        slug: merge_field(&b.slug, &o.slug, &t.slug, "slug", conflicts),
        emoji: merge_field(&b.emoji, &o.emoji, &t.emoji, "emoji", conflicts),
        icon: merge_field(&b.icon, &o.icon, &t.icon, "icon", conflicts),
        description: merge_field(
            &b.description,
            &o.description,
            &t.description,
            "description",
            conflicts,
        ),
        hidden: merge_field(&b.hidden, &o.hidden, &t.hidden, "hidden", conflicts),
        no_index: merge_field(&b.no_index, &o.no_index, &t.no_index, "noIndex", conflicts),
        no_robots_index: merge_field(
            &b.no_robots_index,
            &o.no_robots_index,
            &t.no_robots_index,
            "noRobotsIndex",
            conflicts,
        ),
        condition: merge_field(
            &b.condition,
            &o.condition,
            &t.condition,
            "condition",
            conflicts,
        ),
        tags: Vec::new(),
        primary_tag: None,
        kind,
        pages: Vec::new(),
    };
    // A page's tags and which of them is primary merge as one value, so that a merge never
    // marks primary a tag the page no longer carries.
    let (tags, primary_tag) = merge_field(
        &(&b.tags, &b.primary_tag),
        &(&o.tags, &o.primary_tag),
        &(&t.tags, &t.primary_tag),
        "tags",
        conflicts,
    );
    page.tags = tags.clone();
    page.primary_tag = primary_tag.clone();
    page
}

/// Merges variables key by key; returns the names changed differently on both sides.
fn merge_variables(
    base: &Variables,
    ours: &Variables,
    theirs: &Variables,
    conflicts: &mut Vec<String>,
) -> Variables {
    let keys: std::collections::BTreeSet<&String> = base
        .keys()
        .chain(ours.keys())
        .chain(theirs.keys())
        .collect();
    let mut out = BTreeMap::new();
    for k in keys {
        let (b, o, t) = (base.get(k), ours.get(k), theirs.get(k));
        match merge_value(&b, &o, &t) {
            Some(Some(v)) => {
                out.insert(k.clone(), (*v).clone());
            }
            Some(None) => {}
            None => conflicts.push(k.clone()),
        }
    }
    out
}

/// Elements of `side` whose position the side chose: those absent from `base` and those
/// outside a longest common subsequence of the two orders.
pub(crate) fn repositioned<'a>(base: &[&'a str], side: &[&'a str]) -> HashSet<&'a str> {
    let in_base: HashSet<&str> = base.iter().copied().collect();
    let in_side: HashSet<&str> = side.iter().copied().collect();
    let b: Vec<&str> = base
        .iter()
        .copied()
        .filter(|x| in_side.contains(x))
        .collect();
    let s: Vec<&str> = side
        .iter()
        .copied()
        .filter(|x| in_base.contains(x))
        .collect();
    let mut stable = HashSet::new();
    for op in similar::capture_diff_slices(Algorithm::Myers, &b, &s) {
        if op.tag() == DiffTag::Equal {
            stable.extend(s[op.new_range()].iter().copied());
        }
    }
    side.iter()
        .copied()
        .filter(|x| !stable.contains(x))
        .collect()
}

/// Merges the order of one parent's children. `members` are the ids the merged parent holds.
/// Returns the order and the ids both sides repositioned differently.
fn merge_order<'a>(
    base: &[&'a str],
    ours: &[&'a str],
    theirs: &[&'a str],
    members: &HashSet<&'a str>,
) -> (Vec<&'a str>, Vec<&'a str>) {
    let ours_moved = repositioned(base, ours);
    let theirs_moved = repositioned(base, theirs);
    let predecessor = |list: &[&'a str], id: &str| -> Option<&'a str> {
        let at = list.iter().position(|x| *x == id)?;
        list[..at]
            .iter()
            .rev()
            .copied()
            .find(|x| members.contains(x))
    };
    let mut conflicts = Vec::new();
    let mut order: Vec<&'a str> = Vec::with_capacity(members.len());
    for &id in ours {
        if !members.contains(id) {
            continue;
        }
        if theirs_moved.contains(id) {
            if !ours_moved.contains(id) {
                continue;
            }
            if theirs.contains(&id) && predecessor(ours, id) != predecessor(theirs, id) {
                conflicts.push(id);
            }
        }
        order.push(id);
    }
    let mut placed: HashSet<&str> = order.iter().copied().collect();
    for (at, &id) in theirs.iter().enumerate() {
        if !members.contains(id) || placed.contains(id) {
            continue;
        }
        let pos = theirs[..at]
            .iter()
            .rev()
            .find_map(|p| order.iter().position(|x| x == p))
            .map_or(0, |i| i + 1);
        order.insert(pos, id);
        placed.insert(id);
    }
    // Members neither side lists here cannot occur for consistent inputs; keep them anyway.
    let mut rest: Vec<&str> = members
        .iter()
        .copied()
        .filter(|id| !placed.contains(id))
        .collect();
    rest.sort_unstable();
    order.extend(rest);
    (order, conflicts)
}

fn merge_files(
    base: &[File],
    ours: &[File],
    theirs: &[File],
    conflicts: &mut Vec<Conflict>,
) -> Vec<File> {
    let keyed = merge_keyed(
        base,
        ours,
        theirs,
        |f| &f.id,
        |b, o, t| {
            if o == t || t == b {
                Ok(o.clone())
            } else if o == b {
                Ok(t.clone())
            } else {
                Err(ConflictKind::Property {
                    field: first_difference_file(o, t).into(),
                })
            }
        },
    );
    keyed.unwrap_or_else(|errs| {
        conflicts.extend(errs.into_iter().map(|(f, kind)| Conflict {
            subject: ConflictSubject::File {
                id: f.id.clone(),
                name: f.name.clone(),
            },
            kind,
        }));
        Vec::new()
    })
}

fn first_difference_file(a: &File, b: &File) -> &'static str {
    if a.name != b.name {
        "name"
    } else if a.content_type != b.content_type {
        "contentType"
    } else if a.dimensions != b.dimensions {
        "dimensions"
    } else {
        "downloadURL"
    }
}

fn merge_reusable(
    base: &[ReusableContent],
    ours: &[ReusableContent],
    theirs: &[ReusableContent],
    conflicts: &mut Vec<Conflict>,
) -> Vec<ReusableContent> {
    let keyed = merge_keyed(
        base,
        ours,
        theirs,
        |r| &r.id,
        |b, o, t| {
            let mut local = Vec::new();
            let title = merge_field(&b.title, &o.title, &t.title, "title", &mut local);
            let markdown = match merge_text(&b.markdown, &o.markdown, &t.markdown) {
                Ok(m) => m,
                Err(regions) => {
                    local.push(ConflictKind::Body { regions });
                    String::new()
                }
            };
            match local.into_iter().next() {
                Some(k) => Err(k),
                None => Ok(ReusableContent {
                    id: o.id.clone(),
                    title,
                    markdown,
                }),
            }
        },
    );
    keyed.unwrap_or_else(|errs| {
        conflicts.extend(errs.into_iter().map(|(r, kind)| Conflict {
            subject: ConflictSubject::ReusableContent {
                id: r.id.clone(),
                title: r.title.clone(),
            },
            kind,
        }));
        Vec::new()
    })
}

/// Three-way merge of a flat list of items with ids (files, reusable contents).
#[allow(clippy::type_complexity)]
fn merge_keyed<'a, T: Clone + PartialEq>(
    base: &'a [T],
    ours: &'a [T],
    theirs: &'a [T],
    id: impl Fn(&T) -> &String,
    both: impl Fn(&T, &T, &T) -> Result<T, ConflictKind>,
) -> Result<Vec<T>, Vec<(&'a T, ConflictKind)>> {
    let index = |list: &'a [T]| -> HashMap<&'a str, &'a T> {
        list.iter().map(|x| (id(x).as_str(), x)).collect()
    };
    let (b, o, t) = (index(base), index(ours), index(theirs));
    let mut out: HashMap<&str, T> = HashMap::new();
    let mut errors = Vec::new();
    let order = |list: &'a [T]| -> Vec<&'a str> { list.iter().map(|x| id(x).as_str()).collect() };
    let (bo, oo, to) = (order(base), order(ours), order(theirs));
    let mut all: Vec<&str> = oo.clone();
    all.extend(to.iter().filter(|x| !o.contains_key(*x)));
    all.extend(
        bo.iter()
            .filter(|x| !o.contains_key(*x) && !t.contains_key(*x)),
    );
    for key in all {
        match (b.get(key), o.get(key), t.get(key)) {
            (Some(bv), Some(ov), Some(tv)) => match both(bv, ov, tv) {
                Ok(v) => {
                    out.insert(key, v);
                }
                Err(k) => errors.push((*ov, k)),
            },
            (Some(bv), None, Some(tv)) if bv != tv => errors.push((
                *tv,
                ConflictKind::DeletedAndEdited {
                    deleted_by: Side::Ours,
                },
            )),
            (Some(bv), Some(ov), None) if bv != ov => errors.push((
                *ov,
                ConflictKind::DeletedAndEdited {
                    deleted_by: Side::Theirs,
                },
            )),
            (None, Some(ov), Some(tv)) if ov != tv => errors.push((*ov, ConflictKind::AddedTwice)),
            (None, Some(v), _) | (None, None, Some(v)) => {
                out.insert(key, (*v).clone());
            }
            _ => {}
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let members: HashSet<&str> = out.keys().copied().collect();
    let (order, _) = merge_order(&bo, &oo, &to, &members);
    Ok(order
        .into_iter()
        .map(|k| out.remove(k).expect("ordered keys are merged"))
        .collect())
}

/// A maximal run of changed lines of one side relative to the base.
#[derive(Clone, Debug)]
struct Hunk {
    side: Side,
    base: Range<usize>,
    new: Range<usize>,
}

fn hunks(base: &[&str], side: &[&str], which: Side) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    for op in similar::capture_diff_slices(Algorithm::Myers, base, side) {
        if op.tag() == DiffTag::Equal {
            continue;
        }
        let (b, n) = (op.old_range(), op.new_range());
        match out.last_mut() {
            // Adjacent edits (a deletion followed by an insertion) are one replacement.
            Some(last) if last.base.end == b.start && last.new.end == n.start => {
                last.base.end = b.end;
                last.new.end = n.end;
            }
            _ => out.push(Hunk {
                side: which,
                base: b,
                new: n,
            }),
        }
    }
    out
}

fn overlaps(a: &Hunk, b: &Hunk) -> bool {
    if a.side == b.side {
        return false;
    }
    match (a.base.is_empty(), b.base.is_empty()) {
        // Two insertions at the same point: their relative order is ambiguous.
        (true, true) => a.base.start == b.base.start,
        (true, false) => b.base.start < a.base.start && a.base.start < b.base.end,
        (false, true) => a.base.start < b.base.start && b.base.start < a.base.end,
        (false, false) => a.base.start < b.base.end && b.base.start < a.base.end,
    }
}

/// A stretch of a three-way merge of texts (see [`merge_regions`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Region {
    /// Lines both sides agree on, after their edits of different lines are applied.
    Merged(String),
    /// Lines both sides changed differently: each side's version of them, and where.
    Conflict {
        /// Our version of the lines.
        ours: String,
        /// Their version of the lines.
        theirs: String,
        /// Where they are in each version.
        lines: TextConflict,
    },
}

/// Line-based three-way merge (diff3): edits of different regions all apply; regions
/// changed differently by both sides are returned as conflicts. Touching but
/// non-overlapping edits (say, two adjacent lines) merge cleanly.
pub fn merge_text(base: &str, ours: &str, theirs: &str) -> Result<String, Vec<TextConflict>> {
    let mut out = String::with_capacity(ours.len().max(theirs.len()));
    let mut conflicts = Vec::new();
    for region in merge_regions(base, ours, theirs) {
        match region {
            Region::Merged(text) => out.push_str(&text),
            Region::Conflict { lines, .. } => conflicts.push(lines),
        }
    }
    if conflicts.is_empty() {
        Ok(out)
    } else {
        Err(conflicts)
    }
}

/// The three-way merge of [`merge_text`] as a sequence of merged stretches and
/// conflicts, for a person to choose each conflict's lines (the app's conflict screen).
pub fn merge_regions(base: &str, ours: &str, theirs: &str) -> Vec<Region> {
    if ours == theirs || theirs == base {
        return vec![Region::Merged(ours.to_string())];
    }
    if ours == base {
        return vec![Region::Merged(theirs.to_string())];
    }
    let bl: Vec<&str> = base.split_inclusive('\n').collect();
    let ol: Vec<&str> = ours.split_inclusive('\n').collect();
    let tl: Vec<&str> = theirs.split_inclusive('\n').collect();
    let mut all = hunks(&bl, &ol, Side::Ours);
    all.extend(hunks(&bl, &tl, Side::Theirs));
    // Insertions sort before replacements starting at the same line, so that they apply first.
    all.sort_by_key(|h| {
        (
            h.base.start,
            !h.base.is_empty(),
            h.base.end,
            h.side == Side::Theirs,
        )
    });

    let mut groups: Vec<Vec<Hunk>> = Vec::new();
    for h in all {
        match groups.last_mut() {
            Some(g) if g.iter().any(|x| overlaps(x, &h)) => g.push(h),
            _ => groups.push(vec![h]),
        }
    }

    let mut regions = Vec::new();
    let mut out = String::with_capacity(ours.len().max(theirs.len()));
    let mut cursor = 0;
    let lines_of = |side: Side| if side == Side::Ours { &ol } else { &tl };
    for g in groups {
        let start = g.iter().map(|h| h.base.start).min().unwrap_or(cursor);
        let end = g.iter().map(|h| h.base.end).max().unwrap_or(cursor);
        for line in &bl[cursor.min(start)..start] {
            out.push_str(line);
        }
        if g.len() == 1 {
            for line in &lines_of(g[0].side)[g[0].new.clone()] {
                out.push_str(line);
            }
        } else {
            // The region as each side wrote it: its hunks with base lines between them.
            let version = |side: Side| -> (String, Range<usize>) {
                let mine: Vec<&Hunk> = g.iter().filter(|h| h.side == side).collect();
                let mut text = String::new();
                let mut at = start;
                for h in &mine {
                    for line in &bl[at..h.base.start] {
                        text.push_str(line);
                    }
                    for line in &lines_of(side)[h.new.clone()] {
                        text.push_str(line);
                    }
                    at = h.base.end;
                }
                for line in &bl[at..end] {
                    text.push_str(line);
                }
                let range = match (mine.first(), mine.last()) {
                    (Some(f), Some(l)) => {
                        (f.new.start - (f.base.start - start))..(l.new.end + (end - l.base.end))
                    }
                    _ => start..end,
                };
                (text, range)
            };
            let (ot, or) = version(Side::Ours);
            let (tt, tr) = version(Side::Theirs);
            if ot == tt {
                out.push_str(&ot);
            } else {
                if !out.is_empty() {
                    regions.push(Region::Merged(std::mem::take(&mut out)));
                }
                regions.push(Region::Conflict {
                    ours: ot,
                    theirs: tt,
                    lines: TextConflict {
                        base: start..end,
                        ours: or,
                        theirs: tr,
                    },
                });
            }
        }
        cursor = cursor.max(end);
    }
    for line in &bl[cursor..] {
        out.push_str(line);
    }
    if !out.is_empty() {
        regions.push(Region::Merged(out));
    }
    regions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContentRef, VariableValue};

    fn body<'r>(rev: &'r mut Revision, id: &str) -> &'r mut String {
        match &mut rev.page_mut(id).unwrap().kind {
            PageKind::Document(d) => &mut d.markdown,
            _ => panic!("not a document"),
        }
    }

    fn base() -> Revision {
        let mut a = Page::document("a", "A", "a", "a1\na2\na3\na4\na5\n");
        a.pages.push(Page::document("a-1", "A1", "a-1", "x\n"));
        a.pages.push(Page::document("a-2", "A2", "a-2", "y\n"));
        Revision {
            pages: vec![
                a,
                Page::document("b", "B", "b", "b\n"),
                Page::document("c", "C", "c", "c\n"),
                Page::link(
                    "l",
                    "L",
                    ContentRef::Url {
                        url: "https://x".into(),
                    },
                ),
            ],
            ..Revision::default()
        }
    }

    fn ids(pages: &[Page]) -> Vec<&str> {
        pages.iter().map(|p| p.id.as_str()).collect()
    }

    #[test]
    fn text_merges_disjoint_regions() {
        let b = "1\n2\n3\n4\n5\n";
        assert_eq!(
            merge_text(b, "1\nX\n3\n4\n5\n", "1\n2\n3\n4\nY\n").unwrap(),
            "1\nX\n3\n4\nY\n"
        );
        // Adjacent lines do not overlap.
        assert_eq!(
            merge_text(b, "1\nX\n3\n4\n5\n", "1\n2\nY\n4\n5\n").unwrap(),
            "1\nX\nY\n4\n5\n"
        );
        // Identical changes merge.
        assert_eq!(
            merge_text(b, "1\nX\n3\n4\n5\n", "1\nX\n3\n4\n5\n").unwrap(),
            "1\nX\n3\n4\n5\n"
        );
        // Insertions at different places.
        assert_eq!(
            merge_text(b, "0\n1\n2\n3\n4\n5\n", "1\n2\n3\n4\n5\n6\n").unwrap(),
            "0\n1\n2\n3\n4\n5\n6\n"
        );
        // Deletion next to an edit.
        assert_eq!(
            merge_text(b, "1\n3\n4\n5\n", "1\n2\nZ\n4\n5\n").unwrap(),
            "1\nZ\n4\n5\n"
        );
    }

    #[test]
    fn text_conflicts_on_overlap() {
        let b = "1\n2\n3\n";
        let err = merge_text(b, "1\nX\n3\n", "1\nY\n3\n").unwrap_err();
        assert_eq!(
            err,
            vec![TextConflict {
                base: 1..2,
                ours: 1..2,
                theirs: 1..2
            }]
        );
        // Two different insertions at the same point conflict.
        assert!(merge_text(b, "1\nA\n2\n3\n", "1\nB\n2\n3\n").is_err());
    }

    #[test]
    fn text_regions_keep_merged_lines_between_conflicts() {
        let b = "1\n2\n3\n4\n5\n6\n";
        let regions = merge_regions(b, "1\nX\n3\n4\nZ\n6\nmine\n", "0\n1\nY\n3\n4\nW\n6\n");
        let conflict = |ours: &str, theirs: &str, at: usize, o: usize, t: usize| Region::Conflict {
            ours: ours.into(),
            theirs: theirs.into(),
            lines: TextConflict {
                base: at..at + 1,
                ours: o..o + 1,
                theirs: t..t + 1,
            },
        };
        assert_eq!(
            regions,
            vec![
                Region::Merged("0\n1\n".into()),
                conflict("X\n", "Y\n", 1, 1, 2),
                Region::Merged("3\n4\n".into()),
                conflict("Z\n", "W\n", 4, 4, 5),
                Region::Merged("6\nmine\n".into()),
            ]
        );
        // Without a conflict, one merged stretch: what merge_text answers.
        let clean = merge_regions(b, "1\nX\n3\n4\n5\n6\n", "1\n2\n3\n4\n5\nY\n");
        assert_eq!(clean, vec![Region::Merged("1\nX\n3\n4\n5\nY\n".into())]);
    }

    #[test]
    fn identity() {
        let b = base();
        let mut t = b.clone();
        body(&mut t, "a").push_str("more\n");
        t.pages.swap(1, 2);
        assert_eq!(merge(&b, &b, &t).unwrap(), t);
        assert_eq!(merge(&b, &t, &b).unwrap(), t);
    }

    #[test]
    fn edits_to_different_pages_and_regions_survive() {
        let b = base();
        let mut o = b.clone();
        let mut t = b.clone();
        *body(&mut o, "a") = "a1\nOURS\na3\na4\na5\n".into();
        *body(&mut t, "a") = "a1\na2\na3\na4\nTHEIRS\n".into();
        o.page_mut("b").unwrap().title = "B!".into();
        t.page_mut("c").unwrap().emoji = Some("1f600".into());
        let m = merge(&b, &o, &t).unwrap();
        assert_eq!(
            m.page("a").unwrap().markdown().unwrap(),
            "a1\nOURS\na3\na4\nTHEIRS\n"
        );
        assert_eq!(m.page("b").unwrap().title, "B!");
        assert_eq!(m.page("c").unwrap().emoji.as_deref(), Some("1f600"));
    }

    #[test]
    fn tree_changes_merge() {
        let b = base();
        let mut o = b.clone();
        let mut t = b.clone();
        // Ours: insert a root page and move c under a.
        o.pages.insert(1, Page::document("n1", "N1", "n1", ""));
        let (c, _) = o.remove_page("c").unwrap();
        o.page_mut("a").unwrap().pages.push(c);
        // Theirs: delete b, add a child to a at the front, rename l.
        t.remove_page("b");
        t.page_mut("a")
            .unwrap()
            .pages
            .insert(0, Page::document("n2", "N2", "n2", ""));
        t.page_mut("l").unwrap().title = "Link".into();
        let m = merge(&b, &o, &t).unwrap();
        assert_eq!(ids(&m.pages), vec!["a", "n1", "l"]);
        assert_eq!(
            ids(&m.page("a").unwrap().pages),
            vec!["n2", "a-1", "a-2", "c"]
        );
        assert_eq!(m.page("l").unwrap().title, "Link");
    }

    #[test]
    fn reorders_merge() {
        let b = base();
        let mut o = b.clone();
        let mut t = b.clone();
        // Ours moves l to the front; theirs swaps a-1 and a-2.
        let l = o.pages.pop().unwrap();
        o.pages.insert(0, l);
        t.page_mut("a").unwrap().pages.swap(0, 1);
        let m = merge(&b, &o, &t).unwrap();
        assert_eq!(ids(&m.pages), vec!["l", "a", "b", "c"]);
        assert_eq!(ids(&m.page("a").unwrap().pages), vec!["a-2", "a-1"]);
    }

    #[test]
    fn conflicts_are_reported() {
        let b = base();
        let mut o = b.clone();
        let mut t = b.clone();
        // Delete vs edit.
        o.remove_page("b");
        *body(&mut t, "b") = "changed\n".into();
        // Same line edited differently.
        *body(&mut o, "a") = "a1\nO\na3\na4\na5\n".into();
        *body(&mut t, "a") = "a1\nT\na3\na4\na5\n".into();
        // Same property set differently.
        o.page_mut("c").unwrap().title = "C-o".into();
        t.page_mut("c").unwrap().title = "C-t".into();
        let err = merge(&b, &o, &t).unwrap_err();
        let kinds: Vec<(&str, &ConflictKind)> = err
            .iter()
            .map(|c| match &c.subject {
                ConflictSubject::Page { id, .. } => (id.as_str(), &c.kind),
                _ => ("?", &c.kind),
            })
            .collect();
        assert!(kinds.contains(&(
            "b",
            &ConflictKind::DeletedAndEdited {
                deleted_by: Side::Ours
            }
        )));
        assert!(kinds.contains(&(
            "c",
            &ConflictKind::Property {
                field: "title".into()
            }
        )));
        assert!(kinds
            .iter()
            .any(|(id, k)| *id == "a" && matches!(k, ConflictKind::Body { .. })));
        let json = serde_json::to_value(&err[0]).unwrap();
        assert!(json["subject"]["title"].is_string());
    }

    #[test]
    fn a_page_s_tags_and_primary_tag_merge_as_one() {
        let mut b = base();
        b.page_mut("c").unwrap().tags = vec!["beta".into(), "new".into()];
        // One side marks a tag primary, the other edits the body: both land.
        let mut o = b.clone();
        let mut t = b.clone();
        o.page_mut("c").unwrap().primary_tag = Some("new".into());
        *body(&mut t, "c") = "c changed\n".into();
        for (x, y) in [(&o, &t), (&t, &o)] {
            let m = merge(&b, x, y).unwrap();
            let c = m.page("c").unwrap();
            assert_eq!(c.primary_tag.as_deref(), Some("new"));
            assert_eq!(c.markdown(), Some("c changed\n"));
        }
        // One side drops the tag the other marks primary: a conflict on `tags`, never a
        // primary tag the page does not carry.
        let mut t = b.clone();
        t.page_mut("c").unwrap().tags = vec!["beta".into()];
        let err = merge(&b, &o, &t).unwrap_err();
        assert!(err.iter().any(|c| c.kind
            == ConflictKind::Property {
                field: "tags".into()
            }));
        // The same change on both sides merges.
        let m = merge(&b, &o, &o.clone()).unwrap();
        assert_eq!(m.page("c").unwrap().primary_tag.as_deref(), Some("new"));
    }

    #[test]
    fn move_conflicts_and_cycles() {
        let b = base();
        let mut o = b.clone();
        let mut t = b.clone();
        // Ours moves b under a; theirs moves b under c: conflict.
        let (p, _) = o.remove_page("b").unwrap();
        o.page_mut("a").unwrap().pages.push(p);
        let (p, _) = t.remove_page("b").unwrap();
        t.page_mut("c").unwrap().pages.push(p);
        let err = merge(&b, &o, &t).unwrap_err();
        assert_eq!(err[0].kind, ConflictKind::Moved);

        // Ours moves c under b; theirs moves b under c: cycle.
        let mut o = b.clone();
        let mut t = b.clone();
        let (p, _) = o.remove_page("c").unwrap();
        o.page_mut("b").unwrap().pages.push(p);
        let (p, _) = t.remove_page("b").unwrap();
        t.page_mut("c").unwrap().pages.push(p);
        let err = merge(&b, &o, &t).unwrap_err();
        assert!(err.iter().all(|c| c.kind == ConflictKind::Cycle));
    }

    #[test]
    fn orphaned_insertion_conflicts() {
        let b = base();
        let mut o = b.clone();
        let mut t = b.clone();
        o.remove_page("a");
        t.page_mut("a")
            .unwrap()
            .pages
            .push(Page::document("new", "New", "new", ""));
        let err = merge(&b, &o, &t).unwrap_err();
        assert!(err
            .iter()
            .any(|c| c.kind == ConflictKind::ParentDeleted { parent: "a".into() }));
    }

    #[test]
    fn slug_collisions_get_suffixes() {
        let b = base();
        let mut o = b.clone();
        let mut t = b.clone();
        o.pages.push(Page::document("x", "Intro", "intro", ""));
        t.pages.push(Page::document("y", "Intro", "intro", ""));
        let m = merge(&b, &o, &t).unwrap();
        assert_eq!(m.page("x").unwrap().slug, "intro");
        assert_eq!(m.page("y").unwrap().slug, "intro-1");
    }

    #[test]
    fn files_and_variables() {
        let b = base();
        let file = |id: &str, name: &str| File {
            id: id.into(),
            name: name.into(),
            content_type: "image/png".into(),
            size: 1,
            dimensions: None,
            blob: "ab".into(),
            git_oid: None,
        };
        let mut o = b.clone();
        let mut t = b.clone();
        o.files.push(file("f1", "one.png"));
        t.files.push(file("f2", "two.png"));
        o.variables.insert("a".into(), VariableValue::Bool(true));
        t.variables
            .insert("b".into(), VariableValue::String("x".into()));
        let m = merge(&b, &o, &t).unwrap();
        assert_eq!(m.files.len(), 2);
        assert_eq!(m.variables.len(), 2);
        let mut t2 = t.clone();
        t2.variables.insert("a".into(), VariableValue::Bool(false));
        let err = merge(&b, &o, &t2).unwrap_err();
        assert_eq!(
            err[0].subject,
            ConflictSubject::Variable { name: "a".into() }
        );
    }

    /// Random edits for the differential test: every kind of tree and property change,
    /// with small pools of ids and slugs so that the two sides collide often.
    #[derive(Clone, Debug)]
    enum Op {
        Line(usize, usize),
        Title(usize),
        Slug(usize, usize),
        Add(usize, usize, bool),
        Delete(usize),
        Move(usize, usize, bool),
        Swap(usize),
        Link(usize),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (any::<usize>(), 0..4usize).prop_map(|(p, l)| Op::Line(p, l)),
            any::<usize>().prop_map(Op::Title),
            (any::<usize>(), 0..3usize).prop_map(|(p, s)| Op::Slug(p, s)),
            (any::<usize>(), 0..4usize, any::<bool>()).prop_map(|(p, i, r)| Op::Add(p, i, r)),
            any::<usize>().prop_map(Op::Delete),
            (any::<usize>(), any::<usize>(), any::<bool>()).prop_map(|(a, b, r)| Op::Move(a, b, r)),
            any::<usize>().prop_map(Op::Swap),
            any::<usize>().prop_map(Op::Link),
        ]
    }

    fn tree(shape: &[usize]) -> Revision {
        let body = |id: &str| (0..4).map(|k| format!("{id} {k}\n")).collect::<String>();
        Revision {
            pages: shape
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let id = format!("p{i}");
                    let mut p = Page::document(&id, &id, &id, &body(&id));
                    p.pages = (0..n)
                        .map(|j| {
                            let id = format!("p{i}c{j}");
                            Page::document(&id, &id, &id, &body(&id))
                        })
                        .collect();
                    p
                })
                .collect(),
            ..Revision::default()
        }
    }

    fn edit(rev: &mut Revision, ops: &[Op], tag: &str) {
        for (n, op) in ops.iter().enumerate() {
            let ids: Vec<String> = rev.flatten().iter().map(|f| f.page.id.clone()).collect();
            if ids.is_empty() {
                return;
            }
            let pick = |i: usize| ids[i % ids.len()].clone();
            match op {
                Op::Line(p, l) => {
                    if let PageKind::Document(d) = &mut rev.page_mut(&pick(*p)).unwrap().kind {
                        let mut lines: Vec<String> =
                            d.markdown.lines().map(str::to_string).collect();
                        if let Some(line) = lines.get_mut(*l) {
                            *line = format!("{tag} {n}");
                        }
                        d.markdown = lines.iter().map(|l| format!("{l}\n")).collect();
                    }
                }
                Op::Title(p) => rev.page_mut(&pick(*p)).unwrap().title = format!("{tag} {n}"),
                Op::Slug(p, s) => {
                    rev.page_mut(&pick(*p)).unwrap().slug = ["a", "b", "p0"][*s].into()
                }
                Op::Add(p, i, root) => {
                    let id = format!("new{i}");
                    if ids.contains(&id) {
                        continue;
                    }
                    let page = Page::document(&id, &id, &format!("s{n}"), "new\n");
                    match rev.page_mut(&pick(*p)) {
                        Some(parent) if !*root && !matches!(parent.kind, PageKind::Link(_)) => {
                            parent.pages.insert(0, page)
                        }
                        _ => rev.pages.push(page),
                    }
                }
                Op::Delete(p) => {
                    rev.remove_page(&pick(*p));
                }
                Op::Move(a, b, root) => {
                    let (a, b) = (pick(*a), pick(*b));
                    if rev.subtree_ids(&a).contains(&b) {
                        continue;
                    }
                    let (page, _) = rev.remove_page(&a).unwrap();
                    if *root {
                        rev.pages.insert(0, page);
                    } else {
                        rev.page_mut(&b).unwrap().pages.push(page);
                    }
                }
                Op::Swap(p) => {
                    let loc = rev.locate(&pick(*p)).unwrap();
                    let list = rev.children_mut(loc.parent.as_deref()).unwrap();
                    if loc.index + 1 < list.len() {
                        list.swap(loc.index, loc.index + 1);
                    }
                }
                Op::Link(p) => {
                    let page = rev.page_mut(&pick(*p)).unwrap();
                    if page.pages.is_empty() {
                        page.kind = PageKind::Link(LinkPage {
                            target: ContentRef::Url {
                                url: format!("https://{tag}/{n}"),
                            },
                        });
                    }
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, failure_persistence: None, ..Default::default() })]

        /// The merge on keys gives exactly what the reference merge on ids gives, conflicts
        /// (and their order) included.
        #[test]
        fn keyed_merge_is_the_reference_merge(
            shape in proptest::collection::vec(0usize..4, 0..5),
            base_ops in proptest::collection::vec(op(), 0..3),
            ours in proptest::collection::vec(op(), 0..8),
            theirs in proptest::collection::vec(op(), 0..8),
        ) {
            let mut b = tree(&shape);
            edit(&mut b, &base_ops, "b");
            let mut o = b.clone();
            let mut t = b.clone();
            edit(&mut o, &ours, "o");
            edit(&mut t, &theirs, "t");
            proptest::prop_assert_eq!(merge(&b, &o, &t), merge_by_ids(&b, &o, &t));
            proptest::prop_assert_eq!(merge(&b, &t, &o), merge_by_ids(&b, &t, &o));
            proptest::prop_assert_eq!(merge(&o, &b, &t), merge_by_ids(&o, &b, &t));
        }
    }

    #[test]
    fn repeated_ids_use_the_reference_merge() {
        let b = base();
        let mut o = b.clone();
        o.pages.push(Page::document("b", "B again", "b-again", ""));
        assert!(Keyed::new(&b, &o, &b).is_none());
        assert_eq!(merge(&b, &o, &b), merge_by_ids(&b, &o, &b));
    }
}
