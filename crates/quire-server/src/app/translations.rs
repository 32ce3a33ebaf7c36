//! Translations in the app: an organization's translations of its spaces with their state,
//! and for members with the create role the forms that start one and run it again, through
//! the domain's translation workflow (the API's own); runs happen in background jobs.

use std::fmt::Write as _;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use quire_content::html::{escape_attr as attr, escape_text as text};

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

fn language_select(id: &str, name: &str, selected: &str) -> String {
    let mut out = format!("<select id=\"{id}\" name=\"{name}\">");
    for l in translations::LANGUAGES {
        let _ = write!(
            out,
            "<option value=\"{l}\"{}>{l}</option>",
            if *l == selected { " selected" } else { "" }
        );
    }
    out.push_str("</select>");
    out
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
    let oid = attr(org.org.id.as_str());
    let csrf = attr(viewer.csrf);
    let may = org.role.is_some_and(|r| r >= Role::Create);
    let mut body = format!(
        "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><ol><li><a href=\"/o/{oid}\">{}</a></li></ol></nav><h1>Translations</h1>",
        text(&org.org.title)
    );
    if list.is_empty() {
        body.push_str("<p class=\"muted\">No translation yet.</p>");
    } else {
        body.push_str("<table><thead><tr><th scope=\"col\">Space</th><th scope=\"col\">Languages</th><th scope=\"col\">State</th><th scope=\"col\">Result</th></tr></thead><tbody>");
        for t in &list {
            let result = match &t.result_space {
                Some(s) => format!("<a href=\"/s/{}\">{}</a>", attr(s), text(&title_of(s))),
                None => "<span class=\"muted\">none yet</span>".into(),
            };
            let _ = write!(
                body,
                "<tr data-translation=\"{}\"><td>{}</td><td>{} → {}</td><td>{}{}</td><td>{result}",
                attr(&t.id),
                text(&title_of(&t.source_space)),
                text(&t.source_language),
                text(&t.language),
                text(&t.status),
                t.failure
                    .as_deref()
                    .map(|f| format!("<br><span class=\"error-text\">{}</span>", text(f)))
                    .unwrap_or_default()
            );
            if may {
                let _ = write!(
                    body,
                    " <form method=\"post\" action=\"/o/{oid}/translations\" class=\"inline\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"op\" value=\"run\"><input type=\"hidden\" name=\"invite\" value=\"{}\"><button type=\"submit\">Run again</button></form>",
                    attr(&t.id)
                );
            }
            body.push_str("</td></tr>");
        }
        body.push_str("</tbody></table>");
    }
    if may {
        let readable: Vec<_> = spaces
            .iter()
            .filter(|s| grants.space_role(s).is_some())
            .collect();
        let _ = write!(
            body,
            "<h2>New translation</h2><form method=\"post\" action=\"/o/{oid}/translations\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"op\" value=\"create\">\
<label for=\"tr-space\">Space</label><select id=\"tr-space\" name=\"parent\">"
        );
        for s in readable {
            let _ = write!(
                body,
                "<option value=\"{}\">{}</option>",
                attr(&s.id),
                text(&s.title)
            );
        }
        let _ = write!(
            body,
            "</select><label for=\"tr-from\">From</label>{}<label for=\"tr-to\">Into</label>{}<button type=\"submit\">Translate</button></form>",
            language_select("tr-from", "status", "en"),
            language_select("tr-to", "role", "fr")
        );
    }
    page(StatusCode::OK, "Translations", Some(&viewer), "", &body)
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
