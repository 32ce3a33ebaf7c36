//! Property tests of the three-way merge: identity, determinism, and survival of
//! non-overlapping edits.

use proptest::prelude::*;
use quire_content::merge::merge;
use quire_content::model::{Page, PageKind, Revision};

const LINES: usize = 6;

/// A base revision: `shape[i]` children under root page `i`; every line of every body unique.
fn base(shape: &[usize]) -> Revision {
    let body = |id: &str| {
        (0..LINES)
            .map(|k| format!("{id} line {k}\n"))
            .collect::<String>()
    };
    let pages = shape
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
        .collect();
    Revision {
        pages,
        ..Revision::default()
    }
}

fn all_ids(rev: &Revision) -> Vec<String> {
    rev.flatten().iter().map(|f| f.page.id.clone()).collect()
}

fn set_line(rev: &mut Revision, id: &str, line: usize, text: &str) {
    if let PageKind::Document(d) = &mut rev.page_mut(id).unwrap().kind {
        let mut lines: Vec<String> = d.markdown.lines().map(str::to_string).collect();
        let at = line.min(lines.len().saturating_sub(1));
        if lines.is_empty() {
            lines.push(text.to_string());
        } else {
            lines[at] = text.to_string();
        }
        d.markdown = lines.iter().map(|l| format!("{l}\n")).collect();
    }
}

/// One random change to one side; `tag` keeps the new content of the two sides distinct.
#[derive(Clone, Debug)]
enum Op {
    Line(usize, usize),
    Insert(usize, usize),
    Rename(usize),
    Add(usize),
    Delete(usize),
    Move(usize, usize),
    Swap(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<usize>(), 0..LINES).prop_map(|(p, l)| Op::Line(p, l)),
        (any::<usize>(), 0..LINES).prop_map(|(p, l)| Op::Insert(p, l)),
        any::<usize>().prop_map(Op::Rename),
        any::<usize>().prop_map(Op::Add),
        any::<usize>().prop_map(Op::Delete),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Move(a, b)),
        any::<usize>().prop_map(Op::Swap),
    ]
}

fn apply(rev: &mut Revision, ops: &[Op], tag: &str) {
    for (n, op) in ops.iter().enumerate() {
        let ids = all_ids(rev);
        if ids.is_empty() {
            return;
        }
        let pick = |i: usize| ids[i % ids.len()].clone();
        match op {
            Op::Line(p, l) => set_line(rev, &pick(*p), *l, &format!("{tag} edit {n}")),
            Op::Insert(p, l) => {
                if let PageKind::Document(d) = &mut rev.page_mut(&pick(*p)).unwrap().kind {
                    let mut lines: Vec<&str> = d.markdown.lines().collect();
                    let text = format!("{tag} insert {n}");
                    lines.insert((*l).min(lines.len()), &text);
                    d.markdown = lines.iter().map(|l| format!("{l}\n")).collect();
                }
            }
            Op::Rename(p) => rev.page_mut(&pick(*p)).unwrap().title = format!("{tag} title {n}"),
            Op::Add(p) => {
                let id = format!("{tag}new{n}");
                let page = Page::document(&id, &id, &id, "new\n");
                let parent = pick(*p);
                if rev.locate(&parent).unwrap().parent.is_none() {
                    rev.page_mut(&parent).unwrap().pages.push(page);
                } else {
                    rev.pages.push(page);
                }
            }
            Op::Delete(p) => {
                rev.remove_page(&pick(*p));
            }
            Op::Move(a, b) => {
                let (a, b) = (pick(*a), pick(*b));
                if rev.subtree_ids(&a).contains(&b) {
                    continue;
                }
                let (page, _) = rev.remove_page(&a).unwrap();
                rev.page_mut(&b).unwrap().pages.insert(0, page);
            }
            Op::Swap(p) => {
                let loc = rev.locate(&pick(*p)).unwrap();
                let list = rev.children_mut(loc.parent.as_deref()).unwrap();
                if loc.index + 1 < list.len() {
                    list.swap(loc.index, loc.index + 1);
                }
            }
        }
    }
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..4, 1..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn merging_with_an_unchanged_side_is_the_other_side(shape in shape(), ops in prop::collection::vec(op(), 0..8)) {
        let b = base(&shape);
        let mut s = b.clone();
        apply(&mut s, &ops, "s");
        prop_assert_eq!(merge(&b, &b, &s).unwrap(), s.clone());
        prop_assert_eq!(merge(&b, &s, &b).unwrap(), s.clone());
        prop_assert_eq!(merge(&b, &s, &s).unwrap(), s);
    }

    #[test]
    fn merge_is_deterministic(
        shape in shape(),
        ours in prop::collection::vec(op(), 0..8),
        theirs in prop::collection::vec(op(), 0..8),
    ) {
        let b = base(&shape);
        let mut o = b.clone();
        let mut t = b.clone();
        apply(&mut o, &ours, "o");
        apply(&mut t, &theirs, "t");
        let first = merge(&b, &o, &t);
        for _ in 0..3 {
            prop_assert_eq!(&merge(&b, &o, &t), &first);
        }
        if let Ok(m) = &first {
            prop_assert!(m.validate().is_ok());
        }
    }

    #[test]
    fn non_overlapping_edits_survive(
        shape in shape(),
        edits in prop::collection::vec((any::<usize>(), 0..LINES, any::<bool>()), 1..12),
        renames in prop::collection::vec((any::<usize>(), any::<bool>()), 0..4),
    ) {
        let b = base(&shape);
        let ids = all_ids(&b);
        let mut o = b.clone();
        let mut t = b.clone();
        let mut expected = b.clone();
        let mut used = std::collections::HashSet::new();
        for (n, (p, l, ours)) in edits.iter().enumerate() {
            let id = &ids[p % ids.len()];
            if !used.insert((id.clone(), *l)) {
                continue;
            }
            let text = format!("edit {n}");
            set_line(if *ours { &mut o } else { &mut t }, id, *l, &text);
            set_line(&mut expected, id, *l, &text);
        }
        let mut renamed = std::collections::HashSet::new();
        for (n, (p, ours)) in renames.iter().enumerate() {
            let id = &ids[p % ids.len()];
            if !renamed.insert(id.clone()) {
                continue;
            }
            let title = format!("renamed {n}");
            (if *ours { &mut o } else { &mut t }).page_mut(id).unwrap().title = title.clone();
            expected.page_mut(id).unwrap().title = title;
        }
        prop_assert_eq!(merge(&b, &o, &t).unwrap(), expected);
    }
}
