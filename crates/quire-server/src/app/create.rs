//! Making spaces and collections in the app: the forms on the organization and collection
//! screens, and `POST /o/{organizationId}` that runs the domain's workflows (the API's own).

use axum::extract::State;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::InOrg;
use super::session::{Posted, Signed};
use super::shell::{run_write, Viewer};
use crate::domain::access::grants::Grants;
use crate::domain::access::{OrgCtx, Role};
use crate::domain::{collections, spaces};
use crate::state::AppState;

/// The forms that make a space (in the organization, or in one of the collections the
/// viewer may create in) and a collection; empty when the viewer may create nowhere.
/// `inside` fixes the collection (the collection screen's form).
pub fn forms(org: &OrgCtx, grants: &Grants, viewer: &Viewer<'_>, inside: Option<&str>) -> Markup {
    let at_root = org.role.is_some_and(|r| r >= Role::Create);
    let mut places: Vec<(&str, &str)> = grants
        .collections()
        .values()
        .filter(|c| grants.collection_role(c).is_some_and(|r| r >= Role::Create))
        .map(|c| (c.id.as_str(), c.title.as_str()))
        .collect();
    places.sort_by(|a, b| a.1.cmp(b.1));
    if let Some(id) = inside {
        places.retain(|(c, _)| *c == id);
        if places.is_empty() {
            return Markup::default();
        }
    } else if !at_root && places.is_empty() {
        return Markup::default();
    }
    let action = format!("/o/{}", org.org.id.as_str());
    html! {
        h2 { "New space" }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(viewer.csrf);
            input type="hidden" name="op" value="space";
            label for="new-space" { "Title" }
            input id="new-space" name="subject" type="text" required maxlength="50";
            @match inside {
                Some(id) => {
                    input type="hidden" name="parent" value=(id);
                }
                None => {
                    label for="new-space-in" { "In" }
                    select id="new-space-in" name="parent" {
                        @if at_root {
                            option value="" { "The organization" }
                        }
                        @for (id, title) in &places {
                            option value=(id) { (title) }
                        }
                    }
                }
            }
            button type="submit" { "Create the space" }
        }
        @if at_root && inside.is_none() {
            h2 { "New collection" }
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(viewer.csrf);
                input type="hidden" name="op" value="collection";
                label for="new-collection" { "Title" }
                input id="new-collection" name="subject" type="text" required maxlength="50";
                button type="submit" { "Create the collection" }
            }
        }
    }
}

/// What the organization's create forms make.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Made {
    Space,
    Collection,
}

/// The form of `POST /o/{organizationId}`.
#[derive(Deserialize)]
pub struct NewForm {
    op: Made,
    /// The title.
    subject: String,
    /// The collection it goes in (empty or absent: the organization).
    parent: Option<String>,
}

/// `POST /o/{organizationId}`: makes a space (`op=space`, `parent` optional) or a
/// collection (`op=collection`), then opens it.
pub async fn act(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(form): Posted<NewForm>,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    let here = format!("/o/{}", org.org.id.as_str());
    let run = {
        let state = state.clone();
        async move {
            let title = form.subject.trim().to_string();
            let parent = form.parent.filter(|p| !p.is_empty());
            match form.op {
                Made::Space => {
                    let new = spaces::NewSpace {
                        title,
                        parent,
                        ..Default::default()
                    };
                    let (space, _) = spaces::create_in(&state, &org, &caller, new).await?;
                    Ok(format!("/s/{}", space.id))
                }
                Made::Collection => {
                    let (c, _) =
                        collections::create(&state, &org, &caller, title, None, parent).await?;
                    Ok(format!("/c/{}", c.id))
                }
            }
        }
    };
    run_write(&viewer, &here, "Back to the organization", run).await
}
