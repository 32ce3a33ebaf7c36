//! A loopback HTTP server for fixtures that Quire downloads (imports, files by URL, OpenAPI
//! sources): each request is answered by a test's handler, including the broken answers the
//! safe fetcher must survive (not HTTP at all, lying lengths, endless streams).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A request the server received.
pub struct Request {
    #[allow(dead_code)]
    pub method: String,
    pub path: String,
    /// The request line and headers, as sent.
    #[allow(dead_code)]
    pub head: String,
    pub body: Vec<u8>,
}

/// What the server answers.
pub enum Reply {
    /// A whole HTTP answer with its length declared.
    Http {
        status: u16,
        content_type: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// These bytes, as they are (not HTTP, or HTTP with a lying header).
    Raw(Vec<u8>),
    /// A 200 with no declared length, streaming `total` bytes in `chunk`s.
    Stream { chunk: usize, total: usize },
}

impl Reply {
    /// A 200 with this type and body.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Http {
            status: 200,
            content_type: content_type.into(),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A plain 404.
    pub fn not_found() -> Reply {
        Reply::ok("text/plain", "missing").with_status(404)
    }

    /// A 302 to `to`.
    pub fn redirect(to: &str) -> Reply {
        Reply::Http {
            status: 302,
            content_type: "text/plain".into(),
            headers: vec![("location".into(), to.into())],
            body: Vec::new(),
        }
    }

    /// The same answer with another status (HTTP answers only).
    pub fn with_status(mut self, code: u16) -> Reply {
        if let Reply::Http { status, .. } = &mut self {
            *status = code;
        }
        self
    }
}

type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// Serves each request with `handler`; returns the base URL.
pub async fn serve(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> String {
    serve_counting(handler).await.0
}

/// Serves each request with `handler`; returns the base URL and a count of the streamed
/// body bytes the server managed to write (to tell how much a client read).
pub async fn serve_counting(
    handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let written = Arc::new(AtomicUsize::new(0));
    let (handler, count): (Handler, _) = (Arc::new(handler), written.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(answer(stream, handler.clone(), count.clone()));
        }
    });
    (base, written)
}

/// Reads one request (head and declared body), answers it and closes the connection.
async fn answer(mut stream: TcpStream, handler: Handler, count: Arc<AtomicUsize>) {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut words = head.split_whitespace();
    let req = Request {
        method: words.next().unwrap_or("GET").to_string(),
        path: words.next().unwrap_or("/").to_string(),
        head: head.clone(),
        body: buf[head_end..].to_vec(),
    };
    // Handlers may do blocking work (running git, building archives).
    let reply = tokio::task::spawn_blocking(move || handler(&req))
        .await
        .unwrap();
    match reply {
        Reply::Http {
            status,
            content_type,
            headers,
            body,
        } => {
            let mut out = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in &headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            let mut bytes = out.into_bytes();
            bytes.extend_from_slice(&body);
            let _ = stream.write_all(&bytes).await;
        }
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes).await;
        }
        Reply::Stream { chunk, total } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\nconnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let block = vec![b'x'; chunk];
            let mut sent = 0;
            while sent < total {
                if stream.write_all(&block).await.is_err() {
                    return;
                }
                sent += chunk;
                count.fetch_add(chunk, Ordering::SeqCst);
            }
        }
    }
}
