//! [`Edge`]: what every request passes first, written as one tower service. Three
//! middleware (`axum::middleware::from_fn` with the bookkeeping, tower-http's panic guard and
//! body deadline) cost about half of a small request's time; one hand-written service
//! that boxes one future costs a fraction of that, and one served from a kept answer is
//! finished before `call` returns, with no future to box (BENCHMARKS.md, issue 11).

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
use tower::{Layer, Service, ServiceExt};

use super::{extract, REQUEST, REQUEST_ID};
use crate::answers::{Candidate, Found, Kept, Wait};
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
/// - a read whose answer is kept (`crate::answers`) is answered from it before any
///   routing, and an answer that may be kept is recorded and kept;
/// - a `GET` answer of text is sent gzip-compressed to a client that accepts it
///   (`crate::encoding`);
/// - its answer is counted in the metrics, by operationId and status, with its duration,
///   and it counts as in flight until then.
///
/// It is cloned for every request (hyper's service glue does), so it is one reference count
/// per connection: counts that every connection shares (the state's, the router's) bounce
/// between cores when touched by each request, and a kept answer touches none of them.
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

/// How a request that passed the edge's own checks is answered.
enum Serve<S, F> {
    /// Answered already: from a kept answer made by this operation (`Some`), or by the
    /// edge itself (past a rate limit, a refused path, a panic while routing).
    Answered(Option<&'static str>, Response),
    /// By a future.
    Pending(Pending<S, F>),
}

/// A future that answers a request.
enum Pending<S, F> {
    /// The router's.
    Routed(F),
    /// The router's, with what the answer rests on recorded, so that it may be kept.
    Recorded(Candidate, F),
    /// A kept answer once its listing version is read again, else the router's (boxed:
    /// the other requests' futures are not sized for it).
    Checked(Box<Recheck<S>>),
    /// Once another request has made its answer, served as if it came in then.
    Waiting(Box<(Wait, Request<Body>)>),
    /// A kept answer made by this operation, once it is compared with its handler's
    /// answer now (`verify_kept_answers`).
    Verified(Box<(&'static str, Response, S, Request<Body>)>),
}

/// How many times a request waits for another making its answer, at most. An answer made
/// from the database is not kept, and the request that makes it again, from the caches, is
/// waited for too; the lookups an answer rests on expire one by one, so that may happen
/// again meanwhile.
const WAITS: u8 = 3;

/// How long a request waits for another making its answer, at most, before it makes it.
const WAIT_AT_MOST: Duration = Duration::from_secs(10);

/// A kept answer to check, and what answers the request if it no longer holds.
struct Recheck<S> {
    kept: Arc<Kept>,
    candidate: Candidate,
    router: S,
    req: Request<Body>,
}

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

/// Routes a request sent to `host` to the site served there, if any.
async fn route_host<B>(state: &AppState, req: &mut Request<B>, host: crate::hosts::RequestHost) {
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
            return;
        }
    };
    let Some(routed) = map.route(&host.host, req.uri().path(), domain) else {
        return;
    };
    if let Some(uri) = crate::hosts::rewrite(req.uri(), &routed) {
        *req.uri_mut() = uri;
        req.extensions_mut().insert(crate::hosts::Hosted {
            url_root: format!("{}{}", host.origin, routed.root),
            root: routed.root,
        });
    }
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
                route_host(&edge.0.state, &mut req, host).await;
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
        let answer = match verdict {
            Verdict::Refused { limit, retry_after } => Serve::Answered(
                None,
                too_many(limit, retry_after.as_secs_f64().ceil() as u64),
            ),
            _ if extract::contains_encoded_nul(req.uri().path()) => Serve::Answered(
                None,
                error_response(
                    StatusCode::BAD_REQUEST,
                    "The request path must not contain NUL characters.",
                ),
            ),
            _ => serve(conn, req, gzip == Some(true), WAITS),
        };
        let done = Done {
            started,
            verdict,
            logged,
            serving,
        };
        let pending = match answer {
            // Finished here, with no future to box or scope to poll.
            Serve::Answered(kept, res) => {
                let res = encoding::not_modified(res, if_none_match.as_ref());
                let res = REQUEST.sync_scope(id.clone(), || done.finish(state, kept, res, id));
                return Either::Left(std::future::ready(Ok(res)));
            }
            Serve::Pending(pending) => pending,
        };
        let conn = conn.clone();
        Either::Right(Box::pin(REQUEST.scope(id.clone(), async move {
            let state = &conn.state;
            let mut pending = pending;
            let mut waits = WAITS;
            let (kept, res) = loop {
                break match pending {
                    Pending::Routed(routed) => (None, guarded(routed).await),
                    // Boxed, as the check below: the other requests' futures are not sized
                    // for what recording or checking holds.
                    Pending::Recorded(candidate, routed) => (
                        None,
                        Box::pin(state.answers.record(candidate, guarded(routed))).await,
                    ),
                    Pending::Checked(check) => Box::pin(recheck(state, *check)).await,
                    Pending::Verified(verify) => {
                        let (operation, kept, router, req) = *verify;
                        (
                            Some(operation),
                            verified(state, operation, kept, router, req).await,
                        )
                    }
                    Pending::Waiting(waiting) => {
                        let (wait, req) = *waiting;
                        let _ = tokio::time::timeout(WAIT_AT_MOST, wait.done()).await;
                        waits -= 1;
                        match serve(&conn, req, gzip == Some(true), waits) {
                            Serve::Answered(kept, res) => (kept, res),
                            Serve::Pending(next) => {
                                pending = next;
                                continue;
                            }
                        }
                    }
                };
            };
            let res = encoding::not_modified(res, if_none_match.as_ref());
            let res = match gzip {
                Some(gzip) => encoding::negotiate(res, gzip, &state.compressed).await,
                None => res,
            };
            Ok(done.finish(state, kept, res, id))
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
    /// Rate-limit headers, the log line, the request id and the metrics (`kept`: the
    /// operation whose kept answer this is).
    fn finish(
        self,
        state: &AppState,
        kept: Option<&'static str>,
        mut res: Response,
        id: HeaderValue,
    ) -> Response {
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
        let operation = kept.unwrap_or_else(|| {
            res.extensions()
                .get::<Answered>()
                .map_or(crate::metrics::OTHER, |a| a.operation)
        });
        state
            .metrics
            .observe(operation, res.status().as_u16(), elapsed);
        drop(self.serving);
        res
    }
}

/// How a request that passed the edge's own checks is answered: from a kept answer, or by
/// the router (recorded when its answer may be kept). A kept answer is looked up first, so
/// that its request's body is dropped unboxed.
///
/// `gzip`: whether its client accepts gzip; `waits`: how many more times it may wait for
/// another request making its answer.
fn serve<S, B>(conn: &Conn<S>, req: Request<B>, gzip: bool, waits: u8) -> Serve<S, S::Future>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let state = &conn.state;
    // A kept listing whose version is known without a read is served at once: no wait,
    // no boxed recheck.
    let found = state.answers.find(
        &req,
        gzip,
        waits > 0,
        &state.cache,
        &*state.clock,
        |space_id| crate::domain::listings::known_version(state, space_id),
    );
    let req = if may_have_body(&req) {
        let deadline = Duration::from_millis(state.config.body_timeout_ms.max(1));
        req.map(|body| Body::new(tower_http::timeout::TimeoutBody::new(deadline, body)))
    } else {
        req.map(Body::new)
    };
    let candidate = match found {
        Some(Found::Kept(operation, res)) if state.config.verify_kept_answers => {
            let router = conn.inner.clone();
            return Serve::Pending(Pending::Verified(Box::new((operation, res, router, req))));
        }
        Some(Found::Kept(operation, res)) => return Serve::Answered(Some(operation), res),
        Some(Found::Check(kept, candidate)) => {
            return Serve::Pending(Pending::Checked(Box::new(Recheck {
                kept,
                candidate,
                router: conn.inner.clone(),
                req,
            })));
        }
        Some(Found::Missing(candidate)) => Some(candidate),
        Some(Found::Wait(wait)) => return Serve::Pending(Pending::Waiting(Box::new((wait, req)))),
        None => None,
    };
    // The router does its work when polled, but a panic while it matches the route must
    // not take the connection's task down either.
    let mut router = conn.inner.clone();
    match (
        std::panic::catch_unwind(AssertUnwindSafe(|| router.call(req))),
        candidate,
    ) {
        (Ok(routed), Some(candidate)) => Serve::Pending(Pending::Recorded(candidate, routed)),
        (Ok(routed), None) => Serve::Pending(Pending::Routed(routed)),
        (Err(_), _) => Serve::Answered(None, panicked()),
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

/// A kept answer again if its space's listing version is still the one it was made at
/// (with the operation that made it), else the router's answer, recorded.
async fn recheck<S>(state: &AppState, check: Recheck<S>) -> (Option<&'static str>, Response)
where
    S: Service<Request<Body>, Response = Response, Error = Infallible>,
{
    let Recheck {
        kept,
        candidate,
        router,
        req,
    } = check;
    let served = match &kept.listing {
        Some((space_id, made_at)) => {
            crate::domain::listings::version(state, space_id).await.ok() == Some(*made_at)
        }
        None => false,
    };
    state.answers.checked(served);
    if served {
        let res = kept.response(candidate.gzip());
        if state.config.verify_kept_answers {
            return (
                Some(kept.operation),
                Box::pin(verified(state, kept.operation, res, router, req)).await,
            );
        }
        return (Some(kept.operation), res);
    }
    // Boxed: the check that serves nearly every such request is not sized for this.
    let routed = guarded(router.oneshot(req));
    (
        None,
        Box::pin(state.answers.record(candidate, routed)).await,
    )
}

/// `kept`, the kept answer of `operation` to `req`, if its handler (`router`) answers the
/// same now; else a 500 saying that they differ (`verify_kept_answers`).
async fn verified<S>(
    state: &AppState,
    operation: &'static str,
    kept: Response,
    router: S,
    req: Request<Body>,
) -> Response
where
    S: Service<Request<Body>, Response = Response, Error = Infallible>,
{
    let (method, uri, headers) = (
        req.method().clone(),
        req.uri().clone(),
        req.headers().clone(),
    );
    let (parts, body) = kept.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return panicked();
    };
    let gzipped =
        parts.headers.get(header::CONTENT_ENCODING) == Some(&HeaderValue::from_static("gzip"));
    let mut plain = Vec::new();
    let decoded = match gzipped {
        true => {
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut plain)
                .is_ok()
        }
        false => {
            plain.extend_from_slice(&bytes);
            true
        }
    };
    let (fresh, fresh_body) = guarded(router.oneshot(req)).await.into_parts();
    let Ok(now) = axum::body::to_bytes(fresh_body, usize::MAX).await else {
        return panicked();
    };
    if decoded && fresh.status == StatusCode::OK && now[..] == plain[..] {
        return Response::from_parts(parts, Body::from(bytes));
    }
    // A write may have landed between the kept answer's checks and its handler's answer:
    // the kept answer is at fault only if it would still be served now.
    if !still_served(state, method, uri.clone(), headers, &plain).await {
        return Response::from_parts(fresh, Body::from(now));
    }
    let status = fresh.status;
    tracing::error!(operation, path = %uri, %status, "a kept answer differs from its handler's answer now");
    error_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("The kept answer of {operation} to {uri} differs from the answer its handler gives now ({status}): what it rests on is not all covered by its key and checks."),
    )
}

/// Whether the kept answers would serve `plain` to this request now, its listing version
/// read again if it has one.
async fn still_served(
    state: &AppState,
    method: Method,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    plain: &[u8],
) -> bool {
    let mut req = Request::new(Body::empty());
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    *req.headers_mut() = headers;
    let found = state
        .answers
        .find(&req, false, false, &state.cache, &*state.clock, |space| {
            crate::domain::listings::known_version(state, space)
        });
    let res = match found {
        Some(Found::Kept(_, res)) => res,
        Some(Found::Check(kept, _)) => match &kept.listing {
            Some((space, made_at))
                if crate::domain::listings::version(state, space).await.ok() == Some(*made_at) =>
            {
                kept.response(false)
            }
            _ => return false,
        },
        _ => return false,
    };
    axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .is_ok_and(|b| b[..] == plain[..])
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
        state_with(dir, false).await
    }

    async fn state_with(dir: &std::path::Path, verify_kept_answers: bool) -> AppState {
        let config = crate::config::ServerConfig {
            data_dir: dir.to_path_buf(),
            body_timeout_ms: 100,
            verify_kept_answers,
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_for_an_answer_being_made_wait_for_it_instead_of_making_it_too() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let state = state(dir.path()).await;
        state.answers.reusable_paths(["/slow"]);
        let made = Arc::new(AtomicUsize::new(0));
        let counted = made.clone();
        let edge = EdgeLayer(state.clone()).layer(tower::service_fn(move |_: Request<Body>| {
            let counted = counted.clone();
            async move {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(200)).await;
                let mut res = axum::Json(serde_json::json!({ "made": n })).into_response();
                res.extensions_mut().insert(Answered {
                    operation: "slow",
                    reusable: true,
                });
                Ok::<_, Infallible>(res)
            }
        }));
        let ask = |token: &'static str| {
            let edge = edge.clone();
            async move {
                let req = Request::get("/slow")
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .body(Body::empty())
                    .unwrap();
                let res = edge.oneshot(req).await.unwrap();
                let body = axum::body::to_bytes(res.into_body(), 1 << 16)
                    .await
                    .unwrap();
                serde_json::from_slice::<serde_json::Value>(&body).unwrap()
            }
        };
        let first = tokio::spawn(ask("t1"));
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Arriving while the first is made: answered with it, not made again.
        let rest: Vec<_> = (0..8).map(|_| tokio::spawn(ask("t1"))).collect();
        // Another token's answer is its own.
        let other = tokio::spawn(ask("t2"));
        let first = first.await.unwrap();
        for r in rest {
            assert_eq!(r.await.unwrap(), first);
        }
        assert_ne!(other.await.unwrap(), first);
        assert_eq!(made.load(Ordering::SeqCst), 2, "one answer a token");
    }

    /// A reusable answer resting on something its key does not cover (here a counter the
    /// handler reads): served stale from memory, unless kept answers are verified, which
    /// answers 500 naming the operation.
    #[tokio::test]
    async fn a_kept_answer_that_no_longer_matches_its_handler_fails_when_verified() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        for verify in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let state = state_with(dir.path(), verify).await;
            state.answers.reusable_paths(["/counter"]);
            let calls = Arc::new(AtomicUsize::new(0));
            let counted = calls.clone();
            let edge = EdgeLayer(state).layer(tower::service_fn(move |_: Request<Body>| {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    let mut res = axum::Json(serde_json::json!({ "calls": n })).into_response();
                    res.extensions_mut().insert(Answered {
                        operation: "counter",
                        reusable: true,
                    });
                    Ok::<_, Infallible>(res)
                }
            }));
            let ask = || {
                let req = Request::get("/counter")
                    .header(header::AUTHORIZATION, "Bearer t1")
                    .body(Body::empty())
                    .unwrap();
                edge.clone().oneshot(req)
            };
            assert_eq!(ask().await.unwrap().status(), StatusCode::OK);
            let again = ask().await.unwrap();
            if verify {
                assert_eq!(again.status(), StatusCode::INTERNAL_SERVER_ERROR);
                let body = axum::body::to_bytes(again.into_body(), 1 << 16)
                    .await
                    .unwrap();
                let text = String::from_utf8_lossy(&body);
                assert!(text.contains("kept answer of counter"), "{text}");
            } else {
                assert_eq!(again.status(), StatusCode::OK);
                let body = axum::body::to_bytes(again.into_body(), 1 << 16)
                    .await
                    .unwrap();
                assert_eq!(body, r#"{"calls":0}"#, "served from memory");
                assert_eq!(calls.load(Ordering::SeqCst), 1);
            }
        }
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
