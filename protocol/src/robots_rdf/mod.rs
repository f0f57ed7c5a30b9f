//! `robots.rdf`: every public resource of a site in one RSS 1.0 (RDF Site Summary) document.
//!
//! Castillo's WIRE crawler introduced the idea (thesis ch. 6): one request tells a crawler what
//! exists and when each resource last changed. This is a valid RSS 1.0 document (the thesis's
//! printed example has namespace and casing errors; we follow the spec): `rdf:RDF` root, a
//! `channel` whose `items`/`rdf:Seq` lists every item, one `item` per URL with its Dublin Core
//! date (`dc:date`, W3C-DTF) and media type (`dc:format`), and webcoop's own elements for the
//! size, strong validator and delta link. mod_syndication (`sy:`) says how often it is rewritten.

mod fields;
mod parse;
mod parts;
mod write;

pub use parse::{RdfLimits, parse};
pub use parts::{ListingPart, MAX_PARTS, MAX_VERSION, valid_version, write_part};
pub use write::{
    ITEM_FRAGMENT_HINT, ItemRef, ValidatorRef, write, write_channel_end, write_head, write_item,
    write_item_ref, write_seq_entry, write_seq_entry_str, write_tail,
};

use crate::validator::EntityTag;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use url::Url;

/// A whole robots.rdf document.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotsRdf {
    /// What the document is about.
    pub channel: Channel,
    /// One entry per public URL, in document order.
    pub items: Vec<RdfItem>,
}

/// The RSS 1.0 channel: the site and how the listing is maintained.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    /// `rdf:about`: the URL of the robots.rdf itself.
    pub about: Url,
    /// `title`: a name for the site.
    pub title: String,
    /// `link`: the site's home URL.
    pub link: Url,
    /// `description`.
    pub description: String,
    /// `dc:date`: when this listing was generated.
    pub date: Option<DateTime<Utc>>,
    /// `sy:updatePeriod` (mod_syndication; `daily` when absent).
    pub update_period: UpdatePeriod,
    /// `sy:updateFrequency`: regenerations per period (1 when absent).
    pub update_frequency: u32,
    /// `sy:updateBase`: the reference time of the update schedule.
    pub update_base: Option<DateTime<Utc>>,
    /// `wc:changes`: the changes feed, for "everything changed since".
    pub changes: Option<Url>,
    /// `wc:hub`: the WebSub hub that pushes the changes feed.
    pub hub: Option<Url>,
    /// `wc:snapshot`: the newest snapshot of the whole site (`.warc.zst`, see
    /// [`crate::snapshot`]), for a crawler's first visit.
    pub snapshot: Option<Url>,
    /// `wc:snapshotMaxRecord`: the largest content in that snapshot, in bytes; files larger
    /// than [`crate::snapshot::MAX_RECORD`] are left out of it and fetched alone.
    pub snapshot_max_record: Option<u64>,
    /// `wc:complete`: the site states that its items are every URL at which it serves a page of
    /// its own (another URL serves a listed page's content or nothing): a crawler may take a
    /// link to an unlisted URL of the site as a claim that nothing is there, and check it.
    pub complete: bool,
    /// `wc:seq`: sequence number of the last change this listing reflects; a client that resyncs
    /// from this document continues the changes feed after it.
    pub seq: Option<u64>,
    /// `wc:contentUsage`: what the site's content may be used for, in the aipref vocabulary
    /// (`search=y, train-ai=n`), as the webmaster states it ([`crate::usage`]).
    pub content_usage: Option<String>,
    /// `wc:part`: the parts of a listing too large for one document ([`ListingPart`]); when
    /// there are any, the items are theirs and this document lists none.
    pub parts: Vec<ListingPart>,
}

impl Channel {
    /// A channel about the robots.rdf at `about` for the site at `link`, every optional element
    /// at its default (daily, once; nothing offered).
    pub fn new(about: Url, link: Url) -> Channel {
        Channel {
            about,
            title: String::new(),
            link,
            description: String::new(),
            date: None,
            update_period: UpdatePeriod::Daily,
            update_frequency: 1,
            update_base: None,
            changes: None,
            hub: None,
            snapshot: None,
            snapshot_max_record: None,
            complete: false,
            seq: None,
            content_usage: None,
            parts: Vec::new(),
        }
    }
}

/// mod_syndication's `sy:updatePeriod`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdatePeriod {
    /// Every hour.
    Hourly,
    /// Every day (the default).
    Daily,
    /// Every week.
    Weekly,
    /// Every month.
    Monthly,
    /// Every year.
    Yearly,
}

impl UpdatePeriod {
    /// The keyword mod_syndication uses.
    pub fn as_str(self) -> &'static str {
        match self {
            UpdatePeriod::Hourly => "hourly",
            UpdatePeriod::Daily => "daily",
            UpdatePeriod::Weekly => "weekly",
            UpdatePeriod::Monthly => "monthly",
            UpdatePeriod::Yearly => "yearly",
        }
    }

    /// Length of the period in seconds (months and years by their mean length).
    pub fn seconds(self) -> u64 {
        match self {
            UpdatePeriod::Hourly => 3_600,
            UpdatePeriod::Daily => 86_400,
            UpdatePeriod::Weekly => 604_800,
            UpdatePeriod::Monthly => 2_629_746,
            UpdatePeriod::Yearly => 31_556_952,
        }
    }
}

impl FromStr for UpdatePeriod {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim() {
            "hourly" => UpdatePeriod::Hourly,
            "daily" => UpdatePeriod::Daily,
            "weekly" => UpdatePeriod::Weekly,
            "monthly" => UpdatePeriod::Monthly,
            "yearly" => UpdatePeriod::Yearly,
            _ => {
                return Err("mod_syndication allows hourly, daily, weekly, monthly, yearly".into());
            }
        })
    }
}

/// One public resource.
#[derive(Debug, Clone, PartialEq)]
pub struct RdfItem {
    /// `rdf:about` and `link`: the resource's URL.
    pub url: Url,
    /// `title`: a human name (the agent uses the path).
    pub title: String,
    /// `dc:date`: last modification of the content (not of the file's timestamp).
    pub modified: DateTime<Utc>,
    /// `wc:size`: bytes of the resource as served without content coding.
    pub size: Option<u64>,
    /// `dc:format`: the media type.
    pub content_type: Option<String>,
    /// `wc:etag`: the strong validator of the current version.
    pub etag: Option<EntityTag>,
    /// `wc:delta`: where to ask for the difference against an older version.
    pub delta: Option<Url>,
    /// Further `wc:` elements, such as `wc:popularity`.
    pub extensions: Extensions,
}

/// Extra `wc:` elements of an item, by local name. Names are XML names and not one of the
/// elements the format already defines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extensions(BTreeMap<String, String>);

/// Local names of `wc:` elements with a defined meaning, which extensions may not reuse.
pub const RESERVED_NAMES: &[&str] = &["size", "etag", "delta", "changes", "hub", "seq"];

/// An extension name that cannot be written as a `wc:` element.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} cannot be a wc: extension element (an XML name, not one of size, etag, delta, changes, hub, seq)"
)]
pub struct InvalidExtensionName(pub String);

fn is_ncname(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl Extensions {
    /// Adds or replaces an extension value.
    pub fn insert(
        &mut self,
        name: &str,
        value: impl Into<String>,
    ) -> Result<(), InvalidExtensionName> {
        if !is_ncname(name) || RESERVED_NAMES.contains(&name) {
            return Err(InvalidExtensionName(name.to_string()));
        }
        self.0.insert(name.to_string(), value.into());
        Ok(())
    }

    /// The value of an extension.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// All extensions, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for UpdatePeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
