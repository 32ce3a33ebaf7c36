//! OpenAPI specifications in the app: the organization's specifications on its screen,
//! and for members with the create role the form that adds one from a URL or a text,
//! through the domain's workflow (the API's `createOpenAPISpec`); Quire then fetches and
//! processes it in a background job.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use maud::{html, Markup};

use super::session;
use super::shell::{no_org, org_for, run_write, Viewer};
use crate::domain::access::{OrgCtx, Role};
use crate::domain::openapi;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;

/// Most specifications the organization screen lists.
const SHOWN: i64 = 100;

/// The specifications section of the organization screen (non-guests), with the form
/// that adds one for members who may create.
pub async fn section(state: &AppState, org: &OrgCtx, viewer: &Viewer<'_>) -> ApiResult<Markup> {
    if org.role.is_none() {
        return Ok(Markup::default());
    }
    let id = org.org.id.as_str();
    let (list, _) = store::openapi::list(&state.db, &org.org.id, None, SHOWN).await?;
    let may_add = org.role.is_some_and(|r| r >= Role::Create);
    let out = html! {
        h2 { "OpenAPI specifications" }
        @if list.is_empty() {
            p.muted { "No specification yet." }
        } @else {
            ul.specs {
                @for s in &list {
                    li {
                        a href={ "/o/" (id) "/openapi/" (s.slug) } { (s.slug) }
                        " "
                        span.muted { (s.processing_state) }
                    }
                }
            }
        }
        @if may_add {
            form method="post" action={ "/o/" (id) "/openapi" } {
                input type="hidden" name="csrf" value=(viewer.csrf);
                h3 { "Add a specification" }
                label for="spec-slug" { "Name in addresses (lower-case letters, digits, hyphens)" }
                input id="spec-slug" name="subject" type="text" required maxlength="100" pattern="[a-z0-9]+(-[a-z0-9]+)*";
                label for="spec-url" { "Its address" }
                input id="spec-url" name="emoji" type="url" placeholder="https://";
                label for="spec-text" { "Or its text (YAML or JSON)" }
                textarea id="spec-text" name="body" rows="4" {}
                button type="submit" { "Add" }
            }
        }
    };
    Ok(out)
}

/// `POST /o/{organizationId}/openapi`: adds a specification from the address or the text
/// given (exactly one), then opens its screen.
pub async fn act(
    State(state): State<AppState>,
    Path(org_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let here = format!("/o/{org_id}");
    let (signed, form) = match session::signed_form(&state, &headers, &here, body).await {
        Ok(signed_form) => signed_form,
        Err(res) => return res,
    };
    let viewer = signed.viewer();
    let caller = signed.caller();
    let Some(org) = org_for(&state, &caller, &org_id).await else {
        return no_org(&viewer);
    };
    let slug = form.subject.clone().unwrap_or_default().trim().to_string();
    let given = |v: &Option<String>| v.clone().filter(|t| !t.trim().is_empty());
    let source = (
        given(&form.emoji).map(|u| u.trim().to_string()),
        given(&form.body),
    );
    let run = {
        let (state, slug) = (state.clone(), slug.clone());
        async move { openapi::create(&state, &org, &slug, source).await }
    };
    let to = format!("/o/{org_id}/openapi/{slug}");
    run_write(&viewer, &here, "Back to the organization", async move {
        run.await.map(|()| to)
    })
    .await
}

/// The form that gives an existing specification a new source (members who may create),
/// for its screen.
pub fn update_form(org: &OrgCtx, viewer: &Viewer<'_>, slug: &str) -> Markup {
    if org.role.is_none_or(|r| r < Role::Create) {
        return Markup::default();
    }
    html! {
        form method="post" action={ "/o/" (org.org.id.as_str()) "/openapi/" (slug) } {
            input type="hidden" name="csrf" value=(viewer.csrf);
            h2 { "Update it" }
            label for="spec-url" { "Its new address" }
            input id="spec-url" name="emoji" type="url" placeholder="https://";
            label for="spec-text" { "Or its new text (YAML or JSON)" }
            textarea id="spec-text" name="body" rows="6" {}
            button type="submit" { "Update" }
        }
    }
}

/// `POST /o/{organizationId}/openapi/{specSlug}`: the specification's new source (the
/// address or the text given, exactly one), processed into a new version if it changed.
pub async fn update(
    State(state): State<AppState>,
    Path((org_id, slug)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let here = format!("/o/{org_id}/openapi/{slug}");
    let (signed, form) = match session::signed_form(&state, &headers, &here, body).await {
        Ok(signed_form) => signed_form,
        Err(res) => return res,
    };
    let viewer = signed.viewer();
    let caller = signed.caller();
    let Some(org) = org_for(&state, &caller, &org_id).await else {
        return no_org(&viewer);
    };
    let given = |v: &Option<String>| v.clone().filter(|t| !t.trim().is_empty());
    let source = (
        given(&form.emoji).map(|u| u.trim().to_string()),
        given(&form.body),
    );
    let run = {
        let (state, slug, to) = (state.clone(), slug.clone(), here.clone());
        async move {
            // Only an existing specification is updated here: a new one is added on the
            // organization's screen.
            if store::openapi::get(&state.db, org.org.id.as_str(), &slug)
                .await?
                .is_none()
            {
                return Err(crate::error::ApiError::not_found(
                    "This specification does not exist, or you may not see it.",
                ));
            }
            openapi::put(&state, &org, &slug, (&source.0, &source.1)).await?;
            Ok(to)
        }
    };
    run_write(&viewer, &here, "Back to the specification", run).await
}
