//! Origin mode: the agent beside a site that is not files (WordPress and its kind), reading it
//! from its own web server on loopback, once for all crawlers.
//!
//! The pages come from what the site says and serves: its sitemaps ([`discover`]), the web
//! server's access log (`crate::access_log`, read by [`signals`]) and the webmaster's seeds
//! ([`intake`]). Each page is asked for as the judge asks, a stranger ([`fetch`]), under the
//! rules the web server's own configuration hides; what is served alike to anyone is
//! published, with the same state, documents, deltas and hub as a docroot's files
//! ([`page_check`]). Changes are found by pings (XML-RPC `weblogUpdates`, WebSub publish,
//! `webcoop-agent notify`), by writes seen in the access log, and by checking every page again
//! at its own pace ([`schedule`]) within a request budget; parts of a page written anew for
//! each request do not count as changes ([`volatile`], and what two answers show in
//! [`learned`]), and a page that changes at every request anyway is not published. A page that
//! leaves takes its content with it from everything the agent serves ([`withdraw`], helped by
//! [`quotes`]).

mod discover;
mod fetch;
mod intake;
mod learned;
mod page_check;
mod quotes;
mod schedule;
mod signals;
pub(crate) mod survey;
#[cfg(test)]
mod tests;
pub(crate) mod volatile;
mod withdraw;

use crate::activity::{Activity, Publication};
use crate::agent::{AgentError, ChangeObserver, Opened, SiteCore, open_state, publisher_for};
use crate::config::{Config, OriginSettings};
use crate::inventory::Inventory;
use crate::privacy::{FilterRules, PublicFilter, RobotsTxt};
use crate::server_config::ServerRules;
use crate::snapshot::{Bodies, BuiltSnapshot};
use crate::store::{Batch, truncate_ms};
use fetch::OriginClient;
use schedule::Tracked;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use webcoop_protocol::clock::Clock;

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
    pub(crate) fn new(rate: f64) -> Pacer {
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
    /// Writes to the site seen in its access log.
    pub writes: u64,
    /// Pages withdrawn (they stopped being public).
    pub withdrawals: u64,
}

/// The agent for a site read from its web server.
pub struct OriginAgent {
    /// What both modes share: state, inventory, publisher, snapshots.
    core: SiteCore,
    settings: OriginSettings,
    client: OriginClient,
    pacer: Pacer,
    pages: HashMap<String, Tracked>,
    /// What the access logs say beyond the pages read: writes, editors.
    signals: signals::Signals,
    /// Which pages show which.
    quotes: quotes::Quotes,
    /// What the web server's configuration hides (rules the judge could be let in by).
    access: ServerRules,
    /// Volatile parts learned, by page.
    learned: HashMap<String, learned::Learned>,
    /// Regions seen to differ once, between two asks a third did not confirm: learned only
    /// when a later pair differs in the same regions.
    suspected: HashMap<String, learned::Learned>,
    /// The paths the sitemaps named at their last reading.
    in_sitemaps: HashSet<String>,
    /// A write was seen: the next reading of the sitemaps looks for what left them.
    write_pending: bool,
    /// Pages withdrawn in the batch being saved.
    withdrawn: Vec<String>,
    /// Pages that showed something withdrawn, to be checked again.
    quoting: HashSet<String>,
    /// Pages checked again after a withdrawal, whose older versions go once the batch is saved.
    purge_after_flush: Vec<String>,
    /// Withdrawals so far, and at the start of the snapshot being built: a build that saw a
    /// withdrawal happen is discarded.
    withdrawals_seen: u64,
    snapshot_started_at: u64,
    /// The documents must be published again (a snapshot was withdrawn).
    republish: bool,
    batch: Batch,
    stats: OriginStats,
    next_discovery: Instant,
    /// Requests counted into the console's figures so far.
    requests_noted: u64,
    /// Why the origin could not be reached at the last reading of its sitemaps, if it could
    /// not.
    unreachable: Option<String>,
    /// When the sitemaps were last read.
    last_discovery: Option<Instant>,
}

/// The web server as the agent sees it in origin mode: the origin is asked as the judge asks
/// (from the installation's own address in 127/8, never 127.0.0.1), under the rules the
/// server's configuration hides (read from the server itself, or `--server-config`).
pub(crate) fn server_view(
    config: &Config,
    settings: &OriginSettings,
) -> Result<(Option<crate::web_server::ServerView>, ServerRules), AgentError> {
    let mut server_config = config.clone();
    server_config.judge.server_url = settings.server.clone();
    server_config.judge.server_url_given = true;
    crate::agent::look_at_server(&server_config, true)
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
        let (view, access) = server_view(&config, &settings)?;
        if let Some(view) = &view {
            crate::agent::log_view(view);
        }
        for p in access.hidden() {
            tracing::warn!("not published, the judge cannot see what others get there: {p}");
        }
        let source = view.as_ref().map(|v| v.judge.source);
        let client = OriginClient::new(
            &config.base_url,
            &settings.server,
            Duration::from_secs(20),
            source,
        )
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
        let filter = Self::filter_with(&config, RobotsTxt::Absent, access.clone())?;
        // The pages as the web server served them, kept in the state, make the snapshots.
        let bodies = Bodies::Kept(config.state.clone());
        let core = SiteCore::new(Opened {
            config,
            clock,
            store,
            inventory,
            publisher,
            filter,
            baseline_done,
            bodies,
        });
        let mut agent = OriginAgent {
            core,
            pacer: Pacer::new(settings.rate),
            settings,
            client,
            pages,
            signals: signals::Signals::new(signals::Endpoints::default()),
            quotes: quotes::Quotes::default(),
            access,
            learned: HashMap::new(),
            suspected: HashMap::new(),
            in_sitemaps: HashSet::new(),
            write_pending: false,
            withdrawn: Vec::new(),
            quoting: HashSet::new(),
            purge_after_flush: Vec::new(),
            withdrawals_seen: 0,
            snapshot_started_at: 0,
            republish: false,
            batch: Batch::default(),
            stats: OriginStats::default(),
            next_discovery: Instant::now(),
            requests_noted: 0,
            unreachable: None,
            last_discovery: None,
        };
        agent.index_kept_pages()?;
        if !agent.settings.access_logs.is_empty() {
            // The logs are followed here: the intake takes their lines for pages, writes and
            // editors, and the counts take the reads among them.
            agent.core.popularity = Some(crate::popularity::Popularity::open(
                agent.core.config.popularity,
                &agent.settings.access_logs,
                &agent.core.store,
            )?);
        }
        Ok(agent)
    }

    /// Reads what each kept page links to and its title, from the versions in the state.
    fn index_kept_pages(&mut self) -> Result<(), AgentError> {
        let base = self.core.config.base_url.clone();
        for (path, entry) in self.core.inventory.iter() {
            let Some(body) = self.core.store.version(path, &entry.sha256)? else {
                continue;
            };
            if let Ok(url) = base.join(path) {
                self.quotes.record(path, &body, &url, &base);
            }
        }
        Ok(())
    }

    pub(crate) fn filter_with(
        config: &Config,
        robots: RobotsTxt,
        access: ServerRules,
    ) -> Result<Arc<PublicFilter>, AgentError> {
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
            access,
        })?))
    }

    /// Calls `observer` with every batch of changes once it is saved.
    pub fn observe(&mut self, observer: ChangeObserver) {
        self.core.observer = Some(observer);
    }

    /// Notes publications, refusals and requests to the origin in `activity`, for the console.
    pub fn record_activity(&mut self, activity: Arc<Activity>) {
        self.core.activity = Some(activity);
    }

    /// The pages published.
    pub fn inventory(&self) -> &Inventory {
        &self.core.inventory
    }

    /// What has been done so far.
    pub fn stats(&self) -> OriginStats {
        OriginStats {
            requests: self.pacer.requests,
            ..self.stats.clone()
        }
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
        if !self.core.baseline_done {
            return Ok(false);
        }
        self.core.snapshot_due()
    }

    /// Builds a snapshot of the published pages now (those with a kept version: text), and
    /// republishes robots.rdf naming it.
    pub fn build_snapshot(&mut self) -> Result<BuiltSnapshot, AgentError> {
        let built = self.core.build_snapshot()?;
        self.flush(true)?;
        Ok(built)
    }

    /// Takes a finished background snapshot and starts the next when one is due.
    fn snapshot_step(&mut self) -> Result<(), AgentError> {
        if let Some(built) = self.core.finished_snapshot() {
            if self.snapshot_started_at == self.withdrawals_seen {
                self.core.publisher.set_snapshot(Some(built.sequence));
                self.flush(true)?;
            } else {
                // Built from versions a withdrawal since then took back.
                crate::publish::snapshot::remove_all(&self.core.config.out);
                crate::publish::resource_dump::remove_all(&self.core.config.out);
                tracing::info!("a snapshot built across a withdrawal is discarded");
            }
        }
        // Not before every page that showed something withdrawn was checked again.
        if !self.core.baseline_done || !self.quoting.is_empty() {
            return Ok(());
        }
        self.snapshot_started_at = self.withdrawals_seen;
        self.core.start_snapshot_if_due()
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
                    "origin, last {} s: {} requests ({} answered 304, {} the same once volatile parts were left out), {} changes, {} pings, {} writes seen, {} withdrawn; {} pages published of {} tracked, {} URLs only editors read held back",
                    SUMMARY_EVERY.as_secs(),
                    now.requests - was.requests,
                    now.not_modified - was.not_modified,
                    now.unchanged - was.unchanged,
                    now.changes - was.changes,
                    now.pings - was.pings,
                    now.writes - was.writes,
                    now.withdrawals - was.withdrawals,
                    self.core.inventory.len(),
                    self.pages.len(),
                    self.signals.held()
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
        // A ping says something changed: what left the sitemaps is looked for too.
        self.write_pending = true;
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
        crate::store::to_ms(self.core.clock.now())
    }

    /// Saves what was found and publishes; the first time every page has been fetched, the
    /// baseline is recorded.
    fn flush(&mut self, force_publish: bool) -> Result<(), AgentError> {
        let baseline_now =
            !self.core.baseline_done && self.pages.values().all(|t| t.checked.is_some());
        let batch = std::mem::take(&mut self.batch);
        let had = !batch.is_empty();
        if had {
            let now = truncate_ms(self.core.clock.now());
            self.core.commit(batch, now)?;
        }
        if baseline_now {
            self.core.store.set_meta("baseline", "done")?;
            self.core.baseline_done = true;
            tracing::info!(
                "baseline recorded: {} pages published of {} found, {} requests",
                self.core.inventory.len(),
                self.pages.len(),
                self.pacer.requests
            );
        }
        if had {
            self.withdraw_saved()?;
        }
        if let Some(p) = self.core.popularity.as_mut() {
            let now = self.core.clock.now().timestamp();
            let inventory = &self.core.inventory;
            p.retain(|path| inventory.get(path).is_some());
            p.save(&mut self.core.store)?;
            if self.core.publisher.set_popularity(p.published(now)) {
                self.republish = true;
            }
            if let Some(a) = &self.core.activity {
                a.set_popularity(self.core.publisher.popularity(), p.visitors(now));
            }
        }
        let republish = std::mem::take(&mut self.republish);
        if had || baseline_now || force_publish || republish {
            let now = truncate_ms(self.core.clock.now());
            let started = Instant::now();
            let result = self
                .core
                .publisher
                .publish(&self.core.inventory, &self.core.store, now);
            if let Some(a) = &self.core.activity {
                a.published(Publication {
                    at: crate::store::to_ms(now),
                    what: "all",
                    ms: started.elapsed().as_secs_f64() * 1000.0,
                    listing_bytes: result.as_ref().ok().map(|r| r.listing_bytes),
                    head: self.core.store.head_seq().ok(),
                    error: result.as_ref().err().map(ToString::to_string),
                });
            }
            result?;
        }
        if let Some(a) = &self.core.activity {
            let asked = self.pacer.requests - self.requests_noted;
            self.requests_noted = self.pacer.requests;
            a.judged(self.client.origin(), asked, 0);
        }
        Ok(())
    }
}

/// How often the loop says what it did.
const SUMMARY_EVERY: Duration = Duration::from_secs(60);
