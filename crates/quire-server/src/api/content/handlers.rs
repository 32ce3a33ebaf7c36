//! Content: reading revisions (space, change request, any revision by id) and changing a
//! change request's content (authoring batches, update from main, merge, changes).

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::Extension;

use crate::http::json::Json;
use quire_content::edit::ChangeResult;
use quire_content::gitsync;
use quire_content::model::{ContentRef, File, PageKind, Revision};
use quire_content::view::{self, BodyFormat, ViewOptions};
use serde::Deserialize;
use serde_json::{json, Value};

use super::types;
use crate::blobs;
use crate::clock::iso;
use crate::domain::access::SpaceCtx;
use crate::domain::auth::Caller;
use crate::domain::change_requests::{self as crs, require_edit};
use crate::domain::content;
use crate::domain::listings::{self, Listing};
use crate::domain::published;
use crate::domain::translations;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{scoped_read, JsonBody, PathParams, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::revisions::RevisionRow;
use crate::values::RevisionType;

/// The `metadata`/`computed` switches every content read accepts (no computed content or
/// Git metadata exists in Quire, so they change nothing).
#[derive(Deserialize, Default)]
pub struct ReadQuery {
    #[allow(dead_code)]
    metadata: Option<bool>,
    #[allow(dead_code)]
    computed: Option<bool>,
}

/// Page body format.
#[derive(Deserialize, Clone, Copy, Default, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Document,
    Markdown,
}

/// Query of the page reads.
#[derive(Deserialize, Default)]
pub struct PageQuery {
    #[serde(default)]
    format: Format,
    #[allow(dead_code)]
    evaluated: Option<bool>,
    #[allow(dead_code)]
    metadata: Option<bool>,
    #[allow(dead_code)]
    computed: Option<bool>,
}

/// A revision row with its decoded content.
pub struct Loaded {
    row: Arc<RevisionRow>,
    rev: Arc<Revision>,
}

async fn load_revision(state: &AppState, space_id: &str, revision_id: &str) -> ApiResult<Loaded> {
    let row = content::revision_row(state, space_id, revision_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("Revision `{revision_id}` not found in this space."))
        })?;
    let rev = content::load_in(state, space_id, &row.root).await?;
    Ok(Loaded { row, rev })
}

/// The signed download URL of a file of `space_id`, for `reader`.
fn download_url(state: &AppState, space_id: &str, reader: &str, file: &File) -> String {
    blobs::download_url(
        &state.public_url,
        &state.keys,
        &file_link(space_id, reader, file),
        state.now(),
    )
}

fn file_link<'a>(space: &'a str, reader: &'a str, file: &'a File) -> blobs::FileLink<'a> {
    blobs::FileLink {
        space,
        file: &file.id,
        hash: &file.blob,
        content_type: &file.content_type,
        name: &file.name,
        reader,
    }
}

fn page_app_url(state: &AppState, space_id: &str) -> impl Fn(&str) -> String {
    let base = state.url(&format!("/s/{space_id}"));
    move |path: &str| format!("{base}/{path}")
}

/// The official `Revision`, serialised.
async fn revision_response(state: &AppState, at: &ReadAt) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let loaded = at.loaded(state).await?;
    let merged_from = match loaded.row.kind {
        RevisionType::Merge => merged_from(state, &loaded.row).await?,
        _ => None,
    };
    let git = git_commit(state, &loaded.row).await?;
    let listing = listing_bytes(state, at).await?;
    Ok(crate::http::json::JsonWithMember {
        head: revision_body(state, &loaded, merged_from, git, &at.reader)?,
        name: "pages",
        value: content::page_tree(&listing)?,
    }
    .into_response())
}

/// The official `Revision` as a published site's visitor reads it: the pages they may read,
/// bodies as they see them (see [`published::visitor_pages`]); the page tree is built once
/// per revision and visitor (as conditions tell visitors apart).
async fn visitor_revision_response(
    state: &AppState,
    at: &ReadAt,
    visitor: &Value,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let loaded = at.loaded(state).await?;
    let merged_from = match loaded.row.kind {
        RevisionType::Merge => merged_from(state, &loaded.row).await?,
        _ => None,
    };
    let key = [
        "visitor-pages",
        &at.row.space_id[..],
        &at.row.root,
        &visitor.to_string(),
    ];
    let tree = content::page_body(state, &key, async {
        let shown = Revision {
            pages: published::visitor_pages(&loaded.rev.pages, visitor),
            ..Revision::default()
        };
        let app = page_app_url(state, &loaded.row.space_id);
        Ok(json!({
            "pages": view::pages_view(
                &shown,
                &ViewOptions {
                    body: BodyFormat::Markdown,
                    app_url: &app,
                    git: None,
                },
            )
        }))
    })
    .await?;
    let key = [
        "visitor-files",
        &at.row.space_id[..],
        &at.row.root,
        &visitor.to_string(),
    ];
    let files = content::page_body(state, &key, async {
        let shown = published::visitor_pages(&loaded.rev.pages, visitor);
        Ok(json!(published::visitor_files(
            &shown,
            &loaded.rev.reusable_contents,
            visitor
        )))
    })
    .await?;
    let files: std::collections::BTreeSet<String> =
        serde_json::from_slice(&files).map_err(ApiError::internal)?;
    let git = git_commit(state, &loaded.row).await?;
    let mut head = revision_body(state, &loaded, merged_from, git, &at.reader)?;
    // Only the files of what this visitor sees are listed (with their download URLs).
    head.files
        .retain(|f| f["id"].as_str().is_some_and(|id| files.contains(id)));
    Ok(crate::http::json::JsonWithMember {
        head,
        name: "pages",
        value: content::page_tree(&tree)?,
    }
    .into_response())
}

/// The change request a merge revision came from, serialized. Like a change request read
/// by id, it changes only with its space's listing version, so it is kept with the
/// listings (`domain::listings`).
async fn merged_from(
    state: &AppState,
    row: &RevisionRow,
) -> ApiResult<Option<Box<serde_json::value::RawValue>>> {
    let key = ["merged-from", &row.space_id[..], &row.id[..]].join("\n");
    let build = || async {
        let Some(cr) =
            store::change_requests::merged_into(&state.db, &row.space_id, &row.id).await?
        else {
            return Ok(None);
        };
        let creator = crate::domain::access::person(state, &cr.created_by).await?;
        let space_rev = crs::current_revision(state, &cr.space_id).await?;
        Ok(Some(crate::api::views::change_request(
            state,
            &cr,
            creator.as_ref(),
            &space_rev,
        )))
    };
    let bytes = listings::answer(state, &row.space_id, Listing::ChangeRequests, key, build).await?;
    let raw: Option<Box<serde_json::value::RawValue>> =
        serde_json::from_slice(&bytes).map_err(ApiError::internal)?;
    Ok(raw)
}

/// The commit of a revision, serialized, once one is known (made by a node, which records
/// its id and moves the listing version, or pushed): kept with the listings like
/// [`merged_from`].
async fn git_commit(
    state: &AppState,
    row: &RevisionRow,
) -> ApiResult<Option<Box<serde_json::value::RawValue>>> {
    let key = ["git-commit", &row.space_id[..], &row.id[..]].join("\n");
    let build = || async {
        let identity = store::git::identity(&state.db, &row.space_id, &row.id).await?;
        Ok(identity.and_then(|i| {
            let pushed = i.oid.is_some();
            Some(types::GitCommit {
                oid: i.oid.or(i.commit_oid)?,
                message: i.message,
                created_by_quire: !pushed,
            })
        }))
    };
    let bytes = listings::answer(state, &row.space_id, Listing::ChangeRequests, key, build).await?;
    serde_json::from_slice(&bytes).map_err(ApiError::internal)
}

/// A revision's members other than its page tree, which is appended as serialised once.
fn revision_body(
    state: &AppState,
    loaded: &Loaded,
    merged_from: Option<Box<serde_json::value::RawValue>>,
    git: Option<Box<serde_json::value::RawValue>>,
    reader: &str,
) -> ApiResult<types::Revision> {
    let paths = gitsync::file_paths(&loaded.rev);
    let files: Vec<Value> = loaded
        .rev
        .files
        .iter()
        .map(|f| {
            let url = download_url(state, &loaded.row.space_id, reader, f);
            view::file_view(f, &url, paths.get(&f.id).map(String::as_str))
        })
        .collect();
    let reusable_contents = loaded
        .rev
        .reusable_contents
        .iter()
        .map(|r| types::ReusableContent::new(r, &r.markdown))
        .collect();
    // The official shape of a merge revision requires its change request.
    let kind = match (&merged_from, loaded.row.kind) {
        (None, RevisionType::Merge) => RevisionType::Edits,
        (_, kind) => kind,
    };
    Ok(types::Revision {
        object: "revision",
        id: loaded.row.id.clone(),
        parents: loaded.row.parent_ids().map_err(ApiError::internal)?,
        files,
        reusable_contents,
        variables: json!(loaded.rev.variables),
        created_at: iso(loaded.row.created_at),
        kind,
        urls: types::RevisionUrls {
            app: state.url(&format!(
                "/s/{}/~/revisions/{}",
                loaded.row.space_id, loaded.row.id
            )),
        },
        tags: loaded
            .rev
            .tags
            .iter()
            .map(types::RevisionTag::new)
            .collect(),
        merged_from,
        git,
    })
}

/// The serialised body of a page (`getPageById` and its scopes), rendered once per
/// revision, page and format; the revision is loaded only to render it.
async fn page_bytes(
    state: &AppState,
    at: &ReadAt,
    page_id: &str,
    format: Format,
    visitor: Option<&Value>,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let format_name = match format {
        Format::Document => "document",
        Format::Markdown => "markdown",
    };
    let seen_by = visitor.map(Value::to_string);
    let key: Vec<&str> = match &seen_by {
        None => vec![&at.row.space_id[..], &at.row.root, page_id, format_name],
        Some(v) => vec![
            "visitor-page",
            &at.row.space_id[..],
            &at.row.root,
            v,
            page_id,
            format_name,
        ],
    };
    let bytes = content::page_body(state, &key, async {
        let loaded = at.loaded(state).await?;
        match visitor {
            None => page_json(state, &loaded, page_id, format),
            Some(v) => visitor_page_json(state, &loaded, page_id, format, v),
        }
    })
    .await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        bytes,
    )
        .into_response())
}

fn body_format(format: Format) -> BodyFormat {
    match format {
        Format::Document => BodyFormat::Document,
        Format::Markdown => BodyFormat::Markdown,
    }
}

fn page_json(state: &AppState, loaded: &Loaded, page_id: &str, format: Format) -> ApiResult<Value> {
    let app = page_app_url(state, &loaded.row.space_id);
    let git = gitsync::page_blobs(&loaded.rev, Some(page_id));
    view::page_view(
        &loaded.rev,
        page_id,
        &ViewOptions {
            body: body_format(format),
            app_url: &app,
            git: Some(&git),
        },
    )
    .ok_or_else(|| ApiError::not_found(format!("Page `{page_id}` not found in this revision.")))
}

/// A page as `visitor` sees it: 404 when they may not read it; its body and its subpages'
/// as they see them, with no condition left. Only that page's subtree is copied.
fn visitor_page_json(
    state: &AppState,
    loaded: &Loaded,
    page_id: &str,
    format: Format,
    visitor: &Value,
) -> ApiResult<Value> {
    let missing = || ApiError::not_found(format!("Page `{page_id}` not found in this revision."));
    let page = published::visitor_page(&loaded.rev.pages, page_id, visitor).ok_or_else(missing)?;
    let path = loaded.rev.path_of(&page.id).ok_or_else(missing)?;
    let shown = published::visitor_pages(std::slice::from_ref(page), visitor);
    let shown = shown.first().ok_or_else(missing)?;
    let app = page_app_url(state, &loaded.row.space_id);
    Ok(view::page_view_at(
        shown,
        &path,
        &ViewOptions {
            body: body_format(format),
            app_url: &app,
            git: None,
        },
    ))
}

async fn page_by_path(
    state: &AppState,
    at: &ReadAt,
    path: &str,
    format: Format,
    visitor: Option<&Value>,
) -> ApiResult<axum::response::Response> {
    let wanted = path.trim_matches('/');
    let loaded = at.loaded(state).await?;
    let id = loaded
        .rev
        .page_paths()
        .into_iter()
        .filter(|(_, p)| p.trim_matches('/') == wanted)
        .map(|(id, _)| id)
        // A page its visitor may not read is not there for them.
        .find(|id| {
            visitor.is_none_or(|v| published::visitor_page(&loaded.rev.pages, id, v).is_some())
        })
        .ok_or_else(|| {
            ApiError::not_found(format!("No page at path `{path}` in this revision."))
        })?;
    page_bytes(state, at, &id, format, visitor).await
}

fn files_page(
    state: &AppState,
    loaded: &Loaded,
    page: &PageRequest,
    scope: &str,
    reader: &str,
) -> ApiResult<List<Value>> {
    let after = page.after::<String>(scope)?;
    let mut files: Vec<&File> = loaded.rev.files.iter().collect();
    files.sort_by(|a, b| a.id.cmp(&b.id));
    let count = files.len() as i64;
    let paths = gitsync::file_paths(&loaded.rev);
    let rows = files
        .into_iter()
        .filter(|f| after.as_ref().is_none_or(|a| &f.id > a))
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .map(|f| {
            let url = download_url(state, &loaded.row.space_id, reader, f);
            let path = paths.get(&f.id).map(String::as_str);
            (view::file_view(f, &url, path), f.id.clone())
        })
        .collect();
    page.finish(scope, rows, count)
}

fn file_json(state: &AppState, loaded: &Loaded, file_id: &str, reader: &str) -> ApiResult<Value> {
    let f = loaded.rev.file(file_id).ok_or_else(|| {
        ApiError::not_found(format!("File `{file_id}` not found in this revision."))
    })?;
    let paths = gitsync::file_paths(&loaded.rev);
    Ok(view::file_view(
        f,
        &download_url(state, &loaded.row.space_id, reader, f),
        paths.get(&f.id).map(String::as_str),
    ))
}

// ---- Which revision a read is about -------------------------------------------------

/// The revision a content read is about, chosen by the path: a change request's content
/// (`changeRequestId`), a revision by id (`revisionId`), or else the space's current
/// content. One handler per read serves all three scopes.
pub struct ReadAt {
    /// The revision's row; its content is loaded only when a read needs it.
    row: Arc<RevisionRow>,
    params: PathParams,
    /// The caller, for whom file download URLs are signed.
    reader: String,
}

impl ReadAt {
    /// A path parameter of the read (`pageId`, `fileId`, `pagePath`).
    fn param(&self, name: &str) -> ApiResult<&str> {
        self.params.require(name)
    }

    /// The revision with its content.
    async fn loaded(&self, state: &AppState) -> ApiResult<Loaded> {
        let rev = content::load_in(state, &self.row.space_id, &self.row.root).await?;
        Ok(Loaded {
            row: self.row.clone(),
            rev,
        })
    }
}

impl FromRequestParts<AppState> for ReadAt {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let (params, ctx, reader) = scoped_read(parts).await?;
        let revision = if let Some(cr) = params.get("changeRequestId") {
            crs::load(state, ctx, cr).await?.revision_id
        } else if let Some(rev) = params.get("revisionId") {
            rev.to_string()
        } else {
            ctx.space.revision_id.clone()
        };
        let row = content::revision_row(state, &ctx.space.id, &revision)
            .await?
            .ok_or_else(|| {
                ApiError::not_found(format!("Revision `{revision}` not found in this space."))
            })?;
        Ok(ReadAt {
            row,
            params,
            reader,
        })
    }
}

/// `getCurrentRevision`, `getRevisionOfChangeRequestById`, `getRevisionById`. Read with
/// a published-content token, its pages are those the token's visitor may read, as they
/// see them.
pub async fn get_revision(
    State(state): State<AppState>,
    at: ReadAt,
    reading: Option<Extension<published::Reading>>,
    QueryParams(_q): QueryParams<ReadQuery>,
) -> ApiResult<axum::response::Response> {
    match reading {
        Some(Extension(published::Reading(scope))) => {
            visitor_revision_response(&state, &at, &scope.visitor).await
        }
        None => revision_response(&state, &at).await,
    }
}

/// `listPages`, `listPagesInChangeRequest`, `listPagesInRevisionById`.
pub async fn list_pages(
    State(state): State<AppState>,
    at: ReadAt,
    QueryParams(_q): QueryParams<ReadQuery>,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        listing_bytes(&state, &at).await?,
    )
        .into_response())
}

/// The page listing of a revision (bodies in markdown), serialised once per revision.
async fn listing_bytes(state: &AppState, at: &ReadAt) -> ApiResult<bytes::Bytes> {
    content::listing(state, &at.row.space_id, &at.row.root, async {
        let loaded = at.loaded(state).await?;
        let app = page_app_url(state, &loaded.row.space_id);
        let git = gitsync::page_blobs(&loaded.rev, None);
        Ok(json!(view::pages_view(
            &loaded.rev,
            &ViewOptions {
                body: BodyFormat::Markdown,
                app_url: &app,
                git: Some(&git),
            }
        )))
    })
    .await
}

/// `listFiles`, `listFilesInChangeRequestById`, `listFilesInRevisionById`.
pub async fn list_files(
    State(state): State<AppState>,
    at: ReadAt,
    QueryParams(_q): QueryParams<ReadQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<Value>>> {
    let scope = format!("files:{}", at.row.id);
    let loaded = at.loaded(&state).await?;
    Ok(Json(files_page(
        &state, &loaded, &page, &scope, &at.reader,
    )?))
}

/// `getFileById`, `getFileInChangeRequestById`, `getFileInRevisionById`.
pub async fn get_file(
    State(state): State<AppState>,
    at: ReadAt,
    QueryParams(_q): QueryParams<ReadQuery>,
) -> ApiResult<Json<Value>> {
    Ok(Json(file_json(
        &state,
        &at.loaded(&state).await?,
        at.param("fileId")?,
        &at.reader,
    )?))
}

/// `getPageById`, `getPageInChangeRequestById`, `getPageInRevisionById`. Read with a
/// published-content token, the page as the token's visitor sees it, and 404 for a page
/// they may not read.
pub async fn get_page(
    State(state): State<AppState>,
    at: ReadAt,
    reading: Option<Extension<published::Reading>>,
    QueryParams(q): QueryParams<PageQuery>,
) -> ApiResult<axum::response::Response> {
    let visitor = reading.as_ref().map(|Extension(r)| &r.0.visitor);
    page_bytes(&state, &at, at.param("pageId")?, q.format, visitor).await
}

/// `listRevisionPageMetaLinks`: a page's meta links. Quire has no canonical address of a
/// page; its alternates are the same page (same id) in the spaces translations link this
/// one with, those the caller may read ([`translations::page_alternates`]). 404 for a page
/// the revision lacks. Read with a published-content token: 404 for a page its visitor may
/// not read, and no alternates (the token reads its own space alone).
pub async fn get_page_meta_links(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    at: ReadAt,
    reading: Option<Extension<published::Reading>>,
) -> ApiResult<Json<types::PageMetaLinks>> {
    let page_id = at.param("pageId")?;
    let loaded = at.loaded(&state).await?;
    let missing = || ApiError::not_found(format!("Page `{page_id}` not found in this revision."));
    let alternates = match &reading {
        Some(Extension(published::Reading(scope))) => {
            published::visitor_page(&loaded.rev.pages, page_id, &scope.visitor)
                .ok_or_else(missing)?;
            Vec::new()
        }
        None => {
            loaded.rev.page(page_id).ok_or_else(missing)?;
            translations::page_alternates(&state, &ctx, page_id).await?
        }
    };
    Ok(Json(types::PageMetaLinks {
        alternates: alternates
            .into_iter()
            .map(|space| ContentRef::Page {
                page: page_id.to_string(),
                space: Some(space),
            })
            .collect(),
    }))
}

/// `getPageDocumentInRevisionById`: the official JSON document of a page; 404 for pages
/// without one (groups and links). Read with a published-content token, the document as
/// the token's visitor sees it, and 404 for a page they may not read.
pub async fn get_page_document(
    State(state): State<AppState>,
    at: ReadAt,
    reading: Option<Extension<published::Reading>>,
    QueryParams(_q): QueryParams<ReadQuery>,
) -> ApiResult<Json<Value>> {
    let page_id = at.param("pageId")?;
    if let Some(Extension(published::Reading(scope))) = reading {
        let loaded = at.loaded(&state).await?;
        let missing =
            || ApiError::not_found(format!("Page `{page_id}` not found in this revision."));
        let page = published::visitor_page(&loaded.rev.pages, page_id, &scope.visitor)
            .ok_or_else(missing)?;
        let PageKind::Document(doc) = &page.kind else {
            return Err(ApiError::not_found(format!(
                "Page `{page_id}` has no document."
            )));
        };
        let mut seen = published::visitor_document(&doc.markdown, &scope.visitor);
        seen.assign_keys(&page.id);
        return Ok(Json(
            serde_json::to_value(seen).map_err(ApiError::internal)?,
        ));
    }
    let mut page = page_json(&state, &at.loaded(&state).await?, page_id, Format::Document)?;
    page.get_mut("document")
        .map(Value::take)
        .filter(Value::is_object)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("Page `{page_id}` has no document.")))
}

/// `getPageByPath`, `getPageInChangeRequestByPath`, `getPageInRevisionByPath`. Read with a
/// published-content token, only the pages the token's visitor may read have a path.
pub async fn get_page_by_path(
    State(state): State<AppState>,
    at: ReadAt,
    reading: Option<Extension<published::Reading>>,
    QueryParams(q): QueryParams<PageQuery>,
) -> ApiResult<axum::response::Response> {
    let visitor = reading.as_ref().map(|Extension(r)| &r.0.visitor);
    page_by_path(&state, &at, at.param("pagePath")?, q.format, visitor).await
}

// ---- Reusable contents and documents ------------------------------------------------------

/// The `evaluated` switch of the document reads (a document has nothing left to evaluate
/// once stored: expressions are kept as written).
#[derive(Deserialize, Default)]
pub struct DocumentReadQuery {
    #[allow(dead_code)]
    evaluated: Option<bool>,
}

/// Query of `getDocumentById`: Quire keeps one document schema, so both values read it.
#[derive(Deserialize, Default)]
pub struct DocumentQuery {
    #[allow(dead_code)]
    schema: Option<DocumentSchema>,
}

/// The official `documentSchema` values.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocumentSchema {
    Current,
    Next,
}

/// The reusable content `reusableContentId` of the read's revision, and its body as the
/// reader sees it (a published-content token's visitor sees only their blocks).
fn reusable_of<'a>(
    loaded: &'a Loaded,
    at: &ReadAt,
    reading: Option<&published::Reading>,
) -> ApiResult<(
    &'a quire_content::model::ReusableContent,
    std::borrow::Cow<'a, str>,
)> {
    let id = at.param("reusableContentId")?;
    let r = loaded
        .rev
        .reusable_contents
        .iter()
        .find(|r| r.id == id)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Reusable content `{id}` not found in this revision."
            ))
        })?;
    let markdown = match reading {
        Some(published::Reading(scope)) => published::visitor_markdown(&r.markdown, &scope.visitor),
        None => std::borrow::Cow::Borrowed(r.markdown.as_str()),
    };
    Ok((r, markdown))
}

/// The official JSON document of `markdown`, its blocks keyed from `seed`.
/// Off the async workers: a page's body may be large.
async fn document_json(markdown: String, seed: String) -> ApiResult<Json<Value>> {
    tokio::task::spawn_blocking(move || {
        let mut doc = quire_content::markdown::markdown_to_document(&markdown);
        doc.assign_keys(&seed);
        Ok(Json(serde_json::to_value(doc).map_err(ApiError::internal)?))
    })
    .await
    .map_err(ApiError::internal)?
}

/// `getReusableContentById`, `getReusableContentInChangeRequestById`,
/// `getReusableContentInRevisionById`.
pub async fn get_reusable_content(
    State(state): State<AppState>,
    at: ReadAt,
    reading: Option<Extension<published::Reading>>,
    QueryParams(_q): QueryParams<ReadQuery>,
) -> ApiResult<Json<types::ReusableContent>> {
    let loaded = at.loaded(&state).await?;
    let (r, markdown) = reusable_of(&loaded, &at, reading.as_ref().map(|e| &e.0))?;
    Ok(Json(types::ReusableContent::new(r, &markdown)))
}

/// `getReusableContentDocumentInRevisionById`: the body of a reusable content as a JSON
/// document.
pub async fn get_reusable_content_document(
    State(state): State<AppState>,
    at: ReadAt,
    reading: Option<Extension<published::Reading>>,
    QueryParams(_q): QueryParams<DocumentReadQuery>,
) -> ApiResult<Json<Value>> {
    let loaded = at.loaded(&state).await?;
    let (r, markdown) = reusable_of(&loaded, &at, reading.as_ref().map(|e| &e.0))?;
    document_json(markdown.into_owned(), r.id.clone()).await
}

/// `getDocumentById`: the body a page's `documentId` or a reusable content's `document`
/// names, in any revision of the space (bodies are immutable: an id always names the same
/// document). Read with a published-content token, only the bodies of the token's revision
/// that its visitor sees, as they see them.
pub async fn get_document(
    State(state): State<AppState>,
    at: ReadAt,
    reading: Option<Extension<published::Reading>>,
    QueryParams(_q): QueryParams<DocumentQuery>,
) -> ApiResult<Json<Value>> {
    let id = at.param("documentId")?.to_string();
    let missing = || ApiError::not_found(format!("Document `{id}` not found in this space."));
    let Some(Extension(published::Reading(scope))) = reading else {
        let markdown = content::document_markdown(&state, &at.row.space_id, &id)
            .await?
            .ok_or_else(missing)?;
        return document_json(markdown, id).await;
    };
    // The token's revision: the one whose pages gave its visitor these ids.
    let loaded = load_revision(&state, &at.row.space_id, &scope.revision).await?;
    let wanted = id.clone();
    // Every body the visitor sees is hashed: off the async workers.
    let found = tokio::task::spawn_blocking(move || {
        let named =
            |markdown: &str| quire_content::store::text_body_hash(markdown).to_hex() == wanted;
        // A stack rather than recursion: page trees are as deep as their input allows.
        let shown = published::visitor_pages(&loaded.rev.pages, &scope.visitor);
        let mut pending: Vec<&quire_content::model::Page> = shown.iter().collect();
        while let Some(page) = pending.pop() {
            if let PageKind::Document(doc) = &page.kind {
                if named(&doc.markdown) {
                    return Some(doc.markdown.clone());
                }
            }
            pending.extend(page.pages.iter());
        }
        loaded.rev.reusable_contents.iter().find_map(|r| {
            let markdown = published::visitor_markdown(&r.markdown, &scope.visitor);
            named(&markdown).then(|| markdown.into_owned())
        })
    })
    .await
    .map_err(ApiError::internal)?;
    match found {
        Some(markdown) => document_json(markdown, id).await,
        None => Err(missing()),
    }
}

// ---- Writes ------------------------------------------------------------------------------

/// Body of `updateChangeRequestContent`.
#[derive(Deserialize)]
pub struct ContentBatch {
    changes: Vec<Value>,
}

/// Query of `updateChangeRequestContent`.
#[derive(Deserialize)]
pub struct BatchQuery {
    #[serde(default = "default_compat")]
    compat: bool,
}

fn default_compat() -> bool {
    true
}

/// `updateChangeRequestContent`: applies up to 50 changes atomically as one new revision of
/// the change request. An invalid change rejects the whole batch, naming it.
pub async fn update_cr_content(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
    QueryParams(query): QueryParams<BatchQuery>,
    JsonBody(body): JsonBody<ContentBatch>,
) -> ApiResult<Json<Value>> {
    ctx.require_live()?;
    require_edit(&ctx)?;
    if body.changes.is_empty() || body.changes.len() > 50 {
        return Err(ApiError::bad_request(
            "`changes` must hold 1 to 50 changes.",
        ));
    }
    let mut changes = Vec::with_capacity(body.changes.len());
    let mut document_bytes = 0;
    for (i, raw) in body.changes.into_iter().enumerate() {
        document_bytes += check_document_size(i, &raw)?;
        if document_bytes > MAX_BATCH_DOCUMENT_BYTES {
            return Err(ApiError::bad_request(format!(
                "`changes`: the page documents of one batch must total at most {} MiB.",
                MAX_BATCH_DOCUMENT_BYTES / (1024 * 1024)
            )));
        }
        let raw = fill_file_names(raw);
        let change: quire_content::edit::Change =
            serde_path_to_error::deserialize(raw).map_err(|e| {
                let path = e.path().to_string();
                let at = if path == "." {
                    String::new()
                } else {
                    format!(".{path}")
                };
                ApiError::bad_request(format!("`changes[{i}]{at}`: {}", e.into_inner()))
            })?;
        changes.push(change);
    }
    // Large batches take turns: what their documents take in memory once parsed is bounded.
    let _documents = if document_bytes > crate::state::SMALL_BODY_BYTES {
        let kib = u32::try_from(document_bytes.div_ceil(1024)).unwrap_or(u32::MAX);
        Some(
            state
                .document_budget
                .acquire_many(kib.min(crate::state::DOCUMENT_BUDGET_KIB as u32))
                .await
                .map_err(ApiError::internal)?,
        )
    } else {
        None
    };
    let inserted =
        crate::domain::uploads::resolve_files(&state, &ctx.space.id, &mut changes).await?;
    let applied_results =
        crs::apply_batch(&state, &ctx, &caller.user.id, &cr, changes, None).await?;
    let updated = crs::load(&state, &ctx, &cr).await?;
    let cr_json = crate::api::views::change_request_json(&state, &ctx, &updated).await?;
    if query.compat {
        return Ok(Json(json!(cr_json)));
    }
    let location = |page: &str| {
        state.url(&format!(
            "/v1/spaces/{}/change-requests/{}/content/page/{page}",
            ctx.space.id, updated.id
        ))
    };
    let page_ref = |page: &str| types::PageRef {
        object: "page",
        id: page.to_string(),
        urls: types::PageUrls {
            location: location(page),
        },
    };
    let changes = applied_results
        .iter()
        .map(|r| match r {
            ChangeResult::CreatedPage { reference, page } => types::ChangeResult::CreatedPage {
                page: page_ref(page),
                reference: reference.clone(),
            },
            ChangeResult::UpdatedPage { page } => types::ChangeResult::UpdatedPage {
                page: page_ref(page),
            },
            ChangeResult::DeletedPage { page } => {
                types::ChangeResult::DeletedPage { page: page.clone() }
            }
        })
        .collect();
    // Files are named in the repository's layout as the change request's content has them.
    let paths = match content::revision_row(&state, &ctx.space.id, &updated.revision_id).await? {
        Some(row) if !inserted.is_empty() => {
            gitsync::file_paths(&*content::load_in(&state, &ctx.space.id, &row.root).await?)
        }
        _ => Default::default(),
    };
    let inserted_files = inserted
        .iter()
        .map(|f| {
            view::file_view(
                f,
                &download_url(&state, &ctx.space.id, &caller.user.id, f),
                paths.get(&f.id).map(String::as_str),
            )
        })
        .collect();
    Ok(Json(json!(types::BatchResult {
        change_request: cr_json,
        changes,
        inserted_files,
    })))
}

/// Largest page document a change may carry (as JSON, or as markdown text): a page is read
/// whole by every reader, and one parse must stay cheap.
const MAX_DOCUMENT_BYTES: usize = 2 * 1024 * 1024;

/// Largest total of page documents in one batch: a parsed document takes several times its
/// text in memory, so this bounds what one request can make the server hold.
const MAX_BATCH_DOCUMENT_BYTES: usize = 4 * 1024 * 1024;

/// Refuses a change whose page document is larger than [`MAX_DOCUMENT_BYTES`], before any
/// work is done on it; returns the document's size.
fn check_document_size(index: usize, raw: &Value) -> ApiResult<usize> {
    /// Counts bytes instead of keeping them.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let Some(document) = raw.get("document") else {
        return Ok(0);
    };
    let mut count = Count(0);
    serde_json::to_writer(&mut count, document).map_err(ApiError::internal)?;
    if count.0 > MAX_DOCUMENT_BYTES {
        return Err(ApiError::bad_request(format!(
            "`changes[{index}].document` must be at most {} MiB.",
            MAX_DOCUMENT_BYTES / (1024 * 1024)
        )));
    }
    Ok(count.0)
}

/// The official `insert_files` items carry no name: derive one from the URL.
fn fill_file_names(mut raw: Value) -> Value {
    if raw.get("operation").and_then(Value::as_str) == Some("insert_files") {
        if let Some(files) = raw.get_mut("files").and_then(Value::as_array_mut) {
            for (i, f) in files.iter_mut().enumerate() {
                if f.get("name").is_none() {
                    let from_url = f
                        .get("url")
                        .and_then(Value::as_str)
                        .and_then(|u| url::Url::parse(u).ok())
                        .and_then(|u| {
                            u.path_segments()
                                .and_then(|mut s| s.next_back().map(str::to_string))
                        })
                        .filter(|n| !n.is_empty());
                    f["name"] = json!(from_url.unwrap_or_else(|| format!("file-{}", i + 1)));
                }
            }
        }
    }
    raw
}

/// `updateChangeRequest`: pulls the space's content into the change request (three-way
/// merge). 409 naming the pages when both sides changed the same thing; nothing changes then.
pub async fn update_cr(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
) -> ApiResult<Json<types::Landed>> {
    let revision = crs::update_from_main(&state, &ctx, &caller.user.id, &cr).await?;
    Ok(Json(types::Landed {
        revision,
        result: "update",
    }))
}

/// `mergeChangeRequest`: merges the change request into the space (three-way merge against
/// the space's current content). Refused on a locked space; 409 naming the pages in
/// conflict, with nothing changed.
pub async fn merge_cr(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
) -> ApiResult<Json<types::Landed>> {
    let revision = crs::merge(&state, &ctx, &caller.user.id, &cr).await?;
    Ok(Json(types::Landed {
        revision,
        result: "merge",
    }))
}

/// Query of `getChangeRequestChanges`.
#[derive(Deserialize)]
pub struct ChangesQuery {
    #[serde(default = "ten")]
    limit: usize,
}

fn ten() -> usize {
    10
}

/// Query of `getRevisionSemanticChanges` (`metadata` and `computed` change nothing, as for
/// every content read).
#[derive(Deserialize)]
pub struct RevisionChangesQuery {
    #[serde(default = "ten")]
    limit: usize,
    #[allow(dead_code)]
    metadata: Option<bool>,
    #[allow(dead_code)]
    computed: Option<bool>,
}

/// `getRevisionSemanticChanges`: the semantic diff between a revision and its first parent
/// (the space's content before it; nothing before a space's first revision), with the change
/// request a merge revision came from.
pub async fn get_revision_changes(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, revision)): Path<(String, String)>,
    QueryParams(q): QueryParams<RevisionChangesQuery>,
) -> ApiResult<Json<types::RevisionChanges<quire_content::diff::SemanticChange>>> {
    let mine = load_revision(&state, &ctx.space.id, &revision).await?;
    let parent = mine.row.parent_ids().map_err(ApiError::internal)?;
    let before = match parent.first() {
        Some(id) => load_revision(&state, &ctx.space.id, id).await?.rev,
        None => Arc::new(Revision::default()),
    };
    let merged_from = match mine.row.kind {
        RevisionType::Merge => merged_from(&state, &mine.row).await?,
        _ => None,
    };
    let changes = semantic_diff(&state, &ctx.space.id, &caller.user.id, before, mine.rev).await?;
    let total = changes.len();
    Ok(Json(types::RevisionChanges {
        merged_from,
        changes: changes.into_iter().take(q.limit).collect(),
        more: (total > q.limit).then(|| total - q.limit),
    }))
}

/// The semantic diff from `before` to `after`, files with download URLs for `reader`,
/// computed off the async threads.
async fn semantic_diff(
    state: &AppState,
    space_id: &str,
    reader: &str,
    before: Arc<Revision>,
    after: Arc<Revision>,
) -> ApiResult<Vec<quire_content::diff::SemanticChange>> {
    let keys = state.keys.clone();
    let public = state.public_url.clone();
    let now = state.now();
    let (space, reader) = (space_id.to_string(), reader.to_string());
    tokio::task::spawn_blocking(move || {
        quire_content::diff::diff(&before, &after, &|f: &File| {
            blobs::download_url(&public, &keys, &file_link(&space, &reader, f), now)
        })
    })
    .await
    .map_err(ApiError::internal)
}

/// `getChangeRequestChanges`: the semantic diff between the change request's merge base and
/// its content.
pub async fn get_cr_changes(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
    QueryParams(q): QueryParams<ChangesQuery>,
) -> ApiResult<Json<types::Changes<quire_content::diff::SemanticChange>>> {
    let c = crs::load(&state, &ctx, &cr).await?;
    let base = load_revision(&state, &ctx.space.id, &c.revision_base).await?;
    let mine = load_revision(&state, &ctx.space.id, &c.revision_id).await?;
    let changes = semantic_diff(&state, &ctx.space.id, &caller.user.id, base.rev, mine.rev).await?;
    let total = changes.len();
    let shown: Vec<_> = changes.into_iter().take(q.limit).collect();
    Ok(Json(types::Changes {
        changes: shown,
        more: (total > q.limit).then(|| total - q.limit),
    }))
}
