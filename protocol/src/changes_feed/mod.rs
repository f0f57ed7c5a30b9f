//! The changes feed: an Atom 1.0 (RFC 4287) document with one entry per change.
//!
//! Every change gets a sequence number, strictly increasing over the site's history, so a
//! client asks for "everything after N" (`?since=N`) and never misses or repeats a change.
//! Deletions are entries too (tombstones, category `deleted`), so generic feed readers see them.
//! Entries carry the new and previous validators, size, media type, the fraction of the text
//! that changed and, when small, the delta itself. The same document is what the WebSub hub
//! pushes to subscribers.

mod compact;
mod parse;
mod write;

pub use compact::{MEDIA_TYPE as CBOR_MEDIA_TYPE, parse_cbor, write_cbor};
pub use parse::{FeedLimits, parse};
pub use write::{write, write_entry};

use crate::delta::DeltaEncoding;
use crate::validator::EntityTag;
use chrono::{DateTime, Utc};
use std::fmt;
use std::str::FromStr;
use url::Url;

/// A page of the changes feed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangesFeed {
    /// `atom:id`: the feed's permanent identity (the agent uses the changes URL without query).
    pub id: String,
    /// `atom:title`.
    pub title: String,
    /// `atom:updated`: time of the newest change the server knows of.
    pub updated: DateTime<Utc>,
    /// `link rel="self"`: the topic URL (what WebSub subscribers subscribe to).
    pub self_link: Url,
    /// `link rel="hub"`: the WebSub hub.
    pub hub: Option<Url>,
    /// `link rel="next"` (RFC 5005 paging): the page with the changes after this one.
    pub next: Option<Url>,
    /// `wc:headSeq`: the newest sequence number at the server when this page was written.
    pub head_seq: Option<u64>,
    /// `wc:resync`: changes after a point could not be delivered; the client must catch up.
    pub resync: Option<Resync>,
    /// `wc:contentUsage`: what the site's content may be used for (aipref vocabulary).
    pub content_usage: Option<String>,
    /// The changes, in document order (the agent writes them oldest first).
    pub entries: Vec<ChangeEntry>,
}

/// A marker saying the client missed changes: fetch `changes?since=since`, or if that answers
/// 410, reload the full listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resync {
    /// Last sequence number the client is known to have.
    pub since: u64,
    /// Where the full listing (robots.rdf) is.
    pub listing: Url,
    /// The newest snapshot of the whole site, when one is published: a client that fell
    /// behind fetches it in one request, then follows the changes after its sequence number.
    pub snapshot: Option<Url>,
}

/// What happened to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChangeKind {
    /// It appeared.
    Created,
    /// Its content changed.
    Modified,
    /// It is gone (a tombstone).
    Deleted,
}

impl ChangeKind {
    /// The category term.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Modified => "modified",
            ChangeKind::Deleted => "deleted",
        }
    }
}

impl FromStr for ChangeKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "created" => Ok(ChangeKind::Created),
            "modified" => Ok(ChangeKind::Modified),
            "deleted" => Ok(ChangeKind::Deleted),
            _ => Err("expected created, modified or deleted".into()),
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeEntry {
    /// `wc:seq`: position in the site's history of changes.
    pub seq: u64,
    /// `category` term in the webcoop change scheme.
    pub kind: ChangeKind,
    /// `link rel="alternate"`: the resource.
    pub url: Url,
    /// `atom:updated`: when the change was seen.
    pub time: DateTime<Utc>,
    /// `wc:etag`: validator of the new version (none for a deletion).
    pub etag: Option<EntityTag>,
    /// `wc:previousEtag`: validator of the version replaced (none for a creation).
    pub previous_etag: Option<EntityTag>,
    /// `wc:size`: bytes of the new version.
    pub size: Option<u64>,
    /// `wc:type`: media type of the new version.
    pub content_type: Option<String>,
    /// `wc:changed`: fraction of the text that changed, 0 to 1.
    pub changed_fraction: Option<f64>,
    /// `wc:delta`: the change itself, when small enough to inline.
    pub delta: Option<InlineDelta>,
    /// `wc:popularity`: the page's share of the site's reads, as its webmaster publishes it
    /// (0 to 1; Atom only: the CBOR form does not carry it).
    pub popularity: Option<f64>,
}

impl ChangeEntry {
    /// A change with only the required fields set.
    pub fn new(seq: u64, kind: ChangeKind, url: Url, time: DateTime<Utc>) -> Self {
        ChangeEntry {
            seq,
            kind,
            url,
            time,
            etag: None,
            previous_etag: None,
            size: None,
            content_type: None,
            changed_fraction: None,
            delta: None,
            popularity: None,
        }
    }
}

/// A delta carried in the feed (base64 in `wc:delta`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineDelta {
    /// How it is encoded.
    pub encoding: DeltaEncoding,
    /// The version it applies to.
    pub base: EntityTag,
    /// The delta bytes.
    pub data: Vec<u8>,
}
