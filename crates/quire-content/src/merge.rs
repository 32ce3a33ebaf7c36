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
//! Line diffs use the `similar` crate rather than `diffy`: `diffy::merge` only returns text
//! with conflict markers, whereas this engine needs the structured hunks (`DiffOp` ranges)
//! to decide itself what overlaps, to report conflicting line ranges, and to reuse the same
//! longest-common-subsequence machinery for sibling order and for the semantic diff.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;

use serde::Serialize;
use similar::{Algorithm, DiffTag};

use crate::model::{
    unique_slug, DocumentPage, File, LinkPage, Page, PageKind, ReusableContent, Revision, Variables,
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
    for &id in &ids {
        let Some((page, _)) = merged.get(id) else {
            continue;
        };
        let mut seen = HashSet::new();
        let mut at = id;
        while let Some((_, Some(parent))) = merged.get(at) {
            if !seen.insert(at) {
                break;
            }
            if *parent == id {
                conflicts.push(Conflict {
                    subject: ConflictSubject::Page {
                        id: id.to_string(),
                        title: page.title.clone(),
                    },
                    kind: ConflictKind::Cycle,
                });
                break;
            }
            at = parent;
        }
    }

    // Sibling order, per parent.
    let mut members: BTreeMap<Option<&str>, HashSet<&str>> = BTreeMap::new();
    for (&id, (_, parent)) in &merged {
        members.entry(*parent).or_default().insert(id);
    }
    let mut orders: HashMap<Option<&str>, Vec<&str>> = HashMap::new();
    for (parent, set) in &members {
        let (order, reordered) = merge_order(
            &b.children_of(*parent),
            &o.children_of(*parent),
            &t.children_of(*parent),
            set,
        );
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

    let files = merge_files(&base.files, &ours.files, &theirs.files, &mut conflicts);
    let reusable_contents = merge_reusable(
        &base.reusable_contents,
        &ours.reusable_contents,
        &theirs.reusable_contents,
        &mut conflicts,
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

    fn build(
        parent: Option<&str>,
        orders: &HashMap<Option<&str>, Vec<&str>>,
        merged: &mut HashMap<&str, (Page, Option<&str>)>,
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
    let pages = build(None, &orders, &mut merged);
    let rev = Revision {
        pages,
        files,
        reusable_contents,
        variables,
    };
    if let Err(e) = rev.validate() {
        let (id, title) = match &e {
            crate::model::ModelError::DuplicatePageId(id)
            | crate::model::ModelError::EmptyTitle(id)
            | crate::model::ModelError::InvalidNesting(id)
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

    fn children_of(&self, parent: Option<&str>) -> Vec<&'a str> {
        self.children.get(&parent).cloned().unwrap_or_default()
    }
}

/// Whether two pages have the same properties and body, children aside.
pub fn same_props(a: &Page, b: &Page) -> bool {
    a.id == b.id
        && a.title == b.title
        && a.slug == b.slug
        && a.emoji == b.emoji
        && a.icon == b.icon
        && a.description == b.description
        && a.hidden == b.hidden
        && a.no_index == b.no_index
        && a.no_robots_index == b.no_robots_index
        && a.condition == b.condition
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

/// Merges the properties and body of a page present on all three sides; children detached.
fn merge_page(b: &Page, o: &Page, t: &Page, conflicts: &mut Vec<ConflictKind>) -> Page {
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
            PageKind::Document(DocumentPage {
                markdown,
                layout: merge_field(&bd.layout, &od.layout, &td.layout, "layout", conflicts),
                cover: merge_field(&bd.cover, &od.cover, &td.cover, "cover", conflicts),
                variables,
            })
        }
        (PageKind::Link(bl), PageKind::Link(ol), PageKind::Link(tl)) => PageKind::Link(LinkPage {
            target: merge_field(&bl.target, &ol.target, &tl.target, "target", conflicts),
        }),
        (bk, ok, tk) => merge_field(bk, ok, tk, "type", conflicts),
    };
    Page {
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
        kind,
        pages: Vec::new(),
    }
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

/// Line-based three-way merge (diff3): edits of different regions all apply; regions
/// changed differently by both sides are returned as conflicts. Touching but
/// non-overlapping edits (say, two adjacent lines) merge cleanly.
pub fn merge_text(base: &str, ours: &str, theirs: &str) -> Result<String, Vec<TextConflict>> {
    if ours == theirs || theirs == base {
        return Ok(ours.to_string());
    }
    if ours == base {
        return Ok(theirs.to_string());
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

    let mut out = String::with_capacity(ours.len().max(theirs.len()));
    let mut conflicts = Vec::new();
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
                conflicts.push(TextConflict {
                    base: start..end,
                    ours: or,
                    theirs: tr,
                });
            }
        }
        cursor = cursor.max(end);
    }
    for line in &bl[cursor..] {
        out.push_str(line);
    }
    if conflicts.is_empty() {
        Ok(out)
    } else {
        Err(conflicts)
    }
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
}
