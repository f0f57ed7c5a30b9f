//! The watch loop: takes the watcher's events, debounces them, reconciles what they name,
//! publishes, and in the quiet between events judges files again (on the rolling schedule,
//! first those whose rules changed), retries files the web server could not be asked about,
//! and notices when a server configuration file changes.

use super::judging_pace::Judging;
use super::{Agent, AgentError, Reconciled};
use crate::debounce::EventQueue;
use crate::publish::PublishError;
use crate::scan;
use crate::store::truncate_ms;
use crate::watch::{Signal, Watcher};
use crate::web_server::reload::Reload;
use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// After a change of the server's configuration, the server is asked about every file again
/// at once and after these delays too: nginx and Apache apply a configuration only when
/// reloaded, which often follows the edit by a little while.
const FOLLOW_UPS: [Duration; 2] = [Duration::from_secs(60), Duration::from_secs(600)];

/// Longest the sitemaps wait behind robots.rdf and the feed while events keep coming.
const SITEMAPS_WAIT: Duration = Duration::from_secs(1);

/// Longest events are taken past their batch's window before the batch is looked at.
const TAKING_LATE: Duration = Duration::from_secs(1);

/// How often the server's configuration files are looked at.
const CONFIG_POLL: Duration = Duration::from_secs(1);

impl Agent {
    /// Watches the docroot and publishes within about a second of every change, until `stop`.
    ///
    /// robots.rdf and the changes feed are published as soon as a batch is saved; the sitemaps,
    /// which standard consumers poll rarely, follow once no event is waiting (at most a second
    /// later), so their gzip work never delays the next change.
    pub fn watch(&mut self, stop: &AtomicBool) -> Result<(), AgentError> {
        // Without a watcher started before the last scan, changes since that scan are unseen.
        let catch_up = self.watcher.is_none() && self.watch_error.is_none();
        if catch_up {
            self.start_watching();
        }
        let mut watcher = self.watcher.take();
        let mut watched_links: HashSet<String> = HashSet::new();
        if let Some(e) = self.watch_error.take() {
            tracing::error!("{e}; rescanning every 30 s instead of watching");
        }
        let mut t = Turns::new(self, watcher.is_some(), catch_up);
        while !stop.load(Ordering::Relaxed) {
            if let Some(w) = watcher.as_mut() {
                self.watch_linked(w, &mut watched_links);
            }
            self.finish_snapshot()?;
            self.start_snapshot_if_due()?;
            let now = Instant::now();
            let mut deadline = t
                .queue
                .deadline()
                .unwrap_or(now + Duration::from_millis(500))
                .min(t.next_rescan)
                .min(t.republish.map_or(t.next_rescan, |(at, _)| at))
                .min(
                    t.judging
                        .wake(now, self.judging_forced(), self.core.config.judge_rate),
                );
            if t.sitemaps_stale.is_some() {
                // Only take what is already waiting, then do the sitemaps.
                deadline = now;
            }
            let received = match &watcher {
                Some(w) => w
                    .signals()
                    .recv_timeout(deadline.saturating_duration_since(now))
                    .ok(),
                None => {
                    std::thread::sleep(deadline.saturating_duration_since(now));
                    None
                }
            };
            if let Some((at, signal)) = received
                && !self.take_signal(&mut t, at, signal)
            {
                continue;
            }
            t.taking_late = None;
            let now = Instant::now();
            self.periodic_work(&mut t, now)?;
            let rescan_due =
                t.rescan_reason.is_some() && (now >= t.next_rescan || t.queue.ready(now));
            let mut paths = if rescan_due {
                BTreeSet::new()
            } else {
                t.queue.take_ready(now)
            };
            // Files the server could not be asked about, when it may answer again.
            if !rescan_due && !self.waiting.is_empty() && !t.judging.paused(now) {
                paths.append(&mut self.waiting);
            }
            if !rescan_due && paths.is_empty() {
                self.quiet_work(&mut t, now)?;
                continue;
            }
            let outcome = match t.rescan_reason.take().filter(|_| rescan_due) {
                Some(reason) => {
                    tracing::warn!("rescanning the whole docroot: {reason}");
                    t.next_rescan = now + t.rescan_every;
                    t.queue.clear();
                    if std::mem::take(&mut t.rescan_judging) {
                        self.full_scan_judging_all(true)
                    } else {
                        self.full_scan(true)
                    }
                }
                None => self.reconcile_paths(&paths),
            };
            self.take_outcome(&mut t, outcome)?;
        }
        self.save_held_marks()
    }

    /// Watches the files with several hard links one by one (a change through another link
    /// is not an event of the docroot).
    fn watch_linked(&self, w: &mut Watcher, watched: &mut HashSet<String>) {
        for rel in &self.linked {
            if watched.insert(rel.clone())
                && let Err(e) = w.watch_file(&self.core.config.docroot.join(rel))
            {
                tracing::warn!(
                    "{rel} has several hard links and cannot be watched ({e}): its changes through the others are found by the rescans"
                );
            }
        }
    }

    /// Takes one signal of the watcher into the queue; whether the batch is to be looked at
    /// now (false: more events are taken first).
    fn take_signal(&mut self, t: &mut Turns, at: Instant, signal: Signal) -> bool {
        let root = &self.core.config.docroot;
        let rel = |paths: Vec<std::path::PathBuf>| {
            paths
                .iter()
                .filter_map(|p| scan::relative(root, p))
                .collect::<Vec<_>>()
        };
        match signal {
            Signal::Paths(paths) => {
                let paths = rel(paths);
                if paths.iter().any(String::is_empty) {
                    t.rescan_reason
                        .get_or_insert_with(|| "the docroot itself changed".into());
                    t.rescan_judging = true;
                }
                t.queue.touched(paths, false, at);
            }
            Signal::Written(paths) => t.queue.touched(rel(paths), true, at),
            Signal::Closed(paths) => t.queue.closed(rel(paths), at),
            Signal::Rescan(reason) => {
                t.rescan_reason = Some(reason);
                t.queue.touched(Vec::new(), false, at);
            }
        }
        // The sitemaps wait at most a second behind a stream of events. They were once
        // left for a quiet moment, and every event after that second fell through as a
        // batch of its own: under load, 7,360 files took 5 minutes one by one.
        if t.sitemaps_stale
            .is_some_and(|since| since.elapsed() >= SITEMAPS_WAIT)
        {
            t.sitemaps_stale = None;
            self.publish_sitemaps(&mut t.republish);
        }
        // What is waiting joins the batch, for a second at most past its window: a
        // stream faster than the loop takes it is still cut into batches.
        let now = Instant::now();
        if t.queue.deadline().is_none_or(|d| now < d) {
            t.taking_late = None;
            return false;
        }
        now.duration_since(*t.taking_late.get_or_insert(now)) >= TAKING_LATE
    }

    /// What is done on its own clock: the reads counted, the server's configuration looked
    /// at (a change judges every file again, now and in follow-ups), and the rescans.
    fn periodic_work(&mut self, t: &mut Turns, now: Instant) -> Result<(), AgentError> {
        if now.duration_since(t.reads_counted) >= super::reads::READS_EVERY {
            t.reads_counted = now;
            // New shares of reads (rounded: rarely) are published at once.
            if self.count_reads()? {
                self.publish()?;
            }
        }
        if now.duration_since(t.config_polled) >= CONFIG_POLL {
            t.config_polled = now;
            if let Some(what) = t.server.changed() {
                tracing::warn!(
                    "the web server changed ({what}): its configuration is read again and every file is judged again"
                );
                self.look_at_server_again()?;
                t.server = Reload::of(self.server_watch());
                self.judge_all_again()?;
                t.judging.follow_ups = FOLLOW_UPS.iter().map(|d| now + *d).collect();
                t.rescan_reason = Some("the web server's configuration changed".into());
                t.next_rescan = now;
            }
        }
        if t.judging.follow_ups.first().is_some_and(|f| now >= *f) {
            t.judging.follow_ups.remove(0);
            self.judge_all_again()?;
        }
        if now >= t.next_rescan {
            t.rescan_reason
                .get_or_insert_with(|| "periodic rescan".into());
        }
        Ok(())
    }

    /// Nothing to reconcile: documents that could not be written tried again, else the
    /// sitemaps that wait, else a few files judged again.
    fn quiet_work(&mut self, t: &mut Turns, now: Instant) -> Result<(), AgentError> {
        if let Some((at, pause)) = t.republish
            && now >= at
        {
            let at = truncate_ms(self.core.clock.now());
            let (inventory, store) = (&self.core.inventory, &self.core.store);
            let done = self
                .core
                .publisher
                .publish_listing_and_feed(inventory, store, at)
                .and_then(|_| self.core.publisher.publish_sitemaps(inventory, store, at));
            t.republish = match done {
                Ok(_) => {
                    tracing::info!("published the documents that could not be written");
                    t.sitemaps_stale = None;
                    None
                }
                Err(e) => Some(publish_failed(&e, Some(pause))),
            };
        } else if t.sitemaps_stale.take().is_some() {
            self.publish_sitemaps(&mut t.republish);
        } else if !t.judging.paused(now) {
            let spread = self.judged_files() as f64
                / (self.core.config.judge_every.as_secs_f64() * 0.9).max(1.0);
            let rate = if self.judging_forced() {
                self.core.config.judge_rate
            } else {
                spread.min(self.core.config.judge_rate)
            };
            let n = t.judging.budget(now, rate);
            if n > 0 {
                let round = self.judge_again(n)?;
                t.judging.tokens -= round.asked.max(1) as f64;
                match round.unreachable {
                    Some(why) => t.judging.unreachable(&why, n),
                    None => t.judging.answered(),
                }
                if round.changes > 0 {
                    self.publish_changes(&mut t.republish)?;
                    t.sitemaps_stale.get_or_insert_with(Instant::now);
                }
            }
        }
        Ok(())
    }

    /// What a reconciliation or rescan ended in: its changes published, or after an error
    /// everything looked at again after a growing pause.
    fn take_outcome(
        &mut self,
        t: &mut Turns,
        outcome: Result<Reconciled, AgentError>,
    ) -> Result<(), AgentError> {
        let result = match outcome {
            Ok(result) => result,
            Err(e) => {
                // Nothing was committed: look at everything again after a pause.
                t.backoff = (t.backoff * 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
                tracing::error!("{e}; retrying in {} s", t.backoff.as_secs());
                t.rescan_reason = Some("retrying after an error".into());
                t.next_rescan = Instant::now() + t.backoff;
                return Ok(());
            }
        };
        t.backoff = Duration::ZERO;
        for p in &result.problems {
            tracing::warn!("{p}");
        }
        t.queue.retry(result.unstable);
        match &result.unreachable {
            Some(why) => t.judging.unreachable(why, result.deferred.len()),
            None if result.judged > 0 => t.judging.answered(),
            None => {}
        }
        if !result.changes.is_empty() {
            for c in &result.changes {
                tracing::debug!(seq = c.seq, kind = %c.kind, path = %c.path, "change");
            }
            self.publish_changes(&mut t.republish)?;
            t.sitemaps_stale.get_or_insert_with(Instant::now);
        }
        Ok(())
    }

    /// Publishes the sitemaps after changes were published; a failure is tried again later
    /// (`republish`).
    fn publish_sitemaps(&mut self, republish: &mut Option<(Instant, Duration)>) {
        let started = Instant::now();
        let done = self.core.publisher.publish_sitemaps(
            &self.core.inventory,
            &self.core.store,
            truncate_ms(self.core.clock.now()),
        );
        let noted = done.as_ref().map(|_| None).map_err(|e| e.to_string());
        self.note_publication("sitemaps", started.elapsed(), noted);
        match done {
            Ok(report) => tracing::debug!(
                parts = report.parts,
                rewritten = report.written.written,
                "sitemaps published"
            ),
            Err(e) => *republish = Some(publish_failed(&e, republish.map(|(_, p)| p))),
        }
    }

    /// Publishes robots.rdf and the changes feed after changes were saved; a failure is tried
    /// again later (`republish`).
    fn publish_changes(
        &mut self,
        republish: &mut Option<(Instant, Duration)>,
    ) -> Result<(), AgentError> {
        let started = Instant::now();
        let done = self.core.publisher.publish_listing_and_feed(
            &self.core.inventory,
            &self.core.store,
            truncate_ms(self.core.clock.now()),
        );
        let noted = match &done {
            Ok(r) => Ok(Some(r.listing_bytes)),
            Err(e) => Err(e.to_string()),
        };
        self.note_publication("listing and feed", started.elapsed(), noted);
        match done {
            Ok(report) => {
                tracing::info!(
                    head = self.core.store.head_seq().unwrap_or(0),
                    listing_ms = report.listing_time.as_millis() as u64,
                    spliced = report.spliced,
                    parts_written = report.parts.written,
                    part_bytes = report.parts.bytes,
                    "published"
                );
                // The listing is current; the sitemaps follow as usual.
                *republish = None;
            }
            Err(e) => *republish = Some(publish_failed(&e, republish.map(|(_, p)| p))),
        }
        Ok(())
    }
}

/// The watch loop's state from one turn to the next.
struct Turns {
    queue: EventQueue,
    rescan_every: Duration,
    next_rescan: Instant,
    rescan_reason: Option<String>,
    /// A rescan must judge every file again (the docroot's own permissions changed).
    rescan_judging: bool,
    backoff: Duration,
    sitemaps_stale: Option<Instant>,
    /// Since when events are taken past their batch's window.
    taking_late: Option<Instant>,
    /// Documents that could not be written (a full disk) are tried again on their own, not
    /// only with the next change, which may not come for days: when, and the pause after.
    republish: Option<(Instant, Duration)>,
    judging: Judging,
    server: Reload,
    config_polled: Instant,
    reads_counted: Instant,
}

impl Turns {
    /// The first turn's state: a rescan at once when catching up with changes made before
    /// watching began; every 30 s at most without a watcher.
    fn new(agent: &Agent, watching: bool, catch_up: bool) -> Turns {
        let interval = agent.core.config.rescan_interval;
        let rescan_every = if watching {
            interval
        } else {
            interval.min(Duration::from_secs(30))
        };
        let now = Instant::now();
        Turns {
            queue: EventQueue::new(agent.core.config.debounce),
            rescan_every,
            next_rescan: if catch_up { now } else { now + rescan_every },
            rescan_reason: catch_up
                .then(|| "catching up with changes made before watching began".to_string()),
            rescan_judging: false,
            backoff: Duration::ZERO,
            sitemaps_stale: None,
            taking_late: None,
            republish: None,
            judging: Judging::new(),
            server: Reload::of(agent.server_watch()),
            config_polled: now,
            reads_counted: now,
        }
    }
}

/// Logs a failed publication; returns when to try again and the pause (doubling from 1 s to
/// a minute).
fn publish_failed(e: &PublishError, pause: Option<Duration>) -> (Instant, Duration) {
    let pause = pause.map_or(Duration::from_secs(1), |p| {
        (p * 2).min(Duration::from_secs(60))
    });
    tracing::error!("{e}; publishing again in {} s", pause.as_secs());
    (Instant::now() + pause, pause)
}
