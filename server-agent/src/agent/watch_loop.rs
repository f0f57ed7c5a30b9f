//! The watch loop: takes the watcher's events, debounces them, reconciles what they name,
//! publishes, and in the quiet between events judges files again (on the rolling schedule,
//! first those whose rules changed), retries files the web server could not be asked about,
//! and notices when a server configuration file changes.

use super::{Agent, AgentError};
use crate::debounce::EventQueue;
use crate::publish::PublishError;
use crate::scan;
use crate::store::truncate_ms;
use crate::watch::Signal;
use crate::web_server::reload::Reload;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Most files asked about again in one round, so an event never waits long behind one.
const ROUND: usize = 16;

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

/// When to judge files again in the watch loop: tokens filled at the rate that covers every
/// file within `--judge-every` (or `--judge-rate` while some wait first), paused after the
/// server could not be asked; and the files whose judging waits for the server to answer.
struct Judging {
    tokens: f64,
    filled: Instant,
    paused_until: Option<Instant>,
    pause: Duration,
    follow_ups: Vec<Instant>,
    warned: Option<Instant>,
}

impl Judging {
    fn new() -> Judging {
        Judging {
            tokens: 0.0,
            filled: Instant::now(),
            paused_until: None,
            pause: Duration::ZERO,
            follow_ups: Vec::new(),
            warned: None,
        }
    }

    /// The server could not be asked: wait longer each time (1 s to a minute), and say so
    /// loudly at most once a minute.
    fn unreachable(&mut self, why: &str, waiting: usize) {
        self.pause = (self.pause * 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
        self.paused_until = Some(Instant::now() + self.pause);
        if self
            .warned
            .is_none_or(|w| w.elapsed() >= Duration::from_secs(60))
        {
            self.warned = Some(Instant::now());
            tracing::error!(
                "{why}: {waiting} files wait to be judged; nothing new is published until the web server answers (what was judged stays); asking again in {} s",
                self.pause.as_secs()
            );
        }
    }

    fn answered(&mut self) {
        if self.paused_until.take().is_some() && !self.pause.is_zero() {
            tracing::info!("the web server answers again");
        }
        self.pause = Duration::ZERO;
    }

    fn paused(&self, now: Instant) -> bool {
        self.paused_until.is_some_and(|u| now < u)
    }

    /// Files that may be asked about now.
    fn budget(&mut self, now: Instant, rate: f64) -> usize {
        let secs = now.duration_since(self.filled).as_secs_f64();
        self.filled = now;
        self.tokens = (self.tokens + secs * rate).min(ROUND as f64);
        self.tokens.floor() as usize
    }

    /// When the loop must wake for judging at the latest: soon enough to keep to `rate` while
    /// files wait first (`forced`), twice a second otherwise.
    fn wake(&self, now: Instant, forced: bool, rate: f64) -> Instant {
        let mut at = now + Duration::from_millis(500);
        if forced && !self.paused(now) {
            at = at.min(now + Duration::from_secs_f64(ROUND as f64 / rate.max(1.0)));
        }
        if let Some(u) = self.paused_until {
            at = at.min(u.max(now));
        }
        self.follow_ups.iter().fold(at, |a, f| a.min(*f))
    }
}

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
        let mut watched_links: std::collections::HashSet<String> = std::collections::HashSet::new();
        if let Some(e) = self.watch_error.take() {
            tracing::error!("{e}; rescanning every 30 s instead of watching");
        }
        let rescan_every = if watcher.is_some() {
            self.core.config.rescan_interval
        } else {
            self.core
                .config
                .rescan_interval
                .min(Duration::from_secs(30))
        };
        let mut queue = EventQueue::new(self.core.config.debounce);
        let mut next_rescan = Instant::now() + rescan_every;
        let mut rescan_reason: Option<String> =
            catch_up.then(|| "catching up with changes made before watching began".to_string());
        // A rescan that must judge every file again (the docroot's own permissions changed).
        let mut rescan_judging = false;
        if catch_up {
            next_rescan = Instant::now();
        }
        let mut backoff = Duration::ZERO;
        let mut sitemaps_stale: Option<Instant> = None;
        // Since when events are taken past their batch's window.
        let mut taking_late: Option<Instant> = None;
        // Documents that could not be written (a full disk) are tried again on their own, not
        // only with the next change, which may not come for days: when, and the pause after.
        let mut republish: Option<(Instant, Duration)> = None;
        let mut judging = Judging::new();
        let mut server = Reload::of(self.server_watch());
        let mut config_polled = Instant::now();
        let mut reads_counted = Instant::now();

        while !stop.load(Ordering::Relaxed) {
            if let Some(w) = watcher.as_mut() {
                for rel in &self.linked {
                    if watched_links.insert(rel.clone())
                        && let Err(e) = w.watch_file(&self.core.config.docroot.join(rel))
                    {
                        tracing::warn!(
                            "{rel} has several hard links and cannot be watched ({e}): its changes through the others are found by the rescans"
                        );
                    }
                }
            }
            self.finish_snapshot()?;
            self.start_snapshot_if_due()?;
            let now = Instant::now();
            let mut deadline = queue
                .deadline()
                .unwrap_or(now + Duration::from_millis(500))
                .min(next_rescan)
                .min(republish.map_or(next_rescan, |(at, _)| at))
                .min(judging.wake(now, self.judging_forced(), self.core.config.judge_rate));
            if sitemaps_stale.is_some() {
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
            if let Some((at, signal)) = received {
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
                            rescan_reason
                                .get_or_insert_with(|| "the docroot itself changed".into());
                            rescan_judging = true;
                        }
                        queue.touched(paths, false, at);
                    }
                    Signal::Written(paths) => queue.touched(rel(paths), true, at),
                    Signal::Closed(paths) => queue.closed(rel(paths), at),
                    Signal::Rescan(reason) => {
                        rescan_reason = Some(reason);
                        queue.touched(Vec::new(), false, at);
                    }
                }
                // The sitemaps wait at most a second behind a stream of events. They were once
                // left for a quiet moment, and every event after that second fell through as a
                // batch of its own: under load, 7,360 files took 5 minutes one by one.
                if sitemaps_stale.is_some_and(|since| since.elapsed() >= SITEMAPS_WAIT) {
                    sitemaps_stale = None;
                    self.publish_sitemaps(&mut republish);
                }
                // What is waiting joins the batch, for a second at most past its window: a
                // stream faster than the loop takes it is still cut into batches.
                let now = Instant::now();
                if queue.deadline().is_none_or(|d| now < d) {
                    taking_late = None;
                    continue;
                }
                if now.duration_since(*taking_late.get_or_insert(now)) < TAKING_LATE {
                    continue;
                }
            }
            taking_late = None;
            let now = Instant::now();
            if now.duration_since(reads_counted) >= super::reads::READS_EVERY {
                reads_counted = now;
                // New shares of reads (rounded: rarely) are published at once.
                if self.count_reads()? {
                    self.publish()?;
                }
            }
            if now.duration_since(config_polled) >= CONFIG_POLL {
                config_polled = now;
                if let Some(what) = server.changed() {
                    tracing::warn!(
                        "the web server changed ({what}): its configuration is read again and every file is judged again"
                    );
                    self.look_at_server_again()?;
                    server = Reload::of(self.server_watch());
                    self.judge_all_again()?;
                    judging.follow_ups = FOLLOW_UPS.iter().map(|d| now + *d).collect();
                    rescan_reason = Some("the web server's configuration changed".into());
                    next_rescan = now;
                }
            }
            if judging.follow_ups.first().is_some_and(|f| now >= *f) {
                judging.follow_ups.remove(0);
                self.judge_all_again()?;
            }
            if now >= next_rescan {
                rescan_reason.get_or_insert_with(|| "periodic rescan".into());
            }
            let rescan_due = rescan_reason.is_some() && (now >= next_rescan || queue.ready(now));
            let mut paths = if rescan_due {
                BTreeSet::new()
            } else {
                queue.take_ready(now)
            };
            // Files the server could not be asked about, when it may answer again.
            if !rescan_due && !self.waiting.is_empty() && !judging.paused(now) {
                paths.append(&mut self.waiting);
            }
            if !rescan_due && paths.is_empty() {
                if let Some((at, pause)) = republish
                    && now >= at
                {
                    let at = truncate_ms(self.core.clock.now());
                    let done = self
                        .core
                        .publisher
                        .publish_listing_and_feed(&self.core.inventory, &self.core.store, at)
                        .and_then(|_| {
                            self.core.publisher.publish_sitemaps(
                                &self.core.inventory,
                                &self.core.store,
                                at,
                            )
                        });
                    republish = match done {
                        Ok(_) => {
                            tracing::info!("published the documents that could not be written");
                            sitemaps_stale = None;
                            None
                        }
                        Err(e) => Some(publish_failed(&e, Some(pause))),
                    };
                } else if sitemaps_stale.take().is_some() {
                    self.publish_sitemaps(&mut republish);
                } else if !judging.paused(now) {
                    // Quiet: judge a few files again.
                    let spread = self.judged_files() as f64
                        / (self.core.config.judge_every.as_secs_f64() * 0.9).max(1.0);
                    let rate = if self.judging_forced() {
                        self.core.config.judge_rate
                    } else {
                        spread.min(self.core.config.judge_rate)
                    };
                    let n = judging.budget(now, rate);
                    if n > 0 {
                        let round = self.judge_again(n)?;
                        judging.tokens -= round.asked.max(1) as f64;
                        match round.unreachable {
                            Some(why) => judging.unreachable(&why, n),
                            None => judging.answered(),
                        }
                        if round.changes > 0 {
                            self.publish_changes(&mut republish)?;
                            sitemaps_stale.get_or_insert_with(Instant::now);
                        }
                    }
                }
                continue;
            }
            let outcome = match rescan_reason.take().filter(|_| rescan_due) {
                Some(reason) => {
                    tracing::warn!("rescanning the whole docroot: {reason}");
                    next_rescan = now + rescan_every;
                    queue.clear();
                    if std::mem::take(&mut rescan_judging) {
                        self.full_scan_judging_all(true)
                    } else {
                        self.full_scan(true)
                    }
                }
                None => self.reconcile_paths(&paths),
            };
            match outcome {
                Ok(result) => {
                    backoff = Duration::ZERO;
                    for p in &result.problems {
                        tracing::warn!("{p}");
                    }
                    queue.retry(result.unstable);
                    match &result.unreachable {
                        Some(why) => judging.unreachable(why, result.deferred.len()),
                        None if result.judged > 0 => judging.answered(),
                        None => {}
                    }
                    if !result.changes.is_empty() {
                        for c in &result.changes {
                            tracing::debug!(seq = c.seq, kind = %c.kind, path = %c.path, "change");
                        }
                        self.publish_changes(&mut republish)?;
                        sitemaps_stale.get_or_insert_with(Instant::now);
                    }
                }
                Err(e) => {
                    // Nothing was committed: look at everything again after a pause.
                    backoff = (backoff * 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
                    tracing::error!("{e}; retrying in {} s", backoff.as_secs());
                    rescan_reason = Some("retrying after an error".into());
                    next_rescan = Instant::now() + backoff;
                }
            }
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

/// Logs a failed publication; returns when to try again and the pause (doubling from 1 s to
/// a minute).
fn publish_failed(e: &PublishError, pause: Option<Duration>) -> (Instant, Duration) {
    let pause = pause.map_or(Duration::from_secs(1), |p| {
        (p * 2).min(Duration::from_secs(60))
    });
    tracing::error!("{e}; publishing again in {} s", pause.as_secs());
    (Instant::now() + pause, pause)
}
