//! Published sites as server-rendered HTML: `GET /sites/{siteId}/...` (and the share-link
//! form), resolved by `domain::published::resolve`, rendered by the content engine's HTML
//! renderer inside a layout of the site's own chrome, with the stylesheet and script
//! embedded in the binary, and each site space's MCP server for agents (`mcp`). Not `/v1`
//! operations: no bearer token, the audience decides.

pub mod assets;
pub mod insights;
pub mod layout;
pub mod mcp;
pub mod pages;
pub mod search;

use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use crate::state::AppState;

/// The routes of published sites, mounted beside the API's.
pub fn routes() -> Router<AppState> {
    Router::new().route(
        "/sites/{*rest}",
        get(pages::serve).post(site_post).delete(mcp::serve),
    )
}

/// `POST` under `/sites/`: a site's events (`~insights`), else its MCP server.
async fn site_post(State(state): State<AppState>, req: Request) -> Response {
    let rest = req.uri().path().strip_prefix("/sites/").unwrap_or("");
    if insights::is_insights(rest) {
        let rest = rest.to_string();
        return insights::serve(&state, &rest, req.into_body()).await;
    }
    mcp::serve(State(state), req).await
}
