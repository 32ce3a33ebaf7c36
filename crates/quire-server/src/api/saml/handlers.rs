//! SAML providers: `ORG/saml`, `ORG/saml/{samlProviderId}` and `ORG/sso`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use serde::Deserialize;

use super::types::{self, Logins, SamlProvider};
use crate::domain::access::{OrgCtx, Role};
use crate::domain::saml::parse_certificate;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::ids::{new_id, OrgId};
use crate::state::AppState;
use crate::store;
use crate::store::saml::{ProviderChanges, ProviderRow};
use crate::validate::{self, nullable};

/// Most providers one organization may have.
const MAX_PROVIDERS: i64 = 100;

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
    validate::length("label", &body.label, 1, 30)?;
    let entity_id = check_entity_id(body.entity_id)?;
    let sso_url = check_sso_url(body.sso_url)?.ok_or_else(|| {
        ApiError::bad_request("`ssoURL` is required: the identity provider's sign-in URL.")
    })?;
    let certificate = check_certificate(body.certificate)?;
    let now = state.now();
    let row = ProviderRow {
        id: new_id(),
        org_id: ctx.org.id.to_string(),
        label: body.label,
        entity_id: entity_id.unwrap_or_default(),
        sso_url,
        certificate: certificate.unwrap_or_default(),
        default_team: None,
        default_role: match body.default_role {
            Some(role) => role.map(|r| r.as_str().to_string()),
            None => ctx.org.default_role.clone(),
        },
        created_at: now,
        updated_at: now,
    };
    let mut tx = state.db.begin().await?;
    let default_team = match body.default_team {
        Some(team) => Some(check_team(&mut tx, &ctx, team).await?),
        None => None,
    };
    let row = ProviderRow {
        default_team,
        ..row
    };
    if store::saml::count(&mut tx, ctx.org.id.as_str()).await? >= MAX_PROVIDERS {
        return Err(ApiError::bad_request(format!(
            "An organization can have at most {MAX_PROVIDERS} SAML providers."
        )));
    }
    store::saml::insert(&mut tx, &row).await?;
    tx.commit().await?;
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
        entity_id: check_entity_id(body.entity_id)?,
        sso_url: check_sso_url(body.sso_url)?,
        certificate: check_certificate(body.certificate)?,
        default_team: None,
        default_role: body.default_role.map(|r| r.map(|r| r.as_str().to_string())),
    };
    let mut tx = state.db.begin().await?;
    changes.default_team = match body.default_team {
        Some(Some(team)) => Some(Some(check_team(&mut tx, &ctx, team).await?)),
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
    if store::saml::delete(&state.db, ctx.org.id.as_str(), &id).await? {
        tracing::info!(provider = %id, org = %ctx.org.id, "SAML provider deleted");
    }
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

/// The identity provider's entity id: an absolute URI (a URL or a URN).
fn check_entity_id(value: Option<String>) -> ApiResult<Option<String>> {
    let Some(value) = value else { return Ok(None) };
    let ok = !value.is_empty()
        && value.len() <= 1024
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
        && url::Url::parse(&value).is_ok();
    if ok {
        Ok(Some(value))
    } else {
        Err(ApiError::bad_request(
            "`entityID` must be an absolute URI (a URL or a URN) of at most 1024 characters.",
        ))
    }
}

fn check_sso_url(value: Option<String>) -> ApiResult<Option<String>> {
    let Some(value) = value else { return Ok(None) };
    validate::url("ssoURL", &value)?;
    url::Url::parse(&value)
        .map_err(|_| ApiError::bad_request("`ssoURL` must be an absolute http(s) URL."))?;
    Ok(Some(value))
}

fn check_certificate(value: Option<String>) -> ApiResult<Option<String>> {
    let Some(value) = value else { return Ok(None) };
    if value.len() > 10_000 {
        return Err(ApiError::bad_request(
            "`certificate` must be at most 10000 characters.",
        ));
    }
    parse_certificate(&value)
        .map_err(|why| ApiError::bad_request(format!("`certificate` {why}.")))?;
    Ok(Some(value.trim().to_string()))
}

async fn check_team(tx: &mut crate::db::Tx, ctx: &OrgCtx, team: String) -> ApiResult<String> {
    match store::teams::get_tx(tx, ctx.org.id.as_str(), &team).await? {
        Some(row) => Ok(row.id),
        None => Err(ApiError::bad_request(format!(
            "`defaultTeam`: `{team}` is not a team of this organization."
        ))),
    }
}
