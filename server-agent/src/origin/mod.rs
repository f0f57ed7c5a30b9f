//! Origin mode: the agent beside a site that is not files (WordPress and its kind), reading it
//! from its own web server on loopback, once for all crawlers.
//!
//! The pages come from what the site says and serves: its sitemaps ([`discover`]), the web
//! server's access log ([`access_log`]) and the webmaster's seeds. Each page is asked for as an
//! anonymous client would ([`fetch`]); what is served alike to anyone is published, with the
//! same state, documents, deltas and hub as a docroot's files. Changes are found by pings
//! (XML-RPC `weblogUpdates`, WebSub publish, `webcoop-agent notify`) and by checking every
//! page again at its own pace ([`schedule`]) within a request budget; parts of a page written
//! anew for each request do not count as changes ([`volatile`]), and a page that changes at
//! every request anyway is not published.

pub(crate) mod access_log;
mod discover;
mod fetch;
mod schedule;
pub(crate) mod volatile;

use crate::activity::{Activity, Exclusions, Publication};
use crate::agent::snapshots::{SnapshotSite, Snapshots};
use crate::agent::{
    AgentError, ChangeObserver, commit_batch, open_state, publisher_for, retention_of,
};
use crate::config::{Config, OriginSettings};
use crate::content_type;
use crate::inventory::{FileEntry, Inventory};
use crate::privacy::{FilterRules, PublicFilter, RobotsTxt};
use crate::publish::Publisher;
use crate::snapshot::{Bodies, BuiltSnapshot};
use crate::store::{Batch, LoggedChange, NewVersion, Retention, Store, truncate_ms};
use chrono::{DateTime, Utc};
use fetch::{Answer, OriginClient, Page, Validators};
use schedule::Tracked;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::clock::Clock;
use webcoop_protocol::delta::summarize;
use webcoop_protocol::validator::Sha256Digest;

/// Pages a ping named, as site paths, for the origin loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Site paths (relative to the base URL).
    pub paths: Vec<String>,
}

/// Keeps requests to the origin at most `rate` per second, one at a time.
pub(crate) struct Pacer {
    gap: Duration,
    next: Instant,
    /// Requests made, in all.
    pub(crate) requests: u64,
}

impl Pacer {
    fn new(rate: f64) -> Pacer {
        Pacer {
            gap: Duration::from_secs_f64(1.0 / rate),
            next: Instant::now(),
            requests: 0,
        }
    }

    /// Waits for the next request's turn, and counts it.
    pub(crate) fn wait(&mut self) {
        let now = Instant::now();
        if self.next > now {
            std::thread::sleep(self.next - now);
        }
        self.next = Instant::now().max(self.next) + self.gap;
        self.requests += 1;
    }

    fn ready_in(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }
}

/// What origin mode has done, in all.
#[derive(Debug, Default, Clone)]
pub struct OriginStats {
    /// Requests to the origin.
    pub requests: u64,
    /// Checks answered 304.
    pub not_modified: u64,
    /// Checks whose page was the same once volatile parts were left out.
    pub unchanged: u64,
    /// Changes found (new, modified, deleted pages).
    pub changes: u64,
    /// Pings taken.
    pub pings: u64,
}

/// The agent for a site read from its web server.
pub struct OriginAgent {
    config: Config,
    settings: OriginSettings,
    clock: Arc<dyn Clock>,
    client: OriginClient,
    pacer: Pacer,
    store: Store,
    inventory: Inventory,
    publisher: Publisher,
    retention: Retention,
    observer: Option<ChangeObserver>,
    filter: Arc<PublicFilter>,
    pages: HashMap<String, Tracked>,
    logs: Vec<access_log::AccessLog>,
    baseline_done: bool,
    batch: Batch,
    stats: OriginStats,
    next_discovery: Instant,
    activity: Option<Arc<Activity>>,
    /// Requests counted into the console's figures so far.
    requests_noted: u64,
    snapshots: Snapshots,
    /// Why the origin could not be reached at the last reading of its sitemaps, if it could
    /// not.
    unreachable: Option<String>,
    /// When the sitemaps were last read.
    last_discovery: Option<Instant>,
}

/// Shortest time between two readings of the sitemaps that pings ask for.
const PING_DISCOVERY_GAP: Duration = Duration::from_secs(5);

/// Time before the sitemaps are read again after the origin could not be reached.
const RETRY_UNREACHABLE: Duration = Duration::from_secs(30);

impl OriginAgent {
    /// Opens the state of the site `config` reads from its origin.
    pub fn open(config: Config, clock: Arc<dyn Clock>) -> Result<OriginAgent, AgentError> {
        let settings = config
            .origin
            .clone()
            .ok_or_else(|| AgentError::Origin("the configuration has no --origin".into()))?;
        // The server may move (another port, another address): the site is what stays.
        let identity = format!("origin mode at {}", config.base_url);
        let store = open_state(&config, &identity)?;
        let baseline_done = store.meta("baseline")?.as_deref() == Some("done");
        let inventory = store.load_inventory()?;
        let publisher = publisher_for(&config)?;
        let client = OriginClient::new(&config.base_url, &settings.server, Duration::from_secs(20))
            .map_err(AgentError::Origin)?;
        let mut pages: HashMap<String, Tracked> = HashMap::new();
        let now = clock.now();
        for (path, _) in inventory.iter() {
            // How often it changed before this start, as the state recorded it: its changes
            // over the time since it was first seen (the checks in between are not kept).
            let history = match store.file_facts(path)? {
                Some((first_seen, changes)) => {
                    let observed = (now - first_seen).num_milliseconds().max(0) as f64 / 1000.0;
                    webcoop_protocol::change_rate::ChangeHistory {
                        intervals: changes.saturating_add(1),
                        changed: changes,
                        observed,
                        ..Default::default()
                    }
                }
                None => Default::default(),
            };
            pages.insert(
                path.to_string(),
                Tracked {
                    history,
                    ..Tracked::default()
                },
            );
        }
        for seed in &settings.seeds {
            pages.entry(seed.clone()).or_default();
        }
        let logs = settings
            .access_logs
            .iter()
            .map(|p| access_log::AccessLog::new(p.clone()))
            .collect();
        let filter = Self::filter_with(&config, RobotsTxt::Absent)?;
        Ok(OriginAgent {
            retention: retention_of(&config),
            pacer: Pacer::new(settings.rate),
            settings,
            clock,
            client,
            store,
            inventory,
            publisher,
            observer: None,
            filter,
            pages,
            logs,
            baseline_done,
            batch: Batch::default(),
            stats: OriginStats::default(),
            next_discovery: Instant::now(),
            activity: None,
            requests_noted: 0,
            snapshots: Snapshots::default(),
            unreachable: None,
            last_discovery: None,
            config,
        })
    }

    fn filter_with(config: &Config, robots: RobotsTxt) -> Result<Arc<PublicFilter>, AgentError> {
        let robots = if config.ignore_robots_txt {
            RobotsTxt::Absent
        } else {
            robots
        };
        Ok(Arc::new(PublicFilter::from_rules(FilterRules {
            include: &config.include,
            exclude: &config.exclude,
            publish_ext: &config.publish_ext,
            robots_txt: Some(robots),
            // The output directory is served at the base URL: what the agent writes there is
            // never taken for a page of the site.
            own_dir: Some(""),
            own_files: &[],
            access: crate::server_config::ServerRules::none(),
        })?))
    }

    /// Calls `observer` with every batch of changes once it is saved.
    pub fn observe(&mut self, observer: ChangeObserver) {
        self.observer = Some(observer);
    }

    /// Notes publications, refusals and requests to the origin in `activity`, for the console.
    pub fn record_activity(&mut self, activity: Arc<Activity>) {
        self.activity = Some(activity);
    }

    /// The pages published.
    pub fn inventory(&self) -> &Inventory {
        &self.inventory
    }

    /// What has been done so far.
    pub fn stats(&self) -> OriginStats {
        OriginStats {
            requests: self.pacer.requests,
            ..self.stats.clone()
        }
    }

    /// Reads the sitemaps and robots.txt again, and the access logs, taking new pages in.
    pub fn discover(&mut self) -> Result<usize, AgentError> {
        self.last_discovery = Some(Instant::now());
        let robots = discover::robots_txt(&self.client, &mut self.pacer);
        let robots_rule = match &robots {
            discover::Robots::Body(b) => RobotsTxt::Bytes(b),
            discover::Robots::Absent => RobotsTxt::Absent,
            discover::Robots::Refused(why) => RobotsTxt::Unreadable(why.clone()),
            discover::Robots::Unreachable(why) => {
                // A server down for a while changes nothing of what is published: the rules
                // and pages known stay, and the sitemaps are read again soon.
                tracing::warn!(
                    "{} cannot be reached ({why}): what is published stays; asked again in {} s",
                    self.client.origin(),
                    RETRY_UNREACHABLE.as_secs()
                );
                self.unreachable = Some(why.clone());
                self.next_discovery = Instant::now() + RETRY_UNREACHABLE;
                return Ok(0);
            }
        };
        self.unreachable = None;
        self.filter = Self::filter_with(&self.config, robots_rule)?;
        if let discover::Robots::Refused(why) = &robots {
            tracing::error!(
                "{}/robots.txt cannot be read ({why}): nothing new is published until it can be",
                self.client.origin()
            );
        }
        let body = match &robots {
            discover::Robots::Body(b) => Some(b.as_slice()),
            _ => None,
        };
        let roots = discover::sitemap_roots(&self.config.base_url, body);
        let found = discover::walk(
            &self.client,
            (&self.config.base_url, &self.settings.queries),
            roots,
            self.settings.max_urls,
            &mut self.pacer,
        );
        for p in &found.problems {
            tracing::warn!("sitemaps: {p}");
        }
        if !found.refused.is_empty() {
            tracing::warn!(
                "sitemaps name {} URLs that are not pages of {} (the first: {} {})",
                found.refused.len(),
                self.config.base_url,
                found.refused[0].0,
                found.refused[0].1
            );
        }
        let paths = found
            .paths
            .into_iter()
            .filter(|p| self.allowed(p).is_ok())
            .collect();
        let mut added = self.take_in(paths);
        added += self.read_logs();
        self.next_discovery = Instant::now() + self.settings.discover_every;
        Ok(added)
    }

    /// Whether the rules (robots.txt, the globs, the names) let `path` be published, its query
    /// included.
    fn allowed(&self, path: &str) -> Result<(), String> {
        self.filter
            .check_file(&crate::urls::request_form(path))
            .map_err(|why| why.to_string())
    }

    /// Takes `paths` in as pages to check, as far as the budget of pages allows; returns how
    /// many were new.
    fn take_in(&mut self, paths: Vec<String>) -> usize {
        let mut added = 0;
        for p in paths {
            if self.pages.contains_key(&p) {
                continue;
            }
            if self.pages.len() >= self.settings.max_urls {
                tracing::warn!(
                    "{} pages tracked, the most --origin-max-urls allows: {p} and later ones wait",
                    self.pages.len()
                );
                break;
            }
            self.pages.insert(p, Tracked::default());
            added += 1;
        }
        added
    }

    fn read_logs(&mut self) -> usize {
        let mut paths = Vec::new();
        for log in &mut self.logs {
            match log.read_new() {
                Ok(targets) => {
                    for t in targets {
                        if let Ok(p) = crate::urls::logged_path(
                            &self.config.base_url,
                            &t,
                            &self.settings.queries,
                        ) {
                            paths.push(p);
                        }
                    }
                }
                Err(e) => tracing::warn!("{}: {e}", log.path().display()),
            }
        }
        paths.retain(|p| self.allowed(p).is_ok());
        self.take_in(paths)
    }

    /// Marks pages named by a ping to be checked before any other; returns how many were
    /// taken (paths of this site that may be published).
    pub fn urgent(&mut self, paths: &[String]) -> usize {
        let mut taken = 0;
        for p in paths {
            if self.allowed(p).is_err() {
                continue;
            }
            if !self.pages.contains_key(p) && self.pages.len() >= self.settings.max_urls {
                continue;
            }
            self.pages.entry(p.clone()).or_default().urgent = true;
            taken += 1;
        }
        taken
    }

    /// Discovers, then checks every page once (all of them on the first run), saves and
    /// publishes: `--once`.
    pub fn run_once(&mut self) -> Result<OriginStats, AgentError> {
        self.discover()?;
        if let Some(why) = &self.unreachable {
            return Err(AgentError::Origin(format!(
                "the web server at {} cannot be reached ({why}): nothing was changed; run again once it answers",
                self.client.origin()
            )));
        }
        let mut paths: Vec<String> = self.pages.keys().cloned().collect();
        paths.sort();
        for p in paths {
            self.check(&p)?;
        }
        self.flush(true)?;
        Ok(self.stats())
    }

    /// Whether a new snapshot is due (snapshots configured, the baseline recorded).
    pub fn snapshot_due(&mut self) -> Result<bool, AgentError> {
        if !self.baseline_done {
            return Ok(false);
        }
        let mut snapshots = std::mem::take(&mut self.snapshots);
        let due = snapshots.due(&self.snapshot_site());
        self.snapshots = snapshots;
        due
    }

    fn snapshot_site(&self) -> SnapshotSite<'_> {
        SnapshotSite {
            config: &self.config,
            store: &self.store,
            inventory: &self.inventory,
            publisher: &self.publisher,
            // The pages as the web server served them, kept in the state.
            bodies: Bodies::Kept(self.config.state.clone()),
            now: self.clock.now(),
        }
    }

    /// Builds a snapshot of the published pages now (those with a kept version: text), and
    /// republishes robots.rdf naming it.
    pub fn build_snapshot(&mut self) -> Result<BuiltSnapshot, AgentError> {
        let mut snapshots = std::mem::take(&mut self.snapshots);
        let built = snapshots.build_now(&self.snapshot_site());
        self.snapshots = snapshots;
        let built = built?;
        self.publisher.set_snapshot(Some(built.sequence));
        self.flush(true)?;
        Ok(built)
    }

    /// Takes a finished background snapshot and starts the next when one is due.
    fn snapshot_step(&mut self) -> Result<(), AgentError> {
        if let Some(built) = self.snapshots.finished() {
            self.publisher.set_snapshot(Some(built.sequence));
            self.flush(true)?;
        }
        if !self.baseline_done {
            return Ok(());
        }
        let mut snapshots = std::mem::take(&mut self.snapshots);
        let started = snapshots.start_if_due(&self.snapshot_site());
        self.snapshots = snapshots;
        started
    }

    /// Checks pages at their pace until `stop` is set, taking pings from `notices`.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        notices: Option<Receiver<Notice>>,
    ) -> Result<(), AgentError> {
        let mut last_flush = Instant::now();
        let mut last_summary = (Instant::now(), self.stats());
        while !stop.load(Ordering::Relaxed) {
            if last_summary.0.elapsed() >= SUMMARY_EVERY {
                let now = self.stats();
                let was = &last_summary.1;
                tracing::info!(
                    "origin, last {} s: {} requests ({} answered 304, {} the same once volatile parts were left out), {} changes, {} pings; {} pages published of {} tracked",
                    SUMMARY_EVERY.as_secs(),
                    now.requests - was.requests,
                    now.not_modified - was.not_modified,
                    now.unchanged - was.unchanged,
                    now.changes - was.changes,
                    now.pings - was.pings,
                    self.inventory.len(),
                    self.pages.len()
                );
                last_summary = (Instant::now(), now);
            }
            if let Some(rx) = &notices {
                while let Ok(n) = rx.try_recv() {
                    self.take_notice(n);
                }
            }
            if Instant::now() >= self.next_discovery {
                self.discover()?;
            }
            let next = schedule::next_due(
                &self.pages,
                self.now_ms(),
                self.settings.revalidate_min,
                self.settings.revalidate_max,
            );
            match next {
                Some(p) => {
                    self.check(&p)?;
                    if self.batch_is_due(last_flush) {
                        self.flush(false)?;
                        // A site always busy with checks still gets its snapshots.
                        self.snapshot_step()?;
                        last_flush = Instant::now();
                    }
                }
                None => {
                    self.flush(false)?;
                    self.snapshot_step()?;
                    last_flush = Instant::now();
                    let wait = self.pacer.ready_in().max(Duration::from_millis(200));
                    match notices.as_ref().map(|rx| rx.recv_timeout(wait)) {
                        Some(Ok(n)) => self.take_notice(n),
                        Some(Err(RecvTimeoutError::Disconnected)) | None => {
                            std::thread::sleep(wait)
                        }
                        Some(Err(RecvTimeoutError::Timeout)) => {}
                    }
                    self.read_logs();
                }
            }
        }
        self.flush(false)
    }

    fn take_notice(&mut self, notice: Notice) {
        self.stats.pings += 1;
        let Notice { paths } = notice;
        let taken = self.urgent(&paths);
        tracing::info!(
            "told of changes at {} pages ({taken} taken): reading the sitemaps again",
            paths.len()
        );
        // A ping may announce a page nobody has named yet (WordPress's names only the home
        // and the feed): the sitemaps say which, read again soon, but not more often than
        // every few seconds however many pings come (the budget is for checking pages too).
        let now = Instant::now();
        let soonest = self
            .last_discovery
            .map_or(now, |t| (t + PING_DISCOVERY_GAP).max(now));
        self.next_discovery = self.next_discovery.min(soonest);
    }

    fn batch_is_due(&self, last_flush: Instant) -> bool {
        self.batch.upserts.len() + self.batch.deletions.len() >= 64
            || (!self.batch.is_empty() && last_flush.elapsed() >= Duration::from_millis(500))
    }

    fn now_ms(&self) -> i64 {
        crate::store::to_ms(self.clock.now())
    }

    /// Asks the origin for one page and records what it shows.
    fn check(&mut self, path: &str) -> Result<(), AgentError> {
        let listed = self.inventory.get(path).cloned();
        // Its rules may have changed since it was taken in (robots.txt, read again).
        if let Err(why) = self.allowed(path) {
            let now = truncate_ms(self.clock.now());
            self.remove(path, listed.as_ref(), now, why);
            if let Some(t) = self.pages.get_mut(path) {
                t.checked = Some(crate::store::to_ms(now));
                t.urgent = false;
            }
            return Ok(());
        }
        let known = match (&listed, self.pages.get(path)) {
            (Some(_), Some(t)) if t.conditional() => t.validators.clone(),
            _ => Validators::default(),
        };
        let checking_304s = self
            .pages
            .get(path)
            .is_some_and(|t| t.not_modified_streak >= schedule::TRUST_304);
        self.pacer.wait();
        let answer = self.client.get(path, &known);
        let now = truncate_ms(self.clock.now());
        let now_ms = crate::store::to_ms(now);
        let previous_check = self.pages.get(path).and_then(|t| t.checked);
        let interval = previous_check.map(|at| (now_ms - at).max(0) as f64 / 1000.0);
        let outcome = match answer {
            Answer::Page(page) => self.take_page(path, page, listed.as_ref(), now)?,
            Answer::NotModified => {
                self.stats.not_modified += 1;
                if let Some(t) = self.pages.get_mut(path) {
                    t.not_modified_streak += 1;
                }
                Outcome::Same
            }
            Answer::Gone => {
                self.remove(path, listed.as_ref(), now, "gone (404 or 410)".into());
                Outcome::Changed
            }
            Answer::Refused(why) => {
                self.remove(path, listed.as_ref(), now, why);
                Outcome::Changed
            }
            Answer::Unknown(why) => {
                tracing::warn!("{path}: {why}; asked again later");
                Outcome::Unknown
            }
        };
        if let Some(t) = self.pages.get_mut(path)
            && checking_304s
            && !matches!(outcome, Outcome::Unknown)
        {
            if matches!(outcome, Outcome::Changed) && !t.validators_lie {
                tracing::info!(
                    "{path}: answered 304 although it had changed; its validators are no longer used"
                );
                t.validators_lie = true;
            }
            t.not_modified_streak = 0;
        }
        if let Some(t) = self.pages.get_mut(path) {
            t.checked = Some(now_ms);
            t.urgent = false;
            if let (Some(length), Outcome::Same | Outcome::Changed) = (interval, &outcome) {
                t.history
                    .observe(length, matches!(outcome, Outcome::Changed), None);
            }
        }
        Ok(())
    }

    /// Records a page served with 200: unchanged, changed, new, or changing at every request.
    fn take_page(
        &mut self,
        path: &str,
        page: Page,
        listed: Option<&FileEntry>,
        now: DateTime<Utc>,
    ) -> Result<Outcome, AgentError> {
        let ctype = page
            .content_type
            .clone()
            .unwrap_or_else(|| content_type::of_path(path).to_string());
        let text = content_type::is_text(&ctype);
        let digest = volatile::change_digest(&page.body, text);
        if let Some(t) = self.pages.get_mut(path) {
            t.validators = page.validators.clone();
        }
        if listed.is_some_and(|e| e.fast == digest) {
            self.stats.unchanged += 1;
            return Ok(Outcome::Same);
        }
        if self.baseline_done {
            // Changed, or new: asked once more, so a page that is different at every request
            // (a clock, a counter, a random quote) is told from a page that changed.
            self.pacer.wait();
            if let Answer::Page(again) = self.client.get(path, &Validators::default())
                && volatile::change_digest(&again.body, text) != digest
            {
                self.remove(
                    path,
                    listed,
                    now,
                    "changes at every request, beyond what the volatile-part rule leaves out"
                        .into(),
                );
                return Ok(Outcome::Changed);
            }
        }
        let sha256 = Sha256Digest::of(&page.body);
        let size = page.body.len() as u64;
        let changed = match (listed, text) {
            (Some(prev), true) => self
                .store
                .version(path, &prev.sha256)?
                .map(|old| summarize(&old, &page.body).changed_fraction),
            _ => None,
        };
        let modified = match page.last_modified {
            Some(lm) if !self.baseline_done && lm <= now => truncate_ms(lm),
            _ => now,
        };
        let entry = FileEntry {
            size,
            mtime_ns: modified.timestamp_nanos_opt().unwrap_or(0),
            ctime_ns: 0,
            sha256,
            fast: digest,
            modified,
            seen: true,
        };
        let announce = self.baseline_done;
        self.batch
            .upserts
            .push((path.to_string(), entry, announce.then_some(modified)));
        if text {
            self.batch
                .versions
                .push(NewVersion::of(path, sha256, &page.body));
        }
        if announce {
            self.stats.changes += 1;
            self.batch.changes.push(LoggedChange {
                seq: 0,
                kind: if listed.is_some() {
                    ChangeKind::Modified
                } else {
                    ChangeKind::Created
                },
                path: path.to_string(),
                time: now,
                sha256: Some(sha256),
                prev_sha256: listed.map(|p| p.sha256),
                size: Some(size),
                content_type: Some(ctype),
                changed,
            });
        }
        if let Some(t) = self.pages.get_mut(path) {
            t.refused = None;
        }
        Ok(Outcome::Changed)
    }

    /// A page that is no longer published: gone, refused, or changing at every request.
    fn remove(&mut self, path: &str, listed: Option<&FileEntry>, now: DateTime<Utc>, why: String) {
        if let Some(t) = self.pages.get_mut(path) {
            if t.refused.as_deref() != Some(why.as_str()) {
                tracing::info!("not published, {why}: {path}");
                if let Some(a) = &self.activity {
                    let mut e = Exclusions::default();
                    e.add(path, &why);
                    a.scanned_some(e);
                }
            }
            t.refused = Some(why);
            t.validators = Validators::default();
        }
        let Some(old) = listed else {
            return;
        };
        self.stats.changes += 1;
        self.batch.delete(path, old.sha256, now);
    }

    /// Saves what was found and publishes; the first time every page has been fetched, the
    /// baseline is recorded.
    fn flush(&mut self, force_publish: bool) -> Result<(), AgentError> {
        let baseline_now = !self.baseline_done && self.pages.values().all(|t| t.checked.is_some());
        let batch = std::mem::take(&mut self.batch);
        let had = !batch.is_empty();
        if had {
            let now = truncate_ms(self.clock.now());
            commit_batch(
                &mut self.store,
                &mut self.inventory,
                &mut self.publisher,
                self.observer.as_mut(),
                &self.retention,
                batch,
                now,
            )?;
        }
        if baseline_now {
            self.store.set_meta("baseline", "done")?;
            self.baseline_done = true;
            tracing::info!(
                "baseline recorded: {} pages published of {} found, {} requests",
                self.inventory.len(),
                self.pages.len(),
                self.pacer.requests
            );
        }
        if had || baseline_now || force_publish {
            let now = truncate_ms(self.clock.now());
            let started = Instant::now();
            let result = self.publisher.publish(&self.inventory, &self.store, now);
            if let Some(a) = &self.activity {
                a.published(Publication {
                    at: crate::store::to_ms(now),
                    what: "all",
                    ms: started.elapsed().as_secs_f64() * 1000.0,
                    listing_bytes: result.as_ref().ok().map(|r| r.listing_bytes),
                    head: self.store.head_seq().ok(),
                    error: result.as_ref().err().map(ToString::to_string),
                });
            }
            result?;
        }
        if let Some(a) = &self.activity {
            let asked = self.pacer.requests - self.requests_noted;
            self.requests_noted = self.pacer.requests;
            a.judged(self.client.origin(), asked, 0);
        }
        Ok(())
    }
}

/// How often the loop says what it did.
const SUMMARY_EVERY: Duration = Duration::from_secs(60);

/// What a check showed.
enum Outcome {
    /// The page is as listed.
    Same,
    /// It changed (or came, or went).
    Changed,
    /// Nothing could be concluded.
    Unknown,
}
