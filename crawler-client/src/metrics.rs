//! The crawler's Prometheus metrics, served at `/metrics` with `--metrics ADDR`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::Arc;

/// Labels of the fetch counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    /// `2xx`, `304`, `3xx`, `4xx`, `5xx`, `failed`, `disallowed` or `held`.
    pub(crate) outcome: &'static str,
}

/// Everything the crawler counts.
pub(crate) struct CrawlMetrics {
    registry: Registry,
    /// Page fetches by outcome.
    pub(crate) fetches: Family<OutcomeLabels, Counter>,
    /// robots.txt fetches.
    pub(crate) robots_fetches: Counter,
    /// Fetches to be tried again (429, 503, failures).
    pub(crate) retries: Counter,
    /// Body bytes received.
    pub(crate) bytes: Counter,
    /// Bytes appended to WARC files.
    pub(crate) warc_bytes: Counter,
    /// Pages whose content another page already had.
    pub(crate) duplicates: Counter,
    /// New URLs queued.
    pub(crate) queued_total: Counter,
    /// URLs waiting.
    pub(crate) queued: Gauge,
    /// URLs in the seen-set.
    pub(crate) seen: Gauge,
    /// Hosts with work.
    pub(crate) hosts_active: Gauge,
    /// Requests under way.
    pub(crate) in_flight: Gauge,
    /// Time per page fetch.
    pub(crate) fetch_seconds: Histogram,
    /// Time per state save (WARC sync and database transaction).
    pub(crate) commit_seconds: Histogram,
}

impl Default for CrawlMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("webcoop_crawl");
        let m = CrawlMetrics {
            registry: Registry::default(),
            fetches: Family::default(),
            robots_fetches: Counter::default(),
            retries: Counter::default(),
            bytes: Counter::default(),
            warc_bytes: Counter::default(),
            duplicates: Counter::default(),
            queued_total: Counter::default(),
            queued: Gauge::default(),
            seen: Gauge::default(),
            hosts_active: Gauge::default(),
            in_flight: Gauge::default(),
            fetch_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            commit_seconds: Histogram::new(exponential_buckets(0.0005, 2.0, 14)),
        };
        registry.register("fetches", "Page fetches by outcome", m.fetches.clone());
        registry.register(
            "robots_fetches",
            "robots.txt fetches",
            m.robots_fetches.clone(),
        );
        registry.register("retries", "Fetches to be tried again", m.retries.clone());
        registry.register("bytes_received", "Body bytes received", m.bytes.clone());
        registry.register(
            "warc_bytes",
            "Bytes appended to WARC files",
            m.warc_bytes.clone(),
        );
        registry.register(
            "duplicates",
            "Pages with the content of an earlier page",
            m.duplicates.clone(),
        );
        registry.register("urls_queued", "New URLs queued", m.queued_total.clone());
        registry.register("queue", "URLs waiting", m.queued.clone());
        registry.register("seen", "URLs in the seen-set", m.seen.clone());
        registry.register("hosts_active", "Hosts with work", m.hosts_active.clone());
        registry.register("in_flight", "Requests under way", m.in_flight.clone());
        registry.register(
            "fetch_seconds",
            "Time per page fetch",
            m.fetch_seconds.clone(),
        );
        registry.register(
            "commit_seconds",
            "Time per state save",
            m.commit_seconds.clone(),
        );
        CrawlMetrics { registry, ..m }
    }
}

impl CrawlMetrics {
    /// The text exposition of every metric.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Counts a page fetch.
    pub(crate) fn fetch(&self, outcome: &'static str) {
        self.fetches.get_or_create(&OutcomeLabels { outcome }).inc();
    }
}

/// Serves `/metrics` on `addr` until the runtime shuts down; fails if the address is taken.
pub(crate) async fn serve(
    addr: SocketAddr,
    metrics: Arc<CrawlMetrics>,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let m = metrics.clone();
            async move {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    m.render(),
                )
            }
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("metrics server stopped: {e}");
        }
    });
    Ok(local)
}
