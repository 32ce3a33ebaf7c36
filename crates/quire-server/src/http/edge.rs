//! [`Edge`]: what every request passes first, written as one tower service. Three
//! middleware (`axum::middleware::from_fn` with the bookkeeping, tower-http's panic guard and
//! body deadline) cost about half of a small request's time; one hand-written service
//! that boxes one future costs a fraction of that (BENCHMARKS.md, issue 11).

use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use futures_util::future::Either;
use futures_util::FutureExt;
use tower::{Layer, Service};

use super::{extract, REQUEST, REQUEST_ID};
use crate::encoding;
use crate::error::{error_response, normalize_error_body};
use crate::metrics::{Answered, InFlight};
use crate::rate::Verdict;
use crate::state::AppState;

/// Wraps a service (the router) in [`Edge`].
#[derive(Clone)]
pub struct EdgeLayer(pub AppState);

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        Edge(Arc::new(Conn {
            inner,
            state: self.0.clone(),
            peer: None,
        }))
    }
}

/// What every request passes first:
/// - it gets a request id, which every log line it causes (errors included) carries (see
///   [`super::WithRequestId`]); one line per request is logged at `info` (method, path,
///   status, duration), and nothing is formatted when that is filtered out;
/// - it is counted against the rate limits of its client address and token (429 past
///   them), and its answer carries what is left (`RateLimit-*` headers);
/// - a path with `%00` is refused before any handler or query sees it (identifiers never
///   hold NUL characters, and PostgreSQL cannot compare text holding them);
/// - a body must arrive within the body deadline (408 from the extractor past it);
/// - a panic in a handler is answered with the official 500 body, and the connection and
///   the server live on;
/// - an error answered by the framework rather than by a handler gets the official JSON
///   error body;
/// - a `GET` answer of text is sent gzip-compressed to a client that accepts it
///   (`crate::encoding`);
/// - its answer is counted in the metrics, by operationId and status, with its duration,
///   and it counts as in flight until then.
///
/// It is cloned for every request (hyper's service glue does), so it is one reference count
/// per connection: counts that every connection shares (the state's, the router's) bounce
/// between cores when touched by each request.
#[derive(Clone)]
pub struct Edge<S>(Arc<Conn<S>>);

/// What an [`Edge`] holds for its connection.
struct Conn<S> {
    inner: S,
    state: AppState,
    /// The address of the connection's client (rate limits). Kept here rather than put on
    /// each request: a request's extensions are allocated on first use.
    peer: Option<IpAddr>,
}

impl<S: Clone> Edge<S> {
    /// This edge, for a connection from `peer`.
    pub fn for_peer(&self, peer: IpAddr) -> Self {
        Edge(Arc::new(Conn {
            inner: self.0.inner.clone(),
            state: self.0.state.clone(),
            peer: Some(peer),
        }))
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<S> Edge<S> {
    /// The host a request was sent to when it is not Quire's own and was not looked up yet.
    fn elsewhere<B>(&self, req: &Request<B>) -> Option<crate::hosts::RequestHost> {
        let state = &self.0.state;
        if req.extensions().get::<crate::hosts::Looked>().is_some() {
            return None;
        }
        crate::hosts::foreign(
            req.headers(),
            req.uri(),
            state.config.trust_forwarded_host,
            &state.public_url,
            &state.public_host,
        )
    }
}

/// Routes a request sent to `host` to the site served there, if any; answers at once on a
/// custom hostname whose control is not proven (`crate::hosts::unproven_answer`).
async fn route_host<B>(
    state: &AppState,
    req: &mut Request<B>,
    host: crate::hosts::RequestHost,
) -> Option<Response> {
    req.extensions_mut().insert(crate::hosts::Looked);
    let domain = state.config.sites_domain.as_deref();
    let map = match state
        .site_hosts
        .map(&state.db, state.now(), domain.is_some())
        .await
    {
        Ok(map) => map,
        Err(err) => {
            // Served as a request to Quire's own host; the next one looks again.
            tracing::error!(error = %err, "reading the sites' addresses failed");
            return None;
        }
    };
    let Some(routed) = map.route(&host.host, req.uri().path(), domain) else {
        return map.unproven(&host.host).then(crate::hosts::unproven_answer);
    };
    if let Some(uri) = crate::hosts::rewrite(req.uri(), &routed) {
        *req.uri_mut() = uri;
        req.extensions_mut().insert(crate::hosts::Hosted {
            url_root: format!("{}{}", host.origin, routed.root),
            root: routed.root,
        });
    }
    None
}

impl<S, B> Service<Request<B>> for Edge<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<std::future::Ready<Result<Response, Infallible>>, Answer>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Each request calls its own handle on the router, which is always ready (axum's
        // router answers `Ready` at once), so there is nothing to wait for.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if let Some(host) = self.elsewhere(&req) {
            // Sent to another host than Quire's: maybe a site's own address. Looked up,
            // then served as any request (`crate::hosts`).
            let mut edge = self.clone();
            return Either::Right(Box::pin(async move {
                if let Some(answer) = route_host(&edge.0.state, &mut req, host).await {
                    return Ok(answer);
                }
                edge.call(req).await
            }));
        }
        let started = Instant::now();
        let conn = &self.0;
        let serving = conn.state.metrics.serving();
        let id = match req.headers().get(&REQUEST_ID) {
            Some(given) => given.clone(),
            None => {
                // Written into a stack buffer: `to_string` went through the formatter.
                let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
                let text = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut text);
                let made = HeaderValue::from_str(text).expect("a UUID is a valid header value");
                req.headers_mut().insert(REQUEST_ID.clone(), made.clone());
                made
            }
        };
        let state = &conn.state;
        // The token as authentication reads it: however its header is spelt (`bearer`,
        // extra spaces), one token spends one budget.
        let address = client_address(state, conn.peer, req.headers());
        req.extensions_mut().insert(ClientAddress(address));
        let verdict = state.rate.check(
            address,
            crate::keys::bearer(req.headers()).map(str::as_bytes),
        );
        // A `GET` answer may be compressed (`crate::encoding`): whether its client accepts
        // that.
        let gzip = (req.method() == Method::GET).then(|| encoding::accepts_gzip(req.headers()));
        // A `GET` answer the client holds already is answered `304` (`encoding::not_modified`).
        let if_none_match = match req.method() == Method::GET {
            true => req.headers().get(header::IF_NONE_MATCH).cloned(),
            false => None,
        };
        let logged = tracing::enabled!(target: "quire::http", tracing::Level::INFO)
            .then(|| (req.method().clone(), req.uri().path().to_string()));
        let refused = match verdict {
            Verdict::Refused { limit, retry_after } => {
                Some(too_many(limit, retry_after.as_secs_f64().ceil() as u64))
            }
            _ if extract::contains_encoded_nul(req.uri().path()) => Some(error_response(
                StatusCode::BAD_REQUEST,
                "The request path must not contain NUL characters.",
            )),
            _ => None,
        };
        let done = Done {
            started,
            verdict,
            logged,
            serving,
        };
        let routed = match refused.map_or_else(|| route(conn, req), Serve::Answered) {
            Serve::Routed(routed) => routed,
            // Finished here, with no future to box or scope to poll.
            Serve::Answered(res) => {
                let res = encoding::not_modified(res, if_none_match.as_ref());
                let res = REQUEST.sync_scope(id.clone(), || done.finish(state, res, id));
                return Either::Left(std::future::ready(Ok(res)));
            }
        };
        let conn = conn.clone();
        Either::Right(Box::pin(REQUEST.scope(id.clone(), async move {
            let state = &conn.state;
            let res = guarded(routed).await;
            let res = encoding::not_modified(res, if_none_match.as_ref());
            let res = match gzip {
                Some(gzip) => encoding::negotiate(res, gzip, &state.compressed).await,
                None => res,
            };
            Ok(done.finish(state, res, id))
        })))
    }
}

/// What the edge does to every answer once it is made, and what it needs for it.
struct Done {
    started: Instant,
    verdict: Verdict,
    /// Method and path, when the request is logged.
    logged: Option<(axum::http::Method, String)>,
    serving: InFlight,
}

impl Done {
    /// Rate-limit headers, the log line, the request id and the metrics.
    fn finish(self, state: &AppState, mut res: Response, id: HeaderValue) -> Response {
        if let Verdict::Allowed(h) = self.verdict {
            rate_headers(&mut res, h.limit, h.remaining, h.reset_secs);
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        if let Some((method, path)) = self.logged {
            tracing::info!(
                target: "quire::http",
                "{method} {path} {} {:.1}ms",
                res.status().as_u16(),
                elapsed * 1000.0
            );
        }
        res.headers_mut().insert(REQUEST_ID.clone(), id);
        let operation = res
            .extensions()
            .get::<Answered>()
            .map_or(crate::metrics::OTHER, |a| a.operation);
        state
            .metrics
            .observe(operation, res.status().as_u16(), elapsed);
        drop(self.serving);
        res
    }
}

/// How a request is answered: by the edge itself, or by the router's future.
enum Serve<F> {
    Answered(Response),
    Routed(F),
}

/// The router's future for a request that passed the edge's own checks, or the official
/// 500 when matching its route panicked. A body that may still arrive gets the body
/// deadline.
fn route<S, B>(conn: &Conn<S>, req: Request<B>) -> Serve<S::Future>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let req = if may_have_body(&req) {
        let deadline = Duration::from_millis(conn.state.config.body_timeout_ms.max(1));
        req.map(|body| Body::new(tower_http::timeout::TimeoutBody::new(deadline, body)))
    } else {
        req.map(Body::new)
    };
    // The router does its work when polled, but a panic while it matches the route must
    // not take the connection's task down either.
    let mut router = conn.inner.clone();
    match std::panic::catch_unwind(AssertUnwindSafe(|| router.call(req))) {
        Ok(routed) => Serve::Routed(routed),
        Err(_) => Serve::Answered(panicked()),
    }
}

/// The answer of the router's future: a panic is answered with the official 500, and an
/// error the framework made gets the official body.
async fn guarded<F>(routed: F) -> Response
where
    F: Future<Output = Result<Response, Infallible>>,
{
    match AssertUnwindSafe(routed).catch_unwind().await {
        Ok(Ok(res)) => normalize_error_body(res),
        Ok(Err(never)) => match never {},
        Err(_) => panicked(),
    }
}

/// Whether a body may still arrive: only those get the body deadline's timer. The body
/// says so itself (a request ended with its headers reports its end), which holds on
/// HTTP/2 too, where a body need not declare a length.
fn may_have_body<B: HttpBody>(req: &Request<B>) -> bool {
    !req.body().is_end_stream()
}

/// The official 500, for a handler that panicked (the panic itself is in the log).
fn panicked() -> Response {
    error_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Internal error; see the server log for details.",
    )
}

/// The 429 past a rate limit, saying when to retry.
fn too_many(limit: u32, secs: u64) -> Response {
    let mut res = error_response(
        StatusCode::TOO_MANY_REQUESTS,
        &format!("Too many requests: the limit is {limit} a minute; retry in {secs} s."),
    );
    rate_headers(&mut res, limit, 0, secs);
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    res
}

/// The client's address as the edge found it, for handlers that count per address (the
/// app's sign-in).
#[derive(Clone, Copy, Debug)]
pub struct ClientAddress(pub Option<IpAddr>);

/// The client's address: the connection's, or the last `X-Forwarded-For` hop when the
/// operator says a proxy sets it.
fn client_address(
    state: &AppState,
    peer: Option<IpAddr>,
    headers: &axum::http::HeaderMap,
) -> Option<IpAddr> {
    if !state.config.trust_forwarded_for {
        return peer;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .next_back()
        .and_then(|hop| hop.trim().parse().ok())
        .or(peer)
}

/// The rate-limit headers of an answer (draft IETF names, as most clients read them).
fn rate_headers(res: &mut Response, limit: u32, remaining: u32, reset_secs: u64) {
    let h = res.headers_mut();
    h.insert("ratelimit-limit", HeaderValue::from(limit));
    h.insert("ratelimit-remaining", HeaderValue::from(remaining));
    h.insert("ratelimit-reset", HeaderValue::from(reset_secs));
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;
    use tower::ServiceExt;

    async fn state(dir: &std::path::Path) -> AppState {
        let config = crate::config::ServerConfig {
            data_dir: dir.to_path_buf(),
            body_timeout_ms: 100,
            ..Default::default()
        };
        AppState::open(
            config,
            std::sync::Arc::new(crate::clock::SystemClock),
            "http://quire.test".into(),
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_panicking_handler_gets_the_official_500_and_the_request_id() {
        let dir = tempfile::tempdir().unwrap();
        let edge = EdgeLayer(state(dir.path()).await).layer(tower::service_fn(
            |req: Request<Body>| async move {
                if req.uri().path() == "/boom" {
                    panic!("a handler bug");
                }
                Ok::<_, Infallible>(Response::new(Body::from("fine")))
            },
        ));
        let req = Request::get("/boom")
            .header("x-request-id", "req-9")
            .body(Body::empty())
            .unwrap();
        let res = edge.clone().oneshot(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(res.headers()["x-request-id"], "req-9");
        let body = axum::body::to_bytes(res.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], 500);
        // The service still answers after the panic.
        let res = edge
            .oneshot(Request::get("/ok").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.headers().contains_key("x-request-id"));
    }

    #[tokio::test]
    async fn nul_in_the_path_is_refused_before_the_handler() {
        let dir = tempfile::tempdir().unwrap();
        let edge = EdgeLayer(state(dir.path()).await).layer(tower::service_fn(
            |_: Request<Body>| async move {
                panic!("the handler must not run");
                #[allow(unreachable_code)]
                Ok::<Response, Infallible>(Response::new(Body::empty()))
            },
        ));
        let req = Request::get("/v1/spaces/a%00b")
            .body(Body::empty())
            .unwrap();
        let res = edge.oneshot(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    }

    #[tokio::test]
    async fn a_body_without_a_declared_length_still_has_a_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let edge = EdgeLayer(state(dir.path()).await).layer(tower::service_fn(
            |req: Request<Body>| async move {
                let read = axum::body::to_bytes(req.into_body(), 1 << 16).await;
                let timed_out = read.is_err_and(|e| super::super::extract::timed_out(&e));
                let status = if timed_out {
                    StatusCode::REQUEST_TIMEOUT
                } else {
                    StatusCode::OK
                };
                Ok::<_, Infallible>((status, "").into_response())
            },
        ));
        // A body that never ends and declares no length (as HTTP/2 allows).
        let never = futures_util::stream::pending::<Result<bytes::Bytes, std::io::Error>>();
        let req = Request::post("/v1/orgs")
            .body(Body::from_stream(never))
            .unwrap();
        let res = tokio::time::timeout(Duration::from_secs(10), edge.oneshot(req))
            .await
            .expect("the body deadline ends the read")
            .unwrap();
        assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    }
}
