//! The outside MCP servers a site names (`SITE/mcp-servers`), as its own MCP endpoint offers
//! them: each server's tools are listed beside the site's, named `{server}__{tool}`, and a
//! call to one is forwarded to its server with the headers the site's admins set. Quire is
//! the MCP client here, over the safe fetcher: an initialization, then the request, each
//! answer read as JSON or as a server-sent event stream, within caps of size and time. Tool
//! lists are kept a minute per node, by server.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::state::AppState;
use crate::store;
use crate::store::site_settings::McpServerRow;

/// Largest answer read from an outside server.
const MAX_ANSWER: usize = 1024 * 1024;
/// How long one request to an outside server may take.
const WAIT: Duration = Duration::from_secs(10);
/// Most outside servers asked for their tools (a site names at most 50).
const MAX_SERVERS: i64 = 50;
/// Most tools taken from one server.
const MAX_TOOLS: usize = 100;
/// The protocol version Quire speaks to outside servers.
const PROTOCOL: &str = "2025-06-18";
/// Between a server's name and its tool's in the names the site offers.
pub const SEPARATOR: &str = "__";

/// A tool of an outside server, as the site offers it.
#[derive(Clone, Debug)]
pub struct OutsideTool {
    /// The name the site offers it under: `{server}__{tool}`.
    pub name: String,
    /// The tool's name on its server.
    pub remote: String,
    /// Its definition (the MCP `Tool`), renamed.
    pub definition: Value,
    /// Its server.
    pub server: Arc<McpServerRow>,
}

/// The tools of `site_id`'s outside servers that answer; a server that fails is left out
/// (and logged), so the site's own tools always work.
pub async fn tools(state: &AppState, site_id: &str) -> Vec<OutsideTool> {
    let servers =
        match store::site_settings::list_mcp_servers(&state.db, site_id, None, MAX_SERVERS).await {
            Ok((rows, _)) => rows,
            Err(err) => {
                tracing::warn!(error = %err, "the site's MCP servers could not be read");
                return Vec::new();
            }
        };
    let asked = futures_util::future::join_all(servers.into_iter().map(|s| async move {
        let server = Arc::new(s);
        // Keyed by what the server is: a changed one is asked again at once.
        let key = format!("{}\n{}\n{}\n{}", server.id, server.name, server.url, server.headers);
        let listed = match state.mcp_tools.get(&key) {
            Some(found) => found,
            None => {
                let found = match list(state, &server).await {
                    Ok(found) => found,
                    Err(why) => {
                        tracing::info!(server = %server.id, reason = %why, "an outside MCP server gave no tools");
                        Vec::new()
                    }
                };
                let found = Arc::new(found);
                state.mcp_tools.insert(key, found.clone());
                found
            }
        };
        (server, listed)
    }))
    .await;
    let mut out = Vec::new();
    for (server, listed) in asked {
        let prefix = prefix(&server);
        out.extend(listed.iter().filter_map(|t| {
            let remote = t.get("name")?.as_str()?.to_string();
            let name = format!("{prefix}{SEPARATOR}{remote}");
            if name.len() > 128
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return None;
            }
            let mut definition = t.clone();
            definition["name"] = json!(name);
            Some(OutsideTool {
                name,
                remote,
                definition,
                server: server.clone(),
            })
        }));
    }
    out
}

/// The prefix of a server's tools: its name, reduced to what tool names may hold.
fn prefix(server: &McpServerRow) -> String {
    let p: String = server
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if p.is_empty() {
        "server".into()
    } else {
        p
    }
}

/// The tools one server lists (at most [`MAX_TOOLS`]), as it defines them.
async fn list(state: &AppState, server: &McpServerRow) -> Result<Vec<Value>, String> {
    let result = request(state, server, "tools/list", json!({})).await?;
    let tools = result
        .get("tools")
        .and_then(Value::as_array)
        .ok_or("its tool list has no `tools`")?;
    Ok(tools.iter().take(MAX_TOOLS).cloned().collect())
}

/// Calls `tool` with `arguments` on its server: the `CallToolResult` it answered, or why
/// it could not be had.
pub async fn call(state: &AppState, tool: &OutsideTool, arguments: Value) -> Result<Value, String> {
    request(
        state,
        &tool.server,
        "tools/call",
        json!({ "name": tool.remote, "arguments": arguments }),
    )
    .await
}

/// One request to an outside server, after its initialization: the JSON-RPC `result`.
async fn request(
    state: &AppState,
    server: &McpServerRow,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let configured: Vec<(String, String)> =
        serde_json::from_str::<serde_json::Map<String, Value>>(&server.headers)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
            .collect();
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": { "name": "quire", "version": env!("CARGO_PKG_VERSION") }
        }
    });
    let (_, session) = post(state, server, &configured, None, &init, Some(1)).await?;
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    post(
        state,
        server,
        &configured,
        session.as_deref(),
        &initialized,
        None,
    )
    .await?;
    let body = json!({ "jsonrpc": "2.0", "id": 2, "method": method, "params": params });
    let (answer, _) = post(
        state,
        server,
        &configured,
        session.as_deref(),
        &body,
        Some(2),
    )
    .await?;
    let answer = answer.ok_or("it answered nothing")?;
    if let Some(err) = answer.get("error") {
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("an error");
        return Err(format!(
            "it answered: {}",
            message.chars().take(200).collect::<String>()
        ));
    }
    answer
        .get("result")
        .cloned()
        .ok_or_else(|| "its answer has no result".to_string())
}

/// POSTs one JSON-RPC message; the answer to `id` (from a JSON body or an event stream) and
/// the session the server opened.
async fn post(
    state: &AppState,
    server: &McpServerRow,
    configured: &[(String, String)],
    session: Option<&str>,
    message: &Value,
    id: Option<i64>,
) -> Result<(Option<Value>, Option<String>), String> {
    let mut headers: Vec<(&str, &str)> = configured
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    headers.push(("accept", "application/json, text/event-stream"));
    headers.push(("mcp-protocol-version", PROTOCOL));
    if let Some(s) = session {
        headers.push(("mcp-session-id", s));
    }
    let body = serde_json::to_vec(message).map_err(|e| e.to_string())?;
    let got = state
        .fetcher
        .post_json(&server.url, &headers, &body, MAX_ANSWER, WAIT)
        .await
        .map_err(|e| format!("its address {e}"))?;
    let session = got
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let Some(id) = id else {
        return Ok((None, session));
    };
    let answer = if got.content_type.as_deref() == Some("text/event-stream") {
        events(&got.bytes)
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(id)))
    } else {
        serde_json::from_slice::<Value>(&got.bytes).ok()
    };
    Ok((answer, session))
}

/// The JSON messages of a server-sent event stream (each event's `data:` lines joined).
fn events(bytes: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    let mut data = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if let Ok(v) = serde_json::from_str(&data) {
                out.push(v);
            }
            data.clear();
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_give_their_messages() {
        let stream = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\n data: \"id\":2}\n\n: comment\ndata: not json\n\ndata: {\"id\": 3}\n";
        let got = events(stream);
        assert_eq!(got, vec![json!({ "id": 3 })]);
        let joined = events(b"data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":2}\n\n");
        assert_eq!(joined, vec![json!({ "jsonrpc": "2.0", "id": 2 })]);
    }
}
