//! The service's Prometheus metrics, rendered in the text exposition format at `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Labels of per-endpoint counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct EndpointLabels {
    /// `changes`, `delta`, `hub`, `metrics`, `healthz`, `other`.
    pub(crate) endpoint: &'static str,
    /// The response's status class, e.g. `2xx`.
    pub(crate) status: &'static str,
}

/// Labels of delivery counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    /// `ok` or `failed`.
    pub(crate) outcome: &'static str,
}

/// Labels of signature outcomes.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct SignatureLabels {
    /// `unsigned`, `verified`, `invalid` or `unverified`.
    pub(crate) outcome: &'static str,
}

/// Labels of requests by verified identity.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct IdentityLabels {
    /// The key directory a verified crawler publishes, `other` past the first
    /// [`MAX_IDENTITIES`], `none` for requests without a verified signature.
    pub(crate) identity: String,
    /// `changes`, `delta`, `hub` or `snapshot`.
    pub(crate) endpoint: &'static str,
}

/// Identities named in the metrics; the rest count as `other`, so that no client can grow
/// the metrics without bound.
pub(crate) const MAX_IDENTITIES: usize = 100;

/// Everything the service counts.
pub struct Metrics {
    registry: Registry,
    /// Public files.
    pub(crate) files: Gauge,
    /// Newest sequence number.
    pub(crate) head_seq: Gauge,
    /// Active subscriptions.
    pub(crate) subscriptions: Gauge,
    /// Subscribers with changes not yet delivered.
    pub(crate) queue_depth: Gauge,
    /// Deliveries by outcome.
    pub(crate) deliveries: Family<OutcomeLabels, Counter>,
    /// Requests by endpoint and status class.
    pub(crate) requests: Family<EndpointLabels, Counter>,
    /// Body bytes served by endpoint and status class.
    pub(crate) bytes_served: Family<EndpointLabels, Counter>,
    /// Deltas and compressed bodies actually encoded (the rest came from the cache).
    pub(crate) encodings: Counter,
    /// Deliveries that failed and were scheduled again.
    pub(crate) retries: Counter,
    /// Requests by what their signature came to.
    pub(crate) signatures: Family<SignatureLabels, Counter>,
    /// Requests by verified identity and endpoint.
    pub(crate) identities: Family<IdentityLabels, Counter>,
    /// Requests refused by a rate, by signature outcome.
    pub(crate) rate_limited: Family<SignatureLabels, Counter>,
    /// Key directories fetched (the rest came from the cache).
    pub(crate) directory_fetches: Counter,
    named: std::sync::Mutex<std::collections::HashSet<String>>,
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
            signatures: Family::default(),
            identities: Family::default(),
            rate_limited: Family::default(),
            directory_fetches: Counter::default(),
            named: Default::default(),
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
        registry.register(
            "signed_requests",
            "Requests by what their Web Bot Auth signature came to",
            m.signatures.clone(),
        );
        registry.register(
            "identity_requests",
            "Requests by verified crawler (its key directory) and endpoint",
            m.identities.clone(),
        );
        registry.register(
            "rate_limited",
            "Requests refused by a rate, by signature outcome",
            m.rate_limited.clone(),
        );
        registry.register(
            "key_directory_fetches",
            "Web Bot Auth key directories fetched (not served from the cache)",
            m.directory_fetches.clone(),
        );
        Metrics { registry, ..m }
    }
}

impl Metrics {
    /// Counts a request's signature outcome.
    pub(crate) fn signatures(&self, outcome: &'static str) {
        self.signatures
            .get_or_create(&SignatureLabels { outcome })
            .inc();
    }

    /// Counts a request to `endpoint` by `identity` (a verified crawler's directory).
    pub(crate) fn identity_request(&self, identity: Option<&str>, endpoint: &'static str) {
        let identity = match identity {
            None => "none".to_string(),
            Some(id) => {
                let mut named = self.named.lock().unwrap_or_else(|p| p.into_inner());
                if named.contains(id) || named.len() < MAX_IDENTITIES {
                    named.insert(id.to_string());
                    id.to_string()
                } else {
                    "other".to_string()
                }
            }
        };
        self.identities
            .get_or_create(&IdentityLabels { identity, endpoint })
            .inc();
    }

    /// Counts a request refused by a rate.
    pub(crate) fn rate_limited(&self, outcome: &'static str) {
        self.rate_limited
            .get_or_create(&SignatureLabels { outcome })
            .inc();
    }

    /// The text exposition of every metric.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
