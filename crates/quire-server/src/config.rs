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
    /// How long a claimed background job stays reserved for its node without a renewal;
    /// a job whose node died is taken over by another node after this long.
    pub job_lease_ms: u64,
    /// How long a deleted space can be restored before a job purges it, in milliseconds.
    pub deleted_space_retention_ms: u64,
    /// Memory for the content caches (objects, decoded revisions, page listings), in MiB.
    pub cache_mb: u64,
    /// A folder of extra fonts (`.ttf`, `.otf`, `.ttc`) for PDF export, for scripts the
    /// shipped fonts lack (CJK, Arabic…).
    pub pdf_font_dir: Option<PathBuf>,
    /// PDF exports typeset at once on this node; more wait `busy_wait_ms`, then get 503.
    pub max_pdf_exports: usize,
    /// Most blocks one PDF may have (`quire_pdf::Book::blocks`: laying out takes up to about
    /// 6 KiB a block); a larger export is refused with 413.
    pub pdf_max_blocks: usize,
    /// Most pixels of one image printed in a PDF, read from its header; a larger image is
    /// left out with a note in its place.
    pub pdf_max_image_pixels: u64,
    /// Most pixels of all the images of one PDF together.
    pub pdf_max_pixels: u64,
    /// Networks the safe fetcher may reach besides public addresses (none by default).
    pub fetch_allow: Vec<ipnet::IpNet>,
    /// Largest OpenAPI specification processed, in bytes (given as text or fetched).
    pub max_spec_bytes: usize,
    /// Largest source a content import downloads (an archive, a document, a repository's
    /// pack), and the most a website crawl reads in all, in bytes.
    pub max_import_bytes: usize,
    /// Pages a website import crawls at most.
    pub import_crawl_pages: usize,
    /// Content imports running at once on this node; more wait `busy_wait_ms`, then get 503.
    pub max_imports: usize,
    /// How long an import or a PDF export waits for its turn before it is answered 503.
    pub busy_wait_ms: u64,
    /// Git operations (clones, fetches) served at once on this node; more wait
    /// `busy_wait_ms`, then get 503.
    pub max_git_operations: usize,
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
    /// Take a request's host and scheme from `X-Forwarded-Host` and `X-Forwarded-Proto`
    /// (behind a proxy that sets them), which decide the site a custom hostname serves.
    pub trust_forwarded_host: bool,
    /// The domain whose subdomains are organizations' hostnames (`{hostname}.{domain}`
    /// serves that organization's sites); none by default.
    pub sites_domain: Option<String>,
    /// The DNS server asked for the TXT records that prove control of a custom hostname
    /// (`_quire-challenge.{hostname}`); none: the first `nameserver` of `/etc/resolv.conf`.
    pub dns_server: Option<SocketAddr>,
    /// How long the link of an invitation by address lets its person in, in milliseconds.
    pub invite_ttl_ms: u64,
    /// The machine-translation provider of `ORG/translations` runs, if any.
    pub translation: TranslationConfig,
}

/// A secret (an API key): never printed, not even by `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Which machine-translation service runs translations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranslationProvider {
    /// An OpenAI-compatible chat-completions endpoint (`{base_url}/chat/completions`).
    OpenAi {
        /// Base URL, e.g. `https://api.openai.com/v1` or a self-hosted model server's.
        base_url: String,
        /// The model to ask.
        model: String,
        /// Bearer key, if the endpoint needs one.
        key: Option<Secret>,
    },
    /// The LibreTranslate API (`{url}/translate`).
    LibreTranslate {
        /// Base URL of the service.
        url: String,
        /// API key, if the service needs one.
        key: Option<Secret>,
    },
}

/// How translations are run.
#[derive(Debug, Clone)]
pub struct TranslationConfig {
    /// The provider; without one, a run fails at once with a clear reason.
    pub provider: Option<TranslationProvider>,
    /// Most characters one run may send to the provider; a run that would send more fails
    /// before sending anything.
    pub budget_chars: usize,
    /// Most text runs sent in one provider request.
    pub batch_segments: usize,
    /// Most characters sent in one provider request.
    pub batch_chars: usize,
    /// Attempts per provider request (transient failures are retried with backoff).
    pub attempts: u32,
    /// Backoff before the first retry, doubled for each further one (ms).
    pub backoff_ms: u64,
    /// How long one provider request may take (ms).
    pub timeout_ms: u64,
}

impl Default for TranslationConfig {
    fn default() -> Self {
        Self {
            provider: None,
            budget_chars: 2_000_000,
            batch_segments: 64,
            batch_chars: 8_000,
            attempts: 4,
            backoff_ms: 500,
            timeout_ms: 120_000,
        }
    }
}

/// How long a deleted space can be restored before it is purged, unless the operator sets
/// `--deleted-space-retention-ms`: GitBook's seven days.
pub const DEFAULT_RETENTION_MS: u64 = 7 * 24 * 3600 * 1000;

/// How long an invitation by address stays valid unless the operator sets
/// `--invite-ttl-ms`: fourteen days.
pub const DEFAULT_INVITE_TTL_MS: u64 = 14 * 24 * 3600 * 1000;

/// Most blocks of one PDF unless the operator sets `--pdf-max-blocks`.
pub const DEFAULT_PDF_MAX_BLOCKS: usize = quire_pdf::DEFAULT_MAX_BLOCKS;

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
            job_lease_ms: 5 * 60 * 1000,
            deleted_space_retention_ms: DEFAULT_RETENTION_MS,
            cache_mb: 96,
            pdf_font_dir: None,
            max_pdf_exports: 1,
            pdf_max_blocks: DEFAULT_PDF_MAX_BLOCKS,
            pdf_max_image_pixels: 25_000_000,
            pdf_max_pixels: 64_000_000,
            fetch_allow: Vec::new(),
            max_spec_bytes: 16 * 1024 * 1024,
            max_import_bytes: 64 * 1024 * 1024,
            import_crawl_pages: 200,
            max_imports: 2,
            max_git_operations: 8,
            busy_wait_ms: 10_000,
            metrics_token: None,
            rate_limit_token: 1200,
            rate_limit_address: 2400,
            rate_limit_loopback: false,
            trust_forwarded_for: false,
            trust_forwarded_host: false,
            sites_domain: None,
            dns_server: None,
            invite_ttl_ms: DEFAULT_INVITE_TTL_MS,
            translation: TranslationConfig::default(),
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
