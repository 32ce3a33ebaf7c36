//! A revision's page tree without its bodies, in a compact form of its own.
//!
//! A published page rendered before its revision is in memory needs the whole tree (to
//! place the page, its breadcrumbs, its neighbours and the sidebar) but only its own body.
//! The pages' official JSON is slow to read back: each page's kind is a flattened,
//! internally tagged enum, which serde buffers twice per page. This form tags the kind
//! outside, leaves out what is default (a page's layout, empty fields) and names fields in
//! one letter: 10,000 pages read back in about a third of the time, from a fifth of the
//! bytes (measured for issue 13; BENCHMARKS.md in git history).

use serde::{Deserialize, Serialize};

use crate::model::{
    DocumentPage, File, LinkPage, Page, PageCover, PageKind, PageLayout, ReusableContent, Revision,
    SharedDocument, Variables,
};

// Written borrowing the revision, read straight into its pages: each page's fields are
// moved into a `Page` as soon as they are read, and its children's vector is reused.

/// The stored tree, as written: the revision with every document body left out.
#[derive(Serialize)]
struct TreeOut<'a> {
    #[serde(rename = "p")]
    pages: Vec<PageOut<'a>>,
    #[serde(rename = "f", skip_serializing_if = "<[File]>::is_empty")]
    files: &'a [File],
    #[serde(rename = "r", skip_serializing_if = "<[ReusableContent]>::is_empty")]
    reusable_contents: &'a [ReusableContent],
    #[serde(rename = "v", skip_serializing_if = "Variables::is_empty")]
    variables: &'a Variables,
    #[serde(rename = "t", skip_serializing_if = "<[crate::model::Tag]>::is_empty")]
    tags: &'a [crate::model::Tag],
}

#[derive(Serialize)]
struct PageOut<'a> {
    #[serde(rename = "i")]
    id: &'a str,
    #[serde(rename = "t")]
    title: &'a str,
    #[serde(rename = "s", skip_serializing_if = "str::is_empty")]
    slug: &'a str,
    #[serde(rename = "e", skip_serializing_if = "Option::is_none")]
    emoji: Option<&'a str>,
    #[serde(rename = "n", skip_serializing_if = "Option::is_none")]
    icon: Option<&'a str>,
    #[serde(rename = "d", skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(rename = "h", skip_serializing_if = "is_false")]
    hidden: bool,
    #[serde(rename = "x", skip_serializing_if = "is_false")]
    no_index: bool,
    #[serde(rename = "y", skip_serializing_if = "is_false")]
    no_robots_index: bool,
    #[serde(rename = "c", skip_serializing_if = "Option::is_none")]
    condition: Option<&'a str>,
    #[serde(rename = "g", skip_serializing_if = "<[String]>::is_empty")]
    tags: &'a [String],
    #[serde(rename = "q", skip_serializing_if = "Option::is_none")]
    primary_tag: Option<&'a str>,
    #[serde(rename = "k")]
    kind: KindOut<'a>,
    #[serde(rename = "p", skip_serializing_if = "Vec::is_empty")]
    pages: Vec<PageOut<'a>>,
}

#[derive(Serialize)]
enum KindOut<'a> {
    #[serde(rename = "d")]
    Document {
        #[serde(rename = "l", skip_serializing_if = "Option::is_none")]
        layout: Option<&'a PageLayout>,
        #[serde(rename = "c", skip_serializing_if = "Option::is_none")]
        cover: Option<&'a PageCover>,
        #[serde(rename = "v", skip_serializing_if = "Variables::is_empty")]
        variables: &'a Variables,
    },
    #[serde(rename = "g")]
    Group,
    #[serde(rename = "l")]
    Link(&'a LinkPage),
}

/// The stored tree, as read back.
#[derive(Deserialize)]
struct TreeIn {
    #[serde(rename = "p")]
    pages: Vec<PageIn>,
    #[serde(rename = "f", default)]
    files: Vec<File>,
    #[serde(rename = "r", default)]
    reusable_contents: Vec<ReusableContent>,
    #[serde(rename = "v", default)]
    variables: Variables,
    #[serde(rename = "t", default)]
    tags: Vec<crate::model::Tag>,
}

/// A page read back: the page itself, built as soon as its fields are read.
#[derive(Deserialize)]
#[serde(from = "PageFields")]
struct PageIn(Page);

#[derive(Deserialize)]
struct PageFields {
    #[serde(rename = "i")]
    id: String,
    #[serde(rename = "t")]
    title: String,
    #[serde(rename = "s", default)]
    slug: String,
    #[serde(rename = "e", default)]
    emoji: Option<String>,
    #[serde(rename = "n", default)]
    icon: Option<String>,
    #[serde(rename = "d", default)]
    description: Option<String>,
    #[serde(rename = "h", default)]
    hidden: bool,
    #[serde(rename = "x", default)]
    no_index: bool,
    #[serde(rename = "y", default)]
    no_robots_index: bool,
    #[serde(rename = "c", default)]
    condition: Option<String>,
    #[serde(rename = "g", default)]
    tags: Vec<String>,
    #[serde(rename = "q", default)]
    primary_tag: Option<String>,
    #[serde(rename = "k")]
    kind: KindIn,
    #[serde(rename = "p", default)]
    pages: Vec<PageIn>,
}

/// A page's kind, tagged outside (read without buffering).
#[derive(Deserialize)]
enum KindIn {
    #[serde(rename = "d")]
    Document {
        #[serde(rename = "l", default)]
        layout: Option<PageLayout>,
        #[serde(rename = "c", default)]
        cover: Option<Box<PageCover>>,
        #[serde(rename = "v", default)]
        variables: Variables,
    },
    #[serde(rename = "g")]
    Group,
    #[serde(rename = "l")]
    Link(LinkPage),
}

impl From<PageFields> for PageIn {
    fn from(p: PageFields) -> PageIn {
        PageIn(Page {
            id: p.id,
            title: p.title,
            slug: p.slug,
            emoji: p.emoji,
            icon: p.icon,
            description: p.description,
            hidden: p.hidden,
            no_index: p.no_index,
            no_robots_index: p.no_robots_index,
            condition: p.condition,
            tags: p.tags,
            primary_tag: p.primary_tag,
            kind: match p.kind {
                KindIn::Document {
                    layout,
                    cover,
                    variables,
                } => PageKind::Document(SharedDocument::new(DocumentPage {
                    markdown: String::new(),
                    layout: layout.unwrap_or_default(),
                    cover: cover.map(|c| *c),
                    variables,
                })),
                KindIn::Group => PageKind::Group,
                KindIn::Link(link) => PageKind::Link(link),
            },
            // Same layout as `Page`: the vector is reused, not copied.
            pages: p.pages.into_iter().map(|c| c.0).collect(),
        })
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The page tree of `rev`, every document body left out, as bytes for [`decode_tree`].
pub fn encode_tree(rev: &Revision) -> Result<Vec<u8>, serde_json::Error> {
    let default = PageLayout::default();
    let tree = TreeOut {
        pages: rev.pages.iter().map(|p| page_out(p, &default)).collect(),
        files: &rev.files,
        reusable_contents: &rev.reusable_contents,
        variables: &rev.variables,
        tags: &rev.tags,
    };
    serde_json::to_vec(&tree)
}

/// The revision [`encode_tree`] stored: its pages, files, reusable contents and variables,
/// with every document body empty.
pub fn decode_tree(bytes: &[u8]) -> Result<Revision, serde_json::Error> {
    let tree: TreeIn = serde_json::from_slice(bytes)?;
    Ok(Revision {
        pages: tree.pages.into_iter().map(|p| p.0).collect(),
        files: tree.files,
        reusable_contents: tree.reusable_contents,
        variables: tree.variables,
        tags: tree.tags,
    })
}

// Recurses once per level of the page tree, whose depth edits bound.
fn page_out<'a>(p: &'a Page, default: &PageLayout) -> PageOut<'a> {
    PageOut {
        id: &p.id,
        title: &p.title,
        slug: &p.slug,
        emoji: p.emoji.as_deref(),
        icon: p.icon.as_deref(),
        description: p.description.as_deref(),
        hidden: p.hidden,
        no_index: p.no_index,
        no_robots_index: p.no_robots_index,
        condition: p.condition.as_deref(),
        tags: &p.tags,
        primary_tag: p.primary_tag.as_deref(),
        kind: match &p.kind {
            PageKind::Document(doc) => {
                let doc: &'a DocumentPage = doc;
                KindOut::Document {
                    layout: (doc.layout != *default).then_some(&doc.layout),
                    cover: doc.cover.as_ref(),
                    variables: &doc.variables,
                }
            }
            PageKind::Group => KindOut::Group,
            PageKind::Link(link) => KindOut::Link(link),
        },
        pages: p.pages.iter().map(|c| page_out(c, default)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContentRef, Dimensions, VariableValue};

    fn doc(markdown: &str) -> PageKind {
        PageKind::Document(SharedDocument::new(DocumentPage {
            markdown: markdown.into(),
            ..Default::default()
        }))
    }

    fn page(id: &str, kind: PageKind, pages: Vec<Page>) -> Page {
        Page {
            kind,
            pages,
            ..Page::document(id, &format!("Title of {id}"), id, "")
        }
    }

    fn sample() -> Revision {
        let mut wide = DocumentPage {
            markdown: "Body with **bold**.".into(),
            ..Default::default()
        };
        wide.layout.width = "wide".into();
        wide.layout.outline = false;
        wide.cover = Some(PageCover {
            reference: Some(ContentRef::Url {
                url: "https://example.com/c.png".into(),
            }),
            ref_dark: None,
            y_pos: 12,
            height: None,
        });
        wide.variables
            .insert("tier".into(), VariableValue::String("gold".into()));
        let mut special = page("special", PageKind::Document(wide.into()), vec![]);
        special.emoji = Some("1f600".into());
        special.icon = Some("book".into());
        special.description = Some("About it".into());
        special.hidden = true;
        special.no_index = true;
        special.no_robots_index = true;
        special.condition = Some("visitor.claims.plan == \"pro\"".into());
        special.tags = vec!["beta".into(), "new".into()];
        special.primary_tag = Some("new".into());
        let link = page(
            "out",
            PageKind::Link(LinkPage {
                target: ContentRef::Url {
                    url: "https://example.com".into(),
                },
            }),
            vec![],
        );
        let group = page(
            "group",
            PageKind::Group,
            vec![page("child", doc("Child body"), vec![special]), link],
        );
        let mut rev = Revision {
            pages: vec![page("intro", doc("# Intro\n\nText."), vec![]), group],
            ..Default::default()
        };
        rev.files.push(File {
            id: "f1".into(),
            name: "a.png".into(),
            content_type: "image/png".into(),
            size: 42,
            dimensions: Some(Dimensions {
                width: 3,
                height: 2,
            }),
            blob: "ab".repeat(32),
            git_oid: None,
        });
        rev.reusable_contents.push(ReusableContent {
            id: "rc".into(),
            title: "Shared".into(),
            markdown: "Shared body.".into(),
        });
        rev.variables
            .insert("version".into(), VariableValue::Number(3.into()));
        rev
    }

    /// `rev` with every document body emptied, by hand.
    fn bodiless(pages: &mut [Page]) {
        for p in pages {
            if let PageKind::Document(doc) = &mut p.kind {
                doc.markdown.clear();
            }
            bodiless(&mut p.pages);
        }
    }

    #[test]
    fn a_tree_reads_back_as_the_revision_without_its_bodies() {
        let rev = sample();
        let back = decode_tree(&encode_tree(&rev).unwrap()).unwrap();
        let mut expected = rev.clone();
        bodiless(&mut expected.pages);
        assert_eq!(back, expected);
        // Nothing but the bodies is left out.
        assert_ne!(back, rev);
    }

    #[test]
    fn a_tree_stored_before_primary_tags_reads_back() {
        let stored = br#"{"p":[{"i":"a","t":"A","s":"a","g":["beta"],"k":{"d":{}}}]}"#;
        let rev = decode_tree(stored).unwrap();
        assert_eq!(rev.pages[0].tags, ["beta"]);
        assert_eq!(rev.pages[0].primary_tag, None);
    }

    #[test]
    fn an_empty_revision_round_trips() {
        let rev = Revision::default();
        assert_eq!(decode_tree(&encode_tree(&rev).unwrap()).unwrap(), rev);
    }

    #[test]
    fn bytes_that_are_not_a_tree_are_an_error() {
        assert!(decode_tree(b"{\"pages\": []}").is_err());
        assert!(decode_tree(b"not json").is_err());
    }
}
