//! Single sign-on in the app, for organization admins: the organization's SAML providers,
//! what to give the identity provider (Quire's metadata and sign-in response addresses),
//! and the forms that add and remove providers, through the domain's provider workflows
//! (the API's own).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use serde::Deserialize;

use super::routes::InOrg;
use super::session::{Posted, Signed};
use super::shell::{failed, page, run_write};
use crate::domain::saml::providers::{self, NewProvider, MAX_PROVIDERS};
use crate::domain::saml::service_urls;
use crate::error::ApiError;
use crate::state::AppState;
use crate::store;

/// `GET /o/{organizationId}/sso` (admins).
pub async fn screen(State(state): State<AppState>, signed: Signed, InOrg(org): InOrg) -> Response {
    let viewer = signed.viewer();
    let list = match store::saml::list_all(&state.db, org.org.id.as_str(), MAX_PROVIDERS).await {
        Ok(l) => l,
        Err(e) => return failed(e),
    };
    let oid = org.org.id.as_str();
    let csrf = html! { input type="hidden" name="csrf" value=(viewer.csrf); };
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" {
            ol { li { a href={ "/o/" (oid) } { (org.org.title) } } }
        }
        h1 { "Single sign-on" }
        @if list.is_empty() {
            p.muted { "No SAML provider yet." }
        }
        @for p in &list {
            @let urls = service_urls(&state, &p.id);
            section.provider aria-labelledby={ "p-" (p.id) } {
                h2 id={ "p-" (p.id) } {
                    (p.label) " "
                    span.muted {
                        (if p.is_active() { "active" } else { "pending: needs its entity ID and certificate" })
                    }
                }
                dl {
                    dt { "Quire's metadata (entity ID)" }
                    dd { code { (urls.entity_id) } }
                    dt { "Sign-in response address (ACS)" }
                    dd { code { (urls.acs) } }
                    dt { "Where members sign in" }
                    dd { code { (urls.start) } }
                    dt { "Identity provider" }
                    dd { (if p.entity_id.is_empty() { "not set" } else { &p.entity_id }) }
                }
                form method="post" action={ "/o/" (oid) "/sso" } {
                    (csrf)
                    input type="hidden" name="op" value="delete";
                    input type="hidden" name="provider" value=(p.id);
                    button.danger type="submit" { "Remove this provider" }
                }
            }
        }
        h2 { "Add a SAML provider" }
        form method="post" action={ "/o/" (oid) "/sso" } {
            (csrf)
            input type="hidden" name="op" value="create";
            label for="sso-label" { "Name shown to members" }
            input #sso-label name="label" type="text" required maxlength="30";
            label for="sso-url" { "The identity provider's sign-in URL" }
            input #sso-url name="ssoURL" type="url" required;
            label for="sso-entity" { "Its entity ID" }
            input #sso-entity name="entityID" type="text";
            label for="sso-cert" { "Its signing certificate (PEM)" }
            textarea #sso-cert name="certificate" rows="5" {}
            button type="submit" { "Add" }
        }
    };
    page(StatusCode::OK, "Single sign-on", Some(&viewer), None, body)
}

/// The form of `POST /o/{organizationId}/sso`, named as the API's provider fields.
#[derive(Deserialize)]
pub struct ProviderForm {
    op: String,
    #[serde(default)]
    label: String,
    #[serde(rename = "ssoURL")]
    sso_url: Option<String>,
    #[serde(rename = "entityID")]
    entity_id: Option<String>,
    certificate: Option<String>,
    /// The provider `op=delete` removes.
    provider: Option<String>,
}

/// `POST /o/{organizationId}/sso`: `op=create` or `op=delete` (admins).
pub async fn act(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(form): Posted<ProviderForm>,
) -> Response {
    let here = format!("/o/{}/sso", org.org.id);
    let viewer = signed.viewer();
    let given = |v: &Option<String>| {
        v.clone()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    };
    let run = {
        let state = state.clone();
        async move {
            match form.op.as_str() {
                "create" => {
                    let new = NewProvider {
                        label: form.label.trim().to_string(),
                        sso_url: given(&form.sso_url),
                        entity_id: given(&form.entity_id),
                        certificate: given(&form.certificate),
                        default_team: None,
                        default_role: None,
                    };
                    providers::create(&state, &org, new).await.map(|_| ())
                }
                "delete" => {
                    let id = form.provider.clone().unwrap_or_default();
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
