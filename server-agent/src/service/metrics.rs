//! The service's Prometheus metrics, rendered in the text exposition format at `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Labels of per-endpoint counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    /// `changes`, `delta`, `hub`, `metrics`, `healthz`, `other`.
    pub endpoint: &'static str,
    /// The response's status class, e.g. `2xx`.
    pub status: &'static str,
}

/// Labels of delivery counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// `ok` or `failed`.
    pub outcome: &'static str,
}

/// Everything the service counts.
pub struct Metrics {
    registry: Registry,
    /// Public files.
    pub files: Gauge,
    /// Newest sequence number.
    pub head_seq: Gauge,
    /// Active subscriptions.
    pub subscriptions: Gauge,
    /// Subscribers with changes not yet delivered.
    pub queue_depth: Gauge,
    /// Deliveries by outcome.
    pub deliveries: Family<OutcomeLabels, Counter>,
    /// Requests by endpoint and status class.
    pub requests: Family<EndpointLabels, Counter>,
    /// Body bytes served by endpoint and status class.
    pub bytes_served: Family<EndpointLabels, Counter>,
    /// Deltas and compressed bodies actually encoded (the rest came from the cache).
    pub encodings: Counter,
    /// Deliveries that failed and were scheduled again.
    pub retries: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("webcoop");
        let m = Metrics {
            registry: Registry::default(),
            files: Gauge::default(),
            head_seq: Gauge::default(),
            subscriptions: Gauge::default(),
            queue_depth: Gauge::default(),
            deliveries: Family::default(),
            requests: Family::default(),
            bytes_served: Family::default(),
            encodings: Counter::default(),
            retries: Counter::default(),
        };
        registry.register("files", "Public files in the inventory", m.files.clone());
        registry.register(
            "changes_head",
            "Newest change sequence number",
            m.head_seq.clone(),
        );
        registry.register(
            "subscriptions",
            "Active WebSub subscriptions",
            m.subscriptions.clone(),
        );
        registry.register(
            "delivery_queue",
            "Subscribers with changes not yet delivered",
            m.queue_depth.clone(),
        );
        registry.register(
            "deliveries",
            "WebSub deliveries by outcome",
            m.deliveries.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests by endpoint and status class",
            m.requests.clone(),
        );
        registry.register(
            "http_bytes_served",
            "HTTP body bytes served by endpoint and status class",
            m.bytes_served.clone(),
        );
        registry.register(
            "encodings",
            "Deltas and compressed bodies encoded (not served from the cache)",
            m.encodings.clone(),
        );
        registry.register(
            "delivery_retries",
            "WebSub deliveries that failed and were scheduled again",
            m.retries.clone(),
        );
        Metrics { registry, ..m }
    }
}

impl Metrics {
    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
