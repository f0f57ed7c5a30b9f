//! A cache of encoded deltas and compressed bodies, so a thousand crawlers asking for the same
//! change cost one encoding: concurrent requests for a key wait for the first one's result.

use super::metrics::Metrics;
use bytes::Bytes;
use std::sync::Arc;
use webcoop_protocol::validator::Sha256Digest;

/// What was encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A dcz delta.
    Dcz,
    /// A unified diff.
    Unified,
    /// The whole body, zstd.
    Zstd,
    /// The whole body, gzip.
    Gzip,
}

/// Identifies an encoding: of which file, from which version to which.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// Docroot path.
    pub path: Arc<str>,
    /// The version held (none for a whole body).
    pub base: Option<Sha256Digest>,
    /// The version encoded.
    pub target: Sha256Digest,
    /// How.
    pub kind: Kind,
}

/// An encoding's result.
#[derive(Debug)]
pub enum Encoded {
    /// The bytes to send.
    Body(Bytes),
    /// A delta not smaller than the compressed full body (send the body instead).
    NotWorthIt,
    /// A version needed is no longer kept.
    Unavailable,
}

/// The cache.
pub struct EncodingCache {
    cache: moka::future::Cache<Key, Arc<Encoded>>,
    metrics: Arc<Metrics>,
}

impl EncodingCache {
    /// A cache holding up to `budget` bytes of encodings.
    pub fn new(budget: u64, metrics: Arc<Metrics>) -> Self {
        let cache = moka::future::Cache::builder()
            .weigher(|_: &Key, v: &Arc<Encoded>| match v.as_ref() {
                Encoded::Body(b) => u32::try_from(b.len()).unwrap_or(u32::MAX).max(64),
                _ => 64,
            })
            .max_capacity(budget)
            .build();
        EncodingCache { cache, metrics }
    }

    /// The encoding for `key`, computing it with `encode` (on a blocking thread) only when no
    /// other request has or is computing it.
    pub async fn get_or_encode<F>(&self, key: Key, encode: F) -> Result<Arc<Encoded>, String>
    where
        F: FnOnce() -> Result<Encoded, String> + Send + 'static,
    {
        let metrics = self.metrics.clone();
        self.cache
            .try_get_with(key, async move {
                let encoded = tokio::task::spawn_blocking(move || {
                    metrics.encodings.inc();
                    encode()
                })
                .await
                .map_err(|e| e.to_string())??;
                Ok::<_, String>(Arc::new(encoded))
            })
            .await
            .map_err(|e: Arc<String>| e.to_string())
    }
}
