//! The Quire app: the workspace in a browser, server-rendered from the same domain code as
//! the API, on the same port. `/` is the home (the first-run page while no account exists),
//! `/signin` and `/signout` the local sign-in, `/saml/{id}/…` an organization's single
//! sign-on (`saml`), `/account` the person's account and API tokens, `/find` the quick find, and every `urls.app` the API hands out opens
//! its screen: `/o/{organizationId}` (and its `sites/{siteId}` and `openapi/{specSlug}`),
//! `/c/{collectionId}`, `/s/{spaceId}` and the pages of
//! a space below it (`/s/{spaceId}/{path}`), its change requests
//! (`/s/{spaceId}/~/changes/{number}`, their page trees at `.../tree`) and revisions
//! (`/s/{spaceId}/~/revisions/{id}`).
//! Anyone not signed in is sent to sign in, and back afterwards; a screen the user may not
//! see answers as a missing one.
//!
//! Safe by construction: everything a user wrote is escaped, or rendered by the content
//! engine's sanitising renderer (the one published sites use); every answer carries a
//! Content-Security-Policy without inline script or style (`frame-ancestors 'none'`), and
//! every state-changing form must come from Quire's own origin and, once signed in, carry
//! the session's CSRF token. The one script (`app.js`, at the hashed name
//! `shell::Asset::Js.url()` gives) only enhances: search as you type, over the same
//! server-rendered results, and keys to reach them.

mod account;
mod accounts;
mod create;
mod discuss;
mod editor;
mod find;
mod history;
mod home;
mod import;
mod people;
mod saml;
mod screens;
mod search;
mod session;
mod settings;
mod share;
mod shell;
mod sites;
mod specs;
mod sso;
mod translations;

use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The app's routes, mounted beside the API's.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(home::home))
        .route("/orgs", post(home::create_org))
        .route("/find", get(find::screen))
        .route("/account", get(account::show))
        .route("/account/tokens", post(account::create_token))
        .route("/account/link", post(account::link))
        .route(
            "/account/tokens/{tokenId}/revoke",
            post(account::revoke_token),
        )
        .route("/setup", post(session::setup))
        .route("/signin", get(session::signin_page).post(session::signin))
        .route("/signout", post(session::signout))
        .route("/account/sessions", get(session::sessions))
        .route(
            "/account/sessions/{sessionId}/end",
            post(session::end_session),
        )
        .route("/account/sessions/end-all", post(session::end_all))
        .route("/admin/accounts", get(accounts::screen).post(accounts::act))
        .route("/admin/settings", post(accounts::settings))
        .route("/saml/{samlProviderId}/metadata", get(saml::metadata))
        .route("/saml/{samlProviderId}/start", get(saml::start))
        .route("/saml/{samlProviderId}/acs", post(saml::acs))
        .route("/saml/{samlProviderId}/link", post(saml::link))
        .merge(shell::asset_routes())
        .route("/o/{organizationId}", get(screens::org).post(create::act))
        .route("/o/{organizationId}/search", get(search::org))
        .route("/o/{organizationId}/sites", post(sites::act))
        .route(
            "/o/{organizationId}/sites/{siteId}",
            get(sites::screen).post(sites::act),
        )
        .route("/o/{organizationId}/openapi", post(specs::act))
        .route("/o/{organizationId}/sso", get(sso::screen).post(sso::act))
        .route(
            "/o/{organizationId}/translations",
            get(translations::screen).post(translations::act),
        )
        .route(
            "/o/{organizationId}/openapi/{specSlug}",
            get(screens::openapi_spec).post(specs::update),
        )
        .route(
            "/o/{organizationId}/members",
            get(people::members_page).post(people::members_action),
        )
        .route(
            "/o/{organizationId}/teams",
            get(people::teams_page).post(people::teams_action),
        )
        .route("/join/{secret}", get(people::join_page).post(people::join))
        .route(
            "/invite/{organizationId}/{inviteId}",
            get(people::link_page).post(people::link_join),
        )
        .route(
            "/c/{collectionId}",
            get(screens::collection).post(screens::collection_act),
        )
        .route(
            "/c/{collectionId}/~/share",
            get(screens::collection_share).post(screens::collection_share_act),
        )
        .route("/s/{spaceId}", get(screens::space_home))
        .route("/s/{spaceId}/~/upload/{number}", post(editor::upload))
        .route(
            "/s/{spaceId}/{*path}",
            get(screens::space_path).post(screens::space_action),
        )
}
