//! The benchmark floor: a minimal axum server answering a small JSON body, built with the
//! same runtime and settings as Quire, so that Quire's throughput can be compared to it.
//! Usage: `floor 127.0.0.1:0` prints `listening on <addr>` and serves `GET /`.

use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

// Same allocator as the `quire` binary, so that the comparison is like for like.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    eprintln!("listening on {}", listener.local_addr()?);
    let app = Router::new().route(
        "/",
        get(|| async { Json(json!({ "object": "floor", "ok": true })) }),
    );
    axum::serve(listener, app).await?;
    Ok(())
}
