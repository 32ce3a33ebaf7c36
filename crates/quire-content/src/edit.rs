//! Authoring batches (`updateChangeRequestContent`): insert, update, delete and revert pages
//! and insert files, all or nothing.
//!
//! [`Change`] deserialises the official request items directly. Work happens on a copy of
//! the revision, so the input is untouched when any change is invalid; the error names the
//! change's index and the offending field. Links in markdown are resolved once the whole
//! batch is applied, so a page may link to a page inserted later in the same batch.
//!
//! The copy shares every document with the input (see
//! [`SharedDocument`](crate::model::SharedDocument)), and link resolution only visits the
//! branches of the tree that the links of the changed pages lead to, so a small batch costs
//! little more than copying the tree's page properties and validating it.

use std::cell::{Cell, OnceCell};
use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Deserializer};

use crate::document::Document;
use crate::frontmatter::{apply_frontmatter, split_page_markdown, Frontmatter};
use crate::markdown::{
    try_document_to_markdown, try_normalize_markdown_with, LinkResolver, LinkTarget,
};
use crate::model::{
    join_path, same_text, slugify, unique_slug, ContentRef, File, LinkPage, Page, PageCover,
    PageKind, PageLayout, Revision, VariableValue, Variables,
};

/// One item of the `changes` array.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub enum Change {
    /// `insert_page`.
    InsertPage(InsertPage),
    /// `update_page`.
    UpdatePage(UpdatePage),
    /// `delete_page`.
    DeletePage(DeletePage),
    /// `revert_page`.
    RevertPage(RevertPage),
    /// `insert_files`.
    InsertFiles(InsertFiles),
}

/// Page metadata settable by insert and update (official `RevisionPageUpdate`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageFields {
    /// Title.
    pub title: Option<String>,
    /// Slug in the parent.
    pub slug: Option<String>,
    /// Emoji; empty removes it.
    pub emoji: Option<String>,
    /// Icon; empty removes it.
    pub icon: Option<String>,
    /// Description; empty removes it.
    pub description: Option<String>,
    /// Hidden from the navigation.
    pub hidden: Option<bool>,
    /// Excluded from search.
    pub no_index: Option<bool>,
    /// Excluded from robots.
    pub no_robots_index: Option<bool>,
    /// Adaptive-content condition; empty removes it.
    pub condition: Option<String>,
    /// A document page's layout, given whole (a field left out takes its default).
    pub layout: Option<PageLayout>,
    /// A document page's cover; `null` removes it.
    #[serde(default, deserialize_with = "present")]
    pub cover: Option<Option<PageCover>>,
    /// A document page's variables, given whole.
    pub variables: Option<Variables>,
}

/// Most variables a page holds, and the longest name and text value.
const MAX_PAGE_VARIABLES: usize = 100;
const MAX_VARIABLE_NAME: usize = 64;
const MAX_VARIABLE_TEXT: usize = 1000;

/// A page's new content: markdown, a JSON document, or nothing (`{}`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum DocumentInput {
    /// `{markdown}`: frontmatter and a leading title heading are read as page properties.
    Markdown {
        /// The markdown.
        markdown: String,
    },
    /// `{document}`: the official JSON document.
    Json {
        /// The document.
        document: Document,
    },
    /// `{}`: an empty document.
    Empty {},
}

/// `insert_page`.
#[derive(Clone, Debug, Deserialize)]
pub struct InsertPage {
    /// Metadata.
    #[serde(flatten)]
    pub fields: PageFields,
    /// Parent page id (or batch ref); root when absent.
    #[serde(default)]
    pub into: Option<String>,
    /// Index among the siblings; appended when absent.
    #[serde(default)]
    pub at: Option<usize>,
    /// Batch-local name of the new page.
    #[serde(rename = "ref", default)]
    pub reference: Option<String>,
    /// Content.
    pub document: DocumentInput,
    /// Quire's extension: `group` or `link` inserts a group or a link page (`href`) instead
    /// of a document (`document` is then `{}`).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Where a link page points (`type: link`): an http(s) URL.
    #[serde(default)]
    pub href: Option<String>,
}

/// `update_page`.
#[derive(Clone, Debug, Deserialize)]
pub struct UpdatePage {
    /// Metadata.
    #[serde(flatten)]
    pub fields: PageFields,
    /// Page id (or batch ref).
    pub page: String,
    /// New content, when given.
    #[serde(default)]
    pub document: Option<DocumentInput>,
    /// New parent: absent = unchanged, `null` = root, a page id = under that page.
    #[serde(default, deserialize_with = "present")]
    pub into: Option<Option<String>>,
    /// New index among the siblings.
    #[serde(default)]
    pub at: Option<usize>,
}

/// `delete_page`.
#[derive(Clone, Debug, Deserialize)]
pub struct DeletePage {
    /// Page id (or batch ref).
    pub page: String,
}

/// `revert_page`.
#[derive(Clone, Debug, Deserialize)]
pub struct RevertPage {
    /// Page id (or batch ref).
    pub page: String,
    /// Revision to revert to; the change request's base when absent.
    #[serde(default)]
    pub revision: Option<String>,
    /// Block keys for a partial revert (not supported: rejected).
    #[serde(default)]
    pub block: Option<Vec<String>>,
}

/// `insert_files`.
#[derive(Clone, Debug, Deserialize)]
pub struct InsertFiles {
    /// The files.
    pub files: Vec<FileUpload>,
}

/// One file of `insert_files`. The server fetches or decodes the bytes, stores the blob and
/// fills `resolved` before calling [`apply_changes`], which stays free of I/O.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileUpload {
    /// Batch-local name of the file.
    #[serde(rename = "ref", default)]
    pub reference: Option<String>,
    /// File name.
    pub name: String,
    /// MIME type.
    #[serde(default)]
    pub content_type: Option<String>,
    /// Source URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Inline bytes.
    #[serde(default)]
    pub base64: Option<String>,
    /// The stored file, filled in by the server.
    #[serde(skip)]
    pub resolved: Option<File>,
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// What the engine needs besides the revision: revert sources and fresh ids.
pub struct ApplyContext<'a> {
    /// Revision `revert_page` uses when it names none (the change request's base).
    pub base: Option<&'a Revision>,
    /// Revisions `revert_page` may name, by revision id, loaded by the server beforehand.
    pub revisions: HashMap<String, &'a Revision>,
    /// Generates ids for new pages.
    pub new_id: &'a mut dyn FnMut() -> String,
}

/// What one change did, in order (official `ChangeRequestContentUpdateChange`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeResult {
    /// `created_page`.
    CreatedPage {
        /// The batch ref, when given.
        reference: Option<String>,
        /// New page id.
        page: String,
    },
    /// `updated_page`.
    UpdatedPage {
        /// Page id.
        page: String,
    },
    /// `deleted_page`.
    DeletedPage {
        /// Page id.
        page: String,
    },
}

/// The outcome of a successful batch.
#[derive(Clone, Debug)]
pub struct Applied {
    /// The new revision.
    pub revision: Revision,
    /// One or more results per change (revert may delete or create).
    pub results: Vec<ChangeResult>,
    /// Files inserted by the batch (official `insertedFiles`).
    pub inserted_files: Vec<File>,
}

/// An invalid change: the whole batch is rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("changes[{index}].{field}: {message}")]
pub struct EditError {
    /// Index of the change in the batch.
    pub index: usize,
    /// Offending field (`page`, `into`, `at`, `slug`, `document.markdown`, …).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn fail(index: usize, field: &str, message: impl Into<String>) -> EditError {
    EditError {
        index,
        field: field.into(),
        message: message.into(),
    }
}

/// Applies a batch to `rev` and returns the new revision; `rev` itself is never modified.
pub fn apply_changes(
    rev: &Revision,
    changes: &[Change],
    ctx: &mut ApplyContext<'_>,
) -> Result<Applied, EditError> {
    let mut b = Batch {
        work: rev.clone(),
        page_refs: HashMap::new(),
        file_refs: HashMap::new(),
        pending: Vec::new(),
        results: Vec::new(),
        inserted_files: Vec::new(),
    };
    for (index, change) in changes.iter().enumerate() {
        match change {
            Change::InsertPage(c) => b.insert(index, c, ctx)?,
            Change::UpdatePage(c) => b.update(index, c)?,
            Change::DeletePage(c) => {
                let id = b.page_id(index, "page", &c.page)?;
                b.work.remove_page(&id);
                b.results.push(ChangeResult::DeletedPage { page: id });
            }
            Change::RevertPage(c) => b.revert(index, c, ctx)?,
            Change::InsertFiles(c) => b.insert_files(index, c)?,
        }
    }
    b.resolve_links()?;
    if let Err(e) = b.work.validate() {
        return Err(fail(changes.len().saturating_sub(1), "page", e.to_string()));
    }
    Ok(Applied {
        revision: b.work,
        results: b.results,
        inserted_files: b.inserted_files,
    })
}

struct Batch {
    work: Revision,
    page_refs: HashMap<String, String>,
    file_refs: HashMap<String, String>,
    /// Pages whose markdown still needs link resolution.
    pending: Vec<PendingBody>,
    results: Vec<ChangeResult>,
    inserted_files: Vec<File>,
}

/// A page body waiting for link resolution.
struct PendingBody {
    /// The page.
    id: String,
    /// The body as given.
    raw: String,
    /// The change that gave it and the field it came from, to name them in errors.
    index: usize,
    field: &'static str,
}

/// Content read from a [`DocumentInput`].
struct Content {
    body: String,
    /// The request field the body came from.
    field: &'static str,
    heading: Option<String>,
    frontmatter: Frontmatter,
}

fn read_document(index: usize, doc: &DocumentInput) -> Result<Content, EditError> {
    Ok(match doc {
        DocumentInput::Markdown { markdown } => {
            let src = split_page_markdown(markdown)
                .map_err(|e| fail(index, "document.markdown", e.to_string()))?;
            Content {
                body: src.body,
                field: "document.markdown",
                heading: src.heading,
                frontmatter: src.frontmatter,
            }
        }
        DocumentInput::Json { document } => Content {
            body: try_document_to_markdown(document)
                .map_err(|e| fail(index, "document", e.to_string()))?,
            field: "document",
            heading: None,
            frontmatter: Frontmatter::default(),
        },
        DocumentInput::Empty {} => Content {
            body: String::new(),
            field: "document",
            heading: None,
            frontmatter: Frontmatter::default(),
        },
    })
}

fn valid_slug(slug: &str) -> bool {
    slug.len() <= 100
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
}

fn non_empty(v: &str) -> Option<String> {
    (!v.is_empty()).then(|| v.to_string())
}

/// A page's adaptive-content condition must parse and be able to yield a boolean.
fn check_condition(index: usize, page: &Page) -> Result<(), EditError> {
    match &page.condition {
        Some(c) => crate::condition::parse_condition(c)
            .map(|_| ())
            .map_err(|e| fail(index, "condition", e.to_string())),
        None => Ok(()),
    }
}

fn apply_fields(index: usize, page: &mut Page, f: &PageFields) -> Result<(), EditError> {
    if let Some(t) = &f.title {
        if t.trim().is_empty() {
            return Err(fail(index, "title", "must not be empty"));
        }
        page.title = t.clone();
    }
    if let Some(v) = &f.emoji {
        page.emoji = non_empty(v);
    }
    if let Some(v) = &f.icon {
        page.icon = non_empty(v);
    }
    if let Some(v) = &f.description {
        page.description = non_empty(v);
    }
    if let Some(v) = &f.condition {
        page.condition = non_empty(v);
    }
    if let Some(v) = f.hidden {
        page.hidden = v;
    }
    if let Some(v) = f.no_index {
        page.no_index = v;
    }
    if let Some(v) = f.no_robots_index {
        page.no_robots_index = v;
    }
    if f.layout.is_none() && f.cover.is_none() && f.variables.is_none() {
        return Ok(());
    }
    let field = match (&f.layout, &f.cover) {
        (Some(_), _) => "layout",
        (None, Some(_)) => "cover",
        (None, None) => "variables",
    };
    let PageKind::Document(doc) = &mut page.kind else {
        return Err(fail(index, field, "only document pages have one"));
    };
    if let Some(l) = &f.layout {
        if !matches!(l.width.as_str(), "default" | "wide") {
            return Err(fail(index, "layout.width", "must be `default` or `wide`"));
        }
        if !matches!(l.cover_size.as_str(), "hero" | "full" | "background") {
            return Err(fail(
                index,
                "layout.coverSize",
                "must be `hero`, `full` or `background`",
            ));
        }
        if !matches!(l.cover_mask.as_str(), "none" | "radial") {
            return Err(fail(
                index,
                "layout.coverMask",
                "must be `none` or `radial`",
            ));
        }
        doc.layout = l.clone();
    }
    if let Some(c) = &f.cover {
        if let Some(c) = c {
            for (name, r) in [("cover.ref", &c.reference), ("cover.refDark", &c.ref_dark)] {
                if let Some(ContentRef::Url { url }) = r {
                    if !(url.starts_with("https://") || url.starts_with("http://")) {
                        return Err(fail(index, name, "a URL must be http or https"));
                    }
                }
            }
        }
        doc.cover = c.clone();
    }
    if let Some(v) = &f.variables {
        if v.len() > MAX_PAGE_VARIABLES {
            return Err(fail(
                index,
                "variables",
                format!("at most {MAX_PAGE_VARIABLES} variables"),
            ));
        }
        for (name, value) in v {
            let bad_name = name.is_empty()
                || name.len() > MAX_VARIABLE_NAME
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if bad_name {
                return Err(fail(
                    index,
                    "variables",
                    format!("{name:?} is not a variable name (letters, digits, '_' and '-', at most {MAX_VARIABLE_NAME})"),
                ));
            }
            if matches!(value, VariableValue::String(t) if t.len() > MAX_VARIABLE_TEXT) {
                return Err(fail(
                    index,
                    "variables",
                    format!("{name:?} is longer than {MAX_VARIABLE_TEXT} bytes"),
                ));
            }
        }
        doc.variables = v.clone();
    }
    Ok(())
}

impl Batch {
    /// A page id from an id or a ref of this batch; the page must exist.
    fn page_id(&self, index: usize, field: &str, given: &str) -> Result<String, EditError> {
        let id = self
            .page_refs
            .get(given)
            .map(String::as_str)
            .unwrap_or(given);
        if self.work.page(id).is_some() {
            Ok(id.to_string())
        } else {
            Err(fail(
                index,
                field,
                format!("no page {given:?} in the revision"),
            ))
        }
    }

    /// Checks that `parent` can hold a page of this kind.
    fn check_parent(
        &self,
        index: usize,
        parent: Option<&str>,
        kind: &PageKind,
    ) -> Result<(), EditError> {
        let Some(parent) = parent else { return Ok(()) };
        let p = self
            .work
            .page(parent)
            .ok_or_else(|| fail(index, "into", "no such page"))?;
        if matches!(p.kind, PageKind::Link(_)) {
            return Err(fail(index, "into", "a link page cannot have children"));
        }
        if matches!(kind, PageKind::Group) {
            return Err(fail(index, "into", "groups can only be at the root"));
        }
        Ok(())
    }

    fn sibling_slugs(&self, parent: Option<&str>, except: &str) -> Vec<String> {
        self.work
            .children(parent)
            .map(|c| {
                c.iter()
                    .filter(|p| p.id != except && !p.slug.is_empty())
                    .map(|p| p.slug.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn insert(
        &mut self,
        index: usize,
        c: &InsertPage,
        ctx: &mut ApplyContext<'_>,
    ) -> Result<(), EditError> {
        let parent = match &c.into {
            Some(p) => Some(self.page_id(index, "into", p)?),
            None => None,
        };
        let content = read_document(index, &c.document)?;
        let mut page = Page::document("", "Untitled", "", "");
        apply_fields(index, &mut page, &c.fields)?;
        if let Some(h) = content.heading.as_ref().filter(|h| !h.is_empty()) {
            page.title = h.clone();
        }
        apply_frontmatter(&mut page, &content.frontmatter);
        check_condition(index, &page)?;
        match c.kind.as_deref() {
            None | Some("document") => {}
            Some("group") => page.kind = PageKind::Group,
            Some("link") => {
                let url = c
                    .href
                    .as_deref()
                    .map(str::trim)
                    .filter(|h| {
                        (h.starts_with("https://") || h.starts_with("http://")) && h.len() <= 2048
                    })
                    .ok_or_else(|| fail(index, "href", "a link page needs an http(s) URL"))?;
                page.kind = PageKind::Link(LinkPage {
                    target: ContentRef::Url { url: url.into() },
                });
            }
            Some(other) => {
                return Err(fail(
                    index,
                    "type",
                    format!("must be `document`, `group` or `link`, not {other:?}"),
                ))
            }
        }
        self.check_parent(index, parent.as_deref(), &page.kind)?;
        let taken = self.sibling_slugs(parent.as_deref(), "");
        page.slug = match &c.fields.slug {
            Some(s) => {
                if !valid_slug(s) {
                    return Err(fail(
                        index,
                        "slug",
                        "use lower-case letters, digits, '-', '_' and '.'",
                    ));
                }
                if taken.iter().any(|t| t == s) {
                    return Err(fail(
                        index,
                        "slug",
                        format!("{s:?} is already used by a sibling"),
                    ));
                }
                s.clone()
            }
            None if matches!(page.kind, PageKind::Link(_)) => String::new(),
            None => unique_slug(&slugify(&page.title), taken.iter().map(String::as_str)),
        };
        if let Some(r) = &c.reference {
            if r.is_empty() || self.page_refs.contains_key(r) || self.file_refs.contains_key(r) {
                return Err(fail(
                    index,
                    "ref",
                    format!("{r:?} is already used in this batch"),
                ));
            }
            let bare = r.trim_end_matches(".md");
            if path_exists(&self.work.pages, bare) {
                return Err(fail(
                    index,
                    "ref",
                    format!("{r:?} collides with an existing page path"),
                ));
            }
        }
        let len = self.work.children(parent.as_deref()).map_or(0, Vec::len);
        let at = c.at.unwrap_or(len);
        if at > len {
            return Err(fail(index, "at", format!("must be at most {len}")));
        }
        page.id = (ctx.new_id)();
        let id = page.id.clone();
        self.work
            .children_mut(parent.as_deref())
            .expect("parent checked")
            .insert(at, page);
        if let Some(r) = &c.reference {
            self.page_refs.insert(r.clone(), id.clone());
            self.page_refs
                .insert(format!("{}.md", r.trim_end_matches(".md")), id.clone());
        }
        if matches!(
            self.work.page(&id).map(|p| &p.kind),
            Some(PageKind::Document(_))
        ) {
            self.set_body(&id, content, index);
        }
        self.results.push(ChangeResult::CreatedPage {
            reference: c.reference.clone(),
            page: id,
        });
        Ok(())
    }

    fn set_body(&mut self, id: &str, content: Content, index: usize) {
        self.pending.retain(|p| p.id != id);
        self.pending.push(PendingBody {
            id: id.to_string(),
            raw: content.body,
            index,
            field: content.field,
        });
    }

    fn update(&mut self, index: usize, c: &UpdatePage) -> Result<(), EditError> {
        let id = self.page_id(index, "page", &c.page)?;
        let loc = self.work.locate(&id).expect("page exists");
        let mut page = self.work.page(&id).expect("page exists").without_children();
        apply_fields(index, &mut page, &c.fields)?;
        if let Some(doc) = &c.document {
            if !matches!(page.kind, PageKind::Document(_)) {
                return Err(fail(
                    index,
                    "document",
                    "only document pages have a document",
                ));
            }
            let content = read_document(index, doc)?;
            if let Some(h) = content.heading.as_ref().filter(|h| !h.is_empty()) {
                page.title = h.clone();
            }
            apply_frontmatter(&mut page, &content.frontmatter);
            self.set_body(&id, content, index);
        }
        check_condition(index, &page)?;
        // Where the page goes.
        let (parent, moved) = match &c.into {
            None => (loc.parent.clone(), false),
            Some(None) => (None, loc.parent.is_some()),
            Some(Some(p)) => {
                let target = self.page_id(index, "into", p)?;
                if self.work.subtree_ids(&id).contains(&target) {
                    return Err(fail(
                        index,
                        "into",
                        "a page cannot move under itself or its descendants",
                    ));
                }
                let moved = loc.parent.as_deref() != Some(target.as_str());
                (Some(target), moved)
            }
        };
        self.check_parent(index, parent.as_deref(), &page.kind)?;
        let taken = self.sibling_slugs(parent.as_deref(), &id);
        if let Some(s) = &c.fields.slug {
            if !valid_slug(s) {
                return Err(fail(
                    index,
                    "slug",
                    "use lower-case letters, digits, '-', '_' and '.'",
                ));
            }
            page.slug = s.clone();
        }
        if !page.slug.is_empty() && taken.contains(&page.slug) {
            return Err(fail(
                index,
                "slug",
                format!("{:?} is already used by a sibling", page.slug),
            ));
        }
        let (mut node, _) = self.work.remove_page(&id).expect("page exists");
        let siblings = self.work.children(parent.as_deref()).map_or(0, Vec::len);
        let at = match (c.at, moved) {
            (Some(at), _) => at,
            (None, false) => loc.index,
            (None, true) => siblings,
        };
        if at > siblings {
            // Put the page back before failing: the batch works on a copy anyway, but keep
            // the copy coherent for clarity.
            self.work
                .children_mut(loc.parent.as_deref())
                .expect("parent exists")
                .insert(loc.index, node);
            return Err(fail(index, "at", format!("must be at most {siblings}")));
        }
        page.pages = std::mem::take(&mut node.pages);
        self.work
            .children_mut(parent.as_deref())
            .expect("parent checked")
            .insert(at, page);
        self.results.push(ChangeResult::UpdatedPage { page: id });
        Ok(())
    }

    fn revert(
        &mut self,
        index: usize,
        c: &RevertPage,
        ctx: &ApplyContext<'_>,
    ) -> Result<(), EditError> {
        if c.block.is_some() {
            return Err(fail(index, "block", "block-level revert is not supported"));
        }
        let source = match &c.revision {
            Some(r) => *ctx
                .revisions
                .get(r)
                .ok_or_else(|| fail(index, "revision", format!("unknown revision {r:?}")))?,
            None => ctx
                .base
                .ok_or_else(|| fail(index, "revision", "no base revision to revert to"))?,
        };
        let id = self
            .page_refs
            .get(&c.page)
            .cloned()
            .unwrap_or_else(|| c.page.clone());
        match (source.page(&id), self.work.page(&id).is_some()) {
            (Some(old), true) => {
                // Reset properties and body; keep position and children.
                let page = self.work.page_mut(&id).expect("present");
                let children = std::mem::take(&mut page.pages);
                let slug = page.slug.clone();
                *page = old.without_children();
                page.pages = children;
                let loc = self.work.locate(&id).expect("present");
                let taken = self.sibling_slugs(loc.parent.as_deref(), &id);
                if taken.contains(&self.work.page(&id).expect("present").slug) {
                    self.work.page_mut(&id).expect("present").slug = slug;
                }
                self.pending.retain(|p| p.id != id);
                self.results.push(ChangeResult::UpdatedPage { page: id });
            }
            (Some(old), false) => {
                let loc = source.locate(&id).expect("present in source");
                let parent = loc.parent.filter(|p| self.work.page(p).is_some());
                let mut restored = old.clone();
                let mut existing = HashSet::new();
                collect_ids(&self.work.pages, &mut existing);
                prune(&mut restored, &existing);
                drop(existing);
                let taken = self.sibling_slugs(parent.as_deref(), &id);
                if !restored.slug.is_empty() {
                    restored.slug = unique_slug(&restored.slug, taken.iter().map(String::as_str));
                }
                let list = self
                    .work
                    .children_mut(parent.as_deref())
                    .expect("parent exists");
                let at = loc.index.min(list.len());
                list.insert(at, restored);
                self.results.push(ChangeResult::CreatedPage {
                    reference: None,
                    page: id,
                });
            }
            (None, true) => {
                self.work.remove_page(&id);
                self.pending.retain(|p| p.id != id);
                self.results.push(ChangeResult::DeletedPage { page: id });
            }
            (None, false) => {
                return Err(fail(
                    index,
                    "page",
                    format!("no page {:?} in either revision", c.page),
                ))
            }
        }
        Ok(())
    }

    fn insert_files(&mut self, index: usize, c: &InsertFiles) -> Result<(), EditError> {
        if c.files.is_empty() || c.files.len() > 20 {
            return Err(fail(index, "files", "between 1 and 20 files"));
        }
        for (i, f) in c.files.iter().enumerate() {
            let field = format!("files[{i}]");
            let file = f
                .resolved
                .clone()
                .ok_or_else(|| fail(index, &field, "file was not uploaded"))?;
            if self.work.file(&file.id).is_some() {
                return Err(fail(
                    index,
                    &field,
                    format!("file id {:?} already exists", file.id),
                ));
            }
            if let Some(r) = &f.reference {
                if r.is_empty() || self.file_refs.contains_key(r) || self.page_refs.contains_key(r)
                {
                    return Err(fail(
                        index,
                        &format!("{field}.ref"),
                        format!("{r:?} is already used in this batch"),
                    ));
                }
                self.file_refs.insert(r.clone(), file.id.clone());
            }
            self.work.files.push(file.clone());
            self.inserted_files.push(file);
        }
        Ok(())
    }

    /// Parses the pending bodies with their links resolved; fails on a body nested too deeply.
    fn resolve_links(&mut self) -> Result<(), EditError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let index = LinkIndex::new(&self.work);
        let mut bodies = Vec::new();
        for p in &self.pending {
            let Some(dir) = index.dir(&p.id) else {
                continue;
            };
            let resolver = BatchLinks {
                index: &index,
                page_refs: &self.page_refs,
                file_refs: &self.file_refs,
                dir: &dir,
            };
            let body = try_normalize_markdown_with(&p.raw, &resolver)
                .map_err(|e| fail(p.index, p.field, e.to_string()))?;
            bodies.push((p.id.clone(), body));
        }
        for (id, body) in bodies {
            if let Some(PageKind::Document(d)) = self.work.page_mut(&id).map(|p| &mut p.kind) {
                d.markdown = body;
            }
        }
        self.pending.clear();
        Ok(())
    }
}

/// Drops the descendants that exist elsewhere in the revision, so a restore duplicates nothing.
fn prune(page: &mut Page, existing: &HashSet<&str>) {
    page.pages.retain(|c| !existing.contains(c.id.as_str()));
    for c in &mut page.pages {
        prune(c, existing);
    }
}

fn collect_ids<'a>(pages: &'a [Page], out: &mut HashSet<&'a str>) {
    for p in pages {
        out.insert(&p.id);
        collect_ids(&p.pages, out);
    }
}

/// Whether some page's derived path is `target`. Only the branches whose path leads to it
/// are visited, and no path is allocated.
fn path_exists(pages: &[Page], target: &str) -> bool {
    fn walk(pages: &[Page], path: &mut String, target: &str) -> bool {
        let parent_len = path.len();
        for p in pages {
            // As `join_path`: an empty slug adds nothing.
            if !p.slug.is_empty() {
                if parent_len > 0 {
                    path.push('/');
                }
                path.push_str(&p.slug);
            }
            let found = path == target || (leads_to(path, target) && walk(&p.pages, path, target));
            path.truncate(parent_len);
            if found {
                return true;
            }
        }
        false
    }
    walk(pages, &mut String::new(), target)
}

/// Whether pages below one with path `path` may have path `target`.
fn leads_to(path: &str, target: &str) -> bool {
    path.is_empty()
        || target
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// How many pages link lookups may visit in all before the link index builds its table of
/// every page path (which costs about as much as visiting every page a few times).
const WALK_BUDGET: usize = 20_000;

/// Looks the first page (in navigation order, link pages aside) whose path is one of the
/// candidates up, visiting only the branches whose path leads to one. `Some(None)` when there
/// is none, `None` when the walk would visit more than `visits` pages.
fn walk_to<'p>(
    pages: &'p [Page],
    candidates: &[Option<&str>],
    path: &mut String,
    visits: &mut usize,
) -> Option<Option<&'p str>> {
    let parent_len = path.len();
    for p in pages {
        *visits = visits.checked_sub(1)?;
        if !p.slug.is_empty() {
            if parent_len > 0 {
                path.push('/');
            }
            path.push_str(&p.slug);
        }
        let found =
            if !matches!(p.kind, PageKind::Link(_)) && candidates.contains(&Some(path.as_str())) {
                Some(Some(p.id.as_str()))
            } else if candidates
                .iter()
                .flatten()
                .any(|c| *c == path || leads_to(path, c))
            {
                walk_to(&p.pages, candidates, path, visits)
            } else {
                Some(None)
            };
        path.truncate(parent_len);
        match found {
            Some(None) => {}
            other => return other,
        }
    }
    Some(None)
}

/// The page tree seen as Git Sync files: every way a link may name a page.
///
/// Its tables are built on first use: most batches resolve few links (and many none), and
/// building them costs a walk over every page of the revision.
struct LinkIndex<'a> {
    rev: &'a Revision,
    /// The path of every page except link pages, to its position in navigation order and
    /// its id; the first page in navigation order wins a path.
    paths: OnceCell<HashMap<String, (usize, &'a str)>>,
    /// Pages left to visit walking to paths before building `paths` instead.
    visits: Cell<usize>,
    page_ids: OnceCell<HashSet<&'a str>>,
    file_ids: OnceCell<HashSet<&'a str>>,
}

impl<'a> LinkIndex<'a> {
    fn new(rev: &'a Revision) -> LinkIndex<'a> {
        LinkIndex {
            rev,
            paths: OnceCell::new(),
            visits: Cell::new(WALK_BUDGET),
            page_ids: OnceCell::new(),
            file_ids: OnceCell::new(),
        }
    }

    /// The page a Git Sync path names: the page at that slug path, at that path plus `.md`
    /// or at that path plus `/README.md` (the first in navigation order, a plain path
    /// before its `.md` and `README.md` forms); `README.md` is the first page.
    fn page_at(&self, key: &str) -> Option<&'a str> {
        if key == "README.md" {
            // Git Sync writes the first page as the space's README.md.
            if let Some(first) = self.rev.pages.first() {
                if !matches!(first.kind, PageKind::Link(_)) {
                    return Some(&first.id);
                }
            }
        }
        let candidates = [
            Some(key),
            key.strip_suffix(".md"),
            key.strip_suffix("/README.md"),
        ];
        if self.paths.get().is_none() {
            // While few pages have been visited, walk the branches leading to the
            // candidates rather than building the table of every path.
            let mut visits = self.visits.get();
            let found = walk_to(
                &self.rev.pages,
                &candidates,
                &mut String::new(),
                &mut visits,
            );
            self.visits.set(visits);
            if let Some(found) = found {
                return found;
            }
        }
        let paths = self.paths();
        let mut best: Option<((usize, u8), &str)> = None;
        for (form, path) in candidates.into_iter().enumerate() {
            if let Some(&(n, id)) = path.and_then(|p| paths.get(p)) {
                let rank = (n, form as u8);
                match best {
                    Some((b, _)) if b <= rank => {}
                    _ => best = Some((rank, id)),
                }
            }
        }
        best.map(|(_, id)| id)
    }

    fn paths(&self) -> &HashMap<String, (usize, &'a str)> {
        self.paths.get_or_init(|| {
            fn walk<'p>(
                pages: &'p [Page],
                parent: &str,
                n: &mut usize,
                paths: &mut HashMap<String, (usize, &'p str)>,
            ) {
                for p in pages {
                    let path = join_path(parent, &p.slug);
                    let at = *n;
                    *n += 1;
                    walk(&p.pages, &path, n, paths);
                    if !matches!(p.kind, PageKind::Link(_)) {
                        // The first page in navigation order wins (children were visited
                        // first, to reuse the path without copying it).
                        let entry = paths.entry(path).or_insert((at, &p.id));
                        if at < entry.0 {
                            *entry = (at, &p.id);
                        }
                    }
                }
            }
            let mut paths = HashMap::new();
            walk(&self.rev.pages, "", &mut 0, &mut paths);
            paths
        })
    }

    fn has_page(&self, id: &str) -> bool {
        self.page_ids
            .get_or_init(|| {
                let mut ids = HashSet::new();
                collect_ids(&self.rev.pages, &mut ids);
                ids
            })
            .contains(id)
    }

    fn has_file(&self, id: &str) -> bool {
        self.file_ids
            .get_or_init(|| self.rev.files.iter().map(|f| f.id.as_str()).collect())
            .contains(id)
    }

    /// The directory of a page's markdown file, for its relative links; `None` for link
    /// pages and pages not in the tree.
    fn dir(&self, id: &str) -> Option<String> {
        fn find<'p>(pages: &'p [Page], id: &str, path: &mut String) -> Option<&'p Page> {
            let parent_len = path.len();
            for p in pages {
                if !p.slug.is_empty() {
                    if parent_len > 0 {
                        path.push('/');
                    }
                    path.push_str(&p.slug);
                }
                if same_text(&p.id, id) {
                    return Some(p);
                }
                if let Some(found) = find(&p.pages, id, path) {
                    return Some(found);
                }
                path.truncate(parent_len);
            }
            None
        }
        let mut path = String::new();
        let page = find(&self.rev.pages, id, &mut path)?;
        if matches!(page.kind, PageKind::Link(_)) {
            return None;
        }
        let folder = !page.pages.is_empty() || matches!(page.kind, PageKind::Group);
        let first = self
            .rev
            .pages
            .first()
            .is_some_and(|f| std::ptr::eq(f, page));
        Some(if folder {
            path
        } else if first {
            // Git Sync writes the first page as README.md, at the top.
            String::new()
        } else {
            path.rsplit_once('/')
                .map(|(d, _)| d.to_string())
                .unwrap_or_default()
        })
    }
}

struct BatchLinks<'a, 'r> {
    index: &'a LinkIndex<'r>,
    page_refs: &'a HashMap<String, String>,
    file_refs: &'a HashMap<String, String>,
    dir: &'a str,
}

fn page_target(id: &str, anchor: Option<&str>) -> LinkTarget {
    LinkTarget::Ref(match anchor.filter(|a| !a.is_empty()) {
        Some(a) => ContentRef::Anchor {
            anchor: a.into(),
            page: Some(id.into()),
            space: None,
        },
        None => ContentRef::Page {
            page: id.into(),
            space: None,
        },
    })
}

/// Resolves `.` and `..` segments; `None` when the path climbs above the root.
fn normalize_path(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

impl LinkResolver for BatchLinks<'_, '_> {
    /// `{% include %}` names a reusable content of the revision by id
    /// (`/reusable-contents/<id>`) or, as Git Sync writes it, by the path of its file
    /// under `.gitbook/includes/`, whose name is the slug of its title.
    fn include(&self, path: &str) -> Option<String> {
        let contents = &self.index.rev.reusable_contents;
        if let Some(id) = path.strip_prefix("/reusable-contents/") {
            return contents.iter().find(|r| r.id == id).map(|r| r.id.clone());
        }
        let file = path.rsplit('/').next()?.strip_suffix(".md")?;
        if !path.contains(".gitbook/includes/") {
            return None;
        }
        contents
            .iter()
            .find(|r| slugify(&r.title) == file || r.id == file)
            .map(|r| r.id.clone())
    }

    fn resolve(&self, href: &str) -> Option<LinkTarget> {
        if href.is_empty()
            || href.starts_with('#')
            || href.contains("://")
            || href.starts_with("mailto:")
        {
            return None;
        }
        let (path, anchor) = match href.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (href, None),
        };
        let find = |p: &str| -> Option<LinkTarget> {
            let p = p.trim_end_matches('/');
            if let Some(id) = self.page_refs.get(p) {
                return Some(page_target(id, anchor));
            }
            if let Some(id) = self.file_refs.get(p) {
                return Some(LinkTarget::Ref(ContentRef::File { file: id.clone() }));
            }
            self.index.page_at(p).map(|id| page_target(id, anchor))
        };
        if let Some(rest) = path.strip_prefix("/pages/") {
            if self.index.has_page(rest) {
                return Some(page_target(rest, anchor));
            }
            return find(rest);
        }
        if let Some(rest) = path.strip_prefix("/files/") {
            if self.index.has_file(rest) {
                return Some(LinkTarget::Ref(ContentRef::File { file: rest.into() }));
            }
            return find(rest);
        }
        if path.starts_with('/') || path.contains(':') {
            // Other absolute paths and schemes are URLs.
            return None;
        }
        let bare = path.strip_prefix("./").unwrap_or(path);
        if let Some(t) = find(bare) {
            return Some(t);
        }
        let joined = normalize_path(&join_path(self.dir, path))?;
        // A destination that names nothing stays as written (the default reading): a
        // broken link the links listing reports, not text that silently lost its target.
        find(&joined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Revision {
        let mut guides = Page::document("g", "Guides", "guides", "Guides intro.\n");
        guides.pages.push(Page::document(
            "gs",
            "Getting started",
            "getting-started",
            "Start here.\n",
        ));
        guides
            .pages
            .push(Page::document("adv", "Advanced", "advanced", "Deep.\n"));
        Revision {
            pages: vec![Page::document("home", "Home", "home", "Welcome.\n"), guides],
            ..Revision::default()
        }
    }

    fn changes(v: serde_json::Value) -> Vec<Change> {
        serde_json::from_value(v).unwrap()
    }

    fn run(rev: &Revision, v: serde_json::Value) -> Result<Applied, EditError> {
        let mut n = 0;
        let mut new_id = || {
            n += 1;
            format!("new{n}")
        };
        let mut ctx = ApplyContext {
            base: Some(rev),
            revisions: HashMap::new(),
            new_id: &mut new_id,
        };
        apply_changes(rev, &changes(v), &mut ctx)
    }

    #[test]
    fn insert_with_frontmatter_heading_and_placement() {
        let rev = base();
        let out = run(
            &rev,
            json!([{
                "operation": "insert_page",
                "into": "g",
                "at": 1,
                "title": "Ignored",
                "document": {"markdown": "---\ndescription: About it\nhidden: true\n---\n# Installation\n\nRun it.\n"}
            }]),
        )
        .unwrap();
        let g = out.revision.page("g").unwrap();
        assert_eq!(g.pages[1].id, "new1");
        let p = &g.pages[1];
        assert_eq!(p.title, "Installation");
        assert_eq!(p.slug, "installation");
        assert_eq!(p.description.as_deref(), Some("About it"));
        assert!(p.hidden);
        assert_eq!(p.markdown(), Some("Run it.\n"));
        assert_eq!(
            out.results,
            vec![ChangeResult::CreatedPage {
                reference: None,
                page: "new1".into()
            }]
        );
        assert_eq!(out.revision.path_of("new1").unwrap(), "guides/installation");
    }

    #[test]
    fn refs_and_link_resolution() {
        let rev = base();
        let out = run(
            &rev,
            json!([
                {"operation": "insert_page", "ref": "a", "title": "A",
                 "document": {"markdown": "See [B](./b.md), [start](/pages/guides/getting-started), [adv](/pages/guides/advanced.md#deep), [home](/pages/README.md), [id](/pages/gs), [ext](https://x.y), [missing](./nope.md) and ![pic](./logo)."}},
                {"operation": "insert_page", "ref": "b", "title": "B", "into": "g",
                 "document": {"markdown": "Back to [A](../a.md) and [sibling](./advanced.md) and [parent](../guides.md)."}},
                {"operation": "insert_files", "files": [{"ref": "logo", "name": "logo.png", "url": "https://x.y/logo.png"}]}
            ]),
        );
        // Files must be resolved by the server first.
        let err = out.unwrap_err();
        assert_eq!((err.index, err.field.as_str()), (2, "files[0]"));

        let mut batch = changes(json!([
            {"operation": "insert_page", "ref": "a", "title": "A",
             "document": {"markdown": "See [B](./b.md), [start](/pages/guides/getting-started), [adv](/pages/guides/advanced.md#deep), [home](/pages/README.md), [id](/pages/gs), [ext](https://x.y), [missing](./nope.md) and ![pic](./logo)."}},
            {"operation": "insert_page", "ref": "b", "title": "B", "into": "g",
             "document": {"markdown": "Back to [A](../a.md) and [sibling](./advanced.md) and [parent](../guides.md)."}},
            {"operation": "insert_files", "files": [{"ref": "logo", "name": "logo.png", "url": "https://x.y/logo.png"}]}
        ]));
        if let Change::InsertFiles(f) = &mut batch[2] {
            f.files[0].resolved = Some(File {
                id: "file1".into(),
                name: "logo.png".into(),
                content_type: "image/png".into(),
                size: 3,
                dimensions: None,
                blob: "ab".repeat(32),
                git_oid: None,
            });
        }
        let mut n = 0;
        let mut new_id = || {
            n += 1;
            format!("new{n}")
        };
        let mut ctx = ApplyContext {
            base: Some(&rev),
            revisions: HashMap::new(),
            new_id: &mut new_id,
        };
        let out = apply_changes(&rev, &batch, &mut ctx).unwrap();
        let a = out.revision.page("new1").unwrap().markdown().unwrap();
        assert_eq!(
            a,
            "See [B](/pages/new2), [start](/pages/gs), [adv](/pages/adv#deep), [home](/pages/home), [id](/pages/gs), [ext](https://x.y), [missing](./nope.md) and ![pic](/files/file1).\n"
        );
        let b = out.revision.page("new2").unwrap().markdown().unwrap();
        assert_eq!(
            b,
            "Back to [A](/pages/new1) and [sibling](/pages/adv) and [parent](/pages/g).\n"
        );
        assert_eq!(out.inserted_files.len(), 1);
        assert_eq!(out.revision.files.len(), 1);
    }

    #[test]
    fn update_moves_renames_and_reorders() {
        let rev = base();
        let out = run(
            &rev,
            json!([
                {"operation": "update_page", "page": "adv", "into": null, "at": 0, "title": "Advanced topics"},
                {"operation": "update_page", "page": "gs", "slug": "start", "emoji": "1f680"},
                {"operation": "update_page", "page": "home", "document": {"markdown": "# Welcome home\n\nNew body.\n"}}
            ]),
        )
        .unwrap();
        let r = &out.revision;
        assert_eq!(
            r.pages.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            vec!["adv", "home", "g"]
        );
        assert_eq!(r.page("adv").unwrap().title, "Advanced topics");
        assert_eq!(r.page("adv").unwrap().slug, "advanced");
        assert_eq!(r.path_of("gs").unwrap(), "guides/start");
        assert_eq!(r.page("gs").unwrap().emoji.as_deref(), Some("1f680"));
        assert_eq!(r.page("home").unwrap().title, "Welcome home");
        assert_eq!(r.page("home").unwrap().markdown(), Some("New body.\n"));
        // Reorder within the same parent.
        let out = run(
            &rev,
            json!([{"operation": "update_page", "page": "adv", "at": 0}]),
        )
        .unwrap();
        assert_eq!(out.revision.page("g").unwrap().pages[0].id, "adv");
    }

    #[test]
    fn update_sets_a_document_pages_layout_cover_and_variables() {
        let rev = base();
        let out = run(
            &rev,
            json!([{"operation": "update_page", "page": "home",
                "layout": {"width": "wide", "title": false, "outline": false},
                "cover": {"ref": {"kind": "url", "url": "https://example.com/c.png"}},
                "variables": {"product": "Quire", "beta": true}}]),
        )
        .unwrap();
        let PageKind::Document(doc) = &out.revision.page("home").unwrap().kind else {
            panic!("a document page");
        };
        assert_eq!(doc.layout.width, "wide");
        assert!(!doc.layout.title && !doc.layout.outline);
        assert!(doc.layout.description, "a field left out takes its default");
        assert!(doc.cover.is_some());
        assert_eq!(doc.variables.len(), 2);
        let cleared = run(
            &out.revision,
            json!([{"operation": "update_page", "page": "home", "cover": null, "variables": {}}]),
        )
        .unwrap();
        let PageKind::Document(doc) = &cleared.revision.page("home").unwrap().kind else {
            panic!("a document page");
        };
        assert!(doc.cover.is_none() && doc.variables.is_empty());
        assert_eq!(doc.layout.width, "wide", "left as it was");
        for (change, field) in [
            (json!({"layout": {"width": "huge"}}), "layout.width"),
            (
                json!({"cover": {"ref": {"kind": "url", "url": "javascript:alert(1)"}}}),
                "cover.ref",
            ),
            (json!({"variables": {"no spaces": "x"}}), "variables"),
        ] {
            let mut c = json!({"operation": "update_page", "page": "home"});
            for (k, v) in change.as_object().unwrap() {
                c[k] = v.clone();
            }
            let err = run(&rev, json!([c])).unwrap_err();
            assert_eq!(err.field, field, "{err:?}");
        }
    }

    #[test]
    fn invalid_changes_name_index_and_field() {
        let rev = base();
        let cases = [
            (
                json!([{"operation": "delete_page", "page": "home"}, {"operation": "update_page", "page": "home", "title": "x"}]),
                1,
                "page",
            ),
            (
                json!([{"operation": "insert_page", "into": "nope", "document": {}}]),
                0,
                "into",
            ),
            (
                json!([{"operation": "insert_page", "at": 9, "document": {}}]),
                0,
                "at",
            ),
            (
                json!([{"operation": "insert_page", "slug": "home", "document": {}}]),
                0,
                "slug",
            ),
            (
                json!([{"operation": "insert_page", "slug": "Bad Slug", "document": {}}]),
                0,
                "slug",
            ),
            (
                json!([{"operation": "update_page", "page": "g", "into": "gs"}]),
                0,
                "into",
            ),
            (
                json!([{"operation": "update_page", "page": "gs", "title": ""}]),
                0,
                "title",
            ),
            (
                json!([{"operation": "update_page", "page": "adv", "into": null, "slug": "home"}]),
                0,
                "slug",
            ),
            (
                json!([{"operation": "insert_page", "ref": "x", "document": {}}, {"operation": "insert_page", "ref": "x", "document": {}}]),
                1,
                "ref",
            ),
            (
                json!([{"operation": "insert_page", "document": {"markdown": "---\nbad line\n---\n"}}]),
                0,
                "document.markdown",
            ),
            (
                json!([{"operation": "revert_page", "page": "gs", "block": ["k"]}]),
                0,
                "block",
            ),
        ];
        for (batch, index, field) in cases {
            let before = rev.clone();
            let err = run(&rev, batch.clone()).unwrap_err();
            assert_eq!((err.index, err.field.as_str()), (index, field), "{batch}");
            assert_eq!(rev, before);
        }
    }

    #[test]
    fn refs_work_as_page_ids_later_in_the_batch() {
        let rev = base();
        let out = run(
            &rev,
            json!([
                {"operation": "insert_page", "ref": "parent", "title": "Parent", "document": {}},
                {"operation": "insert_page", "into": "parent", "title": "Child", "document": {"markdown": "x"}},
                {"operation": "update_page", "page": "parent", "emoji": "2705"}
            ]),
        )
        .unwrap();
        let p = out.revision.page("new1").unwrap();
        assert_eq!(p.pages[0].id, "new2");
        assert_eq!(p.emoji.as_deref(), Some("2705"));
    }

    #[test]
    fn revert_restores_resets_and_removes() {
        let rev = base();
        let mut changed = rev.clone();
        changed.remove_page("adv");
        changed.page_mut("gs").unwrap().title = "Changed".into();
        changed
            .pages
            .push(Page::document("extra", "Extra", "extra", ""));
        let mut new_id = || "unused".to_string();
        let mut ctx = ApplyContext {
            base: Some(&rev),
            revisions: HashMap::new(),
            new_id: &mut new_id,
        };
        let batch = changes(json!([
            {"operation": "revert_page", "page": "adv"},
            {"operation": "revert_page", "page": "gs"},
            {"operation": "revert_page", "page": "extra"}
        ]));
        let out = apply_changes(&changed, &batch, &mut ctx).unwrap();
        assert_eq!(out.revision, rev);
    }

    #[test]
    fn includes_resolve_to_reusable_contents() {
        let mut rev = base();
        rev.reusable_contents.push(crate::model::ReusableContent {
            id: "rc1".into(),
            title: "Support banner".into(),
            markdown: "Need help?\n".into(),
        });
        let applied = run(
            &rev,
            json!([{ "operation": "update_page", "page": "gs", "document": { "markdown":
                "{% include \"../.gitbook/includes/support-banner.md\" %}\n\n{% include \"/reusable-contents/rc1\" %}\n\n{% include \".gitbook/includes/unknown.md\" %}\n" } }]),
        )
        .unwrap();
        let md = applied
            .revision
            .page("gs")
            .unwrap()
            .markdown()
            .unwrap()
            .to_string();
        assert_eq!(
            md,
            "{% include \"/reusable-contents/rc1\" %}\n\n{% include \"/reusable-contents/rc1\" %}\n\n{% include \".gitbook/includes/unknown.md\" %}\n"
        );
    }

    #[test]
    fn json_documents_are_accepted() {
        let rev = base();
        let out = run(
            &rev,
            json!([{"operation": "update_page", "page": "home", "document": {"document": {
                "object": "document", "data": {},
                "nodes": [{"object": "block", "type": "paragraph", "data": {}, "nodes": [
                    {"object": "text", "leaves": [{"object": "leaf", "text": "Hi ", "marks": []},
                                                  {"object": "leaf", "text": "there", "marks": [{"object": "mark", "type": "bold"}]}]}
                ]}]
            }}}]),
        )
        .unwrap();
        assert_eq!(
            out.revision.page("home").unwrap().markdown(),
            Some("Hi **there**\n")
        );
    }

    /// The Git Sync paths of every page as the link index defined them before it was built
    /// lazily: `(path → id, id → dir)`.
    fn reference_index(rev: &Revision) -> (HashMap<String, String>, HashMap<String, String>) {
        let mut by_path = HashMap::new();
        let mut dirs = HashMap::new();
        for (n, f) in rev.flatten().iter().enumerate() {
            let id = f.page.id.clone();
            if matches!(f.page.kind, PageKind::Link(_)) {
                continue;
            }
            let folder = !f.page.pages.is_empty() || matches!(f.page.kind, PageKind::Group);
            by_path.entry(f.path.clone()).or_insert_with(|| id.clone());
            by_path
                .entry(format!("{}.md", f.path))
                .or_insert_with(|| id.clone());
            by_path
                .entry(format!("{}/README.md", f.path))
                .or_insert_with(|| id.clone());
            let dir = if folder {
                f.path.clone()
            } else {
                f.path
                    .rsplit_once('/')
                    .map(|(d, _)| d.to_string())
                    .unwrap_or_default()
            };
            if n == 0 {
                by_path.insert("README.md".into(), id.clone());
                if !folder {
                    dirs.insert(id, String::new());
                    continue;
                }
            }
            dirs.insert(id, dir);
        }
        (by_path, dirs)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, failure_persistence: None, ..Default::default() })]

        /// Lookups in the lazy link index agree with the complete tables, for trees with
        /// empty slugs, slugs that look like file names, link pages and repeated paths.
        #[test]
        fn link_index_matches_the_complete_tables(
            shape in proptest::collection::vec(
                (0usize..6, 0usize..3, proptest::collection::vec((0usize..6, 0usize..3), 0..4)),
                1..6,
            ),
        ) {
            const SLUGS: [&str; 6] = ["", "a", "a.md", "README", "b", "a/b"];
            let kind = |k: usize, id: &str, slug: &str| match k {
                0 => Page::document(id, id, slug, ""),
                1 => Page::group(id, id, slug),
                _ => {
                    let mut l = Page::link(id, id, ContentRef::Url { url: "https://x".into() });
                    l.slug = slug.into();
                    l
                }
            };
            let rev = Revision {
                pages: shape
                    .iter()
                    .enumerate()
                    .map(|(i, (s, k, kids))| {
                        let mut p = kind(*k, &format!("r{i}"), SLUGS[*s]);
                        p.pages = kids
                            .iter()
                            .enumerate()
                            .map(|(j, (s, k))| kind(*k, &format!("r{i}c{j}"), SLUGS[*s]))
                            .collect();
                        p
                    })
                    .collect(),
                ..Revision::default()
            };
            let (by_path, dirs) = reference_index(&rev);
            let index = LinkIndex::new(&rev);
            // The same lookups with the table of every path built at once.
            let table = LinkIndex::new(&rev);
            table.visits.set(0);
            let mut keys: Vec<String> = by_path.keys().cloned().collect();
            for s in SLUGS {
                keys.push(s.to_string());
                keys.push(format!("{s}.md"));
                keys.push(format!("{s}/README.md"));
                keys.push(format!("a/{s}"));
            }
            keys.push("README.md".into());
            for key in &keys {
                proptest::prop_assert_eq!(index.page_at(key), by_path.get(key).map(String::as_str), "{}", key);
                proptest::prop_assert_eq!(table.page_at(key), by_path.get(key).map(String::as_str), "{}", key);
            }
            for f in rev.flatten() {
                proptest::prop_assert_eq!(index.dir(&f.page.id), dirs.get(&f.page.id).cloned());
                proptest::prop_assert!(path_exists(&rev.pages, &f.path));
            }
            proptest::prop_assert!(!path_exists(&rev.pages, "zzz"));
            proptest::prop_assert!(index.paths.get().is_none(), "small trees never need the table");
            proptest::prop_assert!(table.paths.get().is_some());
        }
    }
}
