//! `quire`: a self-hostable documentation workspace server speaking the GitBook v1 API.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use quire_server::server::{shutdown_signal, Server};
use quire_server::ServerConfig;

/// Quire: a self-hostable documentation workspace server speaking the GitBook v1 API.
#[derive(Parser)]
#[command(name = "quire", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API server until SIGTERM or SIGINT, then drain in-flight requests and exit.
    Serve(Box<ServeArgs>),
    /// Administer users and tokens directly in storage (safe while a server runs).
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Print the route table as JSON: method, path, official operationId and required
    /// access of every API operation.
    Routes,
    /// Ask the server on this machine for `/healthz`; exit 0 if it answers 200. A container's
    /// health check, with no other program in the image.
    Health {
        /// The server's listen address (an unspecified address is asked on loopback).
        #[arg(long, env = "QUIRE_BIND", default_value = "127.0.0.1:8080")]
        bind: SocketAddr,
    },
}

/// Where Quire keeps its data.
#[derive(Args, Clone)]
struct StorageArgs {
    /// Folder of the embedded SQLite database and blobs.
    #[arg(long, env = "QUIRE_DATA_DIR", default_value = "./quire-data")]
    data_dir: PathBuf,
    /// Database URL (`sqlite://path` or `postgres://user:pass@host/db`); overrides the data
    /// dir's database.
    #[arg(long, env = "QUIRE_DATABASE_URL")]
    database_url: Option<String>,
    /// Object store for file bytes: `s3://bucket/prefix` (credentials from `AWS_*`) or
    /// `file:///path`; default: the data dir's `blobs` folder.
    #[arg(long, env = "QUIRE_BLOB_URL")]
    blob_url: Option<String>,
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "QUIRE_BIND", default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Base of every absolute URL in responses; defaults to `http://<bind>`.
    #[arg(long, env = "QUIRE_PUBLIC_URL")]
    public_url: Option<String>,
    /// Largest accepted request body in bytes (larger ones get 413).
    #[arg(long, env = "QUIRE_MAX_BODY_BYTES", default_value_t = 16 * 1024 * 1024)]
    max_body_bytes: usize,
    /// How long (ms) a node may reuse what requests look up first (token, membership, space
    /// row, grants, authors); changes made on other nodes or by `quire admin` are seen after
    /// at most this long. 0 disables the cache.
    #[arg(long, env = "QUIRE_ACCESS_CACHE_MS", default_value_t = 1000)]
    access_cache_ms: u64,
    /// Most connections served at once; further clients wait in the listen backlog.
    #[arg(long, env = "QUIRE_MAX_CONNECTIONS", default_value_t = 1024)]
    max_connections: usize,
    /// How long (ms) a client may take to send a request's headers before it is cut off.
    #[arg(long, env = "QUIRE_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// How long (ms) a client may take to send a request's body (408 past it).
    #[arg(long, env = "QUIRE_BODY_TIMEOUT_MS", default_value_t = 60_000)]
    body_timeout_ms: u64,
    /// How long (ms) a background job stays reserved for the node that claimed it without a
    /// renewal (renewed every third of it while the job runs); a job whose node died is
    /// taken over by another node after this long.
    #[arg(long, env = "QUIRE_JOB_LEASE_MS", default_value_t = 5 * 60 * 1000)]
    job_lease_ms: u64,
    /// How long (ms) a deleted space can be restored before a background job purges it.
    #[arg(
        long,
        env = "QUIRE_DELETED_SPACE_RETENTION_MS",
        default_value_t = quire_server::config::DEFAULT_RETENTION_MS
    )]
    deleted_space_retention_ms: u64,
    /// Memory (MiB) for the content caches: objects, decoded revisions and page listings.
    #[arg(long, env = "QUIRE_CACHE_MB", default_value_t = 96)]
    cache_mb: u64,
    /// A folder of extra fonts (.ttf, .otf, .ttc) for PDF export, for scripts the shipped
    /// fonts (Libertinus Serif, DejaVu Sans Mono) lack, such as CJK or Arabic.
    #[arg(long, env = "QUIRE_PDF_FONT_DIR")]
    pdf_font_dir: Option<std::path::PathBuf>,
    /// PDF exports typeset at once on this node; further ones wait (`--busy-wait-ms`), then
    /// get 503 with `Retry-After`.
    #[arg(long, env = "QUIRE_MAX_PDF_EXPORTS", default_value_t = 1)]
    max_pdf_exports: usize,
    /// Most blocks (paragraphs, headings, list items, table cells, code lines…, and one per
    /// 32 bytes of text) one PDF may have; laying out takes up to about 6 KiB a block. Past it: 413.
    #[arg(long, env = "QUIRE_PDF_MAX_BLOCKS", default_value_t = quire_server::config::DEFAULT_PDF_MAX_BLOCKS)]
    pdf_max_blocks: usize,
    /// Most pixels of one image printed in a PDF (read from its header, before decoding);
    /// a larger image is left out with a note in its place.
    #[arg(long, env = "QUIRE_PDF_MAX_IMAGE_PIXELS", default_value_t = 25_000_000)]
    pdf_max_image_pixels: u64,
    /// Most pixels of all the images of one PDF together; the images past it are left out
    /// with a note.
    #[arg(long, env = "QUIRE_PDF_MAX_PIXELS", default_value_t = 64_000_000)]
    pdf_max_pixels: u64,
    /// Networks (CIDR, comma-separated) that downloads by URL may reach besides public
    /// addresses, e.g. `10.1.0.0/16` for an internal mirror. None by default.
    #[arg(long, env = "QUIRE_FETCH_ALLOW", value_delimiter = ',')]
    fetch_allow: Vec<ipnet::IpNet>,
    /// Bearer token for `GET /metrics` (Prometheus text format); without one, no metrics
    /// are served.
    #[arg(long, env = "QUIRE_METRICS_TOKEN")]
    metrics_token: Option<String>,
    /// Largest OpenAPI specification processed, in bytes (text given or document fetched).
    #[arg(long, env = "QUIRE_MAX_SPEC_BYTES", default_value_t = 16 * 1024 * 1024)]
    max_spec_bytes: usize,
    /// Largest source a content import downloads (archive, document, wiki pack), and the
    /// most a website import reads in all, in bytes.
    #[arg(long, env = "QUIRE_MAX_IMPORT_BYTES", default_value_t = 64 * 1024 * 1024)]
    max_import_bytes: usize,
    /// Pages a website import crawls at most.
    #[arg(long, env = "QUIRE_IMPORT_CRAWL_PAGES", default_value_t = 200)]
    import_crawl_pages: usize,
    /// Content imports running at once on this node; further ones wait (`--busy-wait-ms`),
    /// then get 503 with `Retry-After`.
    #[arg(long, env = "QUIRE_MAX_IMPORTS", default_value_t = 2)]
    max_imports: usize,
    /// Git clones and fetches served at once on this node; further ones wait
    /// (`--busy-wait-ms`), then get 503 with `Retry-After`.
    #[arg(long, env = "QUIRE_MAX_GIT_OPERATIONS", default_value_t = 8)]
    max_git_operations: usize,
    /// How long (ms) an import or a PDF export waits for its turn on a busy node before it
    /// is answered 503 with `Retry-After`.
    #[arg(long, env = "QUIRE_BUSY_WAIT_MS", default_value_t = 10_000)]
    busy_wait_ms: u64,
    /// Requests a minute allowed per API token (0: no limit); 429 past it.
    #[arg(long, env = "QUIRE_RATE_LIMIT_TOKEN", default_value_t = 1200)]
    rate_limit_token: u32,
    /// Requests a minute allowed per client address (0: no limit); 429 past it.
    #[arg(long, env = "QUIRE_RATE_LIMIT_ADDRESS", default_value_t = 2400)]
    rate_limit_address: u32,
    /// Rate-limit loopback clients too (they are not by default: local tools and tests).
    #[arg(long, env = "QUIRE_RATE_LIMIT_LOOPBACK")]
    rate_limit_loopback: bool,
    /// Take the client address from the last `X-Forwarded-For` hop (only behind a proxy
    /// that sets it).
    #[arg(long, env = "QUIRE_TRUST_FORWARDED_FOR")]
    trust_forwarded_for: bool,
    /// Take a request's host and scheme from `X-Forwarded-Host` and `X-Forwarded-Proto`
    /// (only behind a proxy that sets them): the host decides which site a custom hostname
    /// serves.
    #[arg(long, env = "QUIRE_TRUST_FORWARDED_HOST")]
    trust_forwarded_host: bool,
    /// Serve each organization's sites on `{its hostname}.{domain}` (a wildcard DNS name
    /// pointing at Quire), as `/{site basename}/`.
    #[arg(long, env = "QUIRE_SITES_DOMAIN")]
    sites_domain: Option<String>,
    /// The DNS server (`address:port`) asked for the TXT record that proves control of a
    /// custom hostname; default: the first `nameserver` of `/etc/resolv.conf`.
    #[arg(long, env = "QUIRE_DNS_SERVER")]
    dns_server: Option<std::net::SocketAddr>,
    /// How long (ms) the link of an invitation by address lets its person in; an expired
    /// invitation lets no one in and is deleted by a background job.
    #[arg(
        long,
        env = "QUIRE_INVITE_TTL_MS",
        default_value_t = quire_server::config::DEFAULT_INVITE_TTL_MS
    )]
    invite_ttl_ms: u64,
    #[command(flatten)]
    translation: TranslationArgs,
    #[command(flatten)]
    storage: StorageArgs,
}

/// The machine-translation provider of translation runs (one of the two, OpenAI-compatible
/// first). A provider on a private network must also be listed in `--fetch-allow`.
#[derive(Args)]
struct TranslationArgs {
    /// Base URL of an OpenAI-compatible chat-completions API (e.g. `https://api.openai.com/v1`
    /// or a self-hosted model server's `/v1`).
    #[arg(long, env = "QUIRE_TRANSLATION_OPENAI_URL")]
    translation_openai_url: Option<String>,
    /// Model asked by the OpenAI-compatible API.
    #[arg(
        long,
        env = "QUIRE_TRANSLATION_OPENAI_MODEL",
        default_value = "gpt-4o-mini"
    )]
    translation_openai_model: String,
    /// Bearer key of the OpenAI-compatible API.
    #[arg(long, env = "QUIRE_TRANSLATION_OPENAI_KEY", hide_env_values = true)]
    translation_openai_key: Option<String>,
    /// Base URL of a LibreTranslate API.
    #[arg(long, env = "QUIRE_TRANSLATION_LIBRETRANSLATE_URL")]
    translation_libretranslate_url: Option<String>,
    /// API key of the LibreTranslate API.
    #[arg(
        long,
        env = "QUIRE_TRANSLATION_LIBRETRANSLATE_KEY",
        hide_env_values = true
    )]
    translation_libretranslate_key: Option<String>,
    /// Most characters one translation run may send to the provider.
    #[arg(
        long,
        env = "QUIRE_TRANSLATION_BUDGET_CHARS",
        default_value_t = 2_000_000
    )]
    translation_budget_chars: usize,
    /// Most text runs per provider request.
    #[arg(long, env = "QUIRE_TRANSLATION_BATCH_SEGMENTS", default_value_t = 64)]
    translation_batch_segments: usize,
    /// Attempts per provider request (retried with exponential backoff).
    #[arg(long, env = "QUIRE_TRANSLATION_ATTEMPTS", default_value_t = 4)]
    translation_attempts: u32,
}

impl TranslationArgs {
    fn config(self) -> quire_server::config::TranslationConfig {
        use quire_server::config::{Secret, TranslationProvider};
        let key = |k: Option<String>| k.filter(|k| !k.is_empty()).map(Secret::new);
        let provider = match (
            self.translation_openai_url.filter(|u| !u.is_empty()),
            self.translation_libretranslate_url
                .filter(|u| !u.is_empty()),
        ) {
            (Some(base_url), _) => Some(TranslationProvider::OpenAi {
                base_url,
                model: self.translation_openai_model,
                key: key(self.translation_openai_key),
            }),
            (None, Some(url)) => Some(TranslationProvider::LibreTranslate {
                url,
                key: key(self.translation_libretranslate_key),
            }),
            (None, None) => None,
        };
        quire_server::config::TranslationConfig {
            provider,
            budget_chars: self.translation_budget_chars,
            batch_segments: self.translation_batch_segments.max(1),
            attempts: self.translation_attempts.max(1),
            ..Default::default()
        }
    }
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create the user if missing and print a new API token as the only line on stdout.
    CreateToken {
        /// The user's e-mail address.
        #[arg(long)]
        email: String,
        /// Display name for a new user (default: the e-mail's local part).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// Create a user who signs in to the app with a password, or set the password of an
    /// existing user (which ends their app sessions). The password is read from stdin.
    SetPassword {
        /// The user's e-mail address.
        #[arg(long)]
        email: String,
        /// Display name for a new user (default: the e-mail's local part).
        #[arg(long)]
        name: Option<String>,
        /// Make the user an instance administrator.
        #[arg(long)]
        admin: bool,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// Revoke one token (--token) or every token of a user (--email).
    RevokeToken {
        /// The token to revoke.
        #[arg(long, conflicts_with = "email", required_unless_present = "email")]
        token: Option<String>,
        /// Revoke all tokens of this user.
        #[arg(long)]
        email: Option<String>,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// Write a consistent copy of the storage (SQLite database and blobs; on PostgreSQL the
    /// blobs, beside a pg_dump) into a new folder, while the server keeps running.
    Backup {
        /// The folder to write (new or empty).
        #[arg(long)]
        to: std::path::PathBuf,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// List the background jobs given up on (they kept failing, or their process kept
    /// stopping while running them), latest first, one a line with the reason.
    FailedJobs {
        /// Most jobs listed.
        #[arg(long, default_value_t = 100)]
        limit: i64,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// Restore a backup into storage that holds no database yet (a new data dir).
    Restore {
        /// The backup folder.
        #[arg(long)]
        from: std::path::PathBuf,
        #[command(flatten)]
        storage: StorageArgs,
    },
}

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn config(storage: StorageArgs) -> ServerConfig {
    ServerConfig {
        data_dir: storage.data_dir,
        database_url: storage.database_url,
        blob_url: storage.blob_url,
        ..ServerConfig::default()
    }
}

/// One `GET /healthz` over plain TCP, with a deadline: a hung server counts as unhealthy.
fn health(mut addr: SocketAddr) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    let wait = std::time::Duration::from_secs(5);
    let mut conn = std::net::TcpStream::connect_timeout(&addr, wait)?;
    conn.set_read_timeout(Some(wait))?;
    conn.set_write_timeout(Some(wait))?;
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
    // The status line: `HTTP/1.1 200 OK`.
    let mut head = [0u8; 12];
    conn.read_exact(&mut head)?;
    anyhow::ensure!(
        &head[9..12] == b"200",
        "{addr}/healthz answered {}",
        String::from_utf8_lossy(&head)
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("QUIRE_LOG")
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .with_writer(std::io::stderr);
    // `QUIRE_LOG_FORMAT=json`: one JSON object a line, for log collectors.
    if std::env::var("QUIRE_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json")) {
        logs.event_format(quire_server::http::JsonLines).init();
    } else {
        logs.event_format(quire_server::http::WithRequestId(
            tracing_subscriber::fmt::format(),
        ))
        .init();
    }
    match cli.command {
        Command::Health { bind } => health(bind)?,
        Command::Routes => {
            let routes = quire_server::api::catalog::catalog();
            println!("{}", serde_json::to_string_pretty(&routes)?);
        }
        Command::Serve(args) => {
            let cfg = ServerConfig {
                bind: args.bind,
                public_url: args.public_url,
                max_body_bytes: args.max_body_bytes,
                access_cache_ms: args.access_cache_ms,
                max_connections: args.max_connections,
                header_timeout_ms: args.header_timeout_ms,
                body_timeout_ms: args.body_timeout_ms,
                job_lease_ms: args.job_lease_ms,
                deleted_space_retention_ms: args.deleted_space_retention_ms,
                cache_mb: args.cache_mb,
                pdf_font_dir: args.pdf_font_dir,
                max_pdf_exports: args.max_pdf_exports,
                pdf_max_blocks: args.pdf_max_blocks,
                pdf_max_image_pixels: args.pdf_max_image_pixels,
                pdf_max_pixels: args.pdf_max_pixels,
                fetch_allow: args.fetch_allow,
                metrics_token: args.metrics_token.filter(|t| !t.is_empty()),
                max_spec_bytes: args.max_spec_bytes,
                max_import_bytes: args.max_import_bytes,
                import_crawl_pages: args.import_crawl_pages,
                max_imports: args.max_imports,
                max_git_operations: args.max_git_operations,
                busy_wait_ms: args.busy_wait_ms,
                rate_limit_token: args.rate_limit_token,
                rate_limit_address: args.rate_limit_address,
                rate_limit_loopback: args.rate_limit_loopback,
                trust_forwarded_for: args.trust_forwarded_for,
                trust_forwarded_host: args.trust_forwarded_host,
                sites_domain: args
                    .sites_domain
                    .map(|d| d.trim_matches('.').to_ascii_lowercase()),
                dns_server: args.dns_server,
                invite_ttl_ms: args.invite_ttl_ms,
                translation: args.translation.config(),
                ..config(args.storage)
            };
            let server = Server::bind(cfg).await?;
            tracing::info!("quire listening on http://{}", server.local_addr());
            server.run(shutdown_signal()).await?;
        }
        Command::Admin(AdminCommand::CreateToken {
            email,
            name,
            storage,
        }) => {
            let token =
                quire_server::admin::create_token(&config(storage), &email, name.as_deref())
                    .await?;
            println!("{token}");
        }
        Command::Admin(AdminCommand::SetPassword {
            email,
            name,
            admin,
            storage,
        }) => {
            let mut password = String::new();
            std::io::stdin().read_line(&mut password)?;
            let password = password.trim_end_matches(['\r', '\n']);
            quire_server::admin::set_password(
                &config(storage),
                &email,
                name.as_deref(),
                password,
                admin,
            )
            .await?;
            eprintln!("password set for {email}");
        }
        Command::Admin(AdminCommand::RevokeToken {
            token,
            email,
            storage,
        }) => {
            let n = quire_server::admin::revoke_token(
                &config(storage),
                token.as_deref(),
                email.as_deref(),
            )
            .await?;
            eprintln!("revoked {n} token(s)");
            if n == 0 {
                std::process::exit(1);
            }
        }
        Command::Admin(AdminCommand::Backup { to, storage }) => {
            let m = quire_server::admin::backup(&config(storage), &to).await?;
            eprintln!(
                "backup of the {} database and {} blobs ({} bytes) written to {}",
                m.database,
                m.blobs,
                m.blob_bytes,
                to.display()
            );
        }
        Command::Admin(AdminCommand::FailedJobs { limit, storage }) => {
            let jobs = quire_server::admin::failed_jobs(&config(storage), limit).await?;
            for j in &jobs {
                println!(
                    "{}\t{}\t{}\t{}\tstarts={} failures={}\t{}",
                    quire_server::clock::iso(j.failed_at),
                    j.kind,
                    j.id,
                    j.payload,
                    j.attempts,
                    j.failures,
                    j.reason.as_deref().unwrap_or("")
                );
            }
            eprintln!("{} failed job(s)", jobs.len());
        }
        Command::Admin(AdminCommand::Restore { from, storage }) => {
            let m = quire_server::admin::restore(&config(storage), &from).await?;
            eprintln!("restored the backup taken at {} ms", m.taken_at);
        }
    }
    Ok(())
}
