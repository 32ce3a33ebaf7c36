//! Writing in the app: a page's editor, always inside a change request. "Edit" on a page of
//! the space opens a new change request; "Edit" in a change request edits there. The editor
//! is a form (the page's title and its markdown, the dialect Quire stores losslessly) that
//! works without script; `editor.js` adds the live preview, keeps unsaved text in the
//! browser until the server confirms a save, and the source editor.
//!
//! A save is one authoring batch through `domain::change_requests::apply_batch`, the API's
//! own, made against the revision the editor was opened on: what others saved meanwhile is
//! merged three-way, and the same lines changed on both sides are refused naming the page,
//! with nothing changed (the text stays in the browser).

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, PreEscaped};
use quire_content::merge;
use quire_content::model::{Page, PageKind, Revision};
use serde::Deserialize;

use super::routes::InSpace;
use super::screens::deleted;
use super::session::{Posted, Signed};
use super::shell::{failed, not_done, not_found, page, run_write, with_headers, Viewer};
use crate::domain::access::{Role, SpaceCtx};
use crate::domain::change_requests as crs;
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::values::{ChangeRequestStatus, EditMode};

/// Why the viewer may not edit the space, if they may not.
pub fn why_not(ctx: &SpaceCtx) -> Option<&'static str> {
    if ctx.role < Role::Edit {
        Some("Editing needs the edit role on this space.")
    } else if ctx.space.edit_mode == EditMode::Locked {
        Some("The space is locked (its edit mode is `locked`): nothing can be edited.")
    } else {
        None
    }
}

/// The "Edit" button of a page of the space: it opens a change request for the edit.
pub fn edit_button(ctx: &SpaceCtx, viewer: &Viewer<'_>, page_id: &str) -> Markup {
    match why_not(ctx) {
        Some(why) if ctx.role >= Role::Edit => html! {
            p class="muted" id="edit-why" { (why) }
        },
        Some(_) => html! {},
        None => html! {
            form method="post" action={ "/s/" (ctx.space.id) "/~/edit" } class="inline" {
                input type="hidden" name="csrf" value=(viewer.csrf);
                input type="hidden" name="page" value=(page_id);
                button type="submit" { "Edit" }
            }
        },
    }
}

/// The page tree of a change request, for those who may edit it: each page's editor, and
/// forms to move it (up, down, into the page above, out of its parent) or delete it, and a
/// form to add a page. Each is one change of the change request. Forms, so that the
/// keyboard does all of it, with or without script; the app's script adds dragging a page
/// before, after or into another (`op=drop`).
pub fn tree_section(
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    number: i64,
    rev: &Revision,
    open: bool,
) -> Markup {
    if !open || why_not(ctx).is_some() {
        return html! {};
    }
    let space = ctx.space.id.as_str();
    let action = format!("/s/{space}/~/changes/{number}/tree");
    let csrf = viewer.csrf;
    // The pages, depth first, for the list of where a new page goes.
    let mut documents: Vec<(&Page, usize)> = Vec::new();
    let mut stack: Vec<(&Page, usize)> = rev.pages.iter().rev().map(|p| (p, 0)).collect();
    while let Some((p, depth)) = stack.pop() {
        if matches!(p.kind, PageKind::Document(_)) {
            documents.push((p, depth));
        }
        stack.extend(p.pages.iter().rev().map(|c| (c, depth + 1)));
    }
    /// Depth first without recursion: a page met, or left once its subpages are made.
    enum Step<'a> {
        Enter(&'a Page),
        Leave(&'a Page),
    }
    // Each page's item is made once its subpages' are: they wait on `made`, in order.
    let mut made: Vec<Markup> = Vec::new();
    let mut stack: Vec<Step<'_>> = rev.pages.iter().rev().map(Step::Enter).collect();
    while let Some(step) = stack.pop() {
        let p = match step {
            Step::Enter(p) => {
                stack.push(Step::Leave(p));
                stack.extend(p.pages.iter().rev().map(Step::Enter));
                continue;
            }
            Step::Leave(p) => p,
        };
        let subpages = made.split_off(made.len() - p.pages.len());
        let item = tree_item(p, (space, number), (&action, csrf), &subpages);
        made.push(item);
    }
    html! {
        section class="tree" aria-labelledby="tree-h" {
            h2 id="tree-h" { "Pages" }
            ul { @for item in &made { (item) } }
            form method="post" action=(action) class="add-page" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value="add";
                label for="new-title" { "New page" }
                input id="new-title" name="subject" type="text" required maxlength="512";
                label for="new-kind" { "Kind" }
                select id="new-kind" name="kind" {
                    option value="document" { "A page" }
                    option value="group" { "A group (at the top)" }
                    option value="link" { "A link" }
                }
                label for="new-href" { "Address " span class="muted" { "(of a link)" } }
                input id="new-href" name="href" type="url" maxlength="2048";
                label for="new-parent" { "Inside" }
                select id="new-parent" name="parent" {
                    option value="" { "At the top" }
                    @for (p, depth) in &documents {
                        option value=(p.id) { ("\u{2003}".repeat(*depth)) (p.title) }
                    }
                }
                button type="submit" { "Add" }
            }
        }
    }
}

/// One page of the page tree, with its forms and its subpages' items.
fn tree_item(
    p: &Page,
    (space, number): (&str, i64),
    (action, csrf): (&str, &str),
    subpages: &[Markup],
) -> Markup {
    let title = p.title.as_str();
    let counted = if p.pages.is_empty() {
        String::new()
    } else {
        format!(" and its {} subpage(s)", count(&p.pages))
    };
    html! {
        li data-page=(p.id) {
            @if matches!(p.kind, PageKind::Document(_)) {
                a href={ "/s/" (space) "/~/changes/" (number) "/edit/" (p.id) } { (title) }
            } @else {
                span { (title) }
            }
            " "
            form method="post" action=(action) class="inline moves" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="page" value=(p.id);
                button type="submit" name="op" value="up" aria-label={ "Move " (title) " up" } { "↑" }
                button type="submit" name="op" value="down" aria-label={ "Move " (title) " down" } { "↓" }
                button type="submit" name="op" value="in" aria-label={ "Move " (title) " into the page above" } { "→" }
                button type="submit" name="op" value="out" aria-label={ "Move " (title) " out of its parent" } { "←" }
            }
            " "
            details class="inline" {
                summary { "Delete" span class="skip" { " " (title) } }
                form method="post" action=(action) {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="page" value=(p.id);
                    input type="hidden" name="op" value="delete";
                    label { input type="checkbox" name="confirm" value="yes" required; " Delete " (title) (counted) }
                    " "
                    button type="submit" { "Delete" }
                }
            }
            @if !subpages.is_empty() {
                ul { @for item in subpages { (item) } }
            }
        }
    }
}

/// How many pages a list holds, its pages' pages included.
fn count(pages: &[Page]) -> usize {
    let mut n = 0;
    let mut stack: Vec<&Page> = pages.iter().collect();
    while let Some(p) = stack.pop() {
        n += 1;
        stack.extend(p.pages.iter());
    }
    n
}

/// Where a page is: its parent's id (`None`: the top), its siblings and its index there.
fn place<'a>(rev: &'a Revision, page_id: &str) -> Option<(Option<&'a str>, &'a [Page], usize)> {
    let mut stack: Vec<(Option<&Page>, &[Page])> = vec![(None, &rev.pages)];
    while let Some((parent, list)) = stack.pop() {
        if let Some(i) = list.iter().position(|p| p.id == page_id) {
            return Some((parent.map(|p| p.id.as_str()), list, i));
        }
        stack.extend(list.iter().map(|p| (Some(p), p.pages.as_slice())));
    }
    None
}

/// What a form of the page tree does.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TreeOp {
    /// Add a page (`subject`, `kind`, `href`, inside `parent`).
    Add,
    /// Delete `page` (with `confirm=yes`).
    Delete,
    /// Move `page` one place up or down among its siblings.
    Up,
    Down,
    /// Move `page` into the page above it, or out of its parent.
    In,
    Out,
    /// `page` dragged `place` the page `item` (the app's script).
    Drop,
}

/// Where a page dragged onto another goes.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    Before,
    After,
    Into,
}

/// A form of the page tree: the add form, a page's move and delete buttons, and the drop
/// the app's script sends (`op=drop`, `page`, `item`, `place`).
#[derive(Deserialize)]
pub struct TreeForm {
    op: TreeOp,
    /// The page moved or deleted.
    page: Option<String>,
    /// A new page's title, kind (`document`, `group`, `link`), a link's address, and the
    /// page it goes in.
    subject: Option<String>,
    kind: Option<String>,
    href: Option<String>,
    parent: Option<String>,
    /// `yes`: a deletion is confirmed.
    confirm: Option<String>,
    /// The page another is dropped on, and where beside it.
    item: Option<String>,
    place: Option<Place>,
}

/// The change a tree form asks for, as the API's batch writes it.
fn tree_change(rev: &Revision, form: TreeForm) -> ApiResult<serde_json::Value> {
    use serde_json::json;
    let page = form.page.unwrap_or_default();
    let op = form.op;
    let not_here = || ApiError::not_found("No page of this change request has this id.");
    Ok(match op {
        TreeOp::Add => {
            let title = form.subject.unwrap_or_default().trim().to_string();
            if title.is_empty() {
                return Err(ApiError::bad_request("The new page needs a title."));
            }
            let into = form.parent.filter(|p| !p.is_empty());
            let kind = form
                .kind
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| "document".into());
            let mut change =
                json!({ "operation": "insert_page", "title": title, "into": into, "document": {} });
            if kind != "document" {
                change["type"] = json!(kind);
                change["href"] = json!(form.href.unwrap_or_default());
            }
            change
        }
        TreeOp::Delete => {
            if form.confirm.as_deref() != Some("yes") {
                return Err(ApiError::bad_request(
                    "Tick the box to confirm the deletion.",
                ));
            }
            json!({ "operation": "delete_page", "page": page })
        }
        TreeOp::Up | TreeOp::Down | TreeOp::In | TreeOp::Out => {
            let (parent, siblings, i) = place(rev, &page).ok_or_else(not_here)?;
            match op {
                TreeOp::Up if i > 0 => {
                    json!({ "operation": "update_page", "page": page, "at": i - 1 })
                }
                TreeOp::Down if i + 1 < siblings.len() => {
                    json!({ "operation": "update_page", "page": page, "at": i + 1 })
                }
                TreeOp::In if i > 0 => {
                    json!({ "operation": "update_page", "page": page, "into": siblings[i - 1].id })
                }
                TreeOp::Out => {
                    let parent = parent
                        .ok_or_else(|| ApiError::bad_request("This page is already at the top."))?;
                    let (grand, _, at) = place(rev, parent).ok_or_else(not_here)?;
                    json!({ "operation": "update_page", "page": page, "into": grand, "at": at + 1 })
                }
                _ => return Err(ApiError::bad_request("The page cannot move that way.")),
            }
        }
        TreeOp::Drop => {
            // A page dragged onto another: just before it, just after it, or into it (last).
            let target = form.item.unwrap_or_default();
            if target == page {
                return Err(ApiError::bad_request("A page cannot be dropped on itself."));
            }
            let (from_parent, _, from) = place(rev, &page).ok_or_else(not_here)?;
            let (parent, _, i) = place(rev, &target).ok_or_else(not_here)?;
            let at = match form.place {
                Some(Place::Into) => {
                    return Ok(json!({ "operation": "update_page", "page": page, "into": target }))
                }
                Some(Place::Before) => i,
                Some(Place::After) => i + 1,
                None => {
                    return Err(ApiError::bad_request(
                        "`place` must be `before`, `after` or `into`.",
                    ))
                }
            };
            // The index is the page's once it has left its place: one less beside a page
            // it was above.
            let at = if from_parent == parent && from < at {
                at - 1
            } else {
                at
            };
            json!({ "operation": "update_page", "page": page, "into": parent, "at": at })
        }
    })
}

/// `POST /s/{space}/~/changes/{n}/tree`: adds, moves or deletes a page (`op`), as one
/// change of the change request; then back to its page tree (to the editor of a page added).
pub async fn tree_action(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path((_, number)): Path<(String, String)>,
    Posted(form): Posted<TreeForm>,
) -> Response {
    let viewer = signed.viewer();
    if let Some(res) = deleted(&ctx, &viewer) {
        return res;
    }
    let back = format!("/s/{}/~/changes/{number}/tree", ctx.space.id);
    let run = {
        let (state, user) = (state.clone(), signed.user.id.clone());
        async move {
            if let Some(why) = why_not(&ctx) {
                return Err(ApiError::forbidden(why));
            }
            let c = crs::load(&state, &ctx, &number).await?;
            let rev = content_of(&state, &ctx, &c.revision_id).await?;
            // A page added opens in the editor; a group or a link has nothing to edit.
            let document = form
                .kind
                .as_deref()
                .is_none_or(|k| k.is_empty() || k == "document");
            let change: quire_content::edit::Change =
                serde_json::from_value(tree_change(&rev, form)?).map_err(|e| {
                    ApiError::bad_request(format!("The change cannot be made: {e}"))
                })?;
            let seen = Some(c.revision_id.as_str());
            let results =
                crs::apply_batch(&state, &ctx, user.as_str(), &number, vec![change], seen).await?;
            let added = results.iter().find_map(|r| match r {
                quire_content::edit::ChangeResult::CreatedPage { page, .. } => Some(page.clone()),
                _ => None,
            });
            Ok(match added.filter(|_| document) {
                Some(id) => format!("/s/{}/~/changes/{}/edit/{id}", ctx.space.id, c.number),
                None => format!("/s/{}/~/changes/{}/tree#tree-h", ctx.space.id, c.number),
            })
        }
    };
    run_write(&viewer, &back, "Back to the change request", run).await
}

/// The content of a change request's current revision.
async fn content_of(
    state: &AppState,
    ctx: &SpaceCtx,
    revision: &str,
) -> ApiResult<std::sync::Arc<Revision>> {
    let row = content::revision_row(state, &ctx.space.id, revision)
        .await?
        .ok_or_else(|| ApiError::not_found("This revision is missing."))?;
    content::load_in(state, &ctx.space.id, &row.root).await
}

/// `GET /s/{space}/~/changes/{n}/edit/{page}`: the editor.
pub async fn screen(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
    number: &str,
    page_id: &str,
) -> Response {
    let c = match crs::load(state, ctx, number).await {
        Ok(c) => c,
        Err(_) => {
            return not_found(
                Some(viewer),
                "No change request of this space has this number.",
            )
        }
    };
    let back = format!("/s/{}/~/changes/{}", ctx.space.id, c.number);
    if let Some(why) = why_not(ctx) {
        return not_done(
            viewer,
            &ApiError::forbidden(why),
            &back,
            "Back to the change request",
        );
    }
    if !matches!(
        c.status,
        ChangeRequestStatus::Open | ChangeRequestStatus::Draft
    ) {
        return not_done(
            viewer,
            &ApiError::conflict("This change request is no longer open: it cannot be edited."),
            &back,
            "Back to the change request",
        );
    }
    let rev = match content_of(state, ctx, &c.revision_id).await {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let Some(page_found) = rev.page(page_id) else {
        return not_found(Some(viewer), "No page of this change request has this id.");
    };
    let PageKind::Document(doc) = &page_found.kind else {
        return not_found(
            Some(viewer),
            "Only pages with a document can be edited here.",
        );
    };
    let markdown = doc.markdown.clone();
    let title = page_found.title.clone();
    // Redirects are site settings: offered to organization admins, when a site shows the space.
    let offer_redirect = ctx.org.is_admin()
        && crate::domain::redirects::published_in_a_site(
            state,
            ctx.space.org_id.as_str(),
            &ctx.space.id,
        )
        .await
        .unwrap_or(false);
    let preview = {
        let (space, rev, md, number) = (
            ctx.space.id.clone(),
            rev.clone(),
            markdown.clone(),
            c.number,
        );
        match tokio::task::spawn_blocking(move || {
            super::screens::render_markdown(&space, number, &rev, &md)
        })
        .await
        {
            Ok(html) => html,
            Err(e) => return failed(e),
        }
    };
    // Pages to link to, for the editor's completion after `](`.
    let mut pages = Vec::new();
    let mut stack: Vec<&quire_content::model::Page> = rev.pages.iter().rev().collect();
    while let Some(p) = stack.pop() {
        if matches!(p.kind, PageKind::Document(_)) {
            pages.push(serde_json::json!({ "id": p.id, "title": p.title }));
        }
        stack.extend(p.pages.iter().rev());
    }
    let pages = serde_json::to_string(&pages).unwrap_or_else(|_| "[]".into());
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let space = ctx.space.id.as_str();
    let n = c.number;
    let body = html! {
        nav class="crumbs" aria-label="Breadcrumb" {
            ol {
                li { a href={ "/s/" (space) "/~/changes" } { "Change requests" } }
                li { a href=(back) { "#" (n) " " (if c.subject.is_empty() { "Untitled" } else { &c.subject }) } }
            }
        }
        h1 { "Edit “" (title) "”" }
        p class="muted" { "Saving adds one revision to change request #" (n) "; it merges with what others saved meanwhile." }
        form method="post" action={ "/s/" (space) "/~/changes/" (n) "/edit/" (page_id) } class="editor" id="editor"
            data-draft={ "quire-draft:" (space) ":" (n) ":" (page_id) } data-preview={ "/s/" (space) "/~/changes/" (n) "/preview" }
            data-pages=(pages) data-nonce=(nonce) data-upload={ "/s/" (space) "/~/upload/" (n) } {
            input type="hidden" name="csrf" value=(viewer.csrf);
            input type="hidden" name="parent" value=(c.revision_id);
            label for="page-title" { "Title" }
            input id="page-title" name="subject" type="text" required maxlength="512" value=(title);
            div class="panes" {
                div class="source" {
                    label for="markdown" { "Markdown" }
                    textarea id="markdown" name="body" rows="24" spellcheck="false" autocapitalize="off" { "\n" (markdown) }
                }
                section class="preview" aria-label="Preview" aria-live="polite" {
                    h2 class="muted" { "Preview" }
                    // why: the page's markdown as the content renderer renders it.
                    article class="content" id="preview" { (PreEscaped(preview)) }
                }
            }
            (settings_html(page_found, offer_redirect))
            p id="draft-status" class="muted" role="status" {}
            p { button type="submit" { "Save" } " " a href=(back) { "Cancel" } }
        }
        script src=(super::shell::Asset::Editor.url()) defer {}
    };
    let mut res = page(
        StatusCode::OK,
        &format!("Edit {title}"),
        Some(viewer),
        nav,
        body,
    );
    // The source editor's own styles are a style element: this screen's policy allows the
    // one carrying this response's nonce, and nothing else inline.
    let policy = super::shell::CSP.replace(
        "style-src 'self'",
        &format!("style-src 'self' 'nonce-{nonce}'"),
    );
    if let Ok(v) = HeaderValue::from_str(&policy) {
        res.headers_mut()
            .insert(axum::http::header::CONTENT_SECURITY_POLICY, v);
    }
    res
}

/// The page's settings in the editor's form: description, emoji, icon, slug (with, when
/// `offer_redirect`, a redirect from the old address), and whether it is hidden from the
/// navigation and from search.
fn settings_html(p: &Page, offer_redirect: bool) -> Markup {
    html! {
        details class="page-settings" {
            summary { "Page settings" }
            input type="hidden" name="settings" value="1";
            label for="page-description" { "Description" }
            input id="page-description" name="description" type="text" maxlength="1000" value=(p.description.as_deref().unwrap_or(""));
            label for="page-emoji" { "Emoji" }
            input id="page-emoji" name="emoji" type="text" maxlength="32" list="emoji-list" value=(p.emoji.as_deref().unwrap_or(""));
            datalist id="emoji-list" {
                @for (e, name) in EMOJI { option value=(e) { (name) } }
            }
            label for="page-icon" { "Icon " span class="muted" { "(a Font Awesome name, instead of an emoji)" } }
            input id="page-icon" name="icon" type="text" maxlength="64" list="icon-list" value=(p.icon.as_deref().unwrap_or(""));
            datalist id="icon-list" {
                @for (i, _) in icons() { option value=(i) {} }
            }
            div class="icon-picker" role="group" aria-label="Pick an icon" hidden {
                @for (i, svg) in icons() {
                    button type="button" data-icon=(i) title=(i) aria-label=(i) aria-pressed="false" { (svg) }
                }
            }
            label for="page-slug" { "Address in its parent (slug)" }
            input id="page-slug" name="slug" type="text" maxlength="100" value=(p.slug);
            @if offer_redirect {
                label { input type="checkbox" name="redirect" value="yes"; " When the slug changes, add a redirect from the old address on the sites that publish this space" }
            }
            label { input type="checkbox" name="hidden" value="yes" checked[p.hidden]; " Hidden from the navigation of published sites" }
            label { input type="checkbox" name="noindex" value="yes" checked[p.no_index]; " Left out of search" }
            (layout_html(p))
        }
    }
}

/// The parts of a page's layout the settings show and hide, with their labels.
const SHOWN: [(&str, &str); 6] = [
    ("cover", "Cover"),
    ("title", "Title"),
    ("description", "Description"),
    ("tableOfContents", "Table of contents"),
    ("outline", "Outline (on this page)"),
    ("pagination", "Previous and next links"),
];

/// A document page's layout, cover image and variables in the settings form. The layout's
/// other fields travel as they are, so that a save keeps them.
fn layout_html(p: &Page) -> Markup {
    let PageKind::Document(doc) = &p.kind else {
        return html! {};
    };
    let l = &doc.layout;
    let shown = |name: &str| match name {
        "cover" => l.cover,
        "title" => l.title,
        "description" => l.description,
        "tableOfContents" => l.table_of_contents,
        "outline" => l.outline,
        _ => l.pagination,
    };
    let wide = l.width == "wide";
    let kept = serde_json::json!({
        "coverSize": l.cover_size, "coverMask": l.cover_mask, "metadata": l.metadata,
        "tags": l.tags, "actions": l.actions, "anchors": l.anchors,
    });
    // A cover that is a file of the space is kept as it is: the form edits addresses only.
    let cover = match doc.cover.as_ref().and_then(|c| c.reference.as_ref()) {
        Some(quire_content::model::ContentRef::Url { url }) => Some(url.clone()),
        None => Some(String::new()),
        Some(_) => None,
    };
    let vars: String = doc
        .variables
        .iter()
        .map(|(k, v)| {
            let v = match v {
                quire_content::model::VariableValue::String(s) => s.clone(),
                quire_content::model::VariableValue::Bool(b) => b.to_string(),
                quire_content::model::VariableValue::Number(n) => n.to_string(),
            };
            format!("{k}: {v}\n")
        })
        .collect();
    html! {
        fieldset {
            legend { "Layout" }
            label for="page-width" { "Width" }
            select id="page-width" name="width" {
                option value="default" selected[!wide] { "Default" }
                option value="wide" selected[wide] { "Wide" }
            }
            @for (name, label) in SHOWN {
                label { input type="checkbox" name="show" value=(name) checked[shown(name)]; " " (label) }
            }
            input type="hidden" name="layout" value=(kept.to_string());
        }
        @match &cover {
            Some(cover) => {
                label for="page-cover" { "Cover image " span class="muted" { "(an https address; empty for none)" } }
                input id="page-cover" name="cover" type="url" maxlength="2048" value=(cover);
                input type="hidden" name="coverwas" value=(cover);
            }
            None => {
                p class="muted" { "The cover image is a file of the space." }
            }
        }
        label for="page-vars" { "Page variables " span class="muted" { "(one " code { "name: value" } " a line)" } }
        textarea id="page-vars" name="vars" rows="3" { (vars) }
        input type="hidden" name="varswas" value=(vars);
    }
}

/// The layout, cover and variables of a document page's settings form, as `update_page`
/// takes them (the cover and the variables only when they changed, so that what the form
/// cannot show, a cover's dark image and position, or a variable's type, is kept); `None`
/// for a form without them (a page of another kind).
fn layout_fields(form: &SaveForm) -> ApiResult<Option<serde_json::Value>> {
    let Some(kept) = form.layout.as_deref() else {
        return Ok(None);
    };
    let mut layout: serde_json::Map<String, serde_json::Value> = serde_json::from_str(kept)
        .map_err(|_| ApiError::bad_request("`layout`: reload the editor and try again."))?;
    layout.insert(
        "width".into(),
        form.width
            .clone()
            .unwrap_or_else(|| "default".into())
            .into(),
    );
    for (name, _) in SHOWN {
        layout.insert(name.into(), form.show.iter().any(|s| s == name).into());
    }
    let mut fields = serde_json::Map::new();
    let was = |v: &Option<String>| v.as_deref().unwrap_or("").replace("\r\n", "\n");
    if let Some(cover) = form.cover.as_deref().map(str::trim) {
        if cover != was(&form.cover_was).trim() {
            let cover = match cover {
                "" => serde_json::Value::Null,
                url => serde_json::json!({ "ref": { "kind": "url", "url": url } }),
            };
            fields.insert("cover".into(), cover);
        }
    }
    let text = form.vars.as_deref().unwrap_or("").replace("\r\n", "\n");
    if text.trim() == was(&form.vars_was).trim() {
        fields.insert("layout".into(), layout.into());
        return Ok(Some(serde_json::Value::Object(fields)));
    }
    let mut vars = serde_json::Map::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ApiError::bad_request(format!(
                "`variables`: {line:?} is not `name: value`."
            )));
        };
        let value = value.trim();
        let value = match value {
            "true" => true.into(),
            "false" => false.into(),
            v => match v.parse::<serde_json::Number>() {
                Ok(n) => serde_json::Value::Number(n),
                Err(_) => v.into(),
            },
        };
        vars.insert(name.trim().to_string(), value);
    }
    fields.insert("layout".into(), layout.into());
    fields.insert("variables".into(), vars.into());
    Ok(Some(serde_json::Value::Object(fields)))
}

/// Emoji offered for a page (any other can be typed), with their names.
const EMOJI: &[(&str, &str)] = &[
    ("📘", "book"),
    ("📄", "page"),
    ("🚀", "rocket"),
    ("💡", "idea"),
    ("⚙️", "settings"),
    ("🔧", "wrench"),
    ("🛠️", "tools"),
    ("📦", "package"),
    ("🔒", "lock"),
    ("🔑", "key"),
    ("✅", "done"),
    ("⚠️", "warning"),
    ("❓", "question"),
    ("📈", "chart"),
    ("🧪", "test"),
    ("🐛", "bug"),
    ("🎯", "target"),
    ("📣", "announcement"),
    ("🗺️", "map"),
    ("👋", "welcome"),
    ("🏠", "home"),
    ("📚", "books"),
    ("🧭", "compass"),
    ("🔌", "plug"),
    ("🌐", "web"),
];

/// Icons offered for a page (Font Awesome names; any other can be typed).
/// The icons the app offers (`icons.svg`, made by `scripts/editor-bundle.sh` from
/// `editor/icons.txt` and Font Awesome Free): one `<symbol id="icon-{name}" …>` a line.
const ICONS_SVG: &str = include_str!("icons.svg");

/// Each offered icon: its name, and its symbol as an inline, decorative SVG image. A symbol
/// is one path (`<symbol id="icon-{name}" viewBox="…"><path fill="currentColor" d="…"/></symbol>`).
fn icons() -> impl Iterator<Item = (&'static str, Markup)> {
    ICONS_SVG.lines().filter_map(|line| {
        let (name, view_box, d) = icon_parts(line)?;
        Some((
            name,
            html! {
                svg aria-hidden="true" focusable="false" viewBox=(view_box) {
                    path fill="currentColor" d=(d) {}
                }
            },
        ))
    })
}

/// A symbol line's name, view box and path.
fn icon_parts(line: &str) -> Option<(&str, &str, &str)> {
    let rest = line.strip_prefix("<symbol id=\"icon-")?;
    let (name, rest) = rest.split_once('"')?;
    let (view_box, rest) = rest.strip_prefix(" viewBox=\"")?.split_once('"')?;
    let (d, rest) = rest
        .strip_prefix("><path fill=\"currentColor\" d=\"")?
        .split_once('"')?;
    (rest == "/></symbol>").then_some((name, view_box, d))
}

/// The "Edit" button of a page: the page to edit.
#[derive(Deserialize)]
pub struct StartForm {
    page: String,
}

/// `POST /s/{space}/~/edit` (`page`): opens a change request to edit a page of the space,
/// then its editor.
pub async fn start(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Posted(form): Posted<StartForm>,
) -> Response {
    let viewer = &signed.viewer();
    if let Some(res) = deleted(&ctx, viewer) {
        return res;
    }
    let back = format!("/s/{}", ctx.space.id);
    if let Some(why) = why_not(&ctx) {
        return not_done(
            viewer,
            &ApiError::forbidden(why),
            &back,
            "Back to the space",
        );
    }
    let page_id = form.page;
    let run = {
        let (state, user) = (state.clone(), signed.user.id.clone());
        async move {
            let main = content_of(&state, &ctx, &ctx.space.revision_id).await?;
            let title = main
                .page(&page_id)
                .map(|p| p.title.clone())
                .ok_or_else(|| ApiError::not_found("No page of this space has this id."))?;
            let subject: String = format!("Edit {title}").chars().take(100).collect();
            let c = crs::create(&state, &ctx, user.as_str(), subject).await?;
            Ok(format!(
                "/s/{}/~/changes/{}/edit/{page_id}",
                ctx.space.id, c.number
            ))
        }
    };
    run_write(viewer, &back, "Back to the space", run).await
}

/// Largest page markdown the editor saves or previews: what the API accepts for a document.
const MAX_MARKDOWN_BYTES: usize = 2 * 1024 * 1024;

/// Refuses markdown larger than a page may be.
fn check_size(markdown: &str) -> ApiResult<()> {
    if markdown.len() > MAX_MARKDOWN_BYTES {
        return Err(ApiError::PayloadTooLarge(format!(
            "A page's markdown may be at most {} MiB.",
            MAX_MARKDOWN_BYTES / (1024 * 1024)
        )));
    }
    Ok(())
}

/// What a form resolving a conflict asks for.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ConflictOp {
    /// Save (or update with) the text made of the lines chosen (`choice`).
    Resolve,
}

/// The editor's form, and the forms of a save's conflict: the page's title and markdown,
/// the revision the editor was opened on (`parent`), the page's settings when the form
/// holds them (`settings` sent), and for a conflict resolved line by line (`op=resolve`)
/// the revision the editor started from (`base`) and each conflict's lines (`choice`).
#[derive(Deserialize)]
pub struct SaveForm {
    subject: String,
    body: String,
    parent: Option<String>,
    op: Option<ConflictOp>,
    base: Option<String>,
    #[serde(default, rename = "choice")]
    choices: Vec<String>,
    /// Present when the form holds the page's settings.
    settings: Option<String>,
    description: Option<String>,
    emoji: Option<String>,
    icon: Option<String>,
    slug: Option<String>,
    /// `yes`: add a redirect from the old address when the slug changes.
    redirect: Option<String>,
    hidden: Option<String>,
    noindex: Option<String>,
    /// A document's layout: its width, the parts shown, the fields kept as they are
    /// (JSON), the cover image's address and the variables (`name: value` lines).
    width: Option<String>,
    #[serde(default)]
    show: Vec<String>,
    layout: Option<String>,
    /// Empty removes the cover, and empty variables remove them all.
    #[serde(default, deserialize_with = "super::session::sent")]
    cover: Option<String>,
    #[serde(default, deserialize_with = "super::session::sent")]
    vars: Option<String>,
    /// The cover's address and the variables as the form showed them: a save changes them
    /// only when they were edited.
    #[serde(rename = "coverwas")]
    cover_was: Option<String>,
    #[serde(rename = "varswas")]
    vars_was: Option<String>,
}

/// `POST /s/{space}/~/changes/{n}/edit/{page}`: saves the page's title and markdown.
pub async fn save(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path((_, number, page_id)): Path<(String, String, String)>,
    Posted(mut form): Posted<SaveForm>,
) -> Response {
    let viewer = &signed.viewer();
    if let Some(res) = deleted(&ctx, viewer) {
        return res;
    }
    let state = &state;
    let (number, page_id) = (number.as_str(), page_id.as_str());
    let here = format!("/s/{}/~/changes/{number}/edit/{page_id}", ctx.space.id);
    if form.op == Some(ConflictOp::Resolve) {
        // A conflict resolved line by line: the text made of the lines chosen is saved.
        match resolved(state, &ctx, page_id, &form).await {
            Ok(text) => form.body = text,
            Err(e) => return not_done(viewer, &e, &here, "Back to the editor"),
        }
    }
    let layout = match form.settings.is_some().then(|| layout_fields(&form)) {
        Some(Err(e)) => {
            return not_done(
                viewer,
                &e,
                &here,
                "Back to the editor (your text is kept in this browser)",
            )
        }
        Some(Ok(fields)) => fields,
        None => None,
    };
    // Browsers send a text area's lines ended by CR LF: the page keeps LF.
    let markdown = form.body.replace("\r\n", "\n");
    let title = form.subject.trim().to_string();
    let seen = form.parent.filter(|p| !p.is_empty());
    let seen_at = seen.clone();
    // The settings, when the form sent them (an empty text removes a setting).
    let settings = form.settings.is_some().then(|| {
        serde_json::json!({
            "description": form.description.unwrap_or_default().trim(),
            "emoji": form.emoji.unwrap_or_default().trim(),
            "icon": form.icon.unwrap_or_default().trim(),
            "hidden": form.hidden.as_deref() == Some("yes"),
            "noIndex": form.noindex.as_deref() == Some("yes"),
            "slug": form.slug.clone().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()),
        })
    });
    // The old address's redirect, for an admin who asked for it with a new slug.
    let keep_address = form
        .slug
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty() && form.redirect.as_deref() == Some("yes") && ctx.org.is_admin())
        .map(str::to_string);
    let mine = (title.clone(), markdown.clone());
    let run = {
        let (state, ctx, user, number, page_id) = (
            state.clone(),
            ctx.clone(),
            signed.user.id.clone(),
            number.to_string(),
            page_id.to_string(),
        );
        async move {
            if title.is_empty() {
                return Err(ApiError::bad_request("The page needs a title."));
            }
            check_size(&markdown)?;
            let mut change = serde_json::json!({
                "operation": "update_page",
                "page": page_id,
                "title": title,
                "document": { "markdown": markdown },
            });
            if let Some(serde_json::Value::Object(fields)) = settings {
                for (k, v) in fields {
                    if !v.is_null() {
                        change[k] = v;
                    }
                }
            }
            // A null cover here removes it, so these are set as they are.
            if let Some(serde_json::Value::Object(fields)) = layout {
                for (k, v) in fields {
                    change[k] = v;
                }
            }
            let change: quire_content::edit::Change = serde_json::from_value(change)
                .map_err(|e| ApiError::bad_request(format!("The page cannot be saved: {e}")))?;
            crs::apply_batch(
                &state,
                &ctx,
                user.as_str(),
                &number,
                vec![change],
                seen.as_deref(),
            )
            .await?;
            if let Some(slug) = keep_address {
                crate::domain::redirects::keep_old_address(
                    &state,
                    ctx.space.org_id.as_str(),
                    &ctx.space.id,
                    &page_id,
                    &slug,
                )
                .await?;
            }
            Ok(format!(
                "/s/{}/~/changes/{number}#saved:{page_id}",
                ctx.space.id
            ))
        }
    };
    match tokio::spawn(crate::cache::bypassed(run)).await {
        Ok(Ok(to)) => super::shell::see_other(&to),
        Ok(Err(ApiError::Conflict(why))) => {
            let at = (number, page_id, seen_at.as_deref());
            conflict(state, &ctx, viewer, at, &why, mine).await
        }
        Ok(Err(ApiError::Internal(e))) => failed(e),
        Ok(Err(e)) => not_done(
            viewer,
            &e,
            &here,
            "Back to the editor (your text is kept in this browser)",
        ),
        Err(e) => failed(e),
    }
}

/// A save whose lines others changed meanwhile: for each stretch both changed, what was
/// saved and what was sent side by side with a choice of the lines that stand (a form that
/// saves the page made of the choices, [`resolved`]), and a form to save a text written by
/// hand (prefilled with the sender's), made against the change request as it now is.
/// Nothing was changed.
async fn conflict(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    (number, page_id, seen): (&str, &str, Option<&str>),
    why: &str,
    (title, mine): (String, String),
) -> Response {
    let here = format!("/s/{}/~/changes/{number}/edit/{page_id}", ctx.space.id);
    let back = "Back to the editor (your text is kept in this browser)";
    let Ok(c) = crs::load(state, ctx, number).await else {
        return not_done(viewer, &ApiError::conflict(why), &here, back);
    };
    if !matches!(
        c.status,
        ChangeRequestStatus::Open | ChangeRequestStatus::Draft
    ) {
        return not_done(viewer, &ApiError::conflict(why), &here, back);
    }
    let theirs = match markdown_at(state, ctx, &c.revision_id, page_id).await {
        Ok(t) => t,
        Err(e) => return failed(e),
    };
    // The text the editor started from, when it is known: the lines each side changed.
    let base = match seen {
        Some(seen) => markdown_at(state, ctx, seen, page_id).await.ok(),
        None => None,
    };
    let csrf = viewer.csrf;
    let action = here.as_str();
    let line_by_line = base
        .map(|base| merge::merge_regions(&base, &mine, &theirs))
        .filter(|regions| conflicts_in(regions) > 0)
        .map(|regions| {
            let conflicts = conflicts_in(&regions);
            let mut n = 0;
            let choices = choices_html(&regions, ("Saved meanwhile", "Yours"), "", &mut n);
            html! {
                h2 { "Line by line" }
                form method="post" action=(action) id="merge" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="op" value="resolve";
                    input type="hidden" name="parent" value=(c.revision_id);
                    input type="hidden" name="base" value=(seen.unwrap_or_default());
                    input type="hidden" name="subject" value=(title);
                    textarea name="body" hidden aria-hidden="true" { "\n" (mine) }
                    p {
                        "The lines only one of you changed are merged. For each of the "
                        (conflicts)
                        " place where you both changed lines, choose the lines that stand."
                    }
                    (choices)
                    p { button type="submit" { "Save the lines chosen" } }
                }
            }
        });
    let n = c.number;
    let body = html! {
        h1 { "Your edit of “" (title) "” conflicts" }
        p role="alert" { (why) }
        p {
            "Someone saved the same lines of this page meanwhile. Choose the lines that stand, or compare and write the text that should stand: it replaces the page's text in change request #"
            (n) "."
        }
        @if let Some(line_by_line) = line_by_line { (line_by_line) }
        h2 { "By hand" }
        div class="panes compare" {
            section aria-labelledby="theirs-h" {
                h2 id="theirs-h" { "Saved meanwhile" }
                pre { (theirs) }
            }
            section aria-labelledby="mine-h" {
                h2 id="mine-h" { "Yours" }
                pre { (mine) }
            }
        }
        form method="post" action=(action) class="editor" id="resolve" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="parent" value=(c.revision_id);
            input type="hidden" name="subject" value=(title);
            label for="markdown" { "The text to save" }
            textarea id="markdown" name="body" rows="20" spellcheck="false" { "\n" (mine) }
            p {
                button type="submit" { "Save this text" }
                " "
                a href={ "/s/" (ctx.space.id) "/~/changes/" (n) } { "Keep what was saved meanwhile" }
            }
        }
    };
    page(
        StatusCode::CONFLICT,
        "Conflicting edit",
        Some(viewer),
        None,
        body,
    )
}

/// A page's markdown in a revision of the space (empty when it is not a document there).
async fn markdown_at(
    state: &AppState,
    ctx: &SpaceCtx,
    revision: &str,
    page_id: &str,
) -> ApiResult<String> {
    Ok(document_at(state, ctx, revision, page_id)
        .await?
        .unwrap_or_default())
}

/// A page's markdown in a revision of the space, when it is a document there.
pub(super) async fn document_at(
    state: &AppState,
    ctx: &SpaceCtx,
    revision: &str,
    page_id: &str,
) -> ApiResult<Option<String>> {
    let rev = content_of(state, ctx, revision).await?;
    Ok(match rev.page(page_id).map(|p| &p.kind) {
        Some(PageKind::Document(d)) => Some(d.markdown.clone()),
        _ => None,
    })
}

/// The text a line-by-line resolution makes: the merge of the sender's text (`body`) with
/// the page as the editor started it (`base`) and as it was saved meanwhile (`parent`),
/// each conflict's lines as chosen; 400 when the choices do not match the conflicts.
async fn resolved(
    state: &AppState,
    ctx: &SpaceCtx,
    page_id: &str,
    form: &SaveForm,
) -> ApiResult<String> {
    let revision = |field: &Option<String>, name: &str| {
        field
            .as_deref()
            .filter(|r| !r.is_empty())
            .map(str::to_string)
            .ok_or_else(|| ApiError::bad_request(format!("`{name}`: which revision is missing.")))
    };
    let base = markdown_at(state, ctx, &revision(&form.base, "base")?, page_id).await?;
    let theirs = markdown_at(state, ctx, &revision(&form.parent, "parent")?, page_id).await?;
    let mine = form.body.replace("\r\n", "\n");
    check_size(&mine)?;
    let regions = merge::merge_regions(&base, &mine, &theirs);
    check_choices(&regions, form.choices.len())?;
    let out = assemble(regions, form.choices.iter().map(String::as_str))?;
    check_size(&out)?;
    Ok(out)
}

/// The text made of merged stretches and, for each conflict in order, the lines chosen:
/// `mine` (ours), `theirs`, or `both` (theirs, then ours).
fn assemble<'a>(
    regions: Vec<merge::Region>,
    mut choices: impl Iterator<Item = &'a str>,
) -> ApiResult<String> {
    let mut out = String::new();
    for region in regions {
        match region {
            merge::Region::Merged(lines) => out.push_str(&lines),
            merge::Region::Conflict { ours, theirs, .. } => match choices.next() {
                Some("mine") => out.push_str(&ours),
                Some("theirs") => out.push_str(&theirs),
                Some("both") => {
                    out.push_str(&theirs);
                    if !theirs.is_empty() && !theirs.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str(&ours);
                }
                other => {
                    return Err(ApiError::bad_request(format!(
                        "`choice`: `{}` is none of `mine`, `theirs`, `both`.",
                        other.unwrap_or_default()
                    )))
                }
            },
        }
    }
    Ok(out)
}

/// How many conflicting places `regions` holds.
fn conflicts_in(regions: &[merge::Region]) -> usize {
    regions
        .iter()
        .filter(|r| matches!(r, merge::Region::Conflict { .. }))
        .count()
}

/// The choices of one conflict form, one per conflicting place of `regions`; 400 when
/// they do not match.
fn check_choices(regions: &[merge::Region], given: usize) -> ApiResult<()> {
    let conflicts = conflicts_in(regions);
    if given != conflicts {
        return Err(ApiError::bad_request(format!(
            "`choice`: {given} given for {conflicts} conflicting places; the page changed meanwhile, so compare again."
        )));
    }
    Ok(())
}

/// The line-by-line choices of `regions` as form fields: each stretch merged shown as it
/// is, each conflict side by side (`theirs_label` and `ours_label`) with a `choice` select
/// whose values are prefixed by `prefix`. `n` numbers the conflicts across the form.
fn choices_html(
    regions: &[merge::Region],
    (theirs_label, ours_label): (&str, &str),
    prefix: &str,
    n: &mut usize,
) -> Markup {
    let conflicts = conflicts_in(regions);
    // Each conflict with its place among this text's (`i`) and among the form's (`n`).
    let mut numbered = Vec::with_capacity(regions.len());
    let mut i = 0;
    for region in regions {
        if matches!(region, merge::Region::Conflict { .. }) {
            i += 1;
            *n += 1;
        }
        numbered.push((region, i, *n));
    }
    let (theirs_lower, ours_lower) = (theirs_label.to_lowercase(), ours_label.to_lowercase());
    html! {
        @for (region, i, n) in numbered {
            @match region {
                merge::Region::Merged(lines) => {
                    pre class="merged" aria-label="Merged lines" { (lines) }
                }
                merge::Region::Conflict { ours, theirs, lines } => {
                    fieldset class="conflict" {
                        legend {
                            "Place " (i) " of " (conflicts) ": lines " (lines.ours.start + 1)
                            " to " (lines.ours.end.max(lines.ours.start + 1))
                        }
                        div class="panes compare" {
                            section aria-label={ (theirs_label) ", place " (i) } {
                                h3 { (theirs_label) }
                                pre { (theirs) }
                            }
                            section aria-label={ (ours_label) ", place " (i) } {
                                h3 { (ours_label) }
                                pre { (ours) }
                            }
                        }
                        label for={ "choice-" (n) } { "Lines that stand" }
                        select id={ "choice-" (n) } name="choice" {
                            option value={ (prefix) "mine" } { (ours_label) }
                            option value={ (prefix) "theirs" } { (theirs_label) }
                            option value={ (prefix) "both" } { "Both: " (theirs_lower) ", then " (ours_lower) }
                        }
                    }
                }
            }
        }
    }
}

/// An update from main that conflicts: for each page whose lines both sides changed, the
/// lines merged and each conflicting place side by side with a choice (a form that updates
/// with the texts made of the choices, [`update_resolved`]); other conflicts are named, as
/// no choice of lines solves them. Nothing was changed.
pub async fn update_conflict(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    number: &str,
    why: &str,
) -> Response {
    let back = format!("/s/{}/~/changes/{number}", ctx.space.id);
    let found = match crs::update_conflicts(state, ctx, number).await {
        Ok(Some(found)) if !found.pages.is_empty() && !found.others => found,
        Ok(_) => {
            return not_done(
                viewer,
                &ApiError::conflict(why),
                &back,
                "Back to the change request",
            )
        }
        Err(ApiError::Internal(e)) => return failed(e),
        Err(e) => return not_done(viewer, &e, &back, "Back to the change request"),
    };
    let mut n = 0;
    let pages: Vec<(&str, Markup)> = found
        .pages
        .iter()
        .map(|(id, title, base, ours, theirs)| {
            let regions = merge::merge_regions(base, ours, theirs);
            let choices = choices_html(
                &regions,
                ("On main", "In this change request"),
                &format!("{id}:"),
                &mut n,
            );
            (title.as_str(), choices)
        })
        .collect();
    let body = html! {
        h1 { "Updating from main conflicts" }
        p role="alert" { (why) }
        p { "Main changed the same lines as this change request. The lines only one side changed are merged; for each place both changed, choose the lines that stand." }
        form method="post" action={ "/s/" (ctx.space.id) "/~/changes/" (number) "/update" } id="merge" {
            input type="hidden" name="csrf" value=(viewer.csrf);
            input type="hidden" name="op" value="resolve";
            input type="hidden" name="parent" value=(found.cr_revision);
            input type="hidden" name="base" value=(found.main_revision);
            @for (title, choices) in &pages {
                h2 { (title) }
                (choices)
            }
            p { button type="submit" { "Update with the lines chosen" } }
        }
        p { a href=(back) { "Back to the change request" } }
    };
    page(
        StatusCode::CONFLICT,
        "Conflicting update",
        Some(viewer),
        None,
        body,
    )
}

/// The resolution an update's conflict form sends: for each page in conflict, the text made
/// of its choices (`{page}:{choice}`, in order), against the revisions it was made from.
pub async fn update_resolved(
    state: &AppState,
    ctx: &SpaceCtx,
    number: &str,
    form: &super::screens::UpdateForm,
) -> ApiResult<crs::Resolution> {
    let cr_revision = form.parent.clone().unwrap_or_default();
    let main_revision = form.base.clone().unwrap_or_default();
    let found = crs::update_conflicts(state, ctx, number)
        .await?
        .filter(|f| f.cr_revision == cr_revision && f.main_revision == main_revision)
        .ok_or_else(|| {
            ApiError::conflict(
                "The change request or main changed since these choices were made; compare again.",
            )
        })?;
    let mut texts = Vec::new();
    for (id, _, base, ours, theirs) in &found.pages {
        let mine: Vec<&str> = form
            .choices
            .iter()
            .filter_map(|c| c.split_once(':'))
            .filter(|(page, _)| page == id)
            .map(|(_, choice)| choice)
            .collect();
        let regions = merge::merge_regions(base, ours, theirs);
        check_choices(&regions, mine.len())?;
        let text = assemble(regions, mine.into_iter())?;
        check_size(&text)?;
        texts.push((id.clone(), text));
    }
    Ok(crs::Resolution {
        cr_revision,
        main_revision,
        texts,
    })
}

/// The editor script's preview: the markdown to render.
#[derive(Deserialize)]
pub struct PreviewForm {
    body: String,
}

/// `POST /s/{space}/~/changes/{n}/preview` (`body`): the markdown rendered as the page will
/// show it, alone (for `editor.js`).
pub async fn preview(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Path((_, number)): Path<(String, String)>,
    Posted(form): Posted<PreviewForm>,
) -> Response {
    if let Some(res) = deleted(&ctx, &signed.viewer()) {
        return res;
    }
    let (state, ctx, number) = (&state, &ctx, number.as_str());
    let c = match crs::load(state, ctx, number).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let rev = match content_of(state, ctx, &c.revision_id).await {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let markdown = form.body.replace("\r\n", "\n");
    if let Err(e) = check_size(&markdown) {
        return e.into_response();
    }
    let (space, number) = (ctx.space.id.clone(), c.number);
    let html = match tokio::task::spawn_blocking(move || {
        super::screens::render_markdown(&space, number, &rev, &markdown)
    })
    .await
    {
        Ok(html) => html,
        Err(e) => return failed(e),
    };
    let mut res = (
        StatusCode::OK,
        [("content-type", "text/html; charset=utf-8")],
        html,
    )
        .into_response();
    res.headers_mut()
        .insert("x-quire-fragment", HeaderValue::from_static("preview"));
    with_headers(res)
}

/// Query of an upload: the file's name.
#[derive(serde::Deserialize)]
pub struct UploadQuery {
    name: Option<String>,
}

/// `POST /s/{space}/~/upload/{n}?name=`: the body (a file pasted or dropped into the editor)
/// becomes a file of change request `n`, one batch (`insert_files`); answers the markdown
/// that shows it: an image block for an image, a file block otherwise. The request comes
/// from the editor's script: same origin, the CSRF token in `X-Quire-CSRF`. At most
/// `--max-import-bytes`.
pub async fn upload(
    axum::extract::State(state): axum::extract::State<AppState>,
    axum::extract::Path((_, number)): axum::extract::Path<(String, String)>,
    axum::extract::Query(q): axum::extract::Query<UploadQuery>,
    signed: super::session::Signed,
    super::routes::InSpace(ctx): super::routes::InSpace,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Response {
    if let Err(res) = super::session::from_script(&state, &headers, &signed) {
        return res;
    }
    let caller = signed.caller();
    if ctx.space.deleted_at.is_some() {
        return ApiError::not_found("This space does not exist, or you may not read it.")
            .into_response();
    }
    let name: String = q
        .name
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '/' | '\\'))
        .take(200)
        .collect();
    let name = crate::validate::file_name("name", &name).unwrap_or_else(|_| "file".to_string());
    // A large file is held in memory until stored, as an import's download is: it takes an
    // import turn first, so that many at once cannot add up without bound. Small ones (as
    // small as the bodies that never wait for the body budget) go straight in.
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let large = declared.map_or(
        headers.contains_key(axum::http::header::TRANSFER_ENCODING),
        |n| n > crate::state::SMALL_BODY_BYTES,
    );
    let _turn = if large {
        match crate::domain::heavy::take(&state, &state.imports, "imports and uploads").await {
            Ok(turn) => Some(turn),
            Err(e) => return e.into_response(),
        }
    } else {
        None
    };
    let max = state.config.max_import_bytes;
    let bytes = match axum::body::to_bytes(body, max).await {
        Ok(b) if !b.is_empty() => b,
        Ok(_) => return ApiError::bad_request("The file is empty.").into_response(),
        Err(_) => {
            return ApiError::PayloadTooLarge(format!("A file may hold at most {max} bytes."))
                .into_response()
        }
    };
    let run = {
        let (state, user) = (state.clone(), caller.user.id.clone());
        async move {
            if let Some(why) = why_not(&ctx) {
                return Err(ApiError::forbidden(why));
            }
            let file = crate::domain::uploads::store_bytes(&state, &name, bytes, None).await?;
            crate::store::objects::add_blob_ref(&state.db, &ctx.space.id, &file.blob).await?;
            let snippet = if file.content_type.starts_with("image/") {
                let figure = html! {
                    figure {
                        img src={ "/files/" (file.id) } alt=(name);
                        figcaption {}
                    }
                };
                figure.into_string() + "\n"
            } else {
                format!("{{% file src=\"/files/{}\" %}}\n{{% endfile %}}\n", file.id)
            };
            let upload = quire_content::edit::FileUpload {
                reference: None,
                name: name.clone(),
                content_type: Some(file.content_type.clone()),
                url: None,
                base64: None,
                resolved: Some(file.clone()),
            };
            let change =
                quire_content::edit::Change::InsertFiles(quire_content::edit::InsertFiles {
                    files: vec![upload],
                });
            crs::apply_batch(&state, &ctx, user.as_str(), &number, vec![change], None).await?;
            Ok(serde_json::json!({ "id": file.id, "name": name, "markdown": snippet }))
        }
    };
    match tokio::spawn(crate::cache::bypassed(run)).await {
        Ok(Ok(answer)) => with_headers(axum::Json(answer).into_response()),
        Ok(Err(e)) => e.into_response(),
        Err(e) => failed(e),
    }
}

/// `GET /s/{space}/~/changes/{n}/files/{id}/{name}`: a file of a change request's content
/// (the editor's preview shows files not yet merged), served so that it cannot run.
pub async fn change_request_file(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    number: &str,
    id: &str,
) -> Response {
    let Ok(c) = crs::load(state, ctx, number).await else {
        return not_found(
            Some(viewer),
            "No change request of this space has this number.",
        );
    };
    let rev = match content_of(state, ctx, &c.revision_id).await {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let Some(f) = rev.file(id) else {
        return not_found(
            Some(viewer),
            "This file is not in the change request's content.",
        );
    };
    match state.blobs.get(&f.blob).await {
        Ok(Some(bytes)) => crate::http::download::uploaded_file(bytes, &f.content_type, &f.name),
        Ok(None) => not_found(Some(viewer), "This file's bytes are missing."),
        Err(e) => failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::{icon_parts, icons, ICONS_SVG};

    #[test]
    fn every_icon_symbol_is_drawn() {
        let symbols = ICONS_SVG
            .lines()
            .filter(|l| l.starts_with("<symbol"))
            .count();
        assert!(symbols > 0);
        assert_eq!(icons().count(), symbols);
        let line = r#"<symbol id="icon-x" viewBox="0 0 1 2"><path fill="currentColor" d="M0 0z"/></symbol>"#;
        assert_eq!(icon_parts(line), Some(("x", "0 0 1 2", "M0 0z")));
        let (_, svg) = icons().next().unwrap();
        let svg = svg.into_string();
        assert!(svg.starts_with("<svg aria-hidden=\"true\" focusable=\"false\" viewBox=\""));
        assert!(svg.ends_with("\"></path></svg>"), "{svg}");
    }
}
