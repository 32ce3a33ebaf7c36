//! The benchmark floor: a minimal axum server answering a small JSON body, built with the
//! same runtime and settings as Quire, so that Quire's throughput can be compared to it.
//! Usage: `floor 127.0.0.1:0 [SIZE...]` prints `listening on <addr>` and serves `GET /`, and
//! for each SIZE `GET /bytes/SIZE`: a JSON body of exactly SIZE bytes, made once at start, so
//! that an answer's size can be measured apart from the work of making it.

use axum::body::Bytes;
use axum::http::header;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

// Same allocator as the `quire` binary, so that the comparison is like for like.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A JSON object of exactly `size` bytes (at least the bytes of an empty padding member).
fn padded(size: usize) -> Bytes {
    let head = r#"{"object":"floor","pad":""#;
    let tail = r#""}"#;
    let pad = size.saturating_sub(head.len() + tail.len());
    Bytes::from(format!("{head}{}{tail}", "x".repeat(pad)))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let mut app = Router::new().route(
        "/",
        get(|| async { Json(json!({ "object": "floor", "ok": true })) }),
    );
    for size in args {
        let body = padded(size.parse()?);
        app = app.route(
            &format!("/bytes/{size}"),
            get(move || {
                let body = body.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], body) }
            }),
        );
    }
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    eprintln!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
