//! The API, one folder per resource family: each declares its operations (method, path,
//! official operationId, required access) beside their handlers and types. Families never
//! import each other; what several share lives in the domain layer, or in `views` for
//! response bodies.

pub mod catalog;
pub mod change_requests;
pub mod collections;
pub mod comments;
pub mod content;
pub mod embeds;
pub mod files;
pub mod fonts;
pub mod git_sync;
pub mod hostnames;
pub mod imports;
pub mod invites;
pub mod links;
pub mod members;
pub mod meta;
pub mod openapi;
pub mod orgs;
pub mod pdf;
pub mod permissions;
pub mod published;
pub mod saml;
pub mod search;
pub mod sites;
pub mod spaces;
pub mod teams;
pub mod templates;
pub mod translations;
pub mod urls;
pub mod users;
pub mod views;

use axum::http::Method;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use axum::Router;
use tower::Layer;

use crate::http::access::Enforce;
use crate::http::edge::{Edge, EdgeLayer};
use crate::http::operation::{BodyLimit, Operation};
use crate::http::{budget_bodies, fallback};
use crate::state::AppState;

/// Every operation of the API.
pub fn operations() -> Vec<Operation> {
    [
        change_requests::operations(),
        collections::operations(),
        comments::operations(),
        content::operations(),
        embeds::operations(),
        fonts::operations(),
        imports::operations(),
        git_sync::operations(),
        hostnames::operations(),
        invites::operations(),
        links::operations(),
        members::operations(),
        meta::operations(),
        openapi::operations(),
        orgs::operations(),
        pdf::operations(),
        permissions::operations(),
        published::operations(),
        saml::operations(),
        search::operations(),
        sites::operations(),
        spaces::operations(),
        teams::operations(),
        templates::operations(),
        translations::operations(),
        urls::operations(),
        users::operations(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The whole HTTP application: every operation of [`operations`] behind its
/// access check, plus health, file downloads, published sites' HTML, the fallback and the
/// shared middleware.
pub fn router(state: AppState) -> Edge<Router> {
    let mut router: Router<AppState> = Router::new();
    let operations = operations();
    for def in operations {
        // Innermost first: the body budget is taken only once the caller is authorised, and
        // only by operations that take a body.
        let access = Enforce::new(state.clone(), def.access, def.operation);
        let mut handler = if def.method == Method::GET || def.method == Method::DELETE {
            def.handler.route_layer(access)
        } else {
            let budget = from_fn_with_state(state.clone(), budget_bodies);
            def.handler.route_layer(budget).route_layer(access)
        };
        if let Some(limit) = def.body_limit {
            handler = handler.route_layer(axum::Extension(BodyLimit(limit)));
        }
        router = router.route(def.path, handler);
    }
    let routes = router
        .route("/healthz", get(meta::healthz))
        .route("/readyz", get(meta::readyz))
        .route("/metrics", get(meta::metrics))
        .route(
            "/files/{spaceId}/{fileId}/{name}",
            get(files::handlers::download),
        )
        .route("/pdf/{spaceId}/{name}", get(pdf::handlers::download))
        .route(
            "/storage/{*key}",
            get(fonts::handlers::get_upload).put(fonts::handlers::put_upload),
        )
        .route(
            "/openapi/{organizationId}/{specSlug}/{versionId}",
            get(openapi::handlers::download),
        )
        .merge(crate::web::routes())
        .merge(crate::app::routes(&state))
        .merge(crate::git::routes())
        .fallback(fallback)
        .with_state(state.clone());
    EdgeLayer(state).layer(routes)
}
