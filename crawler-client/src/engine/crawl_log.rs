//! The crawl log: one line per request or decision, in the order they were made, for people
//! to read (`crawl.log` in the crawl directory).

use super::{CrawlError, file_error};
use chrono::{DateTime, SecondsFormat};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The note of a page read from the site's snapshot.
pub const FROM_SNAPSHOT: &str = "from the site's snapshot";
/// The note of a page read from a batch of the site's changes.
pub const FROM_BATCH: &str = "from a batch of the site's changes";
/// The note of a page rebuilt from a delta the site's hub pushed.
pub const PUSHED_INLINE: &str = "delta pushed inline, applied and verified";

/// Whether a line of the log is a request the crawler made, rather than a page it read from
/// something the site sent (its snapshot, a batch, a pushed delta).
pub fn is_request(line: &str) -> bool {
    !line.is_empty()
        && ![FROM_SNAPSHOT, FROM_BATCH, PUSHED_INLINE]
            .iter()
            .any(|note| line.contains(note))
}

/// One line of the log: `time status size url depth hops type elapsed note`, `-` where a
/// field does not apply.
#[derive(Debug, Default)]
pub(super) struct Entry<'a> {
    /// When (ms since the epoch).
    pub(super) at: i64,
    /// The status code, if a response came.
    pub(super) status: Option<u16>,
    /// Body bytes received.
    pub(super) size: Option<u64>,
    /// The URL.
    pub(super) url: &'a str,
    /// Links from a seed.
    pub(super) depth: u32,
    /// Redirects followed to get here.
    pub(super) hops: u32,
    /// The media type.
    pub(super) media_type: Option<&'a str>,
    /// How long the request took.
    pub(super) elapsed: Duration,
    /// What became of it.
    pub(super) note: &'a str,
}

impl<'a> Entry<'a> {
    /// The line of a response to a queued URL.
    pub(super) fn response(
        job: &'a crate::state::Queued,
        f: &'a crate::fetch::outcome::Fetched,
        elapsed: Duration,
        note: &'a str,
    ) -> Entry<'a> {
        Entry {
            at: f.fetched_at.timestamp_millis(),
            status: Some(f.status),
            size: Some(f.size),
            url: &job.url,
            depth: job.depth,
            hops: job.hops,
            media_type: f.analysis.media_type.as_deref(),
            elapsed,
            note,
        }
    }
}

/// The open log, buffered; flushed with every saved batch.
pub(super) struct CrawlLog {
    out: BufWriter<File>,
    path: PathBuf,
}

impl CrawlLog {
    /// Opens `path` to append.
    pub(super) fn open(path: &Path) -> Result<CrawlLog, CrawlError> {
        let f = File::options()
            .create(true)
            .append(true)
            .open(path)
            .map_err(file_error(path))?;
        Ok(CrawlLog {
            out: BufWriter::new(f),
            path: path.to_path_buf(),
        })
    }

    /// Writes a line. A log that cannot be written does not stop the crawl (the state is the
    /// record); the error shows at the next flush.
    pub(super) fn write(&mut self, e: &Entry<'_>) {
        let at = DateTime::from_timestamp_millis(e.at).unwrap_or_default();
        let _ = writeln!(
            self.out,
            "{} {} {} {} {} {} {} {}ms {}",
            at.to_rfc3339_opts(SecondsFormat::Millis, true),
            e.status.map_or("-".to_string(), |s| s.to_string()),
            e.size.map_or("-".to_string(), |s| s.to_string()),
            e.url,
            e.depth,
            e.hops,
            e.media_type.unwrap_or("-"),
            e.elapsed.as_millis(),
            e.note
        );
    }

    /// Writes what is buffered.
    pub(super) fn flush(&mut self) -> Result<(), CrawlError> {
        self.out.flush().map_err(file_error(&self.path))
    }
}
