//! What a batch of changes is made of: the changes logged, the versions kept, the files
//! refused and judged again.

use crate::inventory::{FileEntry, Inventory};
use chrono::{DateTime, Utc};
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::validator::Sha256Digest;

/// A change as logged.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedChange {
    /// Its sequence number.
    pub(crate) seq: u64,
    /// What happened.
    pub kind: ChangeKind,
    /// The docroot path.
    pub path: String,
    /// When it was seen.
    pub(crate) time: DateTime<Utc>,
    /// The new version.
    pub(crate) sha256: Option<Sha256Digest>,
    /// The version replaced.
    pub(crate) prev_sha256: Option<Sha256Digest>,
    /// Bytes of the new version.
    pub(crate) size: Option<u64>,
    /// Media type of the new version.
    pub(crate) content_type: Option<String>,
    /// Fraction of the text changed.
    pub(crate) changed: Option<f64>,
}

/// Told of every batch of changes once it is saved (the service's hub and IndexNow listen).
pub(crate) type ChangeObserver = Box<dyn FnMut(&[LoggedChange], &Inventory) + Send>;

/// A text version to keep, compressed by the caller (in parallel, off the transaction).
#[derive(Debug)]
pub(crate) struct NewVersion {
    /// The file.
    pub path: String,
    /// The version's digest.
    pub(crate) sha256: Sha256Digest,
    /// Its size uncompressed.
    pub(crate) size: u64,
    /// Its content, zstd-compressed.
    pub(crate) compressed: Vec<u8>,
}

thread_local! {
    // One compression context per reading thread: creating one per file (its tables zeroed
    // each time) was 9% of the agent's CPU on a first run over 100,000 pages.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `content` compressed at zstd level 3, with this thread's context.
fn compress_version(content: &[u8]) -> Vec<u8> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = zstd::bulk::Compressor::new(3).ok();
        }
        match c.as_mut() {
            Some(z) => z.compress(content).unwrap_or_default(),
            None => zstd::bulk::compress(content, 3).unwrap_or_default(),
        }
    })
}

impl NewVersion {
    /// Compresses `content` for keeping.
    pub(crate) fn of(path: &str, sha256: Sha256Digest, content: &[u8]) -> NewVersion {
        NewVersion {
            path: path.to_string(),
            sha256,
            size: content.len() as u64,
            compressed: compress_version(content),
        }
    }
}

/// Everything one reconciliation found, to be saved at once.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Files to add or update, with the change time to append to their history and count as a
    /// change (none for a touch or a baseline entry).
    pub(crate) upserts: Vec<(String, FileEntry, Option<DateTime<Utc>>)>,
    /// Files gone.
    pub(crate) deletions: Vec<String>,
    /// Changes to log (their `seq` is assigned on commit).
    pub(crate) changes: Vec<LoggedChange>,
    /// Text versions to keep.
    pub(crate) versions: Vec<NewVersion>,
    /// Files the web server refused, with what was judged.
    pub(crate) refusals: Vec<(String, RefusedFile)>,
    /// Files no longer refused (public now, or gone).
    pub(crate) unrefused: Vec<String>,
    /// Public files judged again, and public still.
    pub(crate) rejudged: Vec<String>,
}

impl Batch {
    /// Records that `path`, listed with `old`, left the listing at `now` (gone, or no longer
    /// public): a deletion logged and the file dropped.
    pub(crate) fn delete(&mut self, path: &str, old: Sha256Digest, now: DateTime<Utc>) {
        self.changes.push(LoggedChange {
            seq: 0,
            kind: ChangeKind::Deleted,
            path: path.to_string(),
            time: now,
            sha256: None,
            prev_sha256: Some(old),
            size: None,
            content_type: None,
            changed: None,
        });
        self.deletions.push(path.to_string());
    }

    /// Whether there is nothing to save.
    pub(crate) fn is_empty(&self) -> bool {
        self.upserts.is_empty()
            && self.deletions.is_empty()
            && self.changes.is_empty()
            && self.versions.is_empty()
            && self.refusals.is_empty()
            && self.unrefused.is_empty()
            && self.rejudged.is_empty()
    }
}

/// A file the web server refused, as judged: what was asked about, and the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefusedFile {
    /// Bytes, when judged.
    pub(crate) size: u64,
    /// Modification time, when judged.
    pub(crate) mtime_ns: i64,
    /// Status change time, when judged (permissions, owner, links).
    pub(crate) ctime_ns: i64,
    /// SHA-256 of the bytes judged.
    pub(crate) sha256: Sha256Digest,
    /// Why it is not published, as the log and the console say it.
    pub(crate) reason: String,
}

/// A file due to be judged again, and whether it is public now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Due {
    /// The docroot path.
    pub path: String,
    /// Listed (public) now, or refused now.
    pub(crate) public: bool,
    /// When it was last judged (ms; 0: never, or asked again by a change of the rules).
    pub(crate) judged: i64,
}
