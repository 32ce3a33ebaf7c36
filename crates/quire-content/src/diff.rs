//! Semantic diff between two revisions, in the shape of the official
//! `RevisionSemanticChange` items of a change request's `changes`.
//!
//! Pages are matched by id: created, deleted, edited (properties or body) and moved (to
//! another parent, or to another position among the same siblings — positions are compared
//! through a longest common subsequence so that one insertion does not "move" every later
//! sibling). Files, variables and reusable contents are compared the same way.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::merge::repositioned;
use crate::model::{
    ContentRef, Dimensions, File, Page, PageCover, PageKind, PageLayout, ReusableContent, Revision,
    VariableValue, Variables,
};

/// A `before`/`after` pair (official `ChangeAttribute*`); absent sides are omitted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change<T> {
    /// Value before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<T>,
    /// Value after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<T>,
}

fn change<T: PartialEq + Clone>(before: &Option<T>, after: &Option<T>) -> Option<Change<T>> {
    (before != after).then(|| Change {
        before: before.clone(),
        after: after.clone(),
    })
}

/// Official `ChangedRevisionPage`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangedPage {
    /// Page id.
    pub id: String,
    /// `document`, `group` or `link`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Title.
    pub title: String,
    /// Path (link pages have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Changed attributes of a page (official `RevisionPage*ChangeAttributes`, plus `icon`,
/// `hidden` and `condition`, which the official lists lack but authors change too).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageAttributes {
    /// Title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Change<String>>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Change<String>>,
    /// Slug.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<Change<String>>,
    /// Body, named by the hex sha-256 of its markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<Change<String>>,
    /// Cover.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cover: Option<Change<PageCover>>,
    /// Emoji.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emoji: Option<Change<String>>,
    /// Layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<Change<PageLayout>>,
    /// Page variables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variables: Option<Change<Variables>>,
    /// Link target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Change<ContentRef>>,
    /// Icon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<Change<String>>,
    /// Hidden flag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Change<bool>>,
    /// Adaptive-content condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<Change<String>>,
}

impl PageAttributes {
    fn is_empty(&self) -> bool {
        *self == PageAttributes::default()
    }
}

/// Official `ChangedRevisionFile`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    /// File id.
    pub id: String,
    /// Name.
    pub name: String,
    /// MIME type.
    pub content_type: String,
    /// Download URL, as given by the caller.
    #[serde(rename = "downloadURL")]
    pub download_url: String,
}

/// Official `RevisionFileChangeAttributes`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileAttributes {
    /// Name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Change<String>>,
    /// Download URL (changes with the bytes).
    #[serde(rename = "downloadURL", skip_serializing_if = "Option::is_none")]
    pub download_url: Option<Change<String>>,
    /// Size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<Change<u64>>,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<Change<String>>,
    /// Image dimensions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<Change<Dimensions>>,
}

/// Official `ChangedRevisionReusableContent`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangedReusableContent {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
}

/// Official `RevisionReusableContentChangeAttributes`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReusableContentAttributes {
    /// Title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Change<String>>,
    /// Body, named by the hex sha-256 of its markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<Change<String>>,
}

/// The parents of a moved page.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParentChange {
    /// Parent before (absent: the root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<ChangedPage>,
    /// Parent after (absent: the root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<ChangedPage>,
}

/// One official `RevisionSemanticChange`.
// Diffs are short lists built once for a response; boxing would only complicate matching.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SemanticChange {
    /// A page was added.
    PageCreated {
        /// The page.
        page: ChangedPage,
    },
    /// A page's properties or body changed.
    PageEdited {
        /// The page.
        page: ChangedPage,
        /// What changed.
        attributes: PageAttributes,
    },
    /// A page was removed.
    PageDeleted {
        /// The page as it was.
        page: ChangedPage,
    },
    /// A page changed parent or position.
    PageMoved {
        /// The page.
        page: ChangedPage,
        /// Parents before and after (equal for a reorder).
        parent: ParentChange,
    },
    /// A file was added.
    FileCreated {
        /// The file.
        file: ChangedFile,
    },
    /// A file changed.
    FileEdited {
        /// The file.
        file: ChangedFile,
        /// What changed.
        attributes: FileAttributes,
    },
    /// A file was removed.
    FileDeleted {
        /// The file as it was.
        file: ChangedFile,
    },
    /// Space variables changed.
    VariablesEdited {
        /// Changed variables by name.
        variables: BTreeMap<String, Change<VariableValue>>,
    },
    /// A reusable content was added.
    #[serde(rename_all = "camelCase")]
    ReusableContentCreated {
        /// The reusable content.
        reusable_content: ChangedReusableContent,
    },
    /// A reusable content was removed.
    #[serde(rename_all = "camelCase")]
    ReusableContentDeleted {
        /// The reusable content as it was.
        reusable_content: ChangedReusableContent,
    },
    /// A reusable content changed.
    #[serde(rename_all = "camelCase")]
    ReusableContentEdited {
        /// The reusable content.
        reusable_content: ChangedReusableContent,
        /// What changed.
        attributes: ReusableContentAttributes,
    },
}

/// Hex sha-256 of a text: how diffs name a body.
pub fn content_id(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

struct Side<'a> {
    pages: HashMap<&'a str, (&'a Page, Option<&'a str>, String)>,
    children: HashMap<Option<&'a str>, Vec<&'a str>>,
    order: Vec<&'a str>,
}

impl<'a> Side<'a> {
    fn new(rev: &'a Revision) -> Side<'a> {
        let mut side = Side {
            pages: HashMap::new(),
            children: HashMap::new(),
            order: Vec::new(),
        };
        for f in rev.flatten() {
            side.pages.insert(&f.page.id, (f.page, None, f.path));
            side.order.push(&f.page.id);
        }
        fn walk<'a>(pages: &'a [Page], parent: Option<&'a str>, side: &mut Side<'a>) {
            side.children
                .insert(parent, pages.iter().map(|p| p.id.as_str()).collect());
            for p in pages {
                if let Some(e) = side.pages.get_mut(p.id.as_str()) {
                    e.1 = parent;
                }
                walk(&p.pages, Some(&p.id), side);
            }
        }
        walk(&rev.pages, None, &mut side);
        side
    }

    fn changed(&self, id: &str) -> Option<ChangedPage> {
        let (page, _, path) = self.pages.get(id)?;
        Some(ChangedPage {
            id: page.id.clone(),
            kind: page.type_name().into(),
            title: page.title.clone(),
            path: (!matches!(page.kind, PageKind::Link(_))).then(|| path.clone()),
        })
    }
}

fn page_attributes(a: &Page, b: &Page) -> PageAttributes {
    let s = |v: &str| Some(v.to_string());
    let mut attrs = PageAttributes {
        title: change(&s(&a.title), &s(&b.title)),
        description: change(&a.description, &b.description),
        slug: change(&s(&a.slug), &s(&b.slug)),
        emoji: change(&a.emoji, &b.emoji),
        icon: change(&a.icon, &b.icon),
        hidden: change(&Some(a.hidden), &Some(b.hidden)),
        condition: change(&a.condition, &b.condition),
        ..PageAttributes::default()
    };
    if matches!(a.kind, PageKind::Link(_)) || matches!(b.kind, PageKind::Link(_)) {
        attrs.slug = None;
    }
    match (&a.kind, &b.kind) {
        (PageKind::Document(x), PageKind::Document(y)) => {
            if !x.same_markdown(y) {
                attrs.document = Some(Change {
                    before: Some(content_id(&x.markdown)),
                    after: Some(content_id(&y.markdown)),
                });
            }
            attrs.cover = change(&x.cover, &y.cover);
            attrs.layout = change(&Some(x.layout.clone()), &Some(y.layout.clone()));
            attrs.variables = change(&Some(x.variables.clone()), &Some(y.variables.clone()));
        }
        (PageKind::Link(x), PageKind::Link(y)) => {
            attrs.target = change(&Some(x.target.clone()), &Some(y.target.clone()));
        }
        (x, y) if x != y => {
            // The kind itself changed: report the body appearing or disappearing.
            let body = |k: &PageKind| match k {
                PageKind::Document(d) => Some(content_id(&d.markdown)),
                _ => None,
            };
            attrs.document = change(&body(x), &body(y));
        }
        _ => {}
    }
    attrs
}

/// The semantic changes from `before` to `after`, pages first (in the navigation order of
/// `after`, deletions in that of `before`), then files, variables and reusable contents.
/// `download_url` names a file's download URL, which only the server knows.
pub fn diff(
    before: &Revision,
    after: &Revision,
    download_url: &dyn Fn(&File) -> String,
) -> Vec<SemanticChange> {
    let a = Side::new(before);
    let b = Side::new(after);
    let mut out = Vec::new();

    // Who moved among the same siblings, per parent present on both sides.
    let mut reordered = std::collections::HashSet::new();
    for (parent, list) in &b.children {
        if parent.is_some_and(|p| !a.pages.contains_key(p)) {
            continue;
        }
        let old = a.children.get(parent).cloned().unwrap_or_default();
        let common_old: Vec<&str> = old.iter().copied().filter(|id| list.contains(id)).collect();
        let common_new: Vec<&str> = list.iter().copied().filter(|id| old.contains(id)).collect();
        reordered.extend(repositioned(&common_old, &common_new));
    }

    for &id in &b.order {
        let (page, parent, _) = &b.pages[id];
        let Some((old, old_parent, _)) = a.pages.get(id) else {
            out.push(SemanticChange::PageCreated {
                page: b.changed(id).expect("present"),
            });
            continue;
        };
        let attributes = page_attributes(old, page);
        if !attributes.is_empty() {
            out.push(SemanticChange::PageEdited {
                page: b.changed(id).expect("present"),
                attributes,
            });
        }
        if old_parent != parent || reordered.contains(id) {
            out.push(SemanticChange::PageMoved {
                page: b.changed(id).expect("present"),
                parent: ParentChange {
                    before: old_parent.and_then(|p| a.changed(p)),
                    after: parent.and_then(|p| b.changed(p)),
                },
            });
        }
    }
    for &id in &a.order {
        if !b.pages.contains_key(id) {
            out.push(SemanticChange::PageDeleted {
                page: a.changed(id).expect("present"),
            });
        }
    }

    let changed_file = |f: &File| ChangedFile {
        id: f.id.clone(),
        name: f.name.clone(),
        content_type: f.content_type.clone(),
        download_url: download_url(f),
    };
    let old_files: HashMap<&str, &File> = before.files.iter().map(|f| (f.id.as_str(), f)).collect();
    let new_files: HashMap<&str, &File> = after.files.iter().map(|f| (f.id.as_str(), f)).collect();
    for f in &after.files {
        match old_files.get(f.id.as_str()) {
            None => out.push(SemanticChange::FileCreated {
                file: changed_file(f),
            }),
            Some(old) if *old != f => {
                let s = |v: &str| Some(v.to_string());
                let attributes = FileAttributes {
                    name: change(&s(&old.name), &s(&f.name)),
                    download_url: (old.blob != f.blob).then(|| Change {
                        before: Some(download_url(old)),
                        after: Some(download_url(f)),
                    }),
                    size: change(&Some(old.size), &Some(f.size)),
                    content_type: change(&s(&old.content_type), &s(&f.content_type)),
                    dimensions: change(&old.dimensions, &f.dimensions),
                };
                if attributes != FileAttributes::default() {
                    out.push(SemanticChange::FileEdited {
                        file: changed_file(f),
                        attributes,
                    });
                }
            }
            Some(_) => {}
        }
    }
    for f in &before.files {
        if !new_files.contains_key(f.id.as_str()) {
            out.push(SemanticChange::FileDeleted {
                file: changed_file(f),
            });
        }
    }

    let mut variables = BTreeMap::new();
    for k in before.variables.keys().chain(after.variables.keys()) {
        if let Some(c) = change(
            &before.variables.get(k).cloned(),
            &after.variables.get(k).cloned(),
        ) {
            variables.insert(k.clone(), c);
        }
    }
    if !variables.is_empty() {
        out.push(SemanticChange::VariablesEdited { variables });
    }

    let rc = |r: &ReusableContent| ChangedReusableContent {
        id: r.id.clone(),
        title: r.title.clone(),
    };
    let old_rc: HashMap<&str, &ReusableContent> = before
        .reusable_contents
        .iter()
        .map(|r| (r.id.as_str(), r))
        .collect();
    let new_rc: HashMap<&str, &ReusableContent> = after
        .reusable_contents
        .iter()
        .map(|r| (r.id.as_str(), r))
        .collect();
    for r in &after.reusable_contents {
        match old_rc.get(r.id.as_str()) {
            None => out.push(SemanticChange::ReusableContentCreated {
                reusable_content: rc(r),
            }),
            Some(old) if *old != r => {
                let attributes = ReusableContentAttributes {
                    title: change(&Some(old.title.clone()), &Some(r.title.clone())),
                    document: (old.markdown != r.markdown).then(|| Change {
                        before: Some(content_id(&old.markdown)),
                        after: Some(content_id(&r.markdown)),
                    }),
                };
                out.push(SemanticChange::ReusableContentEdited {
                    reusable_content: rc(r),
                    attributes,
                });
            }
            Some(_) => {}
        }
    }
    for r in &before.reusable_contents {
        if !new_rc.contains_key(r.id.as_str()) {
            out.push(SemanticChange::ReusableContentDeleted {
                reusable_content: rc(r),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Revision {
        let mut g = Page::group("g", "Guides", "guides");
        g.pages.push(Page::document("a", "A", "a", "a\n"));
        g.pages.push(Page::document("b", "B", "b", "b\n"));
        g.pages.push(Page::document("c", "C", "c", "c\n"));
        Revision {
            pages: vec![Page::document("home", "Home", "home", "hi\n"), g],
            files: vec![File {
                id: "f".into(),
                name: "f.png".into(),
                content_type: "image/png".into(),
                size: 1,
                dimensions: None,
                blob: "00".into(),
                git_oid: None,
            }],
            ..Revision::default()
        }
    }

    fn url(f: &File) -> String {
        format!("https://files.example/{}", f.id)
    }

    #[test]
    fn no_changes() {
        let r = base();
        assert!(diff(&r, &r, &url).is_empty());
    }

    #[test]
    fn pages_created_edited_moved_deleted() {
        let old = base();
        let mut new = old.clone();
        new.pages.push(Page::document("n", "New", "new", ""));
        if let PageKind::Document(d) = &mut new.page_mut("home").unwrap().kind {
            d.markdown = "changed\n".into();
        }
        new.page_mut("home").unwrap().title = "Start".into();
        let (c, _) = new.remove_page("c").unwrap();
        new.page_mut("g").unwrap().pages.insert(0, c);
        let (b, _) = new.remove_page("b").unwrap();
        new.pages.insert(1, b);
        new.remove_page("a");
        let changes = diff(&old, &new, &url);
        let v = serde_json::to_value(&changes).unwrap();
        assert_eq!(v[0]["type"], "page_edited");
        assert_eq!(
            v[0]["page"],
            json!({"id": "home", "type": "document", "title": "Start", "path": "home"})
        );
        assert_eq!(
            v[0]["attributes"]["title"],
            json!({"before": "Home", "after": "Start"})
        );
        assert!(v[0]["attributes"]["document"]["after"].is_string());
        assert_eq!(v[1]["type"], "page_moved");
        assert_eq!(v[1]["page"]["id"], "b");
        assert_eq!(v[1]["parent"]["before"]["id"], "g");
        assert!(v[1]["parent"].get("after").is_none());
        // c moved before its old siblings: a reorder under the same parent. Since a and b
        // left, c has no common sibling to compare with, so it does not count as moved.
        assert_eq!(v[2]["type"], "page_created");
        assert_eq!(
            v[3],
            json!({"type": "page_deleted", "page": {"id": "a", "type": "document", "title": "A", "path": "guides/a"}})
        );
        assert_eq!(changes.len(), 4);
    }

    #[test]
    fn reorders_are_moves_within_the_parent() {
        let old = base();
        let mut new = old.clone();
        new.page_mut("g").unwrap().pages.swap(0, 2);
        let changes = diff(&old, &new, &url);
        // Swapping first and last: the longest stable run is one element, two pages moved.
        let moved: Vec<&str> = changes
            .iter()
            .filter_map(|c| match c {
                SemanticChange::PageMoved { page, parent } => {
                    assert_eq!(parent.before, parent.after);
                    Some(page.id.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(moved.len(), 2);
    }

    #[test]
    fn files_variables_reusable() {
        let old = base();
        let mut new = old.clone();
        new.files[0].name = "g.png".into();
        new.files.push(File {
            id: "f2".into(),
            name: "x.pdf".into(),
            content_type: "application/pdf".into(),
            size: 9,
            dimensions: None,
            blob: "11".into(),
            git_oid: None,
        });
        new.variables.insert("v".into(), VariableValue::Bool(true));
        new.reusable_contents.push(ReusableContent {
            id: "r".into(),
            title: "R".into(),
            markdown: "x\n".into(),
        });
        let v = serde_json::to_value(diff(&old, &new, &url)).unwrap();
        assert_eq!(v[0]["type"], "file_edited");
        assert_eq!(
            v[0]["attributes"]["name"],
            json!({"before": "f.png", "after": "g.png"})
        );
        assert_eq!(v[0]["file"]["downloadURL"], "https://files.example/f");
        assert_eq!(v[1]["type"], "file_created");
        assert_eq!(
            v[2],
            json!({"type": "variables_edited", "variables": {"v": {"after": true}}})
        );
        assert_eq!(v[3]["type"], "reusable_content_created");
        assert_eq!(v[3]["reusableContent"]["id"], "r");
    }
}
