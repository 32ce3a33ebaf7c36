//! The page layout of published sites: the document around a rendered page, with the
//! site's chrome (header, sections, footer). Every value is escaped here; fragments passed
//! in as HTML were built escaped by their makers.

use std::fmt::Write;

use quire_content::html::{escape_attr as attr, escape_text as text};

use super::assets::{CSS, FOLDER, JS};

/// A link: its text and a URL already checked with `safe_url` or made by Quire.
pub type Link = (String, String);

/// What every page of a site shows around its content.
#[derive(Default)]
pub struct Chrome {
    /// `lang` of the document.
    pub lang: String,
    /// The site's title.
    pub site_title: String,
    /// The site's address (its landing page).
    pub home: String,
    /// Logo URLs, light and optionally dark.
    pub logo: Option<(String, Option<String>)>,
    /// The header's links.
    pub header_links: Vec<Link>,
    /// The footer's groups of links.
    pub footer_groups: Vec<(String, Vec<Link>)>,
    /// The footer's copyright line.
    pub copyright: Option<String>,
    /// The site's colours, as a stylesheet URL.
    pub theme_css: Option<String>,
    /// Sections as tabs (HTML, or empty).
    pub tabs: String,
    /// Where the search form sends its query, when the site has search.
    pub search: Option<String>,
    /// Whether robots must not index the page.
    pub noindex: bool,
    /// Where and under which ids `site.js` counts the page's events (no insights: `None`).
    pub insights: Option<Insights>,
}

/// What `site.js` sends with the events of a page: the site's `~insights` path and the ids
/// the page is shown under (nothing of the visitor).
#[derive(Default, Clone)]
pub struct Insights {
    /// The site's `~insights` path.
    pub endpoint: String,
    pub section: Option<String>,
    pub site_space: String,
    pub space: String,
}

/// The page inside the chrome.
#[derive(Default)]
pub struct Body {
    /// The page's title (the document's `<h1>` is part of `main`).
    pub title: String,
    /// Its description, for the meta tag.
    pub description: Option<String>,
    /// Its canonical URL.
    pub canonical: Option<String>,
    /// The sidebar's content (HTML, or empty for none).
    pub sidebar: String,
    /// The main column (HTML).
    pub main: String,
    /// The outline column (HTML, or empty).
    pub outline: String,
    /// The page's id, for its insights.
    pub page: Option<String>,
}

/// The whole HTML document. `prefix` is the path of Quire's public URL (no trailing `/`).
pub fn document(prefix: &str, chrome: &Chrome, body: &Body) -> String {
    let mut o = String::with_capacity(body.main.len() + body.sidebar.len() + 4096);
    let lang = if chrome.lang.is_empty() {
        "en"
    } else {
        &chrome.lang
    };
    let title = if body.title.is_empty() || body.title == chrome.site_title {
        chrome.site_title.clone()
    } else {
        format!("{} | {}", body.title, chrome.site_title)
    };
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n",
        attr(lang),
        text(&title)
    );
    if let Some(d) = body.description.as_deref().filter(|d| !d.is_empty()) {
        let _ = writeln!(o, "<meta name=\"description\" content=\"{}\">", attr(d));
    }
    if chrome.noindex {
        o.push_str("<meta name=\"robots\" content=\"noindex\">\n");
    }
    if let Some(c) = &body.canonical {
        let _ = writeln!(o, "<link rel=\"canonical\" href=\"{}\">", attr(c));
    }
    let _ = writeln!(
        o,
        "<link rel=\"stylesheet\" href=\"{prefix}/sites/{FOLDER}/{}\">",
        attr(&CSS.name)
    );
    if let Some(theme) = &chrome.theme_css {
        let _ = writeln!(o, "<link rel=\"stylesheet\" href=\"{}\">", attr(theme));
    }
    let _ = writeln!(
        o,
        "<script src=\"{prefix}/sites/{FOLDER}/{}\" defer></script>\n</head>",
        attr(&JS.name)
    );
    match &chrome.insights {
        Some(i) => {
            let _ = writeln!(
                o,
                "<body data-insights=\"{}\" data-site-section=\"{}\" data-site-space=\"{}\" \
                 data-space=\"{}\" data-page=\"{}\">",
                attr(&i.endpoint),
                attr(i.section.as_deref().unwrap_or("")),
                attr(&i.site_space),
                attr(&i.space),
                attr(body.page.as_deref().unwrap_or(""))
            );
        }
        None => o.push_str("<body>\n"),
    }
    o.push_str("<a class=\"skip\" href=\"#content\">Skip to content</a>\n");
    header(&mut o, chrome);
    o.push_str("<div class=\"layout\">\n");
    if !body.sidebar.is_empty() {
        // A `<details>` open by default: on a phone the stylesheet shows its summary as the
        // menu button, so the tree folds away without any script.
        let _ = writeln!(
            o,
            "<details class=\"sidebar\" open><summary>Menu</summary>\
             <nav aria-label=\"Pages\">{}</nav></details>",
            body.sidebar
        );
    } else {
        o.push_str("<div></div>\n");
    }
    let _ = write!(
        o,
        "<main id=\"content\" tabindex=\"-1\">\n{}\n</main>\n",
        body.main
    );
    if !body.outline.is_empty() {
        o.push_str(&body.outline);
    }
    o.push_str("</div>\n");
    footer(&mut o, chrome);
    o.push_str("</body>\n</html>\n");
    o
}

fn header(o: &mut String, chrome: &Chrome) {
    o.push_str("<header class=\"site-header\">\n<div class=\"bar\">");
    let _ = write!(o, "<a class=\"brand\" href=\"{}\">", attr(&chrome.home));
    if let Some((light, dark)) = &chrome.logo {
        o.push_str("<picture>");
        if let Some(dark) = dark {
            let _ = write!(
                o,
                "<source srcset=\"{}\" media=\"(prefers-color-scheme: dark)\">",
                attr(dark)
            );
        }
        let _ = write!(o, "<img src=\"{}\" alt=\"\"></picture>", attr(light));
    }
    let _ = write!(o, "<span>{}</span></a>", text(&chrome.site_title));
    if let Some(action) = &chrome.search {
        let _ = write!(
            o,
            "<form class=\"search\" role=\"search\" action=\"{}\" method=\"get\">\
             <label for=\"search-q\" class=\"skip\">Search</label>\
             <input id=\"search-q\" type=\"search\" name=\"q\" placeholder=\"Search\" autocomplete=\"off\">\
             <button type=\"submit\">Search</button></form>",
            attr(action)
        );
    }
    if !chrome.header_links.is_empty() {
        o.push_str("<nav class=\"header-links\" aria-label=\"Site links\"><ul>");
        for (title, url) in &chrome.header_links {
            let _ = write!(o, "<li><a href=\"{}\">{}</a></li>", attr(url), text(title));
        }
        o.push_str("</ul></nav>");
    }
    o.push_str("</div>\n");
    o.push_str(&chrome.tabs);
    o.push_str("</header>\n");
}

fn footer(o: &mut String, chrome: &Chrome) {
    o.push_str("<footer class=\"site-footer\">\n");
    if !chrome.footer_groups.is_empty() {
        o.push_str("<div class=\"footer-groups\">");
        for (title, links) in &chrome.footer_groups {
            let _ = write!(
                o,
                "<nav aria-label=\"{}\"><h2>{}</h2><ul>",
                attr(title),
                text(title)
            );
            for (t, url) in links {
                let _ = write!(o, "<li><a href=\"{}\">{}</a></li>", attr(url), text(t));
            }
            o.push_str("</ul></nav>");
        }
        o.push_str("</div>\n");
    }
    let line = chrome
        .copyright
        .clone()
        .unwrap_or_else(|| chrome.site_title.clone());
    let _ = writeln!(o, "<p class=\"copyright\">{}</p>", text(&line));
    o.push_str("</footer>\n");
}
