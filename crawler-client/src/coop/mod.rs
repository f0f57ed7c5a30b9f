//! Cooperation: what a site offers beyond its pages (sitemaps, robots.rdf, the changes feed,
//! deltas, a WebSub hub), found per host, trusted only as far as it proves right, and used to
//! stop polling wherever it can.
//!
//! The pure parts: discovery of the offers (`discovery`), a site's state (`site`), trust and
//! date judging (`trust`), the metadata poll interval (`poll_rate`). The decisions, on
//! [`CoopState`]: what a site lists (`listings`), when it is polled and what an answer does
//! (`polls`), the changes it announces (`announcements`), its claims weighed at visits
//! (`claims`), WebSub subscriptions and deliveries (`push`), and the figures at the end
//! (`report`). They take the frontier and the schedule as arguments ([`Reach`]) and leave the
//! rest to the loop ([`Effects`]). The requests run on the async runtime (`requests`); the
//! WebSub callback server is `callback`.

pub(crate) mod callback;
pub(crate) mod discovery;
pub(crate) mod poll_rate;
pub(crate) mod requests;
pub(crate) mod site;
pub(crate) mod trust;

mod absences;
mod announcements;
pub(crate) mod batches;
mod claims;
mod feed_reading;
mod feeds;
mod handed;
mod indexnow;
mod indexnow_reading;
pub(crate) mod indexnow_server;
mod ledger;
mod listing_parts;
mod listings;
mod pending;
mod polls;
mod popularity;
mod probes;
mod push;
mod questions;
mod report;
pub(crate) mod response_headers;
mod sampler;
pub(crate) mod shared;
mod sites;
pub(crate) mod snapshot_fetch;
mod snapshots;
pub(crate) mod state;
pub(crate) mod stated;

#[cfg(test)]
mod tests;

pub(crate) use crate::frontier::{CoopJob, MetaKind};
pub(crate) use polls::tick_period;
pub(crate) use shared::{Effects, KnownPages, Reach};
pub(crate) use state::CoopState;

use url::Url;

/// Why a metadata request (robots.rdf, a sitemap, the changes feed) gave nothing usable.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MetaError {
    /// No response.
    #[error(transparent)]
    Fetch(#[from] crate::fetch::FetchError),
    /// A status that carries no document.
    #[error("{url} answered {status}")]
    Status {
        /// The document asked for.
        url: Url,
        /// Its status.
        status: u16,
    },
    /// robots.rdf does not parse.
    #[error("{url}: {source}")]
    Listing {
        /// The listing.
        url: Url,
        /// Why.
        source: Box<webcoop_protocol::ParseError>,
    },
    /// The changes feed (polled or pushed) does not parse.
    #[error("changes feed: {0}")]
    Feed(Box<webcoop_protocol::ParseError>),
    /// A batch of changes does not read.
    #[error("{0}")]
    Batch(Box<webcoop_protocol::batch::BatchError>),
    /// A feed (RSS, Atom, JSON Feed) does not read.
    #[error("{0}")]
    WebFeed(webcoop_protocol::web_feed::FeedError),
}

/// The most cooperation the crawler may use (`--coop`), so that modes can be compared.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum CoopMode {
    /// None: every host is crawled and refreshed by the crawler's own scheduler.
    Off,
    /// Sitemaps and robots.rdf seed the frontier and state each page's popularity; pages are
    /// refreshed by the crawler's own scheduler (no changes feed, snapshot, batch or push):
    /// a polling crawler that reads what the site lists.
    Listing,
    /// Sitemaps, robots.rdf and the changes feed seed the frontier and announce changes.
    Meta,
    /// As `meta`, and changed pages are fetched as deltas against the copy held.
    Delta,
    /// As `delta`, and changes are pushed by the site's WebSub hub (the default: the best
    /// the site offers).
    #[default]
    Push,
}

/// How much a site cooperates, as far as the crawler uses it; recorded per host and shown by
/// `webcoop-crawl status`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Nothing found (or cooperation is off): polled.
    #[default]
    None,
    /// Feeds (RSS, Atom, JSON Feed): the pages they list are left to them, the rest polled.
    Feed,
    /// IndexNow submissions under a key its file proved: the site tells of its changes.
    #[serde(rename = "indexnow")]
    IndexNow,
    /// Sitemaps only.
    Sitemap,
    /// A robots.rdf listing.
    Listing,
    /// A changes feed with `?since=`.
    Changes,
    /// Changes, and deltas of changed pages.
    Delta,
    /// Changes pushed by a hub we are subscribed to.
    Push,
}

impl Level {
    /// The name shown in `status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Feed => "feed",
            Level::IndexNow => "indexnow",
            Level::Sitemap => "sitemap",
            Level::Listing => "listing",
            Level::Changes => "changes",
            Level::Delta => "delta",
            Level::Push => "push",
        }
    }
}
