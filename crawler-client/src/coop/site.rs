//! What the crawler knows of one site's cooperation: where its documents are, how far its
//! changes were followed, its subscription, its trust, and what using it cost. Saved with the
//! host, so a restart continues the changes feed where it stopped and keeps the subscription.

use super::poll_rate::{ChangeCount, poll_interval};
use super::trust::Trust;
use super::{CoopMode, Level};
use serde::{Deserialize, Serialize};

/// A WebSub subscription of the crawler.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Subscription {
    /// The hub.
    pub(crate) hub: String,
    /// The topic (the changes feed).
    pub(crate) topic: String,
    /// The callback given to the hub.
    pub(crate) callback: String,
    /// The HMAC key of deliveries.
    pub(crate) secret: String,
    /// When the hub confirmed it (ms); none while the request waits for verification.
    pub(crate) verified_at: Option<i64>,
    /// When the lease ends (ms).
    pub(crate) lease_until: Option<i64>,
    /// When the request was sent (ms).
    pub(crate) requested_at: i64,
}

/// What cooperation cost and brought, for `status` and the comparison of modes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CoopStats {
    /// Metadata requests (robots.rdf, sitemaps, changes feed pages, hub requests).
    pub(crate) meta_requests: u64,
    /// Bytes of their bodies as received.
    pub(crate) meta_bytes: u64,
    /// Metadata polls answered "nothing new" (304).
    pub(crate) not_modified: u64,
    /// Changes announced by the site (feed entries, listed dates that moved).
    pub(crate) announced: u64,
    /// Deltas applied and verified (fetched or pushed inline).
    pub(crate) deltas: u64,
    /// Deltas that did not verify or could not be used, replaced by a full fetch.
    pub(crate) delta_fallbacks: u64,
    /// Deliveries pushed by the hub.
    pub pushes: u64,
    /// Deliveries refused for a bad signature.
    pub(crate) bad_signatures: u64,
    /// "Unchanged" pages fetched anyway, to check the site.
    pub(crate) checks: u64,
    /// URLs the site's documents named on another origin it does not speak for (ignored).
    #[serde(default)]
    pub(crate) foreign: u64,
    /// Pages taken from a snapshot of the site instead of fetched one by one.
    #[serde(default)]
    pub(crate) from_snapshot: u64,
    /// Pages of a snapshot that robots.rdf lists with another digest (not taken).
    #[serde(default)]
    pub(crate) refuted: u64,
    /// Changed pages taken from a batch of changes instead of fetched one by one.
    #[serde(default)]
    pub(crate) from_batch: u64,
    /// URLs the site's documents stated that a link could not be (credentials, out of scope,
    /// disallowed by robots.txt): not taken.
    #[serde(default)]
    pub(crate) refused_urls: u64,
    /// Links held unfetched because the site's complete listing does not name them.
    #[serde(default)]
    pub(crate) held: u64,
    /// Blind requests for a well-known path nothing named (`/robots.rdf`, `/sitemap.xml`),
    /// made after the site's pages, at most once each a run.
    #[serde(default)]
    pub(crate) probes: u64,
}

impl std::fmt::Display for CoopStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} metadata requests ({} bytes, {} not modified), {} changes announced, {} pushes, {} deltas ({} fell back), {} checks, {} foreign URLs ignored, {} pages from a snapshot ({} refuted), {} from batches, {} stated URLs refused, {} unlisted links held, {} blind probes",
            self.meta_requests,
            self.meta_bytes,
            self.not_modified,
            self.announced,
            self.pushes,
            self.deltas,
            self.delta_fallbacks,
            self.checks,
            self.foreign,
            self.from_snapshot,
            self.refuted,
            self.from_batch,
            self.refused_urls,
            self.held,
            self.probes
        )
    }
}

/// One site's cooperation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteCoop {
    /// Discovery ran (robots.txt read, the documents looked for).
    pub(crate) discovered: bool,
    /// URLs its robots.rdf listed at the last reading.
    #[serde(default)]
    pub(crate) listed_urls: u64,
    /// Sitemaps named in robots.txt or found at `/sitemap.xml`.
    pub(crate) sitemaps: Vec<String>,
    /// Other origins the site's robots.txt delegates to (its `Sitemap:` and `Robots-RDF:`
    /// lines): the only places besides its own origin its documents may send us.
    #[serde(default)]
    pub(crate) delegates: Vec<String>,
    /// The robots.rdf listing.
    pub(crate) listing: Option<String>,
    /// The changes endpoint (answers `?since=`).
    pub(crate) changes: Option<String>,
    /// The WebSub hub of the changes feed.
    pub(crate) hub: Option<String>,
    /// Sequence number of the last change applied.
    pub(crate) cursor: Option<u64>,
    /// The usage preferences the site's agent states (aipref form) in its listing or feed.
    #[serde(default)]
    pub(crate) usage: Option<String>,
    /// The changes feed no longer reaches back to the cursor (410): the next reading of the
    /// listing may take the site's snapshot, as a first visit does.
    #[serde(default)]
    pub(crate) resyncing: bool,
    /// A batch of its changes did not read: they are asked without content from then on.
    #[serde(default)]
    pub(crate) no_batches: bool,
    /// Catching up: the crawl (re)started since its changes were last followed to the head, or
    /// the feed says more follow. Its changes then come with the pages' content (a batch);
    /// once caught up, changed pages come as deltas where the mode uses them.
    #[serde(skip, default = "yes")]
    pub(crate) catching_up: bool,
    /// Validators of the listing (`ETag`, `Last-Modified`) for conditional polls.
    pub(crate) listing_validators: (Option<String>, Option<String>),
    /// The version of each part of a listing in parts as last read, by URL: after a restart
    /// only the parts that moved since are read again.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) part_versions: std::collections::BTreeMap<String, String>,
    /// Validators of the root sitemap.
    pub(crate) sitemap_validators: (Option<String>, Option<String>),
    /// `ETag` of the last changes page (a 304 when nothing is new).
    pub(crate) changes_etag: Option<String>,
    /// Whether `/sitemap.xml`, named by nothing, was found listing pages (asked for again as a
    /// named sitemap is, no longer probed).
    #[serde(default)]
    pub(crate) sitemap_found: bool,
    /// Whether the sitemaps' `lastmod` values were found usable (a walk gave dates).
    pub(crate) sitemap_dates: bool,
    /// A hub and topic named by one of the site's pages, subscribed to when the site has no
    /// changes feed: a delivery makes that page due.
    #[serde(default)]
    pub(crate) page_hub: Option<(String, String)>,
    /// The moment every `lastmod` of the last walk shared, if they shared one.
    #[serde(default)]
    pub(crate) sitemap_moment: Option<i64>,
    /// When the metadata was last polled (ms).
    pub(crate) last_poll: Option<i64>,
    /// When it is next due (ms).
    pub(crate) next_poll: Option<i64>,
    /// The site's pace of change.
    pub(crate) count: ChangeCount,
    /// How far its claims are believed.
    pub trust: Trust,
    /// Consecutive failed metadata requests.
    pub(crate) failures: u32,
    /// Backup polls in a row that found nothing the hub had not pushed: each one doubles the
    /// time to the next.
    #[serde(default)]
    pub(crate) quiet_backups: u32,
    /// The subscription, if any.
    pub(crate) subscription: Option<Subscription>,
    /// The site's feeds (RSS, Atom, JSON Feed), as its pages name them.
    #[serde(default)]
    pub(crate) feeds: super::feeds::SiteFeeds,
    /// The site's IndexNow keys and the URLs waiting for their proof.
    #[serde(default)]
    pub(crate) indexnow: super::indexnow::SiteIndexNow,
    /// Costs and gains.
    pub stats: CoopStats,
}

/// Knobs of cooperation.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CoopConfig {
    /// The most the crawler may use.
    pub mode: CoopMode,
    /// Largest acceptable probability that the picture of a site is outdated.
    pub(crate) max_outdated: f64,
    /// Shortest and longest time between metadata polls, seconds.
    pub(crate) poll_min: f64,
    /// Longest time between metadata polls, seconds.
    pub(crate) poll_max: f64,
    /// Time between polls of the changes feed while a hub pushes them, seconds, at first and
    /// after the hub missed something.
    pub(crate) backup_poll: f64,
    /// The longest that time grows to while the hub misses nothing, seconds.
    #[serde(default = "backup_poll_max")]
    pub(crate) backup_poll_max: f64,
    /// Trust below which a site's claims are ignored.
    pub trust_min: f64,
    /// Share of pages announced unchanged that are fetched anyway to check the claim.
    pub(crate) check_share: f64,
    /// Weight of a site's stated popularity in the order of its pages and their refresh.
    #[serde(default = "one")]
    pub(crate) popularity_weight: f64,
    /// Lease asked of hubs, seconds.
    pub(crate) lease_secs: u64,
    /// Failed metadata requests in a row after which the site is polled like any other.
    pub failures_to_degrade: u32,
    /// Whether deltas are used where the mode allows them (false: push without deltas, for
    /// the bench's comparison).
    #[serde(default = "yes")]
    pub(crate) deltas: bool,
    /// Whether a snapshot of the whole site a listing names is fetched on a first visit.
    #[serde(default = "yes")]
    pub(crate) snapshots: bool,
    /// Whether the changes of a believed site are asked with their pages' content (batches).
    #[serde(default = "yes")]
    pub(crate) batches: bool,
}

fn yes() -> bool {
    true
}

fn one() -> f64 {
    1.0
}

fn backup_poll_max() -> f64 {
    CoopConfig::default().backup_poll_max
}

impl CoopConfig {
    /// Whether changed pages are asked for (or taken pushed) as deltas.
    pub(crate) fn uses_deltas(&self) -> bool {
        self.mode >= CoopMode::Delta && self.deltas
    }
}

impl Default for CoopConfig {
    fn default() -> Self {
        CoopConfig {
            mode: CoopMode::Push,
            max_outdated: 0.05,
            poll_min: 1.0,
            poll_max: 3_600.0,
            backup_poll: 600.0,
            backup_poll_max: 21_600.0,
            trust_min: 0.5,
            check_share: 0.02,
            popularity_weight: 1.0,
            lease_secs: 86_400,
            failures_to_degrade: 2,
            deltas: true,
            snapshots: true,
            batches: true,
        }
    }
}

impl SiteCoop {
    /// The cooperation in use under `mode`.
    pub fn level(&self, mode: CoopMode, failures_to_degrade: u32) -> Level {
        if mode == CoopMode::Off || self.failures >= failures_to_degrade {
            return Level::None;
        }
        let pushed = self
            .subscription
            .as_ref()
            .is_some_and(|s| s.verified_at.is_some());
        match () {
            _ if self.changes.is_some() && pushed && mode >= CoopMode::Push => Level::Push,
            _ if self.changes.is_some() && mode >= CoopMode::Delta => Level::Delta,
            _ if self.changes.is_some() && mode >= CoopMode::Meta => Level::Changes,
            _ if self.listing.is_some() => Level::Listing,
            _ if self.sitemap_dates => Level::Sitemap,
            _ if self.indexnow.proved() && mode >= CoopMode::Meta => Level::IndexNow,
            _ if self.feeds.any_read() && mode >= CoopMode::Meta => Level::Feed,
            _ => Level::None,
        }
    }

    /// Whether the site's announcements stand in for polling its pages: it offers dated
    /// metadata, it answers, and it is believed.
    /// A feed lists the newest pages only: it stands in for polling those, one by one, and
    /// never for the whole site.
    pub(crate) fn covers(&self, c: &CoopConfig) -> bool {
        c.mode >= CoopMode::Meta
            && self.level(c.mode, c.failures_to_degrade) > Level::Feed
            && self.trust.believed(c.trust_min)
    }

    /// Seconds until the next metadata poll.
    pub(crate) fn poll_interval(&self, c: &CoopConfig) -> f64 {
        if self.failures >= c.failures_to_degrade {
            // Down: try again now and then, to notice it is back.
            return c.poll_max.min(60.0).max(c.poll_min);
        }
        if self.level(c.mode, c.failures_to_degrade) == Level::Push {
            // The hub tells of every change; polls only guard against it going silent, and
            // the longer it has missed nothing the rarer they need to be.
            let grown = c.backup_poll * 2f64.powi(self.quiet_backups.min(30) as i32);
            return grown.min(c.backup_poll_max.max(c.backup_poll));
        }
        poll_interval(self.count.rate(), c.max_outdated, c.poll_min, c.poll_max)
    }

    /// A backup poll of a pushed feed found `missed` changes the hub should have pushed by now
    /// (none: the hub is keeping up).
    pub(crate) fn backup_polled(&mut self, missed: usize) {
        self.quiet_backups = if missed == 0 {
            self.quiet_backups.saturating_add(1)
        } else {
            0
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_follows_the_offer_the_mode_and_failures() {
        let mut s = SiteCoop {
            sitemaps: vec!["http://e/sitemap.xml".into()],
            sitemap_dates: true,
            ..SiteCoop::default()
        };
        assert_eq!(s.level(CoopMode::Push, 2), Level::Sitemap);
        s.listing = Some("http://e/robots.rdf".into());
        assert_eq!(s.level(CoopMode::Push, 2), Level::Listing);
        s.changes = Some("http://e/.well-known/webcoop/changes".into());
        assert_eq!(s.level(CoopMode::Meta, 2), Level::Changes);
        assert_eq!(s.level(CoopMode::Push, 2), Level::Delta);
        s.subscription = Some(Subscription {
            verified_at: Some(1),
            ..Subscription::default()
        });
        assert_eq!(s.level(CoopMode::Push, 2), Level::Push);
        assert_eq!(s.level(CoopMode::Delta, 2), Level::Delta);
        assert_eq!(s.level(CoopMode::Off, 2), Level::None);
        // Reading the listing only: the site's changes are not used, and do not cover polls.
        assert_eq!(s.level(CoopMode::Listing, 2), Level::Listing);
        let c = CoopConfig {
            mode: CoopMode::Listing,
            ..CoopConfig::default()
        };
        assert!(!s.covers(&c));
        let meta = CoopConfig {
            mode: CoopMode::Meta,
            ..CoopConfig::default()
        };
        assert!(
            s.covers(&meta),
            "the same site covers polls once its changes are used"
        );
        s.failures = 2;
        assert_eq!(s.level(CoopMode::Push, 2), Level::None);
    }

    #[test]
    fn a_pushed_site_is_polled_slowly_and_a_lying_one_not_believed() {
        let c = CoopConfig::default();
        let mut s = SiteCoop {
            changes: Some("http://e/.well-known/webcoop/changes".into()),
            ..SiteCoop::default()
        };
        s.count.observe(100, 3600.0);
        let polled = s.poll_interval(&c);
        assert!(polled < 60.0, "{polled}");
        s.subscription = Some(Subscription {
            verified_at: Some(1),
            ..Subscription::default()
        });
        assert_eq!(s.poll_interval(&c), c.backup_poll);
        assert!(s.covers(&c));
        for _ in 0..5 {
            s.trust.refute(1.0);
        }
        assert!(!s.covers(&c));
    }

    #[test]
    fn backup_polls_grow_rarer_while_the_hub_misses_nothing() {
        let c = CoopConfig::default();
        let mut s = SiteCoop {
            changes: Some("http://e/.well-known/webcoop/changes".into()),
            subscription: Some(Subscription {
                verified_at: Some(1),
                ..Subscription::default()
            }),
            ..SiteCoop::default()
        };
        let mut intervals = vec![s.poll_interval(&c)];
        for _ in 0..7 {
            s.backup_polled(0);
            intervals.push(s.poll_interval(&c));
        }
        assert_eq!(
            intervals,
            [
                600.0, 1200.0, 2400.0, 4800.0, 9600.0, 19200.0, 21600.0, 21600.0
            ]
        );
        s.backup_polled(1);
        assert_eq!(
            s.poll_interval(&c),
            600.0,
            "a miss brings the first pace back"
        );
        // Without the subscription the site's own pace decides again.
        s.quiet_backups = 9;
        s.subscription = None;
        assert!(s.poll_interval(&c) <= c.poll_max);
    }
}
