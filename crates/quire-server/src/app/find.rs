//! Quick find (`/find?q=`), reached from every screen's top bar or with Ctrl+K (⌘K): with no
//! words, the person's recent pages and every organization and space they may read (the
//! switcher); with words, the organizations and spaces whose names hold them, and the pages
//! the search finds in all of those spaces. Its results follow the typing as the search
//! screens' do (the same script, the same fragment answer).

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::{html, Markup};

use super::screens::current_content;
use super::search::{
    self, answer_markup, asked, result_list, results_region, search_form, too_long_region, Asked,
};
use super::session::Signed;
use super::shell::{failed, page};
use crate::domain::access::{self, grants::Grants};
use crate::domain::search::analyze::fold;
use crate::domain::search::ask::org_spaces as search_spaces;
use crate::state::AppState;
use crate::store;
use crate::store::spaces::SpaceRow;

/// Most organizations a person's switcher lists.
const ORGS: i64 = 100;

/// Most spaces of an organization the switcher lists (the search reads them all).
const SPACES: usize = 500;

/// Recent pages shown.
pub const RECENT: i64 = 10;

/// An organization the person belongs to and the spaces of it they may read.
struct Place {
    id: String,
    title: String,
    spaces: Vec<SpaceRow>,
}

/// The organizations of the signed-in person (only the session's own for a single sign-on
/// session) with the spaces they may read in each.
async fn places(state: &AppState, signed: &Signed) -> crate::error::ApiResult<Vec<Place>> {
    let caller = signed.caller();
    let (orgs, _) =
        store::orgs::list_for_user(&state.db, signed.user.id.as_str(), None, ORGS).await?;
    let mut out = Vec::new();
    for o in orgs
        .into_iter()
        .filter(|o| signed.scope.as_ref().is_none_or(|s| *s == o.org.id))
    {
        let Ok(org) = access::load_org(state, &caller, &o.org.id).await else {
            continue;
        };
        let grants = Grants::load(state, &o.org.id, &caller.user.id, org.role).await?;
        // The spaces the organization's search reads: a page found here is found there.
        let spaces = search_spaces(state, o.org.id.as_str(), &grants).await?;
        out.push(Place {
            id: o.org.id.as_str().to_string(),
            title: o.org.title,
            spaces,
        });
    }
    Ok(out)
}

/// A page the person opened lately, as a link.
pub struct Recent {
    pub title: String,
    pub url: String,
    pub space: String,
}

/// The pages the signed-in person opened last that they may still read, newest first.
pub async fn recent(
    state: &AppState,
    signed: &Signed,
    limit: i64,
) -> crate::error::ApiResult<Vec<Recent>> {
    let caller = signed.caller();
    let seen = store::recent::list(&state.db, signed.user.id.as_str(), limit).await?;
    let mut out = Vec::new();
    for (space_id, page_id) in seen {
        let Ok(ctx) = access::load_space(state, &caller, &space_id).await else {
            continue;
        };
        if ctx.space.deleted_at.is_some()
            || signed.scope.as_ref().is_some_and(|s| *s != ctx.org.org.id)
        {
            continue;
        }
        let rev = current_content(state, &ctx).await?;
        let (Some(page), Some(path)) = (rev.page(&page_id), rev.path_of(&page_id)) else {
            continue;
        };
        out.push(Recent {
            title: page.title.clone(),
            url: format!("/s/{}/{}", ctx.space.id, path),
            space: ctx.space.title.clone(),
        });
    }
    Ok(out)
}

/// The list of recent pages.
pub fn recent_list(pages: &[Recent]) -> Markup {
    html! {
        ul.recent {
            @for p in pages {
                li { a href=(p.url) { (p.title) } " " span.muted { (p.space) } }
            }
        }
    }
}

/// `GET /find?q=`.
pub async fn screen(
    State(state): State<AppState>,
    Query(query): Query<search::SearchQuery>,
    headers: HeaderMap,
    signed: Signed,
) -> Response {
    let q = query.q.unwrap_or_default();
    let places = match places(&state, &signed).await {
        Ok(p) => p,
        Err(e) => return failed(e),
    };
    let found = match asked(&q) {
        Asked::TooLong => too_long_region(),
        Asked::Nothing => {
            let recent = match recent(&state, &signed, RECENT).await {
                Ok(r) => r,
                Err(e) => return failed(e),
            };
            let list = html! {
                @if !recent.is_empty() {
                    h2 { "Recent pages" }
                    (recent_list(&recent))
                }
                h2 { "Your organizations and spaces" }
                (switcher(&places, None))
            };
            results_region("", list)
        }
        Asked::Words(words) => {
            let ids: Vec<&str> = places
                .iter()
                .flat_map(|p| p.spaces.iter().map(|s| s.id.as_str()))
                .collect();
            let (count, pages) = match result_list(&state, &ids, words).await {
                Ok(r) => r,
                Err(e) => return failed(e),
            };
            let list = html! {
                (switcher(&places, Some(&key(words.trim()))))
                h2 { "Pages" }
                (pages)
            };
            results_region(&count, list)
        }
    };
    let viewer = signed.viewer();
    answer_markup(search::wants_fragment(&headers), found, |found| {
        let body = html! {
            h1 { "Find" }
            (search_form("/find", &q, "A page, a space or an organization"))
            (found)
        };
        page(StatusCode::OK, "Find", Some(&viewer), None, body)
    })
}

/// The organizations and their spaces as links; only those whose names hold `words` (folded)
/// when given.
fn switcher(places: &[Place], words: Option<&str>) -> Markup {
    let holds = |name: &str| words.is_none_or(|w| key(name).contains(w));
    let shown: Vec<(&Place, Vec<&SpaceRow>)> = places
        .iter()
        .map(|p| {
            (
                p,
                p.spaces
                    .iter()
                    .filter(|s| holds(&s.title))
                    .take(SPACES)
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(p, spaces)| holds(&p.title) || !spaces.is_empty())
        .collect();
    html! {
        @if !shown.is_empty() {
            ul.switcher {
                @for (p, spaces) in &shown {
                    li {
                        a href={ "/o/" (p.id) } { (p.title) }
                        @if !spaces.is_empty() {
                            ul {
                                @for s in spaces {
                                    li { a href={ "/s/" (s.id) } { (s.title) } }
                                }
                            }
                        }
                    }
                }
            }
        } @else if words.is_none() {
            p { "You are not a member of any organization yet." }
        }
    }
}

/// A name as the switcher compares it: lower case, Latin diacritics folded.
fn key(name: &str) -> String {
    fold(&name.to_lowercase())
}
