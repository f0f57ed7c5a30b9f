//! The coordinator's side of a site's feeds (`super::feeds`): a feed a page names is followed
//! and read; each entry of the site's own pages is announced like anything the site lists
//! (`listed`: a page not seen is queued, a date newer than the copy held makes it due, and
//! each such claim is weighed at the page's next visit, so a feed whose dates lie is believed
//! no more); the pages a feed lists are left to it, and those that leave it return to the
//! refresh schedule. A hub the feed names is subscribed to wherever it runs (within
//! `--hub-allow`), and its deliveries are read as the feed itself.

use super::feeds::{Entry, Pace};
use super::shared::{Reach, Reading, Said};
use super::state::CoopState;
use super::stated::Arrival;
use super::{CoopJob, CoopMode, MetaError, MetaKind};
use crate::analyze::Link;
use crate::clock::now_ms;
use crate::fetch::outcome::CoopFetched;
use crate::ids::HostId;
use url::Url;
use webcoop_protocol::web_feed::{self, WebFeed};

impl CoopState {
    /// Whether feeds are read as listings (below `meta`, a feed is a link like any other).
    pub(crate) fn reads_feeds(&self) -> bool {
        self.config.mode >= CoopMode::Meta
    }

    /// A page of `host` names `feeds` (`<link rel="alternate" type="application/rss+xml">`):
    /// each on an origin the site speaks for is followed, and one not read yet is read now.
    pub(crate) fn page_feeds(&mut self, r: &mut Reach<'_>, host: HostId, feeds: &[Link]) {
        if !self.reads_feeds() {
            return;
        }
        for link in feeds {
            let Ok(url) = Url::parse(&link.url) else {
                continue;
            };
            if !self.speaks_for(r, host, &url) {
                continue;
            }
            if self.site(host).feeds.found(&url) {
                tracing::info!("{}: names the feed {url}; reading it", r.origin(host));
            }
        }
        self.read_feed_due(r, host);
    }

    /// Asks for the site's feed due first, unless another request for the site's metadata is
    /// under way (one at a time, within the host's politeness). A crawl that keeps nothing
    /// fresh reads each feed once, for the pages it names.
    pub(crate) fn read_feed_due(&mut self, r: &mut Reach<'_>, host: HostId) {
        if self.polling.contains(&host) {
            return;
        }
        let Some(site) = self.sites.get(host) else {
            return;
        };
        // A site with webcoop's changes feed announces every change there (and its hub pushes
        // them): its RSS and Atom feeds would tell the same, later, for requests.
        if site.changes.is_some() {
            return;
        }
        // A feed its hub pushes is read as a backup only, as the changes feed is.
        let pushed = site
            .subscription
            .as_ref()
            .filter(|s| s.verified_at.is_some())
            .map(|s| s.topic.as_str());
        let backup = (self.config.backup_poll * 1000.0) as i64;
        let due = match r.schedule {
            Some(_) => site.feeds.due(now_ms(), (pushed, backup)),
            None => site.feeds.unread().map(|u| (u, None, None)),
        };
        let Some((url, etag, last_modified)) = due else {
            return;
        };
        r.frontier.push_coop(
            host,
            CoopJob::Fetch {
                kind: MetaKind::Feed,
                url,
                etag,
                last_modified,
            },
        );
        self.polling.insert(host);
    }

    /// When a feed of the site is due next (ms).
    pub(crate) fn feed_due(&self, host: HostId) -> Option<i64> {
        self.sites.get(host)?.feeds.next_due()
    }

    fn feed_pace(&self) -> Pace {
        Pace {
            max_outdated: self.config.max_outdated,
            min: self.config.poll_min,
            max: self.config.poll_max,
        }
    }

    /// The entries of `feed` that are pages of `host`'s own, as the feed owner keeps them,
    /// with their pages.
    fn own_entries(
        &mut self,
        r: &Reach<'_>,
        host: HostId,
        feed: &WebFeed,
    ) -> (Vec<Entry>, Vec<Url>) {
        let mut entries = Vec::with_capacity(feed.entries.len());
        let mut pages = Vec::with_capacity(feed.entries.len());
        for e in &feed.entries {
            let Some(page) = self.stated_url(r, host, &e.url, Arrival::Named) else {
                continue;
            };
            let date = e.date().map(|d| d.timestamp_millis());
            entries.push((e.id.clone(), Link::to(&page).fp, date, e.digest));
            pages.push(page);
        }
        (entries, pages)
    }

    /// Announces the pages of `entries` picked by `announced` (index, date to state).
    fn announce_entries(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        pages: &[Url],
        announced: &[(usize, Option<i64>)],
        reading: Reading,
    ) {
        self.site(host).stats.announced += announced.len() as u64;
        for &(i, modified) in announced {
            let Some(url) = pages.get(i) else {
                continue;
            };
            let said = Said {
                url,
                modified,
                etag: None,
                delta: None,
                inline: None,
                popularity: None,
            };
            self.listed(r, host, said, reading);
        }
    }

    /// The feed at `url` answered 200: read as a listing of the site's newest pages.
    pub(crate) fn feed_answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        got: &CoopFetched,
    ) -> Result<(), MetaError> {
        let feed = web_feed::parse(&got.body, url).map_err(MetaError::WebFeed)?;
        let (entries, pages) = self.own_entries(r, host, &feed);
        // Validators derived from a `Last-Modified` within the second of the answer (WordPress's
        // ETag is its md5) would answer 304 to an edit made later in that second: such a
        // feed is read whole next time.
        let last_modified = got.header("last-modified");
        let validators = if crate::analyze::weak_validators(last_modified, got.header("date")) {
            (None, None)
        } else {
            (
                got.header("etag").map(str::to_string),
                last_modified.map(str::to_string),
            )
        };
        let pace = self.feed_pace();
        let read = self.site(host).feeds.read(
            url,
            (
                feed.format,
                feed.self_url.as_ref(),
                &feed.hubs,
                feed.updated.map(|t| t.timestamp_millis()),
            ),
            &entries,
            validators,
            (now_ms(), pace),
        );
        if read.first {
            tracing::info!(
                "{}: feed {url} ({}) lists {} of its pages{}",
                r.origin(host),
                feed.format.as_str(),
                entries.len(),
                if feed.hubs.is_empty() {
                    String::new()
                } else {
                    format!(", pushed by {}", feed.hubs[0])
                }
            );
        }
        // The pages the feed lists are left to it, before what it announces makes some due.
        let believed = self.believed(host) && !self.covers(host);
        if let Some(s) = r.schedule.as_deref_mut() {
            for fp in &read.fell_off {
                s.uncover(*fp);
            }
            if believed {
                cover_new(s, &entries);
            }
        }
        let reading = if read.first {
            Reading::First
        } else {
            Reading::Update
        };
        self.announce_entries(r, host, &pages, &read.announced, reading);
        self.feed_hub(r, host);
        Ok(())
    }

    /// A file named as a sitemap (in robots.txt or a sitemap index) is a feed, as search
    /// engines accept: read as the feed it is, and followed as one from now on.
    pub(crate) fn sitemap_feed(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        got: &CoopFetched,
    ) {
        if !self.speaks_for(r, host, url) {
            return;
        }
        if self.site(host).feeds.found(url) {
            tracing::info!(
                "{}: the sitemap {url} is a feed; read as one",
                r.origin(host)
            );
        }
        if !self.site(host).feeds.follows(url) {
            return;
        }
        if let Err(why) = self.feed_answered(r, host, url, got) {
            self.feed_failed(r, host, url, &why);
        }
    }

    /// The feed at `url` answered 304: nothing new.
    pub(crate) fn feed_unchanged(&mut self, host: HostId, url: &Url) {
        let pace = self.feed_pace();
        self.site(host).feeds.unchanged(url, now_ms(), pace);
    }

    /// The feed at `url` could not be read: read again later; dropped after a few failures in
    /// a row, its pages returning to the schedule.
    pub(crate) fn feed_failed(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        why: &MetaError,
    ) {
        let pace = self.feed_pace();
        tracing::info!("{}: feed {url}: {why}", r.origin(host));
        if let Some(pages) = self.site(host).feeds.failed(url, now_ms(), pace) {
            tracing::warn!(
                "{}: feed {url} failed too often; no longer followed",
                r.origin(host)
            );
            if let Some(s) = r.schedule.as_deref_mut() {
                for fp in pages {
                    s.uncover(fp);
                }
            }
        }
    }

    /// Subscribes to the hub the site's feed names, for the feed (its `rel="self"`), where
    /// the site has no changes feed of its own.
    fn feed_hub(&mut self, r: &mut Reach<'_>, host: HostId) {
        let Some((hub, topic)) = self.sites.get(host).and_then(|s| s.feeds.hub()) else {
            return;
        };
        if let (Ok(hub), Ok(topic)) = (Url::parse(&hub), Url::parse(&topic)) {
            self.page_hub(r, host, &hub, &topic);
        }
    }

    /// A hub delivered `body` for the site's feed at `url`: read as the feed itself, merged
    /// with what is remembered (a delivery may carry only what changed); its pages announced,
    /// the feed not fetched again.
    pub(crate) fn feed_delivered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        body: &[u8],
    ) {
        let feed = match web_feed::parse(body, url) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("{}: pushed feed refused: {e}", r.origin(host));
                return;
            }
        };
        let (entries, pages) = self.own_entries(r, host, &feed);
        let announced = self.site(host).feeds.read_pushed(url, &entries);
        tracing::info!(
            "{}: the hub pushed {url}: {} of its {} entries new or changed",
            r.origin(host),
            announced.len(),
            entries.len()
        );
        if self.believed(host)
            && !self.covers(host)
            && let Some(s) = r.schedule.as_deref_mut()
        {
            cover_new(s, &entries);
        }
        self.announce_entries(r, host, &pages, &announced, Reading::Update);
    }
}

/// Leaves the pages of `entries` not left to announcements yet to them: one left already
/// keeps its time (an announcement may have made it due, and it is not fetched yet).
fn cover_new(s: &mut crate::refresh::schedule::Schedule, entries: &[Entry]) {
    for (_, fp, _, _) in entries {
        if s.page(*fp).is_some_and(|p| !p.covered) {
            s.cover(*fp);
        }
    }
}
