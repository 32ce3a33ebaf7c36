//! Operator metrics in the Prometheus text format (`GET /metrics`): requests by operation
//! and status, latency by operation, and, read when scraped, database connections, due jobs
//! and access-cache lookups.

use std::sync::Mutex;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// The operationId a route answered for, put on its response for the edge to count.
#[derive(Debug, Clone, Copy)]
pub struct Answered {
    /// The operationId.
    pub operation: &'static str,
    /// Whether its answers may be kept and served again (`crate::answers`).
    pub reusable: bool,
}

/// Label of answers not made by an API operation (health, files, unknown paths).
pub const OTHER: &str = "other";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    operation: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

/// What is read when scraped, not counted as it happens.
#[derive(Debug, Default, Clone)]
pub struct Scraped {
    /// Open database connections, and how many of them are idle.
    pub db_connections: u32,
    pub db_idle: u32,
    /// Due jobs per kind: count and age of the oldest, in seconds.
    pub jobs: Vec<(String, i64, f64)>,
    /// Access-cache hits and misses per map.
    pub cache: Vec<(&'static str, u64, u64)>,
}

#[derive(Debug, Default)]
struct ScrapedCollector(Mutex<Scraped>);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

impl prometheus_client::collector::Collector for ScrapedCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut family = encoder.encode_descriptor(
            "quire_db_connections",
            "Open database connections of this node's pool",
            None,
            MetricType::Gauge,
        )?;
        for (state, n) in [
            ("idle", s.db_idle),
            ("busy", s.db_connections.saturating_sub(s.db_idle)),
        ] {
            ConstGauge::new(i64::from(n)).encode(family.encode_family(&StateLabel { state })?)?;
        }
        let mut family = encoder.encode_descriptor(
            "quire_jobs_due",
            "Durable jobs due and not held by any node",
            None,
            MetricType::Gauge,
        )?;
        for (kind, count, _) in &s.jobs {
            let labels = KindLabel { kind: kind.clone() };
            ConstGauge::new(*count).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            "quire_jobs_oldest_due_seconds",
            "How long the oldest due job has waited",
            None,
            MetricType::Gauge,
        )?;
        for (kind, _, age) in &s.jobs {
            let labels = KindLabel { kind: kind.clone() };
            ConstGauge::new(*age).encode(family.encode_family(&labels)?)?;
        }
        for (metric, help, pick) in [
            (
                "quire_access_cache_hits",
                "Access-cache lookups answered from this node's memory",
                true,
            ),
            (
                "quire_access_cache_misses",
                "Access-cache lookups that went to the database",
                false,
            ),
        ] {
            let mut family = encoder.encode_descriptor(metric, help, None, MetricType::Counter)?;
            for (name, hits, misses) in &s.cache {
                let labels = NameLabel {
                    name: (*name).to_string(),
                };
                let n = if pick { *hits } else { *misses };
                ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// This node's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<OperationLabels, Histogram>,
    in_flight: Gauge,
    scraped: std::sync::Arc<ScrapedCollector>,
}

/// A request being served: counted in [`Metrics::in_flight`] until dropped.
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, registered.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "quire_http_requests",
            "Answered requests by operationId and status",
            requests.clone(),
        );
        // 0.25 ms to about 4 s.
        let latency = Family::<OperationLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_25, 2.0, 15))
        });
        registry.register(
            "quire_http_request_duration_seconds",
            "Time from a request's arrival to its answer's head, by operationId",
            latency.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "quire_http_requests_in_flight",
            "Requests this node is serving now",
            in_flight.clone(),
        );
        let scraped = std::sync::Arc::new(ScrapedCollector::default());
        registry.register_collector(Box::new(scraped.clone()));
        Self {
            registry,
            requests,
            latency,
            in_flight,
            scraped,
        }
    }

    /// Counts a request as being served until the returned guard is dropped.
    pub fn serving(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// How many requests this node is serving now.
    pub fn in_flight(&self) -> i64 {
        self.in_flight.get()
    }

    /// Counts one answered request.
    pub fn observe(&self, operation: &'static str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels { operation, status })
            .inc();
        self.latency
            .get_or_create(&OperationLabels { operation })
            .observe(seconds);
    }

    /// The text exposition, with `scraped` as the values read at this scrape.
    pub fn render(&self, scraped: Scraped) -> String {
        *self.scraped.0.lock().unwrap_or_else(|e| e.into_inner()) = scraped;
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_latency_and_scraped_values_are_exposed() {
        let m = Metrics::new();
        m.observe("getSpaceById", 200, 0.002);
        m.observe("getSpaceById", 200, 0.003);
        m.observe("getSpaceById", 404, 0.001);
        let text = m.render(Scraped {
            db_connections: 3,
            db_idle: 2,
            jobs: vec![("purge-space".into(), 4, 12.5)],
            cache: vec![("tokens", 10, 1)],
        });
        assert!(
            text.contains("quire_http_requests_total{operation=\"getSpaceById\",status=\"200\"} 2")
        );
        assert!(
            text.contains("quire_http_requests_total{operation=\"getSpaceById\",status=\"404\"} 1")
        );
        assert!(text
            .contains("quire_http_request_duration_seconds_count{operation=\"getSpaceById\"} 3"));
        assert!(text.contains("quire_db_connections{state=\"busy\"} 1"));
        assert!(text.contains("quire_jobs_due{kind=\"purge-space\"} 4"));
        assert!(text.contains("quire_jobs_oldest_due_seconds{kind=\"purge-space\"} 12.5"));
        assert!(text.contains("quire_access_cache_hits_total{name=\"tokens\"} 10"));
        assert!(text.contains("quire_access_cache_misses_total{name=\"tokens\"} 1"));
    }
}
