//! Cooperation in the crawl loop: discovery after robots.txt, metadata polls at the rate the
//! outdated-probability target asks, changes applied as announcements to the refresh schedule,
//! deltas planned for changed pages, the WebSub subscription and its deliveries, trust, and
//! the fall back to polling when a site stops answering or stops being believed.

use super::{Engine, now_ms};
use crate::analyze::Link;
use crate::coop::callback::{CallbackEvent, CallbackServer, Expected};
use crate::coop::discovery::{delta_url, is_changes_endpoint, link_header, robots_txt_pointers};
use crate::coop::poll_rate::pace_from_dates;
use crate::coop::requests::{self, CoopFetched, DeltaPlan, DeltaUse};
use crate::coop::site::{SiteCoop, Subscription};
use crate::coop::trust::{lastmods_stamped, shared_moment};
use crate::coop::{CoopJob, CoopMode, Level, MetaKind};
use crate::fetch::FetchError;
use crate::fetch::tasks::Outcome;
use crate::refresh::schedule::Announcement;
use crate::state::{PageRecord, Queued};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::changes_feed::{self, ChangeKind, ChangesFeed, FeedLimits};
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_protocol::sitemap::UrlEntry;
use webcoop_protocol::sitemap::{SitemapWalk, WalkLimits};
use webcoop_protocol::websub::{Mode, SubscriptionRequest};

/// Sitemap files of one walk that may fail before the rest of the walk is dropped.
const MAX_BAD_SITEMAPS: usize = 10;

/// How long shutdown waits for hubs to verify unsubscriptions.
const UNSUBSCRIBE_WAIT: Duration = Duration::from_secs(3);

/// An unverified subscription request is sent again after this long (ms).
const RESUBSCRIBE_MS: i64 = 600_000;

/// What a site claimed about a page, to be checked at its next visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    Changed,
    Unchanged,
}

/// The crawl's cooperation state.
#[derive(Default)]
pub(super) struct CoopState {
    sites: HashMap<i64, SiteCoop>,
    dirty: HashSet<i64>,
    claims: HashMap<u64, (i64, Claim)>,
    plans: HashMap<u64, DeltaPlan>,
    /// Sitemap walks under way, with the entries found so far (acted on once the walk is
    /// over and its dates have been judged) and the files that could not be fetched or read.
    walks: HashMap<i64, (SitemapWalk, Vec<UrlEntry>, usize)>,
    polling: HashSet<i64>,
    callback: Option<CallbackServer>,
    next_tick: Option<Instant>,
    rng: u64,
}

impl CoopState {
    fn chance(&mut self, p: f64) -> bool {
        // xorshift: sampling of checks needs no quality beyond uniformity.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

impl Engine {
    /// Loads the sites' cooperation state and starts the callback server (push mode).
    pub(super) fn coop_start(&mut self) -> Result<(), super::CrawlError> {
        self.coop.rng = (now_ms() as u64) | 1;
        for (id, origin, json) in self.frontier.store.coop_sites()? {
            match serde_json::from_str::<SiteCoop>(&json) {
                Ok(site) => {
                    self.coop.sites.insert(id, site);
                }
                Err(e) => tracing::warn!(
                    "{origin}: cooperation state unreadable ({e}); discovering again"
                ),
            }
        }
        if self.s.coop.mode == CoopMode::Push
            && let Some((listen, public)) = self.s.callback.clone()
        {
            let tx = self.tx.clone();
            let server = self
                .rt
                .block_on(CallbackServer::start(listen, public, tx))
                .map_err(|e| {
                    super::CrawlError::Start(format!("WebSub callback on {listen}: {e}"))
                })?;
            tracing::info!(
                "WebSub callbacks at {} (listening on {})",
                server.base,
                server.local
            );
            // Subscriptions of an earlier run stay valid: their deliveries are expected.
            for (id, site) in &self.coop.sites {
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
            self.coop.callback = Some(server);
        }
        Ok(())
    }

    fn site(&mut self, host: i64) -> &mut SiteCoop {
        self.coop.dirty.insert(host);
        self.coop.sites.entry(host).or_default()
    }

    fn origin(&self, host: i64) -> String {
        self.frontier
            .host(host)
            .map(|h| h.origin.clone())
            .unwrap_or_default()
    }

    /// Whether `url` is a page of the host itself: the only pages its documents may make claims
    /// about. Anything else is counted and ignored.
    fn own_page(&mut self, host: i64, url: &Url) -> bool {
        if crate::analyze::url_norm::origin_key(url) == self.origin(host) {
            return true;
        }
        self.site(host).stats.foreign += 1;
        tracing::debug!(
            "{}: names {url}, not one of its pages; ignored",
            self.origin(host)
        );
        false
    }

    /// Whether an endpoint (changes, delta, hub, listing) a host's documents name is one the
    /// host speaks for: on its own origin, or on one its robots.txt delegates to.
    fn speaks_for(&mut self, host: i64, url: &Url) -> bool {
        let origin = crate::analyze::url_norm::origin_key(url);
        if origin == self.origin(host)
            || self
                .coop
                .sites
                .get(&host)
                .is_some_and(|s| s.delegates.contains(&origin))
        {
            return true;
        }
        self.site(host).stats.foreign += 1;
        tracing::info!(
            "{}: names {url} on another origin it does not delegate to in robots.txt; ignored",
            self.origin(host)
        );
        false
    }

    /// Whether a host's announcements stand in for polling its pages.
    pub(super) fn coop_covers(&self, host: i64) -> bool {
        self.coop
            .sites
            .get(&host)
            .is_some_and(|s| s.covers(&self.s.coop))
    }

    /// The sites' cooperation to save with the next batch.
    pub(super) fn coop_to_save(&mut self) -> Vec<(i64, String)> {
        let dirty: Vec<i64> = self.coop.dirty.drain().collect();
        dirty
            .into_iter()
            .filter_map(|id| {
                let site = self.coop.sites.get(&id)?;
                serde_json::to_string(site).ok().map(|j| (id, j))
            })
            .collect()
    }

    /// robots.txt was read: look for what the site offers.
    pub(super) fn coop_discover(&mut self, host: i64, status: Option<u16>, body: &[u8]) {
        if self.s.coop.mode == CoopMode::Off {
            return;
        }
        let origin = self.origin(host);
        let Ok(root) = Url::parse(&origin) else {
            return;
        };
        let robots_url = root.join("/robots.txt").unwrap_or_else(|_| root.clone());
        let pointers = if status.is_some_and(|s| (200..300).contains(&s)) {
            robots_txt_pointers(&robots_url, body)
        } else {
            Default::default()
        };
        let rediscover = {
            let site = self.site(host);
            let sitemaps: Vec<String> = pointers.sitemaps.iter().map(|u| u.to_string()).collect();
            let changed = !site.discovered || site.sitemaps != sitemaps;
            site.sitemaps = sitemaps;
            let mut delegates: Vec<String> = pointers
                .sitemaps
                .iter()
                .chain(&pointers.robots_rdf)
                .map(crate::analyze::url_norm::origin_key)
                .filter(|o| *o != origin)
                .collect();
            delegates.sort();
            delegates.dedup();
            site.delegates = delegates;
            changed
        };
        if !rediscover {
            return;
        }
        let listing = pointers
            .robots_rdf
            .or_else(|| root.join("/robots.rdf").ok());
        if let Some(url) = listing {
            self.fetch_listing(host, url);
        }
    }

    /// Asks for the whole robots.rdf (no validators): at discovery and for a resync.
    fn fetch_listing(&mut self, host: i64, url: Url) {
        self.frontier.push_coop(
            host,
            CoopJob::Fetch {
                kind: MetaKind::Listing,
                url,
                etag: None,
                last_modified: None,
            },
        );
        self.coop.polling.insert(host);
    }

    fn start_walks(&mut self, host: i64) {
        let origin = self.origin(host);
        let Ok(root) = Url::parse(&origin) else {
            return;
        };
        let mut roots: Vec<Url> = self
            .coop
            .sites
            .get(&host)
            .map(|s| {
                s.sitemaps
                    .iter()
                    .filter_map(|u| Url::parse(u).ok())
                    .collect()
            })
            .unwrap_or_default();
        if roots.is_empty()
            && let Ok(u) = root.join("/sitemap.xml")
        {
            roots.push(u);
        }
        let Some(first) = roots.first().cloned() else {
            return;
        };
        // One walk per host; further roots are listed as if an index named them.
        let mut walk = SitemapWalk::new(first, WalkLimits::default()).with_scope(&root);
        let mut pending = Vec::new();
        while let Some(p) = walk.next_fetch() {
            pending.push(p);
        }
        let validators = self
            .coop
            .sites
            .get(&host)
            .map(|s| s.sitemap_validators.clone())
            .unwrap_or_default();
        self.coop.walks.insert(host, (walk, Vec::new(), 0));
        for (i, p) in pending.into_iter().enumerate() {
            let (etag, last_modified) = if i == 0 {
                validators.clone()
            } else {
                (None, None)
            };
            self.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::Sitemap,
                    url: p.url,
                    etag,
                    last_modified,
                },
            );
        }
        for extra in roots.into_iter().skip(1) {
            self.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::Sitemap,
                    url: extra,
                    etag: None,
                    last_modified: None,
                },
            );
        }
        self.coop.polling.insert(host);
    }

    /// Polls that are due, subscriptions to make or renew; at most every 100 ms.
    pub(super) fn coop_tick(&mut self) {
        let now = Instant::now();
        if self.s.coop.mode == CoopMode::Off || self.coop.next_tick.is_some_and(|t| t > now) {
            return;
        }
        self.coop.next_tick = Some(now + tick_period());
        let at = now_ms();
        let ids: Vec<i64> = self.coop.sites.keys().copied().collect();
        for host in ids {
            self.maybe_subscribe(host, at);
            if self.schedule.is_none() || self.coop.polling.contains(&host) {
                continue;
            }
            let Some(site) = self.coop.sites.get(&host) else {
                continue;
            };
            if !site.discovered || site.next_poll.is_some_and(|t| t > at) {
                continue;
            }
            if let Some(job) = self.poll_job(host) {
                self.frontier.push_coop(host, job);
                self.coop.polling.insert(host);
            }
        }
    }

    /// When the next poll is due (ms), for the loop's sleep.
    pub(super) fn coop_next_due(&self) -> Option<i64> {
        self.schedule.as_ref()?;
        self.coop
            .sites
            .iter()
            .filter(|(id, s)| s.discovered && !self.coop.polling.contains(id))
            .filter_map(|(_, s)| s.next_poll)
            .min()
    }

    fn poll_job(&mut self, host: i64) -> Option<CoopJob> {
        let site = self.coop.sites.get(&host)?;
        if let (Some(changes), Some(cursor)) = (&site.changes, site.cursor) {
            let mut url = Url::parse(changes).ok()?;
            url.query_pairs_mut()
                .clear()
                .append_pair("since", &cursor.to_string());
            return Some(CoopJob::Fetch {
                kind: MetaKind::Changes,
                url,
                etag: site.changes_etag.clone(),
                last_modified: None,
            });
        }
        if let Some(listing) = &site.listing {
            return Some(CoopJob::Fetch {
                kind: MetaKind::Listing,
                url: Url::parse(listing).ok()?,
                etag: site.listing_validators.0.clone(),
                last_modified: site.listing_validators.1.clone(),
            });
        }
        if site.sitemap_dates {
            self.start_walks(host);
        }
        None
    }

    fn plan_next_poll(&mut self, host: i64) {
        let c = self.s.coop;
        let at = now_ms();
        let site = self.site(host);
        let secs = site.poll_interval(&c);
        site.next_poll = Some(at + (secs * 1000.0) as i64);
    }

    /// A cooperation request ended.
    pub(super) fn handle_coop(
        &mut self,
        host: i64,
        job: CoopJob,
        result: Result<CoopFetched, FetchError>,
        elapsed: Duration,
    ) -> Result<(), super::CrawlError> {
        self.in_flight = self.in_flight.saturating_sub(1);
        let now = Instant::now();
        let crawl_delay = self
            .frontier
            .rules(host, now)
            .and_then(crate::frontier::robots::Rules::crawl_delay);
        self.frontier
            .finished(host, now + self.s.politeness.delay(crawl_delay, elapsed));
        let at = now_ms();
        let (url, what) = match &job {
            CoopJob::Fetch { url, kind, .. } => (url.to_string(), kind.as_str()),
            CoopJob::Hub {
                hub, unsubscribe, ..
            } => (
                hub.to_string(),
                if *unsubscribe {
                    "unsubscribe"
                } else {
                    "subscribe"
                },
            ),
        };
        let mut record = None;
        let (status, size, note) = match &result {
            Ok(r) => (Some(r.status), Some(r.size), what.to_string()),
            Err(e) => (None, None, format!("{what}: {e}")),
        };
        if let Ok(r) = &result {
            record = r.record.clone();
            let site = self.site(host);
            site.stats.meta_requests += 1;
            site.stats.meta_bytes += r.size;
            if r.status == 304 {
                site.stats.not_modified += 1;
            }
            self.run.coop_requests += 1;
            self.run.bytes += r.size;
        }
        if let Some(rec) = record {
            self.append(rec)?;
        }
        self.log_coop(at, status, size, &url, elapsed, &note);
        match job {
            CoopJob::Hub {
                unsubscribe, hub, ..
            } => {
                self.coop.polling.remove(&host);
                self.hub_answered(host, &hub, unsubscribe, result);
            }
            CoopJob::Fetch { kind, url, .. } => {
                let outcome = match result {
                    Ok(r) => self.meta_answered(host, kind, &url, r),
                    Err(e) => Err(e.to_string()),
                };
                match outcome {
                    Ok(()) => {
                        let was_down = {
                            let c = self.s.coop;
                            let site = self.site(host);
                            let down = site.failures >= c.failures_to_degrade;
                            site.failures = 0;
                            down
                        };
                        if was_down && self.coop_covers(host) {
                            tracing::info!("{}: cooperation is back", self.origin(host));
                            if let Some(s) = self.schedule.as_mut() {
                                s.set_host_covered(host, true);
                            }
                        }
                    }
                    Err(why) => self.meta_failed(host, kind, &why),
                }
                let walking = self.coop.walks.contains_key(&host)
                    || self.frontier.host(host).is_some_and(|h| h.coop_waiting());
                if !walking {
                    self.coop.polling.remove(&host);
                    let discovered = self.coop.sites.get(&host).is_some_and(|s| s.discovered);
                    if discovered {
                        self.plan_next_poll(host);
                    }
                }
            }
        }
        Ok(())
    }

    fn meta_failed(&mut self, host: i64, kind: MetaKind, why: &str) {
        let origin = self.origin(host);
        let c = self.s.coop;
        let discovering = !self.coop.sites.get(&host).is_some_and(|s| s.discovered);
        if discovering {
            match kind {
                // No listing: sitemaps, then nothing.
                MetaKind::Listing => {
                    tracing::debug!("{origin}: no robots.rdf ({why})");
                    self.start_walks(host);
                }
                MetaKind::Sitemap => {
                    tracing::debug!("{origin}: sitemap: {why}");
                    self.sitemap_fed(host, None);
                }
                MetaKind::Changes => {}
            }
            return;
        }
        if kind == MetaKind::Sitemap {
            self.sitemap_fed(host, None);
        }
        let covered_before = self.coop_covers(host);
        let site = self.site(host);
        site.failures += 1;
        let failures = site.failures;
        tracing::warn!("{origin}: {} failed ({why})", kind.as_str());
        if covered_before && failures >= c.failures_to_degrade {
            tracing::warn!(
                "{origin}: cooperation unavailable after {failures} failures; polling its pages until it is back"
            );
            if let Some(s) = self.schedule.as_mut() {
                s.set_host_covered(host, false);
            }
        }
    }

    fn meta_answered(
        &mut self,
        host: i64,
        kind: MetaKind,
        url: &Url,
        r: CoopFetched,
    ) -> Result<(), String> {
        let secs = self
            .coop
            .sites
            .get(&host)
            .and_then(|s| s.last_poll)
            .map(|t| (now_ms() - t).max(0) as f64 / 1000.0);
        match (kind, r.status) {
            (MetaKind::Sitemap, 304) | (MetaKind::Listing, 304) | (MetaKind::Changes, 304) => {
                if kind == MetaKind::Changes {
                    self.backup_polled(host, 0);
                }
                let site = self.site(host);
                if let Some(secs) = secs {
                    site.count.observe(0, secs);
                }
                site.last_poll = Some(now_ms());
                if kind == MetaKind::Sitemap {
                    self.coop.walks.remove(&host);
                }
                if self.coop.chance(self.s.coop.check_share) {
                    self.check_one(host);
                }
                Ok(())
            }
            (MetaKind::Listing, 200) => self.listing_answered(host, url, &r, secs),
            (MetaKind::Changes, 200) => self.changes_answered(host, &r, secs, false),
            (MetaKind::Changes, 410) => {
                tracing::info!(
                    "{}: changes cursor too old; reloading robots.rdf",
                    self.origin(host)
                );
                self.resync(host);
                Ok(())
            }
            (MetaKind::Sitemap, 200) => {
                self.sitemap_fed(host, Some((url, &r)));
                Ok(())
            }
            (_, s) => Err(format!("{url} answered {s}")),
        }
    }

    fn resync(&mut self, host: i64) {
        let listing = {
            let site = self.site(host);
            site.cursor = None;
            site.changes_etag = None;
            site.listing_validators = (None, None);
            site.listing.clone()
        };
        if let Some(url) = listing.and_then(|l| Url::parse(&l).ok()) {
            self.fetch_listing(host, url);
        }
    }

    fn listing_answered(
        &mut self,
        host: i64,
        url: &Url,
        r: &CoopFetched,
        secs: Option<f64>,
    ) -> Result<(), String> {
        let doc =
            robots_rdf::parse(&r.body, &RdfLimits::default()).map_err(|e| format!("{url}: {e}"))?;
        let origin = self.origin(host);
        let last_poll = self.coop.sites.get(&host).and_then(|s| s.last_poll);
        let first = !self.coop.sites.get(&host).is_some_and(|s| s.discovered);
        {
            let site = self.site(host);
            site.listing = Some(url.to_string());
            site.listing_validators = (
                r.header("etag").map(str::to_string),
                r.header("last-modified").map(str::to_string),
            );
            site.discovered = true;
            site.last_poll = Some(now_ms());
        }
        let changes = doc
            .channel
            .changes
            .as_ref()
            .filter(|c| is_changes_endpoint(c))
            .filter(|c| self.speaks_for(host, c))
            .cloned();
        if let Some(changes) = changes {
            let site = self.site(host);
            site.changes = Some(changes.to_string());
            if site.cursor.is_none() {
                site.cursor = doc.channel.seq;
            }
        }
        let hub = doc
            .channel
            .hub
            .as_ref()
            .filter(|h| self.speaks_for(host, h))
            .map(Url::to_string);
        self.site(host).hub = hub;
        if let Some(hub) = r
            .header("link")
            .map(|v| link_header(url, v))
            .and_then(|links| links.into_iter().find(|(_, rel)| rel == "hub"))
            .filter(|(h, _)| self.speaks_for(host, h))
        {
            let site = self.site(host);
            if site.hub.is_none() {
                site.hub = Some(hub.0.to_string());
            }
        }
        let mut moved = 0;
        let changes = self.coop.sites.get(&host).and_then(|s| s.changes.clone());
        let changes = changes.and_then(|c| Url::parse(&c).ok());
        for item in &doc.items {
            if !self.own_page(host, &item.url) {
                continue;
            }
            let plan = item
                .delta
                .clone()
                .filter(|d| self.speaks_for(host, d))
                .or_else(|| changes.as_ref().and_then(|c| delta_url(c, &item.url)));
            let modified = item.modified.timestamp_millis();
            if last_poll.is_some_and(|t| modified > t) {
                moved += 1;
            }
            self.listed(
                host,
                &item.url,
                Some(modified),
                item.etag.as_ref().map(ToString::to_string),
                plan,
                None,
                !first,
            );
        }
        if let Some(secs) = secs {
            self.site(host).count.observe(moved, secs);
        }
        if first {
            let dates: Vec<i64> = doc.items.iter().map(|i| i.modified.timestamp()).collect();
            self.pace_from_listing(host, &dates);
            let level = self
                .coop
                .sites
                .get(&host)
                .map(|s| s.level(self.s.coop.mode, self.s.coop.failures_to_degrade))
                .unwrap_or_default();
            tracing::info!(
                "{origin}: robots.rdf lists {} URLs; cooperation: {}",
                doc.items.len(),
                level.as_str()
            );
        }
        Ok(())
    }

    fn sitemap_fed(&mut self, host: i64, got: Option<(&Url, &CoopFetched)>) {
        let Some((mut walk, mut listed, mut failures)) = self.coop.walks.remove(&host) else {
            return;
        };
        let problems_before = walk.problems().len();
        if let Some((url, r)) = got {
            let pending = webcoop_protocol::sitemap::PendingSitemap {
                url: url.clone(),
                depth: 0,
            };
            let is_root = self
                .coop
                .sites
                .get(&host)
                .is_some_and(|s| s.sitemaps.first().is_none_or(|f| f == url.as_str()));
            // A walk holds its entries until it ends: no more than a host may queue.
            let room = (crate::frontier::MAX_QUEUED_PER_HOST as usize).saturating_sub(listed.len());
            listed.extend(walk.feed(&pending, &r.body).into_iter().take(room));
            if is_root {
                self.site(host).sitemap_validators = (
                    r.header("etag").map(str::to_string),
                    r.header("last-modified").map(str::to_string),
                );
            }
        }
        if got.is_none() || walk.problems().len() > problems_before {
            failures += 1;
        }
        // A site whose sitemaps keep failing (gzip bombs, garbage) costs a bounded amount of
        // work: after so many bad files the rest of its walk is dropped.
        if failures >= MAX_BAD_SITEMAPS {
            let queued = self.frontier.drop_coop(host, |job| {
                matches!(
                    job,
                    CoopJob::Fetch {
                        kind: MetaKind::Sitemap,
                        ..
                    }
                )
            });
            let unqueued = std::iter::from_fn(|| walk.next_fetch()).count();
            if queued + unqueued > 0 {
                tracing::warn!(
                    "{}: {failures} sitemap files could not be read; the other {} of the walk are dropped",
                    self.origin(host),
                    queued + unqueued
                );
            }
        }
        let mut more = Vec::new();
        while let Some(p) = walk.next_fetch() {
            more.push(p);
        }
        for p in more {
            self.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::Sitemap,
                    url: p.url,
                    etag: None,
                    last_modified: None,
                },
            );
        }
        let waiting = self.frontier.host(host).is_some_and(|h| h.coop_waiting());
        if waiting {
            self.coop.walks.insert(host, (walk, listed, failures));
            return;
        }
        // The walk is over: its dates are judged before any is acted on, so a sitemap that
        // stamps every URL does not send the crawler after every page first.
        let dates: Vec<i64> = listed
            .iter()
            .filter_map(|e| e.lastmod.map(|t| t.timestamp()))
            .collect();
        let moment = shared_moment(&dates);
        let origin = self.origin(host);
        let c = self.s.coop;
        let site = self.site(host);
        let first = !site.discovered;
        let stamped = lastmods_stamped(site.sitemap_moment, moment);
        site.sitemap_moment = moment;
        site.discovered = true;
        site.last_poll = Some(now_ms());
        if stamped {
            tracing::info!("{origin}: sitemap lastmod stamped on every URL; not trusted");
            site.trust.refute(5.0);
        }
        site.sitemap_dates = !dates.is_empty() && !stamped;
        if first && !stamped && moment.is_none() {
            self.pace_from_listing(host, &dates);
        }
        for e in &listed {
            if !self.own_page(host, &e.loc) {
                continue;
            }
            let lastmod = e.lastmod.filter(|_| !stamped);
            self.listed(
                host,
                &e.loc,
                lastmod.map(|t| t.timestamp_millis()),
                None,
                None,
                None,
                !first,
            );
        }
        if first {
            let level = self.site(host).level(c.mode, c.failures_to_degrade);
            tracing::info!(
                "{origin}: sitemaps list {} URLs ({} files); cooperation: {}",
                listed.len(),
                walk.fetched(),
                level.as_str()
            );
        }
    }

    fn changes_answered(
        &mut self,
        host: i64,
        r: &CoopFetched,
        secs: Option<f64>,
        pushed: bool,
    ) -> Result<(), String> {
        let feed = changes_feed::parse(&r.body, &FeedLimits::default())
            .map_err(|e| format!("changes feed: {e}"))?;
        if !pushed {
            let site = self.site(host);
            site.changes_etag = r.header("etag").map(str::to_string);
            site.last_poll = Some(now_ms());
        }
        self.apply_feed(host, feed, secs, pushed);
        Ok(())
    }

    fn apply_feed(&mut self, host: i64, feed: ChangesFeed, secs: Option<f64>, pushed: bool) {
        if let Some(resync) = &feed.resync {
            tracing::info!(
                "{}: the site asks for a resync after change {}",
                self.origin(host),
                resync.since
            );
            self.resync(host);
            return;
        }
        let cursor = self.coop.sites.get(&host).and_then(|s| s.cursor);
        let mut entries: Vec<_> = feed
            .entries
            .into_iter()
            .filter(|e| cursor.is_none_or(|c| e.seq > c))
            .collect();
        entries.sort_by_key(|e| e.seq);
        if !pushed {
            // A change older than half the backup period should have been pushed by now.
            let grace = chrono::Duration::milliseconds((self.s.coop.backup_poll * 500.0) as i64);
            let now = crate::clock::now();
            let missed = entries.iter().filter(|e| now - e.time > grace).count();
            self.backup_polled(host, missed);
        }
        if pushed
            && let (Some(c), Some(first)) = (cursor, entries.first())
            && first.seq > c + 1
        {
            self.site(host).quiet_backups = 0;
            // Changes were missed (a delivery lost): the feed fills the gap, in order.
            tracing::info!(
                "{}: pushed change {} after {c}; fetching the changes in between",
                self.origin(host),
                first.seq
            );
            if let Some(job) = self.poll_job(host) {
                self.frontier.push_coop(host, job);
                self.coop.polling.insert(host);
            }
            return;
        }
        let n = entries.len() as u64;
        let changes = self
            .coop
            .sites
            .get(&host)
            .and_then(|s| s.changes.clone())
            .and_then(|c| Url::parse(&c).ok());
        let deltas = self.s.coop.uses_deltas();
        for e in &entries {
            if !self.own_page(host, &e.url) {
                continue;
            }
            match e.kind {
                ChangeKind::Deleted => self.deleted(host, &e.url, e.seq),
                ChangeKind::Created | ChangeKind::Modified => {
                    let plan = changes.as_ref().and_then(|c| delta_url(c, &e.url));
                    let inline = e
                        .delta
                        .as_ref()
                        .filter(|d| {
                            deltas && d.encoding == webcoop_protocol::delta::DeltaEncoding::Dcz
                        })
                        .map(|d| (d.base.to_string(), d.data.clone()));
                    self.listed(
                        host,
                        &e.url,
                        Some(e.time.timestamp_millis()),
                        e.etag.as_ref().map(ToString::to_string),
                        plan,
                        inline,
                        true,
                    );
                }
            }
        }
        let site = self.site(host);
        if let Some(last) = entries.last() {
            site.cursor = Some(last.seq);
        }
        site.stats.announced += n;
        if let Some(secs) = secs {
            site.count.observe(n, secs);
        }
        let behind = feed
            .head_seq
            .zip(site.cursor)
            .is_some_and(|(head, c)| head > c);
        if !pushed
            && behind
            && let Some(next) = feed.next
        {
            self.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::Changes,
                    url: next,
                    etag: None,
                    last_modified: None,
                },
            );
            self.coop.polling.insert(host);
        }
    }

    /// A site met for the first time: its listing's dates (Unix seconds) set the pace of the
    /// first polls.
    fn pace_from_listing(&mut self, host: i64, dates: &[i64]) {
        let Some((changes, secs)) = pace_from_dates(dates, now_ms().div_euclid(1000)) else {
            return;
        };
        let origin = self.origin(host);
        let c = self.s.coop;
        let site = self.site(host);
        site.count.observe(changes, secs);
        tracing::info!(
            "{origin}: {changes} pages modified in the {:.0} h before first contact; metadata polled every {:.0} s to begin with",
            secs / 3600.0,
            site.poll_interval(&c)
        );
    }

    /// A poll of the changes feed of a pushed site found `missed` changes the hub had not
    /// pushed: none stretches the time to the next poll, any brings it back to the start.
    fn backup_polled(&mut self, host: i64, missed: usize) {
        let c = self.s.coop;
        let site = self.site(host);
        if site.level(c.mode, c.failures_to_degrade) != Level::Push {
            return;
        }
        let was = site.quiet_backups;
        site.backup_polled(missed);
        if missed > 0 && was > 0 {
            tracing::info!(
                "{}: the hub had not pushed {missed} changes the feed lists; backup polls every {} s again",
                self.origin(host),
                c.backup_poll
            );
        }
    }

    /// A URL the site lists or announces, with what it says of it. `announce` is false while
    /// the first listing is read (it only seeds the frontier).
    #[allow(clippy::too_many_arguments)]
    fn listed(
        &mut self,
        host: i64,
        url: &Url,
        modified: Option<i64>,
        etag: Option<String>,
        delta: Option<Url>,
        inline: Option<(String, Vec<u8>)>,
        announce: bool,
    ) {
        if self.ctx.policy.admit(url, 1).is_err() {
            return;
        }
        let link = Link::to(url);
        if !self.frontier.seen(link.fp) {
            self.push(&link, 1, 0);
            return;
        }
        let known = match self.frontier.store.page(link.fp) {
            Ok(Some(k)) => k,
            Ok(None) => return, // queued, not fetched yet
            Err(e) => {
                tracing::warn!("{url}: {e}");
                return;
            }
        };
        let changed = match (&etag, &known.validator) {
            (Some(a), Some(b)) => a != b,
            _ => modified.is_some_and(|m| m > known.fetched_at),
        };
        if !changed
            && etag.is_none()
            && modified.is_some_and(|m| within_second(m, known.fetched_at))
        {
            // A date to the second cannot tell a change in the second of the fetch from none:
            // look, without holding it against the site either way.
            if self.coop_covers(host) {
                self.due_now(host, &link);
            }
            return;
        }
        let believed = self
            .coop
            .sites
            .get(&host)
            .is_some_and(|s| s.trust.believed(self.s.coop.trust_min));
        let covers = self.coop_covers(host);
        if !changed {
            // A small share of "unchanged" claims is checked by a fetch.
            if announce && covers && self.coop.chance(self.s.coop.check_share) {
                self.coop.claims.insert(link.fp, (host, Claim::Unchanged));
                self.site(host).stats.checks += 1;
                self.due_now(host, &link);
            }
            return;
        }
        self.coop.claims.insert(link.fp, (host, Claim::Changed));
        if !believed || self.s.coop.mode == CoopMode::Off {
            return; // weighed at the next visit, not acted on
        }
        if self.s.coop.uses_deltas()
            && let Some(delta) = delta
        {
            self.coop.plans.insert(
                link.fp,
                DeltaPlan {
                    url: delta,
                    announced: etag,
                    inline: inline.clone(),
                },
            );
        }
        if inline.is_some() && known.content.is_some() {
            self.apply_inline(host, &link, known);
            return;
        }
        self.due_now(host, &link);
    }

    /// Makes a known page due at once (an announced change or a check).
    fn due_now(&mut self, host: i64, link: &Link) {
        let now = now_ms();
        let tracked = self.schedule.as_mut().map(|s| {
            s.page(link.fp).is_some() && s.announce(link.fp, Announcement::ChangedAt(now), now)
        });
        match tracked {
            Some(true) => {}
            // Not tracked (deleted earlier, or no schedule): queue it directly.
            _ => self
                .frontier
                .push_revisit(host, link.url.clone(), link.fp, 1),
        }
    }

    fn apply_inline(&mut self, host: i64, link: &Link, known: crate::state::KnownPage) {
        let Some(plan) = self.coop.plans.remove(&link.fp) else {
            return;
        };
        let depth = self
            .schedule
            .as_ref()
            .and_then(|s| s.page(link.fp))
            .map_or(1, |p| p.depth);
        let job = Queued {
            seq: 0,
            host,
            fp: link.fp,
            url: link.url.clone(),
            depth,
            hops: 0,
            attempts: 0,
            priority: 0.0,
            revisit: true,
        };
        let Ok(page) = Url::parse(&link.url) else {
            return;
        };
        let ctx = self.ctx.clone();
        let tx = self.tx.clone();
        let fallback_tx = self.tx.clone();
        self.rt.spawn(async move {
            let job_again = job.clone();
            if let Err(why) = requests::page_inline(ctx, job, page, known, plan, tx).await {
                let _ = fallback_tx.send(Outcome::Callback(CallbackEvent::InlineFailed {
                    host: job_again.host,
                    fp: job_again.fp,
                    url: job_again.url,
                    why,
                }));
            }
        });
    }

    /// An inline delta could not be used: the page is fetched.
    fn inline_failed(&mut self, host: i64, fp: u64, url: String, why: &str) {
        tracing::info!("{url}: inline delta not usable ({why}); fetching it");
        self.site(host).stats.delta_fallbacks += 1;
        let Ok(u) = Url::parse(&url) else {
            return;
        };
        let link = Link { fp, ..Link::to(&u) };
        self.due_now(host, &link);
    }

    fn deleted(&mut self, host: i64, url: &Url, seq: u64) {
        let link = Link::to(url);
        let believed = self.coop_covers(host);
        if !believed || !self.frontier.seen(link.fp) {
            return;
        }
        match self.frontier.store.page(link.fp) {
            Ok(Some(_)) => {}
            _ => return,
        }
        if let Some(s) = self.schedule.as_mut() {
            s.remove(link.fp);
        }
        self.coop.claims.remove(&link.fp);
        self.coop.plans.remove(&link.fp);
        let at = now_ms();
        self.batch.pages.push(PageRecord {
            url: link.url.clone(),
            fp: link.fp,
            host,
            depth: 1,
            error: Some(format!("deleted: announced by the site (change {seq})")),
            fetched_at: at,
            gone: true,
            ..Default::default()
        });
        let job = Queued {
            seq: 0,
            host,
            fp: link.fp,
            url: link.url.clone(),
            depth: 1,
            hops: 0,
            attempts: 0,
            priority: 0.0,
            revisit: false,
        };
        self.log_line(
            at,
            None,
            None,
            &link.url,
            &job,
            None,
            Duration::ZERO,
            "deleted (announced)",
        );
    }

    /// A random page of a site is fetched to check its "nothing changed".
    fn check_one(&mut self, host: i64) {
        let Some(schedule) = self.schedule.as_ref() else {
            return;
        };
        let pages = schedule.pages_of(host);
        if pages.is_empty() {
            return;
        }
        let pick = pages[(self.coop.rng as usize) % pages.len()];
        let Some(url) = schedule.page(pick).map(|p| p.url.clone()) else {
            return;
        };
        self.coop.claims.insert(pick, (host, Claim::Unchanged));
        self.site(host).stats.checks += 1;
        let Ok(u) = Url::parse(&url) else {
            return;
        };
        let link = Link {
            fp: pick,
            ..Link::to(&u)
        };
        self.due_now(host, &link);
    }

    /// Whether a believed site announced a change of the page since its last visit. Such a
    /// visit asks without validators: a server's are often coarser than the announcement (a
    /// `Last-Modified` to the second, nginx's ETag of mtime and size), and a 304 would then
    /// hide a second edit within the same second and count against an honest site. A site not
    /// believed gets conditional visits: its claims must not cost whole bodies.
    pub(super) fn coop_announced_change(&self, fp: u64) -> bool {
        self.coop.claims.get(&fp).is_some_and(|(host, c)| {
            *c == Claim::Changed
                && self
                    .coop
                    .sites
                    .get(host)
                    .is_some_and(|s| s.trust.believed(self.s.coop.trust_min))
        })
    }

    /// The delta to fetch for a revisit of a changed page, if one is planned.
    pub(super) fn coop_delta_plan(&mut self, fp: u64) -> Option<DeltaPlan> {
        if !self.s.coop.uses_deltas() {
            return None;
        }
        self.coop.plans.remove(&fp)
    }

    /// After a visit: the site's claim about the page is weighed, and a page of a covering
    /// site is left to its announcements.
    pub(super) fn coop_visited(
        &mut self,
        host: i64,
        fp: u64,
        changed: bool,
        delta: Option<&DeltaUse>,
    ) {
        if let Some(d) = delta {
            let site = self.site(host);
            match d {
                DeltaUse::Applied(_) | DeltaUse::Pushed => site.stats.deltas += 1,
                DeltaUse::Whole => {}
                DeltaUse::Fallback(_) => site.stats.delta_fallbacks += 1,
            }
        }
        if let Some((claim_host, claim)) = self.coop.claims.remove(&fp) {
            let before = self.coop_covers(claim_host);
            let right = (claim == Claim::Changed) == changed;
            let site = self.site(claim_host);
            if right {
                site.trust.confirm();
            } else {
                site.trust.refute(1.0);
            }
            let after = self.coop_covers(claim_host);
            if before != after {
                let origin = self.origin(claim_host);
                let score = self
                    .coop
                    .sites
                    .get(&claim_host)
                    .map_or(0.0, |s| s.trust.score());
                if after {
                    tracing::info!(
                        "{origin}: claims proved right again (trust {score:.2}); believed"
                    );
                } else {
                    tracing::warn!(
                        "{origin}: claims proved wrong (trust {score:.2}); polling its pages instead"
                    );
                }
                if let Some(s) = self.schedule.as_mut() {
                    s.set_host_covered(claim_host, after);
                }
            }
        }
        if self.coop_covers(host)
            && let Some(s) = self.schedule.as_mut()
        {
            s.cover(fp);
        }
    }

    /// A page names a WebSub hub: where its site has no changes feed to subscribe to, the
    /// page's topic is subscribed to instead.
    pub(super) fn coop_page_hub(&mut self, host: i64, hub: &Url, topic: &Url) {
        if self.s.coop.mode < CoopMode::Push || self.coop.callback.is_none() {
            return;
        }
        let origin = self.origin(host);
        if !self.own_page(host, topic) || !self.speaks_for(host, hub) {
            return;
        }
        let site = self.site(host);
        if site.changes.is_some() || site.page_hub.is_some() {
            return;
        }
        if !matches!(hub.scheme(), "http" | "https") || !matches!(topic.scheme(), "http" | "https")
        {
            return;
        }
        site.page_hub = Some((hub.to_string(), topic.to_string()));
        tracing::info!("{origin}: {topic} names the hub {hub}; subscribing to it");
        self.maybe_subscribe(host, now_ms());
    }

    fn maybe_subscribe(&mut self, host: i64, at: i64) {
        // Push serves keeping pages fresh; a one-pass crawl has no use for it.
        if self.schedule.is_none() {
            return;
        }
        let Some(server) = self.coop.callback.as_ref() else {
            return;
        };
        let Some(site) = self.coop.sites.get(&host) else {
            return;
        };
        let (hub, topic) = match (&site.hub, &site.changes, &site.page_hub) {
            (Some(hub), Some(changes), _) => (hub.clone(), changes.clone()),
            (_, None, Some((hub, topic))) => (hub.clone(), topic.clone()),
            _ => return,
        };
        if !site.discovered || site.failures >= self.s.coop.failures_to_degrade {
            return;
        }
        let lease_ms = self.s.coop.lease_secs as i64 * 1000;
        let due = match &site.subscription {
            None => true,
            Some(s) if s.verified_at.is_none() => at - s.requested_at > RESUBSCRIBE_MS,
            Some(s) => {
                let granted = s.lease_until.unwrap_or(at) - s.verified_at.unwrap_or(at);
                s.lease_until
                    .is_some_and(|end| end - at < granted.min(lease_ms) / 5)
                    && at - s.requested_at > RESUBSCRIBE_MS.min(granted / 10)
            }
        };
        if !due || server.pending(host) {
            return;
        }
        let (Ok(hub_url), Ok(topic_url)) = (Url::parse(&hub), Url::parse(&topic)) else {
            return;
        };
        let secret = site
            .subscription
            .as_ref()
            .map(|s| s.secret.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| {
                let bytes: [u8; 32] = rand::random();
                data_encoding::BASE64URL_NOPAD.encode(&bytes)
            });
        let callback = server.callback_for(host, &secret);
        let Ok(callback_url) = Url::parse(&callback) else {
            return;
        };
        let active = site
            .subscription
            .as_ref()
            .is_some_and(|s| s.verified_at.is_some());
        server.expect(
            host,
            Expected {
                topic: topic.clone(),
                secret: secret.clone(),
                pending: Some(Mode::Subscribe),
                asked: Some(std::time::Instant::now()),
                active,
            },
        );
        let form = SubscriptionRequest {
            mode: Mode::Subscribe,
            callback: callback_url,
            topic: topic_url,
            lease_seconds: Some(self.s.coop.lease_secs),
            secret: Some(secret.clone()),
        }
        .to_form();
        let previous = site.subscription.clone();
        self.site(host).subscription = Some(Subscription {
            hub: hub.clone(),
            topic,
            callback,
            secret,
            requested_at: at,
            ..previous.unwrap_or_default()
        });
        self.frontier.push_coop(
            host,
            CoopJob::Hub {
                hub: hub_url,
                form,
                unsubscribe: false,
            },
        );
        self.coop.polling.insert(host);
    }

    fn hub_answered(
        &mut self,
        host: i64,
        hub: &Url,
        unsubscribe: bool,
        result: Result<CoopFetched, FetchError>,
    ) {
        let why = match result {
            Ok(r) if r.status == 202 || (200..300).contains(&r.status) => return,
            Ok(r) => format!("{} {}", r.status, String::from_utf8_lossy(&r.body).trim()),
            Err(e) => e.to_string(),
        };
        if unsubscribe {
            return;
        }
        tracing::warn!(
            "{}: hub {hub} refused the subscription ({why}); polling the changes feed",
            self.origin(host)
        );
        if let Some(server) = &self.coop.callback {
            server.expect(
                host,
                Expected {
                    topic: String::new(),
                    secret: String::new(),
                    pending: None,
                    asked: None,
                    active: false,
                },
            );
        }
        // Kept unverified: asked again only after a while.
        if let Some(s) = self.site(host).subscription.as_mut() {
            s.verified_at = None;
            s.lease_until = None;
        }
    }

    /// The callback server heard from a hub.
    pub(super) fn handle_callback(&mut self, event: CallbackEvent) {
        let at = now_ms();
        match event {
            CallbackEvent::Verified {
                host,
                mode: Mode::Subscribe,
                lease,
            } => {
                // A hub's number: from a minute to a year, whatever it says.
                let lease_ms = lease
                    .unwrap_or(self.s.coop.lease_secs)
                    .clamp(60, 366 * 86_400) as i64
                    * 1000;
                let fresh = {
                    let site = self.site(host);
                    let fresh = site
                        .subscription
                        .as_ref()
                        .is_none_or(|s| s.verified_at.is_none());
                    if let Some(s) = site.subscription.as_mut() {
                        s.verified_at = Some(at);
                        s.lease_until = Some(at + lease_ms);
                    }
                    if fresh {
                        // A new subscription has yet to show the hub keeps up.
                        site.quiet_backups = 0;
                    }
                    fresh
                };
                tracing::info!(
                    "{}: subscribed to its hub for {} s",
                    self.origin(host),
                    lease_ms / 1000
                );
                // Whatever changed between the last poll and the subscription.
                if fresh
                    && self.schedule.is_some()
                    && !self.coop.polling.contains(&host)
                    && let Some(job) = self.poll_job(host)
                {
                    self.frontier.push_coop(host, job);
                    self.coop.polling.insert(host);
                }
                self.plan_next_poll(host);
            }
            CallbackEvent::Verified {
                host,
                mode: Mode::Unsubscribe,
                ..
            } => {
                self.site(host).subscription = None;
                tracing::info!("{}: unsubscribed from its hub", self.origin(host));
            }
            CallbackEvent::Denied { host, reason } => {
                tracing::warn!(
                    "{}: the hub denied the subscription ({}); polling the changes feed",
                    self.origin(host),
                    reason.unwrap_or_default()
                );
                self.site(host).subscription = None;
                self.plan_next_poll(host);
            }
            CallbackEvent::Delivery { host, body } => {
                self.site(host).stats.pushes += 1;
                self.run.pushes += 1;
                let site = self.site(host);
                let page_topic = match (&site.changes, &site.page_hub) {
                    (None, Some((_, topic))) => Some(topic.clone()),
                    _ => None,
                };
                if let Some(topic) = page_topic {
                    // The new content of a page topic: the page is fetched at once.
                    self.run.bytes += body.len() as u64;
                    if let Ok(url) = Url::parse(&topic) {
                        tracing::info!("{url}: the hub says it changed");
                        self.due_now(host, &Link::to(&url));
                    }
                    return;
                }
                let r = CoopFetched {
                    status: 200,
                    headers: Vec::new(),
                    size: body.len() as u64,
                    body,
                    record: None,
                };
                self.run.bytes += r.size;
                if let Err(e) = self.changes_answered(host, &r, None, true) {
                    tracing::warn!("{}: pushed document refused: {e}", self.origin(host));
                }
            }
            CallbackEvent::BadSignature { host, why } => {
                self.site(host).stats.bad_signatures += 1;
                tracing::warn!("{}: delivery ignored: {why}", self.origin(host));
            }
            CallbackEvent::Undecodable { host, why } => {
                tracing::warn!("{}: delivery refused: {why}", self.origin(host));
            }
            CallbackEvent::InlineFailed { host, fp, url, why } => {
                self.inline_failed(host, fp, url, &why)
            }
        }
    }

    /// Ends every subscription (the crawl stops): asks each hub, and waits briefly for the
    /// verifications so the hubs stop delivering.
    pub(super) fn coop_unsubscribe_all(&mut self) {
        let Some(server) = self.coop.callback.as_ref() else {
            return;
        };
        let mut asked = Vec::new();
        for (host, site) in &self.coop.sites {
            let Some(sub) = site
                .subscription
                .as_ref()
                .filter(|s| s.verified_at.is_some())
            else {
                continue;
            };
            let (Ok(hub), Ok(topic), Ok(callback)) = (
                Url::parse(&sub.hub),
                Url::parse(&sub.topic),
                Url::parse(&sub.callback),
            ) else {
                continue;
            };
            server.expect(
                *host,
                Expected {
                    topic: sub.topic.clone(),
                    secret: sub.secret.clone(),
                    pending: Some(Mode::Unsubscribe),
                    asked: Some(std::time::Instant::now()),
                    active: false,
                },
            );
            let form = SubscriptionRequest {
                mode: Mode::Unsubscribe,
                callback,
                topic,
                lease_seconds: None,
                secret: None,
            }
            .to_form();
            asked.push((*host, hub, form));
        }
        if asked.is_empty() {
            return;
        }
        let client = self.ctx.client.clone();
        let requests: Vec<(Url, String)> = asked
            .iter()
            .map(|(_, hub, form)| (hub.clone(), form.clone()))
            .collect();
        // Built inside the runtime: a request's timer needs its reactor.
        let results = self.rt.block_on(async move {
            let mut out = Vec::new();
            for (hub, form) in requests {
                out.push(
                    client
                        .post(hub)
                        .timeout(UNSUBSCRIBE_WAIT)
                        .header(
                            reqwest::header::CONTENT_TYPE,
                            "application/x-www-form-urlencoded",
                        )
                        .body(form)
                        .send()
                        .await,
                );
            }
            out
        });
        for ((host, hub, _), r) in asked.iter().zip(results) {
            if let Err(e) = r {
                tracing::warn!("{}: unsubscribing from {hub}: {e}", self.origin(*host));
            }
        }
        let deadline = Instant::now() + UNSUBSCRIBE_WAIT;
        let mut waiting: HashSet<i64> = asked.iter().map(|(h, _, _)| *h).collect();
        while !waiting.is_empty() && Instant::now() < deadline {
            // Other outcomes arriving now are dropped: their requests are made again later.
            if let Ok(Outcome::Callback(e)) = self.rx.recv_timeout(Duration::from_millis(50)) {
                {
                    if let CallbackEvent::Verified {
                        host,
                        mode: Mode::Unsubscribe,
                        ..
                    } = &e
                    {
                        waiting.remove(host);
                    }
                    self.handle_callback(e);
                }
            }
        }
    }

    fn log_coop(
        &mut self,
        at: i64,
        status: Option<u16>,
        size: Option<u64>,
        url: &str,
        elapsed: Duration,
        note: &str,
    ) {
        let job = Queued {
            seq: 0,
            host: 0,
            fp: 0,
            url: url.to_string(),
            depth: 0,
            hops: 0,
            attempts: 0,
            priority: 0.0,
            revisit: false,
        };
        self.log_line(at, status, size, url, &job, None, elapsed, note);
    }

    /// One figure line per cooperating site, for the log at the end.
    pub(super) fn coop_report(&self) {
        for (id, site) in &self.coop.sites {
            let level = site.level(self.s.coop.mode, self.s.coop.failures_to_degrade);
            if level == Level::None && site.stats.meta_requests == 0 {
                continue;
            }
            tracing::info!(
                "{}: cooperation {} (trust {:.2}): {}",
                self.origin(*id),
                level.as_str(),
                site.trust.score(),
                site.stats
            );
        }
    }
}

/// How often metadata polls are looked at: every second of the crawler's time, within 5 ms
/// and 100 ms of real time.
pub(super) fn tick_period() -> Duration {
    crate::clock::real_wait(1000).clamp(Duration::from_millis(5), Duration::from_millis(100))
}

/// Whether a whole-second date `m` (ms) might hide a change after `fetched` in its second.
fn within_second(m: i64, fetched: i64) -> bool {
    m % 1000 == 0 && (m..m + 1000).contains(&fetched)
}
