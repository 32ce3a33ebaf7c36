//! The MCP server of a published site space, at `<site space URL>/~gitbook/mcp`: the Model
//! Context Protocol over streamable HTTP, served by `rmcp` (the protocol's Rust SDK), with
//! tools to search the site, list its pages and read one. Every request is resolved like a
//! page of the site (share key, visitor token, claims), so an agent reads exactly what the
//! same visitor reads in a browser. The outside MCP servers the site names add their tools
//! (`domain::mcp_servers`). Stateless: no session outlives its request, so any node
//! answers any request.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, TextContent, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};
use rmcp::{ErrorData, RoleServer};

use super::pages::{self, Opened, Site};
use crate::domain::mcp_servers;
use crate::domain::search;
use crate::domain::search::ask::Refused;
use crate::domain::search::query::MAX_QUERY_CHARS;
use crate::state::AppState;

/// The page path, inside a site space, of its MCP server (where GitBook serves it too).
pub const PATH: &str = "~gitbook/mcp";

/// The largest JSON-RPC message accepted.
const MAX_BODY: usize = 64 * 1024;

/// `POST` (and `DELETE`) under `/sites/`: the MCP endpoint, or 405 elsewhere.
pub async fn serve(State(state): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let rest = parts.uri.path().strip_prefix("/sites/").unwrap_or("");
    let opened = match pages::open(
        &state,
        rest,
        parts.uri.query(),
        &parts.headers,
        pages::Need::Everything,
        parts.extensions.get::<crate::hosts::Hosted>(),
    )
    .await
    {
        Ok(Ok(opened)) => opened,
        Ok(Err(res)) => return res,
        Err(err) => return err.into_response(),
    };
    if opened.r.pathname != PATH {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET")]).into_response();
    }
    let tools = SiteTools {
        state: state.clone(),
        opened: Arc::new(opened),
        tool_router: SiteTools::tool_router(),
    };
    // The `Host` check guards servers on a developer's machine against DNS rebinding;
    // Quire checks its callers by the site's audience instead, behind any host name.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MAX_BODY)
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let res = service.handle(Request::from_parts(parts, body)).await;
    res.map(Body::new)
}

/// The tools of one site space, for one visitor.
#[derive(Clone)]
struct SiteTools {
    state: AppState,
    opened: Arc<Opened>,
    tool_router: ToolRouter<Self>,
}

/// `search`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SearchArgs {
    /// Words to look for in the site's pages.
    query: String,
}

/// `read_page`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ReadArgs {
    /// The page's path in the site (as `list_pages` and `search` give it), or its URL.
    path: String,
}

impl SiteTools {
    fn site(&self) -> Result<Site<'_>, CallToolResult> {
        let o = &self.opened;
        Site::new(&self.state, &o.r, &o.rev, &o.row)
            .map_err(|_| failure("The site cannot be read right now."))
    }
}

#[tool_router]
impl SiteTools {
    /// Full-text search of the site's pages.
    #[tool(
        description = "Search this documentation site. Returns the best matching pages and sections, each with its title, URL and an excerpt."
    )]
    async fn search(&self, Parameters(args): Parameters<SearchArgs>) -> CallToolResult {
        // As every search accepts it, kept as sent (the site's search reads it alike).
        let query = match search::ask::accept(&args.query) {
            Ok(q) => q,
            Err(Refused::Empty) => {
                return failure("`query` is empty: give words to search for.");
            }
            Err(Refused::TooLong) => {
                return failure(&format!(
                    "`query` is longer than {MAX_QUERY_CHARS} characters."
                ));
            }
        };
        let site = match self.site() {
            Ok(site) => site,
            Err(e) => return e,
        };
        let hits = match site.search_pages(query).await {
            Ok(hits) => hits,
            Err(err) => {
                tracing::warn!(error = %err, "site search for an MCP client failed");
                return failure("The search failed; try again later.");
            }
        };
        if hits.is_empty() {
            return CallToolResult::success(vec![words(format!("No page matches \"{query}\"."))]);
        }
        let mut text = String::new();
        for hit in &hits {
            let title = match &hit.section {
                Some(s) if *s != hit.title => format!("{} › {s}", hit.title),
                _ => hit.title.clone(),
            };
            text.push_str(&format!(
                "## {title}\nURL: {}\n\n{}\n\n",
                absolute(&self.opened.r.url_root, &hit.url),
                hit.excerpt
            ));
        }
        CallToolResult::success(vec![words(text.trim_end().to_string())])
    }

    /// The site space's pages as a markdown index.
    #[tool(
        description = "List the pages of this documentation site, with their URLs and descriptions (markdown)."
    )]
    async fn list_pages(&self) -> CallToolResult {
        match self.site() {
            Ok(site) => CallToolResult::success(vec![words(site.index())]),
            Err(e) => e,
        }
    }

    /// One page's markdown.
    #[tool(
        description = "Read one page of this documentation site as markdown, by its path or URL."
    )]
    async fn read_page(&self, Parameters(args): Parameters<ReadArgs>) -> CallToolResult {
        let site = match self.site() {
            Ok(site) => site,
            Err(e) => return e,
        };
        match site.readable_page(&args.path) {
            Some((title, url, markdown)) => {
                CallToolResult::success(vec![words(format!("# {title}\nURL: {url}\n\n{markdown}"))])
            }
            None => failure(&format!(
                "No readable page at `{}`: `list_pages` gives the site's pages.",
                args.path.chars().take(200).collect::<String>()
            )),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SiteTools {
    /// The site's own tools, then those of the outside servers the site names.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tool_router.list_all();
        for t in mcp_servers::tools(&self.state, &self.opened.r.site.id).await {
            match serde_json::from_value::<Tool>(t.definition) {
                Ok(tool) => tools.push(tool),
                Err(err) => tracing::info!(error = %err, "an outside MCP tool is malformed"),
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// A tool of the site's, or one of an outside server's, forwarded to it.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tool_router.has_route(&request.name)
            && request.name.contains(mcp_servers::SEPARATOR)
        {
            let outside = mcp_servers::tools(&self.state, &self.opened.r.site.id)
                .await
                .into_iter()
                .find(|t| t.name == request.name);
            if let Some(tool) = outside {
                let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
                let result = match mcp_servers::call(&self.state, &tool, arguments).await {
                    Ok(v) => serde_json::from_value::<CallToolResult>(v).unwrap_or_else(|_| {
                        failure("The tool's server answered something that is not a tool result.")
                    }),
                    Err(why) => failure(&format!("The tool's server could not be reached: {why}.")),
                };
                return Ok(result.into());
            }
        }
        let tcc = ToolCallContext::new(self, request, context);
        self.tool_router.call(tcc).await
    }

    fn get_info(&self) -> ServerConfig {
        let title = self.opened.r.site.title.clone();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            format!("Tools to search and read the documentation site \"{title}\"."),
        )
    }
}

/// An absolute URL for a path from the host (as the site's links are written), on the host
/// of `root` (the address the site was reached at).
fn absolute(root: &str, path: &str) -> String {
    match url::Url::parse(root) {
        Ok(base) => base
            .join(path)
            .map_or_else(|_| path.to_string(), String::from),
        Err(_) => path.to_string(),
    }
}

/// A tool's answer that tells the agent what went wrong.
fn failure(message: &str) -> CallToolResult {
    CallToolResult::error(vec![words(message.to_string())])
}

/// A block of plain text (markdown) for the agent: MCP content, never HTML, so nothing in
/// it is escaped.
fn words(content: impl Into<String>) -> Content {
    Content::Text(TextContent::new(content))
}
