//! What a request's task and the crawl loop share: what every task needs ([`Context`]), and
//! what it sends back ([`Outcome`]). A leaf: it names the types of the other modules and
//! none of them reaches back into it for more than these definitions.

use crate::analyze::Analysis;
use crate::analyze::scope::LinkPolicy;
use crate::archive::warc::{Position, Record};
use crate::fetch::{FetchError, FetchLimits};
use crate::frontier::CoopJob;
use crate::ids::{Fp, HostId};
use crate::state::{KnownPage, Queued};
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::time::Duration;
use webcoop_protocol::websub::Mode;

/// Where an outcome came from, which decides what it settles: a request's ends a connection
/// to its host, the others were never counted as under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A request this run made.
    Request,
    /// Read back from the archive at start (written before a crash, not yet saved).
    Replayed,
    /// Built from a delta the site pushed inline, without a request.
    Pushed,
    /// Read from a snapshot of the whole site, fetched in one request.
    Snapshot,
    /// Read from a batch of changes with their pages' content.
    Batch,
}

impl Source {
    /// Whether the page came inside a document of the site's, not by a request of its own.
    pub(crate) fn in_a_document(self) -> bool {
        matches!(self, Source::Snapshot | Source::Batch)
    }
}

/// The archive record of a response: to be appended, or already in the archive (replay).
#[derive(Debug, Clone)]
pub(crate) enum RecordSlot {
    /// Built, not yet written.
    New(Record),
    /// Already in the archive.
    Stored(Position),
}

/// A page response, analysed.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    /// Status code.
    pub(crate) status: u16,
    /// What the response says.
    pub(crate) analysis: Analysis,
    /// Body bytes as received.
    pub(crate) size: u64,
    /// Whether the body was cut at the size limit.
    pub(crate) truncated: bool,
    /// When it was requested.
    pub(crate) fetched_at: DateTime<Utc>,
    /// `Retry-After`.
    pub(crate) retry_after: Option<String>,
    /// The HTTP head as archived.
    pub(crate) http_head: String,
    /// The record's payload digest (`sha1:` of the body as received; `sha256:` for a page read
    /// from a snapshot or batch).
    pub(crate) payload_digest: String,
    /// Same content as the copy held.
    pub(crate) unchanged: bool,
    /// Content different from the copy held.
    pub(crate) changed: bool,
    /// The page whose content this is, when the archive says so (replay of a revisit).
    pub(crate) refers_to: Option<String>,
    /// The archive record.
    pub(crate) record: RecordSlot,
    /// What was received when the page was made from it (a delta), archived just before
    /// the page's record, which refers to it.
    pub(crate) received: Option<Record>,
    /// What was held of the page before this visit (a revisit).
    pub(crate) known: Option<KnownPage>,
    /// Whether it came as a delta.
    pub(crate) delta: Option<DeltaUse>,
}

/// The outcome of a robots.txt fetch.
#[derive(Debug, Clone)]
pub(crate) struct RobotsFetched {
    /// Final status (after redirects).
    pub(crate) status: u16,
    /// Decoded body, at most the parse limit.
    pub(crate) body: Vec<u8>,
    /// The archive record of the final response.
    pub(crate) record: RecordSlot,
}

/// What comes back to the scheduler.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A robots.txt fetch ended.
    Robots {
        /// Host id.
        host: HostId,
        /// What came back.
        result: Result<RobotsFetched, FetchError>,
        /// How long it took.
        elapsed: Duration,
        /// Where it came from.
        source: Source,
    },
    /// A page fetch ended.
    Page {
        /// The queue row.
        job: Queued,
        /// What came back.
        result: Result<Box<Fetched>, FetchError>,
        /// How long it took.
        elapsed: Duration,
        /// Where it came from.
        source: Source,
    },
    /// A cooperation request ended.
    Coop {
        /// Host id.
        host: HostId,
        /// The request.
        job: CoopJob,
        /// What came back.
        result: Result<CoopFetched, FetchError>,
        /// How long it took.
        elapsed: Duration,
    },
    /// A page request came back unfetched: its host's lane was halted before its turn.
    Returned {
        /// The queue row.
        job: Queued,
    },
    /// A host's address was looked up (politeness keyed by address).
    Resolved {
        /// Host id.
        host: HostId,
        /// Its address, if it has one.
        ip: Option<std::net::IpAddr>,
    },
    /// The WebSub callback heard from a hub.
    Callback(CallbackEvent),
    /// The IndexNow endpoint accepted a submission.
    IndexNow(webcoop_protocol::indexnow::Submission),
    /// A pushed inline delta could not be applied (sent by the task that tried).
    InlineFailed {
        /// The site.
        host: HostId,
        /// The page's fingerprint.
        fp: Fp,
        /// The page.
        url: String,
        /// Why.
        why: String,
    },
}

/// What every request needs.
pub(crate) struct Context {
    /// The HTTP client, behind the guard of allowed destinations.
    pub(crate) client: crate::fetch::Net,
    /// Fetch limits.
    pub(crate) limits: FetchLimits,
    /// Which links to keep.
    pub(crate) policy: LinkPolicy,
    /// gzip level of archive records.
    pub(crate) warc_level: u32,
    /// Where the archive is (held copies are read back from it for deltas).
    pub(crate) warc_dir: PathBuf,
    /// Whether revisits send the held copy's validators.
    pub(crate) conditional: bool,
    /// Bytes of snapshot pages sent to the loop and not yet recorded.
    pub(crate) snapshot_backlog: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// What the crawl is for: responses whose usage preferences refuse it are not kept.
    pub(crate) purposes: Vec<webcoop_protocol::usage::Purpose>,
    /// The decoded bytes pages may hold under analysis at once.
    pub(crate) analysis: std::sync::Arc<crate::fetch::analysis_room::AnalysisRoom>,
}

impl Context {
    /// The same context with another link policy (seeds added while the crawl runs).
    pub(crate) fn with_policy(&self, policy: LinkPolicy) -> Context {
        Context {
            client: self.client.clone(),
            limits: self.limits,
            policy,
            warc_level: self.warc_level,
            warc_dir: self.warc_dir.clone(),
            conditional: self.conditional,
            snapshot_backlog: self.snapshot_backlog.clone(),
            purposes: self.purposes.clone(),
            analysis: self.analysis.clone(),
        }
    }
}

/// What decides whether a page that arrives without a request of its own (in a site's
/// snapshot) may be kept, and the usage preferences it is archived under: the site's origin,
/// its robots.txt as the crawl holds it, and the preferences the site's agent stated.
#[derive(Debug, Clone, Default)]
pub(crate) struct PageGate {
    /// The site's origin.
    pub(crate) origin: String,
    /// Its robots.txt, when known.
    pub(crate) rules: Option<crate::frontier::robots::Rules>,
    /// What its agent states its content may be used for.
    pub(crate) stated: webcoop_protocol::usage::Prefs,
}

/// A metadata response, decoded.
#[derive(Debug, Clone)]
pub(crate) struct CoopFetched {
    /// Status code (after no redirect: metadata does not move).
    pub(crate) status: u16,
    /// Response headers.
    pub(crate) headers: Vec<(String, String)>,
    /// The body with its content coding removed.
    pub(crate) body: Vec<u8>,
    /// Bytes received.
    pub(crate) size: u64,
    /// The archive record (none for hub requests).
    pub(crate) record: Option<RecordSlot>,
}

impl CoopFetched {
    /// The first header named `name`.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        crate::analyze::header(&self.headers, name)
    }
}

/// What became of a delta, for the crawl log and the site's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DeltaUse {
    /// Applied and verified; the bytes it took on the wire (0 when pushed inline).
    Applied(u64),
    /// The server answered the delta request with the whole new version (the delta would
    /// not have been smaller, or it did not know the base): one request, as a GET.
    Whole,
    /// Pushed inline with the announcement, applied and verified: no request at all.
    Pushed,
    /// Not usable, for this reason; the page was fetched in full.
    Fallback(String),
}

/// What the callback heard, for the crawl loop.
#[derive(Debug, Clone, PartialEq)]
pub enum CallbackEvent {
    /// The hub verified our intent.
    Verified {
        /// The site.
        host: HostId,
        /// Subscribe or unsubscribe.
        mode: Mode,
        /// The lease granted, seconds (subscribe).
        lease: Option<u64>,
    },
    /// The hub refused the subscription.
    Denied {
        /// The site.
        host: HostId,
        /// Its reason.
        reason: Option<String>,
    },
    /// A signed delivery.
    Delivery {
        /// The site.
        host: HostId,
        /// The changes feed document.
        body: Vec<u8>,
        /// In CBOR rather than Atom.
        cbor: bool,
    },
    /// A delivery whose signature did not verify (ignored, as WebSub requires).
    BadSignature {
        /// The site.
        host: HostId,
        /// Why.
        why: String,
    },
    /// A signed delivery whose body did not decompress (refused, so the hub sends it again).
    Undecodable {
        /// The site.
        host: HostId,
        /// Why.
        why: String,
    },
}
