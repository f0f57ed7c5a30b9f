//! Sitemaps (sitemaps.org protocol 0.9): `urlset` and `sitemapindex`, written in parts that
//! respect the protocol's limits and read back within the same limits.
//!
//! One file holds at most 50,000 URLs and 50 MB (52,428,800 bytes) uncompressed. The writer
//! splits past either limit into gzip parts listed by an index; the parser refuses anything
//! larger after decompression, so a gzip bomb is an error rather than an exhausted machine;
//! [`SitemapWalk`] follows index files to a bounded depth without doing any I/O itself.

mod parse;
mod walk;
mod write;

pub use parse::{EntryProblem, Leniency, ParsedSitemap, SitemapLimits, parse};
pub use walk::{PendingSitemap, SitemapWalk, WalkLimits, WalkProblem};
pub use write::{
    GENERATOR_COMMENT, INDEX_HEAD, INDEX_TAIL, SitemapFile, SitemapLayout, SitemapSet,
    SitemapWriteError, URLSET_HEAD, URLSET_TAIL, assemble, build, write_index, write_index_entry,
    write_url, write_url_entry, write_urlset,
};

use chrono::{DateTime, Utc};
use std::fmt;
use std::str::FromStr;
use url::Url;

/// The protocol's limit on URLs per file (and sitemaps per index).
pub const MAX_URLS: usize = 50_000;
/// The protocol's limit on a file's uncompressed size: 50 MB.
pub const MAX_BYTES: u64 = 52_428_800;
/// The protocol's limit on a `<loc>`: fewer than 2,048 characters.
pub const MAX_LOC_CHARS: usize = 2_047;

/// One `<url>` of a `urlset`.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlEntry {
    /// `<loc>`.
    pub loc: Url,
    /// `<lastmod>`: last modification of the content.
    pub lastmod: Option<DateTime<Utc>>,
    /// `<changefreq>`: a hint, which crawlers may ignore.
    pub changefreq: Option<ChangeFreq>,
    /// `<priority>`: 0.0 to 1.0 relative to the site's other URLs.
    pub priority: Option<f32>,
}

impl UrlEntry {
    /// An entry with only a location and modification time.
    pub fn new(loc: Url, lastmod: Option<DateTime<Utc>>) -> Self {
        UrlEntry {
            loc,
            lastmod,
            changefreq: None,
            priority: None,
        }
    }
}

/// One `<sitemap>` of a `sitemapindex`.
#[derive(Debug, Clone, PartialEq)]
pub struct SitemapRef {
    /// `<loc>` of the listed sitemap.
    pub loc: Url,
    /// `<lastmod>`: when that sitemap last changed.
    pub lastmod: Option<DateTime<Utc>>,
}

/// A parsed sitemap file: either kind the protocol defines.
#[derive(Debug, Clone, PartialEq)]
pub enum SitemapDocument {
    /// A `urlset`.
    UrlSet(Vec<UrlEntry>),
    /// A `sitemapindex`.
    Index(Vec<SitemapRef>),
}

/// `<changefreq>` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeFreq {
    /// Changes at every access.
    Always,
    /// Hourly.
    Hourly,
    /// Daily.
    Daily,
    /// Weekly.
    Weekly,
    /// Monthly.
    Monthly,
    /// Yearly.
    Yearly,
    /// Archived.
    Never,
}

impl ChangeFreq {
    /// The protocol's keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeFreq::Always => "always",
            ChangeFreq::Hourly => "hourly",
            ChangeFreq::Daily => "daily",
            ChangeFreq::Weekly => "weekly",
            ChangeFreq::Monthly => "monthly",
            ChangeFreq::Yearly => "yearly",
            ChangeFreq::Never => "never",
        }
    }
}

impl FromStr for ChangeFreq {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim() {
            "always" => ChangeFreq::Always,
            "hourly" => ChangeFreq::Hourly,
            "daily" => ChangeFreq::Daily,
            "weekly" => ChangeFreq::Weekly,
            "monthly" => ChangeFreq::Monthly,
            "yearly" => ChangeFreq::Yearly,
            "never" => ChangeFreq::Never,
            _ => {
                return Err(
                    "expected always, hourly, daily, weekly, monthly, yearly or never".into(),
                );
            }
        })
    }
}

impl fmt::Display for ChangeFreq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
