//! Response bodies of the SAML family, following the official schemas
//! (`OrganizationSAMLProvider`, `OrganizationSSOProviderLogin`).

use serde::Serialize;

use crate::api::views;
use crate::clock::iso;
use crate::domain::saml::service_urls;
use crate::state::AppState;
use crate::store::saml::ProviderRow;
use crate::store::teams::TeamRow;

/// `OrganizationSAMLProvider`; IdP settings not given yet are empty strings.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SamlProvider {
    object: &'static str,
    id: String,
    label: String,
    #[serde(rename = "ssoURL")]
    sso_url: String,
    #[serde(rename = "entityID")]
    entity_id: String,
    certificate: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_team: Option<views::Team>,
    default_role: Option<String>,
    created_at: String,
    status: &'static str,
    service: Service,
    urls: Urls,
}

/// `OrganizationSAMLProvider.service`: Quire's endpoints for the identity provider.
#[derive(Serialize)]
pub struct Service {
    #[serde(rename = "acsURL")]
    acs_url: String,
    #[serde(rename = "startURL")]
    start_url: String,
    #[serde(rename = "entityID")]
    entity_id: String,
}

/// `OrganizationSAMLProvider.urls`.
#[derive(Serialize)]
pub struct Urls {
    location: String,
}

/// The provider as the API shows it, with its default team when it still exists.
pub fn provider(state: &AppState, p: &ProviderRow, team: Option<&TeamRow>) -> SamlProvider {
    let urls = service_urls(state, &p.id);
    SamlProvider {
        object: "saml-provider",
        id: p.id.clone(),
        label: p.label.clone(),
        sso_url: p.sso_url.clone(),
        entity_id: p.entity_id.clone(),
        certificate: p.certificate.clone(),
        default_team: team.map(|t| views::team(t, true)),
        default_role: p.default_role.clone(),
        created_at: iso(p.created_at),
        status: if p.is_active() { "active" } else { "pending" },
        service: Service {
            acs_url: urls.acs,
            start_url: urls.start,
            entity_id: urls.entity_id,
        },
        urls: Urls {
            location: state.url(&format!("/v1/orgs/{}/saml/{}", p.org_id, p.id)),
        },
    }
}

/// `OrganizationSSOProviderLogin`.
#[derive(Serialize)]
pub struct Login {
    id: String,
    label: String,
    #[serde(rename = "startURL")]
    start_url: String,
}

/// A provider's login entry.
pub fn login(state: &AppState, p: &ProviderRow) -> Login {
    Login {
        id: p.id.clone(),
        label: p.label.clone(),
        start_url: service_urls(state, &p.id).start,
    }
}

/// Body of `listSSOProviderLoginsInOrganization`.
#[derive(Serialize)]
pub struct Logins {
    pub items: Vec<Login>,
}
