//! Site redirects: their checks, their writes, and where one sends a visitor. A redirect is
//! followed only where the site would otherwise answer 404 (a page wins over a redirect from
//! its path), so a redirect never hides content; published sites ask [`follow`].

use serde::{Deserialize, Serialize};

use crate::domain::content;
use crate::domain::sites::Urls;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::redirects::RedirectRow;
use crate::store::sites::{SiteRow, Structure};

/// Most redirects a site holds.
pub const MAX_PER_SITE: i64 = 2000;
/// Longest source path (the official schema's `maxLength`).
pub const MAX_SOURCE: usize = 512;
/// Longest id a destination names.
const MAX_ID: usize = 100;

/// `SiteRedirectDestination`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum Destination {
    /// A section of the site.
    #[serde(rename = "site-section", rename_all = "camelCase")]
    SiteSection { site_section_id: String },
    /// A site space of the site.
    #[serde(rename = "site-space", rename_all = "camelCase")]
    SiteSpace { site_space_id: String },
    /// A page of a site space's space.
    #[serde(rename = "site-page", rename_all = "camelCase")]
    SitePage {
        site_space_id: String,
        page_id: String,
    },
}

impl Destination {
    /// The destination a stored row names.
    pub fn of(row: &RedirectRow) -> ApiResult<Destination> {
        let id = |v: &Option<String>| {
            v.clone().ok_or_else(|| {
                ApiError::internal(anyhow::anyhow!("redirect {} lacks its destination", row.id))
            })
        };
        Ok(match row.kind.as_str() {
            "site-section" => Destination::SiteSection {
                site_section_id: id(&row.section_id)?,
            },
            "site-space" => Destination::SiteSpace {
                site_space_id: id(&row.site_space_id)?,
            },
            "site-page" => Destination::SitePage {
                site_space_id: id(&row.site_space_id)?,
                page_id: id(&row.page_id)?,
            },
            other => {
                return Err(ApiError::internal(anyhow::anyhow!(
                    "redirect {} has an unknown kind `{other}`",
                    row.id
                )))
            }
        })
    }

    /// Writes this destination into a row's kind and columns.
    fn store_in(&self, row: &mut RedirectRow) {
        let (kind, section, site_space, page) = match self {
            Destination::SiteSection { site_section_id } => {
                ("site-section", Some(site_section_id), None, None)
            }
            Destination::SiteSpace { site_space_id } => {
                ("site-space", None, Some(site_space_id), None)
            }
            Destination::SitePage {
                site_space_id,
                page_id,
            } => ("site-page", None, Some(site_space_id), Some(page_id)),
        };
        row.kind = kind.to_string();
        row.section_id = section.cloned();
        row.site_space_id = site_space.cloned();
        row.page_id = page.cloned();
    }
}

/// Checks a source path against the official `SiteRedirectSourcePath`: at most 512
/// characters, `/` then segments of unreserved characters or `%XX` escapes, separated by
/// single `/`s, no trailing `/`.
pub fn check_source(field: &str, source: &str) -> ApiResult<()> {
    crate::validate::length(field, source, 2, MAX_SOURCE)?;
    let bad = || {
        ApiError::bad_request(format!(
            "`{field}` must be a path such as `/old/page`: segments of letters, digits, \
             `-`, `.`, `_`, `~` or `%XX` escapes, each after one `/`."
        ))
    };
    let rest = source.strip_prefix('/').ok_or_else(bad)?;
    for segment in rest.split('/') {
        let bytes = segment.as_bytes();
        if bytes.is_empty() {
            return Err(bad());
        }
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => i += 1,
                b'%' if bytes.len() > i + 2
                    && bytes[i + 1].is_ascii_hexdigit()
                    && bytes[i + 2].is_ascii_hexdigit() =>
                {
                    i += 3
                }
                _ => return Err(bad()),
            }
        }
    }
    Ok(())
}

/// Checks that a destination names what the site's structure holds: its section, or its
/// site space; answers the space of a site space.
fn check_structure(structure: &Structure, d: &Destination) -> ApiResult<Option<String>> {
    let missing = |field: &str, id: &str| {
        ApiError::bad_request(format!(
            "`destination.{field}`: `{id}` is not in this site."
        ))
    };
    match d {
        Destination::SiteSection { site_section_id } => {
            crate::validate::length("destination.siteSectionId", site_section_id, 1, MAX_ID)?;
            if !structure.sections.iter().any(|s| &s.id == site_section_id) {
                return Err(missing("siteSectionId", site_section_id));
            }
            Ok(None)
        }
        Destination::SiteSpace { site_space_id } | Destination::SitePage { site_space_id, .. } => {
            crate::validate::length("destination.siteSpaceId", site_space_id, 1, MAX_ID)?;
            match structure
                .site_spaces
                .iter()
                .find(|s| &s.id == site_space_id)
            {
                Some(ss) => Ok(Some(ss.space_id.clone())),
                None => Err(missing("siteSpaceId", site_space_id)),
            }
        }
    }
}

/// Checks a destination against the site as it is (before the writing transaction, which
/// checks the structure again): a page must be in its site space's space now.
async fn check_destination(state: &AppState, site: &SiteRow, d: &Destination) -> ApiResult<()> {
    let structure = store::sites::structure(&state.db, &site.id).await?;
    let space = check_structure(&structure, d)?;
    if let (Destination::SitePage { page_id, .. }, Some(space)) = (d, space) {
        crate::validate::length("destination.pageId", page_id, 1, MAX_ID)?;
        if page_path(state, &space, page_id).await?.is_none() {
            return Err(ApiError::bad_request(format!(
                "`destination.pageId`: `{page_id}` is not a page of the site space's space."
            )));
        }
    }
    Ok(())
}

/// The path of a page in a space's current content, if it is there.
async fn page_path(state: &AppState, space_id: &str, page_id: &str) -> ApiResult<Option<String>> {
    let revision = crate::domain::access::current_revision(state, space_id).await?;
    let Some(row) = content::revision_row(state, space_id, &revision).await? else {
        return Ok(None);
    };
    let rev = content::load_in(state, space_id, &row.root).await?;
    Ok(rev.path_of(page_id))
}

/// A new redirect from `source` to `destination` in a site: 409 when the site already has
/// one from that source, 400 past [`MAX_PER_SITE`].
pub async fn create(
    state: &AppState,
    site: &SiteRow,
    source: String,
    destination: &Destination,
) -> ApiResult<RedirectRow> {
    check_source("source", &source)?;
    check_destination(state, site, destination).await?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(&site.id)]);
    // The site's row is the turn of every redirect write of the site.
    store::sites::lock(&mut tx, &site.org_id, &site.id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Site `{}` not found.", site.id)))?;
    let structure = store::sites::structure_tx(&mut tx, &site.id).await?;
    check_structure(&structure, destination)?;
    if store::redirects::count_tx(&mut tx, &site.id).await? >= MAX_PER_SITE {
        return Err(ApiError::bad_request(format!(
            "A site holds at most {MAX_PER_SITE} redirects: delete one before adding `source` `{source}`."
        )));
    }
    let row = new_row(&site.id, source, destination, state.now());
    store::redirects::insert(&mut tx, &row)
        .await
        .map_err(|e| duplicate(e, &row.source))?;
    tx.commit().await?;
    Ok(row)
}

/// A new redirect of site `site_id` from `source` to `destination`, made at `now`.
fn new_row(site_id: &str, source: String, destination: &Destination, now: i64) -> RedirectRow {
    let mut row = RedirectRow {
        id: new_id(),
        site_id: site_id.to_string(),
        source,
        kind: String::new(),
        section_id: None,
        site_space_id: None,
        page_id: None,
        created_at: now,
        updated_at: now,
    };
    destination.store_in(&mut row);
    row
}

/// A unique violation named for the field that caused it.
fn duplicate(err: sqlx::Error, source: &str) -> ApiError {
    match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            ApiError::conflict(format!("`source`: the site already redirects `{source}`."))
        }
        _ => err.into(),
    }
}

/// Changes a redirect's source and/or destination (404 when the site has no such redirect).
pub async fn update(
    state: &AppState,
    site: &SiteRow,
    id: &str,
    source: Option<String>,
    destination: Option<&Destination>,
) -> ApiResult<RedirectRow> {
    if let Some(source) = &source {
        check_source("source", source)?;
    }
    if let Some(d) = destination {
        check_destination(state, site, d).await?;
    }
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(&site.id)]);
    store::sites::lock(&mut tx, &site.org_id, &site.id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Site `{}` not found.", site.id)))?;
    let mut row = store::redirects::get_tx(&mut tx, &site.id, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Site redirect `{id}` not found.")))?;
    let now = state.now();
    if let Some(source) = source.filter(|s| *s != row.source) {
        store::redirects::set_source(&mut tx, id, &source, now)
            .await
            .map_err(|e| duplicate(e, &source))?;
        row.source = source;
    }
    if let Some(d) = destination {
        let structure = store::sites::structure_tx(&mut tx, &site.id).await?;
        check_structure(&structure, d)?;
        d.store_in(&mut row);
        store::redirects::set_destination(&mut tx, &row, now).await?;
    }
    row.updated_at = now;
    tx.commit().await?;
    Ok(row)
}

/// Deletes a redirect; whether there was one.
pub async fn delete(state: &AppState, site_id: &str, id: &str) -> ApiResult<bool> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(site_id)]);
    let deleted = store::redirects::delete(&mut tx, site_id, id).await?;
    tx.commit().await?;
    Ok(deleted)
}

/// Writes the redirects `wanted` of a site in one transaction, each checked as [`create`]
/// checks one: a source some redirect has already is pointed at its new destination when
/// `replace` (kept otherwise); a destination no longer in the site's structure, or a site
/// full at [`MAX_PER_SITE`], is skipped. Answers how many were written.
async fn write_in_site(
    state: &AppState,
    site: &SiteRow,
    wanted: &[(String, Destination)],
    replace: bool,
) -> ApiResult<usize> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(&site.id)]);
    // The site's row is the turn of every redirect write of the site.
    if store::sites::lock(&mut tx, &site.org_id, &site.id)
        .await?
        .is_none()
    {
        return Ok(0);
    }
    let structure = store::sites::structure_tx(&mut tx, &site.id).await?;
    let mut count = store::redirects::count_tx(&mut tx, &site.id).await?;
    let now = state.now();
    let mut written = 0;
    for (source, to) in wanted {
        if check_structure(&structure, to).is_err() {
            continue;
        }
        match store::redirects::by_source_tx(&mut tx, &site.id, source).await? {
            Some(mut row) if replace && Destination::of(&row)? != *to => {
                to.store_in(&mut row);
                store::redirects::set_destination(&mut tx, &row, now).await?;
                written += 1;
            }
            // Already redirected there, or kept as it is.
            Some(_) => {}
            None if count < MAX_PER_SITE => {
                let row = new_row(&site.id, source.clone(), to, now);
                store::redirects::insert(&mut tx, &row).await?;
                count += 1;
                written += 1;
            }
            // The site is full: the page keeps its new address.
            None => {}
        }
    }
    tx.commit().await?;
    Ok(written)
}

/// The URL a redirect sends to, under a share link's key when given; `None` when its
/// section or site space left the site. A page no longer in its space sends to the site
/// space.
pub async fn target(
    state: &AppState,
    site: &SiteRow,
    structure: &Structure,
    row: &RedirectRow,
    share_key: Option<&str>,
) -> ApiResult<Option<String>> {
    let urls = Urls::new(state, site, share_key);
    Ok(match Destination::of(row)? {
        Destination::SiteSection { site_section_id } => structure
            .sections
            .iter()
            .find(|s| s.id == site_section_id)
            .map(|s| urls.section(site, structure, s)),
        Destination::SiteSpace { site_space_id } => structure
            .site_spaces
            .iter()
            .find(|s| s.id == site_space_id)
            .map(|ss| urls.site_space(site, structure, ss)),
        Destination::SitePage {
            site_space_id,
            page_id,
        } => match structure.site_spaces.iter().find(|s| s.id == site_space_id) {
            None => None,
            Some(ss) => {
                let base = urls.site_space(site, structure, ss);
                Some(match page_path(state, &ss.space_id, &page_id).await? {
                    Some(path) => format!("{base}{path}"),
                    None => base,
                })
            }
        },
    })
}

/// Where a published site sends a visitor asking for `path` (the path inside the site,
/// such as `/old/page`, whatever address the site is served at), when the site would
/// otherwise answer 404: the redirect's target, or `None`. A trailing `/` is ignored, and
/// so is anything the source pattern cannot hold.
pub async fn follow(
    state: &AppState,
    site: &SiteRow,
    structure: &Structure,
    path: &str,
    share_key: Option<&str>,
) -> ApiResult<Option<String>> {
    let path = path.trim_end_matches('/');
    if check_source("path", path).is_err() {
        return Ok(None);
    }
    let Some(row) = store::redirects::by_source(&state.db, &site.id, path).await? else {
        return Ok(None);
    };
    target(state, site, structure, &row, share_key).await
}

/// Most sites of an organization [`keep_old_address`] looks at.
const MAX_SITES: i64 = 100;

/// Whether some site of `org_id` publishes `space_id` (the app then offers
/// [`keep_old_address`]).
pub async fn published_in_a_site(
    state: &AppState,
    org_id: &str,
    space_id: &str,
) -> ApiResult<bool> {
    let filter = store::sites::SiteFilter {
        space: Some(space_id.to_string()),
        ..Default::default()
    };
    let (_, count) = store::sites::list(&state.db, org_id, &filter, None, 1).await?;
    Ok(count > 0)
}

/// For a page whose slug becomes `new_slug` in a change request: a redirect, in every site of
/// `org_id` publishing the space, from the page's published address (its path in the space's
/// current content) to the page. Inert while a page is at that address (a page wins over a
/// redirect), it takes visitors of the old address to the page once the change is merged.
/// An address that some redirect already has keeps it. Answers how many were added.
pub async fn keep_old_address(
    state: &AppState,
    org_id: &str,
    space_id: &str,
    page_id: &str,
    new_slug: &str,
) -> ApiResult<usize> {
    let revision = crate::domain::access::current_revision(state, space_id).await?;
    let Some(row) = content::revision_row(state, space_id, &revision).await? else {
        return Ok(0);
    };
    let rev = content::load_in(state, space_id, &row.root).await?;
    let (Some(page), Some(path)) = (rev.page(page_id), rev.path_of(page_id)) else {
        // A page new in the change request has no published address yet.
        return Ok(0);
    };
    if page.slug == new_slug {
        return Ok(0);
    }
    add_in_sites(
        state,
        org_id,
        space_id,
        &[(path, page_id.to_string())],
        false,
    )
    .await
}

/// For the redirects of a `.gitbook.yaml` pushed to a space's main content: a redirect, in
/// every site of `org_id` publishing the space, from each old path to the page of its file
/// (a redirect already there from that address is pointed at it: the file is the redirects'
/// source of truth). Redirects naming no page are left out. Answers how many were written.
pub async fn from_git_config(
    state: &AppState,
    org_id: &str,
    space_id: &str,
    redirects: &[quire_content::gitsync::GitRedirect],
) -> ApiResult<usize> {
    let items: Vec<(String, String)> = redirects
        .iter()
        .filter_map(|r| Some((r.source.clone(), r.page.clone()?)))
        .collect();
    if items.is_empty() {
        return Ok(0);
    }
    add_in_sites(state, org_id, space_id, &items, true).await
}

/// Writes, in every site of `org_id` publishing `space_id`, a redirect from each `(path,
/// page id)` of `items` (`path` inside the space's published address, without a leading `/`)
/// to the page. An address some redirect already has is pointed at the page when `replace`,
/// kept otherwise; an address the source pattern cannot hold, or a full site, is skipped.
/// Answers how many were written.
async fn add_in_sites(
    state: &AppState,
    org_id: &str,
    space_id: &str,
    items: &[(String, String)],
    replace: bool,
) -> ApiResult<usize> {
    let filter = store::sites::SiteFilter {
        space: Some(space_id.to_string()),
        ..Default::default()
    };
    let (sites, _) = store::sites::list(&state.db, org_id, &filter, None, MAX_SITES).await?;
    // Only pages of the space's current content are redirected to.
    let revision = crate::domain::access::current_revision(state, space_id).await?;
    let Some(row) = content::revision_row(state, space_id, &revision).await? else {
        return Ok(0);
    };
    let rev = content::load_in(state, space_id, &row.root).await?;
    let items: Vec<&(String, String)> = items
        .iter()
        .filter(|(_, page_id)| rev.path_of(page_id).is_some())
        .collect();
    let mut added = 0;
    for site in &sites {
        let structure = store::sites::structure(&state.db, &site.id).await?;
        let urls = Urls::new(state, site, None);
        let root = urls.site();
        let mut wanted = Vec::new();
        for ss in structure
            .site_spaces
            .iter()
            .filter(|s| s.space_id == space_id)
        {
            let at = urls.site_space(site, &structure, ss);
            for (path, page_id) in &items {
                let source = format!("/{}{path}", at.strip_prefix(&root).unwrap_or(""));
                if check_source("source", &source).is_ok() {
                    let to = Destination::SitePage {
                        site_space_id: ss.id.clone(),
                        page_id: page_id.clone(),
                    };
                    wanted.push((source, to));
                }
            }
        }
        if !wanted.is_empty() {
            added += write_in_site(state, site, &wanted, replace).await?;
        }
    }
    Ok(added)
}
