//! Reading what a site lists: robots.txt's pointers at discovery, robots.rdf, and sitemap
//! walks whose dates are judged before any is acted on.

use super::discovery::{delta_url, is_changes_endpoint, link_header, robots_txt_pointers};
use super::pending::Listed;
use super::poll_rate::pace_from_dates;
use super::shared::{Reach, Reading, Said, Walk};
use super::state::CoopState;
use super::stated::Arrival;
use super::trust::{lastmods_stamped, shared_moment};
use super::{CoopJob, CoopMode, MetaError, MetaKind};
use crate::clock::now_ms;
use crate::fetch::outcome::CoopFetched;
use crate::ids::HostId;
use url::Url;
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_protocol::sitemap::{PendingSitemap, SitemapWalk, WalkLimits};
use webcoop_protocol::web_feed;

/// Sitemap files of one walk that may fail before the rest of the walk is dropped.
const MAX_BAD_SITEMAPS: usize = 10;

impl CoopState {
    /// robots.txt was read: look for what the site offers.
    pub(crate) fn discover(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        status: Option<u16>,
        body: &[u8],
    ) {
        if self.config.mode == CoopMode::Off {
            return;
        }
        let origin = r.origin(host);
        let Ok(root) = Url::parse(&origin) else {
            return;
        };
        let robots_url = root.join("/robots.txt").unwrap_or_else(|_| root.clone());
        let pointers = if status.is_some_and(|s| (200..300).contains(&s)) {
            robots_txt_pointers(&robots_url, body)
        } else {
            Default::default()
        };
        let first = !self.sites.get(host).is_some_and(|s| s.discovered);
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
        // Only what robots.txt names is asked for now; the well-known places are probed
        // after the site's pages, once a run (a 404 in nearly every site's log otherwise, and
        // each new host's first page a delay later for each).
        let Some(url) = pointers.robots_rdf else {
            if let Ok(url) = root.join("/robots.rdf") {
                self.probe(r, host, MetaKind::Listing, url);
            }
            self.start_walks(r, host);
            return;
        };
        {
            // On a first visit the site's pages wait for its listing: a page fetched (or
            // queued by the links of one) before robots.rdf names a snapshot would be a
            // request the snapshot saves, and one taken before robots.rdf states what people
            // read would be taken by its links alone.
            let snapshot = self.config.snapshots && self.config.mode >= CoopMode::Meta;
            let popularity =
                self.config.popularity_weight > 0.0 && self.config.mode >= CoopMode::Listing;
            if first && (snapshot || popularity) && !r.frontier.is_shared() {
                r.frontier.hold_pages(host, true);
            }
            self.fetch_listing(r, host, url);
        }
    }

    /// Changes a listing read again claimed (its dates or validators moved): counted as
    /// announced, as the changes feed's and a feed's entries are.
    fn count_announced(&mut self, host: HostId, reading: Reading, claimed: usize) {
        if reading == Reading::Update && claimed > 0 {
            self.site(host).stats.announced += claimed as u64;
        }
    }

    /// Probes `host` for the document of `kind` at `url`, nothing having named it: after its
    /// pages, once a run, and only once `--probe-after` of them were fetched.
    fn probe(&mut self, r: &mut Reach<'_>, host: HostId, kind: MetaKind, url: Url) {
        if !self.probes.send(host, kind, &url) {
            return;
        }
        r.frontier.push_probe(
            host,
            CoopJob::Fetch {
                kind,
                url,
                etag: None,
                last_modified: None,
            },
        );
    }

    /// Asks for the whole robots.rdf (no validators): at discovery and for a resync.
    pub(crate) fn fetch_listing(&mut self, r: &mut Reach<'_>, host: HostId, url: Url) {
        r.frontier.push_coop(
            host,
            CoopJob::Fetch {
                kind: MetaKind::Listing,
                url,
                etag: None,
                last_modified: None,
            },
        );
        self.polling.insert(host);
    }

    pub(crate) fn start_walks(&mut self, r: &mut Reach<'_>, host: HostId) {
        let origin = r.origin(host);
        let Ok(root) = Url::parse(&origin) else {
            return;
        };
        let mut roots: Vec<Url> = self
            .sites
            .get(host)
            .map(|s| {
                // A sitemap found to be a feed is read as one, on its own pace.
                s.sitemaps
                    .iter()
                    .filter_map(|u| Url::parse(u).ok())
                    .filter(|u| !s.feeds.follows(u))
                    .collect()
            })
            .unwrap_or_default();
        let (declared, found) = self.sites.get(host).map_or((false, false), |s| {
            (!s.sitemaps.is_empty(), s.sitemap_found)
        });
        // Nothing named: `/sitemap.xml` once found is asked as any named sitemap, else probed.
        let mut probing = false;
        if roots.is_empty()
            && !declared
            && let Ok(u) = root.join("/sitemap.xml")
        {
            probing = !found;
            if probing && !self.probes.send(host, MetaKind::Sitemap, &u) {
                return;
            }
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
            .sites
            .get(host)
            .map(|s| s.sitemap_validators.clone())
            .unwrap_or_default();
        self.walks.insert(
            host,
            Walk {
                walk,
                listed: Vec::new(),
                failures: 0,
            },
        );
        for (i, p) in pending.into_iter().enumerate() {
            let (etag, last_modified) = if i == 0 {
                validators.clone()
            } else {
                (None, None)
            };
            let job = CoopJob::Fetch {
                kind: MetaKind::Sitemap,
                url: p.url,
                etag,
                last_modified,
            };
            if probing {
                r.frontier.push_probe(host, job);
            } else {
                r.frontier.push_coop(host, job);
            }
        }
        for extra in roots.into_iter().skip(1) {
            r.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::Sitemap,
                    url: extra,
                    etag: None,
                    last_modified: None,
                },
            );
        }
        self.polling.insert(host);
    }

    pub(crate) fn listing_answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        got: &CoopFetched,
        secs: Option<f64>,
    ) -> Result<(), MetaError> {
        let doc = robots_rdf::parse(&got.body, &RdfLimits::default()).map_err(|source| {
            MetaError::Listing {
                url: url.clone(),
                source: Box::new(source),
            }
        })?;
        let last_poll = self.sites.get(host).and_then(|s| s.last_poll);
        let first = !self.sites.get(host).is_some_and(|s| s.discovered);
        {
            let site = self.site(host);
            site.listing = Some(url.to_string());
            site.listing_validators = (
                got.header("etag").map(str::to_string),
                got.header("last-modified").map(str::to_string),
            );
            site.discovered = true;
            site.last_poll = Some(now_ms());
            // What the site's agent says its content may be used for: only ever adds to what
            // robots.txt says (the most restrictive wins), so a site can restrict only itself.
            site.usage = doc.channel.content_usage.clone();
        }
        self.take_offers(r, host, url, got, &doc);
        if !doc.channel.parts.is_empty() {
            self.listing_index(r, host, doc, (first, secs));
            return Ok(());
        }
        self.site(host).listed_urls = doc.items.len() as u64;
        self.take_listing(r, host, &doc, (first, last_poll, secs));
        Ok(())
    }

    /// robots.rdf is an index of parts: the parts to read are asked for (every one on a first
    /// reading or a resync, else those whose version moved).
    fn listing_index(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        doc: robots_rdf::RobotsRdf,
        (first, secs): (bool, Option<f64>),
    ) {
        let origin = r.origin(host);
        let resyncing = self.sites.get(host).is_some_and(|s| s.resyncing);
        let whole = if first || resyncing {
            Some(first)
        } else {
            self.listing_parts.assembling(host)
        };
        let parts = doc.channel.parts.len();
        let named: u64 = doc.channel.parts.iter().map(|p| p.items).sum();
        self.site(host).listed_urls = named;
        let (asked, foreign) = self.listing_parts.plan(host, &origin, doc, whole);
        // Parts no longer named are forgotten (and saved so).
        let held = self.listing_parts.held(host);
        if self
            .sites
            .get(host)
            .is_some_and(|s| s.part_versions != held)
        {
            self.site(host).part_versions = held;
        }
        for url in foreign {
            self.site(host).stats.foreign += 1;
            tracing::warn!("{origin}: robots.rdf names a part on another origin ({url}); not read");
        }
        if whole.is_none()
            && let Some(secs) = secs
        {
            // A part whose version moved stands for a change at least.
            self.site(host).count.observe(asked.len() as u64, secs);
        }
        if first {
            tracing::info!(
                "{origin}: robots.rdf in {parts} parts naming {named} URLs; {} to read",
                asked.len()
            );
        }
        for url in asked {
            r.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::ListingPart,
                    url,
                    etag: None,
                    last_modified: None,
                },
            );
        }
        if let Some((index, first)) = self.listing_parts.complete(host) {
            let last_poll = self.sites.get(host).and_then(|s| s.last_poll);
            self.take_listing(r, host, &index, (first, last_poll, None));
        }
    }

    /// A part of robots.rdf answered (`got`) or failed (`None`): taken at once when the
    /// listing is read again, with the others once the last arrived on a first reading.
    pub(crate) fn listing_part_answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        got: Option<&CoopFetched>,
    ) {
        let doc = got.and_then(
            |g| match robots_rdf::parse(&g.body, &RdfLimits::default()) {
                Ok(doc) => Some(doc),
                Err(e) => {
                    tracing::warn!("{url}: {e}");
                    None
                }
            },
        );
        let last_poll = self.sites.get(host).and_then(|s| s.last_poll);
        let arrived = self.listing_parts.arrived(host, url, doc);
        if matches!(
            arrived,
            super::listing_parts::Arrived::Whole(..) | super::listing_parts::Arrived::Part(_)
        ) {
            self.site(host).part_versions = self.listing_parts.held(host);
        }
        match arrived {
            super::listing_parts::Arrived::Wait | super::listing_parts::Arrived::Unasked => {}
            super::listing_parts::Arrived::Whole(doc, failed, first) => {
                if failed > 0 {
                    tracing::warn!(
                        "{}: {failed} parts of robots.rdf could not be read; read again at the next change of the index",
                        r.origin(host)
                    );
                }
                self.take_listing(r, host, &doc, (first, last_poll, None));
            }
            super::listing_parts::Arrived::Part(doc) => {
                self.take_listing(r, host, &doc, (false, last_poll, None));
            }
        }
    }

    /// The items of a listing read whole (or of one part read again): each said of its page,
    /// a snapshot taken instead on a first reading.
    fn take_listing(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        doc: &robots_rdf::RobotsRdf,
        (first, last_poll, secs): (bool, Option<i64>, Option<f64>),
    ) {
        let origin = r.origin(host);
        let reading = if first {
            Reading::First
        } else {
            Reading::Update
        };
        let mut moved = 0;
        let changes = self.sites.get(host).and_then(|s| s.changes.clone());
        let changes = changes.and_then(|c| Url::parse(&c).ok());
        let mut list = Vec::with_capacity(doc.items.len());
        for item in &doc.items {
            let Some(page) = self.stated_url(r, host, &item.url, Arrival::Named) else {
                continue;
            };
            let plan = item
                .delta
                .clone()
                .filter(|d| self.speaks_for(r, host, d))
                .or_else(|| changes.as_ref().and_then(|c| delta_url(c, &page)));
            let modified = item.modified.timestamp_millis();
            if last_poll.is_some_and(|t| modified > t) {
                moved += 1;
            }
            list.push(Listed {
                url: page,
                modified,
                etag: item.etag.as_ref().map(ToString::to_string),
                delta: plan,
                size: item.size,
                popularity: item
                    .extensions
                    .get("popularity")
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|p| (0.0..=1.0).contains(p)),
            });
        }
        let resyncing = std::mem::take(&mut self.site(host).resyncing);
        let list = if first || resyncing {
            let snapshot = (
                doc.channel.snapshot.as_ref(),
                doc.channel.snapshot_max_record,
                doc.channel.complete,
            );
            match self.take_snapshot(r, host, snapshot, list, reading) {
                Ok(()) => Vec::new(),
                Err(list) => {
                    r.frontier.hold_pages(host, false);
                    list
                }
            }
        } else {
            list
        };
        let claimed = list
            .iter()
            .filter(|l| self.listed(r, host, l.said(), reading))
            .count();
        self.count_announced(host, reading, claimed);
        if let Some(secs) = secs {
            self.site(host).count.observe(moved, secs);
        }
        if first {
            let dates: Vec<i64> = doc.items.iter().map(|i| i.modified.timestamp()).collect();
            self.pace_from_listing(r, host, &dates);
            let level = self
                .sites
                .get(host)
                .map(|s| s.level(self.config.mode, self.config.failures_to_degrade))
                .unwrap_or_default();
            tracing::info!(
                "{origin}: robots.rdf lists {} URLs; cooperation: {}",
                doc.items.len(),
                level.as_str()
            );
        }
    }

    /// What robots.rdf offers beyond its list: the changes feed (with the cursor to start
    /// from) and the hub, from its channel or its `Link` header, where the site speaks for them.
    fn take_offers(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        got: &CoopFetched,
        doc: &robots_rdf::RobotsRdf,
    ) {
        let changes = doc
            .channel
            .changes
            .as_ref()
            .filter(|c| is_changes_endpoint(c))
            .filter(|c| self.speaks_for(r, host, c))
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
            .filter(|h| self.speaks_for(r, host, h))
            .map(Url::to_string);
        self.site(host).hub = hub;
        if let Some(hub) = got
            .header("link")
            .map(|v| link_header(url, v))
            .and_then(|links| links.into_iter().find(|(_, rel)| rel == "hub"))
            .filter(|(h, _)| self.speaks_for(r, host, h))
        {
            let site = self.site(host);
            if site.hub.is_none() {
                site.hub = Some(hub.0.to_string());
            }
        }
    }

    /// A sitemap file of a walk answered (or failed: `got` is none); the walk goes on with
    /// the files it names, and once none is left, its entries are acted on.
    pub(crate) fn sitemap_fed(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        got: Option<(&Url, &CoopFetched)>,
    ) {
        let Some(mut w) = self.walks.remove(&host) else {
            return;
        };
        let problems_before = w.walk.problems().len();
        match got {
            Some((url, got)) if self.reads_feeds() && web_feed::sniff(&got.body) => {
                self.sitemap_feed(r, host, url, got);
            }
            Some((url, got)) => self.feed_walk(host, &mut w, url, got),
            None => {}
        }
        if got.is_none() || w.walk.problems().len() > problems_before {
            w.failures += 1;
        }
        // A site whose sitemaps keep failing (gzip bombs, garbage) costs a bounded amount of
        // work: after so many bad files the rest of its walk is dropped.
        if w.failures >= MAX_BAD_SITEMAPS {
            let queued = r.frontier.drop_coop(host, |job| {
                matches!(
                    job,
                    CoopJob::Fetch {
                        kind: MetaKind::Sitemap,
                        ..
                    }
                )
            });
            let unqueued = std::iter::from_fn(|| w.walk.next_fetch()).count();
            if queued + unqueued > 0 {
                tracing::warn!(
                    "{}: {} sitemap files could not be read; the other {} of the walk are dropped",
                    r.origin(host),
                    w.failures,
                    queued + unqueued
                );
            }
        }
        while let Some(p) = w.walk.next_fetch() {
            r.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::Sitemap,
                    url: p.url,
                    etag: None,
                    last_modified: None,
                },
            );
        }
        if r.frontier.host(host).is_some_and(|h| h.coop_waiting()) {
            self.walks.insert(host, w);
        } else {
            self.walk_over(r, host, w);
        }
    }

    /// One sitemap file's entries added to its walk (no more than a host may queue); the
    /// root's validators kept for the next poll.
    fn feed_walk(&mut self, host: HostId, w: &mut Walk, url: &Url, got: &CoopFetched) {
        let pending = PendingSitemap {
            url: url.clone(),
            depth: 0,
        };
        let is_root = self
            .sites
            .get(host)
            .is_some_and(|s| s.sitemaps.first().is_none_or(|f| f == url.as_str()));
        let room = (crate::frontier::MAX_QUEUED_PER_HOST as usize).saturating_sub(w.listed.len());
        w.listed
            .extend(w.walk.feed(&pending, &got.body).into_iter().take(room));
        if is_root {
            self.site(host).sitemap_validators = (
                got.header("etag").map(str::to_string),
                got.header("last-modified").map(str::to_string),
            );
        }
    }

    /// The walk is over: its dates are judged before any is acted on, so a sitemap that
    /// stamps every URL does not send the crawler after every page first.
    fn walk_over(&mut self, r: &mut Reach<'_>, host: HostId, w: Walk) {
        let dates: Vec<i64> = w
            .listed
            .iter()
            .filter_map(|e| e.lastmod.map(|t| t.timestamp()))
            .collect();
        let moment = shared_moment(&dates);
        let origin = r.origin(host);
        let c = self.config;
        let site = self.site(host);
        let first = !site.discovered;
        let reading = if first {
            Reading::First
        } else {
            Reading::Update
        };
        let stamped = lastmods_stamped(site.sitemap_moment, moment);
        site.sitemap_moment = moment;
        site.discovered = true;
        site.last_poll = Some(now_ms());
        if stamped {
            tracing::info!("{origin}: sitemap lastmod stamped on every URL; not trusted");
            site.trust.refute(5.0);
        }
        site.sitemap_dates = !dates.is_empty() && !stamped;
        site.sitemap_found |= !w.listed.is_empty();
        if first && !stamped && moment.is_none() {
            self.pace_from_listing(r, host, &dates);
        }
        let mut claimed = 0;
        for e in &w.listed {
            let Some(page) = self.stated_url(r, host, &e.loc, Arrival::Named) else {
                continue;
            };
            let lastmod = e.lastmod.filter(|_| !stamped);
            let said = Said {
                url: &page,
                modified: lastmod.map(|t| t.timestamp_millis()),
                etag: None,
                delta: None,
                inline: None,
                popularity: None,
            };
            if self.listed(r, host, said, reading) {
                claimed += 1;
            }
        }
        self.count_announced(host, reading, claimed);
        if first {
            let level = self.site(host).level(c.mode, c.failures_to_degrade);
            // A sitemap answered 404 (or unreadable) is no listing: said as such, not as one
            // that lists nothing.
            let read = w.walk.fetched().saturating_sub(w.failures);
            if read == 0 {
                tracing::info!(
                    "{origin}: no sitemap ({} asked, none read); cooperation: {}",
                    w.walk.fetched(),
                    level.as_str()
                );
            } else {
                tracing::info!(
                    "{origin}: sitemaps list {} URLs ({read} files read{}); cooperation: {}",
                    w.listed.len(),
                    if w.failures > 0 {
                        format!(", {} failed", w.failures)
                    } else {
                        String::new()
                    },
                    level.as_str()
                );
            }
        }
    }

    /// A site met for the first time: its listing's dates (Unix seconds) set the pace of the
    /// first polls.
    pub(crate) fn pace_from_listing(&mut self, r: &mut Reach<'_>, host: HostId, dates: &[i64]) {
        let Some((changes, secs)) = pace_from_dates(dates, now_ms().div_euclid(1000)) else {
            return;
        };
        let origin = r.origin(host);
        let c = self.config;
        let site = self.site(host);
        site.count.observe(changes, secs);
        tracing::info!(
            "{origin}: {changes} pages modified in the {:.0} h before first contact; metadata polled every {:.0} s to begin with",
            secs / 3600.0,
            site.poll_interval(&c)
        );
    }
}
