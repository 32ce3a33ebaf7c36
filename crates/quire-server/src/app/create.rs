//! Making spaces and collections in the app: the forms on the organization and collection
//! screens, and `POST /o/{organizationId}` that runs the domain's workflows (the API's own).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use maud::{html, Markup};

use super::session;
use super::shell::{no_org, org_for, run_write, Viewer};
use crate::domain::access::grants::Grants;
use crate::domain::access::{OrgCtx, Role};
use crate::domain::{collections, spaces};
use crate::error::ApiError;
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

/// `POST /o/{organizationId}`: makes a space (`op=space`, `parent` optional) or a
/// collection (`op=collection`), then opens it.
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
    let run = {
        let state = state.clone();
        async move {
            let title = form.subject.clone().unwrap_or_default().trim().to_string();
            let parent = form.parent.clone().filter(|p| !p.is_empty());
            match form.op.as_deref().unwrap_or("") {
                "space" => {
                    let new = spaces::NewSpace {
                        title,
                        parent,
                        ..Default::default()
                    };
                    let (space, _) = spaces::create_in(&state, &org, &caller, new).await?;
                    Ok(format!("/s/{}", space.id))
                }
                "collection" => {
                    let (c, _) =
                        collections::create(&state, &org, &caller, title, None, parent).await?;
                    Ok(format!("/c/{}", c.id))
                }
                other => Err(ApiError::bad_request(format!(
                    "`op`: nothing to create named `{other}`."
                ))),
            }
        }
    };
    run_write(&viewer, &here, "Back to the organization", run).await
}
