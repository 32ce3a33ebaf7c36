//! Importing content into a space from the app: a URL and its kind of source, through the
//! domain's import workflow (the API's `importContent`): fetched by the safe fetcher,
//! converted, and written as one new revision of the space; or a built-in template's
//! pages (the API's `applyTemplateToSpace`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::InSpace;
use super::session::{Posted, Signed};
use super::shell::{failed, page, Viewer};
use crate::domain::access::{Role, SpaceCtx};
use crate::domain::imports::{self, Source, Target};
use crate::error::ApiError;
use crate::state::AppState;
use crate::store;
use crate::values::ChangeRequestStatus;

/// Most open change requests offered as where an import goes.
const OPEN_SHOWN: i64 = 50;

/// What each source is, for the form.
fn label(source: &str) -> &'static str {
    match source {
        "website" => "A website (crawled from this address)",
        "docx" => "A Word document",
        "markdown" => "A markdown file",
        "html" => "An HTML page",
        "zip" => "A zip of markdown files",
        "confluence" => "A Confluence space export",
        "github-wiki" => "A GitHub wiki's repository",
        "notion" => "A Notion export",
        "google-docs" => "A Google document",
        _ => "Other",
    }
}

/// `GET /s/{spaceId}/~/import`.
pub async fn screen(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
) -> Response {
    if ctx.role < Role::Edit {
        let body = html! {
            h1 { "Import into " (ctx.space.title) }
            p { "Importing needs the edit role on this space." }
        };
        return page(StatusCode::OK, "Import", Some(viewer), nav, body);
    }
    // Into the space, or into one of its open change requests, to review it there first.
    let open = match store::change_requests::list(
        &state.db,
        &ctx.space.id,
        ChangeRequestStatus::Open.as_str(),
        None,
        None,
        OPEN_SHOWN,
    )
    .await
    {
        Ok((rows, _)) => rows,
        Err(e) => return failed(e),
    };
    // A template shows an image of the space in its slot (a logo, a cover): one of its files.
    let images: Vec<(String, String)> = match space_images(state, ctx).await {
        Ok(found) => found,
        Err(e) => return failed(e),
    };
    let action = format!("/s/{}/~/import", ctx.space.id);
    let body = html! {
        h1 { "Import into " (ctx.space.title) }
        p {
            "The content found at the address becomes pages and files of the space, or of a \
    change request to review first, in one new revision."
        }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(viewer.csrf);
            label for="import-url" { "Address" }
            input id="import-url" name="url" type="url" required placeholder="https://";
            label for="import-source" { "What it is" }
            select id="import-source" name="source" {
                @for (name, _) in Source::ALL {
                    option value=(name) { (label(name)) }
                }
            }
            label for="import-into" { "Into" }
            select id="import-into" name="into" {
                option value="" { "The space itself" }
                @for c in &open {
                    option value=(c.number) { "Change request #" (c.number) ": " (c.subject) }
                }
            }
            button type="submit" { "Import" }
        }
        h2 { "Or start from a template" }
        p { "Its pages are added after the space's own." }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(viewer.csrf);
            input type="hidden" name="op" value="template";
            label for="template" { "Template" }
            select id="template" name="template" {
                @for t in quire_content::templates::TEMPLATES {
                    option value=(t.id) { (t.title) }
                }
            }
            label for="template-image" { "Its logo or cover" }
            select id="template-image" name="image" {
                option value="" { "None" }
                @for (id, name) in &images {
                    option value=(id) { (name) }
                }
            }
            button type="submit" { "Add its pages" }
        }
    };
    page(StatusCode::OK, "Import", Some(viewer), nav, body)
}

/// The import screen's two forms: an address to import (`url`, its kind of `source`, `into`
/// the space or the change request of that number), or a template to apply
/// (`op=template`: the `template`'s id, the `image` filling its slot).
#[derive(Deserialize)]
pub struct ImportForm {
    op: Option<String>,
    url: Option<String>,
    source: Option<String>,
    into: Option<String>,
    template: Option<String>,
    image: Option<String>,
}

/// `POST /s/{spaceId}/~/import`: runs the import on a task of its own and shows what it
/// did, or why it did nothing.
pub async fn act(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Posted(form): Posted<ImportForm>,
) -> Response {
    let viewer = &signed.viewer();
    if let Some(res) = super::screens::deleted(&ctx, viewer) {
        return res;
    }
    let state = &state;
    let here = format!("/s/{}/~/import", ctx.space.id);
    if form.op.as_deref() == Some("template") {
        let template = form.template.unwrap_or_default();
        let run = {
            let (state, ctx, user) = (state.clone(), ctx.clone(), viewer.user.to_string());
            let image = form.image.filter(|f| !f.is_empty());
            async move {
                // The image chosen fills the template's slot.
                let mut slots = std::collections::BTreeMap::new();
                if let (Some(file), Some(slot)) = (
                    image,
                    quire_content::templates::template(&template).and_then(|t| t.slots.first()),
                ) {
                    slots.insert(slot.to_string(), file);
                }
                crate::domain::templates::apply(&state, &ctx, &user, &template, &slots).await
            }
        };
        let to = format!("/s/{}", ctx.space.id);
        let done = async move { run.await.map(|()| to) };
        return super::shell::run_write(viewer, &here, "Back to the import", done).await;
    }
    let url = form.url.unwrap_or_default().trim().to_string();
    let into = form.into.filter(|n| !n.is_empty());
    let run = {
        let (state, ctx, user) = (state.clone(), ctx.clone(), viewer.user.to_string());
        let into = into.clone();
        async move {
            let source = Source::parse(form.source.as_deref().unwrap_or(""))?;
            if url.is_empty() {
                return Err(ApiError::bad_request("`url` is required."));
            }
            let target = match &into {
                Some(number) => Target::ChangeRequest(number),
                None => Target::Space,
            };
            imports::import(&state, &ctx, &user, source, &url, target, None).await
        }
    };
    let id = ctx.space.id.as_str();
    match tokio::spawn(crate::cache::bypassed(run)).await {
        Ok(Ok(done)) => {
            let body = html! {
                h1 { "Imported" }
                p role="status" {
                    (done.imported) " of " (done.total)
                    " pages and files found were imported into the "
                    @match &into {
                        Some(n) => { "change request #" (n) }
                        None => { "space" }
                    }
                    "."
                }
                p {
                    @match &into {
                        Some(n) => a href={ "/s/" (id) "/~/changes/" (n) } { "Open the change request" },
                        None => a href={ "/s/" (id) } { "Open the space" },
                    }
                    " · "
                    a href={ "/s/" (id) "/~/revisions/" (done.revision) } { "See the changes" }
                }
            };
            page(StatusCode::OK, "Imported", Some(viewer), None, body)
        }
        Ok(Err(ApiError::Internal(e))) => failed(e),
        Ok(Err(e)) => super::shell::not_done(viewer, &e, &here, "Back to the import"),
        Err(e) => failed(e),
    }
}

/// The images of the space's current content, as `(file id, name)`, at most 200.
async fn space_images(
    state: &AppState,
    ctx: &SpaceCtx,
) -> crate::error::ApiResult<Vec<(String, String)>> {
    let Some(row) =
        crate::domain::content::revision_row(state, &ctx.space.id, &ctx.space.revision_id).await?
    else {
        return Ok(Vec::new());
    };
    let rev = crate::domain::content::load_in(state, &ctx.space.id, &row.root).await?;
    Ok(rev
        .files
        .iter()
        .filter(|f| f.content_type.starts_with("image/"))
        .take(200)
        .map(|f| (f.id.clone(), f.name.clone()))
        .collect())
}
