//! A revision's page tree without its bodies, in a compact form of its own.
//!
//! A published page rendered before its revision is in memory needs the whole tree (to
//! place the page, its breadcrumbs, its neighbours and the sidebar) but only its own body.
//! The pages' official JSON is slow to read back: each page's kind is a flattened,
//! internally tagged enum, which serde buffers twice per page. This form tags the kind
//! outside, leaves out what is default (a page's layout, empty fields) and names fields in
//! one letter, so that reading 10,000 pages is a few milliseconds.

use serde::{Deserialize, Serialize};

use crate::model::{
    DocumentPage, File, LinkPage, Page, PageCover, PageKind, PageLayout, ReusableContent, Revision,
    SharedDocument, Variables,
};

/// The stored tree: the revision with every document body left empty.
#[derive(Serialize, Deserialize)]
struct TreeFile {
    #[serde(rename = "p")]
    pages: Vec<TreePage>,
    #[serde(rename = "f", default, skip_serializing_if = "Vec::is_empty")]
    files: Vec<File>,
    #[serde(rename = "r", default, skip_serializing_if = "Vec::is_empty")]
    reusable_contents: Vec<ReusableContent>,
    #[serde(rename = "v", default, skip_serializing_if = "Variables::is_empty")]
    variables: Variables,
}

#[derive(Serialize, Deserialize)]
struct TreePage {
    #[serde(rename = "i")]
    id: String,
    #[serde(rename = "t")]
    title: String,
    #[serde(rename = "s", default, skip_serializing_if = "String::is_empty")]
    slug: String,
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    emoji: Option<String>,
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    icon: Option<String>,
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(rename = "h", default, skip_serializing_if = "is_false")]
    hidden: bool,
    #[serde(rename = "x", default, skip_serializing_if = "is_false")]
    no_index: bool,
    #[serde(rename = "y", default, skip_serializing_if = "is_false")]
    no_robots_index: bool,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    condition: Option<String>,
    #[serde(rename = "k")]
    kind: TreeKind,
    #[serde(rename = "p", default, skip_serializing_if = "Vec::is_empty")]
    pages: Vec<TreePage>,
}

/// A page's kind, tagged outside (read without buffering).
#[derive(Serialize, Deserialize)]
enum TreeKind {
    #[serde(rename = "d")]
    Document {
        #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
        layout: Option<PageLayout>,
        #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
        cover: Option<PageCover>,
        #[serde(rename = "v", default, skip_serializing_if = "Variables::is_empty")]
        variables: Variables,
    },
    #[serde(rename = "g")]
    Group,
    #[serde(rename = "l")]
    Link(LinkPage),
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The page tree of `rev`, every document body left out, as bytes for [`decode_tree`].
pub fn encode_tree(rev: &Revision) -> Vec<u8> {
    let file = TreeFile {
        pages: rev.pages.iter().map(tree_page).collect(),
        files: rev.files.clone(),
        reusable_contents: rev.reusable_contents.clone(),
        variables: rev.variables.clone(),
    };
    serde_json::to_vec(&file).expect("a page tree always serialises")
}

/// The revision [`encode_tree`] stored: its pages, files, reusable contents and variables,
/// with every document body empty.
pub fn decode_tree(bytes: &[u8]) -> Result<Revision, serde_json::Error> {
    let file: TreeFile = serde_json::from_slice(bytes)?;
    Ok(Revision {
        pages: file.pages.into_iter().map(page).collect(),
        files: file.files,
        reusable_contents: file.reusable_contents,
        variables: file.variables,
    })
}

// Both walks recurse once per level of the page tree, whose depth edits bound.
fn tree_page(p: &Page) -> TreePage {
    TreePage {
        id: p.id.clone(),
        title: p.title.clone(),
        slug: p.slug.clone(),
        emoji: p.emoji.clone(),
        icon: p.icon.clone(),
        description: p.description.clone(),
        hidden: p.hidden,
        no_index: p.no_index,
        no_robots_index: p.no_robots_index,
        condition: p.condition.clone(),
        kind: match &p.kind {
            PageKind::Document(doc) => TreeKind::Document {
                layout: (doc.layout != PageLayout::default()).then(|| doc.layout.clone()),
                cover: doc.cover.clone(),
                variables: doc.variables.clone(),
            },
            PageKind::Group => TreeKind::Group,
            PageKind::Link(link) => TreeKind::Link(link.clone()),
        },
        pages: p.pages.iter().map(tree_page).collect(),
    }
}

fn page(p: TreePage) -> Page {
    Page {
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
        kind: match p.kind {
            TreeKind::Document {
                layout,
                cover,
                variables,
            } => PageKind::Document(SharedDocument::new(DocumentPage {
                markdown: String::new(),
                layout: layout.unwrap_or_default(),
                cover,
                variables,
            })),
            TreeKind::Group => PageKind::Group,
            TreeKind::Link(link) => PageKind::Link(link),
        },
        pages: p.pages.into_iter().map(page).collect(),
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
            id: id.into(),
            title: format!("Title of {id}"),
            slug: id.into(),
            emoji: None,
            icon: None,
            description: None,
            hidden: false,
            no_index: false,
            no_robots_index: false,
            condition: None,
            kind,
            pages,
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
        let back = decode_tree(&encode_tree(&rev)).unwrap();
        let mut expected = rev.clone();
        bodiless(&mut expected.pages);
        assert_eq!(back, expected);
        // Nothing but the bodies is left out.
        assert_ne!(back, rev);
    }

    #[test]
    fn an_empty_revision_round_trips() {
        let rev = Revision::default();
        assert_eq!(decode_tree(&encode_tree(&rev)).unwrap(), rev);
    }

    #[test]
    fn bytes_that_are_not_a_tree_are_an_error() {
        assert!(decode_tree(b"{\"pages\": []}").is_err());
        assert!(decode_tree(b"not json").is_err());
    }
}
