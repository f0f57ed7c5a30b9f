//! A cache of encoded deltas and compressed bodies, so a thousand crawlers asking for the same
//! change cost one encoding: concurrent requests for a key wait for the first one's result.
//!
//! Encoding is bounded three ways, so a flood of requests for large files cannot exhaust the
//! machine: at most [`ENCODERS`] encodings run at once (each holds one file's versions in
//! memory), a request waits at most [`QUEUE_WAIT`] for its turn (then 503), and an encoding
//! that takes longer than [`DEADLINE`] is abandoned by its request (which then gets the whole
//! body); the abandoned work still holds its slot until it ends, so CPU stays bounded too.

use super::metrics::Metrics;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Encodings running at once.
pub(crate) const ENCODERS: usize = 4;
/// Longest a request waits for an encoder.
pub(crate) const QUEUE_WAIT: Duration = Duration::from_secs(5);
/// Longest a request waits for its encoding.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);

/// Why no encoding came back.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum EncodeError {
    /// Every encoder was busy for the whole wait.
    #[error("busy encoding other requests; try again shortly")]
    Busy,
    /// The encoding ran past its deadline.
    #[error("encoding took longer than {} s", DEADLINE.as_secs())]
    Deadline,
    /// The encoding failed.
    #[error("{0}")]
    Failed(String),
}
use webcoop_protocol::validator::Sha256Digest;

/// What was encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A dcz delta.
    Dcz,
    /// A unified diff.
    Unified,
    /// The whole body, zstd.
    Zstd,
    /// The whole body, gzip.
    Gzip,
    /// The whole body as it is.
    Identity,
}

/// Identifies an encoding: of which file, from which version to which.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// Docroot path.
    pub(crate) path: Arc<str>,
    /// The version held (none for a whole body).
    pub(crate) base: Option<Sha256Digest>,
    /// The version encoded.
    pub(crate) target: Sha256Digest,
    /// How.
    pub(crate) kind: Kind,
}

/// An encoding's result.
#[derive(Debug)]
pub(crate) enum Encoded {
    /// The bytes to send.
    Body(Bytes),
    /// A delta not smaller than the compressed full body (send the body instead).
    NotWorthIt,
    /// A version needed is no longer kept.
    Unavailable,
}

/// The cache.
pub(crate) struct EncodingCache {
    cache: moka::future::Cache<Key, Arc<Encoded>>,
    metrics: Arc<Metrics>,
    encoders: Arc<Semaphore>,
}

impl EncodingCache {
    /// A cache holding up to `budget` bytes of encodings.
    pub(crate) fn new(budget: u64, metrics: Arc<Metrics>) -> Self {
        let cache = moka::future::Cache::builder()
            .weigher(|_: &Key, v: &Arc<Encoded>| match v.as_ref() {
                Encoded::Body(b) => u32::try_from(b.len()).unwrap_or(u32::MAX).max(64),
                _ => 64,
            })
            .max_capacity(budget)
            .build();
        EncodingCache {
            cache,
            metrics,
            encoders: Arc::new(Semaphore::new(ENCODERS)),
        }
    }

    /// The encoding for `key`, computing it with `encode` (on a blocking thread, within the
    /// bounds above) only when no other request has or is computing it.
    pub(crate) async fn get_or_encode<F>(
        &self,
        key: Key,
        encode: F,
    ) -> Result<Arc<Encoded>, EncodeError>
    where
        F: FnOnce() -> Result<Encoded, String> + Send + 'static,
    {
        let metrics = self.metrics.clone();
        let encoders = self.encoders.clone();
        self.cache
            .try_get_with(key, async move {
                let permit = tokio::time::timeout(QUEUE_WAIT, encoders.acquire_owned())
                    .await
                    .map_err(|_| EncodeError::Busy)?
                    .map_err(|e| EncodeError::Failed(e.to_string()))?;
                let task = tokio::task::spawn_blocking(move || {
                    let _permit = permit;
                    metrics.encodings.inc();
                    encode()
                });
                let encoded = tokio::time::timeout(DEADLINE, task)
                    .await
                    .map_err(|_| EncodeError::Deadline)?
                    .map_err(|e| EncodeError::Failed(e.to_string()))?
                    .map_err(EncodeError::Failed)?;
                Ok::<_, EncodeError>(Arc::new(encoded))
            })
            .await
            .map_err(|e: Arc<EncodeError>| e.as_ref().clone())
    }
}
