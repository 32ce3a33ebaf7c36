//! `GET /sites/{siteId}/[~share/{key}/][section/][site-space/]...`: a published URL
//! resolved once, then answered by what its page path names — a page as HTML, its
//! markdown (`.md`), the agents' indexes (`llms.txt`, `llms-full.txt`), the site's
//! sitemap and robots rules, its colours, its files and its search (`~search`).

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use bytes::Bytes;
use maud::{html, Markup, PreEscaped};
use quire_content::condition::project;
use quire_content::html::{
    legible_hex, render_document, reusable_content_placeholder, safe_url, FileRef, Resolve,
};
use quire_content::model::{ContentRef, Page, PageKind, Revision};
use serde_json::Value;
use sha2::Digest;

use super::assets::{self, CSS, JS};
use super::layout::{self, Body, Chrome, Link};
use super::{mcp, search};
use crate::clock::iso;
use crate::domain::content;
use crate::domain::published::{
    self, add_block_reads, entries, visible, visitor_document, visitor_markdown, Entry, Reads,
    Resolved,
};
use crate::domain::sites::{self as rules, customization_of, Top, Urls};
use crate::error::{ApiError, ApiResult};
use crate::hosts::Hosted;
use crate::state::AppState;
use crate::store;
use crate::store::revisions::RevisionRow;
use crate::values::SiteVisibility;

/// The policy of every HTML answer: only Quire's own stylesheet and script run.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' https: data:; font-src 'self'; connect-src 'self'; form-action 'self'; \
    base-uri 'none'; frame-ancestors 'none'";

/// The backgrounds of `site.css` in its light theme (`--bg`, `--bg-soft`).
const LIGHT_BACKGROUNDS: [[u8; 3]; 2] = [[0xff, 0xff, 0xff], [0xf5, 0xf6, 0xf8]];

/// The same in its dark theme.
const DARK_BACKGROUNDS: [[u8; 3]; 2] = [[0x15, 0x17, 0x1b], [0x1e, 0x21, 0x27]];

/// Sidebars of up to this many pages list every page; larger ones only the current branch.
const FULL_SIDEBAR: usize = 300;

/// The cookie that remembers a share link's key for the site's path.
const SHARE_COOKIE: &str = "quire_share";

/// The cookie that keeps a visitor token given in a page's URL.
const VISITOR_COOKIE: &str = "quire_visitor";

/// A query parameter's decoded value.
fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    let query = query?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty() && v.len() <= 8192)
}

/// Unsigned claims from `visitor.<claim>=value` parameters: `true`/`false` and numbers as
/// such, anything else as text (at most 32 claims).
fn unsigned_claims(query: Option<&str>) -> Option<Value> {
    let query = query?;
    let mut claims = serde_json::Map::new();
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        let Some(name) = k.strip_prefix("visitor.") else {
            continue;
        };
        if name.is_empty() || name.len() > 64 || v.len() > 1024 || claims.len() >= 32 {
            continue;
        }
        let value = match v.as_ref() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            n => n
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or_else(|| Value::String(n.to_string()), Value::Number),
        };
        claims.insert(name.to_string(), value);
    }
    (!claims.is_empty()).then_some(Value::Object(claims))
}

/// A page's HTML, as [`Site::render_off_workers`] found it.
enum Rendered {
    /// Kept meanwhile by another request (embedded operations in place).
    Kept(Bytes),
    /// Just rendered.
    New(String),
}

/// How long a page waits for a rendering slot before its visitor is told to try again.
const RENDER_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Bumped when the rendering changes, so that cached pages and ETags of an older build
/// are never reused.
const RENDER_FORMAT: u32 = 7;

/// Serves everything under `/sites/`.
pub async fn serve(
    State(state): State<AppState>,
    hosted: Option<Extension<Hosted>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let rest = uri.path().strip_prefix("/sites/").unwrap_or("");
    if let Some(name) = rest.strip_prefix(&format!("{}/", assets::FOLDER)) {
        return assets::serve(name);
    }
    let hosted = hosted.map(|Extension(h)| h);
    match answer(&state, rest, uri.query(), &headers, hosted.as_ref()).await {
        Ok(res) => res,
        Err(err) => {
            if err.status().is_server_error() {
                tracing::error!(error = %err, "published page failed");
            }
            let status = err.status();
            let chrome = Chrome {
                site_title: "Quire".into(),
                noindex: true,
                ..Chrome::default()
            };
            let body = Body {
                title: "Error".into(),
                main: html! {
                    h1 { "Something went wrong" }
                    p { "Please try again later." }
                },
                ..Body::default()
            };
            let prefix = hosted.map_or_else(|| prefix(&state), |h| h.root);
            html(
                status,
                layout::document(&prefix, &chrome, &body).into_string(),
            )
        }
    }
}

/// The path of Quire's public URL (empty at a host's root), which every link starts with.
fn prefix(state: &AppState) -> String {
    state.public_path.to_string()
}

/// A published URL resolved for one visitor: what it shows, and how the visitor got in.
pub(super) struct Opened {
    pub r: Arc<Resolved>,
    pub rev: Arc<Revision>,
    pub row: Arc<RevisionRow>,
    /// A visitor token given in the URL, to be kept in a cookie.
    token_in_url: Option<String>,
    /// Whether the URL holds a share key (`~share/{key}/`).
    keyed_in_url: bool,
    /// Whether `rev` is the stored page tree, not the loaded revision.
    from_tree: bool,
    /// With the stored tree (whose bodies are empty, and shared): the id and body of the
    /// page the URL names.
    body: Option<(String, PageKind)>,
}

/// What a request needs of the revision it shows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    /// Every page with its body (indexes, search, markdown, MCP).
    Everything,
    /// The page tree and the one page a page path names (an HTML page).
    OnePage,
}

/// Resolves `rest` (the path after `/sites/`) for the visitor these headers and query
/// describe: the published content, or the answer that stands instead (a 404 page, or
/// the site's fallback for visitors without a valid token).
pub(super) async fn open(
    state: &AppState,
    rest: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    need: Need,
    hosted: Option<&Hosted>,
) -> ApiResult<Result<Opened, Response>> {
    let (site_id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    // The URL as the visitor sent it: on the site's own address when it has one.
    let url_of = |tail: &str| match hosted {
        Some(h) => format!("{}/{tail}", h.url_root),
        None => state.url(&format!("/sites/{site_id}/{tail}")),
    };
    let keyed_in_url = rest
        .split('/')
        .nth(1)
        .is_some_and(|segment| segment == "~share");
    // A visitor token comes as `jwt_token` in the URL (then kept in a cookie); unsigned
    // claims as `visitor.<claim>` parameters.
    let token_in_url = query_param(query, "jwt_token");
    let token = token_in_url
        .clone()
        .or_else(|| crate::http::cookies::read(headers, VISITOR_COOKIE, 8192));
    let unsigned = unsigned_claims(query);
    let who = published::Visitor {
        jwt_token: token.as_deref(),
        unsigned_claims: unsigned.as_ref(),
    };
    let mut resolved = published::resolve(state, &url_of(tail), who).await;
    // A share link's key, remembered by its cookie, opens the site's plain URLs too.
    if !keyed_in_url {
        if let (Err(_), Some(key)) = (&resolved, share_cookie(headers)) {
            let url = url_of(&format!("~share/{key}/{tail}"));
            resolved = published::resolve(state, &url, who).await;
        }
    }
    let r = match resolved {
        Ok(published::Resolution::Shown(r)) => *r,
        Ok(published::Resolution::Unauthenticated { fallback_url }) => {
            // Visitors without a valid token go where the site sends them, if anywhere.
            return match fallback_url
                .as_deref()
                .and_then(quire_content::html::safe_url)
            {
                Some(url) if url.starts_with("http") => Ok(Err((
                    StatusCode::FOUND,
                    [(header::LOCATION, url.to_string())],
                )
                    .into_response())),
                _ => not_found_outside(state, site_id, hosted).await.map(Err),
            };
        }
        Err(e) if e.status() == StatusCode::NOT_FOUND => {
            return not_found_outside(state, site_id, hosted).await.map(Err);
        }
        Err(e) => return Err(e),
    };
    let row = content::revision_row(state, &r.site_space.space_id, &r.space_revision)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("published revision is missing")))?;
    let space_id = &r.site_space.space_id;
    // A revision not in memory (after a restart) is read whole only when the request needs
    // every page; an HTML page reads the stored page tree and its own body. A published
    // revision in memory has its tree stored (once per node; a revision loaded before it
    // was published, by a merge say, has none yet).
    let tree = match need == Need::OnePage
        && is_page_path(&r.pathname)
        && !content::is_loaded(state, &row.root)
    {
        true => tree_with_page(state, &r, &row.root).await,
        false => None,
    };
    let from_tree = tree.is_some();
    let (rev, body) = match tree {
        Some(tree) => tree,
        None => {
            let rev = content::load_in(state, space_id, &row.root).await?;
            content::keep_tree(state, space_id, &row.root, &rev);
            (rev, None)
        }
    };
    Ok(Ok(Opened {
        r: Arc::new(r),
        rev,
        row,
        token_in_url,
        keyed_in_url,
        from_tree,
        body,
    }))
}

/// Whether a path inside a site space names a page (not an index, a file, search or MCP).
fn is_page_path(path: &str) -> bool {
    !matches!(
        path,
        "robots.txt" | "sitemap.xml" | "llms.txt" | "llms-full.txt" | "~theme.css" | "~search"
    ) && path != mcp::PATH
        && !path.starts_with("~files/")
        && !path.ends_with(".md")
}

/// The revision's stored page tree and the body of the page `r` names, when the tree is
/// stored and that body reads (the caller then loads the whole revision, see
/// [`load_later`]); `None` sends the caller to the revision itself.
async fn tree_with_page(
    state: &AppState,
    r: &Resolved,
    root: &str,
) -> Option<(Arc<Revision>, Option<(String, PageKind)>)> {
    let space_id = &r.site_space.space_id;
    let tree = content::stored_tree(state, space_id, root).await?;
    let named = {
        let list = entries(&tree, &r.visitor);
        locate(&list, &r.pathname)
            .filter(|e| is_document(e.page))
            .map(|e| e.page.id.clone())
    };
    let mut body = None;
    if let Some(id) = named {
        // The tree is a shortcut: a body it cannot give is read with the whole revision.
        let page = match content::page_of(state, space_id, root, &id).await {
            Ok(page) => page?,
            Err(err) => {
                tracing::warn!(error = %err, "page body not read through the id index");
                return None;
            }
        };
        body = Some((id, page.kind));
    }
    state.content.rendered_from_tree();
    Some((tree, body))
}

/// Loads a revision whole in the background (one load per revision at a time), after a page
/// of it was answered from its stored page tree: the requests that follow need every page.
fn load_later(state: &AppState, space_id: &str, root: &str) {
    if !state.content.start_warming(root) {
        return;
    }
    let (state, space, root) = (state.clone(), space_id.to_string(), root.to_string());
    tokio::spawn(async move {
        if let Err(err) = content::load_in(&state, &space, &root).await {
            tracing::warn!(error = %err, "revision not loaded after a page of it");
        }
        state.content.done_warming(&root);
    });
}

/// The entry a page path names: the first listed document for the site space's root, else
/// the page at that path.
fn locate<'e, 'a>(list: &'e [Entry<'a>], path: &str) -> Option<&'e Entry<'a>> {
    if path.is_empty() {
        list.iter().find(|e| e.listed && is_document(e.page))
    } else {
        list.iter().find(|e| e.path == path)
    }
}

async fn answer(
    state: &AppState,
    rest: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    hosted: Option<&Hosted>,
) -> ApiResult<Response> {
    let Opened {
        r,
        rev,
        row,
        token_in_url,
        keyed_in_url,
        from_tree,
        body,
    } = match open(state, rest, query, headers, Need::OnePage, hosted).await? {
        Ok(opened) => opened,
        Err(res) => return Ok(res),
    };
    let site = Site::new(state, &r, &rev, &row)?.with_body(body.as_ref());
    let mut res = match r.pathname.as_str() {
        "robots.txt" => site.robots(),
        "sitemap.xml" => site.sitemap().await?,
        "llms.txt" => plain_bytes("text/plain; charset=utf-8", site.llms_kept(false)),
        "llms-full.txt" => plain_bytes("text/plain; charset=utf-8", site.llms_kept(true)),
        "~theme.css" => site.theme_css().await?,
        p if p.starts_with("~files/") => site.file(p).await?,
        p if p.starts_with("~fonts/") => site.font_file(p).await?,
        p if p.ends_with(".md") => site.markdown(p.trim_end_matches(".md")),
        "~search" => site.search(query).await?,
        // The site's MCP server takes POSTs only (see `mcp.rs`).
        mcp::PATH => (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response(),
        _ => site.page(headers, query).await?,
    };
    if res.status() == StatusCode::NOT_FOUND {
        if let Some(moved) = redirected(state, &r, rest, keyed_in_url).await? {
            res = moved;
        }
    }
    // Only once this answer is ready: loading the revision beside the rendering slowed the
    // first page after a restart.
    if from_tree {
        load_later(state, &r.site_space.space_id, &row.root);
    }
    let h = res.headers_mut();
    if site.noindex() {
        h.insert("x-robots-tag", HeaderValue::from_static("noindex"));
    }
    if let (Some(token), Some(until)) = (&token_in_url, r.visitor_until) {
        // The token opened the site: keep it for the site's other pages, until it expires.
        let max_age = (until - state.now() / 1000).max(0);
        crate::http::cookies::set(
            h,
            &state.public_url,
            VISITOR_COOKIE,
            &r.site_path,
            Some(token),
            Some(max_age),
        );
    }
    if keyed_in_url {
        if let Some(key) = &r.share_key {
            crate::http::cookies::set(
                h,
                &state.public_url,
                SHARE_COOKIE,
                &r.site_path,
                Some(key),
                None,
            );
        }
    }
    drop(site);
    if from_tree {
        // A tree this answer holds alone (the minute it is kept has passed) is freed after
        // the answer leaves, off this thread: freeing 10,000 pages took 1.5 ms of a render.
        // Usually `warm_trees` still holds it, and dropping this reference costs nothing.
        if let Ok(tree) = Arc::try_unwrap(rev) {
            tokio::task::spawn_blocking(move || drop(tree));
        }
    }
    Ok(res)
}

/// The site's redirect from a path that found nothing (`rest`: the path after `/sites/`),
/// as a 301 to its target; under the share link's key when the URL holds it.
async fn redirected(
    state: &AppState,
    r: &Resolved,
    rest: &str,
    keyed_in_url: bool,
) -> ApiResult<Option<Response>> {
    // `rest` is `{siteId}/...` on any address (`crate::hosts` serves a site's own address
    // as its `/sites/{siteId}/` path), with the share key first when the URL holds it.
    let tail = rest.split_once('/').map_or("", |(_, t)| t);
    let key = r.share_key.as_deref().filter(|_| keyed_in_url);
    let inside = match key {
        Some(k) => tail.strip_prefix(&format!("~share/{k}/")).unwrap_or(tail),
        None => tail,
    };
    let target =
        crate::domain::redirects::follow(state, &r.site, &r.structure, &format!("/{inside}"), key)
            .await?;
    Ok(target.map(|to| {
        // On a site's own address, a target there is sent as a path: the visitor stays on the
        // scheme and port they came by, whatever a proxy in front of Quire listens on.
        let on_own_address = *r.url_root != *state.public_url;
        let to = match (url::Url::parse(&to), url::Url::parse(&r.url_root)) {
            (Ok(t), Ok(here)) if on_own_address && t.host_str() == here.host_str() => {
                t[url::Position::BeforePath..].to_string()
            }
            _ => to,
        };
        (
            StatusCode::MOVED_PERMANENTLY,
            // Kept a short while: a redirect can be changed or removed.
            [
                (header::LOCATION, to),
                (header::CACHE_CONTROL, "max-age=300".to_string()),
            ],
        )
            .into_response()
    }))
}

/// The share key the visitor's cookie holds, when it is a plausible key.
fn share_cookie(headers: &HeaderMap) -> Option<String> {
    crate::http::cookies::read(headers, SHARE_COOKIE, 8192).filter(|k| {
        k.len() <= 128
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// Headers every HTML answer carries.
fn html(status: StatusCode, body: impl IntoResponse) -> Response {
    let mut res = (status, body).into_response();
    crate::http::download::page_headers(&mut res, CSP, "strict-origin-when-cross-origin");
    res
}

/// A text answer of kept bytes.
fn plain_bytes(content_type: &'static str, body: Bytes) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// A text answer (markdown, indexes, robots rules).
fn plain(content_type: &'static str, body: String) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// The 404 of a URL that resolves to nothing: with the site's name and a way home when the
/// site is published for anyone, else the same page as for a site that does not exist (so
/// that an unknown share key tells nothing).
async fn not_found_outside(
    state: &AppState,
    site_id: &str,
    hosted: Option<&Hosted>,
) -> ApiResult<Response> {
    let prefix = hosted.map_or_else(|| prefix(state), |h| h.root.clone());
    let mut chrome = Chrome {
        site_title: "Quire".into(),
        home: format!("{prefix}/"),
        noindex: true,
        ..Chrome::default()
    };
    if let Some(site) = store::sites::get_by_id(&state.db, site_id).await? {
        let open = matches!(
            site.visibility,
            SiteVisibility::Public | SiteVisibility::Unlisted
        );
        if site.published != 0 && open {
            let custom = customization_of(&site)?;
            chrome.site_title = custom["title"].as_str().unwrap_or(&site.title).to_string();
            chrome.home = match hosted {
                Some(_) => format!("{prefix}/"),
                None => format!("{prefix}/sites/{}/", site.id),
            };
        }
    }
    let body = Body {
        title: "Page not found".into(),
        main: not_found_main(&chrome.home),
        ..Body::default()
    };
    Ok(html(
        StatusCode::NOT_FOUND,
        layout::document(&prefix, &chrome, &body).into_string(),
    ))
}

fn not_found_main(home: &str) -> Markup {
    html! {
        h1 { "Page not found" }
        p {
            "Nothing is published at this address. "
            a href=(home) { "Go to the home page" }
            "."
        }
    }
}

/// Where a page path leads for one visitor in one revision.
#[derive(serde::Serialize, serde::Deserialize)]
enum Route {
    /// A document page: its path, its id, the specs whose operations it embeds, and what
    /// the conditions of its blocks (and of the reusable contents it may show) read of a
    /// visitor.
    Page {
        path: String,
        page_id: String,
        specs: Vec<String>,
        reads: Reads,
    },
    /// A group (to its first page) or a link page (to its target).
    Redirect(String),
    /// No readable page there.
    NotFound,
}

fn is_document(page: &Page) -> bool {
    matches!(page.kind, PageKind::Document(_))
}

/// How the renderer's references become this site's URLs.
struct Links<'a> {
    /// Path of the site space (prefix included, ends with `/`).
    base: String,
    /// The visitor's pages, whose paths `paths` indexes by page id.
    entries: &'a [Entry<'a>],
    /// Built on the first reference resolved: most pages link to no page, and the map of a
    /// 10,000-page space costs a first render after a restart some 2 ms.
    paths: OnceCell<HashMap<&'a str, &'a str>>,
    rev: &'a Revision,
    /// Site space URLs by space id, for references into other spaces of the site.
    spaces: &'a HashMap<String, String>,
    visitor: &'a Value,
}

impl<'a> Links<'a> {
    /// The visitor's path of page `id`.
    fn path(&self, id: &str) -> Option<&'a str> {
        let paths = self.paths.get_or_init(|| {
            self.entries
                .iter()
                .map(|e| (e.page.id.as_str(), e.path.as_str()))
                .collect()
        });
        paths.get(id).copied()
    }

    fn ref_url(&self, r: &ContentRef) -> Option<String> {
        quire_content::html::ref_url(self, r, &|s| self.spaces.get(s).cloned())
    }
}

impl Resolve for Links<'_> {
    fn page_url(&self, page_id: &str, anchor: Option<&str>) -> Option<String> {
        let path = self.path(page_id)?;
        Some(match anchor {
            Some(a) => format!("{}{path}#{a}", self.base),
            None => format!("{}{path}", self.base),
        })
    }

    fn file(&self, file_id: &str) -> Option<FileRef> {
        let f = self.rev.file(file_id)?;
        let name: String = url::form_urlencoded::byte_serialize(f.name.as_bytes()).collect();
        Some(FileRef {
            url: format!("{}~files/{}/{name}", self.base, f.id),
            name: f.name.clone(),
            content_type: f.content_type.clone(),
            width: f.dimensions.map(|d| d.width),
            height: f.dimensions.map(|d| d.height),
        })
    }

    fn other(&self, r: &ContentRef) -> Option<String> {
        self.ref_url(r)
    }

    /// The title of a page of this site space that the visitor may read: page links and
    /// mentions show it, not the page's address.
    fn title(&self, r: &ContentRef) -> Option<String> {
        let page = match r {
            ContentRef::Page { page, space: None }
            | ContentRef::Anchor {
                page: Some(page),
                space: None,
                ..
            } => page,
            _ => return None,
        };
        self.path(page)?;
        self.rev.page(page).map(|p| p.title.clone())
    }

    fn condition(&self, expression: &str) -> bool {
        visible(Some(expression), self.visitor)
    }
}

/// A resolved site space with its content, answering the requests made of it.
/// A resolved site space as one visitor sees it.
pub(super) struct Site<'a> {
    state: &'a AppState,
    r: &'a Arc<Resolved>,
    rev: &'a Arc<Revision>,
    row: &'a Arc<RevisionRow>,
    visitor: &'a Value,
    custom: Arc<Value>,
    prefix: String,
    urls: Urls,
    spaces: HashMap<String, String>,
    /// The visitor as the navigation's conditions (the site's structure, the pages) tell
    /// visitors apart, as JSON: what a route is remembered under.
    nav_seen: OnceLock<String>,
    /// The id and body of one page, when `rev` is a stored page tree (bodies empty).
    body: Option<&'a (String, PageKind)>,
}

impl<'a> Site<'a> {
    pub(super) fn new(
        state: &'a AppState,
        r: &'a Arc<Resolved>,
        rev: &'a Arc<Revision>,
        row: &'a Arc<RevisionRow>,
    ) -> ApiResult<Self> {
        let visitor = &r.visitor;
        let urls = Urls::at(format!("{}{}", r.url_root, r.site_base_path));
        let spaces = r
            .structure
            .site_spaces
            .iter()
            .filter(|ss| visible(ss.condition.as_deref(), visitor))
            .map(|ss| {
                (
                    ss.space_id.clone(),
                    urls.site_space(&r.site, &r.structure, ss),
                )
            })
            .collect();
        Ok(Site {
            state,
            r,
            rev,
            row,
            visitor,
            custom: r.customization.clone(),
            prefix: r.path_root.clone(),
            urls,
            spaces,
            nav_seen: OnceLock::new(),
            body: None,
        })
    }

    /// The same, showing `rev` (a stored page tree) with the body of the one page it lacks.
    pub(super) fn with_body(self, body: Option<&'a (String, PageKind)>) -> Self {
        Site { body, ..self }
    }

    /// What a page of `rev` is, with its body: from [`Site::with_body`] for that page.
    fn kind<'p>(&'p self, page: &'p Page) -> &'p PageKind {
        match self.body {
            Some((id, kind)) if *id == page.id => kind,
            _ => &page.kind,
        }
    }

    /// What the navigation's conditions read of a visitor: those of the site's structure
    /// and of the revision's pages.
    fn nav_reads(&self) -> Reads {
        let mut reads = (*self.r.site_reads).clone();
        let pages = published::revision_reads(self.state, &self.row.root, self.rev, false);
        reads.extend(pages.iter().cloned());
        reads
    }

    fn nav_seen(&self) -> &str {
        self.nav_seen
            .get_or_init(|| project(self.visitor, &self.nav_reads()).to_string())
    }

    /// The visitor as the navigation's conditions and `more` tell visitors apart, as JSON:
    /// visitors alike there get the same answer (claims nothing reads are left out, so that
    /// they cannot make a page be rendered again).
    fn seen_as(&self, more: &Reads) -> String {
        if more.is_empty() {
            return self.nav_seen().to_string();
        }
        let mut reads = self.nav_reads();
        reads.extend(more.iter().cloned());
        project(self.visitor, &reads).to_string()
    }

    /// Path of the site space, prefix included.
    fn base(&self) -> String {
        format!("{}{}", self.prefix, self.r.base_path)
    }

    fn links<'b>(&'b self, entries: &'b [Entry<'b>]) -> Links<'b> {
        Links {
            base: self.base(),
            entries,
            paths: OnceCell::new(),
            rev: self.rev,
            spaces: &self.spaces,
            visitor: self.visitor,
        }
    }

    fn noindex(&self) -> bool {
        self.r.site.visibility != SiteVisibility::Public
    }

    fn title(&self) -> String {
        self.custom["title"]
            .as_str()
            .unwrap_or(&self.r.site.title)
            .to_string()
    }

    /// `robots.txt`: a public site is open to crawlers and names its sitemap.
    fn robots(&self) -> Response {
        let body = if self.noindex() {
            "User-agent: *\nDisallow: /\n".to_string()
        } else {
            format!(
                "User-agent: *\nAllow: /\n\nSitemap: {}sitemap.xml\n",
                self.urls.site()
            )
        };
        plain("text/plain; charset=utf-8", body)
    }

    /// `sitemap.xml` of a public site: every listed, indexable document page of every
    /// site space the visitor sees.
    async fn sitemap(&self) -> ApiResult<Response> {
        if self.noindex() {
            return Ok(self.not_found_page());
        }
        // Each site space's `<url>` elements.
        let mut spaces: Vec<Markup> = Vec::new();
        let s = &self.r.structure;
        let sections_shown = |id: Option<&str>| {
            id.is_none_or(|id| {
                s.sections
                    .iter()
                    .any(|x| x.id == id && visible(x.condition.as_deref(), self.visitor))
            })
        };
        for ss in &s.site_spaces {
            if !visible(ss.condition.as_deref(), self.visitor)
                || !sections_shown(ss.section_id.as_deref())
            {
                continue;
            }
            let Some(space) = crate::domain::access::space_row(self.state, &ss.space_id)
                .await?
                .filter(|x| x.deleted_at.is_none())
            else {
                continue;
            };
            let Some(row) =
                content::revision_row(self.state, &space.id, &space.revision_id).await?
            else {
                continue;
            };
            let rev = content::load_in(self.state, &space.id, &row.root).await?;
            let base = self.urls.site_space(&self.r.site, s, ss);
            let modified = iso(row.created_at);
            let list = entries(&rev, self.visitor);
            spaces.push(html! {
                @for e in &list {
                    @if e.listed && is_document(e.page) && !e.page.no_robots_index
                        && !e.page.no_index
                    {
                        url {
                            loc { (base) (e.path) }
                            lastmod { (&modified[..10]) }
                        }
                    }
                }
            });
        }
        // XML, which the template escapes as it does HTML (`&`, `<`, `>`, `"`); maud has no
        // syntax for the XML declaration, a constant.
        let map = html! {
            (PreEscaped("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"))
            urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" {
                @for urls in &spaces { (urls) }
            }
        };
        Ok(plain("application/xml; charset=utf-8", map.into_string()))
    }

    /// [`Site::llms`], kept per revision and visitor as the conditions it shows tell them
    /// apart (the navigation's, and for `llms-full.txt` those of every body).
    fn llms_kept(&self, full: bool) -> Bytes {
        let seen = if full {
            self.seen_as(&published::revision_reads(
                self.state,
                &self.row.root,
                self.rev,
                true,
            ))
        } else {
            self.nav_seen().to_string()
        };
        let key = format!(
            "site-llms:{}",
            self.version(&format!("\nllms{full}"), &seen)
        );
        if let Some(kept) = self.state.content.pages.get(&key) {
            return kept;
        }
        let body = Bytes::from(self.llms(full));
        self.state.content.pages.insert(key, body.clone());
        body
    }

    /// `llms.txt` (an index of the site space's pages, each linking to its markdown) or
    /// `llms-full.txt` (every page's markdown).
    fn llms(&self, full: bool) -> String {
        let list = entries(self.rev, self.visitor);
        let base = self.urls.site().trim_end_matches('/').to_string()
            + self
                .r
                .base_path
                .strip_prefix(&self.r.site_base_path)
                .map(|p| format!("/{p}"))
                .as_deref()
                .unwrap_or("/");
        let mut o = format!("# {}\n\n", self.title());
        for e in list.iter().filter(|e| e.listed && is_document(e.page)) {
            let url = format!("{base}{}.md", e.path);
            if full {
                let _ = write!(
                    o,
                    "{}\n\nSource: {url}\n\n---\n\n",
                    page_markdown(e.page, self.visitor).trim_end()
                );
            } else {
                let _ = write!(o, "- [{}]({url})", md_label(&e.page.title));
                if let Some(d) = e.page.description.as_deref().filter(|d| !d.is_empty()) {
                    let _ = write!(o, ": {}", d.replace('\n', " "));
                }
                o.push('\n');
            }
        }
        o
    }

    /// A page's markdown.
    fn markdown(&self, path: &str) -> Response {
        let list = entries(self.rev, self.visitor);
        match list.iter().find(|e| e.path == path) {
            Some(e) => plain(
                "text/markdown; charset=utf-8",
                page_markdown(e.page, self.visitor),
            ),
            None => self.not_found_page(),
        }
    }

    /// The site's colours as a stylesheet (no inline styles: the policy forbids them). The
    /// tint colours links and text, so each is darkened (light theme) or lightened (dark
    /// theme) just enough to read on the theme's backgrounds. A custom font of the
    /// organization that `styling.font` names is declared here too, its files served by the
    /// site itself (`~fonts/`: same origin, on the site's own address as well).
    async fn theme_css(&self) -> ApiResult<Response> {
        let color = |mode: &str| {
            let (backgrounds, toward) = if mode == "dark" {
                (DARK_BACKGROUNDS, 255)
            } else {
                (LIGHT_BACKGROUNDS, 0)
            };
            self.custom["styling"]["primaryColor"][mode]
                .as_str()
                .and_then(|v| legible_hex(v, &backgrounds, toward))
        };
        let mut css = String::new();
        if let Some(light) = color("light") {
            let _ = writeln!(css, ":root {{ --tint: {light}; }}");
        }
        if let Some(dark) = color("dark") {
            let _ = writeln!(
                css,
                "@media (prefers-color-scheme: dark) {{ :root {{ --tint: {dark}; }} }}"
            );
        }
        let font = crate::domain::fonts::site_font(
            self.state,
            &self.r.site.org_id,
            &self.custom["styling"]["font"],
        )
        .await?;
        if let Some(font) = &font {
            // The family is named by the font's id, never by its (free text) family name.
            let family = format!("quire-font-{}", font.id);
            for face in &font.faces {
                let _ = writeln!(
                    css,
                    "@font-face {{ font-family: \"{family}\"; font-weight: {}; font-style: normal; \
                     font-display: swap; src: url(\"{}{}~fonts/{}\") format(\"{}\"); }}",
                    face.weight,
                    self.prefix,
                    self.r.site_base_path,
                    crate::domain::fonts::file_name(&face.key),
                    face.format,
                );
            }
            let _ = writeln!(
                css,
                "body {{ font-family: \"{family}\", system-ui, -apple-system, \"Segoe UI\", Roboto, \
                 \"Helvetica Neue\", Arial, sans-serif; }}"
            );
        }
        let mut res = plain("text/css; charset=utf-8", css);
        // A custom font can change or go while the page naming this sheet stays the same:
        // then the sheet is kept a few minutes only.
        let cache = if font.is_some() {
            "public, max-age=300"
        } else {
            "public, max-age=31536000, immutable"
        };
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        Ok(res)
    }

    /// `~fonts/{name}`: a file of the custom font the site uses (404 for any other).
    async fn font_file(&self, path: &str) -> ApiResult<Response> {
        let name = path.trim_start_matches("~fonts/");
        let font = crate::domain::fonts::site_font(
            self.state,
            &self.r.site.org_id,
            &self.custom["styling"]["font"],
        )
        .await?;
        let Some(face) = font.as_ref().and_then(|f| {
            f.faces
                .iter()
                .find(|face| crate::domain::fonts::file_name(&face.key) == name)
        }) else {
            return Ok(self.not_found_page());
        };
        let Some((bytes, content_type)) =
            crate::domain::fonts::uploaded(self.state, &face.key).await?
        else {
            return Ok(self.not_found_page());
        };
        let content_type =
            HeaderValue::from_str(&content_type).unwrap_or(HeaderValue::from_static("font/woff2"));
        let mut res = crate::http::download::sandboxed(bytes, content_type, None);
        // A storage key takes its bytes once: this URL always serves the same file.
        res.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=31536000, immutable"),
        );
        Ok(res)
    }

    fn theme_url(&self) -> String {
        let colors = format!(
            "{RENDER_FORMAT}{}{}",
            self.custom["styling"]["primaryColor"], self.custom["styling"]["font"]
        );
        let v = hex::encode(&sha2::Sha256::digest(colors.as_bytes())[..6]);
        format!("{}{}~theme.css?v={v}", self.prefix, self.r.site_base_path)
    }

    /// `~files/{fileId}/{name}`: a file of the site space's revision.
    async fn file(&self, path: &str) -> ApiResult<Response> {
        let id = path
            .trim_start_matches("~files/")
            .split('/')
            .next()
            .unwrap_or("");
        let Some(f) = self.rev.file(id) else {
            return Ok(self.not_found_page());
        };
        let Some(bytes) = self
            .state
            .blobs
            .get(&f.blob)
            .await
            .map_err(ApiError::internal)?
        else {
            return Ok(self.not_found_page());
        };
        // Only raster images show inline; anything else downloads, and nothing runs.
        let mut res = crate::http::download::uploaded_file(bytes, &f.content_type, &f.name);
        // A file's bytes are named by its hash: the URL of a revision's file never changes
        // what it serves.
        res.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, max-age=3600"),
        );
        Ok(res)
    }

    /// What names this answer's content, for a visitor `seen` as they are (see
    /// [`Site::seen_as`]): the cache key and the ETag.
    fn version(&self, path: &str, seen: &str) -> String {
        let s = &self.r;
        let id = format!(
            "{RENDER_FORMAT}\n{}\n{}{}\n{}\n{}\n{}\n{:?}\n{}\n{}\n{}\n{}",
            env!("CARGO_PKG_VERSION"),
            // Links are written from the address the site was reached at.
            s.url_root,
            s.base_path,
            s.site_digest,
            s.site_space.id,
            self.row.id,
            s.share_key,
            path,
            seen,
            CSS.name,
            JS.name,
        );
        format!(
            "\"{}\"",
            hex::encode(&sha2::Sha256::digest(id.as_bytes())[..16])
        )
    }

    /// Where this page path leads for this visitor, remembered per revision, visitor and
    /// path: a repeat visit then skips walking the revision's whole page tree.
    fn route(&self, list: &mut Option<Vec<Entry<'a>>>) -> Route {
        let key = format!(
            "site-route:{}{}\n{}\n{}\n{}\n{}",
            self.r.url_root,
            self.r.base_path,
            self.r.site_space.space_id,
            self.row.id,
            self.nav_seen(),
            self.r.pathname
        );
        if let Some(route) = self
            .state
            .content
            .pages
            .get(&key)
            .and_then(|b| serde_json::from_slice::<Route>(&b).ok())
        {
            return route;
        }
        let route = self.find_route(list.get_or_insert_with(|| entries(self.rev, self.visitor)));
        if let Ok(bytes) = serde_json::to_vec(&route) {
            self.state.content.pages.insert(key, bytes.into());
        }
        route
    }

    fn find_route(&self, list: &[Entry<'a>]) -> Route {
        let Some(entry) = locate(list, &self.r.pathname) else {
            return Route::NotFound;
        };
        match self.kind(entry.page) {
            PageKind::Document(doc) => {
                let mut specs = crate::domain::openapi::embedded_specs(&doc.markdown, 16);
                for rc in &self.rev.reusable_contents {
                    for slug in crate::domain::openapi::embedded_specs(&rc.markdown, 16) {
                        if specs.len() < 16 && !specs.contains(&slug) {
                            specs.push(slug);
                        }
                    }
                }
                let mut reads = Reads::new();
                add_block_reads(&doc.markdown, &mut reads);
                for rc in &self.rev.reusable_contents {
                    add_block_reads(&rc.markdown, &mut reads);
                }
                Route::Page {
                    path: entry.path.clone(),
                    page_id: entry.page.id.clone(),
                    specs,
                    reads,
                }
            }
            // A group shows its first page; a link page goes where it points.
            PageKind::Group => list
                .iter()
                .find(|e| is_document(e.page) && e.parents.iter().any(|p| p.id == entry.page.id))
                .map_or(Route::NotFound, |first| {
                    Route::Redirect(format!("{}{}", self.base(), first.path))
                }),
            PageKind::Link(link) => self
                .links(list)
                .ref_url(&link.target)
                .map_or(Route::NotFound, Route::Redirect),
        }
    }

    /// A page as HTML: cached by what names it (compressed too, for visitors that accept
    /// gzip), and answered 304 when the visitor has it.
    async fn page(&self, headers: &HeaderMap, _query: Option<&str>) -> ApiResult<Response> {
        // The visitor's page list, built once if a step below needs it.
        let mut list = None;
        let (path, page_id, slugs, reads) = match self.route(&mut list) {
            Route::NotFound => return Ok(self.not_found_page()),
            Route::Redirect(url) => return Ok(redirect(&url)),
            Route::Page {
                path,
                page_id,
                specs,
                reads,
            } => (path, page_id, specs, reads),
        };
        // Embedded operations follow their spec's latest version: it names the answer too.
        let specs = self.latest_specs(slugs).await?;
        let named = if specs.is_empty() {
            path.clone()
        } else {
            let versions: Vec<String> = specs
                .iter()
                .map(|(slug, v)| format!("{slug}={}", v.id))
                .collect();
            format!("{path}\n{}", versions.join(","))
        };
        // The variant switcher shows other spaces' titles, which no revision of this one
        // holds: the page is named by the switcher as drawn, so that renaming or deleting
        // a variant's space gives the page a new name.
        let variants = self.variants().await?;
        let named = format!("{named}\n{}", variants.0);
        let etag = self.version(&named, &self.seen_as(&reads));
        // The page's HTML, when it is sent.
        let mut sent = None;
        let mut res = if headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| crate::encoding::none_match(v, &etag))
        {
            let mut res = StatusCode::NOT_MODIFIED.into_response();
            let h = res.headers_mut();
            h.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            );
            res
        } else {
            let key = format!("site-html:{etag}");
            let body = match self.state.content.pages.get(&key) {
                Some(bytes) => bytes,
                None => {
                    let Some(body) = self.render_off_workers(&key, page_id, variants).await? else {
                        return Ok(self.not_found_page());
                    };
                    let body = match body {
                        Rendered::Kept(bytes) => bytes,
                        Rendered::New(body) => {
                            let body = bytes::Bytes::from(self.with_operations(body, &specs).await);
                            self.state.content.pages.insert(key, body.clone());
                            body
                        }
                    };
                    body
                }
            };
            sent = Some(body.clone());
            html(StatusCode::OK, body)
        };
        let h = res.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&etag) {
            h.insert(header::ETAG, v);
        }
        let cache = if self.r.site.visibility == SiteVisibility::Public {
            "no-cache"
        } else {
            "private, no-cache"
        };
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        if let Some(body) = sent {
            self.compressed(&mut res, headers, &etag, body).await;
        }
        Ok(res)
    }

    /// Sends `res`, a page of `body` tagged `etag`, gzip-compressed to a visitor that
    /// accepts it, compressed once per tag (the edge would compress it on every visit).
    async fn compressed(&self, res: &mut Response, asked: &HeaderMap, etag: &str, body: Bytes) {
        use crate::encoding;
        if !encoding::worth(res.headers(), body.len() as u64) {
            return;
        }
        encoding::vary(res.headers_mut());
        if !encoding::accepts_gzip(asked) {
            return;
        }
        let key = format!("site-html.gz:{etag}");
        let packed = match self.state.content.pages.get(&key) {
            Some(packed) => packed,
            None => {
                let Some(packed) = encoding::gzip_off_workers(body, encoding::Effort::Kept).await
                else {
                    return;
                };
                self.state.content.pages.insert(key, packed.clone());
                packed
            }
        };
        *res.headers_mut() = encoding::gzipped_headers(res.headers());
        *res.body_mut() = axum::body::Body::from(packed);
    }

    /// `~search?q=`: the site space's pages that match, as a page of the site, or as JSON
    /// with `format=json` (the script's instant results). Only pages the sidebar lists for
    /// this visitor count.
    async fn search(&self, query: Option<&str>) -> ApiResult<Response> {
        let ask = search::Ask::from_query(query);
        let as_json = query_param(query, "format").as_deref() == Some("json");
        let list = entries(self.rev, self.visitor);
        let base = self.base();
        let hits = match &ask {
            search::Ask::Text(q) => self.hits(&list, q).await?,
            _ => Vec::new(),
        };
        let mut res = if as_json {
            let mut res = plain("application/json", search::json(&hits));
            if matches!(ask, search::Ask::TooLong) {
                *res.status_mut() = StatusCode::BAD_REQUEST;
            }
            res
        } else {
            let mut chrome = self.chrome(&list);
            // Results pages are answers, not content: never indexed.
            chrome.noindex = true;
            let body = Body {
                title: "Search".into(),
                sidebar: Some(self.sidebar(&list, None)),
                main: search::main(&format!("{base}~search"), &ask, &hits),
                ..Body::default()
            };
            html(
                StatusCode::OK,
                layout::document(&self.prefix, &chrome, &body).into_string(),
            )
        };
        let cache = if self.r.site.visibility == SiteVisibility::Public {
            "no-cache"
        } else {
            "private, no-cache"
        };
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        Ok(res)
    }

    /// The best hits of `q` among the pages a visitor reaches through the navigation; a
    /// page excluded from search (`noIndex`) stays out too.
    async fn hits(&self, list: &[Entry<'_>], q: &str) -> ApiResult<Vec<search::Hit>> {
        let base = self.base();
        let allowed: HashMap<&str, String> = list
            .iter()
            .filter(|e| e.listed && is_document(e.page) && !e.page.no_index)
            .map(|e| (e.page.id.as_str(), format!("{base}{}", e.path)))
            .collect();
        search::run(
            self.state,
            &self.r.site_space.space_id,
            q,
            &allowed,
            self.visitor,
        )
        .await
    }

    /// [`Self::hits`] for this visitor's pages.
    pub(super) async fn search_pages(&self, q: &str) -> ApiResult<Vec<search::Hit>> {
        let list = entries(self.rev, self.visitor);
        self.hits(&list, q).await
    }

    /// The index of the site space's pages as markdown links (what `llms.txt` holds).
    pub(super) fn index(&self) -> String {
        self.llms(false)
    }

    /// A readable page's title, published URL and markdown, by its path inside the site
    /// space, its path from the host, or its full URL (with or without `.md`).
    pub(super) fn readable_page(&self, wanted: &str) -> Option<(String, String, String)> {
        let mut path = wanted.trim();
        if let Some(i) = path.find("://") {
            let after = &path[i + 3..];
            path = after.find('/').map_or("", |j| &after[j..]);
        }
        let path = path.split(['?', '#']).next().unwrap_or("");
        let base = self.base();
        let path = path.strip_prefix(base.as_str()).unwrap_or(path);
        let path = path.trim_matches('/');
        let path = path.strip_suffix(".md").unwrap_or(path);
        let list = entries(self.rev, self.visitor);
        let entry = if path.is_empty() {
            list.iter().find(|e| e.listed && is_document(e.page))
        } else {
            list.iter().find(|e| e.path == path && is_document(e.page))
        }?;
        Some((
            entry.page.title.clone(),
            format!("{}{}{}", self.r.url_root, self.r.base_path, entry.path),
            page_markdown(entry.page, self.visitor),
        ))
    }

    /// The 404 page inside the site's chrome.
    fn not_found_page(&self) -> Response {
        // The same for every path: kept once per site, revision and visitor as the
        // navigation tells them apart.
        let key = format!("site-404:{}", self.version("\n404", self.nav_seen()));
        let body = match self.state.content.pages.get(&key) {
            Some(body) => body,
            None => {
                let body = Bytes::from(self.not_found_html());
                self.state.content.pages.insert(key, body.clone());
                body
            }
        };
        html(StatusCode::NOT_FOUND, body)
    }

    fn not_found_html(&self) -> String {
        let list = entries(self.rev, self.visitor);
        let mut chrome = self.chrome(&list);
        chrome.noindex = true;
        let body = Body {
            title: "Page not found".into(),
            sidebar: Some(self.sidebar(&list, None)),
            main: not_found_main(&chrome.home),
            ..Body::default()
        };
        layout::document(&self.prefix, &chrome, &body).into_string()
    }

    fn chrome(&self, list: &[Entry<'_>]) -> Chrome {
        let links = self.links(list);
        let c = &self.custom;
        let link_of = |v: &Value| -> Option<Link> {
            let title = v["title"].as_str()?.to_string();
            let target: ContentRef = serde_json::from_value(v["to"].clone()).ok()?;
            Some((title, links.ref_url(&target)?))
        };
        let logo = |mode: &str| {
            c["header"]["logo"][mode]
                .as_str()
                .and_then(safe_url)
                .map(str::to_string)
        };
        let footer_groups = c["footer"]["groups"]
            .as_array()
            .map(|groups| {
                groups
                    .iter()
                    .filter_map(|g| {
                        let title = g["title"].as_str()?.to_string();
                        let items = g["links"]
                            .as_array()
                            .map(|l| l.iter().filter_map(link_of).collect())
                            .unwrap_or_default();
                        Some((title, items))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Chrome {
            lang: c["internationalization"]["locale"]
                .as_str()
                .unwrap_or("en")
                .to_string(),
            site_title: self.title(),
            home: format!("{}{}", self.prefix, self.r.site_base_path),
            logo: logo("light").map(|l| (l, logo("dark"))),
            header_links: c["header"]["links"]
                .as_array()
                .map(|l| l.iter().filter_map(link_of).collect())
                .unwrap_or_default(),
            footer_groups,
            copyright: c["footer"]["copyright"].as_str().map(str::to_string),
            theme_css: Some(self.theme_url()),
            tabs: self.tabs(),
            search: Some(format!("{}~search", self.base())),
            noindex: self.noindex(),
            insights: Some(layout::Insights {
                endpoint: format!(
                    "{}{}{}",
                    self.prefix,
                    self.r.site_base_path,
                    super::insights::PATH
                ),
                section: self.r.section.as_ref().map(|s| s.id.clone()),
                site_space: self.r.site_space.id.clone(),
                space: self.r.site_space.space_id.clone(),
            }),
        }
    }

    /// Sections as tabs, section groups as menus.
    fn tabs(&self) -> Markup {
        let s = &self.r.structure;
        if s.sections.is_empty() {
            return Markup::default();
        }
        let current = self.r.section.as_ref().map(|x| x.id.as_str());
        let shown =
            |x: &&crate::store::sites::SectionRow| visible(x.condition.as_deref(), self.visitor);
        let tab = |x: &crate::store::sites::SectionRow| {
            html! {
                li {
                    a href=(self.urls.section(&self.r.site, s, x))
                        aria-current=[(current == Some(x.id.as_str())).then_some("page")]
                    { (x.title) }
                }
            }
        };
        html! {
            nav class="section-tabs" aria-label="Sections" {
                ul {
                    @for item in rules::top_level(s) {
                        @match item {
                            Top::Section(x) => {
                                @if shown(&x) { (tab(x)) }
                            }
                            Top::Group(g) => {
                                @let inner: Vec<_> = rules::group_sections(s, &g.id)
                                    .into_iter()
                                    .filter(shown)
                                    .collect();
                                @if !inner.is_empty() {
                                    li {
                                        details {
                                            summary { (g.title) }
                                            ul { @for x in inner { (tab(x)) } }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The switcher between the site spaces of the section (versions, languages).
    async fn variants(&self) -> ApiResult<Markup> {
        let s = &self.r.structure;
        let section = self.r.section.as_ref().map(|x| x.id.as_str());
        let shown: Vec<_> = rules::site_spaces_in(s, section)
            .into_iter()
            .filter(|x| visible(x.condition.as_deref(), self.visitor))
            .collect();
        if shown.len() < 2 {
            return Ok(Markup::default());
        }
        let mut items = Vec::new();
        for ss in shown {
            if let Some(space) = crate::domain::access::space_row(self.state, &ss.space_id)
                .await?
                .filter(|x| x.deleted_at.is_none())
            {
                items.push((ss, space.title.clone()));
            }
        }
        let here = &self.r.site_space.id;
        let current = items
            .iter()
            .find(|(ss, _)| ss.id == *here)
            .map_or("", |(_, t)| t.as_str());
        Ok(html! {
            nav class="variants" aria-label="Variants" {
                details {
                    summary { (current) }
                    ul {
                        @for (ss, title) in &items {
                            li {
                                a href=(self.urls.site_space(&self.r.site, s, ss))
                                    aria-current=[(ss.id == *here).then_some("true")]
                                { (title) }
                            }
                        }
                    }
                }
            }
        })
    }

    /// The site space's page tree: listed pages, groups as headings, links as links.
    fn sidebar(&self, list: &[Entry<'_>], current: Option<&str>) -> Markup {
        let links = self.links(list);
        let listed: HashMap<&str, &Entry<'_>> = list
            .iter()
            .filter(|e| e.listed)
            .map(|e| (e.page.id.as_str(), e))
            .collect();
        // A large tree lists its top level, groups' pages and the current page's branch;
        // other branches open on their own pages (a sidebar of every page would weigh
        // more than the page it sits beside).
        let open: Option<HashSet<&str>> = (listed.len() > FULL_SIDEBAR).then(|| {
            let mut open = HashSet::new();
            if let Some(entry) = current.and_then(|id| listed.get(id)) {
                open.extend(entry.parents.iter().map(|p| p.id.as_str()));
                open.insert(entry.page.id.as_str());
            }
            open
        });
        let expanded = |page: &Page| match &open {
            None => true,
            Some(open) => matches!(page.kind, PageKind::Group) || open.contains(page.id.as_str()),
        };
        /// Depth first without recursion (a page tree's depth is the input's): a listed
        /// page met, or left once the items of its subpages are made.
        enum Step<'p> {
            Enter(&'p Page),
            Leave(&'p Entry<'p>, usize),
        }
        // Each page's item is made once its subpages' are: they wait on `made`, in order,
        // from the length `made` had when the page was entered.
        let mut made: Vec<Markup> = Vec::new();
        let mut stack: Vec<Step<'_>> = self.rev.pages.iter().rev().map(Step::Enter).collect();
        while let Some(step) = stack.pop() {
            match step {
                Step::Enter(page) => {
                    // An unlisted page is left out with its subpages.
                    let Some(&entry) = listed.get(page.id.as_str()) else {
                        continue;
                    };
                    if expanded(page) && !page.pages.is_empty() {
                        stack.push(Step::Leave(entry, made.len()));
                        stack.extend(page.pages.iter().rev().map(Step::Enter));
                    } else {
                        made.push(tree_item(entry, &links, current, &[]));
                    }
                }
                Step::Leave(entry, from) => {
                    let subpages = made.split_off(from);
                    made.push(tree_item(entry, &links, current, &subpages));
                }
            }
        }
        html! {
            ul class="tree" { @for item in &made { (item) } }
        }
    }

    /// The latest versions of the organization's specs that a page embeds (named by slug).
    async fn latest_specs(
        &self,
        slugs: Vec<String>,
    ) -> ApiResult<Vec<(String, crate::store::openapi::VersionRow)>> {
        let mut out = Vec::new();
        for slug in slugs {
            let latest = crate::domain::openapi::latest(self.state, &self.r.site.org_id, &slug)
                .await
                .map_err(crate::error::ApiError::internal)?;
            if let Some(version) = latest {
                out.push((slug, version));
            }
        }
        Ok(out)
    }

    /// The rendered page with each embedded operation in place of its placeholder, from
    /// its spec's latest version (a placeholder stays when the spec or operation is absent).
    async fn with_operations(
        &self,
        html: String,
        specs: &[(String, crate::store::openapi::VersionRow)],
    ) -> String {
        let found = quire_content::html::openapi_placeholders(&html);
        if found.is_empty() || specs.is_empty() {
            return html;
        }
        let mut docs: HashMap<&str, Value> = HashMap::new();
        for (slug, version) in specs {
            match crate::domain::openapi::document(self.state, version).await {
                Ok(Some(bytes)) => {
                    if let Ok(doc) = serde_json::from_slice::<Value>(&bytes) {
                        docs.insert(slug.as_str(), doc);
                    }
                }
                Ok(None) => {}
                Err(err) => tracing::warn!(error = %err, "could not read an OpenAPI document"),
            }
        }
        let mut out = html;
        for p in found.iter().rev() {
            let Some(doc) = docs.get(p.spec.as_str()) else {
                continue;
            };
            if let Some(op) = quire_content::openapi::render::operation(doc, &p.path, &p.method) {
                out.replace_range(p.range.clone(), &op);
            }
        }
        out
    }

    /// Renders page `page_id` on the blocking pool, in the node's render slots, which
    /// organizations take in turns (`AppState::renders`): a render takes milliseconds of CPU
    /// (more for a large page or tree), which the async workers, serving every other
    /// request, must not spend. One waiting past [`RENDER_WAIT`], or past its organization's
    /// queue, is told to try again. A render waiting for its turn first looks again for what
    /// another one kept meanwhile under `key`. `None` when the visitor has no such page.
    async fn render_off_workers(
        &self,
        key: &str,
        page_id: String,
        variants: Markup,
    ) -> ApiResult<Option<Rendered>> {
        // Turns by organization: a flood of one organization's renders (new values of a
        // claim its pages read) waits behind itself, not in front of other organizations'.
        // Not by site: an organization makes sites at will, and would get a share for each.
        fn busy<E>(_: E) -> ApiError {
            ApiError::RequestTimeout("The site is busy; try again.".into())
        }
        let turn = self.state.renders.take(&self.r.site.org_id).map_err(busy)?;
        let permit = tokio::time::timeout(RENDER_WAIT, turn)
            .await
            .map_err(busy)?;
        if let Some(kept) = self.state.content.pages.get(key) {
            return Ok(Some(Rendered::Kept(kept)));
        }
        let (state, r, rev, row) = (
            self.state.clone(),
            self.r.clone(),
            self.rev.clone(),
            self.row.clone(),
        );
        let body = self.body.cloned();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let site = Site::new(&state, &r, &rev, &row)?.with_body(body.as_ref());
            let list = entries(&rev, &r.visitor);
            let rendered = list
                .iter()
                .find(|e| e.page.id == page_id)
                .map(|entry| Rendered::New(site.render_page(&list, entry, &variants)));
            // The page list borrows the revision: let both go here, off the workers too.
            drop(list);
            Ok(rendered)
        })
        .await
        .map_err(ApiError::internal)?
    }

    fn render_page(&self, list: &[Entry<'_>], entry: &Entry<'_>, variants: &Markup) -> String {
        // Blocking work inside an async handler: bounded by the renderer's budgets, and
        // done once per page version thanks to the cache.
        let links = self.links(list);
        let page = entry.page;
        let PageKind::Document(doc) = self.kind(page) else {
            return String::new();
        };
        let rendered = render_document(&visitor_document(&doc.markdown, self.visitor), &links);
        let mut body_html = rendered.html;
        for rc in &self.rev.reusable_contents {
            let placeholder = reusable_content_placeholder(&rc.id);
            if body_html.contains(&placeholder) {
                let inner =
                    render_document(&visitor_document(&rc.markdown, self.visitor), &links).html;
                // The content engine's HTML, put in the place it left for it.
                let shown = html! { div class="reusable-content" { (PreEscaped(inner.as_str())) } };
                body_html = body_html.replace(&placeholder, &shown.into_string());
            }
        }
        let base = self.base();
        // The cover as the page's layout sets it: its size and mask as classes, its height
        // as the image's own (the site's CSP allows no inline style), a dark variant for dark
        // schemes.
        let layout = &doc.layout;
        let cover = doc.cover.as_ref().filter(|_| layout.cover);
        let cover = cover
            .and_then(|c| Some((c, links.ref_url(c.reference.as_ref()?)?)))
            .map(|(c, url)| {
                let size = match layout.cover_size.as_str() {
                    "full" | "background" => layout.cover_size.as_str(),
                    _ => "hero",
                };
                let mask = if layout.cover_mask == "radial" {
                    " cover-mask-radial"
                } else {
                    ""
                };
                let image = html! {
                    img class={ "cover cover-" (size) (mask) } src=(url) alt=""
                        height=[c.height.map(|h| h.clamp(10, 700))];
                };
                (image, c.ref_dark.as_ref().and_then(|r| links.ref_url(r)))
            });
        // The page's tags, by their labels (the slug for a tag the revision does not define).
        let tags: Vec<&str> = if layout.tags {
            page.tags
                .iter()
                .map(|slug| {
                    self.rev
                        .tags
                        .iter()
                        .find(|t| t.slug == *slug)
                        .map_or(slug.as_str(), |t| t.label.as_str())
                })
                .collect()
        } else {
            Vec::new()
        };
        let description = page
            .description
            .as_deref()
            .filter(|d| !d.is_empty() && layout.description);
        let updated = iso(self.row.created_at);
        // Previous and next, in tree order among listed document pages.
        let pager = entry
            .listed
            .then(|| {
                let order: Vec<&Entry<'_>> = list
                    .iter()
                    .filter(|e| e.listed && is_document(e.page))
                    .collect();
                let i = order.iter().position(|e| e.page.id == page.id)?;
                let prev = i.checked_sub(1).and_then(|j| order.get(j)).copied();
                Some((prev, order.get(i + 1).copied()))
            })
            .flatten();
        let main = html! {
            // Breadcrumbs: the site, then the page's ancestors.
            nav class="crumbs" aria-label="Breadcrumb" {
                ol {
                    li { a href={ (self.prefix) (self.r.site_base_path) } { (self.title()) } }
                    @for p in &entry.parents {
                        @match list.iter().find(|e| e.page.id == p.id) {
                            Some(e) if is_document(p) => {
                                li { a href={ (base) (e.path) } { (p.title) } }
                            }
                            _ => { li { (p.title) } }
                        }
                    }
                    li { span aria-current="page" { (page.title) } }
                }
            }
            @if let Some((image, dark)) = &cover {
                @if let Some(dark) = dark {
                    picture {
                        source srcset=(dark) media="(prefers-color-scheme: dark)";
                        (image)
                    }
                } @else {
                    (image)
                }
            }
            // A title the layout hides stays for screen readers and the outline.
            h1 class=[(!layout.title).then_some("visually-hidden")] { (label(page)) }
            @if let Some(d) = description {
                p class="lead" { (d) }
            }
            @if !tags.is_empty() {
                ul class="page-tags" aria-label="Tags" {
                    @for tag in &tags { li { (tag) } }
                }
            }
            // The content engine's HTML: rendered and sanitized there, shown as it is.
            div class="content" { (PreEscaped(body_html.as_str())) }
            p class="meta" {
                "Last updated "
                time datetime=(updated) { (&updated[..10]) }
            }
            @if let Some((prev, next)) = pager {
                nav class="pager" aria-label="Previous and next pages" {
                    @if let Some(prev) = prev {
                        a class="prev" rel="prev" href={ (base) (prev.path) } {
                            small { "Previous" }
                            (prev.page.title)
                        }
                    }
                    @if let Some(next) = next {
                        a class="next" rel="next" href={ (base) (next.path) } {
                            small { "Next" }
                            (next.page.title)
                        }
                    }
                }
            }
        };
        let outline = (!rendered.outline.is_empty() && doc.layout.outline).then(|| {
            html! {
                nav class="outline" aria-labelledby="outline-title" {
                    h2 id="outline-title" { "On this page" }
                    ul {
                        @for h in &rendered.outline {
                            li class={ "l" (h.level) } { a href={ "#" (h.anchor) } { (h.text) } }
                        }
                    }
                }
            }
        });
        let mut chrome = self.chrome(list);
        chrome.noindex = chrome.noindex || !entry.listed || page.no_robots_index;
        let body = Body {
            title: page.title.clone(),
            description: page.description.clone(),
            canonical: Some(format!("{}{}", self.url_base(), entry.path)),
            sidebar: Some(html! { (variants) (self.sidebar(list, Some(&page.id))) }),
            main,
            outline,
            page: Some(page.id.clone()),
        };
        layout::document(&self.prefix, &chrome, &body).into_string()
    }

    /// The absolute URL of the site space.
    fn url_base(&self) -> String {
        format!("{}{}", self.r.url_root, self.r.base_path)
    }
}

fn redirect(url: &str) -> Response {
    let mut res = StatusCode::FOUND.into_response();
    if let Ok(v) = HeaderValue::from_str(url) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    res
}

/// One listed page of the sidebar's tree, with the items of its subpages.
fn tree_item(
    entry: &Entry<'_>,
    links: &Links<'_>,
    current: Option<&str>,
    subpages: &[Markup],
) -> Markup {
    let page = entry.page;
    let is_group = matches!(page.kind, PageKind::Group);
    html! {
        li class=[is_group.then_some("group")] {
            @match &page.kind {
                PageKind::Group => {
                    span class="group-title" { (label(page)) }
                }
                PageKind::Link(link) => {
                    @if let Some(url) = links.ref_url(&link.target) {
                        a class="link-page" href=(url) { (label(page)) }
                    } @else {
                        span { (label(page)) }
                    }
                }
                PageKind::Document(_) => {
                    a href={ (links.base) (entry.path) }
                        aria-current=[(current == Some(page.id.as_str())).then_some("page")]
                    { (label(page)) }
                }
            }
            @if !subpages.is_empty() {
                ul { @for item in subpages { (item) } }
            }
        }
    }
}

/// A page's title as the navigation shows it: after its emoji, if any.
fn label(page: &Page) -> Markup {
    html! {
        @if let Some(emoji) = emoji(page) {
            span class="page-emoji" aria-hidden="true" { (emoji) }
        }
        (page.title)
    }
}

/// A page's emoji (stored as hex code points joined by `-`).
fn emoji(page: &Page) -> Option<String> {
    let chars: String = page
        .emoji
        .as_deref()?
        .split('-')
        .map(|p| u32::from_str_radix(p, 16).ok().and_then(char::from_u32))
        .collect::<Option<_>>()?;
    (!chars.is_empty()).then_some(chars)
}

/// Text for a markdown link label.
fn md_label(s: &str) -> String {
    s.replace('[', "\\[").replace(']', "\\]")
}

/// A page as markdown, as `visitor` sees it: its title, description and body.
fn page_markdown(page: &Page, visitor: &Value) -> String {
    let mut o = format!("# {}\n\n", page.title);
    if let Some(d) = page.description.as_deref().filter(|d| !d.is_empty()) {
        let _ = write!(o, "{d}\n\n");
    }
    if let PageKind::Document(doc) = &page.kind {
        o.push_str(&visitor_markdown(&doc.markdown, visitor));
    }
    o
}
