//! OpenAPI specifications in the app: the organization's specifications on its screen,
//! and for members with the create role the form that adds one from a URL or a text,
//! through the domain's workflow (the API's `createOpenAPISpec`); Quire then fetches and
//! processes it in a background job.

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::InOrg;
use super::session::{Posted, Signed};
use super::shell::{run_write, Viewer};
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
                input id="spec-slug" name="slug" type="text" required maxlength="100" pattern="[a-z0-9]+(-[a-z0-9]+)*";
                label for="spec-url" { "Its address" }
                input id="spec-url" name="url" type="url" placeholder="https://";
                label for="spec-text" { "Or its text (YAML or JSON)" }
                textarea id="spec-text" name="text" rows="4" {}
                button type="submit" { "Add" }
            }
        }
    };
    Ok(out)
}

/// A specification's source as a form gives it: its address or its text (exactly one is
/// expected; the domain names the fault otherwise).
#[derive(Deserialize)]
pub struct SourceForm {
    url: Option<String>,
    text: Option<String>,
}

impl SourceForm {
    /// The address and the text, each when given.
    fn source(self) -> (Option<String>, Option<String>) {
        let given = |v: Option<String>| v.filter(|t| !t.trim().is_empty());
        (
            given(self.url).map(|u| u.trim().to_string()),
            given(self.text),
        )
    }
}

/// The form of `POST /o/{organizationId}/openapi`.
#[derive(Deserialize)]
pub struct NewSpecForm {
    slug: String,
    #[serde(flatten)]
    source: SourceForm,
}

/// `POST /o/{organizationId}/openapi`: adds a specification from the address or the text
/// given (exactly one), then opens its screen.
pub async fn act(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(form): Posted<NewSpecForm>,
) -> Response {
    let viewer = signed.viewer();
    let org_id = org.org.id.as_str().to_string();
    let here = format!("/o/{org_id}");
    let slug = form.slug.trim().to_string();
    let source = form.source.source();
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
            input id="spec-url" name="url" type="url" placeholder="https://";
            label for="spec-text" { "Or its new text (YAML or JSON)" }
            textarea id="spec-text" name="text" rows="6" {}
            button type="submit" { "Update" }
        }
    }
}

/// `POST /o/{organizationId}/openapi/{specSlug}`: the specification's new source (the
/// address or the text given, exactly one), processed into a new version if it changed.
pub async fn update(
    State(state): State<AppState>,
    Path((_, slug)): Path<(String, String)>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(form): Posted<SourceForm>,
) -> Response {
    let viewer = signed.viewer();
    let here = format!("/o/{}/openapi/{slug}", org.org.id.as_str());
    let source = form.source();
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
