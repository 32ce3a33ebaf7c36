//! SAML providers: `ORG/saml`, `ORG/saml/{samlProviderId}` and `ORG/sso`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use serde::Deserialize;

use super::types::{self, Logins, SamlProvider};
use crate::domain::access::{OrgCtx, Role};
use crate::domain::saml::providers::{self, MAX_PROVIDERS};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::ids::OrgId;
use crate::state::AppState;
use crate::store;
use crate::store::saml::{ProviderChanges, ProviderRow};
use crate::validate::{self, nullable};

/// `listSAMLProvidersInOrganizationById` (admins).
pub async fn list_providers(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<SamlProvider>>> {
    let scope = format!("saml:{}", ctx.org.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::saml::list(&state.db, ctx.org.id.as_str(), after, page.fetch_limit()).await?;
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        let key = (row.created_at, row.id.clone());
        items.push((provider_body(&state, &row).await?, key));
    }
    Ok(Json(page.finish(&scope, items, count)?))
}

/// Body of `createOrganizationSAMLProvider`: `label` and `ssoURL` are required (every answer
/// shows `ssoURL`, which the official schema requires to be a URI); a provider without
/// `entityID` or `certificate` is `pending`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateProvider {
    label: String,
    #[serde(rename = "entityID")]
    entity_id: Option<String>,
    certificate: Option<String>,
    #[serde(rename = "ssoURL")]
    sso_url: Option<String>,
    default_team: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    default_role: Option<Option<Role>>,
}

/// `createOrganizationSAMLProvider` (admins): 201 with the provider. Without `defaultRole`
/// new members join with the organization's default role.
pub async fn create_provider(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    JsonBody(body): JsonBody<CreateProvider>,
) -> ApiResult<axum::response::Response> {
    let new = providers::NewProvider {
        label: body.label,
        entity_id: body.entity_id,
        certificate: body.certificate,
        sso_url: body.sso_url,
        default_team: body.default_team,
        default_role: body.default_role,
    };
    let row = providers::create(&state, &ctx, new).await?;
    let location = state.url(&format!("/v1/orgs/{}/saml/{}", row.org_id, row.id));
    Ok(crate::api::views::created(
        &location,
        provider_body(&state, &row).await?,
    ))
}

/// `getOrganizationSAMLProviderById` (admins).
pub async fn get_provider(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<SamlProvider>> {
    let row = load(&state, &ctx, &id).await?;
    Ok(Json(provider_body(&state, &row).await?))
}

/// Body of `updateOrganizationSAMLProvider`; absent fields stay as they are.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateProvider {
    label: Option<String>,
    #[serde(rename = "entityID")]
    entity_id: Option<String>,
    certificate: Option<String>,
    #[serde(rename = "ssoURL")]
    sso_url: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    default_team: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    default_role: Option<Option<Role>>,
}

/// `updateOrganizationSAMLProvider` (admins): writes only the fields given.
pub async fn update_provider(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
    JsonBody(body): JsonBody<UpdateProvider>,
) -> ApiResult<Json<SamlProvider>> {
    if let Some(label) = &body.label {
        validate::length("label", label, 1, 30)?;
    }
    let mut changes = ProviderChanges {
        label: body.label,
        entity_id: providers::check_entity_id(body.entity_id)?,
        sso_url: providers::check_sso_url(body.sso_url)?,
        certificate: providers::check_certificate(body.certificate)?,
        default_team: None,
        default_role: body.default_role.map(|r| r.map(|r| r.as_str().to_string())),
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(ctx.org.id.as_str())]);
    changes.default_team = match body.default_team {
        Some(Some(team)) => Some(Some(providers::check_team(&mut tx, &ctx, team).await?)),
        Some(None) => Some(None),
        None => None,
    };
    let now = state.now();
    if !store::saml::update(&mut tx, ctx.org.id.as_str(), &id, &changes, now).await? {
        return Err(not_found(&id));
    }
    tx.commit().await?;
    let row = load(&state, &ctx, &id).await?;
    Ok(Json(provider_body(&state, &row).await?))
}

/// `deleteOrganizationSAMLProvider` (admins): 204, also when absent. Pending logins of the
/// provider and the sessions it opened end with it.
pub async fn delete_provider(
    State(state): State<AppState>,
    Extension(ctx): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    providers::delete(&state, &ctx, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `listSSOProviderLoginsInOrganization` (public): the organization's active providers.
pub async fn list_logins(
    State(state): State<AppState>,
    Path(org_id): Path<String>,
) -> ApiResult<Json<Logins>> {
    let org = store::orgs::get(&state.db, &OrgId::new(org_id.clone()))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Organization `{org_id}` not found.")))?;
    let rows = store::saml::list_all(&state.db, org.id.as_str(), MAX_PROVIDERS).await?;
    let items = rows
        .iter()
        .filter(|p| p.is_active())
        .map(|p| types::login(&state, p))
        .collect();
    Ok(Json(Logins { items }))
}

async fn load(state: &AppState, ctx: &OrgCtx, id: &str) -> ApiResult<ProviderRow> {
    store::saml::get(&state.db, ctx.org.id.as_str(), id)
        .await?
        .ok_or_else(|| not_found(id))
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("SAML provider `{id}` not found."))
}

/// The provider's response body, with its default team when that still exists.
async fn provider_body(state: &AppState, row: &ProviderRow) -> ApiResult<SamlProvider> {
    let team = match &row.default_team {
        Some(team) => store::teams::get(&state.db, &row.org_id, team).await?,
        None => None,
    };
    Ok(types::provider(state, row, team.as_ref()))
}
