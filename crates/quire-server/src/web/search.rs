//! `~search` of a published site space: the space's full-text index (the one `GET
//! SPACE/search` reads), kept to the pages a visitor may open from the site's navigation,
//! answered as an HTML page or, with `format=json`, as the script's instant results.

use std::collections::HashMap;

use maud::{html, Markup};
use serde_json::json;

use crate::domain::search;
use crate::domain::search::ask::Refused;
use crate::domain::search::query::MAX_QUERY_CHARS;
use crate::error::ApiResult;
use crate::state::AppState;

/// Results shown at most.
pub const LIMIT: usize = 20;

/// What the visitor asked.
pub enum Ask {
    /// No query: the empty form.
    Empty,
    /// A query longer than the search accepts.
    TooLong,
    /// A query to run.
    Text(String),
}

impl Ask {
    /// The `q` parameter of a query string.
    pub fn from_query(query: Option<&str>) -> Self {
        let q = query.and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "q")
                .map(|(_, v)| v.into_owned())
        });
        let Some(q) = q else {
            return Ask::Empty;
        };
        match search::ask::accept(&q) {
            Ok(_) => Ask::Text(q),
            Err(Refused::Empty) => Ask::Empty,
            Err(Refused::TooLong) => Ask::TooLong,
        }
    }
}

/// One result: a page of the site space, or one of its sections.
pub struct Hit {
    /// The page's title.
    pub title: String,
    /// The heading of the section that matched, for section hits.
    pub section: Option<String>,
    /// Its published URL (with the section's anchor for section hits).
    pub url: String,
    /// Plain text around the matches.
    pub excerpt: String,
}

/// The best hits of `text` in the space `space_id` for `visitor` (the context conditions
/// read), among `allowed` (page id to published URL): pages elsewhere in the ranking are
/// skipped, so a hidden page or one the visitor's conditions exclude never shows, not even
/// as a count; text under a condition that does not hold for them neither matches nor shows
/// in an excerpt.
pub async fn run(
    state: &AppState,
    space_id: &str,
    text: &str,
    allowed: &HashMap<&str, String>,
    visitor: &serde_json::Value,
) -> ApiResult<Vec<Hit>> {
    // The index follows the space's current revision, which is the one sites publish;
    // a stale index is brought up to date here, as API searches do.
    let answer = search::site::for_visitor(state, &[space_id], text, visitor).await?;
    let found = search::site::visible_hits(state, &answer, LIMIT, |_, page_id| {
        allowed.get(page_id).cloned()
    })
    .await?;
    Ok(found
        .into_iter()
        .map(|(found, url)| {
            let best = found.sections.first();
            let section = best
                .filter(|s| found.result_type == "section" && !s.id.is_empty())
                .map(|s| (s.title.clone(), format!("{url}#{}", s.id)));
            let excerpt = best
                .map(|s| s.body.clone())
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| found.description.clone());
            Hit {
                title: found.title,
                url: section
                    .as_ref()
                    .map_or_else(|| url.clone(), |(_, u)| u.clone()),
                section: section.map(|(t, _)| t),
                excerpt,
            }
        })
        .collect())
}

/// The results as JSON for the script: `{"items":[{"title","url","excerpt"}]}`.
pub fn json(hits: &[Hit]) -> String {
    let items: Vec<_> = hits
        .iter()
        .map(|h| {
            let title = match &h.section {
                Some(s) if *s != h.title => format!("{} › {s}", h.title),
                _ => h.title.clone(),
            };
            json!({ "title": title, "url": h.url, "excerpt": h.excerpt })
        })
        .collect();
    json!({ "items": items }).to_string()
}

/// The main column of the results page: a form holding the query, then the results.
pub fn main(action: &str, ask: &Ask, hits: &[Hit]) -> Markup {
    let value = match ask {
        Ask::Text(q) => q.as_str(),
        _ => "",
    };
    html! {
        h1 { "Search" }
        form class="search-page" role="search" action=(action) method="get" {
            label for="search-page-q" { "Search this site" }
            " "
            input id="search-page-q" type="search" name="q" value=(value)
                maxlength=(MAX_QUERY_CHARS);
            " "
            button type="submit" { "Search" }
        }
        @match ask {
            Ask::Empty => {}
            Ask::TooLong => {
                p class="search-message" role="alert" {
                    "That search is too long: use at most " (MAX_QUERY_CHARS) " characters."
                }
            }
            Ask::Text(q) if hits.is_empty() => {
                p class="search-message" role="status" { "No results for “" (q) "”." }
            }
            Ask::Text(q) => {
                p class="search-message" role="status" {
                    @if hits.len() == 1 { "1 result" } @else { (hits.len()) " results" }
                    " for “" (q) "”:"
                }
                ol class="search-results" {
                    @for h in hits {
                        li {
                            a href=(h.url) { (h.title) }
                            @if let Some(s) = h.section.as_ref().filter(|s| **s != h.title) {
                                " "
                                span class="search-section" { "› " (s) }
                            }
                            @if !h.excerpt.is_empty() {
                                p { (h.excerpt) }
                            }
                        }
                    }
                }
            }
        }
    }
}
