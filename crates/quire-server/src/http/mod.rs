//! The HTTP layer's plumbing: operations and their access checks, extractors, paging, and
//! the middleware every request passes (`edge`: request ids, logging, rate limits, NUL refusal,
//! budget, the fallback). `api::router` assembles them with the families' operations.

pub mod access;
pub mod cookies;
pub mod download;
pub mod edge;
pub mod extract;
pub mod json;
pub mod operation;
pub mod pagination;

use axum::body::Body;
use axum::extract::Request;
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::error_response;
use crate::state::AppState;
use operation::BodyLimit;

/// Large request bodies wait for room in the body budget and hold it until their answer
/// is made, so that many clients posting maximal bodies at once are served a few at a time
/// instead of all together. A body without a declared length counts as maximal.
pub async fn budget_bodies(
    State(state): State<AppState>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let chunked = req
        .headers()
        .contains_key(axum::http::header::TRANSFER_ENCODING);
    let limit = match req.extensions().get::<BodyLimit>() {
        Some(BodyLimit(op_limit)) => (*op_limit).min(state.config.max_body_bytes),
        None => state.config.max_body_bytes,
    };
    let size = match declared {
        Some(len) => len.min(limit),
        None if chunked => limit,
        None => 0,
    };
    if size <= crate::state::SMALL_BODY_BYTES {
        return next.run(req).await;
    }
    let kib = u32::try_from(size.div_ceil(1024)).unwrap_or(u32::MAX);
    match state.body_budget.acquire_many(kib).await {
        Ok(_permit) => next.run(req).await,
        Err(_) => error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "The server is shutting down.",
        ),
    }
}

/// The request id header: taken from the request when a proxy set one, else made here, and
/// sent back on the response.
static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

tokio::task_local! {
    /// The id of the request the running task serves, for [`WithRequestId`].
    static REQUEST: HeaderValue;
}

/// Log lines as `inner` formats them, led by the id of the request being served, if any.
/// A task-local read per line costs less than a span per request, which the formatter
/// would render for every request whether or not anything is logged.
pub struct WithRequestId<F>(pub F);

impl<S, N, F> tracing_subscriber::fmt::FormatEvent<S, N> for WithRequestId<F>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
    F: tracing_subscriber::fmt::FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let written = REQUEST.try_with(|id| {
            write!(
                writer,
                "request_id={} ",
                id.to_str().unwrap_or("(not text)")
            )
        });
        if let Ok(result) = written {
            result?;
        }
        self.0.format_event(ctx, writer, event)
    }
}

/// Log lines as JSON objects, one a line (`QUIRE_LOG_FORMAT=json`): `timestamp`, `level`,
/// `target`, `message`, the event's fields, and `request_id` inside a request.
pub struct JsonLines;

/// Collects an event's fields into a JSON object.
struct JsonFields<'a>(&'a mut serde_json::Map<String, serde_json::Value>);

impl tracing::field::Visit for JsonFields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for JsonLines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        let mut line = serde_json::Map::new();
        line.insert(
            "timestamp".into(),
            chrono::Utc::now()
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
                .into(),
        );
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        event.record(&mut JsonFields(&mut line));
        if let Ok(id) = REQUEST.try_with(|id| id.to_str().unwrap_or("(not text)").to_string()) {
            line.insert("request_id".into(), id.into());
        }
        let text = serde_json::to_string(&line).map_err(|_| std::fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

/// The official 404 for a path no operation serves.
pub async fn fallback(req: Request<Body>) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &format!("No endpoint at {} {}.", req.method(), req.uri().path()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A log sink the test can read back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_log_lines_are_objects_with_the_request_id() {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .event_format(JsonLines)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            REQUEST.sync_scope(HeaderValue::from_static("req-7"), || {
                tracing::warn!(status = 503u64, "a \"quoted\" message");
            });
            tracing::info!("outside");
        });
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["request_id"], "req-7");
        assert_eq!(lines[0]["level"], "WARN");
        assert_eq!(lines[0]["status"], 503);
        assert_eq!(lines[0]["message"], "a \"quoted\" message");
        assert!(lines[1].get("request_id").is_none());
    }

    #[test]
    fn log_lines_of_a_request_carry_its_id() {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .event_format(WithRequestId(tracing_subscriber::fmt::format()))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            REQUEST.sync_scope(HeaderValue::from_static("req-42"), || {
                tracing::error!("inside a request");
            });
            tracing::error!("outside any request");
        });
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("request_id=req-42 ") && lines[0].contains("inside"));
        assert!(!lines[1].contains("request_id") && lines[1].contains("outside"));
    }
}
