//! The Quire app: the workspace in a browser, server-rendered from the same domain code as
//! the API, on the same port. `/` is the home (the first-run page while no account exists),
//! `/signin` and `/signout` the sign-in, `/saml/{id}/…` an organization's single sign-on
//! (`saml`), `/account` the person's account and API tokens, `/find` the quick find, and
//! every `urls.app` the API hands out opens its screen: `/o/{organizationId}` (and its
//! `sites/{siteId}` and `openapi/{specSlug}`), `/c/{collectionId}`, `/s/{spaceId}` and the
//! pages of a space below it (`/s/{spaceId}/{path}`), its change requests
//! (`/s/{spaceId}/~/changes/{number}`, their page trees at `.../tree`) and revisions
//! (`/s/{spaceId}/~/revisions/{id}`). Every screen and action is a route of
//! [`routes::ROUTES`], declared with who may reach it and checked before its handler runs:
//! anyone not signed in is sent to sign in, and back afterwards; a screen the person may not
//! see answers as a missing one.
//!
//! Safe by construction: every screen is a maud template, which escapes what it splices in;
//! what a user wrote as content is rendered by the content engine's sanitising renderer (the
//! one published sites use); every answer carries a Content-Security-Policy without inline
//! script or style (`frame-ancestors 'none'`), and every state-changing form must come from
//! Quire's own origin and, once signed in, carry the session's CSRF token. Each action reads
//! its own form type (`session::Posted`), never a catch-all of every field. The one script
//! (`app.js`, at the hashed name `shell::Asset::Js.url()` gives) only enhances: search as
//! you type, over the same server-rendered results, and keys to reach them.

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
pub mod routes;
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

use axum::Router;

use crate::state::AppState;

/// The app's routes, mounted beside the API's: [`routes::ROUTES`], each behind its access
/// check.
pub fn routes(state: &AppState) -> Router<AppState> {
    routes::router(state)
}
