//! What runs for each request on the async runtime: the fetch, the analysis of the response
//! and the archive record, so that the scheduler thread only decides and appends.

use crate::analyze::scope::LinkPolicy;
use crate::analyze::{self, Analysis, Received};
use crate::archive::warc::{self, Position, Record, RevisitProfile};
use crate::coop::CoopJob;
use crate::coop::callback::CallbackEvent;
use crate::coop::requests::{CoopFetched, DeltaUse};
use crate::fetch::{self, FetchError, FetchLimits, FetchRequest, FetchResponse};
use crate::frontier::robots;
use crate::state::{KnownPage, Queued};
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};
use url::Url;

/// Redirects followed for robots.txt (RFC 9309 asks for at least five).
pub const ROBOTS_REDIRECTS: u32 = 5;

/// Bodies larger than this are analysed on the blocking pool, not on an async worker.
const INLINE_ANALYSIS: usize = 64 << 10;

/// The archive record of a response: to be appended, or already in the archive (replay).
#[derive(Debug, Clone)]
pub enum RecordSlot {
    /// Built, not yet written.
    New(Record),
    /// Already in the archive.
    Stored(Position),
}

/// A page response, analysed.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Status code.
    pub status: u16,
    /// What the response says.
    pub analysis: Analysis,
    /// Body bytes as received.
    pub size: u64,
    /// Whether the body was cut at the size limit.
    pub truncated: bool,
    /// When it was requested.
    pub fetched_at: DateTime<Utc>,
    /// `Retry-After`.
    pub retry_after: Option<String>,
    /// The HTTP head as archived.
    pub http_head: String,
    /// `sha1:` digest of the body as received.
    pub payload_digest: String,
    /// Same content as the copy held.
    pub unchanged: bool,
    /// Content different from the copy held.
    pub changed: bool,
    /// The page whose content this is, when the archive says so (replay of a revisit).
    pub refers_to: Option<String>,
    /// The archive record.
    pub record: RecordSlot,
    /// What was held of the page before this visit (a revisit).
    pub known: Option<KnownPage>,
    /// Whether it came as a delta.
    pub delta: Option<DeltaUse>,
}

/// The outcome of a robots.txt fetch.
#[derive(Debug, Clone)]
pub struct RobotsFetched {
    /// Final status (after redirects).
    pub status: u16,
    /// Decoded body, at most the parse limit.
    pub body: Vec<u8>,
    /// The archive record of the final response.
    pub record: RecordSlot,
}

/// What comes back to the scheduler.
#[derive(Debug)]
pub enum Outcome {
    /// A robots.txt fetch ended.
    Robots {
        /// Host id.
        host: i64,
        /// What came back.
        result: Result<RobotsFetched, FetchError>,
        /// How long it took.
        elapsed: Duration,
    },
    /// A page fetch ended.
    Page {
        /// The queue row.
        job: Queued,
        /// What came back.
        result: Result<Box<Fetched>, FetchError>,
        /// How long it took.
        elapsed: Duration,
        /// Made without a request of its own (an inline delta pushed by the site).
        local: bool,
    },
    /// A cooperation request ended.
    Coop {
        /// Host id.
        host: i64,
        /// The request.
        job: CoopJob,
        /// What came back.
        result: Result<CoopFetched, FetchError>,
        /// How long it took.
        elapsed: Duration,
    },
    /// The WebSub callback heard from a hub.
    Callback(CallbackEvent),
}

/// What every request needs.
pub struct Context {
    /// The HTTP client.
    pub client: reqwest::Client,
    /// Fetch limits.
    pub limits: FetchLimits,
    /// Which links to keep.
    pub policy: LinkPolicy,
    /// gzip level of archive records.
    pub warc_level: u32,
    /// Where the archive is (held copies are read back from it for deltas).
    pub warc_dir: PathBuf,
    /// Whether revisits send the held copy's validators.
    pub conditional: bool,
}

/// Builds the analysis and archive record of a page response.
pub fn examine(
    resp: &FetchResponse,
    depth: u32,
    known: Option<&KnownPage>,
    policy: &LinkPolicy,
    decode_limit: usize,
    level: u32,
) -> Fetched {
    let received = Received {
        url: &resp.url,
        status: resp.status,
        headers: &resp.headers,
        body: &resp.body,
        truncated: resp.truncated,
    };
    let analysis = analyze::analyze(received, depth, policy, decode_limit);
    let http_head = resp.response_head();
    let payload_digest = warc::digest(&resp.body);
    let uri = resp.url.as_str();
    let previous = known.map(|k| (uri, chrono::DateTime::from_timestamp_millis(k.fetched_at)));
    let held = known.and_then(|k| k.digest);
    let ok = (200..300).contains(&resp.status) && analysis.digest.is_some();
    let unchanged = ok && held == analysis.digest;
    let changed = ok && held.is_some() && held != analysis.digest;
    let record = if resp.status == 304 {
        warc::revisit(
            uri,
            resp.fetched_at,
            &http_head,
            RevisitProfile::ServerNotModified,
            None,
            previous.unwrap_or((uri, None)),
            level,
        )
    } else if unchanged {
        warc::revisit(
            uri,
            resp.fetched_at,
            &http_head,
            RevisitProfile::IdenticalPayloadDigest,
            Some(&payload_digest),
            previous.unwrap_or((uri, None)),
            level,
        )
    } else {
        warc::response(
            &warc::Exchange {
                uri,
                at: resp.fetched_at,
                ip: fetch::ip_of(resp),
                http_head: &http_head,
                body: &resp.body,
                payload_digest: &payload_digest,
                truncated: resp.truncated,
            },
            level,
        )
    };
    Fetched {
        status: resp.status,
        analysis,
        size: resp.body.len() as u64,
        truncated: resp.truncated,
        fetched_at: resp.fetched_at,
        retry_after: resp.header("retry-after").map(str::to_string),
        http_head,
        payload_digest,
        unchanged,
        changed,
        refers_to: None,
        record: RecordSlot::New(record),
        known: known.cloned(),
        delta: None,
    }
}

/// Fetches and examines a page, and sends the outcome; `conditional` sends the held copy's
/// validators.
pub async fn page(
    ctx: Arc<Context>,
    job: Queued,
    url: Url,
    known: Option<KnownPage>,
    conditional: bool,
    tx: Sender<Outcome>,
) {
    let start = Instant::now();
    let held = known.as_ref().filter(|_| conditional);
    let request = FetchRequest {
        url,
        etag: held.and_then(|k| k.etag.clone()),
        last_modified: held.and_then(|k| k.last_modified.clone()),
        headers: Vec::new(),
    };
    let result = match fetch::fetch(&ctx.client, &request, &ctx.limits).await {
        Err(e) => Err(e),
        Ok(resp) => {
            let depth = job.depth;
            let inline = resp.body.len() <= INLINE_ANALYSIS;
            let ctx = ctx.clone();
            let work = move || {
                Box::new(examine(
                    &resp,
                    depth,
                    known.as_ref(),
                    &ctx.policy,
                    ctx.limits.max_body,
                    ctx.warc_level,
                ))
            };
            if inline {
                Ok(work())
            } else {
                tokio::task::spawn_blocking(work)
                    .await
                    .map_err(|e| FetchError::Other(format!("analysis failed: {e}")))
            }
        }
    };
    // The scheduler may be gone (the crawl was stopped): nothing to do then.
    let _ = tx.send(Outcome::Page {
        job,
        result,
        elapsed: start.elapsed(),
        local: false,
    });
}

/// The robots.txt outcome of a final response.
pub fn robots_from(resp: &FetchResponse, level: u32) -> RobotsFetched {
    let body = analyze::decode(
        resp.header("content-encoding"),
        &resp.body,
        resp.truncated,
        robots::MAX_BYTES,
    )
    .unwrap_or_default();
    RobotsFetched {
        status: resp.status,
        body,
        record: archived(resp, level),
    }
}

/// The `response` record of a response as received.
pub fn archived(resp: &FetchResponse, level: u32) -> RecordSlot {
    let payload_digest = warc::digest(&resp.body);
    RecordSlot::New(warc::response(
        &warc::Exchange {
            uri: resp.url.as_str(),
            at: resp.fetched_at,
            ip: fetch::ip_of(resp),
            http_head: &resp.response_head(),
            body: &resp.body,
            payload_digest: &payload_digest,
            truncated: resp.truncated,
        },
        level,
    ))
}

/// Fetches a host's robots.txt, following up to five redirects, and sends the outcome.
pub async fn robots(ctx: Arc<Context>, host: i64, origin: String, tx: Sender<Outcome>) {
    let start = Instant::now();
    let mut url = match Url::parse(&origin).and_then(|o| o.join("/robots.txt")) {
        Ok(u) => u,
        Err(e) => {
            let _ = tx.send(Outcome::Robots {
                host,
                result: Err(FetchError::Other(format!("bad origin {origin}: {e}"))),
                elapsed: start.elapsed(),
            });
            return;
        }
    };
    let limits = FetchLimits {
        max_body: robots::MAX_BYTES,
        ..ctx.limits
    };
    let mut hops = 0;
    let result = loop {
        let request = FetchRequest {
            url: url.clone(),
            etag: None,
            last_modified: None,
            headers: Vec::new(),
        };
        match fetch::fetch(&ctx.client, &request, &limits).await {
            Err(e) => break Err(e),
            Ok(resp) => {
                let next = (300..400)
                    .contains(&resp.status)
                    .then(|| resp.header("location").and_then(|l| url.join(l).ok()))
                    .flatten();
                match next {
                    Some(next) if hops < ROBOTS_REDIRECTS => {
                        hops += 1;
                        url = next;
                    }
                    _ => break Ok(robots_from(&resp, ctx.warc_level)),
                }
            }
        }
    };
    let _ = tx.send(Outcome::Robots {
        host,
        result,
        elapsed: start.elapsed(),
    });
}
