//! The page layout of published sites: the document around a rendered page, with the
//! site's chrome (header, sections, footer), as maud templates: every value is escaped by
//! the template; fragments passed in are `Markup` their own templates made.

use maud::{html, Markup, DOCTYPE};

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
    /// Sections as tabs (empty for none).
    pub tabs: Markup,
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
    /// The sidebar's content, when the page has one.
    pub sidebar: Option<Markup>,
    /// The main column.
    pub main: Markup,
    /// The outline column, when the page has one.
    pub outline: Option<Markup>,
    /// The page's id, for its insights.
    pub page: Option<String>,
}

/// The whole HTML document. `prefix` is the path of Quire's public URL (no trailing `/`).
pub fn document(prefix: &str, chrome: &Chrome, body: &Body) -> Markup {
    let lang = if chrome.lang.is_empty() {
        "en"
    } else {
        &chrome.lang
    };
    let site_title = chrome.site_title.as_str();
    let page_title = body.title.as_str();
    let own_title = !page_title.is_empty() && page_title != site_title;
    let description = body.description.as_deref().filter(|d| !d.is_empty());
    let insights = chrome.insights.as_ref();
    html! {
        (DOCTYPE)
        html lang=(lang) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title {
                    @if own_title { (page_title) " | " }
                    (site_title)
                }
                @if let Some(d) = description {
                    meta name="description" content=(d);
                }
                @if chrome.noindex {
                    meta name="robots" content="noindex";
                }
                @if let Some(c) = &body.canonical {
                    link rel="canonical" href=(c);
                }
                link rel="stylesheet" href={ (prefix) "/sites/" (FOLDER) "/" (CSS.name) };
                @if let Some(theme) = &chrome.theme_css {
                    link rel="stylesheet" href=(theme);
                }
                script src={ (prefix) "/sites/" (FOLDER) "/" (JS.name) } defer {}
            }
            body
                data-insights=[insights.map(|i| &i.endpoint)]
                data-site-section=[insights.map(|i| i.section.as_deref().unwrap_or(""))]
                data-site-space=[insights.map(|i| &i.site_space)]
                data-space=[insights.map(|i| &i.space)]
                data-page=[insights.map(|_| body.page.as_deref().unwrap_or(""))]
            {
                a class="skip" href="#content" { "Skip to content" }
                (header(chrome))
                div class="layout" {
                    @if let Some(sidebar) = &body.sidebar {
                        // A `<details>` open by default: on a phone the stylesheet shows its
                        // summary as the menu button, so the tree folds away without any
                        // script.
                        details class="sidebar" open {
                            summary { "Menu" }
                            nav aria-label="Pages" { (sidebar) }
                        }
                    } @else {
                        div {}
                    }
                    main id="content" tabindex="-1" { (body.main) }
                    @if let Some(outline) = &body.outline {
                        (outline)
                    }
                }
                (footer(chrome))
            }
        }
    }
}

fn header(chrome: &Chrome) -> Markup {
    html! {
        header class="site-header" {
            div class="bar" {
                a class="brand" href=(chrome.home) {
                    @if let Some((light, dark)) = &chrome.logo {
                        picture {
                            @if let Some(dark) = dark {
                                source srcset=(dark) media="(prefers-color-scheme: dark)";
                            }
                            img src=(light) alt="";
                        }
                    }
                    span { (chrome.site_title) }
                }
                @if let Some(action) = &chrome.search {
                    form class="search" role="search" action=(action) method="get" {
                        label for="search-q" class="skip" { "Search" }
                        input id="search-q" type="search" name="q" placeholder="Search"
                            autocomplete="off";
                        button type="submit" { "Search" }
                    }
                }
                @if !chrome.header_links.is_empty() {
                    nav class="header-links" aria-label="Site links" {
                        ul {
                            @for (title, url) in &chrome.header_links {
                                li { a href=(url) { (title) } }
                            }
                        }
                    }
                }
            }
            (chrome.tabs)
        }
    }
}

fn footer(chrome: &Chrome) -> Markup {
    html! {
        footer class="site-footer" {
            @if !chrome.footer_groups.is_empty() {
                div class="footer-groups" {
                    @for (title, links) in &chrome.footer_groups {
                        nav aria-label=(title) {
                            h2 { (title) }
                            ul {
                                @for (t, url) in links {
                                    li { a href=(url) { (t) } }
                                }
                            }
                        }
                    }
                }
            }
            p class="copyright" {
                (chrome.copyright.as_deref().unwrap_or(&chrome.site_title))
            }
        }
    }
}
