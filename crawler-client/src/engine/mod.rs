//! The crawl loop. One thread decides: it owns the frontier, the archive writer and the
//! state, dispatches requests to the async runtime as hosts become eligible, and handles what
//! comes back. Requests, analysis and record compression run on the runtime.
//!
//! Durability: results are saved in batches. The WARC bytes of a batch are synced before the
//! transaction that points at them commits, so after `kill -9` the state is the last batch,
//! and the records written after it are read back (replayed) at the next start instead of
//! being fetched again.

mod coop;

use crate::analyze::scope::LinkPolicy;
use crate::analyze::url_norm;
use crate::analyze::{Analysis, Link, Received};
use crate::archive::warc::{self, Position, RevisitProfile, WarcWriter};
use crate::config::Settings;
use crate::coop::requests::DeltaUse;
use crate::fetch;
use crate::fetch::tasks::{self, Context, Fetched, Outcome, RecordSlot, RobotsFetched};
use crate::frontier::robots::{self, Rules};
use crate::frontier::{Dispatch, Frontier, RobotsState};
use crate::importance::opic::interpolate;
use crate::metrics::{self, CrawlMetrics};
use crate::progress::{Progress, RunFigures, Snapshot};
use crate::refresh::change_rate::ChangeHistory;
use crate::refresh::schedule::{Schedule, Tracked};
use crate::state::{
    self, Batch, Figures, GiveUp, HostRecord, HostUpdate, KnownPage, PageRecord, Queued, Store,
    StoreError,
};
use chrono::{DateTime, SecondsFormat, Utc};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};
use url::Url;

/// Why a crawl stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum CrawlError {
    /// The state database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file of the crawl directory could not be written or read.
    #[error("{path}: {source}{}", disk_hint(.source))]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// Another crawl holds the directory.
    #[error("{0} is in use by another webcoop-crawl process")]
    Locked(PathBuf),
    /// Nothing to crawl.
    #[error("no seeds: give --seeds (a URL or a file of URLs)")]
    NoSeeds,
    /// The HTTP client or runtime could not start.
    #[error("cannot start: {0}")]
    Start(String),
}

fn disk_hint(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::StorageFull {
        " (disk full: the crawl stopped at its last saved batch; free space and run again to resume)"
    } else {
        ""
    }
}

fn file_error(path: &Path) -> impl Fn(std::io::Error) -> CrawlError + '_ {
    move |source| CrawlError::File {
        path: path.to_path_buf(),
        source,
    }
}

pub use crate::clock::now_ms;

/// The prefix of the reason a host is skipped for its `Crawl-delay`.
const CRAWL_DELAY_SKIP: &str = "Crawl-delay";

/// How long in-flight requests may finish after a stop was asked.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// What a finished run reports.
#[derive(Debug, Clone)]
pub struct Report {
    /// The state's figures.
    pub figures: Figures,
    /// Hosts not crawled, and why.
    pub skipped: Vec<(String, String)>,
    /// This run.
    pub run: RunFigures,
    /// Where `/metrics` was served.
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// Takes the crawl directory's lock, so two crawls never write one state.
pub fn lock(out: &Path) -> Result<File, CrawlError> {
    std::fs::create_dir_all(out).map_err(file_error(out))?;
    let path = out.join("lock");
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(file_error(&path))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(CrawlError::Locked(out.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(file_error(&path)(e)),
    }
}

/// Whether a crawl holds the directory now.
pub fn is_running(out: &Path) -> bool {
    match File::open(out.join("lock")) {
        Ok(f) => matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
}

/// What a successful visit showed, for [`Engine::learn`].
struct Visit<'a> {
    at: i64,
    changed: bool,
    last_modified: Option<&'a str>,
    known: Option<&'a KnownPage>,
}

#[derive(Default)]
struct RunCounters {
    fetched: u64,
    revisits: u64,
    started: u64,
    bytes: u64,
    errors: u64,
    replayed: u64,
    coop_requests: u64,
    pushes: u64,
}

struct Engine {
    s: Settings,
    ctx: Arc<Context>,
    rt: tokio::runtime::Runtime,
    frontier: Frontier,
    warc: WarcWriter,
    tx: Sender<Outcome>,
    rx: Receiver<Outcome>,
    batch: Batch,
    settled: Vec<(i64, i64)>,
    batch_digests: HashMap<u64, String>,
    digests: HashSet<u64>,
    in_flight: usize,
    pages_in_flight: usize,
    fetched_total: u64,
    run: RunCounters,
    log: BufWriter<File>,
    log_path: PathBuf,
    metrics: Arc<CrawlMetrics>,
    token: String,
    last_commit: Instant,
    schedule: Option<Schedule>,
    revisits_queued: usize,
    coop: coop::CoopState,
}

/// The key under which a crawl records its cooperation settings.
pub const COOP_CONFIG_META: &str = "coop_config";

/// Runs a crawl until its queue is empty, its page budget spent, or `stop` is set.
pub fn run(s: Settings, stop: Arc<AtomicBool>) -> Result<Report, CrawlError> {
    let started = Instant::now();
    let _lock = lock(&s.out)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("fetch")
        .enable_all()
        .build()
        .map_err(|e| CrawlError::Start(format!("async runtime: {e}")))?;
    let mut store = Store::open(&s.out)?;

    // Seeds: those given now and those of earlier runs (the scope is theirs too).
    let mut seeds: Vec<Url> = store
        .meta("seeds")?
        .unwrap_or_default()
        .lines()
        .filter_map(|l| Url::parse(l).ok())
        .collect();
    for seed in &s.seeds {
        if !seeds.contains(seed) {
            seeds.push(seed.clone());
        }
    }
    if seeds.is_empty() {
        return Err(CrawlError::NoSeeds);
    }
    let seed_list: Vec<&str> = seeds.iter().map(Url::as_str).collect();
    store.set_meta("seeds", &seed_list.join("\n"))?;
    // `status` judges each site's level and trust by the settings of the crawl that wrote it.
    if let Ok(coop) = serde_json::to_string(&s.coop) {
        store.set_meta(COOP_CONFIG_META, &coop)?;
    }

    if s.refresh && store.meta("refresh_pass")?.as_deref() != Some("open") {
        let first = store.max_queue_seq()? + 1;
        let n = store.requeue_pages(first)?;
        store.set_meta("refresh_pass", "open")?;
        tracing::info!("refresh pass: {n} pages queued again");
    }
    let fetched_before = store.figures()?.fetched();

    let token = robots::product_token(&s.user_agent);
    let load_now = Instant::now();
    let load_ms = now_ms();
    let politeness = s.politeness;
    let ttl = s.robots_ttl;
    let frontier = Frontier::load(store, s.per_host, s.opic_eps, |rec: &HostRecord| {
        let age = rec
            .robots_fetched
            .map(|at| Duration::from_millis((load_ms - at).max(0) as u64));
        let robots = match (rec.robots_status, age) {
            (Some(status), Some(age)) if status < 500 && age < ttl => RobotsState::Known(
                Rules::from_fetch(
                    Some(status),
                    rec.robots_body.as_deref().unwrap_or_default(),
                    &token,
                ),
                load_now + (ttl - age),
            ),
            _ => RobotsState::Unknown,
        };
        let crawl_delay = match &robots {
            RobotsState::Known(r, _) => r.crawl_delay(),
            _ => None,
        };
        // A Crawl-delay skip is decided again (the cap may have changed); others stand.
        let skipped = if politeness.too_slow(crawl_delay) {
            Some(crawl_delay_reason(crawl_delay, politeness.crawl_delay_cap))
        } else {
            rec.skipped
                .clone()
                .filter(|r| !r.starts_with(CRAWL_DELAY_SKIP))
        };
        // The last request before a restart is not remembered: wait a full delay.
        let mut next = load_now + politeness.delay(crawl_delay, Duration::ZERO);
        if let Some(parked) = rec.parked_until.filter(|p| *p > load_ms) {
            next = next.max(load_now + Duration::from_millis((parked - load_ms) as u64));
        }
        (robots, skipped, next)
    })?;

    let warc_dir = s.out.join("warc");
    let warc = WarcWriter::new(
        &warc_dir,
        &s.warc_prefix,
        s.warc_max_size,
        &s.user_agent,
        s.warc_level,
    )
    .map_err(file_error(&warc_dir))?;
    let client = fetch::client(&s.user_agent, &s.fetch, &s.resolve, s.per_host)
        .map_err(|e| CrawlError::Start(format!("HTTP client: {e}")))?;
    let metrics = Arc::new(CrawlMetrics::default());
    let metrics_addr = match s.metrics {
        Some(addr) => {
            let local = rt
                .block_on(metrics::serve(addr, metrics.clone()))
                .map_err(|e| CrawlError::Start(format!("metrics on {addr}: {e}")))?;
            tracing::info!("metrics at http://{local}/metrics");
            Some(local)
        }
        None => None,
    };
    let log_path = s.out.join("crawl.log");
    let log = File::options()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(file_error(&log_path))?;
    let (tx, rx) = mpsc::channel();
    let policy = LinkPolicy::new(s.scope.clone(), &seeds, s.limits);
    let mut digests = HashSet::new();
    frontier.store.load_digests(&mut digests)?;
    let _checkpointer = frontier.store.checkpoint_in_background()?;
    let mut e = Engine {
        ctx: Arc::new(Context {
            client,
            limits: s.fetch,
            policy,
            warc_level: s.warc_level,
            warc_dir: warc_dir.clone(),
            conditional: s.conditional,
        }),
        rt,
        frontier,
        warc,
        tx,
        rx,
        batch: Batch::default(),
        settled: Vec::new(),
        batch_digests: HashMap::new(),
        digests,
        in_flight: 0,
        pages_in_flight: 0,
        fetched_total: fetched_before,
        run: RunCounters::default(),
        log: BufWriter::new(log),
        log_path,
        metrics,
        token: token.clone(),
        last_commit: Instant::now(),
        schedule: None,
        revisits_queued: 0,
        coop: coop::CoopState::default(),
        s,
    };
    e.coop_start()?;
    if let Some(config) = e.s.keep_fresh {
        let mut schedule = Schedule::new(config);
        let pages = e.frontier.store.refreshable_pages()?;
        schedule.restore(pages.into_iter().map(|p| {
            let tracked = Tracked {
                host: p.host,
                weight: e.importance(p.fp, p.importance),
                rate: p.rate.unwrap_or(config.prior_rate),
                depth: p.depth,
                last: p.fetched_at,
                due: p.fetched_at,
                covered: false,
                url: p.url,
            };
            (p.fp, tracked)
        }));
        tracing::info!(
            "keeping {} pages fresh: {:.1} visits per hour, {:?} policy",
            schedule.len(),
            schedule.budget() * 3600.0,
            config.policy
        );
        e.schedule = Some(schedule);
    }
    e.replay()?;
    let mut seed_fps = Vec::new();
    for seed in &seeds {
        let link = Link::to(seed);
        seed_fps.push(link.fp);
        e.push(&link, 0, 0);
    }
    e.frontier.endow_seeds(&seed_fps);
    e.commit()?;
    let complete = e.crawl(&stop)?;
    let figures = e.frontier.store.figures()?;
    if complete
        && figures.queued == 0
        && e.frontier.store.meta("refresh_pass")?.as_deref() == Some("open")
    {
        e.frontier.store.set_meta("refresh_pass", "done")?;
    }
    let skipped = e.frontier.store.skipped_hosts()?;
    // Requests still under way after the grace period are dropped with the runtime.
    e.rt.shutdown_timeout(Duration::from_millis(100));
    Ok(Report {
        figures,
        skipped,
        run: RunFigures {
            fetched: e.run.fetched,
            bytes: e.run.bytes,
            elapsed: started.elapsed(),
            replayed: e.run.replayed,
            complete,
        },
        metrics_addr,
    })
}

fn crawl_delay_reason(delay: Option<f64>, cap: Duration) -> String {
    format!(
        "{CRAWL_DELAY_SKIP} of {} s in robots.txt is over the cap of {} s (crawl_delay_cap)",
        delay.unwrap_or_default(),
        cap.as_secs_f64()
    )
}

fn status_class(status: u16) -> &'static str {
    match status {
        304 => "304",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

impl Engine {
    fn stopping(&self, stop: &AtomicBool) -> bool {
        stop.load(Ordering::Relaxed)
    }

    fn budget_spent(&self) -> bool {
        self.s
            .max_pages
            .is_some_and(|m| self.fetched_total + self.pages_in_flight as u64 >= m)
    }

    /// The loop; returns whether the crawl is complete (nothing left, or the budget spent).
    fn crawl(&mut self, stop: &AtomicBool) -> Result<bool, CrawlError> {
        let mut progress = Progress::new(self.s.progress);
        let mut stop_seen: Option<Instant> = None;
        let mut gauges_at = Instant::now();
        let deadline = self.s.run_for.map(|d| Instant::now() + d);
        loop {
            let time_up = deadline.is_some_and(|d| Instant::now() >= d);
            if stop_seen.is_none() {
                self.coop_tick();
                self.queue_due_refreshes();
            }
            if (self.stopping(stop) || time_up) && stop_seen.is_none() {
                stop_seen = Some(Instant::now());
                tracing::info!(
                    "stopping: waiting for {} requests under way",
                    self.in_flight
                );
            }
            if stop_seen.is_none() {
                self.dispatch()?;
            }
            let idle = self.in_flight == 0;
            let nothing_left = !self.frontier.has_work() && self.schedule.is_none();
            if idle && (stop_seen.is_some() || self.budget_spent() || nothing_left) {
                break;
            }
            if stop_seen.is_some_and(|t| t.elapsed() > STOP_GRACE) {
                tracing::warn!(
                    "{} requests did not finish in time; they will be made again",
                    self.in_flight
                );
                break;
            }
            let now = Instant::now();
            let mut wake = progress.next_due().min(gauges_at + Duration::from_secs(1));
            if !self.batch.is_empty() {
                wake = wake.min(self.last_commit + self.s.commit_interval);
            }
            if stop_seen.is_none()
                && self.in_flight < self.s.concurrency
                && !self.budget_spent()
                && let Some(t) = self.frontier.next_wakeup()
            {
                wake = wake.min(t);
            }
            if stop_seen.is_some() {
                wake = wake.min(now + Duration::from_millis(100));
            }
            if let Some(d) = deadline {
                wake = wake.min(d);
            }
            if let Some(due) = self.coop_next_due() {
                let wait = crate::clock::real_wait(due - now_ms()).min(Duration::from_secs(60));
                wake = wake.min(now + wait.max(coop::tick_period()));
            }
            // Pages already due but without room wait for a request to end, not the clock.
            if self.refresh_room() > 0
                && let Some(due) = self.schedule.as_mut().and_then(Schedule::next_due)
            {
                let wait = crate::clock::real_wait(due - now_ms()).min(Duration::from_secs(60));
                wake = wake.min(now + wait);
            }
            match self.rx.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(outcome) => {
                    self.handle(outcome, false)?;
                    while let Ok(more) = self.rx.try_recv() {
                        self.handle(more, false)?;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if self.batch.results() >= self.s.commit_results
                || (!self.batch.is_empty() && self.last_commit.elapsed() >= self.s.commit_interval)
            {
                self.commit()?;
            }
            if progress.due() || gauges_at.elapsed() >= Duration::from_secs(1) {
                gauges_at = Instant::now();
                let snapshot = self.snapshot();
                if progress.due() {
                    progress.show(&snapshot);
                }
            }
        }
        self.coop_unsubscribe_all();
        self.commit()?;
        self.coop_report();
        progress.finish();
        let complete = stop_seen.is_none() && self.in_flight == 0;
        Ok(complete)
    }

    /// Queues the pages the refresh schedule says are due, as far as the share of requests
    /// left to refreshes allows while new URLs wait.
    fn queue_due_refreshes(&mut self) {
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
            self.revisits_queued += 1;
            self.run.revisits += 1;
        }
    }

    /// How many due pages may be queued now: the share of requests left to refreshes while
    /// new URLs wait, and no more than the requests that can be under way.
    fn refresh_room(&self) -> usize {
        let discovery_waiting = self.frontier.queued() > self.revisits_queued as u64;
        let allowed = if discovery_waiting {
            let share = self.s.refresh_share;
            let quota = (share * (self.run.started as f64 + 1.0)).ceil() as u64;
            quota.saturating_sub(self.run.revisits) as usize
        } else {
            self.s.concurrency
        };
        allowed.min(self.s.concurrency.saturating_sub(self.revisits_queued))
    }

    /// A page's importance for the refresh schedule: its Adaptive OPIC history interpolated up
    /// to now, with the cash it holds, per unit of the clock.
    fn importance(&self, fp: u64, (history, read_at): (f64, f64)) -> f64 {
        let cash = self.frontier.cash();
        let t = self.s.opic_window;
        let value = interpolate(history, cash.cash(fp), cash.clock() - read_at, t) / t;
        value.max(1e-12)
    }

    fn snapshot(&self) -> Snapshot {
        let s = Snapshot {
            fetched: self.run.fetched,
            queued: self.frontier.queued(),
            hosts_active: self.frontier.active_hosts(),
            in_flight: self.in_flight,
            errors: self.run.errors,
            bytes: self.run.bytes,
        };
        self.metrics.queued.set(s.queued as i64);
        self.metrics.hosts_active.set(s.hosts_active as i64);
        self.metrics.in_flight.set(s.in_flight as i64);
        self.metrics.seen.set(self.frontier.seen_len() as i64);
        s
    }

    fn dispatch(&mut self) -> Result<(), CrawlError> {
        let now = Instant::now();
        while self.in_flight < self.s.concurrency && !self.budget_spent() {
            let Some(next) = self.frontier.next(now)? else {
                break;
            };
            match next {
                Dispatch::Robots(host) => {
                    let origin = self
                        .frontier
                        .host(host)
                        .map(|h| h.origin.clone())
                        .unwrap_or_default();
                    self.in_flight += 1;
                    self.rt.spawn(tasks::robots(
                        self.ctx.clone(),
                        host,
                        origin,
                        self.tx.clone(),
                    ));
                }
                Dispatch::Coop(host, job) => {
                    self.in_flight += 1;
                    self.rt.spawn(crate::coop::requests::run(
                        self.ctx.clone(),
                        host,
                        job,
                        self.tx.clone(),
                    ));
                }
                Dispatch::Page(job) => {
                    self.run.started += 1;
                    if job.revisit {
                        self.revisits_queued = self.revisits_queued.saturating_sub(1);
                    }
                    self.start_page(job, now)?
                }
            }
        }
        Ok(())
    }

    fn start_page(&mut self, job: Queued, now: Instant) -> Result<(), CrawlError> {
        let url = match Url::parse(&job.url) {
            Ok(u) => u,
            Err(e) => {
                self.final_without_fetch(job, format!("malformed URL: {e}"), now);
                return Ok(());
            }
        };
        let allowed = self
            .frontier
            .rules(job.host, now)
            .is_some_and(|r| r.allows(&url));
        if !allowed {
            self.metrics.fetch("disallowed");
            self.final_without_fetch(job, state::DISALLOWED.to_string(), now);
            return Ok(());
        }
        // Only a revisit has validators to send (a new URL has no record yet).
        let known = if job.revisit {
            self.frontier.store.page(job.fp)?
        } else {
            None
        };
        self.in_flight += 1;
        self.pages_in_flight += 1;
        if let Some(known) = known.clone().filter(|k| k.content.is_some())
            && let Some(plan) = self.coop_delta_plan(job.fp)
        {
            self.rt.spawn(crate::coop::requests::page_delta(
                self.ctx.clone(),
                job,
                url,
                known,
                plan,
                self.tx.clone(),
            ));
            return Ok(());
        }
        let conditional = self.ctx.conditional && !self.coop_announced_change(job.fp);
        self.rt.spawn(tasks::page(
            self.ctx.clone(),
            job,
            url,
            known,
            conditional,
            self.tx.clone(),
        ));
        Ok(())
    }

    /// A URL ends without a request (robots.txt forbids it, it does not parse).
    fn final_without_fetch(&mut self, job: Queued, error: String, now: Instant) {
        let at = now_ms();
        self.log_line(at, None, None, &job.url, &job, None, Duration::ZERO, &error);
        self.batch.pages.push(PageRecord {
            url: job.url.clone(),
            fp: job.fp,
            host: job.host,
            depth: job.depth,
            error: Some(error),
            fetched_at: at,
            ..Default::default()
        });
        self.batch.done.push(job.seq);
        self.settled.push((job.host, job.seq));
        self.frontier.finished(job.host, now);
    }

    fn handle(&mut self, outcome: Outcome, replayed: bool) -> Result<(), CrawlError> {
        match outcome {
            Outcome::Robots {
                host,
                result,
                elapsed,
            } => self.handle_robots(host, result, elapsed, replayed),
            Outcome::Page {
                job,
                result,
                elapsed,
                local,
            } => self.handle_page(job, result, elapsed, replayed, local),
            Outcome::Coop {
                host,
                job,
                result,
                elapsed,
            } => self.handle_coop(host, job, result, elapsed),
            Outcome::Callback(event) => {
                self.handle_callback(event);
                Ok(())
            }
        }
    }

    fn append(&mut self, slot: RecordSlot) -> Result<Position, CrawlError> {
        match slot {
            RecordSlot::Stored(p) => Ok(p),
            RecordSlot::New(r) => {
                let pos = self
                    .warc
                    .append(&r)
                    .map_err(|e| file_error(self.warc.dir())(e))?;
                self.metrics.warc_bytes.inc_by(pos.length);
                Ok(pos)
            }
        }
    }

    fn host_update(
        &self,
        id: i64,
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

    fn give_up(&mut self, host: i64, reason: String) {
        let origin = self
            .frontier
            .host(host)
            .map(|h| h.origin.clone())
            .unwrap_or_default();
        tracing::warn!("giving up on {origin}: {reason}");
        self.frontier.abandon(host, reason.clone());
        self.batch.give_up.push(GiveUp {
            host,
            reason,
            at: now_ms(),
        });
        let update = self.host_update(host, None, None);
        self.batch.hosts.push(update);
    }

    fn handle_robots(
        &mut self,
        host: i64,
        result: Result<RobotsFetched, fetch::FetchError>,
        elapsed: Duration,
        replayed: bool,
    ) -> Result<(), CrawlError> {
        if !replayed {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        self.metrics.robots_fetches.inc();
        let now = Instant::now();
        let at = now_ms();
        let origin = self
            .frontier
            .host(host)
            .map(|h| h.origin.clone())
            .unwrap_or_default();
        let robots_url = format!("{origin}/robots.txt");
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
        let dummy = Queued {
            seq: 0,
            host,
            fp: 0,
            url: robots_url.clone(),
            depth: 0,
            hops: 0,
            attempts: 0,
            priority: 0.0,
            revisit: false,
        };
        let note = failure.clone().unwrap_or_else(|| "robots.txt".to_string());
        self.log_line(
            at,
            status,
            Some(body.len() as u64),
            &robots_url,
            &dummy,
            None,
            elapsed,
            &note,
        );
        match failure {
            None => {
                self.coop_discover(host, status, &body);
                let rules = Rules::from_fetch(status, &body, &self.token);
                let crawl_delay = rules.crawl_delay();
                let politeness = self.s.politeness;
                if let Some(h) = self.frontier.host_mut(host) {
                    h.failures = 0;
                    if politeness.too_slow(crawl_delay) {
                        let reason = crawl_delay_reason(crawl_delay, politeness.crawl_delay_cap);
                        tracing::warn!("skipping {origin}: {reason}");
                        h.skipped = Some(reason);
                    }
                }
                self.frontier
                    .robots_known(host, rules, now + self.s.robots_ttl);
                let update = self.host_update(host, Some((status, body, at)), None);
                self.batch.hosts.push(update);
                if !replayed {
                    self.frontier
                        .finished(host, now + politeness.delay(crawl_delay, elapsed));
                } else {
                    self.frontier.schedule(host);
                }
            }
            Some(why) => {
                let failures = self.frontier.host(host).map(|h| h.failures).unwrap_or(0) + 1;
                if let Some(h) = self.frontier.host_mut(host) {
                    h.failures = failures;
                }
                if failures >= self.s.host_give_up {
                    self.give_up(host, format!("{why} ({failures} times in a row)"));
                    self.frontier.robots_known(host, Rules::DisallowAll, now);
                } else {
                    let park = self.s.politeness.park_for(failures);
                    tracing::info!("{origin}: {why}; trying again in {} s", park.as_secs());
                    self.frontier
                        .robots_known(host, Rules::DisallowAll, now + park);
                    let update = self.host_update(
                        host,
                        Some((status, Vec::new(), at)),
                        Some(at + park.as_millis() as i64),
                    );
                    self.batch.hosts.push(update);
                    if !replayed {
                        self.frontier.finished(host, now + park);
                    }
                    return Ok(());
                }
                if !replayed {
                    self.frontier.finished(host, now);
                }
            }
        }
        Ok(())
    }

    fn handle_page(
        &mut self,
        mut job: Queued,
        result: Result<Box<Fetched>, fetch::FetchError>,
        elapsed: Duration,
        replayed: bool,
        local: bool,
    ) -> Result<(), CrawlError> {
        if !replayed && !local {
            self.in_flight = self.in_flight.saturating_sub(1);
            self.pages_in_flight = self.pages_in_flight.saturating_sub(1);
            self.metrics.fetch_seconds.observe(elapsed.as_secs_f64());
        }
        let now = Instant::now();
        let at = now_ms();
        let host = job.host;
        let finish = |e: &mut Engine, not_before: Instant| {
            if !replayed && !local {
                e.frontier.finished(host, not_before);
            }
        };
        let f = match result {
            Err(err) => {
                let failures = self.frontier.host(host).map(|h| h.failures).unwrap_or(0) + 1;
                if let Some(h) = self.frontier.host_mut(host) {
                    h.failures = failures;
                }
                job.attempts += 1;
                self.log_line(
                    at,
                    None,
                    None,
                    &job.url.clone(),
                    &job,
                    None,
                    elapsed,
                    &err.to_string(),
                );
                if failures >= self.s.host_give_up {
                    self.settled.push((host, job.seq));
                    self.run.errors += 1;
                    self.give_up(host, format!("{err} ({failures} failures in a row)"));
                    finish(self, now);
                    return Ok(());
                }
                let park = self.s.politeness.park_for(failures);
                let update = self.host_update(host, None, Some(at + park.as_millis() as i64));
                self.batch.hosts.push(update);
                finish(self, now + park);
                if job.attempts >= self.s.max_attempts {
                    self.metrics.fetch("failed");
                    self.run.errors += 1;
                    self.fetched_total += 1;
                    self.batch.pages.push(PageRecord {
                        url: job.url.clone(),
                        fp: job.fp,
                        host,
                        depth: job.depth,
                        error: Some(format!("{err} ({} attempts)", job.attempts)),
                        fetched_at: at,
                        ..Default::default()
                    });
                    self.batch.done.push(job.seq);
                    self.settled.push((host, job.seq));
                } else {
                    // Back in the host's buffer, no longer taken: not settled by a save.
                    self.metrics.retries.inc();
                    self.batch.retry.push((job.seq, job.attempts));
                    self.frontier.requeue(job);
                }
                return Ok(());
            }
            Ok(f) => f,
        };
        let f = *f;
        if self.frontier.host(host).is_some_and(|h| h.failures > 0) {
            if let Some(h) = self.frontier.host_mut(host) {
                h.failures = 0;
            }
            let update = self.host_update(host, None, None);
            self.batch.hosts.push(update);
        }
        let crawl_delay = self.frontier.rules(host, now).and_then(Rules::crawl_delay);
        let mut not_before = now + self.s.politeness.delay(crawl_delay, elapsed);
        if matches!(f.status, 429 | 503) {
            let wait = self
                .s
                .politeness
                .retry_after(f.retry_after.as_deref(), crate::clock::now())
                .unwrap_or_else(|| self.s.politeness.park_for(1));
            not_before = not_before.max(now + wait);
            let update = self.host_update(host, None, Some(at + wait.as_millis() as i64));
            self.batch.hosts.push(update);
            job.attempts += 1;
            if !replayed && job.attempts < self.s.max_attempts {
                let note = format!("retry in {} s", wait.as_secs());
                self.log_line(
                    at,
                    Some(f.status),
                    Some(f.size),
                    &job.url.clone(),
                    &job,
                    f.analysis.media_type.as_deref(),
                    elapsed,
                    &note,
                );
                self.metrics.retries.inc();
                self.batch.retry.push((job.seq, job.attempts));
                finish(self, not_before);
                self.frontier.requeue(job);
                return Ok(());
            }
        }
        self.record_page(&job, f, elapsed, replayed)?;
        finish(self, not_before);
        Ok(())
    }

    /// Archives and records a final response, and queues what it leads to.
    fn record_page(
        &mut self,
        job: &Queued,
        f: Fetched,
        elapsed: Duration,
        replayed: bool,
    ) -> Result<(), CrawlError> {
        let ok = (200..300).contains(&f.status);
        let mut duplicate_of = f.refers_to.clone().filter(|u| *u != job.url);
        let mut record = f.record;
        if let (true, Some(d), false, None) = (ok, f.analysis.digest, f.unchanged, &duplicate_of) {
            if self.digests.insert(d) {
                self.batch_digests.insert(d, job.url.clone());
            } else {
                let original = match self.batch_digests.get(&d) {
                    Some(u) => Some(u.clone()),
                    None => self.frontier.store.page_with_digest(d)?,
                };
                if let Some(original) = original.filter(|u| *u != job.url) {
                    self.metrics.duplicates.inc();
                    if let RecordSlot::New(_) = record {
                        record = RecordSlot::New(warc::revisit(
                            &job.url,
                            f.fetched_at,
                            &f.http_head,
                            RevisitProfile::IdenticalPayloadDigest,
                            Some(&f.payload_digest),
                            (&original, None),
                            self.s.warc_level,
                        ));
                    }
                    duplicate_of = Some(original);
                }
            }
        }
        let pos = self.append(record)?;
        let a: &Analysis = &f.analysis;
        let mut note = String::new();
        if let Some(loc) = &a.location {
            if job.hops < self.s.max_redirects {
                match self.ctx.policy.admit(loc, job.depth) {
                    Ok(()) => {
                        self.push(&Link::to(loc), job.depth, job.hops + 1);
                    }
                    Err(why) => note = format!("redirect not followed ({why:?})"),
                }
            } else {
                note = format!("more than {} redirects", self.s.max_redirects);
            }
        }
        let mut children = Vec::new();
        if ok && !f.unchanged && duplicate_of.is_none() {
            for link in &a.links {
                self.push(link, job.depth + 1, 0);
                children.push(link.fp);
            }
        }
        let (importance, changes_seen) = if ok || f.status == 304 {
            let visit = Visit {
                at: f.fetched_at.timestamp_millis(),
                changed: f.changed,
                last_modified: a.last_modified.as_deref(),
                known: f.known.as_ref(),
            };
            let learnt = self.learn(job, &visit, &children);
            self.coop_visited(job.host, job.fp, f.changed, f.delta.as_ref());
            if let Some((hub, topic)) = &a.hub {
                self.coop_page_hub(job.host, hub, topic);
            }
            learnt
        } else {
            (None, None)
        };
        let content = (ok && !f.unchanged && duplicate_of.is_none() && !f.truncated)
            .then(|| (pos.file.clone(), pos.offset));
        if note.is_empty() {
            note = match (&duplicate_of, f.unchanged, replayed) {
                (Some(d), _, _) => format!("duplicate of {d}"),
                (None, true, _) => "unchanged".into(),
                _ if a.undecodable => "undecodable content".into(),
                _ if f.truncated => "truncated".into(),
                _ => String::new(),
            };
        }
        match &f.delta {
            Some(DeltaUse::Applied(bytes)) => {
                note.push_str(if note.is_empty() { "" } else { "; " });
                note.push_str(&format!("delta applied and verified ({bytes} bytes)"));
            }
            Some(DeltaUse::Pushed) => {
                note.push_str(if note.is_empty() { "" } else { "; " });
                note.push_str("delta pushed inline, applied and verified");
            }
            Some(DeltaUse::Whole) => {
                note.push_str(if note.is_empty() { "" } else { "; " });
                note.push_str("delta asked, whole body sent");
            }
            Some(DeltaUse::Fallback(why)) => {
                note.push_str(if note.is_empty() { "" } else { "; " });
                note.push_str(&format!("delta not used: {why}"));
            }
            None => {}
        }
        if replayed {
            note.push_str(if note.is_empty() {
                "replayed"
            } else {
                " (replayed)"
            });
        }
        let at = f.fetched_at.timestamp_millis();
        self.log_line(
            at,
            Some(f.status),
            Some(f.size),
            &job.url,
            job,
            a.media_type.as_deref(),
            elapsed,
            &note,
        );
        let class = status_class(f.status);
        self.metrics.fetch(class);
        self.metrics.bytes.inc_by(f.size);
        if matches!(class, "4xx" | "5xx") {
            self.run.errors += 1;
        }
        self.run.fetched += 1;
        self.run.bytes += f.size;
        self.fetched_total += 1;
        self.batch.pages.push(PageRecord {
            url: job.url.clone(),
            fp: job.fp,
            host: job.host,
            depth: job.depth,
            status: Some(f.status),
            error: None,
            fetched_at: at,
            etag: a.etag.clone(),
            last_modified: a.last_modified.clone(),
            content_type: a.media_type.clone(),
            size: Some(f.size),
            digest: a.digest,
            duplicate_of,
            redirect_to: a.location.as_ref().map(|l| l.to_string()),
            warc: Some((pos.file, pos.offset)),
            changed: f.changed,
            importance,
            changes_seen,
            validator: a.validator.clone(),
            content,
            gone: false,
        });
        self.batch.done.push(job.seq);
        self.settled.push((job.host, job.seq));
        Ok(())
    }

    /// What a successful visit teaches: the page's cash goes to its links and its history
    /// (Adaptive OPIC); a revisit is an observation of its change rate; the refresh schedule
    /// plans the next visit.
    #[allow(clippy::type_complexity)]
    fn learn(
        &mut self,
        job: &Queued,
        visit: &Visit,
        children: &[u64],
    ) -> (Option<(f64, f64)>, Option<(String, f64)>) {
        let Visit {
            at,
            changed,
            last_modified,
            known,
        } = *visit;
        let (history, read_at) = known.map_or((0.0, 0.0), |k| k.importance);
        let cash = self.frontier.read_cash(job.fp, children);
        let clock_before = self.frontier.cash().clock() - cash;
        let history = interpolate(history, cash, clock_before - read_at, self.s.opic_window);
        let mut seen: ChangeHistory = known
            .and_then(|k| k.changes_seen.as_deref())
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default();
        if let Some(k) = known {
            let interval = (at - k.fetched_at).max(0) as f64 / 1000.0;
            let modified = last_modified
                .or(k.last_modified.as_deref())
                .and_then(|lm| DateTime::parse_from_rfc2822(lm).ok())
                .map(|lm| ((at - lm.timestamp_millis()).max(0)) as f64 / 1000.0);
            seen.observe(interval, changed, modified);
        }
        let prior = self.s.keep_fresh.map_or(1.0 / 86_400.0, |c| c.prior_rate);
        let rate = seen.rate(prior);
        let weight = self.importance(job.fp, (history, clock_before));
        if let Some(schedule) = &mut self.schedule {
            let rate = (seen.intervals > 0).then_some(rate);
            schedule.visited(job.fp, job.host, &job.url, job.depth, at, rate, weight);
        }
        // A first visit observed no interval: nothing to store.
        let changes_seen =
            (seen.intervals > 0).then(|| (serde_json::to_string(&seen).unwrap_or_default(), rate));
        (Some((history, clock_before)), changes_seen)
    }

    /// Queues a link unless seen.
    fn push(&mut self, link: &Link, depth: u32, hops: u32) {
        if self.frontier.seen(link.fp) {
            return;
        }
        match self.frontier.host_for(&link.origin) {
            Ok(host) => {
                if self
                    .frontier
                    .push(host, link.url.clone(), link.fp, depth, hops)
                {
                    self.metrics.queued_total.inc();
                }
            }
            Err(e) => tracing::warn!("cannot queue {}: {e}", link.url),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn log_line(
        &mut self,
        at_ms: i64,
        status: Option<u16>,
        size: Option<u64>,
        url: &str,
        job: &Queued,
        media_type: Option<&str>,
        elapsed: Duration,
        note: &str,
    ) {
        let at = DateTime::from_timestamp_millis(at_ms).unwrap_or_default();
        let _ = writeln!(
            self.log,
            "{} {} {} {} {} {} {} {}ms {}",
            at.to_rfc3339_opts(SecondsFormat::Millis, true),
            status.map_or("-".to_string(), |s| s.to_string()),
            size.map_or("-".to_string(), |s| s.to_string()),
            url,
            job.depth,
            job.hops,
            media_type.unwrap_or("-"),
            elapsed.as_millis(),
            note
        );
    }

    /// Saves the batch: archive first, then the state that points into it.
    fn commit(&mut self) -> Result<(), CrawlError> {
        let t = Instant::now();
        self.batch.warc = self
            .warc
            .sync()
            .map_err(|e| file_error(self.warc.dir())(e))?;
        self.batch.new_urls = self.frontier.drain_pending();
        self.batch.coop = self.coop_to_save();
        if !self.batch.is_empty() {
            let cash = self.frontier.cash_meta();
            self.batch.meta.push(cash);
            self.frontier.store.commit(&self.batch)?;
        }
        self.frontier.saved(&self.settled);
        self.log
            .flush()
            .map_err(|e| file_error(&self.log_path)(e))?;
        self.batch = Batch::default();
        self.settled.clear();
        self.batch_digests.clear();
        self.last_commit = Instant::now();
        self.metrics
            .commit_seconds
            .observe(t.elapsed().as_secs_f64());
        Ok(())
    }

    /// Reads back the records written after the last saved batch (a crash) and takes them
    /// as if just fetched, so nothing is fetched twice; cuts a record torn mid-write.
    fn replay(&mut self) -> Result<(), CrawlError> {
        let committed: HashMap<String, u64> =
            self.frontier.store.warc_files()?.into_iter().collect();
        let dir = self.warc.dir().to_path_buf();
        let on_disk = warc::files(&dir, &self.s.warc_prefix).map_err(file_error(&dir))?;
        let mut seen_fps = HashSet::new();
        // Queue rows of the hosts met so far, read once per host.
        let mut queued: HashMap<i64, HashMap<u64, Queued>> = HashMap::new();
        let mut newest = None;
        for (name, size) in on_disk {
            let from = committed.get(&name).copied().unwrap_or(0).min(size);
            let mut valid = from;
            if size > from {
                let path = dir.join(&name);
                let records = warc::read_records(&path, from).map_err(file_error(&path))?;
                for rec in &records {
                    valid = rec.offset + rec.length;
                    let pos = Position {
                        file: name.clone(),
                        offset: rec.offset,
                        length: rec.length,
                    };
                    if self.replay_record(rec, pos, &mut seen_fps, &mut queued)? {
                        self.run.replayed += 1;
                    }
                }
                if valid < size {
                    tracing::warn!(
                        "{name}: cutting {} bytes of a record torn by a crash",
                        size - valid
                    );
                }
            }
            newest = Some((name, valid));
        }
        if let Some((name, valid)) = newest {
            self.warc
                .resume(&name, valid)
                .map_err(|e| file_error(&dir.join(&name))(e))?;
        }
        if self.run.replayed > 0 {
            tracing::info!(
                "replayed {} records written after the last saved batch",
                self.run.replayed
            );
        }
        self.commit()
    }

    fn replay_record(
        &mut self,
        rec: &warc::StoredRecord,
        pos: Position,
        seen_fps: &mut HashSet<u64>,
        queued: &mut HashMap<i64, HashMap<u64, Queued>>,
    ) -> Result<bool, CrawlError> {
        let kind = rec.header("WARC-Type").unwrap_or("");
        if !matches!(kind, "response" | "revisit") {
            return Ok(false);
        }
        let Some(url) = rec
            .header("WARC-Target-URI")
            .and_then(|u| Url::parse(u).ok())
        else {
            return Ok(false);
        };
        let Some(http) = warc::parse_http(&rec.block) else {
            tracing::warn!(
                "{}: record at {} has no readable HTTP response; it will be fetched again",
                pos.file,
                pos.offset
            );
            return Ok(false);
        };
        let fetched_at = rec
            .header("WARC-Date")
            .and_then(|d| DateTime::parse_from_rfc3339(d).ok())
            .map(|d| d.with_timezone(&Utc))
            .unwrap_or_else(Utc::now);
        let fp = url_norm::fingerprint(&url);
        if url.path() == "/robots.txt" && url.query().is_none() {
            let origin = url_norm::origin_key(&url);
            let host = self.frontier.host_for(&origin)?;
            let unknown = self
                .frontier
                .host(host)
                .is_some_and(|h| matches!(h.robots, RobotsState::Unknown));
            if unknown && kind == "response" {
                let body = crate::analyze::decode(
                    http.headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case("content-encoding"))
                        .map(|(_, v)| v.as_str()),
                    &http.body,
                    rec.header("WARC-Truncated").is_some(),
                    robots::MAX_BYTES,
                )
                .unwrap_or_default();
                let result = Ok(RobotsFetched {
                    status: http.status,
                    body,
                    record: RecordSlot::Stored(pos),
                });
                self.handle(
                    Outcome::Robots {
                        host,
                        result,
                        elapsed: Duration::ZERO,
                    },
                    true,
                )?;
                return Ok(true);
            }
            if !self.frontier.seen(fp) {
                return Ok(false);
            }
        }
        if !seen_fps.insert(fp) {
            return Ok(false);
        }
        // Found by an earlier replayed page (not saved yet), or saved in the queue.
        let job = match self.frontier.unsaved_row(fp) {
            Some(row) => row,
            None => {
                let origin = url_norm::origin_key(&url);
                let host = self.frontier.host_for(&origin)?;
                if let std::collections::hash_map::Entry::Vacant(e) = queued.entry(host) {
                    let rows = self.frontier.store.queued_of_host(host)?;
                    e.insert(rows.into_iter().map(|q| (q.fp, q)).collect());
                }
                match queued.get_mut(&host).and_then(|rows| rows.remove(&fp)) {
                    Some(row) => row,
                    None => return Ok(false),
                }
            }
        };
        if job.url != url.as_str() {
            return Ok(false);
        }
        self.frontier.claim(job.host, job.seq);
        let known = self.frontier.store.page(job.fp)?;
        let truncated = rec.header("WARC-Truncated").is_some();
        let received = Received {
            url: &url,
            status: http.status,
            headers: &http.headers,
            body: &http.body,
            truncated,
        };
        let refers_to = rec.header("WARC-Refers-To-Target-URI").map(str::to_string);
        let same_content = kind == "revisit"
            && rec
                .header("WARC-Profile")
                .is_some_and(|p| p.ends_with("identical-payload-digest"))
            && refers_to.as_deref() == Some(url.as_str());
        let mut analysis = if kind == "response" {
            crate::analyze::analyze(received, job.depth, &self.ctx.policy, self.s.fetch.max_body)
        } else {
            let mut a = crate::analyze::analyze(
                Received {
                    status: 304,
                    ..received
                },
                job.depth,
                &self.ctx.policy,
                0,
            );
            a.digest = if same_content {
                known.as_ref().and_then(|k| k.digest)
            } else {
                None
            };
            a
        };
        if kind == "revisit" {
            analysis.links.clear();
        }
        let held = known.as_ref().and_then(|k| k.digest);
        let ok = (200..300).contains(&http.status) && analysis.digest.is_some();
        let fetched = Fetched {
            status: http.status,
            size: http.body.len() as u64,
            truncated,
            fetched_at,
            retry_after: None,
            http_head: http.head.clone(),
            payload_digest: rec
                .header("WARC-Payload-Digest")
                .unwrap_or_default()
                .to_string(),
            unchanged: same_content || (kind == "response" && ok && held == analysis.digest),
            changed: kind == "response" && ok && held.is_some() && held != analysis.digest,
            refers_to: if kind == "revisit" { refers_to } else { None },
            analysis,
            record: RecordSlot::Stored(pos),
            known,
            delta: None,
        };
        self.handle(
            Outcome::Page {
                job,
                result: Ok(Box::new(fetched)),
                elapsed: Duration::ZERO,
                local: false,
            },
            true,
        )?;
        Ok(true)
    }
}
