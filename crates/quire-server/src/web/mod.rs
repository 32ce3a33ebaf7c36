//! Published sites as server-rendered HTML: `GET /sites/{siteId}/...` (and the share-link
//! form), resolved by `domain::published::resolve`, rendered by the content engine's HTML
//! renderer inside a layout of the site's own chrome, with the stylesheet and script
//! embedded in the binary, and each site space's MCP server for agents (`mcp`). Not `/v1`
//! operations: no bearer token, the audience decides.

pub mod assets;
pub mod layout;
pub mod mcp;
pub mod pages;
pub mod search;

use axum::routing::get;
use axum::Router;

use crate::state::AppState;

/// The routes of published sites, mounted beside the API's.
pub fn routes() -> Router<AppState> {
    Router::new().route(
        "/sites/{*rest}",
        get(pages::serve).post(mcp::serve).delete(mcp::serve),
    )
}
