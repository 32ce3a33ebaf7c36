//! Links and backlinks of a revision: what each page refers to (pages, anchors, files,
//! URLs), and whether each target exists.
//!
//! Work is split in two so that a revision that differs from its parent in a few pages
//! costs only those pages: [`page_links`] reads one page body (the caller caches it by the
//! body's hash, which the pages of both revisions share), and [`revision_links`] joins the
//! per-page sets of a revision, in time linear in the number of links.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::document::{Element, Node};
use crate::limits::MAX_DEPTH;
use crate::markdown::markdown_to_document;
use crate::model::{ContentRef, PageKind, Revision, SharedDocument};
use crate::sections::{heading, Anchors};

/// Most references kept per page (later ones are ignored), so that one page cannot make
/// every listing of its revision large.
pub const MAX_REFS_PER_PAGE: usize = 2_000;

/// How a page relates to what it references.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Relation {
    /// A link: the page points at the target.
    Reference,
    /// An embed: the page shows the target (an image, a file).
    DependsOn,
}

impl Relation {
    /// The official `ContentReferenceRelation` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Reference => "reference",
            Relation::DependsOn => "dependsOn",
        }
    }
}

/// Whether a reference's target is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// The target exists (or is outside what this revision can check).
    Ok,
    /// The target (page, anchor or file) does not exist in the revision.
    Broken,
    /// A URL into the application itself, rather than a content reference.
    InApp,
}

impl Status {
    /// The official `ContentReferenceStatus` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Broken => "broken",
            Status::InApp => "in-app",
        }
    }

    /// Parses an official `ContentReferenceStatus` value.
    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "ok" => Some(Status::Ok),
            "broken" => Some(Status::Broken),
            "in-app" => Some(Status::InApp),
            _ => None,
        }
    }
}

/// What one page body refers to, and the anchors it offers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageLinks {
    /// Distinct references in order of first appearance, with how the page uses each.
    /// Anchors without a page (`#x`) are kept as written: they mean the page itself.
    pub refs: Vec<(ContentRef, Relation)>,
    /// Anchors of the page's headings (as the renderer assigns them).
    pub anchors: Vec<String>,
}

impl PageLinks {
    /// Approximate bytes held, for cache weights.
    pub fn weight(&self) -> usize {
        64 + self.refs.len() * 96 + self.anchors.iter().map(|a| a.len() + 24).sum::<usize>()
    }
}

/// The references and anchors of a page body (markdown).
pub fn page_links(markdown: &str) -> PageLinks {
    let doc = markdown_to_document(markdown);
    let mut out = PageLinks::default();
    let mut seen: HashSet<(ContentRef, Relation)> = HashSet::new();
    // Top-level headings take their anchors first, as in search sections and the HTML.
    let mut anchors = Anchors::default();
    for node in &doc.nodes {
        if let Some((e, _)) = heading(node) {
            out.anchors.push(anchors.assign(e, &node.plain_text()));
        }
    }
    // Then an explicit-stack walk (no recursion) for references and nested headings.
    let mut stack: Vec<(&Node, usize, bool)> =
        doc.nodes.iter().rev().map(|n| (n, 0, true)).collect();
    while let Some((node, depth, top)) = stack.pop() {
        let Some(e) = node.element() else { continue };
        if !top && e.kind.starts_with("heading-") {
            out.anchors.push(anchors.assign(e, &node.plain_text()));
        }
        if let Some(r) = element_ref(e) {
            if seen.len() < MAX_REFS_PER_PAGE && seen.insert(r.clone()) {
                out.refs.push(r);
            }
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        let mut kids: Vec<&Node> = e.children().iter().collect();
        for f in e.fragments.iter().flatten() {
            kids.extend(f.nodes.iter());
        }
        for k in kids.into_iter().rev() {
            stack.push((k, depth + 1, false));
        }
    }
    out
}

/// Whether `u` names its scheme (`https:`, `mailto:`…) or is protocol-relative (`//host`).
fn is_absolute_url(u: &str) -> bool {
    if u.starts_with("//") {
        return true;
    }
    let Some((scheme, _)) = u.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The reference an element carries, with its relation.
fn element_ref(e: &Element) -> Option<(ContentRef, Relation)> {
    let r: ContentRef = serde_json::from_value(e.data.get("ref")?.clone()).ok()?;
    let relation = match e.kind.as_str() {
        "image" | "inline-image" | "drawing" | "file" | "embed" | "reusable-content" => {
            Relation::DependsOn
        }
        _ => Relation::Reference,
    };
    Some((r, relation))
}

/// A target of references, as the listings name it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// A page of this revision.
    Page(String),
    /// An anchor in a page of this revision.
    Anchor {
        /// Page id.
        page: String,
        /// The anchor.
        anchor: String,
    },
    /// A file of this revision.
    File(String),
    /// A URL.
    Url(String),
}

impl Target {
    /// A stable sort key, unique per target (cursors of listings use it).
    pub fn key(&self) -> String {
        match self {
            Target::Page(p) => format!("p:{p}"),
            Target::Anchor { page, anchor } => format!("a:{page}#{anchor}"),
            Target::File(f) => format!("f:{f}"),
            Target::Url(u) => format!("u:{u}"),
        }
    }

    /// The page this target is in, if it is a page or an anchor.
    pub fn page(&self) -> Option<&str> {
        match self {
            Target::Page(p) | Target::Anchor { page: p, .. } => Some(p),
            _ => None,
        }
    }
}

/// One target with everything that points at it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// Sort key ([`Target::key`]).
    pub key: String,
    /// What is referenced.
    pub target: Target,
    /// Whether it exists.
    pub status: Status,
    /// How it is used (`DependsOn` if any page embeds it).
    pub relation: Relation,
    /// Pages that refer to it, in navigation order, each once.
    pub sources: Vec<String>,
}

/// Every link of a revision, sorted by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RevisionLinks {
    /// The links, by key.
    pub links: Vec<Link>,
}

impl RevisionLinks {
    /// Approximate bytes held, for cache weights.
    pub fn weight(&self) -> usize {
        self.links
            .iter()
            .map(|l| 96 + 2 * l.key.len() + l.sources.iter().map(|s| s.len() + 24).sum::<usize>())
            .sum()
    }

    /// The links whose sources include `page` (its outgoing links).
    pub fn from_page<'a>(&'a self, page: &'a str) -> impl Iterator<Item = &'a Link> + 'a {
        self.links
            .iter()
            .filter(move |l| l.sources.iter().any(|s| s == page))
    }

    /// Pages that link to `page` (directly or to one of its anchors), in navigation order.
    pub fn backlinks_of_page(&self, page: &str, order: &HashMap<&str, usize>) -> Vec<String> {
        self.sources_where(|t| t.page() == Some(page), order)
    }

    /// Pages that refer to file `file`, in navigation order.
    pub fn backlinks_of_file(&self, file: &str, order: &HashMap<&str, usize>) -> Vec<String> {
        self.sources_where(|t| matches!(t, Target::File(f) if f == file), order)
    }

    fn sources_where(
        &self,
        pick: impl Fn(&Target) -> bool,
        order: &HashMap<&str, usize>,
    ) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut out: Vec<String> = self
            .links
            .iter()
            .filter(|l| pick(&l.target))
            .flat_map(|l| l.sources.iter())
            .filter(|s| seen.insert(s.as_str()))
            .cloned()
            .collect();
        out.sort_by_key(|s| order.get(s.as_str()).copied().unwrap_or(usize::MAX));
        out
    }
}

/// What [`revision_links`] needs besides the revision.
pub struct Context<'a> {
    /// The space the revision belongs to: page references naming it are local.
    pub space_id: &'a str,
    /// The application's public URL: URLs under it are `in-app`.
    pub app_url: &'a str,
}

/// Joins the per-page link sets of `rev` (from `links_of`, given each document page's
/// fields, whose body hash [`crate::store::body_hash`] names them) into the revision's
/// links, each with its status.
pub fn revision_links(
    rev: &Revision,
    ctx: &Context<'_>,
    mut links_of: impl FnMut(&SharedDocument) -> Arc<PageLinks>,
) -> RevisionLinks {
    let flat = rev.flatten();
    let mut per_page: Vec<(&str, Arc<PageLinks>)> = Vec::with_capacity(flat.len());
    let mut anchors: HashMap<&str, Arc<PageLinks>> = HashMap::with_capacity(flat.len());
    let mut pages: HashSet<&str> = HashSet::with_capacity(flat.len());
    for f in &flat {
        pages.insert(f.page.id.as_str());
        if let PageKind::Document(doc) = &f.page.kind {
            let l = links_of(doc);
            anchors.insert(f.page.id.as_str(), l.clone());
            per_page.push((f.page.id.as_str(), l));
        }
    }
    let files: HashSet<&str> = rev.files.iter().map(|f| f.id.as_str()).collect();
    let app = ctx.app_url.trim_end_matches('/');
    let local = |space: &Option<String>| space.as_deref().is_none_or(|s| s == ctx.space_id);
    let mut by_target: HashMap<Target, (Relation, Vec<&str>)> = HashMap::new();
    for (source, l) in &per_page {
        for (r, relation) in &l.refs {
            let target = match r {
                ContentRef::Page { page, space } if local(space) => Target::Page(page.clone()),
                ContentRef::Anchor {
                    anchor,
                    page,
                    space,
                } if local(space) => Target::Anchor {
                    page: page.clone().unwrap_or_else(|| source.to_string()),
                    anchor: anchor.clone(),
                },
                ContentRef::File { file } => Target::File(file.clone()),
                ContentRef::Url { url } => Target::Url(url.clone()),
                // Other spaces, users, collections, reusable contents and specifications
                // are not links of this revision.
                _ => continue,
            };
            let entry = by_target.entry(target).or_insert((*relation, Vec::new()));
            entry.0 = entry.0.max(*relation);
            if entry.1.last() != Some(source) {
                entry.1.push(source);
            }
        }
    }
    let status_of = |t: &Target| match t {
        Target::Page(p) => ok_if(pages.contains(p.as_str())),
        Target::Anchor { page, anchor } => match anchors.get(page.as_str()) {
            Some(l) => ok_if(l.anchors.iter().any(|a| a == anchor)),
            None => Status::Broken,
        },
        Target::File(f) => ok_if(files.contains(f.as_str())),
        Target::Url(u) => {
            let inside = !app.is_empty()
                && u.strip_prefix(app)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?', '#']));
            if inside {
                Status::InApp
            } else if is_absolute_url(u) {
                Status::Ok
            } else {
                // A relative destination (a page path an import could not match) leads
                // nowhere from a published page.
                Status::Broken
            }
        }
    };
    let mut links: Vec<Link> = by_target
        .into_iter()
        .map(|(target, (relation, sources))| Link {
            key: target.key(),
            status: status_of(&target),
            relation,
            sources: sources.into_iter().map(str::to_string).collect(),
            target,
        })
        .collect();
    links.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    RevisionLinks { links }
}

fn ok_if(exists: bool) -> Status {
    if exists {
        Status::Ok
    } else {
        Status::Broken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{File, Page};

    fn rev() -> Revision {
        let mut a = Page::document(
            "pa",
            "A",
            "a",
            "## Intro\n\nSee [B](/pages/pb) and [gone](/pages/nope), [sec](/pages/pb#setup), \
             [bad](/pages/pb#nowhere), [self](#intro), [web](https://example.com/x), [mail](mailto:a@example.com), [rel](gone.md), \
             [app](https://docs.example.org/s/x).\n\n![pic](/files/f1)\n\n![lost](/files/f9)\n",
        );
        a.pages = vec![Page::document(
            "pb",
            "B",
            "b",
            "## Setup\n\nBack to [A](/pages/pa).\n",
        )];
        Revision {
            pages: vec![a],
            files: vec![File {
                id: "f1".into(),
                name: "pic.png".into(),
                content_type: "image/png".into(),
                size: 1,
                dimensions: None,
                blob: "00".into(),
                git_oid: None,
            }],
            ..Revision::default()
        }
    }

    fn links(rev: &Revision) -> RevisionLinks {
        revision_links(
            rev,
            &Context {
                space_id: "s1",
                app_url: "https://docs.example.org",
            },
            |doc| Arc::new(page_links(&doc.markdown)),
        )
    }

    #[test]
    fn statuses() {
        let l = links(&rev());
        let status = |k: &str| l.links.iter().find(|x| x.key == k).map(|x| x.status);
        assert_eq!(status("p:pb"), Some(Status::Ok));
        assert_eq!(status("p:nope"), Some(Status::Broken));
        assert_eq!(status("a:pb#setup"), Some(Status::Ok));
        assert_eq!(status("a:pb#nowhere"), Some(Status::Broken));
        assert_eq!(status("a:pa#intro"), Some(Status::Ok));
        assert_eq!(status("f:f1"), Some(Status::Ok));
        assert_eq!(status("f:f9"), Some(Status::Broken));
        assert_eq!(status("u:https://example.com/x"), Some(Status::Ok));
        assert_eq!(status("u:mailto:a@example.com"), Some(Status::Ok));
        assert_eq!(status("u:gone.md"), Some(Status::Broken));
        assert_eq!(
            status("u:https://docs.example.org/s/x"),
            Some(Status::InApp)
        );
        let f1 = l.links.iter().find(|x| x.key == "f:f1").unwrap();
        assert_eq!(f1.relation, Relation::DependsOn);
        let order = HashMap::from([("pa", 0), ("pb", 1)]);
        assert_eq!(l.backlinks_of_page("pb", &order), vec!["pa"]);
        assert_eq!(l.backlinks_of_page("pa", &order), vec!["pa", "pb"]);
        assert_eq!(l.backlinks_of_file("f1", &order), vec!["pa"]);
        assert_eq!(l.from_page("pb").count(), 1);
    }

    #[test]
    fn keys_sorted_and_unique() {
        let l = links(&rev());
        let keys: Vec<_> = l.links.iter().map(|x| x.key.clone()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(keys, sorted);
    }

    #[test]
    fn a_new_revision_reads_only_its_changed_pages() {
        use crate::store::{body_hash, decode, encode};
        use std::collections::HashMap;
        let mut pages: Vec<Page> = (0..50)
            .map(|i| {
                Page::document(
                    &format!("p{i}"),
                    &format!("P{i}"),
                    &format!("p{i}"),
                    &format!("Go to [next](/pages/p{}).\n", i + 1),
                )
            })
            .collect();
        let one = Revision {
            pages: pages.clone(),
            ..Revision::default()
        };
        if let PageKind::Document(d) = &mut pages[7].kind {
            d.markdown = "Now [nowhere](/pages/zz).\n".into();
        }
        let two = Revision {
            pages,
            ..Revision::default()
        };
        // Through the store, as the server holds revisions: two decoded revisions share no
        // memory, only the hashes of equal bodies.
        let round = |rev: &Revision| {
            let enc = encode(rev);
            let objects: HashMap<_, _> = enc.objects.into_iter().collect();
            decode(&enc.root, |h| objects.get(h).cloned()).unwrap()
        };
        let (one, two) = (round(&one), round(&two));
        let mut cache: HashMap<crate::store::ObjectHash, Arc<PageLinks>> = HashMap::new();
        let mut parsed = 0;
        let ctx = Context {
            space_id: "s",
            app_url: "",
        };
        let mut run = |rev: &Revision, parsed: &mut usize| {
            revision_links(rev, &ctx, |doc| {
                cache
                    .entry(body_hash(doc))
                    .or_insert_with(|| {
                        *parsed += 1;
                        Arc::new(page_links(&doc.markdown))
                    })
                    .clone()
            })
        };
        let first = run(&one, &mut parsed);
        assert_eq!(parsed, 50);
        assert_eq!(
            first
                .links
                .iter()
                .filter(|l| l.status == Status::Broken)
                .count(),
            1
        );
        let second = run(&two, &mut parsed);
        assert_eq!(parsed, 51, "only the changed page is read again");
        let broken: Vec<_> = second
            .links
            .iter()
            .filter(|l| l.status == Status::Broken)
            .map(|l| l.key.as_str())
            .collect();
        assert_eq!(broken, ["p:p50", "p:zz"]);
        assert!(second
            .links
            .iter()
            .all(|l| l.key != "p:p8" || l.status == Status::Ok));
    }
}
