//! Announcements: the changes a site lists or pushes, applied to the refresh schedule as they
//! are believed, with the deltas to fetch them by and the deletions they report.

use super::discovery::delta_url;
use super::ledger::Claim;
use super::shared::{DeltaPlan, InlineDelta, Reach, Reading, Said};
use super::state::CoopState;
use super::stated::Arrival;
use super::{CoopJob, CoopMode, MetaError, MetaKind};
use crate::analyze::Link;
use crate::clock::now_ms;
use crate::fetch::outcome::CoopFetched;
use crate::ids::{Fp, HostId};
use crate::refresh::schedule::Announcement;
use crate::state::PageRecord;
use std::collections::HashSet;
use url::Url;
use webcoop_protocol::changes_feed::{self, ChangeEntry, ChangeKind, ChangesFeed, FeedLimits};

impl CoopState {
    pub(crate) fn changes_answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        got: &CoopFetched,
        secs: Option<f64>,
        pushed: bool,
    ) -> Result<(), MetaError> {
        let cbor = got
            .header("content-type")
            .and_then(|t| t.split(';').next())
            .is_some_and(|t| t.trim().eq_ignore_ascii_case(changes_feed::CBOR_MEDIA_TYPE));
        let feed = if cbor {
            changes_feed::parse_cbor(&got.body, &FeedLimits::default())
        } else {
            changes_feed::parse(&got.body, &FeedLimits::default())
        }
        .map_err(|e| MetaError::Feed(Box::new(e)))?;
        if !pushed {
            let site = self.site(host);
            site.changes_etag = got.header("etag").map(str::to_string);
            site.last_poll = Some(now_ms());
        }
        self.apply_feed(r, host, feed, secs, pushed, &HashSet::new());
        Ok(())
    }

    pub(crate) fn apply_feed(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        feed: ChangesFeed,
        secs: Option<f64>,
        pushed: bool,
        taken: &HashSet<String>,
    ) {
        if let Some(resync) = &feed.resync {
            tracing::info!(
                "{}: the site asks for a resync after change {}",
                r.origin(host),
                resync.since
            );
            self.resync(r, host);
            return;
        }
        let cursor = self.sites.get(host).and_then(|s| s.cursor);
        let mut entries: Vec<_> = feed
            .entries
            .into_iter()
            .filter(|e| cursor.is_none_or(|c| e.seq > c))
            .collect();
        entries.sort_by_key(|e| e.seq);
        if !pushed {
            // A change older than half the backup period should have been pushed by now.
            let grace = chrono::Duration::milliseconds((self.config.backup_poll * 500.0) as i64);
            let now = crate::clock::now();
            let missed = entries.iter().filter(|e| now - e.time > grace).count();
            self.backup_polled(r, host, missed);
        }
        if pushed
            && let (Some(c), Some(first)) = (cursor, entries.first())
            && first.seq > c + 1
        {
            self.site(host).quiet_backups = 0;
            // Changes were missed (a delivery lost): the feed fills the gap, in order.
            tracing::info!(
                "{}: pushed change {} after {c}; fetching the changes in between",
                r.origin(host),
                first.seq
            );
            if let Some(job) = self.poll_job(r, host) {
                r.frontier.push_coop(host, job);
                self.polling.insert(host);
            }
            return;
        }
        let n = entries.len() as u64;
        for e in &entries {
            // Read from a batch with its content: recorded as it is, nothing to fetch.
            if e.kind != ChangeKind::Deleted && taken.contains(e.url.as_str()) {
                continue;
            }
            self.announced(r, host, e);
        }
        let site = self.site(host);
        if feed.content_usage.is_some() {
            site.usage = feed.content_usage.clone();
        }
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
        if !pushed {
            site.catching_up = behind;
        }
        if !pushed
            && behind
            && let Some(next) = feed.next
        {
            r.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::Changes,
                    url: next,
                    etag: None,
                    last_modified: None,
                },
            );
            self.polling.insert(host);
        }
    }

    /// One change the feed announces, for a page of the site's own.
    fn announced(&mut self, r: &mut Reach<'_>, host: HostId, e: &ChangeEntry) {
        let Some(url) = self.stated_url(r, host, &e.url, Arrival::Named) else {
            return;
        };
        self.explained(host, Link::to(&url).fp);
        if e.kind == ChangeKind::Deleted {
            self.deleted(r, host, &url, e.seq);
            return;
        }
        let changes = self
            .sites
            .get(host)
            .and_then(|s| s.changes.as_deref())
            .and_then(|c| Url::parse(c).ok());
        let deltas = self.config.uses_deltas();
        let inline = e
            .delta
            .as_ref()
            .filter(|d| deltas && d.encoding == webcoop_protocol::delta::DeltaEncoding::Dcz)
            .map(|d| (d.base.to_string(), d.data.clone()));
        let said = Said {
            url: &url,
            modified: Some(e.time.timestamp_millis()),
            etag: e.etag.as_ref().map(ToString::to_string),
            delta: changes.as_ref().and_then(|c| delta_url(c, &url)),
            inline,
            popularity: e.popularity,
        };
        self.listed(r, host, said, Reading::Update);
    }

    /// A URL the site lists or announces, with what it says of it; whether it claims a change
    /// of a page held (what a report counts as announced).
    pub(crate) fn listed(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        said: Said<'_>,
        reading: Reading,
    ) -> bool {
        let Said {
            url,
            modified,
            etag,
            delta,
            inline,
            popularity,
        } = said;
        let Some(url) = self.stated_url(r, host, url, Arrival::Named) else {
            return false;
        };
        let url = &url;
        let link = Link::to(url);
        if let Some(p) = popularity {
            self.stated_popularity(r, host, link.fp, p);
        }
        if !r.frontier.seen(link.fp) {
            r.out.links.push(link);
            return false;
        }
        let Some(known) = r.pages.known(link.fp) else {
            return false; // queued, not fetched yet
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
            if self.covers(host) {
                self.due_now(r, host, &link);
            }
            return false;
        }
        let believed = self.believed(host);
        let covers = self.covers(host);
        if !changed {
            // A small share of "unchanged" claims is checked by a fetch.
            let share = super::trust::check_share(self.config.check_share, &self.site(host).trust);
            if reading == Reading::Update && covers && self.chance(share) {
                self.ledger.expect(link.fp, host, Claim::Unchanged);
                self.site(host).stats.checks += 1;
                self.due_now(r, host, &link);
            }
            return false;
        }
        self.ledger.expect(link.fp, host, Claim::Changed);
        if !believed || self.config.mode < CoopMode::Meta {
            return true; // weighed at the next visit, not acted on
        }
        if self.config.uses_deltas()
            && let Some(delta) = delta
        {
            self.plans.insert(
                link.fp,
                DeltaPlan {
                    url: delta,
                    announced: etag,
                    inline: inline.clone(),
                },
            );
        }
        // An inline delta needs its plan (a page without a delta endpoint, such as a site's
        // root, has none): without one the page is fetched.
        if inline.is_some() && known.content.is_some() && self.plans.contains_key(&link.fp) {
            self.apply_inline(r, host, &link, known);
            return true;
        }
        self.due_now(r, host, &link);
        true
    }

    /// Makes a known page due at once (an announced change or a check).
    pub(crate) fn due_now(&mut self, r: &mut Reach<'_>, host: HostId, link: &Link) {
        let now = now_ms();
        let tracked = r.schedule.as_deref_mut().map(|s| {
            s.page(link.fp).is_some() && s.announce(link.fp, Announcement::ChangedAt(now), now)
        });
        match tracked {
            Some(true) => {}
            // Not tracked (deleted earlier, or no schedule): queue it directly.
            _ => r.frontier.push_revisit(host, link.url.clone(), link.fp, 1),
        }
    }

    /// A believed change came with an inline delta and the copy it applies to is held: the
    /// loop rebuilds the page from them without a request.
    pub(crate) fn apply_inline(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        link: &Link,
        known: crate::state::KnownPage,
    ) {
        let Some(plan) = self.plans.remove(&link.fp) else {
            return;
        };
        let depth = r
            .schedule
            .as_deref()
            .and_then(|s| s.page(link.fp))
            .map_or(1, |p| p.depth);
        r.out.inline.push(InlineDelta {
            host,
            link: link.clone(),
            depth,
            known,
            plan,
        });
    }

    /// An inline delta could not be used: the page is fetched.
    pub(crate) fn inline_failed(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        fp: Fp,
        url: String,
        why: &str,
    ) {
        tracing::info!("{url}: inline delta not usable ({why}); fetching it");
        self.site(host).stats.delta_fallbacks += 1;
        let Ok(u) = Url::parse(&url) else {
            return;
        };
        let link = Link::with_fp(&u, fp);
        self.due_now(r, host, &link);
    }

    /// A site announced a page deleted: where the site is believed, the page is recorded gone
    /// and no longer refreshed.
    pub(crate) fn deleted(&mut self, r: &mut Reach<'_>, host: HostId, url: &Url, seq: u64) {
        let link = Link::to(url);
        let believed = self.covers(host);
        if !believed || !r.frontier.seen(link.fp) {
            return;
        }
        if r.pages.known(link.fp).is_none() {
            return;
        }
        if let Some(s) = r.schedule.as_deref_mut() {
            s.remove(link.fp);
        }
        self.ledger.answer(link.fp);
        self.plans.remove(&link.fp);
        r.out.gone.push(PageRecord {
            url: link.url.clone(),
            fp: link.fp,
            host,
            depth: 1,
            error: Some(format!("deleted: announced by the site (change {seq})")),
            fetched_at: now_ms(),
            gone: true,
            ..Default::default()
        });
    }
}

/// Whether a whole-second date `m` (ms) might hide a change after `fetched` in its second.
fn within_second(m: i64, fetched: i64) -> bool {
    m % 1000 == 0 && (m..m + 1000).contains(&fetched)
}
