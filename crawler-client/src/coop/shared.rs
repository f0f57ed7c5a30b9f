//! The types cooperation's coordinator ([`super::CoopState`]), its owners and its I/O modules
//! share: what a decision reaches ([`Reach`]) and leaves to the loop ([`Effects`]), the pages
//! it hands the loop (inline deltas, batch pages), how a changed page is fetched as a delta
//! ([`DeltaPlan`]), and what a site says of a URL ([`Said`]). A leaf: it imports no module of
//! `coop` that holds state or makes requests.

use crate::analyze::Link;
use crate::analyze::scope::LinkPolicy;
use crate::frontier::Frontier;
use crate::ids::{Fp, HostId};
use crate::refresh::schedule::Schedule;
use crate::state::{KnownPage, PageRecord};
use url::Url;
use webcoop_protocol::sitemap::{SitemapWalk, UrlEntry};
use webcoop_protocol::snapshot::Entry;

/// A sitemap walk under way: the walk, the entries found so far (acted on once it is over and
/// its dates judged), and how many of its files could not be fetched or read.
pub(crate) struct Walk {
    pub(crate) walk: SitemapWalk,
    pub(crate) listed: Vec<UrlEntry>,
    pub(crate) failures: usize,
}

/// The pages held, as cooperation needs them: to tell a listed URL already visited from one
/// only queued, and to build a delta on the copy held.
pub(crate) trait KnownPages {
    /// What was held of the page, if it was visited; a failed lookup is logged and counts as
    /// not visited (the claim is then weighed at the page's next visit instead).
    fn known(&self, fp: Fp) -> Option<KnownPage>;
}

/// What a cooperation decision reaches: the frontier (to queue polls and revisits), the
/// refresh schedule (to announce and cover pages), the pages held, the crawl's link policy,
/// and the effects left to the loop.
pub(crate) struct Reach<'a> {
    /// The frontier.
    pub(crate) frontier: &'a mut Frontier,
    /// The refresh schedule, when the crawl keeps pages fresh.
    pub(crate) schedule: Option<&'a mut Schedule>,
    /// The pages held.
    pub(crate) pages: &'a dyn KnownPages,
    /// Which URLs the crawl keeps.
    pub(crate) policy: &'a LinkPolicy,
    /// What the loop must do after the call.
    pub(crate) out: &'a mut Effects,
}

impl Reach<'_> {
    /// The origin of a host (empty when unknown).
    pub(crate) fn origin(&self, host: HostId) -> String {
        self.frontier
            .host(host)
            .map(|h| h.origin.clone())
            .unwrap_or_default()
    }
}

/// A page to rebuild from a delta the site pushed inline with its announcement.
#[derive(Debug)]
pub(crate) struct InlineDelta {
    /// The site.
    pub(crate) host: HostId,
    /// The page.
    pub(crate) link: Link,
    /// Its depth in the crawl.
    pub(crate) depth: u32,
    /// The copy held.
    pub(crate) known: KnownPage,
    /// The delta.
    pub(crate) plan: DeltaPlan,
}

/// What cooperation leaves to the loop: it owns the queue of new URLs, the batch, the log,
/// the runtime and the run's figures.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// URLs a site listed that the crawl has not seen: to queue (depth 1).
    pub(crate) links: Vec<Link>,
    /// Pages the site announced deleted: to record, with their log line.
    pub(crate) gone: Vec<PageRecord>,
    /// Pages to rebuild from inline deltas.
    pub(crate) inline: Vec<InlineDelta>,
    /// Pages read from batches, to record.
    pub(crate) batch: Vec<BatchPage>,
    /// Pages handed over by a site whose bulk claims proved false: no longer the crawl's
    /// copies (to record so) until fetched again.
    pub(crate) disowned: Vec<PageRecord>,
    /// Pages whose place in their host's order a stated popularity raised, by how much.
    pub(crate) boosts: Vec<(HostId, Fp, f64)>,
    /// Deliveries that arrived.
    pub(crate) pushes: u64,
    /// Bytes that arrived outside requests (pushed documents).
    pub(crate) bytes: u64,
}

/// A page read from a batch, for the loop to examine and record without a request.
#[derive(Debug)]
pub(crate) struct BatchPage {
    /// The site.
    pub(crate) host: HostId,
    /// The page.
    pub(crate) link: Link,
    /// Its depth in the crawl.
    pub(crate) depth: u32,
    /// The copy held, if it was visited.
    pub(crate) known: Option<KnownPage>,
    /// Its content as the batch carries it.
    pub(crate) entry: Entry,
    /// The batch it came from, and its record in the crawl's archive.
    pub(crate) from: (Url, Option<String>),
}

/// How a changed page is to be fetched as a delta.
#[derive(Debug, Clone)]
pub(crate) struct DeltaPlan {
    /// The delta endpoint of the page.
    pub(crate) url: Url,
    /// The validator the site announced for the new version, if it did.
    pub(crate) announced: Option<String>,
    /// An inline delta that came with the announcement: (base validator, dcz bytes).
    pub(crate) inline: Option<(String, Vec<u8>)>,
}

/// What a site says of one of its URLs: when it last changed, its new validator, where its
/// delta is, and the delta itself when it came inline.
#[derive(Debug)]
pub(crate) struct Said<'a> {
    pub(crate) url: &'a Url,
    pub(crate) modified: Option<i64>,
    pub(crate) etag: Option<String>,
    pub(crate) delta: Option<Url>,
    pub(crate) inline: Option<(String, Vec<u8>)>,
    /// The page's share of the site's reads, as the site states it.
    pub(crate) popularity: Option<f64>,
}

/// Which reading of the site's documents a URL comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// The first listing: it seeds the frontier; nothing is checked.
    First,
    /// A later listing or an announcement: claims are acted on and sampled for checks.
    Update,
}
