//! Operator metrics in the Prometheus text format (`GET /metrics`): requests by operation
//! and status, latency by operation, and, read when scraped, database connections, due jobs
//! and access-cache lookups.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::per_thread::PerThread;

/// The operationId a route answered for, put on its response for the edge to count.
#[derive(Debug, Clone, Copy)]
pub struct Answered {
    /// The operationId.
    pub operation: &'static str,
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
    /// Jobs given up on, per kind.
    pub failed_jobs: Vec<(String, i64)>,
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
        let mut family = encoder.encode_descriptor(
            "quire_jobs_failed",
            "Durable jobs given up on, kept for the operator (quire admin failed-jobs)",
            None,
            MetricType::Gauge,
        )?;
        for (kind, count) in &s.failed_jobs {
            let labels = KindLabel { kind: kind.clone() };
            ConstGauge::new(*count).encode(family.encode_family(&labels)?)?;
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
    counts: Arc<Counts>,
    scraped: Arc<ScrapedCollector>,
}

/// Requests counted per thread, summed when scraped. Why: counters, histograms and a gauge
/// shared by every request are cache lines every core writes, and the histogram takes a
/// lock; a served-from-memory answer paid more for them than for finding itself
/// (BENCHMARKS.md, issue 11). A thread's shard is written by that thread alone, except
/// that a request that began on it and ended on another leaves the in-flight count there.
struct Counts {
    shards: std::sync::RwLock<Vec<Arc<Shard>>>,
    /// This thread's shard (a thread that dropped it makes another, which is counted too).
    mine: PerThread<Option<Arc<Shard>>>,
}

impl std::fmt::Debug for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counts").finish_non_exhaustive()
    }
}

/// The counts of one thread.
#[derive(Debug, Default)]
struct Shard {
    /// Requests begun minus requests ended, counted where each began.
    in_flight: AtomicI64,
    /// Locked by its thread for each request, and by a scrape: never waited for in practice.
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    requests: HashMap<(&'static str, u16), u64, foldhash::fast::RandomState>,
    latency: HashMap<&'static str, Latency, foldhash::fast::RandomState>,
}

/// Latency buckets: 0.25 ms to about 4 s, doubling (upper bounds), then the rest.
const BUCKETS: usize = 15;

/// One operation's latency histogram (counts per bucket, not cumulative).
#[derive(Debug, Default, Clone)]
struct Latency {
    sum: f64,
    count: u64,
    buckets: [u64; BUCKETS + 1],
}

/// The upper bound of bucket `i`.
fn upper_bound(i: usize) -> f64 {
    0.000_25 * f64::from(1u32 << i)
}

impl Counts {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            shards: std::sync::RwLock::new(Vec::new()),
            mine: PerThread::default(),
        })
    }

    /// This thread's shard, made on its first request.
    fn with_shard<R>(&self, f: impl FnOnce(&Arc<Shard>) -> R) -> R {
        self.mine.with(|mine| {
            let shard = mine.get_or_insert_with(|| {
                let shard = Arc::new(Shard::default());
                self.shards
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(shard.clone());
                shard
            });
            f(shard)
        })
    }

    fn shards(&self) -> Vec<Arc<Shard>> {
        self.shards
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Encodes the request counts, latencies and in-flight count, summed over the shards.
#[derive(Debug)]
struct CountsCollector(Arc<Counts>);

impl prometheus_client::collector::Collector for CountsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut requests: BTreeMap<(&'static str, u16), u64> = BTreeMap::new();
        let mut latency: BTreeMap<&'static str, Latency> = BTreeMap::new();
        let mut in_flight = 0;
        for shard in self.0.shards() {
            in_flight += shard.in_flight.load(Ordering::Relaxed);
            let table = shard.table.lock().unwrap_or_else(|e| e.into_inner());
            for (key, n) in &table.requests {
                *requests.entry(*key).or_default() += n;
            }
            for (operation, l) in &table.latency {
                let sum = latency.entry(operation).or_default();
                sum.sum += l.sum;
                sum.count += l.count;
                for (total, n) in sum.buckets.iter_mut().zip(l.buckets) {
                    *total += n;
                }
            }
        }
        let mut family = encoder.encode_descriptor(
            "quire_http_requests",
            "Answered requests by operationId and status",
            None,
            MetricType::Counter,
        )?;
        for ((operation, status), n) in requests {
            let labels = RequestLabels { operation, status };
            ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            "quire_http_request_duration_seconds",
            "Time from a request's arrival to its answer's head, by operationId",
            None,
            MetricType::Histogram,
        )?;
        for (operation, l) in latency {
            let buckets: Vec<(f64, u64)> = (0..=BUCKETS)
                .map(|i| {
                    let bound = if i < BUCKETS {
                        upper_bound(i)
                    } else {
                        f64::INFINITY
                    };
                    (bound, l.buckets[i])
                })
                .collect();
            family
                .encode_family(&OperationLabels { operation })?
                .encode_histogram::<NoLabelSet>(l.sum, l.count, &buckets, None)?;
        }
        let family = encoder.encode_descriptor(
            "quire_http_requests_in_flight",
            "Requests this node is serving now",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(in_flight).encode(family)?;
        Ok(())
    }
}

/// A request being served: counted in [`Metrics::in_flight`] until dropped.
pub struct InFlight(Arc<Shard>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
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
        let counts = Counts::new();
        registry.register_collector(Box::new(CountsCollector(counts.clone())));
        let scraped = Arc::new(ScrapedCollector::default());
        registry.register_collector(Box::new(scraped.clone()));
        Self {
            registry,
            counts,
            scraped,
        }
    }

    /// Counts a request as being served until the returned guard is dropped.
    pub fn serving(&self) -> InFlight {
        self.counts.with_shard(|shard| {
            shard.in_flight.fetch_add(1, Ordering::Relaxed);
            InFlight(shard.clone())
        })
    }

    /// How many requests this node is serving now.
    pub fn in_flight(&self) -> i64 {
        let shards = self.counts.shards.read().unwrap_or_else(|e| e.into_inner());
        shards
            .iter()
            .map(|s| s.in_flight.load(Ordering::Relaxed))
            .sum()
    }

    /// Counts one answered request.
    pub fn observe(&self, operation: &'static str, status: u16, seconds: f64) {
        // The first bucket whose bound holds it; past the last bound (or NaN), the rest.
        let bucket = (0..BUCKETS)
            .find(|&i| seconds <= upper_bound(i))
            .unwrap_or(BUCKETS);
        self.counts.with_shard(|shard| {
            let mut table = shard.table.lock().unwrap_or_else(|e| e.into_inner());
            *table.requests.entry((operation, status)).or_default() += 1;
            let latency = table.latency.entry(operation).or_default();
            latency.sum += seconds;
            latency.count += 1;
            latency.buckets[bucket] += 1;
        });
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
            failed_jobs: vec![("openapi-process".into(), 2)],
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
        assert!(text.contains("quire_jobs_failed{kind=\"openapi-process\"} 2"));
        assert!(text.contains("quire_access_cache_hits_total{name=\"tokens\"} 10"));
        assert!(text.contains("quire_access_cache_misses_total{name=\"tokens\"} 1"));
        // Cumulative buckets: 1 ms, then 2 ms and 3 ms, then nothing above 4 s.
        for line in [
            "quire_http_request_duration_seconds_bucket{le=\"0.001\",operation=\"getSpaceById\"} 1",
            "quire_http_request_duration_seconds_bucket{le=\"0.002\",operation=\"getSpaceById\"} 2",
            "quire_http_request_duration_seconds_bucket{le=\"0.004\",operation=\"getSpaceById\"} 3",
            "quire_http_request_duration_seconds_bucket{le=\"+Inf\",operation=\"getSpaceById\"} 3",
            "quire_http_request_duration_seconds_sum{operation=\"getSpaceById\"} 0.006",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    #[test]
    fn counts_of_every_thread_are_summed_and_a_request_may_end_elsewhere() {
        let m = Arc::new(Metrics::new());
        let begun = m.serving();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        m.observe("listSpaces", 200, 10.0);
                    }
                    m.serving()
                })
            })
            .collect();
        let guards: Vec<InFlight> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(m.in_flight(), 5);
        // Ended on a thread other than the ones they began on.
        std::thread::spawn(move || drop(guards)).join().unwrap();
        assert_eq!(m.in_flight(), 1);
        drop(begun);
        let text = m.render(Scraped::default());
        assert!(
            text.contains("quire_http_requests_total{operation=\"listSpaces\",status=\"200\"} 400")
        );
        assert!(text.contains(
            "quire_http_request_duration_seconds_bucket{le=\"4.096\",operation=\"listSpaces\"} 0"
        ));
        assert!(text.contains(
            "quire_http_request_duration_seconds_bucket{le=\"+Inf\",operation=\"listSpaces\"} 400"
        ));
        assert!(
            text.contains("\nquire_http_requests_in_flight 0\n"),
            "{text}"
        );
        // A second node's counts are its own.
        let other = Metrics::new();
        other.observe("listSpaces", 200, 0.001);
        assert!(other
            .render(Scraped::default())
            .contains("quire_http_requests_total{operation=\"listSpaces\",status=\"200\"} 1"));
    }
}
