//! `resolvePublishedContentByUrl` and `getPublishedContentByUrl`.

use crate::http::json::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::auth::Caller;
use crate::domain::content;
use crate::domain::published::{self, Resolution, Scope};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use axum::Extension;

/// `SiteVisitorPayload` (0.202.0: with `type`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Visitor {
    jwt_token: Option<String>,
    unsigned_claims: Option<Value>,
    /// Whether the visitor is a person or an AI agent (`human` when left out). What a site
    /// shows does not depend on it.
    #[serde(rename = "type")]
    #[allow(dead_code)]
    kind: Option<VisitorKind>,
}

/// `SiteVisitorPayload.type`.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum VisitorKind {
    Human,
    Agent,
}

/// Body of `resolvePublishedContentByUrl`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResolveBody {
    url: String,
    /// A visitor-authenticated site answers a visitor without a valid token with a redirect
    /// to its `fallbackURL` (when it has one) instead of 404.
    #[serde(default)]
    redirect_on_error: bool,
    visitor: Option<Visitor>,
}

/// `PublishedSiteContentLookup`: the content, or where to send the visitor.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Lookup {
    /// The `Redirect` branch.
    Redirect(Redirect),
    /// The `PublishedSiteContent` branch.
    Content(Box<PublishedSiteContent>),
}

/// The `Redirect` branch of `PublishedSiteContentLookup`.
#[derive(Serialize)]
pub struct Redirect {
    /// `external`: the fallback URL is the site owner's, outside Quire.
    target: &'static str,
    redirect: String,
}

/// `PublishedSiteContent`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedSiteContent {
    site: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    site_section: Option<String>,
    site_space: String,
    space: String,
    revision: String,
    pathname: String,
    base_path: String,
    site_base_path: String,
    api_token: String,
    organization: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    share_key: Option<String>,
    complete: bool,
    canonical_url: String,
}

/// `resolvePublishedContentByUrl`: the site, section, site space, space and revision a
/// published URL shows to this visitor, with a read-only token scoped to them; 404 when it
/// shows nothing they may read. On a `visitor-auth` site, a visitor without a valid
/// `visitor.jwtToken` gets 404 too (the only error the operation documents, and the answer
/// of an unknown site, so the site's existence does not leak), or with `redirectOnError`
/// the `Redirect` answer to the site's `fallbackURL` when it has one.
pub async fn resolve_published_content_by_url(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<ResolveBody>,
) -> ApiResult<Json<Lookup>> {
    let visitor = body.visitor.unwrap_or_default();
    lookup(&state, &caller, &body.url, body.redirect_on_error, visitor).await
}

/// Query of `getPublishedContentByUrl`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LookupQuery {
    url: String,
    visitor_auth_token: Option<String>,
    #[serde(default)]
    redirect_on_error: bool,
}

/// `getPublishedContentByUrl`: `resolvePublishedContentByUrl` with the URL, the visitor's
/// token and `redirectOnError` in the query.
pub async fn get_published_content_by_url(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryParams(q): QueryParams<LookupQuery>,
) -> ApiResult<Json<Lookup>> {
    let visitor = Visitor {
        jwt_token: q.visitor_auth_token,
        ..Visitor::default()
    };
    lookup(&state, &caller, &q.url, q.redirect_on_error, visitor).await
}

/// What a published URL shows `visitor` (both operations).
async fn lookup(
    state: &AppState,
    caller: &Caller,
    url: &str,
    redirect_on_error: bool,
    visitor: Visitor,
) -> ApiResult<Json<Lookup>> {
    crate::validate::length("url", url, 1, 2048)?;
    if let Some(claims) = &visitor.unsigned_claims {
        if !claims.is_object() {
            return Err(ApiError::bad_request(
                "`visitor.unsignedClaims` must be an object.",
            ));
        }
    }
    let who = published::Visitor {
        jwt_token: visitor.jwt_token.as_deref(),
        unsigned_claims: visitor.unsigned_claims.as_ref(),
    };
    let r = match published::resolve(state, url, who).await? {
        Resolution::Shown(r) => *r,
        Resolution::Unauthenticated { fallback_url } => {
            return match fallback_url.filter(|_| redirect_on_error) {
                Some(url) => Ok(Json(Lookup::Redirect(Redirect {
                    target: "external",
                    redirect: url,
                }))),
                None => Err(ApiError::not_found(format!(
                    "No published content at `{url}`."
                ))),
            };
        }
    };
    // The token's visitor: only the claims that the site's conditions (its structure, the
    // revision's pages and blocks) read, so that claims nothing reads make no new scope.
    let row = content::revision_row(state, &r.site_space.space_id, &r.space_revision)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("published revision is missing")))?;
    let rev = content::load_in(state, &r.site_space.space_id, &row.root).await?;
    let mut reads = (*r.site_reads).clone();
    reads.extend(
        published::revision_reads(state, &row.root, &rev, true)
            .iter()
            .cloned(),
    );
    let scope = Scope {
        org: r.site.org_id.clone(),
        site: r.site.id.clone(),
        site_space: r.site_space.id.clone(),
        space: r.site_space.space_id.clone(),
        revision: r.space_revision.clone(),
        share_key: r.share_key.clone(),
        visitor: quire_content::condition::project(&r.visitor, &reads),
        visitor_auth: r.visitor_until.zip(r.key_digest.clone()),
    };
    let api_token = published::issue(state, &caller.user.id, &scope).await?;
    // The paths from the host's root, and the canonical URL on the site's own address
    // when the URL was one (`crate::hosts`).
    let canonical_url = format!("{}{}{}", r.url_root, r.base_path, r.pathname);
    Ok(Json(Lookup::Content(Box::new(PublishedSiteContent {
        site: r.site.id.clone(),
        site_section: r.section.map(|s| s.id),
        site_space: r.site_space.id.clone(),
        space: r.site_space.space_id.clone(),
        revision: r.space_revision,
        pathname: r.pathname,
        base_path: format!("{}{}", r.path_root, r.base_path),
        site_base_path: format!("{}{}", r.path_root, r.site_base_path),
        api_token,
        organization: r.site.org_id,
        share_key: r.share_key,
        complete: r.complete,
        canonical_url,
    }))))
}
