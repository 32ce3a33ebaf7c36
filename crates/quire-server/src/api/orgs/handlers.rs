//! Organizations: `/v1/orgs`, `ORG`, `/v1/email-domains/{emailDomain}/orgs`.

use axum::extract::{Path, State};
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::views;
use crate::domain::access::{OrgCtx, Role};
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{nullable, JsonBody};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::validate;

/// `listOrganizationsForAuthenticatedUser`; a token confined to one organization lists that
/// one alone.
pub async fn list_organizations(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    page: PageRequest,
) -> ApiResult<Json<List<views::Organization>>> {
    let scope = "orgs";
    let after = page.after::<(i64, String)>(scope)?;
    if let Some(org_id) = &caller.scope {
        let only = match crate::domain::access::load_org(&state, &caller, org_id).await {
            Ok(ctx) => Some(ctx),
            Err(ApiError::NotFound(_)) => None,
            Err(other) => return Err(other),
        };
        let count = i64::from(only.is_some());
        let rows = only
            .filter(|_| after.is_none())
            .map(|ctx| {
                let key = (ctx.org.created_at, ctx.org.id.to_string());
                Ok((views::organization(&state, &ctx.org, ctx.role)?, key))
            })
            .into_iter()
            .collect::<ApiResult<Vec<_>>>()?;
        return Ok(Json(page.finish(scope, rows, count)?));
    }
    let (rows, count) =
        store::orgs::list_for_user(&state.db, &caller.user.id, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|o| {
            let key = (o.org.created_at, o.org.id.clone());
            let role = o.role.as_deref().and_then(Role::parse);
            Ok((views::organization(&state, &o.org, role)?, key))
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(page.finish(scope, rows, count)?))
}

/// Body of `createOrganization`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateOrganization {
    title: String,
    email_domains: Option<Vec<String>>,
}

/// `createOrganization`: the caller becomes its first admin.
pub async fn create_organization(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<CreateOrganization>,
) -> ApiResult<axum::response::Response> {
    let org = crate::domain::orgs::create(
        &state,
        &caller,
        body.title,
        body.email_domains.unwrap_or_default(),
    )
    .await?;
    let location = state.url(&format!("/v1/orgs/{}", org.id));
    Ok(views::created(
        &location,
        views::organization(&state, &org, Some(Role::Admin))?,
    ))
}

/// `getOrganizationById`.
pub async fn get_organization(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
) -> ApiResult<Json<views::Organization>> {
    Ok(Json(views::organization(&state, &org.org, org.role)?))
}

/// Body of `updateOrganizationById`; every field optional.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateOrganization {
    title: Option<String>,
    hostname: Option<String>,
    email_domains: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    default_role: Option<Option<Role>>,
    #[serde(default, deserialize_with = "nullable")]
    default_content: Option<Option<DefaultContent>>,
    #[serde(default, deserialize_with = "nullable")]
    logo: Option<Option<String>>,
    sso: Option<bool>,
    ai: Option<bool>,
    invite_links: Option<bool>,
}

/// `SitePointer`.
#[derive(Deserialize, serde::Serialize)]
pub struct DefaultContent {
    #[serde(rename = "type")]
    kind: SitePointerType,
    site: String,
}

#[derive(Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum SitePointerType {
    Site,
}

/// `updateOrganizationById` (admins only).
pub async fn update_organization(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<OrgCtx>,
    JsonBody(body): JsonBody<UpdateOrganization>,
) -> ApiResult<Json<views::Organization>> {
    let mut patch = store::orgs::OrgPatch::default();
    if let Some(title) = body.title {
        validate::length("title", &title, 2, 255)?;
        patch.title = Some(title);
    }
    if let Some(hostname) = body.hostname {
        let hostname = hostname.to_lowercase();
        validate::length("hostname", &hostname, 3, 32)?;
        if !hostname
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            || hostname.starts_with('-')
            || hostname.ends_with('-')
        {
            return Err(ApiError::bad_request(
                "`hostname` may hold only lower-case letters, digits and inner hyphens.",
            ));
        }
        patch.hostname = Some(hostname);
    }
    if let Some(domains) = body.email_domains {
        patch.email_domains = Some(crate::domain::orgs::check_domains(
            domains,
            &caller,
            &ctx.org.domains().map_err(ApiError::internal)?,
        )?);
    }
    if let Some(role) = body.default_role {
        patch.default_role = Some(role.map(|r| r.as_str().to_string()));
    }
    if let Some(content) = body.default_content {
        patch.default_content = Some(
            content
                .map(|c| serde_json::to_string(&c))
                .transpose()
                .map_err(ApiError::internal)?,
        );
    }
    if let Some(logo) = body.logo {
        if let Some(url) = &logo {
            validate::url("logo", url)?;
        }
        patch.logo_url = Some(logo);
    }
    patch.sso = body.sso;
    patch.ai = body.ai;
    patch.invite_links = body.invite_links;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(ctx.org.id.as_str())]);
    let written = store::orgs::patch(&mut tx, ctx.org.id.as_str(), &patch, state.now())
        .await
        .map_err(|e| match ApiError::from(e) {
            ApiError::Conflict(_) => {
                ApiError::conflict("`hostname` is already used by another organization.")
            }
            other => other,
        })?;
    // The organization as it now is, other requests' writes included.
    let org = if written {
        store::orgs::get_tx(&mut tx, ctx.org.id.as_str()).await?
    } else {
        None
    }
    .ok_or_else(|| ApiError::not_found("Organization not found."))?;
    tx.commit().await?;
    Ok(Json(views::organization(&state, &org, ctx.role)?))
}

/// `getOrganizationsForEmailDomain`: organizations claiming the domain, as far as the
/// caller may know them: those they belong to, and all of them when it is their own
/// e-mail domain.
pub async fn list_organizations_for_email_domain(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(domain): Path<String>,
) -> ApiResult<Json<Value>> {
    let domain = domain.to_lowercase();
    let own_domain = caller
        .user
        .email
        .rsplit_once('@')
        .is_some_and(|(_, d)| d == domain);
    let orgs = store::orgs::by_domain(&state.db, &domain, &caller.user.id)
        .await?
        .into_iter()
        .filter(|o| own_domain || o.member_id.is_some())
        .filter(|o| caller.reaches(o.org.id.as_str()))
        .map(|o| {
            let role = o.role.as_deref().and_then(Role::parse);
            let mut v = views::organization(&state, &o.org, role)?;
            if o.member_id.is_none() {
                // Listed because of the shared domain, not membership: they may do nothing yet.
                v.permissions = views::OrgPermissions::nothing();
            }
            Ok(v)
        })
        .collect::<ApiResult<Vec<views::Organization>>>()?;
    Ok(Json(json!({ "organizations": orgs })))
}
