//! A site's snapshot (`webcoop_protocol::snapshot`) fetched in one request and read back as
//! pages: the file is streamed to the crawl directory (a broken download resumes with `Range`
//! and `If-Range`, so a byte already received is never asked again), then each record is read,
//! its content checked against its own digest, and sent to the loop as a page obtained
//! without a request ([`Source::Snapshot`]), archived as a `resource` record that refers to the
//! snapshot and names the usage preferences it was taken under. A record is a claim held to
//! what a link is held to: a URL with credentials, outside the crawl's scope, another site's,
//! one robots.txt disallows or one whose usage preferences refuse the crawl is not kept, and
//! a fragment names no other page. A record larger than the crawler's page limit is read past
//! (the page is fetched alone, under the same limit); the rest of the snapshot is used. The
//! loop checks each page against the site's listing before it believes it; the last outcome
//! says how the snapshot went.

use super::CoopJob;
use crate::analyze::Link;
use crate::archive::warc;
use crate::fetch::outbox::Outbox;
use crate::fetch::outcome::{Context, CoopFetched, Outcome, PageGate, Source};
use crate::fetch::tasks::{self, PayloadDigest};
use crate::fetch::{FetchError, FetchResponse};
use crate::ids::HostId;
use crate::state::Queued;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::snapshot::{Entry, SnapshotInfo};
use webcoop_protocol::warc::{Next, ZstdWarcReader};

/// Largest snapshot file accepted.
pub(crate) const MAX_SNAPSHOT_BYTES: u64 = 8 << 30;
/// Attempts to finish a broken download before the snapshot is given up.
const ATTEMPTS: u32 = 4;
/// Decoded pages sent to the loop and not yet recorded, at most (bytes): the reader waits
/// beyond it, so a large site never sits in memory at once.
const BACKLOG: u64 = 64 << 20;

/// Where snapshots are downloaded, in the crawl directory.
fn directory(ctx: &Context) -> PathBuf {
    ctx.warc_dir
        .parent()
        .map_or_else(|| ctx.warc_dir.join("snapshots"), |d| d.join("snapshots"))
}

/// The partial file of `url`: named by a digest of the URL, so a resumed run finds it.
fn part_path(dir: &Path, url: &Url) -> PathBuf {
    let digest = webcoop_protocol::validator::Sha256Digest::of(url.as_str().as_bytes()).to_hex();
    dir.join(format!("{}.warc.zst.part", &digest[..32]))
}

/// Fetches the snapshot at `url`, sends its pages, then the outcome of the job. The outcome's
/// time is the download's: politeness weighs what the request cost the server, and reading
/// the file afterwards (most of a snapshot's time on a fast link) costs it nothing.
pub(crate) async fn run(
    ctx: Arc<Context>,
    host: HostId,
    job: CoopJob,
    url: Url,
    tx: Outbox,
    gate: PageGate,
) {
    let start = Instant::now();
    let downloaded = download(&ctx, &url).await;
    let elapsed = start.elapsed();
    let result = match downloaded {
        Ok((path, headers, size)) => {
            let ctx2 = ctx.clone();
            let tx2 = tx.clone();
            let url2 = url.clone();
            let read = tokio::task::spawn_blocking(move || {
                send_pages(&ctx2, host, &url2, &path, &tx2, &gate)
            })
            .await
            .map_err(|e| FetchError::Other(format!("{url}: reading the snapshot stopped: {e}")))
            .and_then(|r| r);
            read.map(|(info, read)| {
                let mut headers = headers;
                headers.push((
                    "x-webcoop-snapshot-sequence".into(),
                    info.sequence.to_string(),
                ));
                headers.push(("x-webcoop-snapshot-pages".into(), read.pages.to_string()));
                headers.push(("x-webcoop-snapshot-left".into(), read.left.to_string()));
                if !read.oversize.is_empty() {
                    headers.push((OVERSIZE_FIELD.into(), read.oversize.join(" ")));
                }
                CoopFetched {
                    status: 200,
                    headers,
                    body: Vec::new(),
                    size,
                    record: None,
                }
            })
        }
        Err(e) => Err(e),
    };
    tx.send(Outcome::Coop {
        host,
        job,
        result,
        elapsed,
    });
}

/// A response's headers, and the whole file's size it states (of a range's file when it
/// answers one).
fn headers_and_total(
    resp: &reqwest::Response,
    append: bool,
) -> (Vec<(String, String)>, Option<u64>) {
    let headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .filter_map(|(n, v)| {
            v.to_str()
                .ok()
                .map(|v| (n.as_str().to_string(), v.to_string()))
        })
        .collect();
    let total = if append {
        resp.headers()
            .get("content-range")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit('/').next())
            .and_then(|v| v.parse::<u64>().ok())
    } else {
        resp.content_length()
    };
    (headers, total)
}

/// Streams the snapshot to its partial file, resuming what an earlier attempt left; returns
/// the complete file, the final response's headers and the bytes received in all.
async fn download(
    ctx: &Context,
    url: &Url,
) -> Result<(PathBuf, Vec<(String, String)>, u64), FetchError> {
    let dir = directory(ctx);
    let io = |e: std::io::Error| FetchError::Other(format!("{url}: snapshot file: {e}"));
    std::fs::create_dir_all(&dir).map_err(io)?;
    let part = part_path(&dir, url);
    let validator_path = part.with_extension("etag");
    let mut received = 0u64;
    let mut last_error = None;
    for _ in 0..ATTEMPTS {
        let have = std::fs::metadata(&part).map_or(0, |m| m.len());
        let etag = std::fs::read_to_string(&validator_path).ok();
        let mut request = ctx.client.get(url.clone())?;
        // A whole site takes longer than a page: the transfer is held to the minimum speed
        // instead of the page timeout.
        request = request.timeout(Duration::from_secs(3600));
        if have > 0
            && let Some(tag) = etag.as_deref().filter(|t| !t.starts_with("W/"))
        {
            request = request
                .header("Range", format!("bytes={have}-"))
                .header("If-Range", tag.trim());
        }
        let mut resp = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                last_error = Some(crate::fetch::classify(&e));
                continue;
            }
        };
        let status = resp.status().as_u16();
        let append = match status {
            206 if have > 0 => true,
            200 => false,
            _ => {
                return Err(FetchError::Other(format!(
                    "{url}: snapshot answered {status}"
                )));
            }
        };
        let (headers, total) = headers_and_total(&resp, append);
        if total.is_some_and(|t| t > MAX_SNAPSHOT_BYTES) {
            return Err(FetchError::Other(format!(
                "{url}: a snapshot of {} bytes is more than the {MAX_SNAPSHOT_BYTES} accepted",
                total.unwrap_or(0)
            )));
        }
        match headers.iter().find(|(n, _)| n == "etag") {
            Some((_, tag)) => std::fs::write(&validator_path, tag).map_err(io)?,
            None => {
                let _ = std::fs::remove_file(&validator_path);
            }
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&part)
            .map_err(io)?;
        let mut size = if append { have } else { 0 };
        let broken = loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    size += chunk.len() as u64;
                    received += chunk.len() as u64;
                    if size > MAX_SNAPSHOT_BYTES {
                        return Err(FetchError::Other(format!(
                            "{url}: the snapshot grew past the {MAX_SNAPSHOT_BYTES} bytes accepted"
                        )));
                    }
                    file.write_all(&chunk).map_err(io)?;
                }
                Ok(None) => break None,
                Err(e) => break Some(crate::fetch::classify(&e)),
            }
        };
        file.flush().map_err(io)?;
        match broken {
            None if total.is_none_or(|t| t == size) => {
                let done = part.with_extension("");
                std::fs::rename(&part, &done).map_err(io)?;
                let _ = std::fs::remove_file(&validator_path);
                return Ok((done, headers, received));
            }
            None => {
                last_error = Some(FetchError::Other(format!(
                    "{url}: the snapshot ended early"
                )))
            }
            Some(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| FetchError::Other(format!("{url}: snapshot not received"))))
}

/// What reading a snapshot gave: the pages sent, and the records left for a fetch of their
/// own (larger than the page limit) or not kept (what a link could not be).
#[derive(Debug, Default, Clone)]
pub(crate) struct Read {
    /// Pages sent to the loop.
    pub(crate) pages: u64,
    /// Records read past or refused.
    pub(crate) left: u64,
    /// The URLs of records above the page limit (at most [`MAX_OVERSIZE`]): fetched alone.
    pub(crate) oversize: Vec<String>,
}

/// Where the answer of a snapshot's request names the records above the page limit, for the
/// cooperation state (space-separated URLs).
pub(crate) const OVERSIZE_FIELD: &str = "x-webcoop-snapshot-oversize";
/// The most oversize records named; the others are fetched alone all the same.
const MAX_OVERSIZE: usize = 64;

/// Reads the downloaded snapshot and sends each page `gate` lets through; returns its
/// `warcinfo` and what was read. The file is removed once read: its pages are in the crawl's
/// own archive.
fn send_pages(
    ctx: &Context,
    host: HostId,
    url: &Url,
    path: &Path,
    tx: &Outbox,
    gate: &PageGate,
) -> Result<(SnapshotInfo, Read), FetchError> {
    let bad = |e: webcoop_protocol::warc::WarcError| FetchError::Other(format!("{url}: {e}"));
    let file = std::fs::File::open(path).map_err(|e| FetchError::Other(format!("{url}: {e}")))?;
    let mut reader =
        ZstdWarcReader::new(file, ctx.limits.max_body as u64 + (64 << 10)).map_err(bad)?;
    let first = reader
        .next_record()
        .map_err(bad)?
        .ok_or_else(|| FetchError::Other(format!("{url}: the snapshot is empty")))?;
    let info_id = first
        .record
        .field("WARC-Record-ID")
        .unwrap_or_default()
        .to_string();
    let info = SnapshotInfo::from_record(&first.record).map_err(bad)?;
    // The records are decoded here, in order; analysing each page and compressing its
    // record (most of the work: a gzip'd copy of every page for the crawl's archive) runs on
    // one thread per core beside it.
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    let pages = std::sync::atomic::AtomicU64::new(0);
    let mut left = 0u64;
    let mut oversize: Vec<String> = Vec::new();
    let mut kept: std::collections::HashSet<String> = std::collections::HashSet::new();
    let (entries, taken) = std::sync::mpsc::sync_channel::<Taken>(workers * 4);
    let taken = std::sync::Mutex::new(taken);
    let result = std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let from = (info_id.as_str(), url, info.sequence);
                send_taken(ctx, host, from, (&taken, tx), &pages);
            });
        }
        let read = loop {
            let located = match reader.next_or_oversize() {
                Ok(Some(Next::Record(l))) => l,
                Ok(Some(Next::Oversize {
                    size, target_uri, ..
                })) => {
                    // The page is fetched alone once the listing is acted on.
                    left += 1;
                    if let Some(u) = target_uri.as_deref()
                        && oversize.len() < MAX_OVERSIZE
                        && !u.contains(char::is_whitespace)
                    {
                        oversize.push(u.to_string());
                    }
                    tracing::info!(
                        "{url}: a record of {size} bytes ({}) is over the page limit; that page is fetched alone",
                        target_uri.as_deref().unwrap_or("no URL")
                    );
                    continue;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(bad(e)),
            };
            // Each page is held to the listing's digest by the loop: not hashed here too.
            let entry = match Entry::from_record_claimed(located.record) {
                Ok(e) => e,
                Err(e) => break Err(bad(e)),
            };
            let Some((page, usage)) = admitted(ctx, gate, &entry.url) else {
                left += 1;
                continue;
            };
            if !kept.insert(page.as_str().to_string()) {
                left += 1;
                continue;
            }
            while ctx.snapshot_backlog.load(Ordering::Relaxed) > BACKLOG {
                std::thread::sleep(Duration::from_millis(5));
            }
            ctx.snapshot_backlog
                .fetch_add(entry.body.len() as u64, Ordering::Relaxed);
            if entries.send((page, entry, located.offset, usage)).is_err() {
                break Ok(());
            }
        };
        // The workers end once the channel is closed and empty.
        drop(entries);
        read
    });
    let pages = pages.into_inner();
    let _ = std::fs::remove_file(path);
    result.map(|()| {
        (
            info,
            Read {
                pages,
                left,
                oversize,
            },
        )
    })
}

/// A snapshot's record read and admitted, on its way to a worker: the page, its entry, its
/// offset in the file, and the usage preferences it is kept under.
type Taken = (Url, Entry, u64, Option<String>);

/// A worker of [`send_pages`]: takes records until the reader closes the channel, analyses
/// each as a page fetched from the snapshot (`from`: its info record's id, its URL and
/// sequence) and sends it to the loop, counting them in `pages`.
fn send_taken(
    ctx: &Context,
    host: HostId,
    (info_id, url, sequence): (&str, &Url, u64),
    (taken, tx): (&std::sync::Mutex<std::sync::mpsc::Receiver<Taken>>, &Outbox),
    pages: &std::sync::atomic::AtomicU64,
) {
    loop {
        let next = match taken.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok((page, entry, offset, usage)) = next else {
            return;
        };
        let how = format!("snapshot; sequence={sequence}; offset={offset}");
        let fetched = page_of(
            ctx,
            &page,
            entry,
            None,
            1,
            Some((info_id, url)),
            &how,
            usage.as_deref(),
        );
        let link = Link::to(&page);
        tx.send(Outcome::Page {
            job: Queued::unqueued(host, link.fp, link.url, 1, false),
            result: Ok(Box::new(fetched)),
            elapsed: Duration::ZERO,
            source: Source::Snapshot,
        });
        pages.fetch_add(1, Ordering::Relaxed);
    }
}

/// The page a snapshot record names, normalised, and the usage preferences it is kept under
/// (aipref form), if `gate` lets it be kept.
fn admitted(ctx: &Context, gate: &PageGate, stated: &str) -> Option<(Url, Option<String>)> {
    let raw = Url::parse(stated).ok()?;
    let page = match super::stated::refusal(
        &raw,
        &gate.origin,
        &ctx.policy,
        gate.rules.as_ref(),
        super::stated::Arrival::WithContent,
    ) {
        Ok(p) => p,
        Err(why) => {
            tracing::debug!(
                "{}: not kept from the snapshot: {why}",
                super::stated::redacted(&raw)
            );
            return None;
        }
    };
    let usage = gate
        .rules
        .as_ref()
        .map(|r| r.usage_at(&page))
        .unwrap_or_default()
        .strictest(gate.stated);
    if usage.refuses(&ctx.purposes).is_some() {
        return None;
    }
    Some((page, (!usage.is_empty()).then(|| usage.to_aipref())))
}

/// The page of a snapshot's or a batch's entry, examined as a response would be (against the
/// copy held, if any), archived as a `resource` record referring to the record it came from
/// and naming the usage preferences it was taken under.
#[allow(clippy::too_many_arguments)]
pub(crate) fn page_of(
    ctx: &Context,
    page: &Url,
    entry: Entry,
    known: Option<&crate::state::KnownPage>,
    depth: u32,
    from: Option<(&str, &Url)>,
    how: &str,
    usage: Option<&str>,
) -> crate::fetch::outcome::Fetched {
    let now = crate::clock::now();
    let resp = FetchResponse {
        url: page.clone(),
        status: 200,
        version: "HTTP/1.1",
        reason: "OK".into(),
        headers: super::response_headers::content_headers(
            &[("Content-Type".to_string(), entry.content_type.clone())],
            entry.body.len(),
        ),
        body: entry.body.into(),
        truncated: false,
        fetched_at: now,
        elapsed: Duration::ZERO,
        remote: None,
        request_head: String::new(),
    };
    tasks::examine_archived(
        &resp,
        depth,
        known,
        &ctx.policy,
        (ctx.limits.max_body, PayloadDigest::OfContent),
        |_, _, payload_digest, _| {
            warc::resource_digested(
                &warc::Resource {
                    uri: page.as_str(),
                    at: now,
                    content_type: &entry.content_type,
                    body: &resp.body,
                    refers_to: from.map(|(id, url)| (id, url.as_str())),
                    how,
                    usage,
                },
                payload_digest.to_string(),
                // A page fetched alone is archived as the server sent it: gzip'd at nginx's
                // level 1, which the record's own compression cannot improve. A page read
                // from the site's document arrives plain; level 1 keeps the archive the size
                // the pages would have made, at a third of the time level 6 takes (deflate
                // was 40% of a snapshot's reading, profiled).
                ctx.warc_level.min(1),
            )
        },
    )
}
