//! Websites: what a bounded crawl of one origin needs besides fetching — robots.txt rules,
//! sitemap URLs, which links stay in the crawl — and the crawled pages nested by URL path.

use std::collections::HashMap;

use url::Url;

use super::{SourcePage, MAX_TREE_DEPTH};

/// The user agent whose robots.txt rules the crawl follows.
pub const AGENT: &str = "quire";

/// robots.txt rules for the crawl (everything allowed when the file is absent).
pub struct Robots {
    /// The file's text; `None`: no rules.
    body: Option<String>,
    sitemaps: Vec<String>,
}

impl Robots {
    /// Reads a robots.txt body.
    pub fn parse(body: &[u8]) -> Robots {
        let body = String::from_utf8_lossy(body).into_owned();
        let mut sitemaps = Sitemaps(Vec::new());
        robotstxt::parse_robotstxt(&body, &mut sitemaps);
        Robots {
            body: Some(body),
            sitemaps: sitemaps.0,
        }
    }

    /// No rules.
    pub fn allow_all() -> Robots {
        Robots {
            body: None,
            sitemaps: Vec::new(),
        }
    }

    /// Whether the crawl may fetch `url`.
    pub fn allowed(&self, url: &str) -> bool {
        self.body.as_deref().is_none_or(|body| {
            robotstxt::DefaultMatcher::default().one_agent_allowed_by_robots(body, AGENT, url)
        })
    }

    /// Sitemaps the file names.
    pub fn sitemaps(&self) -> Vec<String> {
        self.sitemaps.clone()
    }
}

/// Collects the `Sitemap:` lines of a robots.txt.
struct Sitemaps(Vec<String>);

impl robotstxt::RobotsParseHandler for Sitemaps {
    fn handle_robots_start(&mut self) {}
    fn handle_robots_end(&mut self) {}
    fn handle_user_agent(&mut self, _: u32, _: &str) {}
    fn handle_allow(&mut self, _: u32, _: &str) {}
    fn handle_disallow(&mut self, _: u32, _: &str) {}
    fn handle_sitemap(&mut self, _: u32, value: &str) {
        self.0.push(value.to_string());
    }
    fn handle_unknown_action(&mut self, _: u32, _: &str, _: &str) {}
}

/// The `<loc>` URLs of a sitemap (or of a sitemap index: then they are sitemaps).
pub fn sitemap_locations(xml: &[u8], max: usize) -> Vec<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut inside = false;
    let mut current = String::new();
    let mut out = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) if e.local_name().as_ref() == b"loc" => {
                inside = true;
                current.clear();
            }
            Ok(Event::End(e)) if e.local_name().as_ref() == b"loc" => {
                inside = false;
                let loc = current.trim().to_string();
                if !loc.is_empty() {
                    out.push(loc);
                    if out.len() >= max {
                        break;
                    }
                }
            }
            Ok(Event::Text(t)) if inside => {
                if let Ok(s) = t.decode() {
                    current.push_str(&s);
                }
            }
            Ok(Event::GeneralRef(r)) if inside => {
                if let Ok(name) = r.decode() {
                    if let Some(v) = quick_xml::escape::resolve_predefined_entity(&name) {
                        current.push_str(v);
                    }
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// The form of a URL the crawl keys pages by: no fragment, no query, and when `scope` is
/// given only URLs of its origin whose path lies under its folder.
pub fn crawl_key(url: &Url, scope: &Url) -> Option<Url> {
    if url.scheme() != scope.scheme()
        || url.host_str() != scope.host_str()
        || url.port_or_known_default() != scope.port_or_known_default()
    {
        return None;
    }
    let folder = match scope.path().rfind('/') {
        Some(i) => &scope.path()[..=i],
        None => "/",
    };
    if !url.path().starts_with(folder) {
        return None;
    }
    let mut u = url.clone();
    u.set_fragment(None);
    u.set_query(None);
    // Files that are not pages are not crawled.
    let last = u
        .path()
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if let Some((_, ext)) = last.rsplit_once('.') {
        if !matches!(ext, "html" | "htm" | "php" | "asp" | "aspx") {
            return None;
        }
    }
    Some(u)
}

/// Nests crawled pages by URL path: a page's parent is the page whose path is its longest
/// proper prefix (by segments, `index.html` standing for its folder). Order is kept among
/// siblings; nesting stops at [`MAX_TREE_DEPTH`].
pub fn nest(pages: Vec<SourcePage>) -> Vec<SourcePage> {
    let folder = |key: &str| -> Vec<String> {
        let Ok(u) = Url::parse(key) else {
            return Vec::new();
        };
        let mut segs: Vec<String> = u
            .path_segments()
            .map(|s| s.filter(|x| !x.is_empty()).map(str::to_string).collect())
            .unwrap_or_default();
        if segs.last().is_some_and(|l| {
            let l = l.to_ascii_lowercase();
            l.starts_with("index.")
        }) {
            segs.pop();
        }
        if let Some(last) = segs.last_mut() {
            if let Some((stem, _)) = last.rsplit_once('.') {
                *last = stem.to_string();
            }
        }
        segs
    };
    let paths: Vec<Vec<String>> = pages.iter().map(|p| folder(&p.key)).collect();
    let index: HashMap<&[String], usize> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_slice(), i))
        .collect();
    let mut parent: Vec<Option<usize>> = vec![None; pages.len()];
    for (i, p) in paths.iter().enumerate() {
        for len in (0..p.len()).rev() {
            if let Some(&j) = index.get(&p[..len]) {
                if j != i {
                    parent[i] = Some(j);
                }
                break;
            }
        }
    }
    // The root page of the site (path `/`) is a sibling of its sections, not their parent.
    for (i, p) in paths.iter().enumerate() {
        if parent[i].is_some_and(|j| paths[j].is_empty()) && !p.is_empty() {
            parent[i] = None;
        }
    }
    fn depth(parent: &[Option<usize>], mut i: usize) -> usize {
        let mut d = 0;
        while let Some(j) = parent[i] {
            d += 1;
            i = j;
            if d > parent.len() {
                break;
            }
        }
        d
    }
    for i in 0..pages.len() {
        while depth(&parent, i) >= MAX_TREE_DEPTH {
            parent[i] = parent[i].and_then(|j| parent[j]);
        }
    }
    let mut slots: Vec<Option<SourcePage>> = pages.into_iter().map(Some).collect();
    // Children before parents: deepest first.
    let mut order: Vec<usize> = (0..slots.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(depth(&parent, i)));
    let mut kids: Vec<Vec<(usize, SourcePage)>> = (0..slots.len()).map(|_| Vec::new()).collect();
    for &i in &order {
        if let Some(j) = parent[i] {
            let mut page = slots[i].take().expect("each page moves once");
            let mut children = std::mem::take(&mut kids[i]);
            children.sort_by_key(|(k, _)| *k);
            page.children.extend(children.into_iter().map(|(_, p)| p));
            kids[j].push((i, page));
        }
    }
    let mut out = Vec::new();
    for (i, slot) in slots.into_iter().enumerate() {
        if let Some(mut page) = slot {
            let mut children = std::mem::take(&mut kids[i]);
            children.sort_by_key(|(k, _)| *k);
            page.children.extend(children.into_iter().map(|(_, p)| p));
            out.push(page);
        }
    }
    out
}

#[cfg(test)]
mod robots_tests {
    use super::Robots;

    #[test]
    fn robots_rules_and_sitemaps_are_read() {
        let robots = Robots::parse(
            b"User-agent: *\nDisallow: /private/\n\nUser-agent: quire\nDisallow: /drafts/\nAllow: /drafts/public\n\nSitemap: https://example.com/sitemap.xml\n",
        );
        // The group naming the crawl's agent applies, not the `*` group.
        assert!(robots.allowed("https://example.com/private/a"));
        assert!(!robots.allowed("https://example.com/drafts/a"));
        assert!(robots.allowed("https://example.com/drafts/public"));
        assert_eq!(robots.sitemaps(), ["https://example.com/sitemap.xml"]);
        assert!(Robots::allow_all().allowed("https://example.com/drafts/a"));
        assert!(!Robots::parse(b"User-agent: *\nDisallow: /\n").allowed("https://example.com/x"));
    }
}
