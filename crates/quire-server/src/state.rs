//! Shared application state: what every layer below the bootstrap can reach.

use std::sync::Arc;

use crate::blobs::Blobs;
use crate::cache::AccessCache;
use crate::cache::ContentCache;
use crate::clock::SharedClock;
use crate::config::ServerConfig;
use crate::db::Db;
use crate::fetch::Fetcher;
use crate::keys::Keys;

pub mod fair;

/// What every handler can reach; cheap to clone (one reference count), since axum clones
/// it for every request.
#[derive(Clone, Debug)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The state shared by every request.
#[derive(Debug)]
pub struct Shared {
    /// Configuration in force.
    pub config: Arc<ServerConfig>,
    /// The database.
    pub db: Db,
    /// Signing keys shared by all nodes.
    pub keys: Keys,
    /// The clock (injectable for tests).
    pub clock: SharedClock,
    /// Base of absolute URLs, without a trailing slash.
    pub public_url: Arc<str>,
    /// The path of `public_url` (empty at a host's root), which every link of a published
    /// page starts with.
    pub public_path: Arc<str>,
    /// The host name of `public_url` (lower case): requests sent to another host may be
    /// for a site served on an address of its own (`crate::hosts`).
    pub public_host: Arc<str>,
    /// Where sites are served besides `/sites/{siteId}/` (`crate::hosts`).
    pub site_hosts: crate::hosts::SiteHosts,
    /// What pages lately previewed said of themselves (`domain::embeds`), by URL, for an
    /// hour.
    pub embeds: moka::sync::Cache<String, Arc<quire_content::convert::html::PageSummary>>,
    /// Pages being read for previews at once on this node: each holds up to 512 KiB and an
    /// outbound connection; past this, a URL is previewed by its address.
    pub embed_reads: tokio::sync::Semaphore,
    /// The tool lists of sites' outside MCP servers (`domain::mcp_servers`), by server and
    /// what it is (address, headers), for a minute; a server that failed lists none.
    pub mcp_tools: moka::sync::Cache<String, Arc<Vec<serde_json::Value>>>,
    /// The page each person's last recent-page note on this node was about, for a minute,
    /// so that reading the same page again costs no write (`domain::recent`).
    pub recent_noted: moka::sync::Cache<String, String>,
    /// Per-node cache of token and membership lookups.
    pub cache: Arc<AccessCache>,
    /// The compressed forms of answers sent lately (`crate::encoding`).
    pub compressed: crate::encoding::Recent,
    /// File bytes.
    pub blobs: Blobs,
    /// Immutable content objects and decoded revisions.
    pub content: ContentCache,
    /// What searches read of indexes, and whole answers.
    pub search: crate::cache::SearchCaches,
    /// Every outgoing request on a user's behalf (files and imports by URL).
    pub fetcher: Fetcher,
    /// Request body bytes (in KiB) that large requests may hold at once: bounds the memory
    /// that parsing and processing many maximal bodies at the same time can take.
    pub body_budget: tokio::sync::Semaphore,
    /// Page document bytes (in KiB) being parsed and applied at once: a parsed document takes
    /// tens of times its text in memory, so large batches take turns.
    pub document_budget: tokio::sync::Semaphore,
    /// This node's operator metrics.
    pub metrics: crate::metrics::Metrics,
    /// Rate limits per token and client address.
    pub rate: crate::rate::RateLimits,
    /// Fonts of the PDF typesetter, loaded on first use.
    pub pdf_fonts: std::sync::OnceLock<quire_pdf::Fonts>,
    /// PDF renderings running at once on this node (each takes a blocking thread, much CPU
    /// and memory): `max_pdf_exports`, the others wait their turn (`domain::heavy`).
    pub pdf_runs: Arc<tokio::sync::Semaphore>,
    /// Writes of one change request or one space's main content on this node take turns
    /// (`domain::change_requests::Attempts`).
    pub turns: crate::turns::Turns,
    /// Content imports running at once on this node (`max_imports`): each holds its
    /// download and documents in memory.
    pub imports: Arc<tokio::sync::Semaphore>,
    /// Git operations running at once on this node (`max_git_operations`): each runs a
    /// `git` process and streams a pack.
    pub git_runs: Arc<tokio::sync::Semaphore>,
    /// Spaces whose repository this node checked since it started (`domain::git::prepare`).
    pub git_checked: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Published pages rendering at once on this node, in turns by organization
    /// (`web/pages.rs`, [`render_slots`]).
    pub renders: fair::FairSlots,
    /// Woken when a job was enqueued to run now, so that this node's worker need not wait
    /// for its next pass.
    pub jobs_due: tokio::sync::Notify,
    /// Password hashing on this node: a few at once, a bounded queue (sign-in, new passwords).
    pub hashing: crate::passwords::Hashing,
    /// The kinds of durable job this node runs, registered once when the server starts.
    pub job_kinds: std::sync::OnceLock<Vec<JobKind>>,
}

/// A running job's work, borrowing the state and the job.
pub type JobRun = for<'a> fn(
    &'a AppState,
    &'a crate::store::jobs::Job,
) -> futures_util::future::BoxFuture<'a, anyhow::Result<()>>;

/// What is told, inside the transaction that records it, that a job was given up on (with
/// the reason and the time); whether it enqueued a job in its place.
pub type JobGivenUp = for<'a> fn(
    &'a mut crate::db::Tx,
    &'a crate::store::jobs::Job,
    &'a str,
    i64,
) -> futures_util::future::BoxFuture<'a, anyhow::Result<bool>>;

/// One kind of durable job (`domain::jobs`): its name in the job table, what runs it, and
/// what is told when it is given up on. The module that owns the work defines it and the
/// server registers every kind when it starts, so the job runner imports none of them.
#[derive(Clone, Copy, Debug)]
pub struct JobKind {
    /// The `kind` of its rows in the job table.
    pub name: &'static str,
    /// Runs one job of this kind.
    pub run: JobRun,
    /// Records with the job's owner that it was given up on; `None` when nobody is told.
    pub given_up: Option<JobGivenUp>,
}

impl AppState {
    /// Opens the database, runs migrations and loads keys.
    pub async fn open(
        config: ServerConfig,
        clock: SharedClock,
        public_url: String,
    ) -> anyhow::Result<Self> {
        let db = Db::connect(&config.database_url()).await?;
        let keys =
            Keys::from_secret(crate::store::keys::signing_secret(&db, clock.now_ms()).await?);
        let blobs = Blobs::open(config.blob_url.as_deref(), &config.data_dir.join("blobs"))?;
        Ok(Self(Arc::new(Shared {
            blobs,
            content: ContentCache::with_capacity(config.cache_mb * 1024 * 1024),
            search: crate::cache::SearchCaches::with_capacity(config.cache_mb * 1024 * 1024),
            fetcher: Fetcher::new(
                config.fetch_allow.clone(),
                std::time::Duration::from_secs(30),
            )?,
            cache: Arc::new(AccessCache::new(
                config.access_cache_ms,
                db.generations().clone(),
            )),
            site_hosts: crate::hosts::SiteHosts::new(config.access_cache_ms),
            embeds: moka::sync::Cache::builder()
                .max_capacity(2000)
                .time_to_live(std::time::Duration::from_secs(3600))
                .build(),
            embed_reads: tokio::sync::Semaphore::new(16),
            mcp_tools: moka::sync::Cache::builder()
                .max_capacity(1000)
                .time_to_live(std::time::Duration::from_secs(60))
                .build(),
            recent_noted: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(std::time::Duration::from_secs(60))
                .build(),
            compressed: Default::default(),
            body_budget: tokio::sync::Semaphore::new(body_budget_kib(&config)),
            document_budget: tokio::sync::Semaphore::new(DOCUMENT_BUDGET_KIB),
            metrics: crate::metrics::Metrics::new(),
            turns: Default::default(),
            jobs_due: tokio::sync::Notify::new(),
            renders: render_slots(),
            pdf_fonts: std::sync::OnceLock::new(),
            pdf_runs: Arc::new(tokio::sync::Semaphore::new(config.max_pdf_exports.max(1))),
            imports: Arc::new(tokio::sync::Semaphore::new(config.max_imports.max(1))),
            git_runs: Arc::new(tokio::sync::Semaphore::new(
                config.max_git_operations.max(1),
            )),
            git_checked: Default::default(),
            hashing: crate::passwords::Hashing::for_this_machine(),
            job_kinds: std::sync::OnceLock::new(),
            rate: crate::rate::RateLimits::new(
                config.rate_limit_token,
                config.rate_limit_address,
                config.rate_limit_loopback,
            ),
            config: Arc::new(config),
            db,
            keys,
            clock,
            public_path: url::Url::parse(&public_url)
                .map(|u| u.path().trim_end_matches('/').to_string())
                .unwrap_or_default()
                .into(),
            public_host: url::Url::parse(&public_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                .unwrap_or_default()
                .into(),
            public_url: public_url.into(),
        })))
    }

    /// An absolute URL for `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.public_url, path)
    }

    /// Now, from the state's clock.
    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// The document budget: one maximal batch (4 MiB of documents) at a time.
pub const DOCUMENT_BUDGET_KIB: usize = 4 * 1024;

/// Bodies up to this size never wait for the body budget.
pub const SMALL_BODY_BYTES: usize = 256 * 1024;

/// The body budget: room for one maximal body beside one maximal batch of documents (4 MiB).
fn body_budget_kib(config: &ServerConfig) -> usize {
    (config.max_body_bytes + 4 * 1024 * 1024) / 1024
}

/// Render slots: half the cores (two at least), one organization holding all but one of
/// them, so that a flood of one organization's renders keeps to its share and another's page
/// never waits for a render of that flood in progress. Each organization may have 64
/// renders waiting per slot of its share; more are told the site is busy.
fn render_slots() -> fair::FairSlots {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let total = (cores / 2).max(2);
    fair::FairSlots::new(total, total - 1, 64 * (total - 1))
}
