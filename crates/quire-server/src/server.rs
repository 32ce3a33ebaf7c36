//! Running the server: bind, serve, drain on SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::app::{router, AppState};
use crate::clock::{SharedClock, SystemClock};
use crate::config::ServerConfig;

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
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let app = router(self.state.clone());
        let worker =
            crate::jobs::spawn_worker(self.state.clone(), std::time::Duration::from_secs(5));
        let served = axum::serve(self.listener, app)
            .with_graceful_shutdown(shutdown)
            .await;
        worker.abort();
        served?;
        self.state.db.close().await;
        Ok(())
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
