//! The loop: polls and refreshes that are due, requests started while there is room, the
//! outcomes that come back, batches saved, progress shown; and the sleep until the first of
//! these is due again.

use super::crawl_log::Entry;
use super::{CrawlError, Engine, STOP_GRACE, file_error};
use crate::clock::{self, now_ms};
use crate::coop::tick_period;
use crate::fetch::tasks;
use crate::frontier::Dispatch;
use crate::frontier::shared::Taking;
use crate::progress::{Progress, Snapshot};
use crate::refresh::schedule::Schedule;
use crate::state::{self, PageRecord, Queued};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::usage::Prefs;

/// Where the loop is: running, or stopping since when.
struct Pace {
    stop_seen: Option<Instant>,
    deadline: Option<Instant>,
    gauges_at: Instant,
}

/// `SAVED_AT` after a stop with no request under way.
const STOPPED: &str = "stopped";

impl Engine {
    fn budget_spent(&self) -> bool {
        self.settings
            .max_pages
            .is_some_and(|m| self.fetched_total + self.in_flight.pages() as u64 >= m)
    }

    /// The loop; returns whether the crawl is complete (nothing left, or the budget spent).
    pub(super) fn crawl(&mut self, stop: &AtomicBool) -> Result<bool, CrawlError> {
        let mut progress = Progress::new(self.settings.progress);
        let mut pace = Pace {
            stop_seen: None,
            deadline: self.settings.run_for.map(|d| Instant::now() + d),
            gauges_at: Instant::now(),
        };
        let mut arrived = Vec::new();
        loop {
            let time_up = pace.deadline.is_some_and(|d| Instant::now() >= d);
            if pace.stop_seen.is_none() {
                self.coop_tick();
                self.queue_due_refreshes();
                self.shard_poll()?;
            }
            if (stop.load(Ordering::Relaxed) || time_up) && pace.stop_seen.is_none() {
                pace.stop_seen = Some(Instant::now());
                self.halt_lanes();
                tracing::info!(
                    "stopping: waiting for {} requests under way",
                    self.in_flight.requests()
                );
            }
            self.console_actions()?;
            if pace.stop_seen.is_none() && !self.paused() {
                self.dispatch()?;
            }
            let idle = self.in_flight.requests() == 0;
            // With a console to unblock them from, blocked hosts' work keeps the crawl open.
            // Looked at only when nothing is under way: it walks every host, and a crawl of
            // ten thousand hosts goes round this loop thousands of times a second.
            // A one-pass crawl does not wait on hosts parked beyond `end_wait` (servers that
            // stopped answering): it ends, saying what it left.
            let end_by = Instant::now() + self.settings.end_wait;
            let mut nothing_left = idle
                && !self.frontier.has_work_by(end_by)
                && self.schedule.is_none()
                && !(self.console.is_some() && self.frontier.blocked_with_work());
            if nothing_left && self.fleet.is_some() {
                // What this process found reaches the others before it asks what is left.
                if self.frontier.pending_len() > 0 || self.unsaved.any_settled() {
                    self.commit()?;
                }
                // Asked first: it waits for this process's own offers and counts them.
                let busy = self.fleet_busy()?;
                nothing_left = !busy && !self.frontier.has_work();
            }
            if nothing_left && self.shard.is_some() {
                nothing_left = self.shard_over()? && !self.frontier.has_work();
            }
            if idle && (pace.stop_seen.is_some() || self.budget_spent() || nothing_left) {
                if nothing_left {
                    self.left_parked(end_by);
                }
                break;
            }
            if pace.stop_seen.is_some_and(|t| t.elapsed() > STOP_GRACE) {
                tracing::warn!(
                    "{} requests did not finish in time; they will be made again",
                    self.in_flight.requests()
                );
                break;
            }
            let now = Instant::now();
            let wake = self.wake_at(&pace, progress.next_due(), now);
            if !self
                .rx
                .wait(wake.saturating_duration_since(now), &mut arrived)
            {
                break;
            }
            for outcome in arrived.drain(..) {
                self.handle(outcome)?;
            }
            // Each wake-up's records in one write: a `kill -9` then loses only what was under
            // way (a 50 ms write-behind made a kill at the web's shape fetch dozens of pages twice).
            self.warc
                .write_appended()
                .map_err(|e| file_error(self.warc.dir())(e))?;
            let (interval, results) = self.save_bounds();
            if self.unsaved.results() >= results
                || (!self.unsaved.is_empty() && self.last_commit.elapsed() >= interval)
            {
                self.commit()?;
            }
            if progress.due() || pace.gauges_at.elapsed() >= Duration::from_secs(1) {
                pace.gauges_at = Instant::now();
                let snapshot = self.snapshot();
                let state = if pace.stop_seen.is_some() {
                    "stopping"
                } else {
                    "running"
                };
                self.fleet_beat(state)?;
                self.console_publish(pace.stop_seen.is_some());
                if progress.due() {
                    progress.show(&snapshot);
                }
            }
        }
        self.coop_unsubscribe_all();
        self.commit()?;
        if self.in_flight.requests() == 0 {
            // Nothing left under way: the next run owes the hosts one delay, not the longest.
            self.store.set_meta(crate::state::SAVED_AT, STOPPED)?;
        }
        self.fleet_leave()?;
        self.coop.report(&self.frontier);
        progress.finish();
        Ok(pace.stop_seen.is_none() && self.in_flight.requests() == 0)
    }

    /// When the loop must look again: progress, gauges, the batch's save, the next host whose
    /// time comes, the next poll, the next due refresh; every 100 ms while stopping.
    fn wake_at(&mut self, pace: &Pace, progress_due: Instant, now: Instant) -> Instant {
        let mut wake = progress_due.min(pace.gauges_at + Duration::from_secs(1));
        if !self.unsaved.is_empty() {
            wake = wake.min(self.last_commit + self.save_bounds().0);
        }
        if let Some(shard) = &self.shard {
            wake = wake.min(shard.shards.read_due());
        }
        if pace.stop_seen.is_none()
            && !self.paused()
            && self.under_way() < self.settings.concurrency
            && !self.budget_spent()
            && let Some(t) = self.frontier.next_wakeup()
        {
            wake = wake.min(t);
        }
        if pace.stop_seen.is_some() {
            wake = wake.min(now + Duration::from_millis(100));
        }
        if let Some(d) = pace.deadline {
            wake = wake.min(d);
        }
        if self.fleet.is_some() && pace.stop_seen.is_none() {
            wake = wake.min(now + super::fleet::IDLE_LOOK);
        }
        if let Some(due) = self.coop.next_due(self.schedule.is_some()) {
            let wait = clock::real_wait(due.saturating_sub(now_ms())).min(Duration::from_secs(60));
            wake = wake.min(now + wait.max(tick_period()));
        }
        // Pages already due but without room wait for a request to end, not the clock.
        if self.schedule.is_some()
            && self.refresh_room() > 0
            && let Some(due) = self.schedule.as_mut().and_then(Schedule::next_due)
        {
            let wait = clock::real_wait(due.saturating_sub(now_ms())).min(Duration::from_secs(60));
            wake = wake.min(now + wait);
        }
        wake
    }

    /// Queues the pages the refresh schedule says are due, as far as the share of requests
    /// left to refreshes allows while new URLs wait.
    fn queue_due_refreshes(&mut self) {
        if self.schedule.is_none() {
            return;
        }
        let room = self.refresh_room();
        let Some(schedule) = self.schedule.as_mut() else {
            return;
        };
        if room == 0 {
            return;
        }
        for (fp, p) in schedule.take_due(now_ms(), room) {
            tracing::debug!(url = %p.url, due = p.due, rate = p.rate, weight = p.weight, "due");
            self.frontier.push_revisit(p.host, p.url, fp, p.depth);
            self.in_flight.revisit_queued();
            self.run.revisit_queued();
        }
    }

    /// How many due pages may be queued now: the share of requests left to refreshes while
    /// new URLs wait, and no more than the requests that can be under way.
    fn refresh_room(&self) -> usize {
        let discovery_waiting = self.frontier.queued() > self.in_flight.revisits_queued() as u64;
        let allowed = if discovery_waiting {
            let share = self.settings.refresh_share;
            self.run.revisits_allowed(share) as usize
        } else {
            self.settings.concurrency
        };
        allowed.min(
            self.settings
                .concurrency
                .saturating_sub(self.in_flight.revisits_queued()),
        )
    }

    fn snapshot(&self) -> Snapshot {
        let s = Snapshot {
            fetched: self.run.counts().fetched,
            queued: self.frontier.queued(),
            hosts_active: self.frontier.active_hosts(),
            in_flight: self.in_flight.requests(),
            errors: self.run.counts().errors,
            bytes: self.run.counts().bytes,
        };
        self.metrics.queued.set(s.queued as i64);
        self.metrics.hosts_active.set(s.hosts_active as i64);
        self.metrics.in_flight.set(s.in_flight as i64);
        self.metrics.seen.set(self.frontier.seen_len() as i64);
        s
    }

    /// Requests under way: those handed out, less those waiting on the fetching side for a
    /// connection of their host.
    fn under_way(&self) -> usize {
        self.in_flight
            .requests()
            .saturating_sub(self.frontier.surplus())
    }

    /// Starts requests while there is room and a host whose time has come.
    fn dispatch(&mut self) -> Result<(), CrawlError> {
        self.fleet_step(Instant::now())?;
        // After the fleet's step, which may have waited out a pause of Redis: a lease is
        // judged by the time it is used at.
        let now = Instant::now();
        while self.under_way() < self.settings.concurrency && !self.budget_spent() {
            let next = match self.fleet.as_mut() {
                None => self.frontier.next(&self.store, now)?,
                Some(f) => self.frontier.next(&Taking::new(f.shared_mut()), now)?,
            };
            let Some(next) = next else {
                break;
            };
            if !self.fleet_keep(next.host(), now)? {
                continue;
            }
            let Some(next) = self.server_turn(next, now)? else {
                continue;
            };
            match next {
                Dispatch::Resolve(host) => {
                    self.in_flight.request_started();
                    let origin = self.origin(host);
                    self.rt.spawn(tasks::resolve(
                        self.ctx.clone(),
                        host,
                        origin,
                        self.tx.clone(),
                    ));
                }
                Dispatch::Robots(host) => {
                    let origin = self
                        .frontier
                        .host(host)
                        .map(|h| h.origin.clone())
                        .unwrap_or_default();
                    self.in_flight.request_started();
                    let close = !self.frontier.keeps_connection(host);
                    self.rt.spawn(tasks::robots(
                        self.ctx.clone(),
                        host,
                        origin,
                        self.tx.clone(),
                        close,
                    ));
                }
                Dispatch::Coop(host, job) => {
                    self.in_flight.request_started();
                    let gate = crate::fetch::outcome::PageGate {
                        origin: self.origin(host),
                        rules: self.frontier.rules(host, now).cloned(),
                        stated: self.coop.usage_of(host),
                    };
                    let close = !self.frontier.keeps_connection(host);
                    self.rt.spawn(crate::coop::requests::run(
                        self.ctx.clone(),
                        host,
                        job,
                        self.tx.clone(),
                        gate,
                        close,
                    ));
                }
                Dispatch::Page(job) => {
                    self.run.page_started();
                    if job.revisit {
                        self.in_flight.revisit_dispatched();
                    }
                    self.start_page(job, now)?
                }
            }
        }
        Ok(())
    }

    /// Starts a page's request: as a delta where one is planned for a held copy, without
    /// validators where a believed site announced a change.
    fn start_page(&mut self, job: Queued, now: Instant) -> Result<(), CrawlError> {
        let url = match Url::parse(&job.url) {
            Ok(u) => u,
            Err(e) => {
                self.final_without_fetch(job, format!("malformed URL: {e}"), now);
                return Ok(());
            }
        };
        let rules = self.frontier.rules(job.host, now);
        if !rules.is_some_and(|r| r.allows(&url)) {
            self.metrics.fetch("disallowed");
            self.final_without_fetch(job, state::DISALLOWED.to_string(), now);
            return Ok(());
        }
        let usage = self.usage_stated(job.host, &url, now);
        if let Some(p) = usage.refuses(&self.settings.purposes) {
            self.metrics.fetch("usage");
            self.final_without_fetch(job, state::usage_skipped(p.as_str()), now);
            return Ok(());
        }
        // Only a revisit has validators to send (a new URL has no record yet); a visit or a
        // page taken from a snapshot since the last save counts as held.
        let known = if job.revisit {
            super::cooperation::KnownNow {
                store: &self.store,
                unsaved: &self.unsaved,
            }
            .read(job.fp)?
        } else {
            None
        };
        self.in_flight.page_started();
        if let Some(known) = known.clone().filter(|k| k.content.is_some())
            && let Some(plan) = self.coop.delta_plan(job.fp)
        {
            let lane = self.lane(job.host);
            self.rt.spawn(crate::coop::requests::page_delta(
                self.ctx.clone(),
                job,
                url,
                (known, plan),
                lane,
                self.tx.clone(),
                usage,
            ));
            return Ok(());
        }
        let conditional = self.ctx.conditional && !self.coop.announced_change(job.fp);
        // A host's first page sent without a place ends its first look: the host then waits
        // for room, maybe minutes, and its connection would only idle until then.
        let close = !self.frontier.keeps_connection(job.host);
        let lane = self.lane(job.host);
        self.rt.spawn(tasks::page(
            self.ctx.clone(),
            job,
            url,
            known,
            (conditional, usage, close),
            lane,
            self.tx.clone(),
        ));
        Ok(())
    }

    /// The usage preferences stated for `url` before any request: robots.txt's for this
    /// crawler and the site's agent's, the most restrictive winning.
    pub(super) fn usage_stated(&self, host: crate::ids::HostId, url: &Url, now: Instant) -> Prefs {
        self.frontier
            .rules(host, now)
            .map(|r| r.usage_at(url))
            .unwrap_or_default()
            .strictest(self.coop.usage_of(host))
    }

    /// A URL ends without a request (robots.txt or usage preferences forbid it, it does not
    /// parse).
    fn final_without_fetch(&mut self, job: Queued, error: String, now: Instant) {
        self.recorded_without_content(&job, error, Duration::ZERO);
        self.request_ended(job.host, now);
    }

    /// A URL's final record that holds nothing of the page: the crawl log's line and the
    /// page's row, with why.
    pub(super) fn recorded_without_content(
        &mut self,
        job: &Queued,
        error: String,
        elapsed: Duration,
    ) {
        let record = self.logged_without_content(job, error, elapsed);
        self.unsaved.finished(job.seq, record);
    }

    /// The crawl log's line of a URL that holds nothing of the page, and its record.
    pub(super) fn logged_without_content(
        &mut self,
        job: &Queued,
        error: String,
        elapsed: Duration,
    ) -> PageRecord {
        let at = now_ms();
        self.log.write(&Entry {
            at,
            url: &job.url,
            depth: job.depth,
            hops: job.hops,
            elapsed,
            note: &error,
            ..Default::default()
        });
        PageRecord {
            url: job.url.clone(),
            fp: job.fp,
            host: job.host,
            depth: job.depth,
            error: Some(error),
            fetched_at: at,
            ..Default::default()
        }
    }
}

impl Engine {
    /// At the end of a one-pass crawl: the URLs left on hosts parked beyond `end_wait`, said.
    fn left_parked(&self, end_by: Instant) {
        let (hosts, urls) = self.frontier.parked_beyond(end_by);
        if hosts > 0 {
            tracing::warn!(
                "the crawl ends with {urls} URLs of {hosts} hosts left: their servers failed and their next attempt is more than {} s away (end_wait); a later run takes them up",
                self.settings.end_wait.as_secs()
            );
        }
    }
}
