//! What runs for each request on the async runtime: the fetch, the analysis of the response
//! and the archive record, so that the scheduler thread only decides and appends.

use crate::analyze::scope::LinkPolicy;
use crate::analyze::{self, Received};
use crate::archive::warc::{self, RevisitProfile};
use crate::fetch::lane::{self, Lane, Ticket};
use crate::fetch::outbox::Outbox;
use crate::fetch::outcome::{Context, Fetched, Outcome, RecordSlot, RobotsFetched, Source};
use crate::fetch::{self, FetchError, FetchLimits, FetchRequest, FetchResponse};
use crate::frontier::robots;
use crate::ids::HostId;
use crate::state::{KnownPage, Queued};
use std::sync::Arc;
use std::time::Instant;
use url::Url;
use webcoop_protocol::usage::Prefs;
use webcoop_protocol::validator::{EntityTag, Sha256Digest};

/// Redirects followed for robots.txt (RFC 9309 asks for at least five).
pub(crate) const ROBOTS_REDIRECTS: u32 = 5;

/// Bodies larger than this are analysed on the blocking pool, not on an async worker.
const INLINE_ANALYSIS: usize = 64 << 10;

/// The usage preferences a response was received under: those stated before the request
/// (`stated`: robots.txt, the site's agent) and its own `Content-Usage` fields, combined, the
/// most restrictive winning. A statement that cannot be read refuses every purpose.
pub(crate) fn usage_of(resp: &FetchResponse, stated: Prefs) -> Prefs {
    // Repeated fields are one field, their values joined by commas (RFC 9110, 5.3): a second
    // `Content-Usage` adds to the first.
    let values: Vec<&str> = resp
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-usage"))
        .map(|(_, v)| v.as_str())
        .collect();
    if values.is_empty() {
        return stated;
    }
    let header = Prefs::parse_aipref(&values.join(", "), &mut Vec::new())
        // A statement that cannot be read refuses every purpose, as the agent's does.
        .unwrap_or(Prefs::REFUSE_ALL);
    stated.strictest(header)
}

/// Builds the analysis and archive record of a page response, which names the usage
/// preferences that applied.
pub(crate) fn examine(
    resp: &FetchResponse,
    depth: u32,
    known: Option<&KnownPage>,
    policy: &LinkPolicy,
    (decode_limit, level): (usize, u32),
    usage: Prefs,
) -> Fetched {
    let usage = usage_of(resp, usage);
    let usage = (!usage.is_empty()).then(|| usage.to_aipref());
    examine_archived(
        resp,
        depth,
        known,
        policy,
        (decode_limit, PayloadDigest::Sha1),
        |unchanged, http_head, payload_digest, encoding| {
            let uri = resp.url.as_str();
            let previous =
                known.map(|k| (uri, chrono::DateTime::from_timestamp_millis(k.fetched_at)));
            if resp.status == 304 {
                warc::revisit(
                    uri,
                    resp.fetched_at,
                    http_head,
                    RevisitProfile::ServerNotModified,
                    None,
                    previous.unwrap_or((uri, None)),
                    level,
                )
            } else if unchanged {
                warc::revisit(
                    uri,
                    resp.fetched_at,
                    http_head,
                    RevisitProfile::IdenticalPayloadDigest,
                    Some(payload_digest),
                    previous.unwrap_or((uri, None)),
                    level,
                )
            } else {
                warc::response(
                    &warc::Exchange {
                        uri,
                        at: resp.fetched_at,
                        ip: fetch::ip_of(resp),
                        http_head,
                        body: &resp.body,
                        payload_digest,
                        truncated: resp.truncated,
                        usage: usage.as_deref(),
                        encoding,
                    },
                    level,
                )
            }
        },
    )
}

/// How a record's payload digest is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PayloadDigest {
    /// SHA-1 of the body as received, as every WARC writer does for a response.
    Sha1,
    /// The content's SHA-256 the analysis computes for its validator, for a body the crawler
    /// made itself from a site's snapshot or batch (plain, no content coding): `sha256:` and
    /// hex, as the site's own records write it, so the content is hashed once.
    OfContent,
}

/// The analysis of a page response, archived by `archive` (given whether the content is the
/// copy held, the HTTP head and the payload digest): the record is compressed once, by
/// whoever knows what it must say.
pub(crate) fn examine_archived(
    resp: &FetchResponse,
    depth: u32,
    known: Option<&KnownPage>,
    policy: &LinkPolicy,
    (decode_limit, digest): (usize, PayloadDigest),
    archive: impl FnOnce(bool, &str, &str, Option<&str>) -> warc::Record,
) -> Fetched {
    let received = Received {
        url: &resp.url,
        status: resp.status,
        headers: &resp.headers,
        body: &resp.body,
        truncated: resp.truncated,
    };
    let mut analysis = analyze::analyze(received, depth, policy, decode_limit);
    let http_head = resp.response_head();
    let of_content = analysis
        .validator
        .as_deref()
        .filter(|_| digest == PayloadDigest::OfContent)
        .and_then(|v| v.parse::<EntityTag>().ok())
        .and_then(|tag| Sha256Digest::from_etag(&tag));
    let payload_digest = match of_content {
        Some(sha256) => {
            // The content's validator is the only tag such a page has.
            if analysis.etag.is_none() {
                analysis.etag = analysis.validator.clone();
            }
            webcoop_protocol::snapshot::digest_field(&sha256)
        }
        None => warc::digest(&resp.body),
    };
    let held = known.and_then(|k| k.digest);
    let ok = (200..300).contains(&resp.status) && analysis.digest.is_some();
    let unchanged = ok && held == analysis.digest;
    let changed = ok && held.is_some() && held != analysis.digest;
    let record = archive(
        unchanged,
        &http_head,
        &payload_digest,
        analysis.encoding.as_deref(),
    );
    // Cut on the wire, or its decoding at the limit: not the whole page either way.
    let truncated = resp.truncated || analysis.cut;
    Fetched {
        status: resp.status,
        analysis,
        size: resp.body.len() as u64,
        truncated,
        fetched_at: resp.fetched_at,
        retry_after: resp.header("retry-after").map(str::to_string),
        http_head,
        payload_digest,
        unchanged,
        changed,
        refers_to: None,
        record: RecordSlot::New(record),
        received: None,
        known: known.cloned(),
        delta: None,
    }
}

/// Fetches and examines a page when its turn in the host's lane comes, and sends the
/// outcome; `conditional` sends the held copy's validators, `close` ends the connection.
pub(crate) async fn page(
    ctx: Arc<Context>,
    job: Queued,
    url: Url,
    known: Option<KnownPage>,
    (conditional, usage, close): (bool, Prefs, bool),
    (lane, ticket): (Arc<Lane>, Ticket),
    tx: Outbox,
) {
    let Some(permit) = lane.turn(ticket).await else {
        return give_back(&lane, job, &tx);
    };
    let start = Instant::now();
    let held = known.as_ref().filter(|_| conditional);
    let request = FetchRequest {
        url,
        etag: held.and_then(|k| k.etag.clone()),
        last_modified: held.and_then(|k| k.last_modified.clone()),
        headers: closing(close),
    };
    let fetched = fetch::fetch(&ctx.client, &request, &ctx.limits).await;
    let slow_down = lane::slows_down(fetched.as_ref().ok().map(|r| r.status));
    if slow_down {
        lane.stop();
    }
    // The connection is free once the body is in: the next request may start.
    drop(permit);
    let elapsed = start.elapsed();
    let refused = fetched
        .as_ref()
        .ok()
        .and_then(|resp| usage_of(resp, usage).refuses(&ctx.purposes));
    let result = match fetched {
        Err(e) => Err(e),
        Ok(_) if refused.is_some() => {
            Err(FetchError::UsageRefused(refused.map_or("", |p| p.as_str())))
        }
        Ok(resp) => {
            let depth = job.depth;
            let decoded = if (200..300).contains(&resp.status) {
                analyze::decoded_room(
                    resp.header("content-encoding"),
                    &resp.body,
                    ctx.limits.max_body,
                )
            } else {
                0
            };
            let _room = ctx.analysis.take(decoded).await;
            let inline = resp.body.len() <= INLINE_ANALYSIS;
            let ctx = ctx.clone();
            let work = move || {
                Box::new(examine(
                    &resp,
                    depth,
                    known.as_ref(),
                    &ctx.policy,
                    (ctx.limits.max_body, ctx.warc_level),
                    usage,
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
    let outcome = Outcome::Page {
        job,
        result,
        elapsed,
        source: Source::Request,
    };
    // The scheduler hears at once of a response that changes the host's pace.
    if lane.leave() || slow_down {
        tx.send(outcome);
    } else {
        tx.send_quietly(outcome);
    }
}

/// A request whose lane was halted before its turn goes back to the scheduler unfetched.
pub(crate) fn give_back(lane: &Lane, job: Queued, tx: &Outbox) {
    lane.leave();
    tx.send(Outcome::Returned { job });
}

/// The robots.txt outcome of a final response.
pub(crate) fn robots_from(resp: &FetchResponse, level: u32) -> RobotsFetched {
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
        record: RecordSlot::New(archived(resp, level)),
    }
}

/// The `response` record of a response as received.
pub(crate) fn archived(resp: &FetchResponse, level: u32) -> warc::Record {
    let payload_digest = warc::digest(&resp.body);
    warc::response(
        &warc::Exchange {
            uri: resp.url.as_str(),
            at: resp.fetched_at,
            ip: fetch::ip_of(resp),
            http_head: &resp.response_head(),
            body: &resp.body,
            payload_digest: &payload_digest,
            truncated: resp.truncated,
            usage: None,
            encoding: None,
        },
        level,
    )
}

/// Looks up a host's address (for politeness keyed by address) as its connections will: a
/// `--resolve` address first, else the name server or the system's resolver. Sends the first
/// address, or none.
pub(crate) async fn resolve(ctx: Arc<Context>, host: HostId, origin: String, tx: Outbox) {
    let ip = match Url::parse(&origin) {
        Ok(url) => {
            let name = url.host_str().unwrap_or_default();
            let port = url.port_or_known_default().unwrap_or(80);
            tokio::time::timeout(
                ctx.limits.connect_timeout,
                ctx.client.guard().lookup(name, port),
            )
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|addrs| addrs.first().map(|a| a.ip()))
        }
        Err(_) => None,
    };
    tx.send(Outcome::Resolved { host, ip });
}

/// A request's headers: `Connection: close` for a host waiting for room on the workbench
/// past its first look, whose connection would only wait idle, 27 KB of buffers, until then.
pub(crate) fn closing(close: bool) -> Vec<(&'static str, String)> {
    if close {
        vec![("connection", "close".into())]
    } else {
        Vec::new()
    }
}

/// Fetches a host's robots.txt (closing the connection after it when `close`), following up
/// to five redirects, and sends the outcome.
pub(crate) async fn robots(
    ctx: Arc<Context>,
    host: HostId,
    origin: String,
    tx: Outbox,
    close: bool,
) {
    let start = Instant::now();
    let mut url = match Url::parse(&origin).and_then(|o| o.join("/robots.txt")) {
        Ok(u) => u,
        Err(e) => {
            tx.send(Outcome::Robots {
                host,
                result: Err(fetch::FetchError::Other(format!(
                    "bad origin {origin}: {e}"
                ))),
                elapsed: start.elapsed(),
                source: Source::Request,
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
            headers: closing(close),
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
    tx.send(Outcome::Robots {
        host,
        result,
        elapsed: start.elapsed(),
        source: Source::Request,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use webcoop_protocol::usage::Purpose;

    fn with_headers(headers: &[(&str, &str)]) -> FetchResponse {
        FetchResponse {
            url: url::Url::parse("http://site.test/a").unwrap(),
            status: 200,
            version: "HTTP/1.1",
            reason: "OK".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: bytes::Bytes::new(),
            truncated: false,
            fetched_at: chrono::Utc::now(),
            elapsed: std::time::Duration::ZERO,
            remote: None,
            request_head: String::new(),
        }
    }

    #[test]
    fn repeated_content_usage_fields_combine_and_junk_refuses_everything() {
        // Two fields are one list (RFC 9110, 5.3): the second refusal is not dropped.
        let r = with_headers(&[
            ("Content-Usage", "search=y"),
            ("content-usage", "train-ai=n"),
        ]);
        let u = usage_of(&r, Prefs::NONE);
        assert_eq!(u.get(Purpose::Search), Some(true));
        assert_eq!(u.get(Purpose::AiTrain), Some(false));
        // What robots.txt refused stays refused whatever the header says.
        let mut stated = Vec::new();
        let robots = Prefs::parse_aipref("search=n", &mut stated).unwrap();
        assert_eq!(usage_of(&r, robots).get(Purpose::Search), Some(false));
        // A field that cannot be read refuses every purpose.
        let junk = with_headers(&[("Content-Usage", "train-ai=maybe, ((")]);
        assert_eq!(usage_of(&junk, Prefs::NONE), Prefs::REFUSE_ALL);
        assert_eq!(usage_of(&with_headers(&[]), robots), robots);
    }
}
