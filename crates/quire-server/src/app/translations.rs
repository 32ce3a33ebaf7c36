//! Translations in the app: an organization's translations of its spaces with their state,
//! and for members with the create role the forms that start one and run it again, through
//! the domain's translation workflow (the API's own); runs happen in background jobs.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::InOrg;
use super::session::{ByOp, Posted, Signed};
use super::shell::{failed, page, run_write};
use crate::domain::access::grants::Grants;
use crate::domain::access::Role;
use crate::domain::translations;
use crate::state::AppState;
use crate::store;

/// Most translations the screen lists.
const SHOWN: i64 = 200;

fn language_select(id: &str, name: &str, selected: &str) -> Markup {
    html! {
        select id=(id) name=(name) {
            @for l in translations::LANGUAGES {
                option value=(l) selected[*l == selected] { (l) }
            }
        }
    }
}

/// `GET /o/{organizationId}/translations` (members: as in the API, guests do not read
/// translations).
pub async fn screen(State(state): State<AppState>, signed: Signed, InOrg(org): InOrg) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
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
                                        input type="hidden" name="translation" value=(t.id);
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
                select id="tr-space" name="space" {
                    @for s in spaces.iter().filter(|s| grants.space_role(s).is_some()) {
                        option value=(s.id) { (s.title) }
                    }
                }
                label for="tr-from" { "From" }
                (language_select("tr-from", "from", "en"))
                label for="tr-to" { "Into" }
                (language_select("tr-to", "into", "fr"))
                button type="submit" { "Translate" }
            }
        }
    };
    page(StatusCode::OK, "Translations", Some(&viewer), None, body)
}

/// The forms of `POST /o/{organizationId}/translations`, by their `op`.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum TranslationForm {
    /// Translates the space `space` from the language `from` into `into`.
    Create {
        space: String,
        from: String,
        into: String,
    },
    /// Runs the translation again.
    Run { translation: String },
}

/// `POST /o/{organizationId}/translations`: `op=create` (space, from, into) or `op=run`.
pub async fn act(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(ByOp(form)): Posted<ByOp<TranslationForm>>,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    let here = format!("/o/{}/translations", org.org.id.as_str());
    let run = {
        let state = state.clone();
        async move {
            match form {
                TranslationForm::Create { space, from, into } => {
                    let new = translations::New {
                        space,
                        source_language: from,
                        language: into,
                        instructions: translations::NO_INSTRUCTIONS.to_string(),
                    };
                    translations::create(&state, &org, &caller, new)
                        .await
                        .map(|_| ())
                }
                TranslationForm::Run { translation } => {
                    translations::run_again(&state, &org, &translation).await
                }
            }
        }
    };
    let to = here.clone();
    run_write(&viewer, &here, "Back to the translations", async move {
        run.await.map(|()| to)
    })
    .await
}
