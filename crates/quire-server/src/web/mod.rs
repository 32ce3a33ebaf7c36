//! Published sites as server-rendered HTML: `GET /sites/{siteId}/...` (and the share-link
//! form), resolved by `domain::published::resolve`, rendered by the content engine's HTML
//! renderer inside a layout of the site's own chrome, with the stylesheet and script
//! embedded in the binary, and each site space's MCP server for agents (`mcp`). Not `/v1`
//! operations: no bearer token, the audience decides.

pub mod account;
pub mod assets;
pub mod layout;
pub mod mcp;
pub mod pages;
pub mod search;
pub mod sso;

use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The routes of published sites, SAML logins and the account page, mounted beside the
/// API's.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/sites/{*rest}",
            get(pages::serve).post(mcp::serve).delete(mcp::serve),
        )
        .route("/saml/{samlProviderId}/metadata", get(sso::metadata))
        .route("/saml/{samlProviderId}/start", get(sso::start))
        .route("/saml/{samlProviderId}/acs", post(sso::acs))
        .route("/saml/{samlProviderId}/link", post(sso::link))
        .route("/account", get(account::show))
        .route("/account/tokens", post(account::create_token))
        .route(
            "/account/tokens/{tokenId}/revoke",
            post(account::revoke_token),
        )
        .route("/account/link", post(account::link))
        .route("/account/logout", post(account::logout))
}
