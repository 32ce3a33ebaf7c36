//! `searchSiteContent`: a site's search as an API, over the site spaces a scope names, as one
//! visitor sees the site (the site's own search, `search::site`, with the pages that visitor
//! may open from each site space's navigation).

use std::collections::HashMap;

use serde_json::Value;

use super::published::{entries, visible};
use super::search::query::FoundPage;
use super::sites::{self as rules, Urls};
use crate::domain::{content, search};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::sites::{SiteRow, SiteSpaceRow, Structure};

/// The most site space ids a scope names.
pub const MAX_IDS: usize = 100;

/// Which site spaces a search reads (`SiteSearchScope`, and the deprecated `mode`s).
#[derive(Debug, Clone)]
pub enum Scope {
    /// Every site space.
    All,
    /// The default site space of each section (of the site, without sections), and these.
    Default(Vec<String>),
    /// Only these (`field` names them in errors).
    Specific(Vec<String>, &'static str),
    /// This one and the default of each section (`field` names it in errors).
    Current(String, &'static str),
}

/// One hit: the site space whose page it is, the page, and the page's published URL.
pub struct SiteHit {
    /// The site space.
    pub site_space: SiteSpaceRow,
    /// The title of its space.
    pub space_title: String,
    /// The page found, with its best sections.
    pub page: FoundPage,
    /// The page's published URL.
    pub url: String,
}

/// The site spaces of `s` shown to `visitor`: their condition and their section's hold.
fn shown<'a>(s: &'a Structure, visitor: &Value) -> Vec<&'a SiteSpaceRow> {
    let sections: HashMap<&str, bool> = s
        .sections
        .iter()
        .map(|x| (x.id.as_str(), visible(x.condition.as_deref(), visitor)))
        .collect();
    let mut out = Vec::new();
    let containers: Vec<Option<&str>> = if s.sections.is_empty() {
        vec![None]
    } else {
        rules::ordered_sections(s)
            .into_iter()
            .map(|x| Some(x.id.as_str()))
            .collect()
    };
    for container in containers {
        if container.is_some_and(|id| !sections.get(id).copied().unwrap_or(false)) {
            continue;
        }
        out.extend(
            rules::site_spaces_in(s, container)
                .into_iter()
                .filter(|x| visible(x.condition.as_deref(), visitor)),
        );
    }
    out
}

/// The default site space of each section a visitor sees (of the site without sections),
/// as the published site picks it.
fn defaults<'a>(
    site: &SiteRow,
    s: &'a Structure,
    shown: &[&'a SiteSpaceRow],
) -> Vec<&'a SiteSpaceRow> {
    let mut containers: Vec<Option<&str>> = shown.iter().map(|x| x.section_id.as_deref()).collect();
    containers.dedup();
    containers
        .into_iter()
        .filter_map(|container| {
            let section = container.and_then(|id| s.sections.iter().find(|x| x.id == id));
            let here: Vec<&SiteSpaceRow> = shown
                .iter()
                .copied()
                .filter(|x| x.section_id.as_deref() == container)
                .collect();
            rules::default_site_space(site, s, section)
                .filter(|d| here.iter().any(|x| x.id == d.id))
                .or_else(|| here.first().copied())
        })
        .collect()
}

/// 400 naming `field` unless every id is a site space of the site.
fn known(s: &Structure, ids: &[String], field: &str) -> ApiResult<()> {
    if ids.len() > MAX_IDS {
        return Err(ApiError::bad_request(format!(
            "`{field}` names at most {MAX_IDS} site spaces."
        )));
    }
    match ids
        .iter()
        .find(|id| !s.site_spaces.iter().any(|x| &x.id == *id))
    {
        Some(id) => Err(ApiError::bad_request(format!(
            "`{field}`: no site space `{id}` in this site."
        ))),
        None => Ok(()),
    }
}

/// The site spaces `scope` names that `visitor` sees, in the site's order, each space once.
fn chosen<'a>(
    site: &SiteRow,
    s: &'a Structure,
    scope: &Scope,
    visitor: &Value,
) -> ApiResult<Vec<&'a SiteSpaceRow>> {
    let shown = shown(s, visitor);
    let wanted: Vec<&str> = match scope {
        Scope::All => shown.iter().map(|x| x.id.as_str()).collect(),
        Scope::Default(extra) => {
            known(s, extra, "scope.includedSiteSpaces")?;
            let mut ids: Vec<&str> = defaults(site, s, &shown)
                .into_iter()
                .map(|x| x.id.as_str())
                .collect();
            ids.extend(extra.iter().map(String::as_str));
            ids
        }
        Scope::Specific(ids, field) => {
            if ids.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "`{field}` must name at least one site space."
                )));
            }
            known(s, ids, field)?;
            ids.iter().map(String::as_str).collect()
        }
        Scope::Current(id, field) => {
            known(s, std::slice::from_ref(id), field)?;
            let mut ids = vec![id.as_str()];
            ids.extend(defaults(site, s, &shown).into_iter().map(|x| x.id.as_str()));
            ids
        }
    };
    let mut spaces = std::collections::HashSet::new();
    Ok(shown
        .into_iter()
        .filter(|x| wanted.contains(&x.id.as_str()))
        .filter(|x| spaces.insert(x.space_id.as_str()))
        .collect())
}

/// The best `want` hits of `text` in the site spaces of `site` that `scope` names, as
/// `visitor` sees the site (under `share_key`'s URLs when given), in ranking order.
pub async fn search(
    state: &AppState,
    site: &SiteRow,
    scope: &Scope,
    text: &str,
    visitor: &Value,
    share_key: Option<&str>,
    want: usize,
) -> ApiResult<Vec<SiteHit>> {
    let structure = store::sites::structure(&state.db, &site.id).await?;
    let site_spaces = chosen(site, &structure, scope, visitor)?;
    let ids: Vec<&str> = site_spaces.iter().map(|x| x.space_id.as_str()).collect();
    // Ties between spaces break in the site's order.
    let answer = search::site::for_visitor(state, &ids, text, visitor).await?;
    let states = &answer.states;
    let urls = Urls::new(state, site, share_key);
    // Per space: its site space and, per page a visitor reaches through the navigation
    // (and not excluded from search), its published URL.
    let mut allowed: HashMap<&str, (&SiteSpaceRow, HashMap<String, String>)> = HashMap::new();
    for s in states {
        let Some(ss) = site_spaces
            .iter()
            .copied()
            .find(|x| x.space_id == s.space_id)
        else {
            continue;
        };
        let rev = content::load_in(state, &s.space_id, &s.root).await?;
        let base = urls.site_space(site, &structure, ss);
        let pages = entries(&rev, visitor)
            .into_iter()
            .filter(|e| {
                e.listed
                    && matches!(e.page.kind, quire_content::model::PageKind::Document(_))
                    && !e.page.no_index
            })
            .map(|e| (e.page.id.clone(), format!("{base}{}", e.path)))
            .collect();
        allowed.insert(s.space_id.as_str(), (ss, pages));
    }
    let found = search::site::visible_hits(state, &answer, want, |space, page| {
        allowed
            .get(space)
            .and_then(|(_, pages)| pages.get(page).cloned())
    })
    .await?;
    Ok(found
        .into_iter()
        .filter_map(|(page, url)| {
            let s = &states[page.space];
            let (ss, _) = allowed.get(s.space_id.as_str())?;
            Some(SiteHit {
                site_space: (*ss).clone(),
                space_title: s.title.clone(),
                page,
                url,
            })
        })
        .collect())
}
