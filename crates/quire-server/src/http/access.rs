//! Applies each operation's [`Access`]: authenticates the caller, loads the resources named
//! by the path, and answers 404 when the caller may not see them (existence is not leaked)
//! and 403 when they may see but not act. Handlers receive what was loaded as request
//! extensions.

use std::collections::HashMap;
use std::sync::Arc;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service, ServiceExt};

use crate::domain::access::grants::Grants;
use crate::domain::access::{
    load_collection, load_org, load_space, require_role, Role, SiteCtx, TeamCtx,
};
use crate::domain::access::{OrgCtx, SpaceCtx};
use crate::domain::auth::{authenticate, Caller};
use crate::domain::published;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::PathParams;
use crate::http::operation::Access;
use crate::ids::{OrgId, UserId};
use crate::state::AppState;
use crate::store;
use crate::store::users::UserRow;

/// Operations sent with `POST` (a body too large for a query) that change nothing: they run
/// as reads, moving no cache scope.
const POST_READS: &[&str] = &["searchSiteContent"];

/// Applies a route's [`Access`]: a tower layer written by hand, since `from_fn` middleware
/// costs a large share of a small request (BENCHMARKS.md, issue 11).
#[derive(Clone)]
pub struct Enforce {
    state: AppState,
    access: Access,
    operation: &'static str,
}

impl Enforce {
    /// The check of `access` for the operation named `operation`.
    pub fn new(state: AppState, access: Access, operation: &'static str) -> Self {
        Self {
            state,
            access,
            operation,
        }
    }

    /// Checks the request, then serves it through `inner`, or answers the refusal.
    async fn serve<S>(self, inner: S, req: Request) -> Response
    where
        S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
        S::Future: Send + 'static,
    {
        let writes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
            && !POST_READS.contains(&self.operation);
        let mut res = if writes {
            // A write runs to its end on its own task, even when its client leaves: dropped
            // half way, it could leave a transaction begun on a pooled connection (holding
            // SQLite's write lock until that connection is used again) or a file stored
            // without the row naming it.
            let (state, access, operation) = (self.state.clone(), self.access, self.operation);
            let run = async move {
                match check(&state, access, operation, req).await {
                    // Its write transactions move the cached scopes they change.
                    Ok(req) => match inner.oneshot(req).await {
                        Ok(res) => res,
                        Err(never) => match never {},
                    },
                    Err(err) => err.into_response(),
                }
            };
            match tokio::spawn(crate::cache::bypassed(run)).await {
                Ok(res) => res,
                Err(e) => {
                    tracing::error!(operation = self.operation, error = %e, "a write failed");
                    ApiError::internal(anyhow::anyhow!("the write failed: {e}")).into_response()
                }
            }
        } else {
            match check(&self.state, self.access, self.operation, req).await {
                Ok(req) => match inner.oneshot(req).await {
                    Ok(res) => crate::encoding::tag(res).await,
                    Err(never) => match never {},
                },
                Err(err) => err.into_response(),
            }
        };
        res.extensions_mut().insert(crate::metrics::Answered {
            operation: self.operation,
        });
        res
    }
}

impl<S> Layer<S> for Enforce {
    type Service = Enforced<S>;

    fn layer(&self, inner: S) -> Enforced<S> {
        Enforced {
            inner,
            rule: self.clone(),
        }
    }
}

/// A route behind its [`Enforce`] check.
#[derive(Clone)]
pub struct Enforced<S> {
    inner: S,
    rule: Enforce,
}

impl<S> Service<Request> for Enforced<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Readiness of the route is asked when it is called, after the check.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let inner = self.inner.clone();
        let rule = self.rule.clone();
        Box::pin(async move { Ok(rule.serve(inner, req).await) })
    }
}

async fn check(
    state: &AppState,
    access: Access,
    operation: &str,
    req: Request,
) -> ApiResult<Request> {
    if access == Access::Public {
        return Ok(req);
    }
    let (mut parts, body) = req.into_parts();
    let params = PathParams::read(&mut parts).await?;
    if let Some(scope_id) =
        crate::keys::bearer(&parts.headers).and_then(|t| published::scope_of(state, t))
    {
        Box::pin(check_published(
            state, operation, &params, &scope_id, &mut parts,
        ))
        .await?;
        return Ok(Request::from_parts(parts, body));
    }
    let caller = authenticate(state, &parts.headers).await?;
    match access {
        Access::Public | Access::User => {}
        Access::Space(need) => {
            let space_id = params.require("spaceId")?;
            let ctx = load_space(state, &caller, space_id).await?;
            require_role(Some(ctx.role), need, "do this in the space")?;
            parts.extensions.insert(ctx.org.clone());
            parts.extensions.insert(ctx);
        }
        Access::SpaceIfExists(need) => {
            match load_space(state, &caller, params.require("spaceId")?).await {
                Ok(ctx) => {
                    require_role(Some(ctx.role), need, "do this in the space")?;
                    parts.extensions.insert(ctx.org.clone());
                    parts.extensions.insert(ctx);
                }
                Err(ApiError::NotFound(_)) => {}
                Err(other) => return Err(other),
            }
        }
        Access::CollectionIfExists(need) => {
            match load_collection(state, &caller, params.require("collectionId")?).await {
                Ok(ctx) => {
                    require_role(Some(ctx.role), need, "do this in the collection")?;
                    parts.extensions.insert(ctx.org.clone());
                    parts.extensions.insert(ctx);
                }
                Err(ApiError::NotFound(_)) => {}
                Err(other) => return Err(other),
            }
        }
        Access::Collection(need) => {
            let collection_id = params.require("collectionId")?;
            let ctx = load_collection(state, &caller, collection_id).await?;
            require_role(Some(ctx.role), need, "do this in the collection")?;
            parts.extensions.insert(ctx.org.clone());
            parts.extensions.insert(ctx);
        }
        Access::SiteRead | Access::SiteAdmin | Access::SiteAdminIfExists => {
            let org = load_org(
                state,
                &caller,
                &OrgId::new(params.require("organizationId")?),
            )
            .await?;
            // Guests see only what they were granted: a site lists every space it holds.
            org.require_non_guest("read the organization's sites")?;
            if access != Access::SiteRead && !org.is_admin() {
                return Err(ApiError::forbidden(
                    "Only organization admins can change sites.",
                ));
            }
            let site_id = params.require("siteId")?;
            match Box::pin(store::sites::get(&state.db, &org.org.id, site_id)).await? {
                Some(site) => {
                    parts.extensions.insert(SiteCtx { site });
                }
                None if access == Access::SiteAdminIfExists => {}
                None => return Err(ApiError::not_found(format!("Site `{site_id}` not found."))),
            }
            parts.extensions.insert(org);
        }
        Access::OrgCreate => {
            let org = load_org(
                state,
                &caller,
                &OrgId::new(params.require("organizationId")?),
            )
            .await?;
            require_role(org.role, Role::Create, "create content in the organization")?;
            parts.extensions.insert(org);
        }
        Access::OrgMember
        | Access::OrgNonGuest
        | Access::OrgAdmin
        | Access::TeamView
        | Access::TeamManage => {
            let org = load_org(
                state,
                &caller,
                &OrgId::new(params.require("organizationId")?),
            )
            .await?;
            let needs_role = !matches!(access, Access::OrgMember);
            if needs_role && org.role.is_none() {
                return Err(ApiError::forbidden(
                    "Guests cannot do this in the organization.",
                ));
            }
            if access == Access::OrgAdmin && !org.is_admin() {
                return Err(ApiError::forbidden("Only organization admins can do this."));
            }
            if matches!(access, Access::TeamView | Access::TeamManage) {
                let team_id = params.require("teamId")?;
                let team = Box::pin(store::teams::get(&state.db, &org.org.id, team_id))
                    .await?
                    .ok_or_else(|| ApiError::not_found(format!("Team `{team_id}` not found.")))?;
                let can_manage = org.is_admin()
                    || Box::pin(store::teams::role_of(&state.db, &team.id, &caller.user.id))
                        .await?
                        .as_deref()
                        == Some("owner");
                if access == Access::TeamManage && !can_manage {
                    return Err(ApiError::forbidden(
                        "Only organization admins and team owners can manage this team.",
                    ));
                }
                parts.extensions.insert(TeamCtx { team, can_manage });
            }
            parts.extensions.insert(org);
        }
    }
    parts.extensions.insert(caller);
    Ok(Request::from_parts(parts, body))
}

/// What a published-content token may do: read the published site it was issued for, and
/// the space, revision, pages (by id or path, as document or markdown), page documents,
/// reusable contents and documents by id of the site space it resolved, and the previews of
/// the links its pages embed (as any reader may: public pages, through the safe fetcher,
/// kept once made), while the grounds
/// it was issued on still hold (see [`published::still_open`]; read through the access
/// cache). Anything else is refused.
async fn check_published(
    state: &AppState,
    operation: &str,
    params: &PathParams,
    scope_id: &str,
    parts: &mut axum::http::request::Parts,
) -> ApiResult<()> {
    let refused =
        || ApiError::forbidden("This token only reads the published content it was issued for.");
    let matches = |name: &str, want: &str| params.get(name) == Some(want);
    let scope = published::stored_scope(state, scope_id)
        .await?
        .ok_or_else(|| {
            ApiError::Unauthorized("This published-content token has expired.".into())
        })?;
    let closed = || {
        ApiError::not_found("The published content this token was issued for is no longer published to its visitor.")
    };
    match operation {
        // A renderer asks for a site's redirect where it finds no page.
        "getPublishedContentSite" | "searchSiteContent" | "getSiteRedirectBySource" => {
            if !matches("organizationId", &scope.org) || !matches("siteId", &scope.site) {
                return Err(refused());
            }
        }
        // The page reads by id and path are how the renderer gets a page's markdown (its
        // `.md` route and `llms-full.txt`) and looks up a path its tree lacks.
        // A renderer draws a page's embedded links from their previews.
        "getEmbedByUrl" => {}
        // A page's OpenAPI blocks read a specification of the site's organization (a
        // missing one answers 404, which the renderer draws as a missing block).
        "getLatestOpenAPISpecVersionContent" | "getOpenAPISpecVersionContentById" => {
            if !matches("organizationId", &scope.org) {
                return Err(refused());
            }
        }
        "getSpaceById"
        | "getEmbedByUrlInSpace"
        | "getRevisionById"
        | "getPageDocumentInRevisionById"
        | "getPageInRevisionById"
        | "listRevisionPageMetaLinks"
        | "getPageInRevisionByPath"
        | "getReusableContentInRevisionById"
        | "getReusableContentDocumentInRevisionById"
        | "getDocumentById" => {
            if !matches("spaceId", &scope.space)
                || (params.get("revisionId").is_some() && !matches("revisionId", &scope.revision))
            {
                return Err(refused());
            }
        }
        _ => return Err(refused()),
    }
    if !published::still_open(state, &scope).await? {
        return Err(closed());
    }
    let org = published::site_org(state, &scope.site)
        .await?
        .ok_or_else(closed)?;
    let org = OrgCtx { org, role: None };
    if matches!(
        operation,
        "getPublishedContentSite" | "searchSiteContent" | "getSiteRedirectBySource"
    ) {
        let site = published::site_row(state, &scope.site)
            .await?
            .ok_or_else(closed)?;
        parts.extensions.insert(SiteCtx { site });
        parts.extensions.insert(published::Reading(scope));
    } else if operation.starts_with("get") && operation.contains("OpenAPISpecVersionContent") {
        // The organization's context alone, below.
    } else {
        let space = crate::domain::access::space_row(state, &scope.space)
            .await?
            .filter(|s| s.deleted_at.is_none())
            .ok_or_else(closed)?;
        let grants = Arc::new(Grants::assemble(None, HashMap::new(), HashMap::new()));
        parts.extensions.insert(SpaceCtx {
            space,
            role: Role::Read,
            org: org.clone(),
            grants,
        });
        // Content reads sign file URLs for a reader: the published site's visitor.
        parts.extensions.insert(Caller::unscoped(Arc::new(UserRow {
            id: UserId::new(format!("~site:{}", scope.site)),
            email: String::new(),
            display_name: "Published content".into(),
            photo_url: None,
            created_at: 0,
            first_auth_at: Some(0),
        })));
        parts.extensions.insert(published::Reading(scope));
    }
    parts.extensions.insert(org);
    Ok(())
}
