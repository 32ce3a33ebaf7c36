//! Handlers of the links family: one per operation kind, each serving the space's content
//! and a change request's (the scope comes from the path).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::Extension;
use quire_content::links::{Link, RevisionLinks, Status, Target};
use quire_content::model::{File, Page, Revision};
use quire_content::view::{self, BodyFormat, ViewOptions};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::api::views;
use crate::blobs;
use crate::domain::access::SpaceCtx;
use crate::domain::change_requests as crs;
use crate::domain::{content, links};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{scoped_read, PathParams, QueryParams};
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store::revisions::RevisionRow;

/// The revision a request is about: a change request's (with the revision it started from,
/// to tell which broken links it introduced) or the space's current one.
pub struct At {
    row: Arc<RevisionRow>,
    /// Root of the change request's base revision.
    base_root: Option<String>,
    params: PathParams,
    reader: String,
}

impl At {
    fn param(&self, name: &str) -> ApiResult<&str> {
        self.params.require(name)
    }
}

impl FromRequestParts<AppState> for At {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let (params, ctx, reader) = scoped_read(parts).await?;
        let (revision, base) = match params.get("changeRequestId") {
            Some(cr) => {
                let cr = crs::load(state, ctx, cr).await?;
                (cr.revision_id, Some(cr.revision_base))
            }
            None => (ctx.space.revision_id.clone(), None),
        };
        let row = row_of(state, &ctx.space.id, &revision).await?;
        let base_root = match base {
            Some(b) => Some(row_of(state, &ctx.space.id, &b).await?.root.clone()),
            None => None,
        };
        Ok(At {
            row,
            base_root,
            params,
            reader,
        })
    }
}

async fn row_of(state: &AppState, space: &str, revision: &str) -> ApiResult<Arc<RevisionRow>> {
    content::revision_row(state, space, revision)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("Revision `{revision}` not found in this space."))
        })
}

/// Query of the link listings.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LinksQuery {
    status: Option<String>,
    broken_context: Option<String>,
}

/// Where broken links are counted from (`brokenContext`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum BrokenContext {
    /// Every broken link of the revision.
    Space,
    /// Only those the change request introduced.
    ChangeRequest,
}

impl LinksQuery {
    fn status(&self) -> ApiResult<Option<Status>> {
        match self.status.as_deref() {
            None | Some("") => Ok(None),
            Some(s) => Status::parse(s).map(Some).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Invalid query parameter `status`: `{s}` is not one of ok, broken, in-app."
                ))
            }),
        }
    }

    fn broken_context(&self) -> ApiResult<BrokenContext> {
        match self.broken_context.as_deref() {
            None | Some("") | Some("space") => Ok(BrokenContext::Space),
            Some("change-request") => Ok(BrokenContext::ChangeRequest),
            Some(other) => Err(ApiError::bad_request(format!(
                "Invalid query parameter `brokenContext`: `{other}` is not one of change-request, space."
            ))),
        }
    }
}

/// `ContentReferencesStats`.
#[derive(Serialize)]
struct Stats {
    total: usize,
    broken: BrokenStats,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BrokenStats {
    total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    change_request: Option<usize>,
}

/// A list of `ContentReferenceUsage` with its `stats`.
#[derive(Serialize)]
pub struct LinkList {
    #[serde(flatten)]
    list: List<Value>,
    stats: Stats,
}

/// What the views of one request share: the revision, its pages by id, and the
/// organization and space objects every location carries.
struct Ctx<'a> {
    state: &'a AppState,
    at: &'a At,
    rev: Arc<Revision>,
    org: Value,
    space: Value,
}

impl Ctx<'_> {
    fn page_location(&self, pages: &PageIndex<'_>, id: &str) -> Option<Value> {
        let (page, path) = pages.get(id)?;
        let base = self.state.url(&format!("/s/{}", self.at.row.space_id));
        let app = move |p: &str| format!("{base}/{p}");
        let view = view::page_entry_view(
            page,
            path,
            &ViewOptions {
                body: BodyFormat::Markdown,
                app_url: &app,
                git: None,
            },
        );
        Some(json!({
            "kind": "page",
            "organization": self.org,
            "space": self.space,
            "page": view,
        }))
    }

    fn file_location(&self, f: &File) -> Value {
        let url = blobs::download_url(
            &self.state.public_url,
            &self.state.keys,
            &blobs::FileLink {
                space: &self.at.row.space_id,
                file: &f.id,
                hash: &f.blob,
                content_type: &f.content_type,
                name: &f.name,
                reader: &self.at.reader,
            },
            self.state.now(),
        );
        json!({
            "kind": "file",
            "organization": self.org,
            "space": self.space,
            "file": view::file_view(f, &url, None),
        })
    }

    /// The official `ContentReferenceUsage` of a link, its locations limited to `only`.
    fn usage(&self, pages: &PageIndex<'_>, link: &Link, only: Option<&str>) -> Value {
        let target = match (&link.target, link.status) {
            (Target::Url(url), _) => Some(json!({"kind": "url", "url": url})),
            (Target::Page(p), Status::Ok) => self.page_location(pages, p),
            // An anchor whose page exists is located in that page, found or not.
            (Target::Anchor { page, anchor }, _) => self.page_location(pages, page).map(|mut v| {
                v["internalLocation"] = json!({"type": "anchor", "anchor": anchor});
                v
            }),
            (Target::File(f), Status::Ok) => self.rev.file(f).map(|f| self.file_location(f)),
            // A missing page or file has no object to show.
            _ => None,
        };
        let locations: Vec<Value> = link
            .sources
            .iter()
            .filter(|s| only.is_none_or(|o| o == s.as_str()))
            .filter_map(|s| self.page_location(pages, s))
            .collect();
        let mut item = json!({
            "status": link.status.as_str(),
            "relation": link.relation.as_str(),
            "locationReferences": locations,
        });
        if let Some(t) = target {
            item["targetReference"] = t;
        }
        item
    }
}

/// Pages of a revision by id, with their paths.
type PageIndex<'a> = HashMap<&'a str, (&'a Page, String)>;

fn index(rev: &Revision) -> PageIndex<'_> {
    rev.flatten()
        .into_iter()
        .map(|f| (f.page.id.as_str(), (f.page, f.path)))
        .collect()
}

async fn ctx<'a>(state: &'a AppState, space: &SpaceCtx, at: &'a At) -> ApiResult<Ctx<'a>> {
    let rev = content::load_in(state, &at.row.space_id, &at.row.root).await?;
    let org = serde_json::to_value(views::organization(state, &space.org.org, space.org.role)?)
        .map_err(ApiError::internal)?;
    let space_view = views::space_counted(state, &space.space, space.role).await?;
    let space_view = serde_json::to_value(space_view).map_err(ApiError::internal)?;
    Ok(Ctx {
        state,
        at,
        rev,
        org,
        space: space_view,
    })
}

/// Keys of the links broken in the change request's base revision.
async fn broken_in_base(state: &AppState, at: &At) -> ApiResult<Option<HashSet<String>>> {
    let Some(base) = &at.base_root else {
        return Ok(None);
    };
    let links = links::of_revision(state, &at.row.space_id, base).await?;
    Ok(Some(
        links
            .links
            .iter()
            .filter(|l| l.status == Status::Broken)
            .map(|l| l.key.clone())
            .collect(),
    ))
}

/// A listing of links: every link of the revision, or those from one page.
async fn link_list(
    state: &AppState,
    space: &SpaceCtx,
    at: &At,
    q: &LinksQuery,
    page: &PageRequest,
    from_page: Option<&str>,
) -> ApiResult<LinkList> {
    let status = q.status()?;
    let context = q.broken_context()?;
    let c = ctx(state, space, at).await?;
    let pages = index(&c.rev);
    if let Some(p) = from_page {
        if !pages.contains_key(p) {
            return Err(ApiError::not_found(format!(
                "Page `{p}` not found in this revision."
            )));
        }
    }
    let all: Arc<RevisionLinks> = links::of_revision(state, &at.row.space_id, &at.row.root).await?;
    let base_broken = broken_in_base(state, at).await?;
    let introduced = |l: &Link| {
        l.status == Status::Broken && base_broken.as_ref().is_some_and(|b| !b.contains(&l.key))
    };
    let in_scope: Vec<&Link> = match from_page {
        Some(p) => all.from_page(p).collect(),
        None => all.links.iter().collect(),
    };
    let stats = Stats {
        total: in_scope.len(),
        broken: BrokenStats {
            total: in_scope
                .iter()
                .filter(|l| l.status == Status::Broken)
                .count(),
            change_request: base_broken
                .as_ref()
                .map(|_| in_scope.iter().filter(|l| introduced(l)).count()),
        },
    };
    let chosen: Vec<&Link> = in_scope
        .into_iter()
        .filter(|l| status.is_none_or(|s| l.status == s))
        .filter(|l| {
            context == BrokenContext::Space
                || base_broken.is_none()
                || l.status != Status::Broken
                || introduced(l)
        })
        .collect();
    let scope = format!(
        "links:{}:{}:{}:{}",
        at.row.id,
        from_page.unwrap_or(""),
        status.map_or("", Status::as_str),
        matches!(context, BrokenContext::ChangeRequest)
    );
    let after = page.after::<String>(&scope)?;
    let count = chosen.len() as i64;
    let rows: Vec<(Value, String)> = chosen
        .into_iter()
        .filter(|l| after.as_ref().is_none_or(|a| &l.key > a))
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .map(|l| (c.usage(&pages, l, from_page), l.key.clone()))
        .collect();
    Ok(LinkList {
        list: page.finish(&scope, rows, count)?,
        stats,
    })
}

/// `listSpaceLinks`, `listChangeRequestLinks`.
pub async fn list_links(
    State(state): State<AppState>,
    Extension(space): Extension<SpaceCtx>,
    at: At,
    QueryParams(q): QueryParams<LinksQuery>,
    page: PageRequest,
) -> ApiResult<Json<LinkList>> {
    Ok(Json(link_list(&state, &space, &at, &q, &page, None).await?))
}

/// `listPageLinksInSpace`, `listPageLinksInChangeRequest`: the links from one page.
pub async fn list_page_links(
    State(state): State<AppState>,
    Extension(space): Extension<SpaceCtx>,
    at: At,
    QueryParams(q): QueryParams<LinksQuery>,
    page: PageRequest,
) -> ApiResult<Json<LinkList>> {
    let page_id = at.param("pageId")?.to_string();
    Ok(Json(
        link_list(&state, &space, &at, &q, &page, Some(&page_id)).await?,
    ))
}

/// What backlinks are asked of.
enum Backlinked {
    Page(String),
    File(String),
}

/// A list of page locations (the pages referring to a page or file), in navigation order.
/// An unknown page or file is a 404 before any link is computed.
async fn backlinks(
    state: &AppState,
    space: &SpaceCtx,
    at: &At,
    page: &PageRequest,
    of: Backlinked,
) -> ApiResult<List<Value>> {
    let c = ctx(state, space, at).await?;
    let (known, scope) = match &of {
        Backlinked::Page(id) => (
            c.rev.page(id).is_some(),
            format!("backlinks:{}:page:{id}", at.row.id),
        ),
        Backlinked::File(id) => (
            c.rev.file(id).is_some(),
            format!("backlinks:{}:file:{id}", at.row.id),
        ),
    };
    if !known {
        return Err(ApiError::not_found(match &of {
            Backlinked::Page(id) => format!("Page `{id}` not found in this revision."),
            Backlinked::File(id) => format!("File `{id}` not found in this revision."),
        }));
    }
    let all = links::of_revision(state, &at.row.space_id, &at.row.root).await?;
    let pages = index(&c.rev);
    let order: HashMap<&str, usize> = c
        .rev
        .flatten()
        .iter()
        .enumerate()
        .map(|(i, f)| (f.page.id.as_str(), i))
        .collect();
    let sources = match &of {
        Backlinked::Page(id) => all.backlinks_of_page(id, &order),
        Backlinked::File(id) => all.backlinks_of_file(id, &order),
    };
    let after = page.after::<usize>(&scope)?;
    let count = sources.len() as i64;
    let rows: Vec<(Value, usize)> = sources
        .iter()
        .enumerate()
        .filter(|(i, _)| after.is_none_or(|a| *i > a))
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .filter_map(|(i, s)| c.page_location(&pages, s).map(|v| (v, i)))
        .collect();
    page.finish(&scope, rows, count)
}

/// `listSpacePageBacklinks`, `listChangeRequestPageBacklinks`: the pages linking to a page
/// (to it or to one of its anchors).
pub async fn list_page_backlinks(
    State(state): State<AppState>,
    Extension(space): Extension<SpaceCtx>,
    at: At,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    let of = Backlinked::Page(at.param("pageId")?.to_string());
    Ok(Json(backlinks(&state, &space, &at, &page, of).await?))
}

/// `listSpaceFileBacklinks`, `listChangeRequestFileBacklinks`: the pages using a file.
pub async fn list_file_backlinks(
    State(state): State<AppState>,
    Extension(space): Extension<SpaceCtx>,
    at: At,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    let of = Backlinked::File(at.param("fileId")?.to_string());
    Ok(Json(backlinks(&state, &space, &at, &page, of).await?))
}
