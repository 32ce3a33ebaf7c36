//! Search screens: a space's (`/s/{spaceId}/~/search?q=`) and an organization's
//! (`/o/{organizationId}/search?q=`), over the same index and ranking as the API's search,
//! each result with its best sections and the query's words marked. Plain forms: they work
//! without script. With the app's script, results follow the typing: it asks the same
//! screen, with the same session and access, for its results region only (the [`FRAGMENT`]
//! header), rendered here as on the page, and swaps it in.

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::InOrg;
use super::session::Signed;
use super::shell::{failed, page, with_headers};
use crate::domain::access::grants::Grants;
use crate::domain::access::SpaceCtx;
use crate::domain::search::ask::{self, Refused};
use crate::domain::search::query;
use crate::state::AppState;

/// Results a search screen shows.
const SHOWN: usize = 20;
/// Longest query accepted: the API's.
pub const MAX_QUERY: usize = query::MAX_QUERY_CHARS;
/// The request header by which the script asks a search screen for its results region only
/// (`results`). The answer names it too, so that the script never swaps in another page
/// (the sign-in page a lapsed session is sent to, say).
pub const FRAGMENT: &str = "x-quire-fragment";

/// The query of a space's screens: `q` of a search, `by` of the change requests.
#[derive(Deserialize, Default)]
pub struct SearchQuery {
    pub q: Option<String>,
    /// The author filter of the change requests screen.
    pub by: Option<String>,
}

/// Whether a request asks for a search screen's results region only.
pub fn wants_fragment(headers: &HeaderMap) -> bool {
    headers.get(FRAGMENT).is_some_and(|v| v == "results")
}

/// The search form, filled with `q`; `data-live` tells the script to search as one types.
pub(super) fn search_form(action: &str, q: &str, label: &str) -> Markup {
    html! {
        form method="get" action=(action) role="search" data-live {
            label for="q" { (label) }
            input id="q" name="q" type="search" value=(q) maxlength=(MAX_QUERY) autocomplete="off";
            button type="submit" { "Search" }
        }
    }
}

/// What a search screen shows under its form, and all that its fragment answer holds: the
/// count, a live region that the script keeps and refills (so that screen readers hear each
/// new count), and the results. The script matches the parts to the page's by their ids.
pub(super) fn results_region(status: &str, results: impl maud::Render) -> Markup {
    html! {
        p id="search-status" role="status" { (status) }
        div id="search-results" { (results) }
    }
}

/// What was asked: nothing, too much, or words to find.
pub(super) enum Asked<'a> {
    Nothing,
    TooLong,
    Words(&'a str),
}

/// What `q` asks, as the API accepts it. Words are kept as typed, not trimmed: a space after
/// the last word says it is complete, as it does to the API.
pub(super) fn asked(q: &str) -> Asked<'_> {
    match ask::accept(q) {
        Ok(q) => Asked::Words(q),
        Err(Refused::Empty) => Asked::Nothing,
        Err(Refused::TooLong) => Asked::TooLong,
    }
}

/// The region of a query too long.
pub(super) fn too_long_region() -> Markup {
    results_region("", html! { p class="error" { "The query is too long." } })
}

/// A search screen's answer: its page, or its region alone when the script asks. Either
/// way the app's headers (CSP, nosniff, no-store), and `Vary` naming the header that
/// chooses.
pub(super) fn answer_markup(
    fragment: bool,
    found: Markup,
    page: impl FnOnce(Markup) -> Response,
) -> Response {
    let mut res = if fragment {
        let mut res = with_headers(found.into_string().into_response());
        res.headers_mut().insert(
            HeaderName::from_static(FRAGMENT),
            HeaderValue::from_static("results"),
        );
        res
    } else {
        page(found)
    };
    res.headers_mut()
        .append(header::VARY, HeaderValue::from_static(FRAGMENT));
    res
}

/// `text` escaped, with each of `words` marked where it occurs (case-insensitively).
fn marked(s: &str, words: &[String]) -> Markup {
    let lower = s.to_lowercase();
    // Positions are found in the lower-cased text: only when lower-casing keeps every byte
    // where it was (almost all text) can they be used in the original.
    if lower.len() != s.len() || words.is_empty() {
        return html! { (s) };
    }
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for w in words {
        let w = w.to_lowercase();
        if w.is_empty() {
            continue;
        }
        let mut from = 0;
        while let Some(at) = lower[from..].find(&w) {
            let start = from + at;
            let end = start + w.len();
            if s.is_char_boundary(start) && s.is_char_boundary(end) {
                spans.push((start, end));
            }
            from = end;
        }
    }
    spans.sort_unstable();
    // Overlapping spans (a query's CJK bigrams overlap by a character) mark their union.
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    // The text in pieces, each marked or not.
    let mut pieces: Vec<(&str, bool)> = Vec::new();
    let mut at = 0;
    for (start, end) in merged {
        pieces.push((&s[at..start], false));
        pieces.push((&s[start..end], true));
        at = end;
    }
    pieces.push((&s[at..], false));
    html! {
        @for (piece, hit) in pieces {
            @if hit { mark { (piece) } } @else { (piece) }
        }
    }
}

/// The region for `q` over the spaces whose ids are given (all readable by the viewer).
async fn results(state: &AppState, space_ids: &[&str], q: &str) -> crate::error::ApiResult<Markup> {
    let (count, list) = result_list(state, space_ids, q).await?;
    Ok(results_region(&count, list))
}

/// The count and the list of the pages of `space_ids` that `q` finds, best first.
pub(super) async fn result_list(
    state: &AppState,
    space_ids: &[&str],
    q: &str,
) -> crate::error::ApiResult<(String, Markup)> {
    let answer = ask::ask(state, space_ids, q, None, SHOWN).await?;
    let found = answer.render(state, 0, SHOWN).await?;
    // The query's words, to mark them.
    let words: Vec<String> = query::parse(q)
        .clauses
        .into_iter()
        .flat_map(|c| c.words)
        .collect();
    let count = format!(
        "{} {}.",
        answer.count(),
        if answer.count() == 1 {
            "page matches"
        } else {
            "pages match"
        }
    );
    let list = html! {
        ol class="results" {
            @for p in &found {
                // Which page each result is, for tools that read the list.
                li data-result-space=(answer.states[p.space].space_id) data-result-page=(p.id) {
                    a href=(p.url) { (marked(&p.title, &words)) }
                    @if !p.ancestors.is_empty() {
                        " "
                        span class="muted" { (p.ancestors.join(" / ")) }
                    }
                    @for s in p.sections.iter().take(2) {
                        p class="excerpt" {
                            a href=(s.url) { (marked(&s.title, &words)) }
                            ": "
                            (marked(&s.body, &words))
                        }
                    }
                }
            }
        }
    };
    Ok((count, list))
}

/// A space's search screen (`~/search`), inside the space's layout; its region alone when
/// `fragment` (the caller has checked the viewer may read the space).
pub async fn space(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &super::shell::Viewer<'_>,
    nav: Option<&Markup>,
    q: &str,
    fragment: bool,
) -> Response {
    let found = match asked(q) {
        Asked::Nothing => results_region("", ""),
        Asked::TooLong => too_long_region(),
        Asked::Words(q) => match results(state, &[ctx.space.id.as_str()], q).await {
            Ok(html) => html,
            Err(e) => return failed(e),
        },
    };
    answer_markup(fragment, found, |found| {
        let action = format!("/s/{}/~/search", ctx.space.id);
        let body = html! {
            h1 { "Search " (ctx.space.title) }
            (search_form(&action, q, "Words to find in this space"))
            (found)
        };
        page(StatusCode::OK, "Search", Some(viewer), nav, body)
    })
}

/// `GET /o/{organizationId}/search?q=`: every space of the organization the viewer may read.
pub async fn org(
    State(state): State<AppState>,
    Query(query): Query<SearchQuery>,
    headers: HeaderMap,
    signed: Signed,
    InOrg(org): InOrg,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    let id = org.org.id.clone();
    let q = query.q.unwrap_or_default();
    let found = match asked(&q) {
        Asked::Nothing => results_region("", ""),
        Asked::TooLong => too_long_region(),
        Asked::Words(q) => {
            let grants = match Grants::load(&state, &id, &caller.user.id, org.role).await {
                Ok(g) => g,
                Err(e) => return failed(e),
            };
            let spaces = match ask::org_spaces(&state, id.as_str(), &grants).await {
                Ok(s) => s,
                Err(e) => return failed(e),
            };
            let ids: Vec<&str> = spaces.iter().map(|s| s.id.as_str()).collect();
            match results(&state, &ids, q).await {
                Ok(html) => html,
                Err(e) => return failed(e),
            }
        }
    };
    answer_markup(wants_fragment(&headers), found, |found| {
        let body = html! {
            h1 { "Search " (org.org.title) }
            (search_form(
                &format!("/o/{}/search", id.as_str()),
                &q,
                "Words to find in the organization's spaces",
            ))
            (found)
        };
        page(StatusCode::OK, "Search", Some(&viewer), None, body)
    })
}

#[cfg(test)]
mod tests {
    use super::marked;

    #[test]
    fn words_are_marked_case_insensitively_and_everything_is_escaped() {
        let got = marked("Install <it> then INSTALL more", &["install".into()]).into_string();
        assert_eq!(
            got,
            "<mark>Install</mark> &lt;it&gt; then <mark>INSTALL</mark> more"
        );
        assert_eq!(marked("a <b>", &[]).into_string(), "a &lt;b&gt;");
        // A CJK run's bigrams overlap: the run is marked whole.
        let words: Vec<String> = ["検索", "索設", "設定"].map(String::from).to_vec();
        assert_eq!(
            marked("この検索設定は", &words).into_string(),
            "この<mark>検索設定</mark>は"
        );
    }
}
