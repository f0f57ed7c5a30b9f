//! Metadata polls: when each site's robots.rdf, changes feed or sitemaps are asked again (the
//! rate its outdated-probability target asks), what an answer or a failure does, and the fall
//! back to polling pages when a site stops answering.

use super::shared::Reach;
use super::state::CoopState;
use super::{CoopJob, CoopMode, Level, MetaError, MetaKind};
use crate::clock::now_ms;
use crate::fetch::FetchError;
use crate::fetch::outcome::CoopFetched;
use crate::ids::HostId;
use std::time::{Duration, Instant};
use url::Url;

impl CoopState {
    /// Polls that are due, subscriptions to make or renew; at most every 100 ms.
    pub(crate) fn tick(&mut self, r: &mut Reach<'_>) {
        let now = Instant::now();
        if self.config.mode < CoopMode::Meta || self.next_tick.is_some_and(|t| t > now) {
            return;
        }
        self.next_tick = Some(now + tick_period());
        self.questions_overdue(r);
        // Polls and subscriptions serve keeping pages fresh: a one-pass crawl has none, and
        // walking ten thousand sites ten times a second for nothing cost a few µs a page.
        if r.schedule.is_none() {
            return;
        }
        let at = now_ms();
        let ids: Vec<HostId> = self.sites.hosts();
        for host in ids {
            self.maybe_subscribe(r, host, at);
            if self.polling.contains(&host) {
                continue;
            }
            let Some(site) = self.sites.get(host) else {
                continue;
            };
            if site.discovered
                && site.next_poll.is_none_or(|t| t <= at)
                && let Some(job) = self.poll_job(r, host)
            {
                r.frontier.push_coop(host, job);
                self.polling.insert(host);
                continue;
            }
            self.read_feed_due(r, host);
        }
    }

    /// When the next poll is due (ms), for the loop's sleep.
    pub(crate) fn next_due(&self, keeping_fresh: bool) -> Option<i64> {
        if !keeping_fresh {
            return None;
        }
        self.sites
            .iter()
            .filter(|(id, _)| !self.polling.contains(id))
            .filter_map(|(id, s)| {
                let poll = s.next_poll.filter(|_| s.discovered);
                poll.into_iter().chain(self.feed_due(id)).min()
            })
            .min()
    }

    pub(crate) fn poll_job(&mut self, r: &mut Reach<'_>, host: HostId) -> Option<CoopJob> {
        let bodies = self.asks_bodies(r, host);
        let site = self.sites.get(host)?;
        if let (Some(changes), Some(cursor)) = (&site.changes, site.cursor) {
            let mut url = Url::parse(changes).ok()?;
            url.query_pairs_mut()
                .clear()
                .append_pair("since", &cursor.to_string());
            if bodies {
                url.query_pairs_mut()
                    .append_pair(webcoop_protocol::batch::BODIES_PARAM, "1");
            }
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
            self.start_walks(r, host);
        }
        None
    }

    pub(crate) fn plan_next_poll(&mut self, host: HostId) {
        let c = self.config;
        let at = now_ms();
        let question = self.question_due(host);
        let site = self.site(host);
        let secs = site.poll_interval(&c);
        let next = at + (secs * 1000.0) as i64;
        site.next_poll = Some(question.map_or(next, |q| q.min(next)));
    }

    /// A cooperation request ended (the loop has logged and archived it).
    pub(crate) fn answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        job: CoopJob,
        result: Result<CoopFetched, FetchError>,
    ) {
        if let Ok(got) = &result {
            let site = self.site(host);
            site.stats.meta_requests += 1;
            site.stats.meta_bytes += got.size;
            if got.status == 304 {
                site.stats.not_modified += 1;
            }
        }
        match job {
            CoopJob::Hub {
                unsubscribe, hub, ..
            } => {
                self.polling.remove(&host);
                self.hub_answered(r, host, &hub, unsubscribe, result);
            }
            CoopJob::Fetch { kind, url, .. } => {
                let read_feed = kind == MetaKind::Changes;
                let probed = self.probes.answered(host, &url);
                if probed {
                    // Counted when asked, not when queued: a host too small for its probes
                    // is never asked them.
                    self.site(host).stats.probes += 1;
                }
                let outcome = match result {
                    Ok(got) => self.meta_answered(r, host, kind, &url, got),
                    Err(e) => Err(MetaError::from(e)),
                };
                match outcome {
                    Ok(()) => {
                        let was_down = {
                            let c = self.config;
                            let site = self.site(host);
                            let down = site.failures >= c.failures_to_degrade;
                            site.failures = 0;
                            down
                        };
                        if was_down && self.covers(host) {
                            tracing::info!("{}: cooperation is back", r.origin(host));
                            if let Some(s) = r.schedule.as_deref_mut() {
                                s.set_host_covered(host, true);
                            }
                        }
                        let caught_up = self.sites.get(host).is_some_and(|s| !s.catching_up);
                        if read_feed && caught_up {
                            self.feed_read(r, host);
                        }
                    }
                    // A probe's 404 says the path is not there, no more (the sitemaps were
                    // walked without waiting for it).
                    Err(why) if probed && kind == MetaKind::Listing => {
                        tracing::debug!("{}: no robots.rdf ({why})", r.origin(host));
                    }
                    // A feed failing says nothing of the site's other documents.
                    Err(why) if kind == MetaKind::Feed => self.feed_failed(r, host, &url, &why),
                    Err(_) if kind == MetaKind::IndexNowKey => {
                        self.indexnow_key_answered(r, host, &url, None)
                    }
                    Err(why) if kind == MetaKind::ListingPart => {
                        tracing::warn!("{}: robots.rdf part: {why}", r.origin(host));
                        self.listing_part_answered(r, host, &url, None);
                    }
                    Err(why) => self.meta_failed(r, host, kind, &why),
                }
                let walking = self.walks.contains_key(&host)
                    || r.frontier.host(host).is_some_and(|h| h.coop_waiting());
                if !walking {
                    self.polling.remove(&host);
                    let discovered = self.sites.get(host).is_some_and(|s| s.discovered);
                    if discovered && kind != MetaKind::Feed {
                        self.plan_next_poll(host);
                    }
                    // A feed found while this request was under way is read now.
                    self.read_feed_due(r, host);
                }
            }
        }
    }

    pub(crate) fn meta_failed(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        kind: MetaKind,
        why: &MetaError,
    ) {
        let origin = r.origin(host);
        let c = self.config;
        let discovering = !self.sites.get(host).is_some_and(|s| s.discovered);
        if discovering {
            match kind {
                // No listing: sitemaps, then nothing; the pages held for it go.
                MetaKind::Listing => {
                    tracing::debug!("{origin}: no robots.rdf ({why})");
                    r.frontier.hold_pages(host, false);
                    self.start_walks(r, host);
                }
                MetaKind::Sitemap => {
                    tracing::debug!("{origin}: sitemap: {why}");
                    self.sitemap_fed(r, host, None);
                }
                MetaKind::Changes
                | MetaKind::Feed
                | MetaKind::IndexNowKey
                | MetaKind::ListingPart => {}
                MetaKind::Snapshot => self.snapshot_ended(r, host, Some(why.to_string()), &[]),
            }
            return;
        }
        if kind == MetaKind::Snapshot {
            self.snapshot_ended(r, host, Some(why.to_string()), &[]);
            return;
        }
        if kind == MetaKind::Sitemap {
            self.sitemap_fed(r, host, None);
        }
        let covered_before = self.covers(host);
        let site = self.site(host);
        site.failures += 1;
        let failures = site.failures;
        tracing::warn!("{origin}: {} failed ({why})", kind.as_str());
        if covered_before && failures >= c.failures_to_degrade {
            tracing::warn!(
                "{origin}: cooperation unavailable after {failures} failures; polling its pages until it is back"
            );
            if let Some(s) = r.schedule.as_deref_mut() {
                s.set_host_covered(host, false);
            }
        }
    }

    pub(crate) fn meta_answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        kind: MetaKind,
        url: &Url,
        got: CoopFetched,
    ) -> Result<(), MetaError> {
        let secs = self
            .sites
            .get(host)
            .and_then(|s| s.last_poll)
            .map(|t| (now_ms() - t).max(0) as f64 / 1000.0);
        match (kind, got.status) {
            (MetaKind::Sitemap, 304) | (MetaKind::Listing, 304) | (MetaKind::Changes, 304) => {
                if kind == MetaKind::Changes {
                    self.backup_polled(r, host, 0);
                }
                let site = self.site(host);
                if let Some(secs) = secs {
                    site.count.observe(0, secs);
                }
                site.last_poll = Some(now_ms());
                if kind == MetaKind::Sitemap {
                    self.walks.remove(&host);
                }
                if self.chance(self.config.check_share) {
                    self.check_one(r, host);
                }
                Ok(())
            }
            (MetaKind::Listing, 200) => self.listing_answered(r, host, url, &got, secs),
            (MetaKind::ListingPart, 200) => {
                self.listing_part_answered(r, host, url, Some(&got));
                Ok(())
            }
            (MetaKind::Changes, 200) if Self::is_batch(&got) => {
                self.batch_answered(r, host, url, &got, secs)
            }
            (MetaKind::Changes, 200) => self.changes_answered(r, host, &got, secs, false),
            (MetaKind::Changes, 410) => {
                tracing::info!(
                    "{}: changes cursor too old; reloading robots.rdf",
                    r.origin(host)
                );
                self.resync(r, host);
                Ok(())
            }
            (MetaKind::Sitemap, 200) => {
                self.sitemap_fed(r, host, Some((url, &got)));
                Ok(())
            }
            (MetaKind::Feed, 304) => {
                self.feed_unchanged(host, url);
                Ok(())
            }
            (MetaKind::Feed, 200) => self.feed_answered(r, host, url, &got),
            (MetaKind::IndexNowKey, status) => {
                let body = (status == 200).then_some(&got.body[..]);
                self.indexnow_key_answered(r, host, url, body);
                Ok(())
            }
            (MetaKind::Snapshot, 200) => {
                let oversize: Vec<String> = got
                    .header(super::snapshot_fetch::OVERSIZE_FIELD)
                    .map(|v| v.split(' ').map(str::to_string).collect())
                    .unwrap_or_default();
                self.snapshot_ended(r, host, None, &oversize);
                Ok(())
            }
            (_, status) => Err(MetaError::Status {
                url: url.clone(),
                status,
            }),
        }
    }

    pub(crate) fn resync(&mut self, r: &mut Reach<'_>, host: HostId) {
        let listing = {
            let site = self.site(host);
            site.cursor = None;
            site.resyncing = true;
            site.changes_etag = None;
            site.listing_validators = (None, None);
            site.listing.clone()
        };
        if let Some(url) = listing.and_then(|l| Url::parse(&l).ok()) {
            self.fetch_listing(r, host, url);
        }
    }

    /// A poll of the changes feed of a pushed site found `missed` changes the hub had not
    /// pushed: none stretches the time to the next poll, any brings it back to the start.
    pub(crate) fn backup_polled(&mut self, r: &mut Reach<'_>, host: HostId, missed: usize) {
        let c = self.config;
        let site = self.site(host);
        if site.level(c.mode, c.failures_to_degrade) != Level::Push {
            return;
        }
        let was = site.quiet_backups;
        site.backup_polled(missed);
        if missed > 0 && was > 0 {
            tracing::info!(
                "{}: the hub had not pushed {missed} changes the feed lists; backup polls every {} s again",
                r.origin(host),
                c.backup_poll
            );
        }
    }
}

/// How often metadata polls are looked at: every second of the crawler's time, within 5 ms
/// and 100 ms of real time.
pub(crate) fn tick_period() -> Duration {
    crate::clock::real_wait(1000).clamp(Duration::from_millis(5), Duration::from_millis(100))
}
