//! Server configuration, resolved by the command line (flags over `QUIRE_` variables over
//! defaults) and passed in state, never global.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything the server needs to start.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// Folder of the embedded database and blobs.
    pub data_dir: PathBuf,
    /// Database URL; defaults to the SQLite file in `data_dir`.
    pub database_url: Option<String>,
    /// Base of every absolute URL the API returns, without a trailing slash.
    pub public_url: Option<String>,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// How long a node may reuse what requests look up first: tokens, memberships, space
    /// rows, grants, authors (0: never).
    pub access_cache_ms: u64,
    /// Object store for file bytes (`s3://bucket/prefix` or `file:///path`); default: the
    /// `blobs` folder in the data dir.
    pub blob_url: Option<String>,
    /// Most connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers (slow clients are cut off).
    pub header_timeout_ms: u64,
    /// How long a client may take to send a request's body.
    pub body_timeout_ms: u64,
    /// Memory for the content caches (objects, decoded revisions, page listings), in MiB.
    pub cache_mb: u64,
    /// Networks the safe fetcher may reach besides public addresses (none by default).
    pub fetch_allow: Vec<ipnet::IpNet>,
    /// Largest OpenAPI specification processed, in bytes (given as text or fetched).
    pub max_spec_bytes: usize,
    /// Bearer token that `GET /metrics` requires; metrics are not served without one.
    pub metrics_token: Option<String>,
    /// Requests a minute per API token (0: no limit).
    pub rate_limit_token: u32,
    /// Requests a minute per client address (0: no limit).
    pub rate_limit_address: u32,
    /// Whether loopback clients are rate limited too.
    pub rate_limit_loopback: bool,
    /// Take the client's address from the last `X-Forwarded-For` hop (behind a proxy that
    /// sets it), not from the connection.
    pub trust_forwarded_for: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: ([127, 0, 0, 1], 8080).into(),
            data_dir: PathBuf::from("quire-data"),
            database_url: None,
            public_url: None,
            max_body_bytes: 16 * 1024 * 1024,
            access_cache_ms: 1000,
            blob_url: None,
            max_connections: 1024,
            header_timeout_ms: 10_000,
            body_timeout_ms: 60_000,
            cache_mb: 96,
            fetch_allow: Vec::new(),
            max_spec_bytes: 16 * 1024 * 1024,
            metrics_token: None,
            rate_limit_token: 1200,
            rate_limit_address: 2400,
            rate_limit_loopback: false,
            trust_forwarded_for: false,
        }
    }
}

impl ServerConfig {
    /// The database URL in force: the explicit one, or SQLite in the data dir.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.data_dir.join("quire.db").display()),
        }
    }

    /// The public base URL in force, given the address actually bound.
    pub fn public_url_for(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => format!("http://{bound}"),
        }
    }
}
