//! Translations in the app: an organization's translations of its spaces with their state,
//! and for members with the create role the forms that start one and run it again, through
//! the domain's translation workflow (the API's own); runs happen in background jobs.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::{html, Markup};

use super::session;
use super::shell::{failed, no_org, org_for, page, run_write};
use crate::domain::access::grants::Grants;
use crate::domain::access::{OrgCtx, Role};
use crate::domain::auth::Caller;
use crate::domain::translations;
use crate::error::ApiError;
use crate::state::AppState;
use crate::store;

/// Most translations the screen lists.
const SHOWN: i64 = 200;

async fn org_of(state: &AppState, caller: &Caller, org_id: &str) -> Option<OrgCtx> {
    // As the API: guests do not read translations.
    org_for(state, caller, org_id)
        .await
        .filter(|o| o.role.is_some())
}

fn language_select(id: &str, name: &str, selected: &str) -> Markup {
    html! {
        select id=(id) name=(name) {
            @for l in translations::LANGUAGES {
                option value=(l) selected[*l == selected] { (l) }
            }
        }
    }
}

/// `GET /o/{organizationId}/translations`.
pub async fn screen(
    State(state): State<AppState>,
    Path(org_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let here = format!("/o/{org_id}/translations");
    let signed = match session::require(&state, &headers, &here).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let viewer = signed.viewer();
    let caller = signed.caller();
    let Some(org) = org_of(&state, &caller, &org_id).await else {
        return no_org(&viewer);
    };
    let (list, _) = match store::translations::list(&state.db, &org.org.id, None, SHOWN).await {
        Ok(l) => l,
        Err(e) => return failed(e),
    };
    let grants = match Grants::load(&state, &org.org.id, &caller.user.id, org.role).await {
        Ok(g) => g,
        Err(e) => return failed(e),
    };
    let spaces = match store::spaces::list_live(&state.db, org.org.id.as_str(), None).await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let title_of = |id: &str| {
        spaces
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.title.clone())
            .unwrap_or_else(|| "A space you may not read".into())
    };
    let oid = org.org.id.as_str();
    let csrf = viewer.csrf;
    let may = org.role.is_some_and(|r| r >= Role::Create);
    let body = html! {
        nav class="crumbs" aria-label="Breadcrumb" {
            ol { li { a href={ "/o/" (oid) } { (org.org.title) } } }
        }
        h1 { "Translations" }
        @if list.is_empty() {
            p class="muted" { "No translation yet." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "Space" }
                    th scope="col" { "Languages" }
                    th scope="col" { "State" }
                    th scope="col" { "Result" }
                } }
                tbody {
                    @for t in &list {
                        tr data-translation=(t.id) {
                            td { (title_of(&t.source_space)) }
                            td { (t.source_language) " → " (t.language) }
                            td {
                                (t.status)
                                @if let Some(f) = &t.failure {
                                    br;
                                    span class="error-text" { (f) }
                                }
                            }
                            td {
                                @match &t.result_space {
                                    Some(s) => { a href={ "/s/" (s) } { (title_of(s)) } }
                                    None => { span class="muted" { "none yet" } }
                                }
                                @if may {
                                    " "
                                    form method="post" action={ "/o/" (oid) "/translations" } class="inline" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        input type="hidden" name="op" value="run";
                                        input type="hidden" name="invite" value=(t.id);
                                        button type="submit" { "Run again" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if may {
            h2 { "New translation" }
            form method="post" action={ "/o/" (oid) "/translations" } {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value="create";
                label for="tr-space" { "Space" }
                select id="tr-space" name="parent" {
                    @for s in spaces.iter().filter(|s| grants.space_role(s).is_some()) {
                        option value=(s.id) { (s.title) }
                    }
                }
                label for="tr-from" { "From" }
                (language_select("tr-from", "status", "en"))
                label for="tr-to" { "Into" }
                (language_select("tr-to", "role", "fr"))
                button type="submit" { "Translate" }
            }
        }
    };
    page(StatusCode::OK, "Translations", Some(&viewer), None, body)
}

/// `POST /o/{organizationId}/translations`: `op=create` (space, from, into) or `op=run`.
pub async fn act(
    State(state): State<AppState>,
    Path(org_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let here = format!("/o/{org_id}/translations");
    let (signed, form) = match session::signed_form(&state, &headers, &here, body).await {
        Ok(signed_form) => signed_form,
        Err(res) => return res,
    };
    let viewer = signed.viewer();
    let caller = signed.caller();
    let Some(org) = org_of(&state, &caller, &org_id).await else {
        return no_org(&viewer);
    };
    let run = {
        let state = state.clone();
        async move {
            match form.op.as_deref().unwrap_or("") {
                "create" => {
                    let new = translations::New {
                        space: form.parent.clone().unwrap_or_default(),
                        source_language: form.status.clone().unwrap_or_default(),
                        language: form.role.clone().unwrap_or_default(),
                        instructions: translations::NO_INSTRUCTIONS.to_string(),
                    };
                    translations::create(&state, &org, &caller, new)
                        .await
                        .map(|_| ())
                }
                "run" => {
                    let id = form.invite.clone().unwrap_or_default();
                    translations::run_again(&state, &org, &id).await
                }
                other => Err(ApiError::bad_request(format!(
                    "`op`: no translation change `{other}`."
                ))),
            }
        }
    };
    let to = here.clone();
    run_write(&viewer, &here, "Back to the translations", async move {
        run.await.map(|()| to)
    })
    .await
}
