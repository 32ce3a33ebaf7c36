//! Built-in space templates: a few starting structures (product docs, API reference,
//! knowledge base, changelog) with stable ids, applied by adding their pages after the
//! space's own. A template may show files of the space in named slots (a logo…), filled by
//! the caller's content references.

use std::collections::{BTreeMap, HashSet};

use crate::model::{unique_slug, Page, Revision};

/// A built-in template.
#[derive(Clone, Copy, Debug)]
pub struct Template {
    /// Stable id, as `applyTemplateToSpace` names it.
    pub id: &'static str,
    /// What it is for.
    pub title: &'static str,
    /// Names of the file slots its pages can show.
    pub slots: &'static [&'static str],
    pages: &'static [TemplatePage],
}

/// A page of a template: its body may name other pages of the template as `{page:N}` (the
/// N-th page, counted from 0 in this list) and slots as `{slot:name}` lines.
#[derive(Clone, Copy, Debug)]
struct TemplatePage {
    title: &'static str,
    /// Index in the template's list of this page's parent, if any.
    parent: Option<usize>,
    /// Whether the page is a group (no body).
    group: bool,
    body: &'static str,
}

const fn doc(title: &'static str, parent: Option<usize>, body: &'static str) -> TemplatePage {
    TemplatePage {
        title,
        parent,
        group: false,
        body,
    }
}

const fn group(title: &'static str) -> TemplatePage {
    TemplatePage {
        title,
        parent: None,
        group: true,
        body: "",
    }
}

/// Every built-in template.
pub const TEMPLATES: &[Template] = &[
    Template {
        id: "product-docs",
        title: "Product documentation",
        slots: &["logo"],
        pages: &[
            doc(
                "Welcome",
                None,
                "{slot:logo}\n\nThis is the home of the product's documentation.\n\n## Jump right in\n\n* [Quickstart]({page:1}): from nothing to a first result.\n* [Guides]({page:2}): one task at a time.\n* [FAQ]({page:5}): questions readers ask.\n",
            ),
            doc(
                "Quickstart",
                None,
                "## Install\n\n```bash\n# replace with your product's install command\n```\n\n## First steps\n\n1. Create an account.\n2. Follow a [guide]({page:3}).\n\n{% hint style=\"info\" %}\nKeep this page short: it is the one most readers see.\n{% endhint %}\n",
            ),
            group("Guides"),
            doc(
                "Create your first project",
                Some(2),
                "## Before you start\n\nWhat readers need.\n\n## Steps\n\n1. First step.\n2. Second step.\n",
            ),
            doc(
                "Configure settings",
                Some(2),
                "| Setting | Default | Meaning |\n| --- | --- | --- |\n| `name` | none | What it does. |\n",
            ),
            doc(
                "FAQ",
                None,
                "## Where do I start?\n\nWith the [Quickstart]({page:1}).\n",
            ),
        ],
    },
    Template {
        id: "api-reference",
        title: "API reference",
        slots: &["logo"],
        pages: &[
            doc(
                "Introduction",
                None,
                "{slot:logo}\n\nThe API is organised around resources, with JSON bodies and standard status codes.\n\nStart with [Authentication]({page:1}).\n",
            ),
            doc(
                "Authentication",
                None,
                "## Tokens\n\nSend a token in the `Authorization` header:\n\n```http\nAuthorization: Bearer <token>\n```\n",
            ),
            group("Endpoints"),
            doc(
                "Resources",
                Some(2),
                "## List resources\n\n```http\nGET /v1/resources\n```\n\n## Create a resource\n\n```http\nPOST /v1/resources\n```\n",
            ),
            doc(
                "Errors",
                None,
                "| Status | Meaning |\n| --- | --- |\n| 400 | The request is invalid. |\n| 401 | No valid token. |\n| 404 | Not found. |\n",
            ),
        ],
    },
    Template {
        id: "knowledge-base",
        title: "Knowledge base",
        slots: &["cover"],
        pages: &[
            doc(
                "Help center",
                None,
                "{slot:cover}\n\nFind answers by topic, or search.\n\n* [Getting started]({page:1})\n* [Troubleshooting]({page:3})\n",
            ),
            group("Getting started"),
            doc(
                "Set up your account",
                Some(1),
                "1. Sign up.\n2. Invite your team.\n",
            ),
            doc(
                "Troubleshooting",
                None,
                "{% hint style=\"warning\" %}\nDescribe the symptom first, then the fix.\n{% endhint %}\n",
            ),
        ],
    },
    Template {
        id: "changelog",
        title: "Changelog",
        slots: &["logo"],
        pages: &[doc(
            "Changelog",
            None,
            "{slot:logo}\n\nWhat changed, newest first.\n\n## Version 1.0.0\n\n* First release.\n",
        )],
    },
];

/// The built-in template with this id.
pub fn template(id: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.id == id)
}

/// Adds the pages of `template` after the root pages of `rev`, with ids from `new_id` and
/// slugs unique among the root pages; `slots` gives the file id shown in each filled slot
/// (empty slots are left out).
pub fn apply(
    rev: &Revision,
    template: &Template,
    slots: &BTreeMap<String, String>,
    new_id: &mut dyn FnMut() -> String,
) -> Revision {
    let ids: Vec<String> = template.pages.iter().map(|_| new_id()).collect();
    let mut built: Vec<Page> = template
        .pages
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let slug = crate::model::slugify(p.title);
            if p.group {
                Page::group(&ids[i], p.title, &slug)
            } else {
                Page::document(&ids[i], p.title, &slug, &fill(p.body, &ids, slots))
            }
        })
        .collect();
    // Children first (from the end), so that indices of parents stay valid.
    let mut out = rev.clone();
    let mut roots = Vec::new();
    for i in (0..built.len()).rev() {
        let page = built.remove(i);
        match template.pages[i].parent {
            Some(parent) => built[parent].pages.insert(0, page),
            None => roots.insert(0, page),
        }
    }
    let mut taken: HashSet<String> = out.pages.iter().map(|p| p.slug.clone()).collect();
    for mut page in roots {
        page.slug = unique_slug(&page.slug, taken.iter().map(String::as_str));
        taken.insert(page.slug.clone());
        out.pages.push(page);
    }
    out
}

fn fill(body: &str, ids: &[String], slots: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail.find('}').map(|e| e + 1).unwrap_or(tail.len());
        let token = &tail[..end];
        if let Some(n) = token
            .strip_prefix("{page:")
            .and_then(|t| t.strip_suffix('}'))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n < ids.len())
        {
            out.push_str(&format!("/pages/{}", ids[n]));
        } else if let Some(name) = token
            .strip_prefix("{slot:")
            .and_then(|t| t.strip_suffix('}'))
        {
            if let Some(file) = slots.get(name) {
                out.push_str(&format!("![{name}](/files/{file})"));
            }
        } else {
            out.push_str(token);
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    // An empty slot leaves an empty first paragraph behind.
    out.trim_start().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_with_links_and_slots() {
        let mut n = 0;
        let mut next = || {
            n += 1;
            format!("t{n}")
        };
        let slots = BTreeMap::from([("logo".to_string(), "f1".to_string())]);
        let rev = apply(
            &Revision::default(),
            template("product-docs").unwrap(),
            &slots,
            &mut next,
        );
        assert_eq!(rev.pages.len(), 4);
        assert_eq!(rev.pages[2].pages.len(), 2);
        let md = rev.pages[0].markdown().unwrap();
        assert!(md.starts_with("![logo](/files/f1)"), "{md}");
        assert!(md.contains("(/pages/t2)"), "{md}");
        rev.validate().unwrap();
    }

    #[test]
    fn every_template_is_valid_and_links_resolve() {
        for t in TEMPLATES {
            let mut n = 0;
            let mut next = || {
                n += 1;
                format!("{}-{n}", t.id)
            };
            let rev = apply(&Revision::default(), t, &BTreeMap::new(), &mut next);
            rev.validate().unwrap();
            let links = crate::links::revision_links(
                &rev,
                &crate::links::Context {
                    space_id: "s",
                    app_url: "",
                },
                |d| std::sync::Arc::new(crate::links::page_links(&d.markdown)),
            );
            assert!(
                links
                    .links
                    .iter()
                    .all(|l| l.status != crate::links::Status::Broken),
                "{}",
                t.id
            );
        }
    }

    #[test]
    fn slugs_stay_unique() {
        let mut n = 0;
        let mut next = || {
            n += 1;
            format!("x{n}")
        };
        let t = template("changelog").unwrap();
        let once = apply(&Revision::default(), t, &BTreeMap::new(), &mut next);
        let twice = apply(&once, t, &BTreeMap::new(), &mut next);
        assert_eq!(twice.pages.len(), 2);
        assert_ne!(twice.pages[0].slug, twice.pages[1].slug);
        twice.validate().unwrap();
    }
}
