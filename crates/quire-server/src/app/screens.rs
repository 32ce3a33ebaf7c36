//! The reading screens: home, organization, collection, and a space with its page tree and
//! pages, its files, change requests and revisions. Access is the API's
//! (`domain::access`): a screen shows what the same user's token would read, and a space
//! the user may not read answers as a missing one.

use std::collections::HashMap;

use axum::extract::{MatchedPath, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use maud::{html, Markup, PreEscaped};
use quire_content::html::{render_document, FileRef};
use quire_content::model::{ContentRef, Page, PageKind, Revision};
use serde::Deserialize;

use super::routes::{InCollection, InOrg, InSpace};
use super::session::{ByOp, NoFields, Posted, Signed};
use super::shell::{failed, not_done, not_found, page, run_write, see_other, Viewer};
use crate::domain::access::grants::Grants;
use crate::domain::access::{self, SpaceCtx};
use crate::domain::comments::Thread;
use crate::domain::content;
use crate::ids::OrgId;
use crate::state::AppState;
use crate::store;
use crate::store::spaces::SpaceRow;

/// Most organizations and spaces a screen lists.
const LIST_LIMIT: i64 = 500;

/// The spaces of an organization the user may read, in the API's order.
pub(super) async fn visible_spaces(
    state: &AppState,
    org_id: &OrgId,
    grants: &Grants,
) -> crate::error::ApiResult<Vec<SpaceRow>> {
    let spaces = store::spaces::list_live(&state.db, org_id.as_str(), None).await?;
    Ok(spaces
        .into_iter()
        .filter(|s| grants.space_role(s).is_some())
        .take(LIST_LIMIT as usize)
        .collect())
}

fn space_item(s: &SpaceRow) -> Markup {
    html! {
        li {
            a href={ "/s/" (s.id) } {
                @if let Some(e) = s.emoji.as_deref() { (emoji(e)) " " }
                (s.title)
            }
        }
    }
}

/// An emoji code point (`1f4d8`) as its character; anything else as given.
pub(super) fn emoji(code: &str) -> String {
    let chars: Option<String> = code
        .split('-')
        .map(|p| u32::from_str_radix(p, 16).ok().and_then(char::from_u32))
        .collect();
    chars.unwrap_or_else(|| code.to_string())
}

/// `GET /o/{organizationId}`: the organization's collections and spaces the user may read.
pub async fn org(
    State(state): State<AppState>,
    signed: Signed,
    super::routes::InOrg(org): super::routes::InOrg,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    let id = org.org.id.clone();
    let grants = match Grants::load(&state, &id, &caller.user.id, org.role).await {
        Ok(g) => g,
        Err(e) => return failed(e),
    };
    let spaces = match visible_spaces(&state, &id, &grants).await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let mut collections: Vec<_> = grants
        .collections()
        .values()
        .filter(|c| grants.collection_role(c).is_some())
        .collect();
    collections.sort_by(|a, b| (a.position, &a.id).cmp(&(b.position, &b.id)));
    let top: Vec<&SpaceRow> = spaces.iter().filter(|s| s.parent_id.is_none()).collect();
    let create = super::create::forms(&org, &grants, &viewer, None);
    let sites = match super::sites::section(&state, &org, &viewer, &spaces).await {
        Ok(html) => html,
        Err(e) => return failed(e),
    };
    let specs = match super::specs::section(&state, &org, &viewer).await {
        Ok(html) => html,
        Err(e) => return failed(e),
    };
    let deleted = if org.is_admin() {
        let since = state.now() - crate::domain::spaces::retention_ms(&state);
        match store::spaces::list_deleted(&state.db, id.as_str(), since).await {
            Ok(deleted) => deleted,
            Err(e) => return failed(e),
        }
    } else {
        Vec::new()
    };
    let org_id = org.org.id.as_str();
    let body = html! {
        h1 { (org.org.title) }
        p {
            a href={ "/o/" (org_id) "/search" } { "Search this organization" }
            @if org.role.is_some() {
                " · "
                a href={ "/o/" (org_id) "/members" } { "Members" }
                " · "
                a href={ "/o/" (org_id) "/teams" } { "Teams" }
                " · "
                a href={ "/o/" (org_id) "/translations" } { "Translations" }
                @if org.is_admin() {
                    " · "
                    a href={ "/o/" (org_id) "/sso" } { "Single sign-on" }
                }
            }
        }
        h2 { "Spaces" }
        @if top.is_empty() && collections.is_empty() {
            p { "No space you can read yet." }
        }
        ul.spaces {
            @for s in &top { (space_item(s)) }
        }
        @for c in &collections {
            h3 { a href={ "/c/" (c.id) } { (c.title) } }
            ul.spaces {
                @for s in spaces.iter().filter(|s| s.parent_id.as_deref() == Some(c.id.as_str())) {
                    (space_item(s))
                }
            }
        }
        (create)
        (sites)
        (specs)
        @if !deleted.is_empty() {
            h2 { "Recently deleted" }
            ul.spaces {
                @for s in &deleted {
                    li { (s.title) " " a href={ "/s/" (s.id) "/~/settings" } { "Restore…" } }
                }
            }
        }
    };
    page(StatusCode::OK, &org.org.title, Some(&viewer), None, body)
}

/// `GET /c/{collectionId}`: a collection's spaces the user may read.
pub async fn collection(
    State(state): State<AppState>,
    signed: Signed,
    InCollection(ctx): InCollection,
) -> Response {
    let viewer = signed.viewer();
    let collection_id = ctx.collection.id.clone();
    let org_id = OrgId::new(ctx.collection.org_id.clone());
    let spaces = match visible_spaces(&state, &org_id, &ctx.grants).await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let inside: Vec<&SpaceRow> = spaces
        .iter()
        .filter(|s| {
            s.parent_id
                .as_deref()
                .is_some_and(|p| ctx.grants.is_within(p, &collection_id))
        })
        .collect();
    let create = super::create::forms(&ctx.org, &ctx.grants, &viewer, Some(&collection_id));
    let hidden = html! { input type="hidden" name="csrf" value=(viewer.csrf); };
    let admin = (ctx.role >= access::Role::Admin).then(|| {
        let action = format!("/c/{}", ctx.collection.id);
        let current = ctx.collection.parent_id.as_deref().unwrap_or("");
        super::settings::place_form(
            &ctx.grants,
            Some(&ctx.collection.id),
            current,
            (&action, viewer.csrf),
            "collection-parent",
        )
    });
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" {
            ol { li { a href={ "/o/" (org_id.as_str()) } { (ctx.org.org.title) } } }
        }
        h1 { (ctx.collection.title) }
        ul.spaces {
            @for s in &inside { (space_item(s)) }
        }
        @if inside.is_empty() {
            p { "No space you can read in this collection." }
        }
        (create)
        @if ctx.org.role.is_some() {
            p {
                a href={ "/c/" (ctx.collection.id) "/~/share" } { "Who may access this collection" }
            }
        }
        @if let Some(place) = admin {
            h2 { "Place" }
            (place)
            h2 { "Settings" }
            form method="post" action={ "/c/" (ctx.collection.id) } {
                (hidden)
                input type="hidden" name="op" value="settings";
                label for="collection-title" { "Title" }
                input id="collection-title" name="title" maxlength="50" required value=(ctx.collection.title);
                label for="collection-description" { "Description" }
                input id="collection-description" name="description" maxlength="100" value=(ctx.collection.description.as_deref().unwrap_or(""));
                button type="submit" { "Save" }
            }
            form method="post" action={ "/c/" (ctx.collection.id) } {
                (hidden)
                input type="hidden" name="op" value="delete";
                label {
                    input type="checkbox" name="confirm" value="yes" required;
                    " Delete this collection (its spaces and collections move up, nothing is lost)"
                }
                button type="submit" { "Delete" }
            }
        }
    };
    page(
        StatusCode::OK,
        &ctx.collection.title,
        Some(&viewer),
        None,
        body,
    )
}

/// `GET /c/{collectionId}/~/share`: who may access the collection.
pub async fn collection_share(
    State(state): State<AppState>,
    signed: Signed,
    InCollection(ctx): InCollection,
) -> Response {
    super::share::collection_screen(&state, &ctx, &signed.viewer()).await
}

/// The forms of `POST /c/{collectionId}`, by their `op`.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum CollectionForm {
    /// Its title and description.
    Settings {
        title: String,
        description: Option<String>,
    },
    /// Into another collection (`parent`), or to the organization's top (empty).
    Move { parent: Option<String> },
    /// Deletes it, when `confirm` is `yes`.
    Delete { confirm: Option<String> },
}

/// `POST /c/{collectionId}`: its admins rename it, describe it, move it, or delete it (its
/// spaces and collections move up to its parent).
pub async fn collection_act(
    State(state): State<AppState>,
    signed: Signed,
    InCollection(ctx): InCollection,
    Posted(ByOp(form)): Posted<ByOp<CollectionForm>>,
) -> Response {
    let viewer = signed.viewer();
    let here = format!("/c/{}", ctx.collection.id);
    let run = {
        let state = state.clone();
        async move {
            if ctx.role < access::Role::Admin {
                return Err(crate::error::ApiError::forbidden(
                    "Only the collection's admins may change or delete it.",
                ));
            }
            match form {
                CollectionForm::Settings { title, description } => {
                    let patch = store::collections::CollectionPatch {
                        title: Some(title.trim().to_string()),
                        description: Some(description.unwrap_or_default().trim().to_string()),
                        ..Default::default()
                    };
                    crate::domain::collections::update(&state, &ctx.collection, patch).await?;
                    Ok(format!("/c/{}", ctx.collection.id))
                }
                CollectionForm::Move { parent } => {
                    let body = crate::domain::placement::MoveBody {
                        parent: Some(parent.filter(|p| !p.is_empty())),
                        position: None,
                    };
                    crate::domain::collections::move_collection(&state, &ctx, &body).await?;
                    Ok(format!("/c/{}", ctx.collection.id))
                }
                CollectionForm::Delete { confirm } if confirm.as_deref() == Some("yes") => {
                    crate::domain::collections::delete(&state, &ctx.collection).await?;
                    Ok(match &ctx.collection.parent_id {
                        Some(parent) => format!("/c/{parent}"),
                        None => format!("/o/{}", ctx.collection.org_id),
                    })
                }
                CollectionForm::Delete { .. } => Err(crate::error::ApiError::bad_request(
                    "`confirm`: tick the box to delete the collection.",
                )),
            }
        }
    };
    run_write(&viewer, &here, "Back to the collection", run).await
}

/// `GET /s/{spaceId}`: the space's first page.
pub async fn space_home(
    State(state): State<AppState>,
    headers: HeaderMap,
    signed: Signed,
    Extension(ctx): Extension<SpaceCtx>,
) -> Response {
    space(&state, &headers, &signed, ctx, "", &Default::default()).await
}

/// `GET /s/{spaceId}/{path}`: a page by its path, or one of the space's `~/` screens, each
/// at a route of its own (`routes::ROUTES`).
pub async fn space_path(
    State(state): State<AppState>,
    matched: MatchedPath,
    Path(params): Path<HashMap<String, String>>,
    axum::extract::Query(query): axum::extract::Query<super::search::SearchQuery>,
    headers: HeaderMap,
    signed: Signed,
    Extension(ctx): Extension<SpaceCtx>,
) -> Response {
    let path = below_space(matched.as_str(), &params);
    // A page's path never starts with `~`: an address there that no screen's route
    // declares is no page either.
    if matched.as_str() == PAGE_ROUTE && path.starts_with('~') {
        return not_found(
            Some(&signed.viewer()),
            "No screen of the space has this address.",
        );
    }
    space(&state, &headers, &signed, ctx, &path, &query).await
}

/// The route of a space's pages.
pub const PAGE_ROUTE: &str = "/s/{spaceId}/{*path}";

/// The path below `/s/{spaceId}/` that the route `matched` matched, its parameters decoded.
fn below_space(matched: &str, params: &HashMap<String, String>) -> String {
    matched
        .split('/')
        .skip(3)
        .map(
            |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => params
                    .get(name.trim_start_matches('*'))
                    .cloned()
                    .unwrap_or_default(),
                None => seg.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

/// A screen of the space, with the session and the space its route's check loaded.
async fn space(
    state: &AppState,
    headers: &HeaderMap,
    signed: &Signed,
    ctx: SpaceCtx,
    path: &str,
    query: &super::search::SearchQuery,
) -> Response {
    let space_id = ctx.space.id.clone();
    let space_id = space_id.as_str();
    let here = if path.is_empty() {
        format!("/s/{space_id}")
    } else {
        format!("/s/{space_id}/{path}")
    };
    let viewer = signed.viewer();
    let ctx = match ctx {
        c if c.space.deleted_at.is_none() => c,
        // A deleted space shows its admins only its settings, to restore it.
        c if path == "~/settings" && c.role >= access::Role::Admin => {
            return super::settings::screen(&c, &viewer, None);
        }
        _ => {
            return not_found(
                Some(&viewer),
                "This space does not exist, or you may not read it.",
            )
        }
    };
    // The script's search as one types asks for the results alone: no page tree needed.
    if path == "~/search" && super::search::wants_fragment(headers) {
        return super::search::space(
            state,
            &ctx,
            &viewer,
            None,
            query.q.as_deref().unwrap_or(""),
            true,
        )
        .await;
    }
    let rev = match current_content(state, &ctx).await {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    if let Some(rest) = path.strip_prefix("~/") {
        if rest == "search" {
            let nav = sidebar(&ctx.space, &rev.pages, &[], false);
            let q = query.q.as_deref().unwrap_or("");
            return super::search::space(state, &ctx, &viewer, Some(&nav), q, false).await;
        }
        return tilde(state, &ctx, &rev, &viewer, (rest, query.by.as_deref())).await;
    }
    let entries = flatten(&rev.pages);
    let found = if path.is_empty() {
        entries
            .iter()
            .find(|e| matches!(e.page.kind, PageKind::Document(_)) && !e.page.hidden)
            .or_else(|| {
                entries
                    .iter()
                    .find(|e| matches!(e.page.kind, PageKind::Document(_)))
            })
    } else {
        entries
            .iter()
            .find(|e| e.path == path.trim_end_matches('/'))
    };
    // The sidebar opens the current page's branch: its ancestors and itself.
    let open: Vec<&str> = found
        .map(|e| {
            e.ancestors
                .iter()
                .map(|&i| entries[i].page.id.as_str())
                .chain(std::iter::once(e.page.id.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let nav = sidebar(&ctx.space, &rev.pages, &open, true);
    let Some(entry) = found else {
        if path.is_empty() {
            let body = html! {
                h1 { (ctx.space.title) }
                p { "This space has no page yet." }
            };
            return page(
                StatusCode::OK,
                &ctx.space.title,
                Some(&viewer),
                Some(&nav),
                body,
            );
        }
        let body = html! {
            h1 { "Page not found" }
            p { "No page of this space has this address." }
        };
        return page(
            StatusCode::NOT_FOUND,
            "Page not found",
            Some(&viewer),
            Some(&nav),
            body,
        );
    };
    let shown = page_body(&ctx, &rev, &entries, entry);
    let mut edit = None;
    if matches!(entry.page.kind, PageKind::Document(_)) {
        // For the person's recent pages; a page shows even when this note fails.
        let user = signed.user.id.as_str();
        if let Err(e) = crate::domain::recent::seen(state, user, space_id, &entry.page.id).await {
            tracing::warn!(error = %e, "a recent page was not noted");
        }
        edit = Some(super::editor::edit_button(&ctx, &viewer, &entry.page.id));
    }
    let on = (entry.page.id.as_str(), here.as_str());
    let discussed = match discussion(state, &ctx, &viewer, None, Some(on)).await {
        Ok(html) => html,
        Err(e) => return failed(e),
    };
    let body = html! {
        @if let Some(edit) = edit { (edit) }
        (shown)
        (discussed)
    };
    page(
        StatusCode::OK,
        &entry.page.title,
        Some(&viewer),
        Some(&nav),
        body,
    )
}

/// The content of the space's current revision.
pub(super) async fn current_content(
    state: &AppState,
    ctx: &SpaceCtx,
) -> crate::error::ApiResult<std::sync::Arc<Revision>> {
    let row = content::revision_row(state, &ctx.space.id, &ctx.space.revision_id)
        .await?
        .ok_or_else(|| {
            crate::error::ApiError::internal(anyhow::anyhow!("the space's revision is missing"))
        })?;
    content::load_in(state, &ctx.space.id, &row.root).await
}

/// A page with its path (slugs joined) and its ancestors' indexes in the list.
struct Entry<'a> {
    page: &'a Page,
    path: String,
    ancestors: Vec<usize>,
}

/// Every page of the tree, depth first, with its path. Iterative: the tree's depth is
/// bounded by the content engine, but no recursion here depends on it.
fn flatten(pages: &[Page]) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry<'_>> = Vec::new();
    let mut stack: Vec<(&Page, Option<usize>)> = pages.iter().rev().map(|p| (p, None)).collect();
    while let Some((p, parent)) = stack.pop() {
        let (prefix, mut ancestors) = match parent {
            Some(i) => (out[i].path.clone(), {
                let mut a = out[i].ancestors.clone();
                a.push(i);
                a
            }),
            None => (String::new(), Vec::new()),
        };
        let path = match (prefix.is_empty(), p.slug.is_empty()) {
            (_, true) => prefix.clone(),
            (true, false) => p.slug.clone(),
            (false, false) => format!("{prefix}/{}", p.slug),
        };
        ancestors.shrink_to_fit();
        out.push(Entry {
            page: p,
            path,
            ancestors,
        });
        let me = out.len() - 1;
        stack.extend(p.pages.iter().rev().map(|c| (c, Some(me))));
    }
    out
}

/// The page tree as a navigation list (groups, nesting, hidden pages marked). Groups are
/// always open; a page's children show only on the branch of `open` (the current page and
/// its ancestors, the current one last), so that a large space sends its outline, not every
/// page: the others open when their page is opened. With `search`, a search box on top (the
/// search screen has its own).
fn sidebar(space: &SpaceRow, pages: &[Page], open: &[&str], search: bool) -> Markup {
    let current = open.last().copied();
    // A page's item; `children` are the items of its pages when its branch is open.
    let item = |p: &Page, path: &str, children: Option<Vec<Markup>>| {
        html! {
            li {
                @match &p.kind {
                    PageKind::Group => div.group { (p.title) },
                    PageKind::Link(_) => {
                        span { (p.title) }
                        @if p.hidden { " " span.hidden-mark { "(hidden)" } }
                    }
                    PageKind::Document(_) => {
                        a href={ "/s/" (space.id) "/" (path) }
                            aria-current=[(Some(p.id.as_str()) == current).then_some("page")] { (p.title) }
                        @if p.hidden { " " span.hidden-mark { "(hidden)" } }
                    }
                }
                @if let Some(children) = &children {
                    ul { @for c in children { (c) } }
                } @else if !p.pages.is_empty() {
                    @let n = p.pages.len();
                    " "
                    span.muted aria-label={ (n) " " (if n == 1 { "page" } else { "pages" }) " inside" } {
                        "+" (n)
                    }
                }
            }
        }
    };
    // Depth first with an explicit stack of open branches, so that nesting needs no
    // recursion: a branch's item is made once all its pages' items are.
    struct Branch<'a> {
        page: Option<&'a Page>,
        path: String,
        pages: &'a [Page],
        next: usize,
        items: Vec<Markup>,
    }
    let mut stack = vec![Branch {
        page: None,
        path: String::new(),
        pages,
        next: 0,
        items: Vec::new(),
    }];
    let items = loop {
        let Some(top) = stack.last_mut() else {
            break Vec::new();
        };
        if let Some(p) = top.pages.get(top.next) {
            top.next += 1;
            let path = if p.slug.is_empty() {
                top.path.clone()
            } else if top.path.is_empty() {
                p.slug.clone()
            } else {
                format!("{}/{}", top.path, p.slug)
            };
            let expanded = matches!(p.kind, PageKind::Group) || open.contains(&p.id.as_str());
            if expanded && !p.pages.is_empty() {
                stack.push(Branch {
                    page: Some(p),
                    path,
                    pages: &p.pages,
                    next: 0,
                    items: Vec::new(),
                });
            } else {
                top.items.push(item(p, &path, None));
            }
            continue;
        }
        let Some(done) = stack.pop() else {
            break Vec::new();
        };
        match (done.page, stack.last_mut()) {
            (Some(p), Some(parent)) => parent.items.push(item(p, &done.path, Some(done.items))),
            _ => break done.items,
        }
    };
    let links = [
        ("search", "Search"),
        ("comments", "Discussion"),
        ("changes", "Change requests"),
        ("revisions", "History"),
        ("files", "Files"),
        ("import", "Import"),
        ("pdf", "PDF"),
        ("share", "Share"),
        ("settings", "Settings"),
    ];
    html! {
        nav.side aria-label="Pages of the space" {
            p { strong { a href={ "/s/" (space.id) } { (space.title) } } }
            @if search {
                form method="get" action={ "/s/" (space.id) "/~/search" } role="search" {
                    label.sr for="side-q" { "Search this space" }
                    input id="side-q" name="q" type="search" placeholder="Search this space"
                        maxlength=(super::search::MAX_QUERY) autocomplete="off";
                }
            }
            p.muted {
                @for (i, (at, label)) in links.iter().enumerate() {
                    @if i > 0 { " · " }
                    a href={ "/s/" (space.id) "/~/" (at) } { (label) }
                }
            }
            ul { @for i in &items { (i) } }
        }
    }
}

/// Links and files of a revision as the app serves them.
struct Links<'a> {
    space_id: &'a str,
    rev: &'a Revision,
    entries: &'a [Entry<'a>],
    /// Where its files are served: `~` for the space's content, `~/changes/{n}` for a
    /// change request's.
    files_at: &'a str,
}

impl quire_content::html::Resolve for Links<'_> {
    fn page_url(&self, page_id: &str, anchor: Option<&str>) -> Option<String> {
        let e = self.entries.iter().find(|e| e.page.id == page_id)?;
        let mut url = format!("/s/{}/{}", self.space_id, e.path);
        if let Some(a) = anchor {
            url.push('#');
            url.push_str(a);
        }
        Some(url)
    }

    fn file(&self, file_id: &str) -> Option<FileRef> {
        let f = self.rev.file(file_id)?;
        let name: String = url::form_urlencoded::byte_serialize(f.name.as_bytes()).collect();
        Some(FileRef {
            url: format!(
                "/s/{}/{}/files/{}/{name}",
                self.space_id, self.files_at, f.id
            ),
            name: f.name.clone(),
            content_type: f.content_type.clone(),
            width: f.dimensions.map(|d| d.width),
            height: f.dimensions.map(|d| d.height),
        })
    }

    fn other(&self, r: &ContentRef) -> Option<String> {
        match r {
            ContentRef::Collection { collection } => Some(format!("/c/{collection}")),
            r => quire_content::html::ref_url(self, r, &|s| Some(format!("/s/{s}"))),
        }
    }

    fn title(&self, r: &ContentRef) -> Option<String> {
        match r {
            ContentRef::Page { page, space: None } => self
                .entries
                .iter()
                .find(|e| &e.page.id == page)
                .map(|e| e.page.title.clone()),
            _ => None,
        }
    }

    // Members read every variant of adaptive content: the app shows what was written.
    fn condition(&self, _expression: &str) -> bool {
        true
    }
}

/// Markdown of a page of change request `number`'s content `rev` as the app shows it (the
/// published site's renderer, with links to the app's screens and the change request's
/// files).
pub(super) fn render_markdown(
    space_id: &str,
    number: i64,
    rev: &Revision,
    markdown: &str,
) -> String {
    let entries = flatten(&rev.pages);
    let files_at = format!("~/changes/{number}");
    let links = Links {
        space_id,
        rev,
        entries: &entries,
        files_at: &files_at,
    };
    let document = quire_content::markdown::markdown_to_document(markdown);
    render_document(&document, &links).html
}

/// A page: breadcrumbs, title, description, the rendered document and its outline.
fn page_body(ctx: &SpaceCtx, rev: &Revision, entries: &[Entry<'_>], entry: &Entry<'_>) -> Markup {
    let rendered = match &entry.page.kind {
        PageKind::Document(doc) => {
            let links = Links {
                space_id: &ctx.space.id,
                rev,
                entries,
                files_at: "~",
            };
            let document = quire_content::markdown::markdown_to_document(&doc.markdown);
            Some(render_document(&document, &links))
        }
        _ => None,
    };
    html! {
        nav.crumbs aria-label="Breadcrumb" {
            ol {
                li { a href={ "/o/" (ctx.org.org.id.as_str()) } { (ctx.org.org.title) } }
                li { a href={ "/s/" (ctx.space.id) } { (ctx.space.title) } }
                @for &i in &entry.ancestors {
                    @let a = &entries[i];
                    @if matches!(a.page.kind, PageKind::Document(_)) {
                        li { a href={ "/s/" (ctx.space.id) "/" (a.path) } { (a.page.title) } }
                    } @else {
                        li { (a.page.title) }
                    }
                }
            }
        }
        h1 { (entry.page.title) }
        @if entry.page.hidden {
            p.hidden-mark { "Hidden from the navigation of published sites." }
        }
        @if let Some(d) = &entry.page.description {
            p.muted { (d) }
        }
        @if let Some(rendered) = &rendered {
            @if rendered.outline.len() > 1 {
                nav.outline aria-label="On this page" {
                    p { strong { "On this page" } }
                    ul {
                        @for h in &rendered.outline {
                            li { a href={ "#" (h.anchor) } { (h.text) } }
                        }
                    }
                }
            }
            // why: the page's markdown as the content renderer made it, already HTML.
            article.content { (PreEscaped(&rendered.html)) }
        }
    }
}

/// The `~/` screens of a space: files, change requests, revisions.
async fn tilde(
    state: &AppState,
    ctx: &SpaceCtx,
    rev: &Revision,
    viewer: &Viewer<'_>,
    (rest, by): (&str, Option<&str>),
) -> Response {
    let nav = sidebar(&ctx.space, &rev.pages, &[], true);
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["files", id, ..] => {
            let Some(f) = rev.file(id) else {
                return not_found(
                    Some(viewer),
                    "This file is not in the space's current content.",
                );
            };
            match state.blobs.get(&f.blob).await {
                Ok(Some(bytes)) => {
                    crate::http::download::uploaded_file(bytes, &f.content_type, &f.name)
                }
                Ok(None) => not_found(Some(viewer), "This file's bytes are missing."),
                Err(e) => failed(e),
            }
        }
        ["files"] => {
            let body = html! {
                h1 { "Files of " (ctx.space.title) }
                @if rev.files.is_empty() {
                    p { "No file yet." }
                } @else {
                    ul {
                        @for f in &rev.files {
                            @let name: String =
                                url::form_urlencoded::byte_serialize(f.name.as_bytes()).collect();
                            li {
                                a href={ "/s/" (ctx.space.id) "/~/files/" (f.id) "/" (name) } { (f.name) }
                                " "
                                span.muted { (f.content_type) }
                            }
                        }
                    }
                }
            };
            page(StatusCode::OK, "Files", Some(viewer), Some(&nav), body)
        }
        ["comments"] => match discussion(state, ctx, viewer, None, None).await {
            Ok(discussed) => {
                let body = html! {
                    h1 { "Discussion of " (ctx.space.title) }
                    (discussed)
                };
                page(StatusCode::OK, "Discussion", Some(viewer), Some(&nav), body)
            }
            Err(e) => failed(e),
        },
        ["settings"] => super::settings::screen(ctx, viewer, Some(&nav)),
        ["share"] => super::share::screen(state, ctx, viewer, Some(&nav)).await,
        ["import"] => super::import::screen(state, ctx, viewer, Some(&nav)).await,
        ["pdf"] => pdf(state, ctx, viewer, None).await,
        ["changes", n, "pdf"] => pdf(state, ctx, viewer, Some(n)).await,
        ["changes", n, "files", id, ..] => {
            super::editor::change_request_file(state, ctx, viewer, n, id).await
        }
        ["changes"] => change_requests(state, ctx, viewer, Some(&nav), by).await,
        ["changes", number, "edit", page_id] => {
            super::editor::screen(state, ctx, viewer, Some(&nav), number, page_id).await
        }
        ["changes", number, "tree"] => arrange(state, ctx, viewer, Some(&nav), number).await,
        ["changes", number, ..] => change_request(state, ctx, viewer, Some(&nav), number).await,
        ["revisions"] => super::history::list(state, ctx, viewer, Some(&nav)).await,
        ["revisions", _, ..] => {
            let rest = &rest["revisions/".len()..];
            super::history::revision(state, ctx, viewer, Some(&nav), rest).await
        }
        _ => not_found(Some(viewer), "No screen of the space has this address."),
    }
}

async fn change_requests(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
    by: Option<&str>,
) -> Response {
    let by = by.filter(|b| !b.is_empty());
    let mut sections = Vec::new();
    for (status, heading) in [
        ("open", "Open"),
        ("draft", "Drafts"),
        ("merged", "Merged"),
        ("archived", "Archived"),
    ] {
        let (list, total) = match store::change_requests::list(
            &state.db,
            &ctx.space.id,
            status,
            by,
            None,
            50,
        )
        .await
        {
            Ok(l) => l,
            Err(e) => return failed(e),
        };
        sections.push((status, heading, list, total));
    }
    let base = format!("/s/{}/~/changes", ctx.space.id);
    let body = html! {
        h1 { "Change requests of " (ctx.space.title) }
        p {
            "Show: "
            @if by.is_none() { strong { "all" } } @else { a href=(base) { "all" } }
            " · "
            @if by == Some(viewer.user) {
                strong { "mine" }
            } @else {
                a href={ (base) "?by=" (viewer.user) } { "mine" }
            }
        }
        @for (status, heading, list, total) in &sections {
            section data-status=(status) {
                h2 { (heading) " " span.muted { (total) } }
                @if list.is_empty() {
                    p.muted { "None." }
                } @else {
                    ul {
                        @for c in list {
                            li {
                                a href={ (base) "/" (c.number) } {
                                    @if c.subject.is_empty() { "Untitled" } @else { (c.subject) }
                                }
                                " "
                                span.muted {
                                    "#" (c.number) " · updated " (crate::clock::iso(c.updated_at))
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    page(StatusCode::OK, "Change requests", Some(viewer), nav, body)
}

async fn change_request(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
    number: &str,
) -> Response {
    if number.parse::<i64>().is_err() {
        return not_found(
            Some(viewer),
            "No change request of this space has this number.",
        );
    }
    let found = match store::change_requests::get(&state.db, &ctx.space.id, number).await {
        Ok(f) => f,
        Err(e) => return failed(e),
    };
    let Some(c) = found else {
        return not_found(
            Some(viewer),
            "No change request of this space has this number.",
        );
    };
    let base = format!("/s/{}/~/changes/{}", ctx.space.id, c.number);
    let may_edit = ctx.role >= crate::domain::access::Role::Edit;
    let open = matches!(
        c.status,
        crate::values::ChangeRequestStatus::Open | crate::values::ChangeRequestStatus::Draft
    );
    let arranges = open && super::editor::why_not(ctx).is_none();
    // What changed first, then its reviews and its discussion.
    let files_at = format!("~/changes/{}", c.number);
    let edit_at = arranges.then(|| format!("{base}/edit/"));
    let changes = changes_html(
        state,
        ctx,
        (&c.revision_base, &c.revision_id),
        &files_at,
        edit_at,
    );
    let changes = match changes.await {
        Ok(html) => html,
        Err(e) => return failed(e),
    };
    let reviews = match review_html(state, ctx, viewer, &c).await {
        Ok(html) => html,
        Err(e) => return failed(e),
    };
    let discussed = match discussion(state, ctx, viewer, Some(&c), None).await {
        Ok(html) => html,
        Err(e) => return failed(e),
    };
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" {
            ol { li { a href={ "/s/" (ctx.space.id) "/~/changes" } { "Change requests" } } }
        }
        h1 {
            @if c.subject.is_empty() { "Untitled" } @else { (c.subject) }
            " "
            span.muted { "#" (c.number) }
        }
        p {
            "Status: " strong { (c.status.as_str()) } ". Updated "
            (crate::clock::iso(c.updated_at)) ". "
            a href={ (base) "/pdf" } { "PDF" }
        }
        @if c.status.as_str() != "merged" && may_edit {
            details {
                summary { "Edit subject and status" }
                form method="post" action={ (base) "/edit" } {
                    input type="hidden" name="csrf" value=(viewer.csrf);
                    label for="subject" { "Subject" }
                    input id="subject" name="subject" type="text" maxlength="100" value=(c.subject);
                    label for="status" { "Status" }
                    select id="status" name="status" {
                        @for (value, label) in [("draft", "Draft"), ("open", "Open"), ("archived", "Archived")] {
                            option value=(value) selected[c.status.as_str() == value] { (label) }
                        }
                    }
                    button type="submit" { "Save" }
                }
            }
        }
        @if c.status.as_str() != "merged" && c.revision_base != ctx.space.revision_id {
            div.notice role="status" {
                p {
                    "This change request is behind the space's main content: it is compared with \
                     the content it was based on."
                }
                @if may_edit {
                    form method="post" action={ (base) "/update" } {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        button type="submit" { "Update from main" }
                    }
                }
            }
        }
        @if arranges {
            p {
                a href={ (base) "/tree" } { "Arrange pages" }
                ": add, move and delete pages of this change request."
            }
        }
        (changes)
        (reviews)
        (discussed)
    };
    page(StatusCode::OK, "Change request", Some(viewer), nav, body)
}

/// `~/changes/{number}/tree`: a change request's page tree, to add, move and delete pages
/// (for those who may edit it while it is open).
async fn arrange(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
    number: &str,
) -> Response {
    let missing = "No open change request of this space has this number.";
    let found = match number.parse::<i64>() {
        Ok(_) => store::change_requests::get(&state.db, &ctx.space.id, number).await,
        Err(_) => Ok(None),
    };
    let c = match found {
        Ok(Some(c))
            if matches!(
                c.status,
                crate::values::ChangeRequestStatus::Open
                    | crate::values::ChangeRequestStatus::Draft
            ) =>
        {
            c
        }
        Ok(_) => return not_found(Some(viewer), missing),
        Err(e) => return failed(e),
    };
    if let Some(why) = super::editor::why_not(ctx) {
        return not_done(
            viewer,
            &crate::error::ApiError::forbidden(why),
            &format!("/s/{}/~/changes/{}", ctx.space.id, c.number),
            "Back to the change request",
        );
    }
    let rev = match content::revision_row(state, &ctx.space.id, &c.revision_id).await {
        Ok(Some(row)) => match content::load_in(state, &ctx.space.id, &row.root).await {
            Ok(rev) => rev,
            Err(e) => return failed(e),
        },
        Ok(None) => return not_found(Some(viewer), missing),
        Err(e) => return failed(e),
    };
    let tree = super::editor::tree_section(ctx, viewer, c.number, &rev, true);
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" {
            ol {
                li { a href={ "/s/" (ctx.space.id) "/~/changes" } { "Change requests" } }
                li {
                    a href={ "/s/" (ctx.space.id) "/~/changes/" (c.number) } {
                        @if c.subject.is_empty() { "Untitled" } @else { (c.subject) }
                        " #" (c.number)
                    }
                }
            }
        }
        h1 { "Arrange pages" }
        (tree)
    };
    page(StatusCode::OK, "Arrange pages", Some(viewer), nav, body)
}

/// Largest number of edited pages whose markdown diff a change request's screen shows.
const DIFFS_SHOWN: usize = 100;

/// The changes from revision `base` (`""`: none, an empty space) to `head`: pages added,
/// removed, moved and edited, with each edited page's markdown diff.
pub(super) async fn changes_html(
    state: &AppState,
    ctx: &SpaceCtx,
    (base, head): (&str, &str),
    head_files: &str,
    edit_at: Option<String>,
) -> crate::error::ApiResult<Markup> {
    use quire_content::diff::SemanticChange;
    let load = |revision: String| async move {
        let row = content::revision_row(state, &ctx.space.id, &revision)
            .await?
            .ok_or_else(|| {
                crate::error::ApiError::internal(anyhow::anyhow!("revision {revision} is missing"))
            })?;
        content::load_in(state, &ctx.space.id, &row.root).await
    };
    let base = if base.is_empty() {
        std::sync::Arc::new(Revision::default())
    } else {
        load(base.to_string()).await?
    };
    let mine = load(head.to_string()).await?;
    let space_id = ctx.space.id.clone();
    let head_files = head_files.to_string();
    // Diffing and rendering are CPU work bounded by the content: off the async workers.
    tokio::task::spawn_blocking(move || {
        let changes = quire_content::diff::diff(&base, &mine, &|_| String::new());
        if changes.is_empty() {
            return html! {
                h2 { "Changes" }
                p { "No change yet." }
            };
        }
        let before = flatten(&base.pages);
        let after = flatten(&mine.pages);
        let markdown = |entries: &[Entry<'_>], id: &str| {
            entries
                .iter()
                .find(|e| e.page.id == id)
                .and_then(|e| match &e.page.kind {
                    PageKind::Document(d) => Some(d.markdown.clone()),
                    _ => None,
                })
        };
        // The page as readers will see it, beside what it was.
        let shown = |rev: &Revision, entries: &[Entry<'_>], md: &str, files_at: &str| {
            let links = Links {
                space_id: &space_id,
                rev,
                entries,
                files_at,
            };
            let document = quire_content::markdown::markdown_to_document(md);
            render_document(&document, &links).html
        };
        /// An edited or added page's body: before (if it was), after, and the markdown diff.
        struct Body {
            before: Option<String>,
            after: String,
            lines: String,
        }
        let mut diffs = 0;
        let mut items = Vec::new();
        for change in &changes {
            let (what, page) = match change {
                SemanticChange::PageCreated { page } => ("Added", page),
                SemanticChange::PageDeleted { page } => ("Removed", page),
                SemanticChange::PageMoved { page, .. } => ("Moved", page),
                SemanticChange::PageEdited { page, .. } => ("Edited", page),
                _ => continue,
            };
            // A page the change request still holds opens in its editor.
            let document = after
                .iter()
                .any(|e| e.page.id == page.id && matches!(e.page.kind, PageKind::Document(_)));
            let edit = edit_at.as_deref().filter(|_| document);
            let shows_body = matches!(
                change,
                SemanticChange::PageEdited { attributes, .. } if attributes.document.is_some()
            ) || matches!(change, SemanticChange::PageCreated { .. });
            let body = (shows_body && diffs < DIFFS_SHOWN).then(|| {
                diffs += 1;
                let old = markdown(&before, &page.id);
                let new = markdown(&after, &page.id).unwrap_or_default();
                Body {
                    before: old.as_ref().map(|old| shown(&base, &before, old, "~")),
                    after: shown(&mine, &after, &new, &head_files),
                    lines: quire_content::html::markdown_diff(
                        old.as_deref().unwrap_or_default(),
                        &new,
                    ),
                }
            });
            items.push((what, page, edit, body));
        }
        html! {
            h2 { "Changes" }
            ul.changes {
                @for (what, page, edit, body) in &items {
                    li data-change=(what.to_lowercase()) {
                        strong { (what) } " " (page.title)
                        @if let Some(at) = edit {
                            " "
                            a href={ (at) (page.id) } aria-label={ "Edit " (page.title) } { "Edit" }
                        }
                        @if let Some(body) = body {
                            div.side-by-side {
                                @if let Some(old) = &body.before {
                                    section.before aria-label={ (page.title) " before" } {
                                        p.muted { "Before" }
                                        // why: the page as the content renderer made it, already HTML.
                                        article.content { (PreEscaped(old)) }
                                    }
                                }
                                section.after aria-label={ (page.title) " after" } {
                                    p.muted { "After" }
                                    // why: the page as the content renderer made it, already HTML.
                                    article.content { (PreEscaped(&body.after)) }
                                }
                            }
                            @if !body.lines.is_empty() {
                                details.source {
                                    summary { "Source diff" }
                                    table.diff aria-label={ "Changes to " (page.title) } {
                                        // why: the diff's rows as the content crate rendered them.
                                        tbody { (PreEscaped(&body.lines)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if diffs == DIFFS_SHOWN {
                p.muted { "The markdown of the first " (DIFFS_SHOWN) " pages is shown." }
            }
        }
    })
    .await
    .map_err(crate::error::ApiError::internal)
}

/// `GET /o/{organizationId}/openapi/{specSlug}`: an OpenAPI specification and its versions
/// (for members: as in the API, guests do not read specifications).
pub async fn openapi_spec(
    State(state): State<AppState>,
    Path((_, slug)): Path<(String, String)>,
    signed: Signed,
    InOrg(org): InOrg,
) -> Response {
    let viewer = signed.viewer();
    let missing = "This specification does not exist, or you may not see it.";
    let spec = match store::openapi::get(&state.db, org.org.id.as_str(), &slug).await {
        Ok(Some(s)) => s,
        Ok(None) => return not_found(Some(&viewer), missing),
        Err(e) => return failed(e),
    };
    let versions = match store::openapi::versions(&state.db, &spec.id, None, 50).await {
        Ok((v, _)) => v,
        Err(e) => return failed(e),
    };
    let errors = crate::domain::openapi::last_errors(&spec);
    let update = super::specs::update_form(&org, &viewer, &spec.slug);
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" {
            ol { li { a href={ "/o/" (org.org.id.as_str()) } { (org.org.title) } } }
        }
        h1 { (spec.slug) }
        dl {
            dt { "Processing" }
            dd { (spec.processing_state) }
            dt { "Latest version" }
            dd { (spec.last_version.as_deref().unwrap_or("none yet")) }
        }
        h2 { "Versions" }
        ul {
            @for v in &versions {
                li { (v.id) " " span.muted { (crate::clock::iso(v.created_at)) } }
            }
        }
        @if !errors.is_empty() {
            h2 { "Problems of the last processing" }
            ul.error {
                @for e in &errors { li { (e.message) } }
            }
        }
        (update)
    };
    page(StatusCode::OK, &spec.slug, Some(&viewer), None, body)
}

/// A change request's reviews and the actions the viewer may take: review it, and merge it
/// (or why the merge button is disabled).
async fn review_html(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    c: &store::change_requests::ChangeRequestRow,
) -> crate::error::ApiResult<Markup> {
    use crate::domain::access::Role;
    use crate::values::{ChangeRequestStatus, EditMode};
    let (reviews, _) = store::reviews::list(&state.db, &c.id, None, 50).await?;
    let (requested, _) = store::reviews::list_requested(&state.db, &c.id, None, 50).await?;
    let mut ids: Vec<&str> = Vec::new();
    for r in &reviews {
        ids.push(&r.reviewer_id);
    }
    for r in &requested {
        ids.push(&r.user_id);
    }
    let people = access::people(state, &ids).await?;
    let name = |id: &str| {
        people
            .get(id)
            .map(|u| u.display_name.clone())
            .unwrap_or_else(|| id.to_string())
    };
    let open = !matches!(
        c.status,
        ChangeRequestStatus::Merged | ChangeRequestStatus::Archived
    );
    // Guests do not see the organization's people, as in the API: no reviewer list.
    let members = if open && ctx.role >= Role::Edit && ctx.org.role.is_some() {
        let filter = store::members::MemberFilter {
            ascending: true,
            ..Default::default()
        };
        let (members, _) =
            store::members::list(&state.db, &ctx.space.org_id, &filter, None, 500).await?;
        Some(members)
    } else {
        None
    };
    let why_not = if c.status == ChangeRequestStatus::Merged {
        Some("This change request is merged.")
    } else if ctx.role < Role::Edit {
        Some("You may not merge: merging needs the edit role on this space.")
    } else if ctx.space.edit_mode == EditMode::Locked {
        Some("The space is locked: nothing can be merged into it.")
    } else {
        None
    };
    let base = format!("/s/{}/~/changes/{}", ctx.space.id, c.number);
    let csrf = html! { input type="hidden" name="csrf" value=(viewer.csrf); };
    Ok(html! {
        section.reviews {
            h2 { "Reviews" }
            @if reviews.is_empty() && requested.is_empty() {
                p.muted { "No review yet." }
            }
            @if !requested.is_empty() {
                p {
                    "Waiting for: "
                    @for (i, r) in requested.iter().enumerate() {
                        @if i > 0 { ", " }
                        (name(&r.user_id))
                    }
                }
            }
            @if !reviews.is_empty() {
                ul {
                    @for r in &reviews {
                        li data-review=(r.status) {
                            (name(&r.reviewer_id)) " "
                            @if r.status == "approved" { "approved" } @else { "requested changes" }
                            " "
                            span.muted {
                                (crate::clock::iso(r.created_at))
                                @if r.revision_id != c.revision_id { " · on an earlier revision" }
                            }
                        }
                    }
                }
            }
            @if open && ctx.role >= Role::Review {
                form method="post" action={ (base) "/review" } class="inline" {
                    (csrf)
                    button type="submit" name="status" value="approved" { "Approve" }
                    " "
                    button type="submit" name="status" value="changes-requested" { "Request changes" }
                }
            }
            @if let Some(members) = &members {
                form method="post" action={ (base) "/request" } {
                    (csrf)
                    label for="reviewer" { "Ask for a review" }
                    select id="reviewer" name="user" {
                        @for m in members.iter().filter(|m| m.user_id != viewer.user) {
                            option value=(m.user_id.as_str()) { (m.display_name) }
                        }
                    }
                    " "
                    button type="submit" { "Request" }
                }
            }
        }
        section.merge {
            h2 { "Merge" }
            @if let Some(why) = why_not {
                p id="merge-why" { (why) }
                button type="button" disabled aria-describedby="merge-why" { "Merge" }
            } @else {
                form method="post" action={ (base) "/merge" } {
                    (csrf)
                    button type="submit" { "Merge into the space" }
                }
            }
        }
    })
}

/// A space's action on a deleted space: answered as missing (a deleted space shows only its
/// settings, to its admins, to restore it). `None` for a space that is not deleted.
pub(super) fn deleted(ctx: &SpaceCtx, viewer: &Viewer<'_>) -> Option<Response> {
    ctx.space.deleted_at.is_some().then(|| {
        not_found(
            Some(viewer),
            "This space does not exist, or you may not read it.",
        )
    })
}

/// Runs a change request's action (`run`), through the same domain workflows as the API, on
/// a task of its own so that it runs to its end when the browser leaves, with the access
/// cache bypassed for what it reads (as the API's writes); then back to the change request,
/// or a refusal's page (a conflict names its pages) with the way back.
async fn change_request_write<F>(viewer: &Viewer<'_>, space: &str, number: &str, run: F) -> Response
where
    F: std::future::Future<Output = crate::error::ApiResult<()>> + Send + 'static,
{
    let back = format!("/s/{space}/~/changes/{number}");
    let to = back.clone();
    let done = async move { run.await.map(|()| to) };
    run_write(viewer, &back, "Back to the change request", done).await
}

/// A review's verdict.
#[derive(serde::Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Approved,
    ChangesRequested,
}

/// The review form: its verdict (the button pressed).
#[derive(serde::Deserialize)]
pub struct ReviewForm {
    status: Verdict,
}

/// `POST /s/{spaceId}/~/changes/{number}/review`: approves it or requests changes.
pub async fn review(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path((_, number)): Path<(String, String)>,
    Posted(form): Posted<ReviewForm>,
) -> Response {
    let viewer = signed.viewer();
    if let Some(res) = deleted(&ctx, &viewer) {
        return res;
    }
    let status = match form.status {
        Verdict::Approved => "approved",
        Verdict::ChangesRequested => "changes-requested",
    };
    let (space, user, n) = (ctx.space.id.clone(), signed.user.id.clone(), number.clone());
    let run = async move {
        crate::domain::change_requests::review(&state, &ctx, &user, &n, status, None)
            .await
            .map(|_| ())
    };
    change_request_write(&viewer, &space, &number, run).await
}

/// `POST /s/{spaceId}/~/changes/{number}/merge`: merges it into the space, as the merge
/// rules allow.
pub async fn merge(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path((_, number)): Path<(String, String)>,
    Posted(_): Posted<NoFields>,
) -> Response {
    let viewer = signed.viewer();
    if let Some(res) = deleted(&ctx, &viewer) {
        return res;
    }
    let (space, user, n) = (ctx.space.id.clone(), signed.user.id.clone(), number.clone());
    let run = async move {
        crate::domain::change_requests::merge(&state, &ctx, &user, &n)
            .await
            .map(|_| ())
    };
    change_request_write(&viewer, &space, &number, run).await
}

/// A status a change request is given from its screen.
#[derive(serde::Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub enum SetStatus {
    Draft,
    Open,
    Archived,
}

/// The form editing a change request's subject and status.
#[derive(serde::Deserialize)]
pub struct EditChangeRequestForm {
    subject: Option<String>,
    status: Option<SetStatus>,
}

/// `POST /s/{spaceId}/~/changes/{number}/edit`: sets its subject and status.
pub async fn edit_change_request(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path((_, number)): Path<(String, String)>,
    Posted(form): Posted<EditChangeRequestForm>,
) -> Response {
    use crate::values::ChangeRequestStatus;
    let viewer = signed.viewer();
    if let Some(res) = deleted(&ctx, &viewer) {
        return res;
    }
    let status = form.status.map(|s| match s {
        SetStatus::Draft => ChangeRequestStatus::Draft,
        SetStatus::Open => ChangeRequestStatus::Open,
        SetStatus::Archived => ChangeRequestStatus::Archived,
    });
    let (space, n) = (ctx.space.id.clone(), number.clone());
    let run = async move {
        crate::domain::change_requests::update_meta(&state, &ctx, &n, form.subject, status)
            .await
            .map(|_| ())
    };
    change_request_write(&viewer, &space, &number, run).await
}

/// The form asking a member for a review: whom (`user`).
#[derive(serde::Deserialize)]
pub struct RequestReviewForm {
    user: String,
}

/// `POST /s/{spaceId}/~/changes/{number}/request`: asks a member for a review.
pub async fn request_review(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path((_, number)): Path<(String, String)>,
    Posted(form): Posted<RequestReviewForm>,
) -> Response {
    let viewer = signed.viewer();
    if let Some(res) = deleted(&ctx, &viewer) {
        return res;
    }
    let (space, user, n) = (ctx.space.id.clone(), signed.user.id.clone(), number.clone());
    let run = async move {
        crate::domain::change_requests::request_reviewers(
            &state,
            &ctx,
            &user,
            &n,
            &[form.user],
            None,
        )
        .await
        .map(|_| ())
    };
    change_request_write(&viewer, &space, &number, run).await
}

/// The "Update from main" form (nothing but the session's token), or its conflict's form
/// (`op=resolve`): the revisions the choices were made against (the change request's in
/// `parent`, main's in `base`) and each conflict's lines (`choice`, `{page}:{choice}`).
#[derive(serde::Deserialize)]
pub struct UpdateForm {
    pub(super) op: Option<super::editor::ConflictOp>,
    pub(super) parent: Option<String>,
    pub(super) base: Option<String>,
    #[serde(default, rename = "choice")]
    pub(super) choices: Vec<String>,
}

/// `POST .../changes/{n}/update`: updates the change request from main, on a task of its
/// own as every app write; a conflict of page texts opens the screen that resolves it line
/// by line, whose form (`op=resolve`) sends the choices back here.
pub async fn update(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path((_, number)): Path<(String, String)>,
    Posted(form): Posted<UpdateForm>,
) -> Response {
    let viewer = &signed.viewer();
    if let Some(res) = deleted(&ctx, viewer) {
        return res;
    }
    let back = format!("/s/{}/~/changes/{number}", ctx.space.id);
    let run = {
        let (state, ctx, user, number, to) = (
            state.clone(),
            ctx.clone(),
            signed.user.id.clone(),
            number.clone(),
            back.clone(),
        );
        async move {
            let resolution = match form.op {
                Some(super::editor::ConflictOp::Resolve) => {
                    Some(super::editor::update_resolved(&state, &ctx, &number, &form).await?)
                }
                None => None,
            };
            crate::domain::change_requests::update_from_main_resolving(
                &state,
                &ctx,
                &user,
                &number,
                resolution.as_ref(),
            )
            .await?;
            Ok::<_, crate::error::ApiError>(to)
        }
    };
    match tokio::spawn(crate::cache::bypassed(run)).await {
        Ok(Ok(to)) => super::shell::see_other(&to),
        Ok(Err(crate::error::ApiError::Conflict(why))) => {
            super::editor::update_conflict(&state, &ctx, viewer, &number, &why).await
        }
        Ok(Err(crate::error::ApiError::Internal(e))) => failed(e),
        Ok(Err(e)) => not_done(viewer, &e, &back, "Back to the change request"),
        Err(e) => failed(e),
    }
}

/// The discussion of the space, of a change request (`cr`) or of a page (`on`: its id and
/// address), with the forms the viewer may use.
async fn discussion(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    cr: Option<&store::change_requests::ChangeRequestRow>,
    on: Option<(&str, &str)>,
) -> crate::error::ApiResult<Markup> {
    let thread = Thread {
        ctx: ctx.clone(),
        cr: cr.cloned(),
    };
    let back = match (cr, on) {
        (_, Some((_, address))) => address.to_string(),
        (Some(c), None) => format!("/s/{}/~/changes/{}", ctx.space.id, c.number),
        (None, None) => format!("/s/{}/~/comments", ctx.space.id),
    };
    let page = on.map(|(id, _)| id);
    super::discuss::section(state, &thread, viewer, page, &back).await
}

/// Whether a reaction form adds its emoji or takes it back.
#[derive(serde::Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Reacting {
    Add,
    Remove,
}

/// A discussion's forms (which one, the path says): a comment's or reply's markdown
/// (`body`), the page a new comment is about (`page`), a reaction (`emoji`, `op`), and the
/// screen of the space to return to (`back`).
#[derive(serde::Deserialize)]
pub struct CommentForm {
    body: Option<String>,
    page: Option<String>,
    emoji: Option<String>,
    op: Option<Reacting>,
    back: Option<String>,
}

/// Where a comment action of the space is: the comment and what is done to it, after
/// `comments/` (none: a new comment).
#[derive(serde::Deserialize)]
pub struct SpaceComment {
    action: Option<String>,
}

/// Where a comment action of a change request is: its number, and the comment and what is
/// done to it, after `comments/` (none: a new comment).
#[derive(serde::Deserialize)]
pub struct ChangeRequestComment {
    number: String,
    action: Option<String>,
}

/// `POST /s/{spaceId}/~/comments[/...]`: a form of the space's discussion (or of one of
/// its pages').
pub async fn comment(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path(at): Path<SpaceComment>,
    Posted(form): Posted<CommentForm>,
) -> Response {
    discuss_action(&state, &signed, ctx, None, at.action.as_deref(), form).await
}

/// `POST /s/{spaceId}/~/changes/{number}/comments[/...]`: a form of a change request's
/// discussion.
pub async fn change_request_comment(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path(at): Path<ChangeRequestComment>,
    Posted(form): Posted<CommentForm>,
) -> Response {
    let cr = Some(at.number.as_str());
    discuss_action(&state, &signed, ctx, cr, at.action.as_deref(), form).await
}

/// A discussion form of the space or of a change request (`cr`), its act named by the path
/// after `comments/` (`action`), run on a task of its own with the access cache bypassed
/// (as every app write), then back to where the form was, at the comment.
async fn discuss_action(
    state: &AppState,
    signed: &Signed,
    ctx: SpaceCtx,
    cr: Option<&str>,
    action: Option<&str>,
    form: CommentForm,
) -> Response {
    use super::discuss::{self, Act, Sent};
    let viewer = &signed.viewer();
    if let Some(res) = deleted(&ctx, viewer) {
        return res;
    }
    let rest: Vec<&str> = action.map(|a| a.split('/').collect()).unwrap_or_default();
    let Some(act) = Act::parse(&rest) else {
        return not_found(Some(viewer), "No action of the space has this address.");
    };
    let space = ctx.space.id.clone();
    let thread = match cr {
        Some(n) => match Thread::change_request(state, ctx, n).await {
            Ok(t) => t,
            Err(_) => {
                return not_found(
                    Some(viewer),
                    "No change request of this space has this number.",
                )
            }
        },
        None => Thread::space(ctx),
    };
    // Back to a screen of this space only: `back` comes from the form.
    let prefix = format!("/s/{space}");
    let back = form
        .back
        .filter(|b| {
            (b == &prefix || b.starts_with(&format!("{prefix}/")))
                && !b.contains(['\\', '#', '\r', '\n'])
                && !b.contains("//")
        })
        .unwrap_or_else(|| discuss::actions_base(&thread));
    let sent = Sent {
        body: form.body,
        page: form.page,
        emoji: form.emoji.map(|e| (e, form.op != Some(Reacting::Remove))),
    };
    let run = {
        let (state, user, thread) = (state.clone(), signed.user.id.clone(), thread.clone());
        async move { discuss::run(&state, &thread, &user, act, sent).await }
    };
    let to = back.clone();
    let done = async move { run.await.map(|fragment| format!("{to}#{fragment}")) };
    run_write(viewer, &back, "Back", done).await
}

/// `GET /s/{spaceId}/~/pdf` and `.../~/changes/{number}/pdf`: the PDF of the space's (or
/// the change request's) content, made through the API's workflow, then sent to its
/// signed address.
async fn pdf(state: &AppState, ctx: &SpaceCtx, viewer: &Viewer<'_>, cr: Option<&str>) -> Response {
    let run = crate::domain::pdf::of_content(state, ctx, viewer.user, cr, (None, false));
    match run.await {
        Ok(url) => see_other(&url),
        Err(crate::error::ApiError::Internal(e)) => failed(e),
        Err(e) => not_done(
            viewer,
            &e,
            &format!("/s/{}", ctx.space.id),
            "Back to the space",
        ),
    }
}
