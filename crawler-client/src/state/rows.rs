//! The rows the crawl state reads and writes: queued URLs, pages and what is known of them,
//! hosts, and the batch that saves a stretch of the crawl in one transaction.

use crate::ids::{Fp, HostId};
use rusqlite::Row;
use std::sync::Arc;

/// A queued URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    /// Queue row: arrival order.
    pub(crate) seq: i64,
    /// Host id.
    pub(crate) host: HostId,
    /// The URL.
    pub url: String,
    /// Its fingerprint.
    pub fp: Fp,
    /// Links from a seed.
    pub(crate) depth: u32,
    /// Redirects followed to get here.
    pub(crate) hops: u32,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Priority (higher first); 0 in FIFO order.
    pub priority: f64,
    /// A page visited before (a refresh): look up its validators.
    pub revisit: bool,
}

impl Queued {
    /// A page that came without a request of its own (from a snapshot, a batch or a pushed
    /// delta): in no queue row, never attempted.
    pub(crate) fn unqueued(host: HostId, fp: Fp, url: String, depth: u32, revisit: bool) -> Queued {
        Queued {
            seq: 0,
            host,
            url,
            fp,
            depth,
            hops: 0,
            attempts: 0,
            priority: 0.0,
            revisit,
        }
    }
}

pub(super) fn queued(r: &Row<'_>) -> rusqlite::Result<Queued> {
    Ok(Queued {
        seq: r.get(0)?,
        host: r.get(1)?,
        url: r.get(2)?,
        fp: r.get(3)?,
        depth: r.get::<_, i64>(4)?.max(0) as u32,
        hops: r.get::<_, i64>(5)?.max(0) as u32,
        attempts: r.get::<_, i64>(6)?.max(0) as u32,
        priority: r.get(7)?,
        revisit: r.get(8)?,
    })
}

pub(super) const QUEUED_COLUMNS: &str = queued_columns!();

/// [`QUEUED_COLUMNS`] as a literal, for SQL built with `concat!`.
macro_rules! queued_columns {
    () => {
        "seq, host, url, fp, depth, hops, attempts, priority, revisit"
    };
}
pub(super) use queued_columns;

/// A URL to add to the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewUrl {
    /// Its queue row, allocated by the frontier.
    pub seq: i64,
    /// Host id.
    pub host: HostId,
    /// The URL.
    pub url: String,
    /// Its fingerprint.
    pub fp: Fp,
    /// Links from a seed.
    pub depth: u32,
    /// Redirects followed.
    pub hops: u32,
    /// Priority.
    pub priority: f64,
    /// A page visited before, queued again to refresh it.
    pub revisit: bool,
}

/// What a fetch taught about a page.
#[derive(Debug, Clone, Default)]
pub(crate) struct PageRecord {
    /// The URL.
    pub url: String,
    /// Its fingerprint.
    pub fp: Fp,
    /// Host id.
    pub(crate) host: HostId,
    /// Links from a seed.
    pub(crate) depth: u32,
    /// Status code (none for a failure).
    pub(crate) status: Option<u16>,
    /// Why it failed or was not fetched.
    pub(crate) error: Option<String>,
    /// When (ms since the epoch).
    pub(crate) fetched_at: i64,
    /// `ETag`.
    pub(crate) etag: Option<String>,
    /// `Last-Modified`.
    pub(crate) last_modified: Option<String>,
    /// Media type.
    pub(crate) content_type: Option<String>,
    /// Body bytes as received.
    pub(crate) size: Option<u64>,
    /// Digest of the decoded content.
    pub(crate) digest: Option<u64>,
    /// The earlier page with the same content.
    pub(crate) duplicate_of: Option<String>,
    /// Where a redirect pointed.
    pub(crate) redirect_to: Option<String>,
    /// The capture: WARC file and offset.
    pub(crate) warc: Option<(Arc<str>, u64)>,
    /// Whether the content differs from the previous visit.
    pub(crate) changed: bool,
    /// OPIC: the page's (interpolated) history and the clock when it was read.
    pub(crate) importance: Option<(f64, f64)>,
    /// What visits showed of its changes (JSON of `ChangeHistory`) and the rate they give.
    pub(crate) changes_seen: Option<(String, f64)>,
    /// The SHA-256 entity tag of the content (2xx).
    pub(crate) validator: Option<String>,
    /// The `response` record holding the content (a revisit keeps the earlier one).
    pub(crate) content: Option<(Arc<str>, u64)>,
    /// The site announced the page deleted: no copy is held any more.
    pub(crate) gone: bool,
    /// The content held came from the site in bulk and a page it handed over proved false:
    /// it is no longer the crawl's copy (a record of what the site claimed) until fetched.
    pub(crate) disowned: bool,
}

/// What was known of a page before this visit.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct KnownPage {
    /// `ETag` last seen.
    pub(crate) etag: Option<String>,
    /// `Last-Modified` last seen.
    pub(crate) last_modified: Option<String>,
    /// Content digest last seen.
    pub(crate) digest: Option<u64>,
    /// When it was last fetched (ms).
    pub(crate) fetched_at: i64,
    /// OPIC history and the clock when it was last read.
    pub(crate) importance: (f64, f64),
    /// What visits showed of its changes (JSON of `ChangeHistory`).
    pub(crate) changes_seen: Option<String>,
    /// The SHA-256 entity tag of the content held.
    pub(crate) validator: Option<String>,
    /// The `response` record holding the content: WARC file and offset.
    pub(crate) content: Option<(Arc<str>, u64)>,
}

/// A page the refresh schedule keeps track of.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RefreshablePage {
    /// Fingerprint.
    pub fp: Fp,
    /// Host id.
    pub(crate) host: HostId,
    /// The URL.
    pub url: String,
    /// Links from a seed.
    pub(crate) depth: u32,
    /// Last fetched (ms).
    pub(crate) fetched_at: i64,
    /// Estimated change rate (per second), if visited twice.
    pub(crate) rate: Option<f64>,
    /// OPIC history and clock at the last read.
    pub(crate) importance: (f64, f64),
}

/// A page as `copies` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyRow {
    /// The URL.
    pub url: String,
    /// Last status.
    pub(crate) status: Option<u16>,
    /// Last error.
    pub(crate) error: Option<String>,
    /// Last fetched or confirmed (ms).
    pub(crate) fetched_at: i64,
    /// Validator of the content held (its original's for a duplicate).
    pub(crate) validator: Option<String>,
    /// Announced deleted.
    pub(crate) gone: bool,
}

/// A host's persistent state.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HostRecord {
    /// Id.
    pub(crate) id: HostId,
    /// `scheme://host[:port]`.
    pub(crate) origin: String,
    /// robots.txt status (none: no answer), if fetched.
    pub(crate) robots_status: Option<u16>,
    /// robots.txt body (at most the parse limit).
    pub(crate) robots_body: Option<Vec<u8>>,
    /// When robots.txt was fetched (ms).
    pub(crate) robots_fetched: Option<i64>,
    /// Why the host is not crawled.
    pub(crate) skipped: Option<String>,
    /// Parked until (ms).
    pub(crate) parked_until: Option<i64>,
    /// Consecutive failures.
    pub(crate) failures: u32,
    /// Its cooperation (JSON of `SiteCoop`).
    pub(crate) coop: Option<String>,
}

/// A host's state to save; robots.txt only when it was fetched again.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HostUpdate {
    /// Id.
    pub(crate) id: HostId,
    /// robots.txt as fetched: status (none: no answer), body, when (ms).
    pub(crate) robots: Option<(Option<u16>, Vec<u8>, i64)>,
    /// Why the host is not crawled.
    pub(crate) skipped: Option<String>,
    /// Parked until (ms).
    pub(crate) parked_until: Option<i64>,
    /// Consecutive failures.
    pub(crate) failures: u32,
}

/// A host given up on: its queued URLs are recorded as failed with the reason.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GiveUp {
    /// Host id.
    pub(crate) host: HostId,
    /// Why.
    pub(crate) reason: String,
    /// When (ms).
    pub(crate) at: i64,
}

/// One batch of results, saved in one transaction.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// New URLs (saved first: a URL may be queued and done in the same batch).
    pub(crate) new_urls: Vec<NewUrl>,
    /// Pages fetched (or given up on). Boxed: a record is about 400 bytes, and a batch of
    /// thousands grown by doubling held half its inline bytes unused (2.9 MB at 2,000 hosts).
    #[allow(clippy::vec_box)]
    pub(crate) pages: Vec<Box<PageRecord>>,
    /// Queue rows done.
    pub(crate) done: Vec<i64>,
    /// Queue rows to try again: seq, attempts so far.
    pub(crate) retry: Vec<(i64, u32)>,
    /// Hosts whose state changed.
    pub(crate) hosts: Vec<HostUpdate>,
    /// Hosts given up on.
    pub(crate) give_up: Vec<GiveUp>,
    /// WARC files written to and their length on disk.
    pub(crate) warc: Vec<(String, u64)>,
    /// Remembered values.
    pub(crate) meta: Vec<(String, String)>,
    /// Hosts' cooperation state (JSON of `SiteCoop`).
    pub(crate) coop: Vec<(HostId, String)>,
}

impl Batch {
    /// Whether there is nothing to save.
    pub(crate) fn is_empty(&self) -> bool {
        self.new_urls.is_empty()
            && self.pages.is_empty()
            && self.done.is_empty()
            && self.retry.is_empty()
            && self.hosts.is_empty()
            && self.give_up.is_empty()
            && self.warc.is_empty()
            && self.meta.is_empty()
            && self.coop.is_empty()
    }

    /// How many results it holds (to decide when to save).
    pub(crate) fn results(&self) -> usize {
        self.done.len() + self.retry.len()
    }
}
