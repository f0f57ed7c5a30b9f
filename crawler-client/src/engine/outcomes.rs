//! What a request ended with, handled: robots.txt read or failed (with the host parked or
//! given up on), a page failed (retried or recorded), refused for now (429/503, with the
//! wait it asked), or answered (recorded by `record`). Every outcome says where it came from,
//! which decides whether it frees a connection to its host.

use super::crawl_log::Entry;
use super::open::crawl_delay_reason;
use super::{CrawlError, Engine};
use crate::clock::now_ms;
use crate::fetch::FetchError;
use crate::fetch::lane;
use crate::fetch::outcome::{Fetched, Outcome, RobotsFetched, Source};
use crate::frontier::politeness::DelayWhy;
use crate::frontier::robots::Rules;
use crate::ids::HostId;
use crate::state::{GiveUp, HostUpdate, PageRecord, Queued};
use std::time::{Duration, Instant};

impl Engine {
    /// Handles one outcome.
    pub(super) fn handle(&mut self, outcome: Outcome) -> Result<(), CrawlError> {
        match outcome {
            Outcome::Robots {
                host,
                result,
                elapsed,
                source,
            } => self.handle_robots(host, result, elapsed, source),
            Outcome::Page {
                job,
                result,
                source: Source::Snapshot,
                ..
            } => self.snapshot_page(job, result),
            Outcome::Page {
                job,
                result,
                source: Source::Batch,
                ..
            } => self.batch_page(job, result),
            Outcome::Page {
                job,
                result,
                elapsed,
                source,
            } => {
                // The fetching side stopped the host's lane on this response; now that its
                // delay is known, the lane is halted, which lets what is handed over next go.
                let host = job.host;
                let stopped = source == Source::Request
                    && lane::slows_down(result.as_ref().ok().map(|f| f.status));
                self.handle_page(job, result, elapsed, source)?;
                if stopped {
                    self.slow_lane(host);
                }
                Ok(())
            }
            Outcome::Coop {
                host,
                job,
                result,
                elapsed,
            } => self.handle_coop(host, job, result, elapsed),
            Outcome::Returned { job } => {
                self.page_returned(job);
                Ok(())
            }
            Outcome::Resolved { host, ip } => {
                self.in_flight.request_ended();
                match ip {
                    Some(ip) => tracing::debug!("{} is at {ip}", self.origin(host)),
                    None => {
                        tracing::info!("{}: no address found; paced on its own", self.origin(host))
                    }
                }
                self.frontier.resolved(host, ip);
                Ok(())
            }
            Outcome::Callback(event) => {
                self.with_coop(|c, r| c.callback_event(r, event));
                Ok(())
            }
            Outcome::IndexNow(sub) => {
                // Its URLs are all on one host, in the crawl's scope (the endpoint checked).
                let Some(origin) = sub.urls.first().map(crate::analyze::url_norm::origin_key)
                else {
                    return Ok(());
                };
                let host = self.host_for(&origin)?;
                self.with_coop(|c, r| c.indexnow_submitted(r, host, &sub));
                Ok(())
            }
            Outcome::InlineFailed { host, fp, url, why } => {
                self.with_coop(|c, r| c.inline_failed(r, host, fp, url, &why));
                Ok(())
            }
        }
    }

    /// The host's row as it stands, with what changed.
    fn host_update(
        &self,
        id: HostId,
        robots: Option<(Option<u16>, Vec<u8>, i64)>,
        parked_until: Option<i64>,
    ) -> HostUpdate {
        let h = self.frontier.host(id);
        HostUpdate {
            id,
            robots,
            skipped: h.and_then(|h| h.skipped.clone()),
            parked_until,
            failures: h.map(|h| h.failures).unwrap_or(0),
        }
    }

    pub(super) fn give_up(&mut self, host: HostId, reason: String) {
        let origin = self.origin(host);
        tracing::warn!("giving up on {origin}: {reason}");
        self.frontier.abandon(host, reason.clone());
        if let Some(fleet) = self.fleet.as_mut() {
            fleet
                .tell
                .push(super::fleet::Tell::GiveUp(host, reason.clone()));
        }
        self.unsaved.give_up(GiveUp {
            host,
            reason,
            at: now_ms(),
        });
        let update = self.host_update(host, None, None);
        self.unsaved.host(update);
    }

    pub(super) fn origin(&self, host: HostId) -> String {
        self.frontier
            .host(host)
            .map(|h| h.origin.clone())
            .unwrap_or_default()
    }

    /// One more failure in a row for the host; returns how many.
    /// The failures in a row after which `host` is given up: fewer, in a one-pass crawl, for a
    /// host that never answered (its URLs would otherwise hold the crawl's end for hours of
    /// doubling back-off); a host that answered once keeps the longer patience.
    fn give_up_after(&self, host: HostId) -> u32 {
        let answered = self.frontier.host(host).is_some_and(|h| h.answered);
        if self.settings.keep_fresh.is_none() && !answered {
            self.settings
                .dead_host_give_up
                .min(self.settings.host_give_up)
        } else {
            self.settings.host_give_up
        }
    }

    /// `host` answered (any HTTP status).
    fn host_answered(&mut self, host: HostId) {
        if let Some(h) = self.frontier.host_mut(host) {
            h.answered = true;
        }
    }

    fn host_failed(&mut self, host: HostId) -> u32 {
        let failures = self.frontier.host(host).map_or(0, |h| h.failures) + 1;
        if let Some(h) = self.frontier.host_mut(host) {
            h.failures = failures;
        }
        failures
    }

    fn handle_robots(
        &mut self,
        host: HostId,
        result: Result<RobotsFetched, FetchError>,
        elapsed: Duration,
        source: Source,
    ) -> Result<(), CrawlError> {
        if source == Source::Request {
            self.in_flight.request_ended();
        }
        self.metrics.robots_fetches.inc();
        let robots_url = format!("{}/robots.txt", self.origin(host));
        // A host inside a network the operator did not allow is never tried again.
        let refused = matches!(&result, Err(FetchError::Refused(_)));
        let (status, failure) = match &result {
            Ok(r) if r.status < 500 => (Some(r.status), None),
            Ok(r) => (
                Some(r.status),
                Some(format!("robots.txt answered {}", r.status)),
            ),
            Err(e) => (None, Some(format!("robots.txt: {e}"))),
        };
        let (body, record) = match result {
            Ok(r) => (r.body, Some(r.record)),
            Err(_) => (Vec::new(), None),
        };
        if let Some(record) = record {
            self.append(record)?;
        }
        if status.is_some() {
            self.host_answered(host);
        }
        self.log.write(&Entry {
            at: now_ms(),
            status,
            size: Some(body.len() as u64),
            url: &robots_url,
            elapsed,
            note: failure.as_deref().unwrap_or("robots.txt"),
            ..Default::default()
        });
        match failure {
            None => self.robots_read(host, status, body, elapsed, source),
            Some(why) if refused => {
                self.give_up(host, why);
                self.frontier
                    .robots_known(host, Rules::DisallowAll, Instant::now());
                if source == Source::Request {
                    self.request_ended(host, Instant::now());
                }
            }
            Some(why) => self.robots_failed(host, status, &why, source),
        }
        Ok(())
    }

    /// robots.txt was read: its rules hold for the TTL, its `Crawl-delay` paces the host (or
    /// skips it when over the cap), and cooperation looks at what it points to.
    fn robots_read(
        &mut self,
        host: HostId,
        status: Option<u16>,
        body: Vec<u8>,
        elapsed: Duration,
        source: Source,
    ) {
        let now = Instant::now();
        let at = now_ms();
        self.with_coop(|c, r| c.discover(r, host, status, &body));
        let rules = Rules::from_fetch(status, &body, &self.token);
        let crawl_delay = rules.crawl_delay();
        let politeness = self.settings.politeness;
        let origin = self.origin(host);
        // One line per reading of the file, whatever it holds: junk never floods the log.
        if let [first, ..] = rules.usage_problems() {
            tracing::info!(
                "{origin}/robots.txt: {} usage preference line(s) not understood, first {first}",
                rules.usage_problems().len()
            );
        }
        if let Some(h) = self.frontier.host_mut(host) {
            h.failures = 0;
            if politeness.too_slow(crawl_delay) {
                let reason = crawl_delay_reason(crawl_delay, politeness.crawl_delay_cap);
                tracing::warn!("skipping {origin}: {reason}");
                h.skipped = Some(reason);
            }
        }
        self.frontier
            .robots_known(host, rules, now + self.settings.robots_ttl);
        if let Some(fleet) = self.fleet.as_mut()
            && let Some(status) = status
        {
            fleet
                .tell
                .push(super::fleet::Tell::Robots(host, status, body.clone(), at));
        }
        let update = self.host_update(host, Some((status, body, at)), None);
        self.unsaved.host(update);
        if source == Source::Request {
            let delay = self.host_delay(host, crawl_delay, elapsed);
            self.request_ended(host, now + delay);
        } else {
            self.frontier.schedule(host);
        }
    }

    /// robots.txt could not be read (a 5xx, no answer): the host is parked, and given up on
    /// after so many failures in a row. Nothing of it is fetched meanwhile.
    fn robots_failed(&mut self, host: HostId, status: Option<u16>, why: &str, source: Source) {
        let now = Instant::now();
        let at = now_ms();
        let failures = self.host_failed(host);
        let freed = source == Source::Request;
        if failures >= self.give_up_after(host) {
            self.give_up(host, give_up_reason(why, failures, status.is_none()));
            self.frontier.robots_known(host, Rules::DisallowAll, now);
            if freed {
                self.request_ended(host, now);
            }
            return;
        }
        let park = self.settings.politeness.park_for(failures);
        self.note_delay(host, park, DelayWhy::Parked);
        tracing::info!(
            "{}: {why}; trying again in {} s",
            self.origin(host),
            park.as_secs()
        );
        self.frontier
            .robots_known(host, Rules::DisallowAll, now + park);
        let update = self.host_update(
            host,
            Some((status, Vec::new(), at)),
            Some(at + park.as_millis() as i64),
        );
        self.unsaved.host(update);
        if freed {
            self.request_ended(host, now + park);
        }
    }

    pub(super) fn handle_page(
        &mut self,
        mut job: Queued,
        result: Result<Box<Fetched>, FetchError>,
        elapsed: Duration,
        source: Source,
    ) -> Result<(), CrawlError> {
        let freed = source == Source::Request;
        if freed {
            self.in_flight.page_ended();
            self.metrics.fetch_seconds.observe(elapsed.as_secs_f64());
        }
        let f = match result {
            Err(err) => {
                self.page_failed(job, &err, elapsed, freed);
                return Ok(());
            }
            Ok(f) => *f,
        };
        self.host_answered(job.host);
        let now = Instant::now();
        let at = now_ms();
        // A page that came without a request of its own (a snapshot, a batch) was never
        // asked about: the site's preferences are weighed now.
        if !freed
            && let Ok(url) = url::Url::parse(&job.url)
            && let Some(p) = self
                .usage_stated(job.host, &url, now)
                .refuses(&self.settings.purposes)
        {
            self.metrics.fetch("usage");
            self.recorded_without_content(&job, crate::state::usage_skipped(p.as_str()), elapsed);
            return Ok(());
        }
        let host = job.host;
        if (500..600).contains(&f.status) && source == Source::Request {
            // A server that answers only errors is down all the same: so many in a row and
            // the host is given up, as after so many failed connections, rather than every
            // URL of it waiting out its retries.
            let failures = self.host_failed(host);
            let update = self.host_update(host, None, None);
            self.unsaved.host(update);
            if failures >= self.settings.host_give_up {
                let why = format!("HTTP {} ({failures} server errors in a row)", f.status);
                self.record_page(&job, f, elapsed, source)?;
                self.give_up(host, why);
                if freed {
                    self.request_ended(host, now);
                }
                return Ok(());
            }
        } else if self.frontier.host(host).is_some_and(|h| h.failures > 0) {
            if let Some(h) = self.frontier.host_mut(host) {
                h.failures = 0;
            }
            let update = self.host_update(host, None, None);
            self.unsaved.host(update);
        }
        let crawl_delay = self.frontier.rules(host, now).and_then(Rules::crawl_delay);
        let mut not_before = now + self.host_delay(host, crawl_delay, elapsed);
        if matches!(f.status, 429 | 503) {
            let wait = self
                .settings
                .politeness
                .retry_after(f.retry_after.as_deref(), crate::clock::now())
                .unwrap_or_else(|| self.settings.politeness.park_for(1));
            self.note_delay(host, wait, DelayWhy::RetryAfter);
            not_before = not_before.max(now + wait);
            let update = self.host_update(host, None, Some(at + wait.as_millis() as i64));
            self.unsaved.host(update);
            job.attempts += 1;
            if source != Source::Replayed && job.attempts < self.settings.max_attempts {
                let note = format!("retry in {} s", wait.as_secs());
                self.log.write(&Entry {
                    at,
                    ..Entry::response(&job, &f, elapsed, &note)
                });
                self.metrics.retries.inc();
                self.unsaved.retry(job.seq, job.attempts);
                if freed {
                    self.request_ended(host, not_before);
                }
                self.frontier.requeue(job);
                return Ok(());
            }
        }
        self.record_page(&job, f, elapsed, source)?;
        if freed {
            self.request_ended(host, not_before);
        }
        Ok(())
    }

    /// A page's request failed: tried again after the host's park, recorded as failed after
    /// so many attempts, and the host given up on after so many failures in a row, or at once
    /// when its name now leads inside a network the operator did not allow.
    fn page_failed(&mut self, mut job: Queued, err: &FetchError, elapsed: Duration, freed: bool) {
        let now = Instant::now();
        let at = now_ms();
        let host = job.host;
        if let FetchError::UsageRefused(_) = err {
            // An answer, not a failure: recorded as final, nothing of it kept.
            self.metrics.fetch("usage");
            self.fetched_total += 1;
            self.recorded_without_content(&job, err.to_string(), elapsed);
            if freed {
                let delay = self.host_delay(host, None, elapsed);
                self.request_ended(host, now + delay);
            }
            return;
        }
        let failures = self.host_failed(host);
        job.attempts += 1;
        self.log.write(&Entry {
            at,
            url: &job.url,
            depth: job.depth,
            hops: job.hops,
            elapsed,
            note: &err.to_string(),
            ..Default::default()
        });
        if let FetchError::Refused(_) = err {
            self.unsaved.settled(host, job.seq);
            self.run.given_up();
            self.give_up(host, err.to_string());
            if freed {
                self.request_ended(host, now);
            }
            return;
        }
        if failures >= self.give_up_after(host) {
            self.unsaved.settled(host, job.seq);
            self.run.given_up();
            let answered = self.frontier.host(host).is_some_and(|h| h.answered);
            self.give_up(host, give_up_reason(&err.to_string(), failures, !answered));
            if freed {
                self.request_ended(host, now);
            }
            return;
        }
        let park = self.settings.politeness.park_for(failures);
        self.note_delay(host, park, DelayWhy::Parked);
        let update = self.host_update(host, None, Some(at + park.as_millis() as i64));
        self.unsaved.host(update);
        if freed {
            self.request_ended(host, now + park);
        }
        if job.attempts >= self.settings.max_attempts {
            self.metrics.fetch("failed");
            self.run.given_up();
            self.fetched_total += 1;
            self.unsaved.finished(
                job.seq,
                PageRecord {
                    url: job.url.clone(),
                    fp: job.fp,
                    host,
                    depth: job.depth,
                    error: Some(format!("{err} ({} attempts)", job.attempts)),
                    fetched_at: at,
                    ..Default::default()
                },
            );
        } else {
            // Back in the host's buffer, no longer taken: not settled by a save.
            self.metrics.retries.inc();
            self.unsaved.retry(job.seq, job.attempts);
            self.frontier.requeue(job);
        }
    }
}

/// Why a host was given up on, for `status` and the console: what failed, how often, and
/// whether it never answered at all.
fn give_up_reason(why: &str, failures: u32, never_answered: bool) -> String {
    if never_answered {
        format!("{why} ({failures} times in a row; it never answered)")
    } else {
        format!("{why} ({failures} times in a row)")
    }
}
