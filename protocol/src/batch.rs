//! A batch: one page of the changes feed with the content of the pages it names, in one
//! response (Castillo's "send batch update" and "serve many pages in one request").
//!
//! A client asks `changes?since=N&bodies=1` and gets a WARC 1.1 stream (`application/warc`,
//! compressed by HTTP content coding): first a `metadata` record whose block is the Atom page
//! of the changes exactly as `changes?since=N` would answer it (deletions, validators, the
//! `next` link, the head), then one `resource` record per page created or modified in that
//! page whose current content the agent publishes, as snapshots carry them
//! ([`crate::snapshot::Entry`]). A page whose content is not in the batch (too large, or
//! changed again since) is fetched as usual. The server bounds each batch by its bodies'
//! bytes, cutting the page of changes short (and its `next` link continues from there).

use crate::changes_feed::{self, ChangesFeed, FeedLimits};
use crate::error::ParseError;
use crate::snapshot::{Entry, warc_date};
use crate::warc::{WarcError, record};
use chrono::{DateTime, Utc};

/// The query parameter that asks for the bodies.
pub const BODIES_PARAM: &str = "bodies";
/// The media type of a batch.
pub const MEDIA_TYPE: &str = "application/warc";
/// The media type of its first record.
const ATOM_MEDIA_TYPE: &str = "application/atom+xml";
/// Bytes of content a batch carries at most, beside its first page (a server may send less;
/// a client refuses more).
pub const MAX_CONTENT_BYTES: u64 = 16 << 20;

/// Why a batch could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A record is not one, or not what a batch holds.
    #[error("batch: {0}")]
    Warc(#[from] WarcError),
    /// The changes it starts with are not a feed.
    #[error("batch: its changes: {0}")]
    Feed(#[from] Box<ParseError>),
    /// More than a batch may hold.
    #[error("batch: {0}")]
    TooLarge(&'static str),
}

/// A batch read back.
#[derive(Debug)]
pub struct Batch {
    /// The page of changes.
    pub feed: ChangesFeed,
    /// The content of pages it names, each checked against its own digest.
    pub entries: Vec<Entry>,
}

/// Writes a batch: `atom` (the changes page at `changes_url`), then `entries`; `id` makes each
/// record's `WARC-Record-ID`.
pub fn write(
    changes_url: &str,
    atom: &[u8],
    entries: &[Entry],
    at: DateTime<Utc>,
    mut id: impl FnMut() -> String,
) -> Vec<u8> {
    let date = warc_date(at);
    let content: usize = entries.iter().map(|e| e.body.len() + 512).sum();
    let mut out = Vec::with_capacity(atom.len() + 512 + content);
    let mut append = |fields: &[(&str, &str)], block: &[u8]| {
        out.extend_from_slice(record::head(fields, block.len() as u64).as_bytes());
        out.extend_from_slice(block);
        out.extend_from_slice(record::END);
    };
    let first = id();
    append(
        &[
            ("WARC-Type", "metadata"),
            ("WARC-Record-ID", &first),
            ("WARC-Date", &date),
            ("WARC-Target-URI", changes_url),
            ("Content-Type", ATOM_MEDIA_TYPE),
        ],
        atom,
    );
    for e in entries {
        let fields = e.fields(&id(), at);
        let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
        append(&fields, &e.body);
    }
    out
}

/// Reads a batch: its first record must be the changes page, each other a resource of at
/// most `max_body` bytes whose content has its digest, `MAX_CONTENT_BYTES` in all.
pub fn parse(bytes: &[u8], max_body: usize) -> Result<Batch, BatchError> {
    let (first, mut at) = record::next(bytes)?;
    if first.field("WARC-Type") != Some("metadata")
        || !first
            .field("Content-Type")
            .is_some_and(|t| t.starts_with(ATOM_MEDIA_TYPE))
    {
        return Err(BatchError::Warc(WarcError::Record(
            "the first record is not the changes page",
        )));
    }
    let feed = changes_feed::parse(&first.block, &FeedLimits::default()).map_err(Box::new)?;
    let mut entries = Vec::new();
    let mut content = 0u64;
    while at < bytes.len() {
        let (r, used) = record::next(&bytes[at..])?;
        at += used;
        if r.block.len() > max_body {
            return Err(BatchError::TooLarge("a page larger than the client takes"));
        }
        content += r.block.len() as u64;
        if content > MAX_CONTENT_BYTES || entries.len() >= feed.entries.len() {
            return Err(BatchError::TooLarge(
                "more content, or more pages, than its changes name",
            ));
        }
        entries.push(Entry::from_record(r)?);
    }
    Ok(Batch { feed, entries })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes_feed::{ChangeEntry, ChangeKind};
    use crate::validator::Sha256Digest;
    use chrono::TimeZone;

    fn feed(n: u64) -> ChangesFeed {
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let url = |s: &str| url::Url::parse(&format!("https://e.org/{s}")).unwrap();
        ChangesFeed {
            id: "urn:x".into(),
            title: "t".into(),
            updated: at,
            self_link: url(".well-known/webcoop/changes"),
            hub: None,
            next: None,
            head_seq: Some(n),
            resync: None,
            content_usage: None,
            entries: (1..=n)
                .map(|i| ChangeEntry::new(i, ChangeKind::Modified, url(&format!("{i}.html")), at))
                .collect(),
        }
    }

    fn entry(i: u64) -> Entry {
        let body = format!("<p>page {i}</p>").into_bytes();
        Entry {
            url: format!("https://e.org/{i}.html"),
            content_type: "text/html".into(),
            sha256: Sha256Digest::of(&body),
            body,
        }
    }

    fn ids() -> impl FnMut() -> String {
        let mut n = 0u8;
        move || {
            n += 1;
            record::record_id([n; 16])
        }
    }

    #[test]
    fn a_batch_reads_back_with_its_changes_and_pages() {
        let atom = changes_feed::write(&feed(2));
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let bytes = write(
            "https://e.org/c?since=0",
            atom.as_bytes(),
            &[entry(1), entry(2)],
            at,
            ids(),
        );
        let b = parse(&bytes, 1 << 20).unwrap();
        assert_eq!(b.feed.entries.len(), 2);
        assert_eq!(b.entries, vec![entry(1), entry(2)]);
        // Only the changes: a batch of a page whose bodies were all left out.
        let bytes = write("https://e.org/c?since=0", atom.as_bytes(), &[], at, ids());
        assert!(parse(&bytes, 1 << 20).unwrap().entries.is_empty());
    }

    #[test]
    fn a_batch_the_agent_served_reads_back() {
        // `changes?since=0&bodies=1` of a running agent after an edit, a deletion and a
        // creation (also a seed of the fuzz target that reads batches).
        let bytes = include_bytes!("../../fuzz/seeds/snapshot/batch-3-changes.warc");
        let b = parse(bytes, 1 << 20).unwrap();
        let urls: Vec<&str> = b.entries.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:18093/a.html",
                "http://127.0.0.1:18093/c.html"
            ]
        );
        assert_eq!(b.entries[0].body, b"<p>one, edited</p>\n");
        assert!(b.feed.entries.iter().any(
            |e| e.url.path() == "/b.html" && e.kind == crate::changes_feed::ChangeKind::Deleted
        ));
    }

    #[test]
    fn a_batch_that_lies_is_refused_by_name() {
        let atom = changes_feed::write(&feed(1));
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let good = write("u", atom.as_bytes(), &[entry(1)], at, ids());
        // More pages than changes.
        let two = write("u", atom.as_bytes(), &[entry(1), entry(1)], at, ids());
        assert!(matches!(parse(&two, 1 << 20), Err(BatchError::TooLarge(_))));
        // A page over the client's size.
        assert!(matches!(parse(&good, 4), Err(BatchError::TooLarge(_))));
        // Content that is not its digest's.
        let mut forged = entry(1);
        forged.body = b"<p>other!</p>".to_vec();
        let bytes = write("u", atom.as_bytes(), &[forged], at, ids());
        assert!(matches!(parse(&bytes, 1 << 20), Err(BatchError::Warc(_))));
        // Torn, or not starting with the changes.
        assert!(parse(&good[..good.len() - 3], 1 << 20).is_err());
        let mut pages_first = write("u", b"", &[entry(1)], at, ids());
        pages_first.drain(..record::next(&pages_first).unwrap().1);
        assert!(parse(&pages_first, 1 << 20).is_err());
        assert!(parse(b"", 1 << 20).is_err());
    }
}
