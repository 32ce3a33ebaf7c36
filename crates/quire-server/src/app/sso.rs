//! Single sign-on in the app, for organization admins: the organization's SAML providers,
//! what to give the identity provider (Quire's metadata and sign-in response addresses),
//! and the forms that add and remove providers, through the domain's provider workflows
//! (the API's own).

use std::fmt::Write as _;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use quire_content::html::{escape_attr as attr, escape_text as text};

use super::session;
use super::shell::{failed, no_org, not_found, org_for, page, run_write};
use crate::domain::access::{self, OrgCtx};
use crate::domain::saml::providers::{self, NewProvider, MAX_PROVIDERS};
use crate::domain::saml::service_urls;
use crate::error::ApiError;
use crate::ids::OrgId;
use crate::state::AppState;
use crate::store;

async fn admin_org(state: &AppState, signed: &session::Signed, org_id: &str) -> Option<OrgCtx> {
    let org = access::load_org(state, &signed.caller(), &OrgId::new(org_id.to_string()))
        .await
        .ok()?;
    org.is_admin().then_some(org)
}

/// `GET /o/{organizationId}/sso` (admins).
pub async fn screen(
    State(state): State<AppState>,
    Path(org_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let here = format!("/o/{org_id}/sso");
    let signed = match session::require(&state, &headers, &here).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let viewer = signed.viewer();
    let Some(org) = admin_org(&state, &signed, &org_id).await else {
        return not_found(
            Some(&viewer),
            "Single sign-on is configured by the organization's admins.",
        );
    };
    let list = match store::saml::list_all(&state.db, org.org.id.as_str(), MAX_PROVIDERS).await {
        Ok(l) => l,
        Err(e) => return failed(e),
    };
    let oid = attr(org.org.id.as_str());
    let hidden = format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        attr(viewer.csrf)
    );
    let mut body = format!(
        "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><ol><li><a href=\"/o/{oid}\">{}</a></li></ol></nav><h1>Single sign-on</h1>",
        text(&org.org.title)
    );
    if list.is_empty() {
        body.push_str("<p class=\"muted\">No SAML provider yet.</p>");
    }
    for p in &list {
        let urls = service_urls(&state, &p.id);
        let _ = write!(
            body,
            "<section class=\"provider\" aria-labelledby=\"p-{pid}\"><h2 id=\"p-{pid}\">{} <span class=\"muted\">{}</span></h2>\
<dl><dt>Quire's metadata (entity ID)</dt><dd><code>{}</code></dd><dt>Sign-in response address (ACS)</dt><dd><code>{}</code></dd>\
<dt>Where members sign in</dt><dd><code>{}</code></dd><dt>Identity provider</dt><dd>{}</dd></dl>\
<form method=\"post\" action=\"/o/{oid}/sso\">{hidden}<input type=\"hidden\" name=\"op\" value=\"delete\"><input type=\"hidden\" name=\"invite\" value=\"{pid}\"><button type=\"submit\" class=\"danger\">Remove this provider</button></form></section>",
            text(&p.label),
            if p.is_active() { "active" } else { "pending: needs its entity ID and certificate" },
            text(&urls.entity_id),
            text(&urls.acs),
            text(&urls.start),
            text(if p.entity_id.is_empty() { "not set" } else { &p.entity_id }),
            pid = attr(&p.id),
        );
    }
    let _ = write!(
        body,
        "<h2>Add a SAML provider</h2><form method=\"post\" action=\"/o/{oid}/sso\">{hidden}<input type=\"hidden\" name=\"op\" value=\"create\">\
<label for=\"sso-label\">Name shown to members</label><input id=\"sso-label\" name=\"subject\" type=\"text\" required maxlength=\"30\">\
<label for=\"sso-url\">The identity provider's sign-in URL</label><input id=\"sso-url\" name=\"emoji\" type=\"url\" required>\
<label for=\"sso-entity\">Its entity ID</label><input id=\"sso-entity\" name=\"parent\" type=\"text\">\
<label for=\"sso-cert\">Its signing certificate (PEM)</label><textarea id=\"sso-cert\" name=\"body\" rows=\"5\"></textarea>\
<button type=\"submit\">Add</button></form>"
    );
    page(StatusCode::OK, "Single sign-on", Some(&viewer), "", &body)
}

/// `POST /o/{organizationId}/sso`: `op=create` or `op=delete` (admins).
pub async fn act(
    State(state): State<AppState>,
    Path(org_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let here = format!("/o/{org_id}/sso");
    let (signed, form) = match session::signed_form(&state, &headers, &here, body).await {
        Ok(signed_form) => signed_form,
        Err(res) => return res,
    };
    let viewer = signed.viewer();
    let caller = signed.caller();
    let Some(org) = org_for(&state, &caller, &org_id).await else {
        return no_org(&viewer);
    };
    let given = |v: &Option<String>| {
        v.clone()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    };
    let run = {
        let state = state.clone();
        async move {
            match form.op.as_deref().unwrap_or("") {
                "create" => {
                    let new = NewProvider {
                        label: form.subject.clone().unwrap_or_default().trim().to_string(),
                        sso_url: given(&form.emoji),
                        entity_id: given(&form.parent),
                        certificate: given(&form.body),
                        default_team: None,
                        default_role: None,
                    };
                    providers::create(&state, &org, new).await.map(|_| ())
                }
                "delete" => {
                    let id = form.invite.clone().unwrap_or_default();
                    providers::delete(&state, &org, &id).await
                }
                other => Err(ApiError::bad_request(format!(
                    "`op`: no single sign-on change `{other}`."
                ))),
            }
        }
    };
    let to = here.clone();
    run_write(&viewer, &here, "Back to single sign-on", async move {
        run.await.map(|()| to)
    })
    .await
}
