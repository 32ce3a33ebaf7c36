//! Confluence space exports (HTML): `index.html` lists the pages as nested lists, each page
//! is an HTML file whose content sits in `#main-content`, and images and attachments are
//! files of the archive (`attachments/<page>/...`, `images/...`).

use std::collections::{HashMap, HashSet};

use scraper::{ElementRef, Html, Selector};

use super::archive::{read_zip, Bytes};
use super::tree::strip_common_root;
use super::{
    archive_key, html, title_from_name, Asset, Bundle, ConvertError, Limits, SourcePage,
    MAX_TREE_DEPTH,
};

/// Where a Confluence page keeps its content.
const CONTENT: &[&str] = &["#main-content", ".wiki-content", "#content", "main"];

/// Converts a Confluence space export (zip of HTML).
pub fn convert(bytes: Bytes, limits: &Limits) -> Result<Bundle, ConvertError> {
    let entries = strip_common_root(read_zip(bytes, limits)?)?;
    let mut pages: HashMap<String, String> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut assets = Vec::new();
    for e in entries {
        let lower = e.path.to_ascii_lowercase();
        if lower.ends_with(".html") || lower.ends_with(".htm") {
            order.push(e.path.clone());
            let text = String::from_utf8_lossy(&e.content.document()?).into_owned();
            pages.insert(e.path, text);
        } else if !lower.ends_with(".css") && !lower.ends_with(".js") {
            assets.push(Asset {
                key: archive_key(&e.path),
                name: e.path.rsplit('/').next().unwrap_or(&e.path).to_string(),
                content: e.content,
            });
        }
    }
    let index = order
        .iter()
        .filter(|p| p.rsplit('/').next() == Some("index.html"))
        .min_by_key(|p| p.len())
        .cloned();
    if pages.is_empty() || (index.is_some() && pages.len() == 1) {
        return Err(ConvertError::new("holds no Confluence page (no HTML file)"));
    }
    let mut placed: HashSet<String> = HashSet::new();
    let mut roots = Vec::new();
    if let Some(index) = &index {
        placed.insert(index.clone());
        let dir = index
            .rsplit_once('/')
            .map_or(String::new(), |(d, _)| format!("{d}/"));
        let doc = Html::parse_document(&pages[index]);
        let ul = Selector::parse("ul").expect("selector");
        // The page tree is the first list of the index that links to pages.
        if let Some(list) = doc.select(&ul).find(|l| {
            l.select(&Selector::parse("a").expect("selector")).any(|a| {
                a.value()
                    .attr("href")
                    .is_some_and(|h| pages.contains_key(&format!("{dir}{h}")))
            })
        }) {
            roots = list_tree(list, &dir, &pages, &mut placed, 0);
        }
    }
    // Pages the index does not list come after, in archive order.
    for path in &order {
        if !placed.contains(path) {
            placed.insert(path.clone());
            roots.push(page_at(path, &pages[path]));
        }
    }
    Ok(Bundle {
        pages: roots,
        assets,
        remote_images: Vec::new(),
        includes: Vec::new(),
    })
}

/// The pages of a `<ul>` of the index and their nested lists.
fn list_tree(
    list: ElementRef<'_>,
    dir: &str,
    pages: &HashMap<String, String>,
    placed: &mut HashSet<String>,
    depth: usize,
) -> Vec<SourcePage> {
    let mut out = Vec::new();
    for li in list.children().filter_map(ElementRef::wrap) {
        if li.value().name() != "li" {
            continue;
        }
        let link = li
            .children()
            .filter_map(ElementRef::wrap)
            .find(|c| c.value().name() == "a")
            .and_then(|a| a.value().attr("href"))
            .map(|h| format!("{dir}{}", super::percent_decode(h)));
        let children = li
            .children()
            .filter_map(ElementRef::wrap)
            .filter(|c| c.value().name() == "ul")
            .flat_map(|ul| {
                if depth + 1 < MAX_TREE_DEPTH {
                    list_tree(ul, dir, pages, placed, depth + 1)
                } else {
                    Vec::new()
                }
            })
            .collect::<Vec<_>>();
        match link.filter(|l| pages.contains_key(l) && !placed.contains(l)) {
            Some(path) => {
                placed.insert(path.clone());
                let mut page = page_at(&path, &pages[&path]);
                page.children = children;
                out.push(page);
            }
            None => out.extend(children),
        }
    }
    out
}

fn page_at(path: &str, text: &str) -> SourcePage {
    let doc = Html::parse_document(text);
    let heading = Selector::parse("#title-text").expect("selector");
    let title = doc
        .select(&heading)
        .next()
        .map(|t| t.text().collect::<String>())
        .or_else(|| {
            doc.select(&Selector::parse("title").expect("selector"))
                .next()
                .map(|t| t.text().collect::<String>())
        })
        .map(|t| {
            let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
            // Confluence titles read `Space : Page`.
            t.split_once(" : ")
                .map_or(t.clone(), |(_, p)| p.to_string())
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| title_from_name(path));
    let converted = html::convert(text, CONTENT);
    let stem = path.rsplit('/').next().unwrap_or(path);
    let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
    // `Page-Title_123456` names: the id suffix is not part of the slug.
    let slug_hint = match stem.rsplit_once('_') {
        Some((s, id)) if id.bytes().all(|b| b.is_ascii_digit()) => s,
        _ => stem,
    };
    SourcePage {
        key: archive_key(path),
        title,
        slug_hint: slug_hint.to_string(),
        body: Some(converted.body),
        ..SourcePage::default()
    }
}
