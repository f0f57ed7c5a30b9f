//! Opening a crawl: the directory's lock, the state with the seeds of every run, the frontier
//! with each host's robots.txt and politeness as saved, the archive, the HTTP client, the
//! metrics endpoint, the crawl log, the cooperation state and the refresh schedule.

use super::crawl_log::CrawlLog;
use super::{CrawlError, Engine, InFlight, RunCounters, Unsaved, file_error, start_error};
use crate::analyze::scope::LinkPolicy;
use crate::archive::warc::WarcWriter;
use crate::clock::now_ms;
use crate::config::Settings;
use crate::coop::callback::{CallbackServer, Report as CallbackReport};
use crate::coop::{CoopMode, CoopState};
use crate::fetch::analysis_room::AnalysisRoom;
use crate::fetch::outbox::Outbox;
use crate::fetch::outcome::{Context, Outcome};
use crate::fetch::{self, outbox};
use crate::frontier::politeness::Politeness;
use crate::frontier::robots::{self, Rules};
use crate::frontier::servers::PolitenessKey;
use crate::frontier::{Frontier, RobotsState};
use crate::metrics::{self, CrawlMetrics};
use crate::refresh::schedule::{Schedule, Tracked};
use crate::state::{HostRecord, Store};
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use url::Url;
use webcoop_netguard::{GuardedResolver, NetPolicy, ResolveError};

/// The prefix of the reason a host is skipped for its `Crawl-delay`.
const CRAWL_DELAY_SKIP: &str = "Crawl-delay";

/// Takes the crawl directory's lock, so two crawls never write one state.
pub(crate) fn lock(out: &Path) -> Result<File, CrawlError> {
    crate::state::lock(out).map_err(|e| match e {
        crate::state::LockError::Locked(dir) => CrawlError::Locked(dir),
        crate::state::LockError::File { path, source } => file_error(&path)(source),
    })
}

/// Why a host is skipped for its `Crawl-delay`.
pub(super) fn crawl_delay_reason(delay: Option<f64>, cap: Duration) -> String {
    format!(
        "{CRAWL_DELAY_SKIP} of {} s in robots.txt is over the cap of {} s (crawl_delay_cap)",
        delay.unwrap_or_default(),
        cap.as_secs_f64()
    )
}

/// Stops on the first seed inside a network the crawler may not reach, naming the option
/// that allows it; a seed whose name does not resolve now is left to the crawl.
fn refuse_seeds_inside(
    rt: &tokio::runtime::Runtime,
    guard: &GuardedResolver,
    seeds: &[Url],
) -> Result<(), CrawlError> {
    for seed in seeds {
        if let Err(ResolveError::Refused(refusal)) = rt.block_on(guard.check_url_resolving(seed)) {
            return Err(CrawlError::SeedRefused {
                seed: seed.to_string(),
                refusal,
            });
        }
    }
    Ok(())
}

/// The seeds given now and those of earlier runs (the scope is theirs too), saved.
fn seeds(store: &Store, given: &[Url]) -> Result<Vec<Url>, CrawlError> {
    let seeds = store.add_seeds(given)?;
    if seeds.is_empty() {
        return Err(CrawlError::NoSeeds);
    }
    Ok(seeds)
}

/// A saved host as the frontier starts with it: robots.txt rules still fresh, the skip
/// reason, and the first moment it may be contacted.
pub(super) struct HostStart {
    pub(super) token: String,
    pub(super) politeness: Politeness,
    pub(super) robots_ttl: Duration,
    pub(super) now: Instant,
    pub(super) now_ms: i64,
    /// Since the last save of the run before, and the longest an answer may take: every
    /// host waits the delay such an answer would set, from that save.
    pub(super) quiet: Option<(Duration, Duration)>,
}

impl HostStart {
    pub(super) fn state(&self, rec: &HostRecord) -> (RobotsState, Option<String>, Instant) {
        let ttl = self.robots_ttl;
        let age = rec
            .robots_fetched
            .map(|at| Duration::from_millis((self.now_ms - at).max(0) as u64));
        let robots = match (rec.robots_status, age) {
            (Some(status), Some(age)) if status < 500 && age < ttl => RobotsState::Known(
                Rules::from_fetch(
                    Some(status),
                    rec.robots_body.as_deref().unwrap_or_default(),
                    &self.token,
                ),
                self.now + (ttl - age),
            ),
            _ => RobotsState::Unknown,
        };
        let crawl_delay = match &robots {
            RobotsState::Known(r, _) => r.crawl_delay(),
            _ => None,
        };
        // A Crawl-delay skip is decided again (the cap may have changed); others stand.
        let politeness = self.politeness;
        let skipped = if politeness.too_slow(crawl_delay) {
            Some(crawl_delay_reason(crawl_delay, politeness.crawl_delay_cap))
        } else {
            rec.skipped
                .clone()
                .filter(|r| !r.starts_with(CRAWL_DELAY_SKIP))
        };
        // The last request before a restart is not remembered: wait a full delay, and soon
        // after the last save (a crash, or a quick restart) the longest delay a last answer
        // could have set, which also outlasts a request the dead process left under way.
        // Every host, as one first asked after that save is not known to have been.
        let mut next = self.now + politeness.delay(crawl_delay, Duration::ZERO);
        if let Some((since, answer_cap)) = self.quiet {
            let longest = politeness.delay(crawl_delay, answer_cap);
            next = next.max(self.now + longest.saturating_sub(since));
        }
        if let Some(parked) = rec.parked_until.filter(|p| *p > self.now_ms) {
            next = next.max(self.now + Duration::from_millis((parked - self.now_ms) as u64));
        }
        (robots, skipped, next)
    }
}

/// How long ago the run before last saved its state: none for a new crawl or one stopped
/// with nothing under way; a save dated in the future (the clock moved back) counts as now.
fn since_last_save(store: &Store) -> Result<Option<Duration>, CrawlError> {
    let saved = store
        .meta(crate::state::SAVED_AT)?
        .and_then(|v| v.parse::<i64>().ok());
    Ok(saved.map(|at| {
        let ms = now_ms().saturating_sub(at);
        Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    }))
}

/// The runtime requests run on, with `threads` workers.
fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, CrawlError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("fetch")
        .enable_all()
        .build()
        .map_err(|e| start_error("the async runtime")(e.into()))
}

/// `/metrics` on `addr`, when asked for; returns where it listens.
fn serve_metrics(
    rt: &tokio::runtime::Runtime,
    addr: Option<std::net::SocketAddr>,
    metrics: &Arc<CrawlMetrics>,
) -> Result<(), CrawlError> {
    let Some(addr) = addr else {
        return Ok(());
    };
    let local = rt
        .block_on(metrics::serve(addr, metrics.clone()))
        .map_err(|e| start_error(format!("metrics on {addr}"))(e.into()))?;
    tracing::info!("metrics at http://{local}/metrics");
    Ok(())
}

/// What every request's task shares: the client, the limits and policies, and the room for
/// analysis (one page at its largest at once).
fn request_context(
    s: &Settings,
    client: fetch::Net,
    policy: LinkPolicy,
    warc_dir: std::path::PathBuf,
) -> Context {
    Context {
        client,
        limits: s.fetch,
        policy,
        warc_level: s.warc_level,
        warc_dir,
        conditional: s.conditional,
        snapshot_backlog: Default::default(),
        purposes: s.purposes.clone(),
        analysis: Arc::new(AnalysisRoom::new(s.fetch.max_body)),
    }
}

/// The WebSub callback server, reporting into the loop's channel.
fn callback_server(
    rt: &tokio::runtime::Runtime,
    s: &Settings,
    tx: &Outbox,
) -> Result<Option<CallbackServer>, CrawlError> {
    let Some((listen, public)) = s.callback.clone().filter(|_| s.coop.mode == CoopMode::Push)
    else {
        return Ok(None);
    };
    let tx = Mutex::new(tx.clone());
    let report: CallbackReport = Arc::new(move |e| {
        if let Ok(tx) = tx.lock() {
            tx.send(Outcome::Callback(e));
        }
    });
    let server = rt
        .block_on(CallbackServer::start(listen, public, report))
        .map_err(|e| start_error(format!("the WebSub callback on {listen}"))(e.into()))?;
    tracing::info!(
        "WebSub callbacks at {} (listening on {})",
        server.base,
        server.local
    );
    Ok(Some(server))
}

/// The IndexNow endpoint, reporting into the loop's channel; it takes what the crawl's scope
/// admits.
fn indexnow_server(
    rt: &tokio::runtime::Runtime,
    s: &Settings,
    tx: &Outbox,
    policy: &LinkPolicy,
) -> Result<Option<crate::coop::indexnow_server::IndexNowServer>, CrawlError> {
    let Some(listen) = s.indexnow_listen else {
        return Ok(None);
    };
    let tx = Mutex::new(tx.clone());
    let report: crate::coop::indexnow_server::Report = Arc::new(move |sub| {
        if let Ok(tx) = tx.lock() {
            tx.send(Outcome::IndexNow(sub));
        }
    });
    let policy = policy.clone();
    let in_scope: crate::coop::indexnow_server::InScope =
        Arc::new(move |u: &Url| policy.admit(u, 1).is_ok());
    let server = rt
        .block_on(crate::coop::indexnow_server::IndexNowServer::start(
            listen, in_scope, report,
        ))
        .map_err(|e| start_error(format!("the IndexNow endpoint on {listen}"))(e.into()))?;
    tracing::info!("IndexNow endpoint at http://{}/indexnow", server.local);
    Ok(Some(server))
}

/// The crawl's HTTP client: its resolver guarded by `--allow-net` (a seed inside a forbidden
/// network refuses the start), its signer, and how long an idle connection is kept.
fn http_client(
    s: &Settings,
    rt: &tokio::runtime::Runtime,
    seeds: &[Url],
) -> Result<fetch::Net, CrawlError> {
    let mut guard = GuardedResolver::new(
        NetPolicy::new(s.allow_net.clone(), "--allow-net"),
        s.resolve.clone(),
    );
    if let Some(server) = s.nameserver {
        guard = guard.with_name_server(server);
    }
    refuse_seeds_inside(rt, &guard, seeds)?;
    let signer = match &s.signing {
        Some(settings) => Some(Arc::new(
            crate::signing::Signer::new(settings.clone())
                .map_err(|e| start_error("the signing keys")(std::io::Error::other(e).into()))?,
        )),
        None => None,
    };
    // A connection is kept for a host's next request, a delay away, and closed soon
    // after: ten thousand hosts' idle connections cost 27 KB each. Kept 10 s at the web's
    // shape, it saved a fifth of the connections and no CPU, for 45% more sockets
    // (docs/ARCHITECTURE.md); `--connection-idle` sets it.
    let idle = s.connection_idle.unwrap_or_else(|| {
        (s.politeness.min_delay * 2 + Duration::from_secs(1)).min(Duration::from_secs(15))
    });
    fetch::client(&s.user_agent, &s.fetch, guard, s.per_host, signer, idle)
        .map_err(|e| start_error("the HTTP client")(std::io::Error::other(e).into()))
}

impl Engine {
    /// Opens the crawl in `s.out`; returns it with the seeds to queue and where the metrics
    /// are served.
    pub(super) fn open(s: Settings) -> Result<(Engine, Vec<Url>), CrawlError> {
        let rt = runtime(s.fetch_threads)?;
        let mut store = Store::open(&s.out)?;
        let seeds = seeds(&store, &s.seeds)?;
        // `status` judges each site's level and trust by the settings of the crawl that wrote it.
        if let Ok(coop) = serde_json::to_string(&s.coop) {
            store.set_meta(crate::state::COOP_CONFIG_META, &coop)?;
        }
        if s.refresh && !store.refresh_pass_open()? {
            let first = store.max_queue_seq()? + 1;
            let n = store.requeue_pages(first)?;
            store.set_refresh_pass_open(true)?;
            tracing::info!("refresh pass: {n} pages queued again");
        }
        let figures = store.figures()?;
        let (fetched_total, net_refused) = (figures.fetched(), figures.net_refused);
        let token = robots::product_token(&s.user_agent);
        let start = HostStart {
            token: token.clone(),
            politeness: s.politeness,
            robots_ttl: s.robots_ttl,
            now: Instant::now(),
            now_ms: now_ms(),
            quiet: since_last_save(&store)?.map(|since| (since, s.fetch.timeout)),
        };
        let mut frontier = Frontier::load(&store, s.per_host, s.opic_eps, |rec| start.state(rec))?;
        frontier.set_hosts_at_once(s.hosts_at_once, s.politeness.min_delay);
        frontier.set_probe_after(s.probe_after);
        if s.politeness_key == PolitenessKey::Ip {
            frontier.by_address();
        }
        let warc_dir = s.out.join("warc");
        let warc = WarcWriter::new(
            &warc_dir,
            &s.warc_prefix,
            s.warc_max_size,
            &s.user_agent,
            s.warc_level,
        )
        .map_err(file_error(&warc_dir))?;
        let client = http_client(&s, &rt, &seeds)?;
        let metrics = Arc::new(CrawlMetrics::default());
        serve_metrics(&rt, s.metrics, &metrics)?;
        let log = CrawlLog::open(&s.out.join("crawl.log"))?;
        let (tx, mut rx) = outbox::channel();
        // A hundredth of the shortest delay: each host's requests later by at most 1%.
        rx.gather(s.politeness.min_delay / 100);
        let policy = LinkPolicy::new(s.scope.clone(), &seeds, s.limits)
            .for_agent(&robots::product_token(&s.user_agent));
        let mut originals = super::originals::Originals::default();
        store.load_digests(|digest, fp| {
            originals.first_met(digest, fp);
        })?;
        let mut coop = CoopState::new(s.coop, now_ms() as u64);
        coop.allow_hubs(s.hub_allow.clone());
        coop.load(store.coop_sites()?);
        if let Some(server) = callback_server(&rt, &s, &tx)? {
            coop.attach_callback(server);
        }
        if let Some(server) = indexnow_server(&rt, &s, &tx, &policy)? {
            coop.attach_indexnow(server);
        }
        let mut e = Engine {
            ctx: Arc::new(request_context(&s, client, policy, warc_dir)),
            rt,
            store,
            frontier,
            warc,
            tx,
            rx,
            lanes: super::lanes::Lanes::new(s.per_host),
            unsaved: Unsaved::default(),
            originals,
            in_flight: InFlight::default(),
            fetched_total,
            run: RunCounters::resumed(net_refused),
            log,
            metrics,
            token,
            last_commit: Instant::now(),
            schedule: None,
            coop,
            fleet: None,
            shard: None,
            console: None,
            settings: s,
        };
        e.schedule = e.restore_schedule()?;
        // A site that answered for its pages before the restart still does until it stops:
        // its pages wait for its announcements instead of being fetched on resuming.
        if let Some(schedule) = e.schedule.as_mut() {
            for host in e.coop.covered_hosts() {
                schedule.set_host_covered(host, true);
            }
        }
        Ok((e, seeds))
    }

    /// The refresh schedule of the pages worth keeping fresh, when the crawl keeps any.
    fn restore_schedule(&self) -> Result<Option<Schedule>, CrawlError> {
        let Some(config) = self.settings.keep_fresh else {
            return Ok(None);
        };
        let mut schedule = Schedule::new(config);
        let pages = self.store.refreshable_pages()?;
        schedule.restore(pages.into_iter().map(|p| {
            let tracked = Tracked {
                host: p.host,
                weight: self.importance(p.fp, p.importance),
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
        Ok(Some(schedule))
    }
}
