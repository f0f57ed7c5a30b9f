//! What the frontier hands out: a host's robots.txt, a page, or a request made on
//! cooperation's behalf (queued by cooperation, served before the host's pages and under the
//! same politeness).

use crate::ids::HostId;
use crate::state::Queued;
use url::Url;

/// What to do next.
#[derive(Debug, Clone)]
pub(crate) enum Dispatch {
    /// Look up the host's address first (politeness keyed by address).
    Resolve(HostId),
    /// Fetch the host's robots.txt first.
    Robots(HostId),
    /// Fetch a page.
    Page(Queued),
    /// Make a cooperation request to the host.
    Coop(HostId, CoopJob),
}

impl Dispatch {
    /// The host it goes to.
    pub(crate) fn host(&self) -> HostId {
        match self {
            Dispatch::Resolve(h) | Dispatch::Robots(h) | Dispatch::Coop(h, _) => *h,
            Dispatch::Page(q) => q.host,
        }
    }
}

/// A request the crawl makes to a host on cooperation's behalf, under the host's politeness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CoopJob {
    /// GET a metadata document, conditionally when validators are held.
    Fetch {
        /// What it is.
        kind: MetaKind,
        /// Where.
        url: Url,
        /// `If-None-Match`.
        etag: Option<String>,
        /// `If-Modified-Since`.
        last_modified: Option<String>,
    },
    /// POST a subscription (or unsubscription) request to a hub.
    Hub {
        /// The hub.
        hub: Url,
        /// The form body.
        form: String,
        /// Whether this is an unsubscription.
        unsubscribe: bool,
    },
}

/// Kinds of metadata document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MetaKind {
    /// robots.rdf.
    Listing,
    /// A part of a robots.rdf in parts (its index named it).
    ListingPart,
    /// A sitemap or sitemap index (part of a walk).
    Sitemap,
    /// A page of the changes feed.
    Changes,
    /// A snapshot of the whole site (one file, its pages read from it).
    Snapshot,
    /// A feed (RSS, Atom, JSON Feed) a page named.
    Feed,
    /// An IndexNow key file, to prove a submission's key.
    IndexNowKey,
}

impl MetaKind {
    /// The name used in the crawl log.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MetaKind::Listing => "robots.rdf",
            MetaKind::ListingPart => "robots.rdf part",
            MetaKind::Sitemap => "sitemap",
            MetaKind::Changes => "changes",
            MetaKind::Snapshot => "snapshot",
            MetaKind::Feed => "feed",
            MetaKind::IndexNowKey => "indexnow key",
        }
    }
}
