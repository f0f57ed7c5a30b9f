//! The crawl's cooperation state: a coordinator over owners, each keeping one rule with its
//! own fields private. [`Sites`] (every site's offers and standing; a change is always saved),
//! [`ClaimLedger`] (claims waiting for their pages' visits, and their verdicts),
//! [`HeldAbsences`] (links a complete listing does not name), [`PendingSnapshots`] (the
//! snapshots being read and what their pages must agree with), [`HandedOver`] (pages taken
//! without a live fetch; one false disowns the rest), [`Questions`] (contradictions waiting
//! for the site's feed), [`Popularity`] (stated weights), the listings read in parts
//! ([`super::listing_parts::ListingParts`]) and the [`Sampler`] of checks. The
//! coordinator's decisions live beside it, a file per concern (`listings`, `polls`,
//! `announcements`, `claims`, `batches`, `snapshots`, `push`, `report`); they take the frontier
//! and the refresh schedule as explicit arguments ([`Reach`]) and leave what only the loop can
//! do (queue a link, record a deleted page, start a request) in [`Effects`], so every decision
//! runs without a network or a database. No owner imports this file.

use super::absences::HeldAbsences;
use super::callback::{CallbackServer, Expected};
use super::handed::HandedOver;
use super::ledger::ClaimLedger;
use super::pending::PendingSnapshots;
use super::popularity::Popularity;
use super::questions::Questions;
use super::sampler::Sampler;
use super::shared::{DeltaPlan, Reach, Walk};
use super::site::{CoopConfig, SiteCoop};
use super::sites::Sites;
use super::stated::{self, Arrival};
use crate::ids::{Fp, HostId};
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use url::Url;

/// The crawl's cooperation state.
pub(crate) struct CoopState {
    /// The settings.
    pub(super) config: CoopConfig,
    /// Every site's state.
    pub(super) sites: Sites,
    /// Claims waiting to be checked.
    pub(super) ledger: ClaimLedger,
    /// Deltas planned for pages announced changed.
    pub(super) plans: HashMap<Fp, DeltaPlan>,
    /// Sitemap walks under way.
    pub(super) walks: HashMap<HostId, Walk>,
    /// Sites with a metadata request under way.
    pub(super) polling: HashSet<HostId>,
    /// The WebSub callback server, in push mode.
    pub(super) callback: Option<CallbackServer>,
    /// When polls and subscriptions are looked at next.
    pub(super) next_tick: Option<Instant>,
    /// The sampling of checks.
    pub(super) sampler: Sampler,
    /// Snapshots being read.
    pub(super) snapshots: PendingSnapshots,
    /// Pages handed over and not fetched live since.
    pub(super) handed: HandedOver,
    /// Stated popularity.
    pub(super) popularity: Popularity,
    /// Links held because a complete listing does not name them.
    pub(super) absences: HeldAbsences,
    /// Contradictions of what a site handed over, waiting for its feed.
    pub(super) questions: Questions,
    /// Blind requests for well-known paths, once a run each.
    pub(super) probes: super::probes::Probes,
    /// The parts of listings in parts: versions held, reads under way.
    pub(super) listing_parts: super::listing_parts::ListingParts,
    /// The hosts of the hubs subscribed to (`--hub-allow`; empty: any).
    hub_allow: Vec<String>,
    /// The IndexNow endpoint, when the crawl serves one.
    pub(super) indexnow: Option<super::indexnow_server::IndexNowServer>,
}

impl CoopState {
    /// No site known yet; `seed` drives the sampling of checks.
    pub(crate) fn new(config: CoopConfig, seed: u64) -> CoopState {
        CoopState {
            config,
            sites: Sites::default(),
            ledger: ClaimLedger::default(),
            plans: HashMap::new(),
            walks: HashMap::new(),
            polling: HashSet::new(),
            callback: None,
            next_tick: None,
            sampler: Sampler::new(seed),
            snapshots: PendingSnapshots::default(),
            handed: HandedOver::default(),
            popularity: Popularity::default(),
            absences: HeldAbsences::default(),
            questions: Questions::default(),
            probes: Default::default(),
            listing_parts: Default::default(),
            hub_allow: Vec::new(),
            indexnow: None,
        }
    }

    /// Subscribes only to hubs on these hosts (`.example.com`: the domain and its
    /// subdomains); none named, any hub.
    pub(crate) fn allow_hubs(&mut self, hosts: Vec<String>) {
        self.hub_allow = hosts;
    }

    /// Whether the hub at `hub` may be subscribed to: an http(s) URL on a host the operator
    /// allows. Where it may connect is the network guard's to say, as for any request.
    pub(super) fn hub_allowed(&self, hub: &Url) -> bool {
        let Some(host) = hub.host_str().map(str::to_ascii_lowercase) else {
            return false;
        };
        matches!(hub.scheme(), "http" | "https")
            && (self.hub_allow.is_empty()
                || self.hub_allow.iter().any(|a| match a.strip_prefix('.') {
                    Some(domain) => host == domain || host.ends_with(a.as_str()),
                    None => host == *a,
                }))
    }

    /// The usage preferences `host`'s agent states, if any.
    pub(crate) fn usage_of(&self, host: HostId) -> webcoop_protocol::usage::Prefs {
        self.sites
            .get(host)
            .and_then(|s| s.usage.as_deref())
            .map(|u| {
                // A statement that cannot be read might be a refusal: it refuses everything.
                webcoop_protocol::usage::Prefs::parse_aipref(u, &mut Vec::new())
                    .unwrap_or(webcoop_protocol::usage::Prefs::REFUSE_ALL)
            })
            .unwrap_or_default()
    }

    /// Takes the sites' saved state (`(host, origin, json)` rows); an unreadable one is
    /// discovered again.
    pub(crate) fn load(&mut self, rows: Vec<(HostId, String, String)>) {
        self.sites.load(rows);
        for (host, site) in self.sites.iter() {
            if !site.part_versions.is_empty() {
                self.listing_parts.restore(host, &site.part_versions);
            }
        }
    }

    /// The WebSub callback server to subscribe with (push mode). Subscriptions of an earlier
    /// run stay valid: their deliveries are expected.
    pub(crate) fn attach_callback(&mut self, server: CallbackServer) {
        for (id, site) in self.sites.iter() {
            if let Some(sub) = site
                .subscription
                .as_ref()
                .filter(|s| s.verified_at.is_some())
            {
                server.expect(
                    id,
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
        self.sites.site(host)
    }

    /// Every site's figures added up.
    pub(crate) fn totals(&self) -> super::site::CoopStats {
        self.sites.totals()
    }

    /// A site's state, if it has any.
    pub(crate) fn site_state(&self, host: HostId) -> Option<&SiteCoop> {
        self.sites.get(host)
    }

    /// Whether `host`'s claims are believed.
    pub(super) fn believed(&self, host: HostId) -> bool {
        self.sites.believed(host, &self.config)
    }

    /// True with probability `p`, for the sampling of checks.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.sampler.chance(p)
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
                .get(host)
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

    /// The page `url` stands for, normalised as links are, if `host`'s documents may state
    /// it; counted and logged when they may not (`super::stated`).
    pub(crate) fn stated_url(
        &mut self,
        r: &Reach<'_>,
        host: HostId,
        url: &Url,
        arrival: Arrival,
    ) -> Option<Url> {
        let origin = r.origin(host);
        let rules = r.frontier.rules(host, Instant::now());
        match stated::refusal(url, &origin, r.policy, rules, arrival) {
            Ok(u) => Some(u),
            Err(why) => {
                let stats = &mut self.site(host).stats;
                if why == stated::NOT_OF_THE_SITE {
                    stats.foreign += 1;
                } else {
                    stats.refused_urls += 1;
                }
                tracing::debug!(
                    "{origin}: states {}, not taken: {why}",
                    stated::redacted(url)
                );
                None
            }
        }
    }

    /// Takes `share`, the site's stated popularity of page `fp`, as a weight (see
    /// `super::popularity`); a page whose place it raises is left to the loop to reorder.
    pub(crate) fn stated_popularity(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        fp: Fp,
        share: f64,
    ) {
        let Some(site) = self.sites.get(host) else {
            return;
        };
        let known = r.frontier.seen_len();
        if let Some(w) = self
            .popularity
            .stated((host, site), fp, share, &self.config, known)
        {
            r.out.boosts.push((host, fp, w));
        }
    }

    /// The weight page `fp`'s stated popularity adds, if its site states one.
    #[cfg(test)]
    pub(crate) fn popularity_of(&self, fp: Fp) -> f64 {
        self.popularity.of(fp)
    }

    /// Page `fp`'s weight in the refresh schedule, from its link `importance`.
    pub(crate) fn refresh_weight(&self, host: HostId, fp: Fp, importance: f64) -> f64 {
        self.popularity
            .refresh_weight((host, self.sites.get(host)), fp, importance, &self.config)
    }

    /// Whether a host's announcements stand in for polling its pages.
    pub(crate) fn covers(&self, host: HostId) -> bool {
        self.sites.covers(host, &self.config)
    }

    /// The hosts whose announcements stand in for polling their pages.
    pub(crate) fn covered_hosts(&self) -> Vec<HostId> {
        self.sites
            .iter()
            .filter(|(_, s)| s.covers(&self.config))
            .map(|(id, _)| id)
            .collect()
    }

    /// The sites' cooperation to save with the next batch.
    pub(crate) fn take_unsaved(&mut self) -> Vec<(HostId, String)> {
        self.sites.take_unsaved()
    }
}
