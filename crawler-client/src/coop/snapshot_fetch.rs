//! A site's snapshot (`webcoop_protocol::snapshot`) fetched in one request and read back as
//! pages: the file is streamed to the crawl directory (a broken download resumes with `Range`
//! and `If-Range`, so a byte already received is never asked again), then each record is read,
//! its content checked against its own digest, and sent to the loop as a page obtained
//! without a request ([`Source::Snapshot`]), archived as a `resource` record that refers to the
//! snapshot. The loop checks each against the site's listing before it believes it; the last
//! outcome says how the snapshot went.

use super::CoopJob;
use crate::analyze::Link;
use crate::archive::warc;
use crate::fetch::outbox::Outbox;
use crate::fetch::outcome::{Context, CoopFetched, Outcome, Source};
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
use webcoop_protocol::warc::ZstdWarcReader;

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
pub(crate) async fn run(ctx: Arc<Context>, host: HostId, job: CoopJob, url: Url, tx: Outbox) {
    let start = Instant::now();
    let downloaded = download(&ctx, &url).await;
    let elapsed = start.elapsed();
    let result = match downloaded {
        Ok((path, headers, size)) => {
            let ctx2 = ctx.clone();
            let tx2 = tx.clone();
            let url2 = url.clone();
            let read =
                tokio::task::spawn_blocking(move || send_pages(&ctx2, host, &url2, &path, &tx2))
                    .await
                    .map_err(|e| {
                        FetchError::Other(format!("{url}: reading the snapshot stopped: {e}"))
                    })
                    .and_then(|r| r);
            read.map(|(info, pages)| {
                let mut headers = headers;
                headers.push((
                    "x-webcoop-snapshot-sequence".into(),
                    info.sequence.to_string(),
                ));
                headers.push(("x-webcoop-snapshot-pages".into(), pages.to_string()));
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

/// Reads the downloaded snapshot and sends each page; returns its `warcinfo` and the pages
/// sent. The file is removed once read: its pages are in the crawl's own archive.
fn send_pages(
    ctx: &Context,
    host: HostId,
    url: &Url,
    path: &Path,
    tx: &Outbox,
) -> Result<(SnapshotInfo, u64), FetchError> {
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
    let (entries, taken) = std::sync::mpsc::sync_channel::<(Url, Entry, u64)>(workers * 4);
    let taken = std::sync::Mutex::new(taken);
    let result = std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let next = match taken.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((page, entry, offset)) = next else {
                        return;
                    };
                    let how = format!("snapshot; sequence={}; offset={offset}", info.sequence);
                    let fetched = page_of(ctx, &page, entry, None, 1, Some((&info_id, url)), &how);
                    let link = Link::to(&page);
                    tx.send(Outcome::Page {
                        job: Queued::unqueued(host, link.fp, link.url, 1, false),
                        result: Ok(Box::new(fetched)),
                        elapsed: Duration::ZERO,
                        source: Source::Snapshot,
                    });
                    pages.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let read = loop {
            let located = match reader.next_record() {
                Ok(Some(l)) => l,
                Ok(None) => break Ok(()),
                Err(e) => break Err(bad(e)),
            };
            // Each page is held to the listing's digest by the loop: not hashed here too.
            let entry = match Entry::from_record_claimed(located.record) {
                Ok(e) => e,
                Err(e) => break Err(bad(e)),
            };
            let Ok(page) = Url::parse(&entry.url) else {
                continue;
            };
            while ctx.snapshot_backlog.load(Ordering::Relaxed) > BACKLOG {
                std::thread::sleep(Duration::from_millis(5));
            }
            ctx.snapshot_backlog
                .fetch_add(entry.body.len() as u64, Ordering::Relaxed);
            if entries.send((page, entry, located.offset)).is_err() {
                break Ok(());
            }
        };
        // The workers end once the channel is closed and empty.
        drop(entries);
        read
    });
    let pages = pages.into_inner();
    let _ = std::fs::remove_file(path);
    result.map(|()| (info, pages))
}

/// The page of a snapshot's or a batch's entry, examined as a response would be (against the
/// copy held, if any), archived as a `resource` record referring to the record it came from.
pub(crate) fn page_of(
    ctx: &Context,
    page: &Url,
    entry: Entry,
    known: Option<&crate::state::KnownPage>,
    depth: u32,
    from: Option<(&str, &Url)>,
    how: &str,
) -> crate::fetch::outcome::Fetched {
    let now = crate::clock::now();
    let resp = FetchResponse {
        url: page.clone(),
        status: 200,
        version: "HTTP/1.1",
        reason: "OK".into(),
        headers: super::requests::content_headers(
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
        |_, _, payload_digest| {
            warc::resource_digested(
                &warc::Resource {
                    uri: page.as_str(),
                    at: now,
                    content_type: &entry.content_type,
                    body: &resp.body,
                    refers_to: from.map(|(id, url)| (id, url.as_str())),
                    how,
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
