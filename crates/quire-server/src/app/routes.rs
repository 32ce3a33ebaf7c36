//! The app's route table: every screen and action, its method, path and who may reach it,
//! declared once. The router is built from it, and each route's access is checked before
//! its handler runs ([`guard`]), as the API's operations are; the matrix test
//! (`tests/api/app_routes.rs`) requests every route as every persona and compares the
//! answer with the declaration.
//!
//! The access is the least a route needs. A handler may refuse more (an action the
//! person's role does not allow answers the domain's 403), never less. What the check
//! loaded (the session, the organization, collection or space with the person's role) is
//! handed to the handler, which takes it as an argument (`session::Signed`, [`InOrg`]).

use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::Method;
use axum::middleware::{from_fn_with_state, Next};
use axum::response::Response;
use axum::routing::{get, post, MethodRouter};
use axum::Router;
use std::collections::HashMap;

use super::shell::{failed, not_found};
use super::{
    account, accounts, create, editor, find, home, import, people, saml, screens, search, session,
    settings, share, sites, specs, sso, translations,
};
use crate::domain::access::{self, Role};
use crate::ids::OrgId;
use crate::state::AppState;

/// Who may reach a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone, signed in or not: signing in, the first run, single sign-on's endpoints, a
    /// join link (which says what signing in will do).
    Anyone,
    /// A signed-in person.
    SignedIn,
    /// A password session of an administrator of the server.
    ServerAdmin,
    /// Anyone the organization `{organizationId}` is visible to: its members, and guests
    /// who were given one of its spaces or collections.
    Org,
    /// A member of the organization `{organizationId}`, at any role.
    OrgMember,
    /// An administrator of the organization `{organizationId}`.
    OrgAdmin,
    /// Anyone who sees the collection `{collectionId}`.
    Collection,
    /// Anyone with at least this role on the space `{spaceId}` (deleted or not: a deleted
    /// space's admins restore it from its settings).
    Space(Role),
}

/// One screen or action of the app.
pub struct Route {
    /// `GET` (a screen) or `POST` (an action).
    pub method: Method,
    /// Its path, with `{name}` parameters as the router reads them.
    pub path: &'static str,
    /// Who may reach it.
    pub access: Access,
    /// Its handler, as the router mounts it.
    handler: fn() -> MethodRouter<AppState>,
}

const fn route(
    method: Method,
    path: &'static str,
    access: Access,
    handler: fn() -> MethodRouter<AppState>,
) -> Route {
    Route {
        method,
        path,
        access,
        handler,
    }
}

const GET: Method = Method::GET;
const POST: Method = Method::POST;
use Access::*;

/// Every route of the app, but its embedded files (`shell::asset_routes`, public).
pub const ROUTES: &[Route] = &[
    route(GET, "/", Anyone, || get(home::home)),
    route(POST, "/orgs", SignedIn, || post(home::create_org)),
    route(GET, "/find", SignedIn, || get(find::screen)),
    route(GET, "/account", SignedIn, || get(account::show)),
    route(POST, "/account/tokens", SignedIn, || {
        post(account::create_token)
    }),
    route(POST, "/account/tokens/{tokenId}/revoke", SignedIn, || {
        post(account::revoke_token)
    }),
    route(POST, "/account/link", SignedIn, || post(account::link)),
    route(GET, "/account/sessions", SignedIn, || {
        get(session::sessions)
    }),
    route(POST, "/account/sessions/{sessionId}/end", SignedIn, || {
        post(session::end_session)
    }),
    route(POST, "/account/sessions/end-all", SignedIn, || {
        post(session::end_all)
    }),
    route(POST, "/setup", Anyone, || post(session::setup)),
    route(GET, "/signin", Anyone, || get(session::signin_page)),
    route(POST, "/signin", Anyone, || post(session::signin)),
    route(POST, "/signout", Anyone, || post(session::signout)),
    route(GET, "/admin/accounts", ServerAdmin, || {
        get(accounts::screen)
    }),
    route(POST, "/admin/accounts", ServerAdmin, || post(accounts::act)),
    route(POST, "/admin/settings", ServerAdmin, || {
        post(accounts::settings)
    }),
    route(GET, "/saml/{samlProviderId}/metadata", Anyone, || {
        get(saml::metadata)
    }),
    route(GET, "/saml/{samlProviderId}/start", Anyone, || {
        get(saml::start)
    }),
    route(POST, "/saml/{samlProviderId}/acs", Anyone, || {
        post(saml::acs)
    }),
    // Answers a JSON error to a caller without a token: an API-style call of the account.
    route(POST, "/saml/{samlProviderId}/link", Anyone, || {
        post(saml::link)
    }),
    route(GET, "/o/{organizationId}", Org, || get(screens::org)),
    route(POST, "/o/{organizationId}", Org, || post(create::act)),
    route(GET, "/o/{organizationId}/search", Org, || get(search::org)),
    route(POST, "/o/{organizationId}/sites", OrgMember, || {
        post(sites::create)
    }),
    route(GET, "/o/{organizationId}/sites/{siteId}", OrgMember, || {
        get(sites::screen)
    }),
    route(
        POST,
        "/o/{organizationId}/sites/{siteId}",
        OrgMember,
        || post(sites::act),
    ),
    route(POST, "/o/{organizationId}/openapi", OrgMember, || {
        post(specs::act)
    }),
    route(
        GET,
        "/o/{organizationId}/openapi/{specSlug}",
        OrgMember,
        || get(screens::openapi_spec),
    ),
    route(
        POST,
        "/o/{organizationId}/openapi/{specSlug}",
        OrgMember,
        || post(specs::update),
    ),
    route(GET, "/o/{organizationId}/sso", OrgAdmin, || {
        get(sso::screen)
    }),
    route(POST, "/o/{organizationId}/sso", OrgAdmin, || post(sso::act)),
    route(GET, "/o/{organizationId}/translations", OrgMember, || {
        get(translations::screen)
    }),
    route(POST, "/o/{organizationId}/translations", OrgMember, || {
        post(translations::act)
    }),
    route(GET, "/o/{organizationId}/members", OrgMember, || {
        get(people::members_page)
    }),
    route(POST, "/o/{organizationId}/members", OrgMember, || {
        post(people::members_action)
    }),
    route(GET, "/o/{organizationId}/teams", OrgMember, || {
        get(people::teams_page)
    }),
    route(POST, "/o/{organizationId}/teams", OrgMember, || {
        post(people::teams_action)
    }),
    route(GET, "/join/{secret}", Anyone, || get(people::join_page)),
    route(POST, "/join/{secret}", Anyone, || post(people::join)),
    route(GET, "/invite/{organizationId}/{inviteId}", Anyone, || {
        get(people::link_page)
    }),
    route(POST, "/invite/{organizationId}/{inviteId}", Anyone, || {
        post(people::link_join)
    }),
    route(GET, "/c/{collectionId}", Collection, || {
        get(screens::collection)
    }),
    route(POST, "/c/{collectionId}", Collection, || {
        post(screens::collection_act)
    }),
    route(GET, "/c/{collectionId}/~/share", Collection, || {
        get(screens::collection_share)
    }),
    route(POST, "/c/{collectionId}/~/share", Collection, || {
        post(share::collection_act)
    }),
    route(GET, "/s/{spaceId}", Space(Role::Read), || {
        get(screens::space_home)
    }),
    route(
        POST,
        "/s/{spaceId}/~/upload/{number}",
        Space(Role::Edit),
        || post(editor::upload),
    ),
    // The space's screens under `~/`, then its pages (any other path).
    route(GET, "/s/{spaceId}/~/search", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(GET, "/s/{spaceId}/~/files", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(
        GET,
        "/s/{spaceId}/~/files/{fileId}",
        Space(Role::Read),
        || get(screens::space_path),
    ),
    route(
        GET,
        "/s/{spaceId}/~/files/{fileId}/{*name}",
        Space(Role::Read),
        || get(screens::space_path),
    ),
    route(GET, "/s/{spaceId}/~/comments", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(GET, "/s/{spaceId}/~/settings", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(GET, "/s/{spaceId}/~/share", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(GET, "/s/{spaceId}/~/import", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(GET, "/s/{spaceId}/~/pdf", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(GET, "/s/{spaceId}/~/changes", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(
        GET,
        "/s/{spaceId}/~/changes/{number}",
        Space(Role::Read),
        || get(screens::space_path),
    ),
    route(
        GET,
        "/s/{spaceId}/~/changes/{number}/pdf",
        Space(Role::Read),
        || get(screens::space_path),
    ),
    route(
        GET,
        "/s/{spaceId}/~/changes/{number}/files/{fileId}",
        Space(Role::Read),
        || get(screens::space_path),
    ),
    route(
        GET,
        "/s/{spaceId}/~/changes/{number}/files/{fileId}/{*name}",
        Space(Role::Read),
        || get(screens::space_path),
    ),
    route(
        GET,
        "/s/{spaceId}/~/changes/{number}/edit/{pageId}",
        Space(Role::Edit),
        || get(screens::space_path),
    ),
    route(
        GET,
        "/s/{spaceId}/~/changes/{number}/tree",
        Space(Role::Edit),
        || get(screens::space_path),
    ),
    route(GET, "/s/{spaceId}/~/revisions", Space(Role::Read), || {
        get(screens::space_path)
    }),
    route(
        GET,
        "/s/{spaceId}/~/revisions/{*revision}",
        Space(Role::Read),
        || get(screens::space_path),
    ),
    route(GET, screens::PAGE_ROUTE, Space(Role::Read), || {
        get(screens::space_path)
    }),
    // The space's actions.
    route(POST, "/s/{spaceId}/~/settings", Space(Role::Edit), || {
        post(settings::act)
    }),
    // Sharing decides by what is shared.
    route(POST, "/s/{spaceId}/~/share", Space(Role::Read), || {
        post(share::act)
    }),
    route(POST, "/s/{spaceId}/~/import", Space(Role::Edit), || {
        post(import::act)
    }),
    route(POST, "/s/{spaceId}/~/edit", Space(Role::Edit), || {
        post(editor::start)
    }),
    // Each comment action decides: posting needs the comment role, deleting is the author's.
    route(POST, "/s/{spaceId}/~/comments", Space(Role::Read), || {
        post(screens::comment)
    }),
    route(
        POST,
        "/s/{spaceId}/~/comments/{*action}",
        Space(Role::Read),
        || post(screens::comment),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/comments",
        Space(Role::Read),
        || post(screens::change_request_comment),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/comments/{*action}",
        Space(Role::Read),
        || post(screens::change_request_comment),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/edit/{pageId}",
        Space(Role::Edit),
        || post(editor::save),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/preview",
        Space(Role::Edit),
        || post(editor::preview),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/tree",
        Space(Role::Edit),
        || post(editor::tree_action),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/review",
        Space(Role::Review),
        || post(screens::review),
    ),
    // The merge rules decide the rest.
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/merge",
        Space(Role::Edit),
        || post(screens::merge),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/update",
        Space(Role::Edit),
        || post(screens::update),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/edit",
        Space(Role::Edit),
        || post(screens::edit_change_request),
    ),
    route(
        POST,
        "/s/{spaceId}/~/changes/{number}/request",
        Space(Role::Edit),
        || post(screens::request_review),
    ),
];

/// The app's router: every route of [`ROUTES`] behind its access check, and the embedded
/// files.
pub fn router(state: &AppState) -> Router<AppState> {
    ROUTES
        .iter()
        .fold(super::shell::asset_routes(), |router, r| {
            let access = r.access;
            let checked = (r.handler)().route_layer(from_fn_with_state(
                state.clone(),
                move |state: State<AppState>, req: Request, next: Next| {
                    guard(state, req, next, access)
                },
            ));
            router.route(r.path, checked)
        })
}

/// Lets a request through to its handler when its session has `access`; otherwise sends it
/// to sign in (no session), answers as a missing screen would (what the person may not see
/// at all), or refuses with 403 naming the role it needs (what they see, at a lower role).
async fn guard(
    State(state): State<AppState>,
    req: Request,
    next: Next,
    access: Access,
) -> Response {
    if access == Anyone {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let params = Path::<HashMap<String, String>>::from_request_parts(&mut parts, &state)
        .await
        .map(|Path(p)| p)
        .unwrap_or_default();
    let req = Request::from_parts(parts, body);
    let here = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let signed = match session::require(&state, req.headers(), &here).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let caller = signed.caller();
    let param = |name: &str| params.get(name).cloned().unwrap_or_default();
    let mut req = req;
    // `Err(None)`: not the person's to see (answered as missing); `Err(Some(why))`: seen,
    // but the role falls short.
    let verdict: Result<(), Option<String>> = match access {
        Anyone | SignedIn => Ok(()),
        ServerAdmin => {
            let admin = signed.scope.is_none()
                && match crate::store::sessions::is_instance_admin(
                    &state.db,
                    signed.user.id.as_str(),
                )
                .await
                {
                    Ok(admin) => admin,
                    Err(e) => return failed(e),
                };
            if admin {
                Ok(())
            } else {
                Err(None)
            }
        }
        Org | OrgMember | OrgAdmin => {
            let id = OrgId::new(param("organizationId"));
            match seen(access::load_org(&state, &caller, &id).await) {
                Ok(Some(org)) => {
                    let verdict = match access {
                        OrgMember if org.role.is_none() => {
                            Err(Some("This is for the organization's members.".to_string()))
                        }
                        OrgAdmin if !org.is_admin() => {
                            Err(Some("This is for the organization's admins.".to_string()))
                        }
                        _ => Ok(()),
                    };
                    req.extensions_mut().insert(org);
                    verdict
                }
                Ok(None) => Err(None),
                Err(e) => return failed(e),
            }
        }
        Collection => {
            match seen(access::load_collection(&state, &caller, &param("collectionId")).await) {
                Ok(Some(c)) => {
                    req.extensions_mut().insert(c);
                    Ok(())
                }
                Ok(None) => Err(None),
                Err(e) => return failed(e),
            }
        }
        Space(role) => match seen(access::load_space(&state, &caller, &param("spaceId")).await) {
            Ok(Some(ctx)) => {
                let verdict = if ctx.role >= role {
                    Ok(())
                } else {
                    Err(Some(format!(
                        "This needs the {} role on this space; yours is {}.",
                        role.as_str(),
                        ctx.role.as_str()
                    )))
                };
                req.extensions_mut().insert(ctx);
                verdict
            }
            Ok(None) => Err(None),
            Err(e) => return failed(e),
        },
    };
    match verdict {
        Ok(()) => {
            // The handler takes what was loaded here (`session::Signed`, `access::OrgCtx`,
            // …) instead of reading it again.
            req.extensions_mut().insert(signed);
            next.run(req).await
        }
        Err(None) => not_found(
            Some(&signed.viewer()),
            "This page does not exist, or you may not see it.",
        ),
        Err(Some(why)) => {
            let body = maud::html! {
                h1 { "Not allowed" }
                p.error role="alert" { (why) }
                p { a href="/" { "Back to the home page" } }
            };
            super::shell::page(
                axum::http::StatusCode::FORBIDDEN,
                "Not allowed",
                Some(&signed.viewer()),
                None,
                body,
            )
        }
    }
}

/// What the caller sees: `None` for anything the domain refuses (missing, or not theirs to
/// see, one answer for both); a failure of the server's own stays one.
fn seen<T>(loaded: crate::error::ApiResult<T>) -> crate::error::ApiResult<Option<T>> {
    match loaded {
        Ok(v) => Ok(Some(v)),
        Err(e @ crate::error::ApiError::Internal(_)) => Err(e),
        Err(_) => Ok(None),
    }
}

/// The organization of the path as the signed-in person sees it, loaded by the route's
/// access check (routes declared [`Access::Org`], [`Access::OrgMember`], [`Access::OrgAdmin`]).
pub struct InOrg(pub access::OrgCtx);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for InOrg {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Response> {
        loaded(parts).await.map(InOrg)
    }
}

/// The space of the path with the person's role on it, loaded by the route's access check
/// (routes declared [`Access::Space`]).
pub struct InSpace(pub access::SpaceCtx);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for InSpace {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Response> {
        loaded(parts).await.map(InSpace)
    }
}

/// The collection of the path as the person sees it, loaded by the route's access check
/// (routes declared [`Access::Collection`]).
pub struct InCollection(pub access::CollectionCtx);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for InCollection {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Response> {
        loaded(parts).await.map(InCollection)
    }
}

/// What the route's access check put on the request; missing only when a handler asks for
/// more than its route declares (a failure the route matrix test meets).
pub(super) async fn loaded<T: Clone + Send + Sync + 'static>(
    parts: &axum::http::request::Parts,
) -> Result<T, Response> {
    parts.extensions.get::<T>().cloned().ok_or_else(|| {
        failed(format!(
            "the route {} declares no access that loads a {}",
            parts.uri.path(),
            std::any::type_name::<T>()
        ))
    })
}
