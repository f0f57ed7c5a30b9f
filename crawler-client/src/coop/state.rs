//! The crawl's cooperation state, and what it reaches: every site's offers and standing, the
//! claims waiting to be checked, the deltas planned, the sitemap walks under way. Its methods
//! take the frontier and the refresh schedule as explicit arguments ([`Reach`]) and leave what
//! only the loop can do (queue a link, record a deleted page, start a request) in
//! [`Effects`], so every decision here runs without a network or a database.

use super::callback::{CallbackServer, Expected};
use super::requests::DeltaPlan;
use super::site::{CoopConfig, SiteCoop};
use crate::analyze::Link;
use crate::analyze::scope::LinkPolicy;
use crate::frontier::Frontier;
use crate::ids::{Fp, HostId};
use crate::refresh::schedule::Schedule;
use crate::state::{KnownPage, PageRecord};
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use url::Url;
use webcoop_protocol::sitemap::{SitemapWalk, UrlEntry};

/// What a site claimed about a page, to be checked at its next visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The page changed.
    Changed,
    /// Nothing changed.
    Unchanged,
    /// The page's content is this (a page handed over in a snapshot or a batch): checked by
    /// a whole fetch, never a conditional one, whose content must have this SHA-256.
    Matches(webcoop_protocol::validator::Sha256Digest),
    /// Nothing is there (a link a complete listing does not name, see `super::absences`):
    /// checked by a fetch that must find no page of the site's own.
    Absent,
}

/// A sitemap walk under way: the walk, the entries found so far (acted on once it is over and
/// its dates judged), and how many of its files could not be fetched or read.
pub(crate) struct Walk {
    pub(crate) walk: SitemapWalk,
    pub(crate) listed: Vec<UrlEntry>,
    pub(crate) failures: usize,
}

/// A page a site handed over: its URL, and the digest of the content it was taken with.
pub(crate) type Handed = (String, Option<webcoop_protocol::validator::Sha256Digest>);

/// The crawl's cooperation state.
pub(crate) struct CoopState {
    pub(crate) config: CoopConfig,
    pub(crate) sites: HashMap<HostId, SiteCoop>,
    pub(crate) dirty: HashSet<HostId>,
    pub(crate) claims: HashMap<Fp, (HostId, Claim)>,
    pub(crate) plans: HashMap<Fp, DeltaPlan>,
    pub(crate) walks: HashMap<HostId, Walk>,
    pub(crate) polling: HashSet<HostId>,
    pub(crate) callback: Option<CallbackServer>,
    pub(crate) next_tick: Option<Instant>,
    pub(crate) rng: u64,
    /// Snapshots being fetched, by host.
    pub(crate) snapshots: HashMap<HostId, super::snapshots::PendingSnapshot>,
    /// Pages a site handed over (a snapshot, a batch) not fetched live since, with the
    /// content they were taken with: if one the site handed over proves false, each is
    /// disowned and fetched again.
    pub(crate) unproven: HashMap<HostId, HashMap<Fp, Handed>>,
    /// The weight each page's stated popularity adds (see `super::popularity`).
    pub(crate) popularity: HashMap<Fp, f64>,
    /// The believed sites that state their pages' popularity.
    pub(crate) popularity_sites: HashSet<HostId>,
    /// Links held unfetched because a site's complete listing does not name them, by site
    /// (see `super::absences`).
    pub(crate) held: HashMap<HostId, HashMap<Fp, super::absences::Held>>,
    /// Pages a site handed over that its live pages contradicted, with when (ms), until its
    /// feed explains them or not (see `super::questions`).
    pub(crate) questioned: HashMap<HostId, HashMap<Fp, i64>>,
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
    pub(crate) batch: Vec<super::batches::BatchPage>,
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

impl CoopState {
    /// The usage preferences `host`'s agent states, if any.
    pub(crate) fn usage_of(&self, host: HostId) -> webcoop_protocol::usage::Prefs {
        self.sites
            .get(&host)
            .and_then(|s| s.usage.as_deref())
            .map(|u| {
                // A statement that cannot be read might be a refusal: it refuses everything.
                webcoop_protocol::usage::Prefs::parse_aipref(u, &mut Vec::new())
                    .unwrap_or(webcoop_protocol::usage::Prefs::REFUSE_ALL)
            })
            .unwrap_or_default()
    }

    /// No site known yet; `seed` drives the sampling of checks.
    pub(crate) fn new(config: CoopConfig, seed: u64) -> CoopState {
        CoopState {
            config,
            sites: HashMap::new(),
            dirty: HashSet::new(),
            claims: HashMap::new(),
            plans: HashMap::new(),
            walks: HashMap::new(),
            polling: HashSet::new(),
            callback: None,
            next_tick: None,
            rng: seed | 1,
            snapshots: HashMap::new(),
            unproven: HashMap::new(),
            popularity: HashMap::new(),
            popularity_sites: HashSet::new(),
            held: HashMap::new(),
            questioned: HashMap::new(),
        }
    }

    /// Takes the sites' saved state (`(host, origin, json)` rows); an unreadable one is
    /// discovered again.
    pub(crate) fn load(&mut self, rows: Vec<(HostId, String, String)>) {
        for (id, origin, json) in rows {
            match serde_json::from_str::<SiteCoop>(&json) {
                Ok(site) => {
                    self.sites.insert(id, site);
                }
                Err(e) => tracing::warn!(
                    "{origin}: cooperation state unreadable ({e}); discovering again"
                ),
            }
        }
    }

    /// The WebSub callback server to subscribe with (push mode). Subscriptions of an earlier
    /// run stay valid: their deliveries are expected.
    pub(crate) fn attach_callback(&mut self, server: CallbackServer) {
        for (id, site) in &self.sites {
            if let Some(sub) = site
                .subscription
                .as_ref()
                .filter(|s| s.verified_at.is_some())
            {
                server.expect(
                    *id,
                    Expected {
                        topic: sub.topic.clone(),
                        secret: sub.secret.clone(),
                        pending: None,
                        asked: None,
                        active: true,
                    },
                );
            }
        }
        self.callback = Some(server);
    }

    /// The site's state, marked to be saved.
    pub(crate) fn site(&mut self, host: HostId) -> &mut SiteCoop {
        self.dirty.insert(host);
        self.sites.entry(host).or_default()
    }

    /// Every site's figures added up.
    pub(crate) fn totals(&self) -> super::site::CoopStats {
        let mut t = super::site::CoopStats::default();
        for s in self.sites.values() {
            let s = &s.stats;
            t.meta_requests += s.meta_requests;
            t.meta_bytes += s.meta_bytes;
            t.not_modified += s.not_modified;
            t.announced += s.announced;
            t.deltas += s.deltas;
            t.delta_fallbacks += s.delta_fallbacks;
            t.pushes += s.pushes;
            t.bad_signatures += s.bad_signatures;
            t.checks += s.checks;
            t.foreign += s.foreign;
        }
        t
    }

    /// A site's state, if it has any.
    pub(crate) fn site_state(&self, host: HostId) -> Option<&SiteCoop> {
        self.sites.get(&host)
    }

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        // xorshift: sampling of checks needs no quality beyond uniformity.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// Whether `url` is a page of the host itself: the only pages its documents may make claims
    /// about. Anything else is counted and ignored.
    pub(crate) fn own_page(&mut self, r: &mut Reach<'_>, host: HostId, url: &Url) -> bool {
        if crate::analyze::url_norm::origin_key(url) == r.origin(host) {
            return true;
        }
        self.site(host).stats.foreign += 1;
        tracing::debug!(
            "{}: names {url}, not one of its pages; ignored",
            r.origin(host)
        );
        false
    }

    /// Whether an endpoint (changes, delta, hub, listing) a host's documents name is one the
    /// host speaks for: on its own origin, or on one its robots.txt delegates to.
    pub(crate) fn speaks_for(&mut self, r: &mut Reach<'_>, host: HostId, url: &Url) -> bool {
        let origin = crate::analyze::url_norm::origin_key(url);
        if origin == r.origin(host)
            || self
                .sites
                .get(&host)
                .is_some_and(|s| s.delegates.contains(&origin))
        {
            return true;
        }
        self.site(host).stats.foreign += 1;
        tracing::info!(
            "{}: names {url} on another origin it does not delegate to in robots.txt; ignored",
            r.origin(host)
        );
        false
    }

    /// Whether a host's announcements stand in for polling its pages.
    pub(crate) fn covers(&self, host: HostId) -> bool {
        self.sites
            .get(&host)
            .is_some_and(|s| s.covers(&self.config))
    }

    /// The hosts whose announcements stand in for polling their pages.
    pub(crate) fn covered_hosts(&self) -> Vec<HostId> {
        self.sites
            .iter()
            .filter(|(_, s)| s.covers(&self.config))
            .map(|(id, _)| *id)
            .collect()
    }

    /// The sites' cooperation to save with the next batch.
    pub(crate) fn take_unsaved(&mut self) -> Vec<(HostId, String)> {
        let dirty: Vec<HostId> = self.dirty.drain().collect();
        dirty
            .into_iter()
            .filter_map(|id| {
                let site = self.sites.get(&id)?;
                serde_json::to_string(site).ok().map(|j| (id, j))
            })
            .collect()
    }
}
