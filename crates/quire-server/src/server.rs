//! Running the server: bind, serve, drain on SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::sync::Arc;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::StatusCode;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::api::router;
use crate::clock::{SharedClock, SystemClock};
use crate::config::ServerConfig;
use crate::state::AppState;

/// Every kind of durable job, each defined by the module whose work it runs.
const JOB_KINDS: &[crate::state::JobKind] = &[
    crate::domain::spaces::PURGE_KIND,
    crate::domain::content::PRUNE_KIND,
    crate::domain::openapi::JOB_KIND,
    crate::domain::search::JOB_KIND,
    crate::domain::translations::JOB_KIND,
    crate::domain::git::sync::JOB_KIND,
    crate::domain::insights::PRUNE_KIND,
    crate::domain::members::PRUNE_KIND,
];

/// A bound, ready server.
pub struct Server {
    listener: TcpListener,
    state: AppState,
}

impl Server {
    /// Opens storage (running migrations) and binds the listener.
    pub async fn bind(config: ServerConfig) -> anyhow::Result<Self> {
        Self::bind_with_clock(config, Arc::new(SystemClock)).await
    }

    /// As [`Server::bind`], with an explicit clock.
    pub async fn bind_with_clock(config: ServerConfig, clock: SharedClock) -> anyhow::Result<Self> {
        if config.database_url.is_none() {
            std::fs::create_dir_all(&config.data_dir)?;
        }
        let listener = TcpListener::bind(config.bind).await?;
        let addr = listener.local_addr()?;
        let public_url = config.public_url_for(addr);
        let state = AppState::open(config, clock, public_url).await?;
        // A state just opened: nothing registered its kinds yet, so this cannot fail.
        let _ = state.job_kinds.set(JOB_KINDS.to_vec());
        Ok(Self { listener, state })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("bound listener has an address")
    }

    /// The state, for tests that reach past HTTP (e.g. the clock).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes, then drains in-flight requests.
    ///
    /// The accept loop is Quire's own rather than `axum::serve` because it must bound what a
    /// client can hold: a cap on open connections, a deadline for request headers (idle
    /// keep-alive included), and JSON bodies on the answers hyper makes by itself.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let app = router(self.state.clone());
        let (stop_jobs, jobs_stopped) = tokio::sync::watch::channel(false);
        let worker = crate::domain::jobs::spawn_worker(
            self.state.clone(),
            std::time::Duration::from_secs(5),
            jobs_stopped,
        );
        let sweeper = {
            let state = self.state.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_secs(60));
                loop {
                    every.tick().await;
                    state.rate.sweep();
                    if let Err(err) = crate::domain::git::sweep(&state).await {
                        tracing::warn!(error = %err, "sweeping git repositories failed");
                    }
                }
            })
        };
        let config = &self.state.config;
        let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_millis(config.header_timeout_ms.max(1)))
            .max_buf_size(MAX_HEAD_BYTES);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_header_list_size(MAX_HEAD_BYTES as u32);
        let graceful = GracefulShutdown::new();
        tokio::pin!(shutdown);
        loop {
            // Waiting for a permit before accepting leaves excess clients in the kernel's
            // backlog instead of holding a task and buffers for each.
            let permit = tokio::select! {
                permit = permits.clone().acquire_owned() => permit?,
                () = &mut shutdown => break,
            };
            let stream = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %err, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let (stream, peer) = stream;
            let _ = stream.set_nodelay(true);
            let io = TokioIo::new(JsonErrorHeads::new(stream));
            // Every request of the connection knows its client's address (rate limits).
            let service = TowerToHyperService::new(app.for_peer(peer.ip()));
            let conn = graceful.watch(builder.serve_connection(io, service).into_owned());
            tokio::spawn(async move {
                let _ = conn.await;
                drop(permit);
            });
        }
        drop(self.listener);
        tracing::info!("draining in-flight requests");
        graceful.shutdown().await;
        // The job in hand is finished (its lease would hand it to another node otherwise,
        // but its work would be lost); a job stuck past the bound is left to its lease.
        let _ = stop_jobs.send(true);
        let mut worker = worker;
        if tokio::time::timeout(Duration::from_secs(30), &mut worker)
            .await
            .is_err()
        {
            worker.abort();
        }
        sweeper.abort();
        self.state.db.close().await;
        Ok(())
    }
}

/// Largest request head (request line and headers) hyper buffers. Larger heads get a 431.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Gives hyper's own error answers (400, 414 and 431 for requests it cannot parse, written
/// before any handler runs, with an empty body) the official JSON error body. Responses of the
/// application always carry a body for these statuses, so only hyper's are rewritten.
struct JsonErrorHeads<T> {
    inner: T,
    /// A replacement being written, with how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<T> JsonErrorHeads<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            pending: None,
        }
    }
}

/// The JSON answer replacing one of hyper's empty error answers, if `head` is one.
fn json_error_head(head: &[u8]) -> Option<Vec<u8>> {
    // Every response passes here: decide on the status bytes before anything else.
    let (code, message) = match head.get(..13)? {
        b"HTTP/1.1 400 " => (400u16, "Malformed HTTP request."),
        b"HTTP/1.1 414 " => (414, "The request URI is too long."),
        b"HTTP/1.1 431 " => (431, "The request headers are too large."),
        _ => return None,
    };
    let text = std::str::from_utf8(head).ok()?;
    if !text.ends_with("\r\n\r\n") || !text.to_ascii_lowercase().contains("content-length: 0\r\n") {
        return None;
    }
    let body = format!(r#"{{"error":{{"code":{code},"message":"{message}"}}}}"#);
    let reason = StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    Some(
        format!(
            "HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrorHeads<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrorHeads<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.pending.is_none() {
            match json_error_head(buf) {
                Some(replacement) => self.pending = Some((replacement, 0)),
                None => return Pin::new(&mut self.inner).poll_write(cx, buf),
            }
        }
        // Write the whole replacement, then tell hyper its own answer was written.
        let this = &mut *self;
        if let Some((bytes, written)) = &mut this.pending {
            while *written < bytes.len() {
                match Pin::new(&mut this.inner).poll_write(cx, &bytes[*written..]) {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()))
                    }
                    Poll::Ready(Ok(n)) => *written += n,
                    other => return other,
                }
            }
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let single_head = bufs.len() == 1 && json_error_head(&bufs[0]).is_some();
        if self.pending.is_some() || single_head {
            return self.poll_write(cx, &bufs[0]);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown requested; draining in-flight requests");
}
