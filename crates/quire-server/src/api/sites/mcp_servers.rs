//! `SITE/mcp-servers`: the outside MCP servers a site names (`SiteMcpServer`: a name, a URL
//! and the headers sent to it). Their headers usually hold credentials, so every operation is
//! the site admins'. Quire stores them and calls none of them: in GitBook they are tools for
//! its hosted assistant, which Quire does not have; the MCP server Quire serves per site
//! space (`web/mcp.rs`) is not one of them.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use serde::{Deserialize, Serialize};

use crate::api::views;
use crate::domain::access::{OrgCtx, SiteCtx};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::site_settings::{McpServerPatch, McpServerRow, MAX_PER_SITE};

/// The most MCP servers one site names.
const MAX_SERVERS: i64 = 50;
/// The most headers one server is sent.
const MAX_HEADERS: usize = 32;

/// `SiteMcpServer`.
#[derive(Serialize)]
pub struct SiteMcpServer {
    object: &'static str,
    id: String,
    name: String,
    url: String,
    headers: BTreeMap<String, String>,
    urls: Location,
}

/// `SiteMcpServer.urls`.
#[derive(Serialize)]
pub struct Location {
    location: String,
}

fn view(state: &AppState, org: &OrgCtx, row: &McpServerRow) -> ApiResult<SiteMcpServer> {
    Ok(SiteMcpServer {
        object: "site-mcp-server",
        id: row.id.clone(),
        name: row.name.clone(),
        url: row.url.clone(),
        headers: serde_json::from_str(&row.headers).map_err(ApiError::internal)?,
        urls: Location {
            location: state.url(&format!(
                "/v1/orgs/{}/sites/{}/mcp-servers/{}",
                org.org.id, row.site_id, row.id
            )),
        },
    })
}

fn check_name(name: &str) -> ApiResult<()> {
    crate::validate::length("name", name, 1, 100)
}

/// Checks the headers (names are HTTP tokens, values 1 to 512 visible characters) and
/// answers them as stored.
fn check_headers(headers: &BTreeMap<String, String>) -> ApiResult<String> {
    if headers.len() > MAX_HEADERS {
        return Err(ApiError::bad_request(format!(
            "`headers` holds at most {MAX_HEADERS} headers."
        )));
    }
    for (name, value) in headers {
        let token = !name.is_empty()
            && name.len() <= 128
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(ApiError::bad_request(format!(
                "`headers`: `{name}` is not a valid HTTP header name."
            )));
        }
        crate::validate::length(&format!("headers.{name}"), value, 1, 512)?;
        if value.chars().any(|c| c.is_control()) {
            return Err(ApiError::bad_request(format!(
                "`headers.{name}` must not hold control characters."
            )));
        }
    }
    serde_json::to_string(headers).map_err(ApiError::internal)
}

/// `listSiteMcpServers`, oldest first.
pub async fn list_site_mcp_servers(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<SiteMcpServer>>> {
    let scope = format!("mcp-servers:{}", ctx.site.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let limit = page.fetch_limit().min(MAX_PER_SITE);
    let (rows, count) =
        store::site_settings::list_mcp_servers(&state.db, &ctx.site.id, after, limit).await?;
    let rows = rows
        .into_iter()
        .map(|row| Ok((view(&state, &org, &row)?, (row.created_at, row.id))))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Body of `createSiteMcpServer`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateMcpServer {
    name: String,
    url: String,
    headers: BTreeMap<String, String>,
}

/// `createSiteMcpServer`: 201 with the new server.
pub async fn create_site_mcp_server(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<CreateMcpServer>,
) -> ApiResult<Response> {
    check_name(&body.name)?;
    crate::validate::url("url", &body.url)?;
    let headers = check_headers(&body.headers)?;
    let row = McpServerRow {
        id: new_id(),
        site_id: ctx.site.id.clone(),
        name: body.name,
        url: body.url,
        headers,
        created_at: state.now(),
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(&ctx.site.id)]);
    // The site's row taken first: two creations racing count each other.
    store::sites::lock(&mut tx, &org.org.id, &ctx.site.id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Site `{}` not found.", ctx.site.id)))?;
    if store::site_settings::count_mcp_servers(&mut tx, &ctx.site.id).await? >= MAX_SERVERS {
        return Err(ApiError::bad_request(format!(
            "A site names at most {MAX_SERVERS} MCP servers."
        )));
    }
    store::site_settings::insert_mcp_server(&mut tx, &row).await?;
    tx.commit().await?;
    let body = view(&state, &org, &row)?;
    Ok(views::created(&body.urls.location.clone(), body))
}

/// `getSiteMcpServerById`.
pub async fn get_site_mcp_server(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<Json<SiteMcpServer>> {
    let row = store::site_settings::mcp_server(&state.db, &ctx.site.id, &id)
        .await?
        .ok_or_else(|| no_such(&id))?;
    Ok(Json(view(&state, &org, &row)?))
}

fn no_such(id: &str) -> ApiError {
    ApiError::not_found(format!("MCP server `{id}` not found."))
}

/// Body of `updateSiteMcpServerById`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateMcpServer {
    name: Option<String>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
}

/// `updateSiteMcpServerById`: what the body names, the rest as it was (`headers` whole).
pub async fn update_site_mcp_server(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<UpdateMcpServer>,
) -> ApiResult<Json<SiteMcpServer>> {
    if let Some(name) = &body.name {
        check_name(name)?;
    }
    if let Some(url) = &body.url {
        crate::validate::url("url", url)?;
    }
    let patch = McpServerPatch {
        headers: body.headers.as_ref().map(check_headers).transpose()?,
        name: body.name,
        url: body.url,
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(&ctx.site.id)]);
    if !store::site_settings::patch_mcp_server(&mut tx, &ctx.site.id, &id, &patch).await? {
        return Err(no_such(&id));
    }
    let row = store::site_settings::mcp_server_tx(&mut tx, &ctx.site.id, &id)
        .await?
        .ok_or_else(|| no_such(&id))?;
    tx.commit().await?;
    Ok(Json(view(&state, &org, &row)?))
}

/// `deleteSiteMcpServerById`: 205 when it was deleted, 204 when it did not exist.
pub async fn delete_site_mcp_server(
    State(state): State<AppState>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    let Some(Extension(ctx)) = ctx else {
        return Ok(StatusCode::NO_CONTENT);
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(&ctx.site.id)]);
    let deleted = store::site_settings::delete_mcp_server(&mut tx, &ctx.site.id, &id).await?;
    tx.commit().await?;
    Ok(if deleted {
        StatusCode::RESET_CONTENT
    } else {
        StatusCode::NO_CONTENT
    })
}
