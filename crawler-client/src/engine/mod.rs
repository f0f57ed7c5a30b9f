//! The crawl loop. One thread decides: it owns the frontier, the crawl state, the archive
//! writer and the cooperation state, dispatches requests to the async runtime as hosts become
//! eligible, and handles what comes back. Requests, analysis and record compression run on
//! the runtime.
//!
//! Durability: results are saved in batches. The WARC bytes of a batch are synced before the
//! transaction that points at them commits, so after `kill -9` the state is the last batch,
//! and the records written after it are read back (replayed) at the next start instead of
//! being fetched again.
//!
//! The parts, in the order a crawl meets them: `open` (the directory, the state, the
//! frontier and the schedule), `crawl_loop` (waking, dispatching, refreshes), `outcomes`
//! (what a robots.txt or page request ended with), `record` (archiving a final response and
//! what it teaches), `cooperation` (the cooperation state's effects carried out), `save`
//! (batches), `replay` (records written after the last batch) and `crawl_log`.

mod console;
mod cooperation;
pub(crate) mod crawl_log;
mod crawl_loop;
mod fleet;
mod in_flight;
mod lanes;
mod open;
mod originals;
mod outcomes;
mod record;
mod replay;
mod run_counters;
mod save;
mod shards;
#[cfg(test)]
mod tests;
mod unsaved;

use crate::archive::warc::WarcWriter;
use crate::config::Settings;
use crate::coop::CoopState;
use crate::fetch::outbox::{Inbox, Outbox};
use crate::fetch::outcome::Context;
use crate::frontier::Frontier;
use crate::metrics::CrawlMetrics;
use crate::progress::RunFigures;
use crate::refresh::schedule::Schedule;
use crate::state::{Figures, Store, StoreError};
use crawl_log::CrawlLog;
use in_flight::InFlight;
use run_counters::RunCounters;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use unsaved::Unsaved;
use url::Url;

pub use fleet::join;
pub(crate) use open::lock;

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
    /// The shared frontier of a fleet failed.
    #[error(transparent)]
    Fleet(#[from] crate::frontier::fleet::FleetError),
    /// The settings are refused.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The console could not start.
    #[error(transparent)]
    Console(#[from] crate::console::ConsoleError),
    /// Another crawl holds the directory.
    #[error("{0} is in use by another webcoop-crawl process")]
    Locked(PathBuf),
    /// Nothing to crawl.
    #[error("no seeds: give --seeds (a URL or a file of URLs)")]
    NoSeeds,
    /// A seed lies inside a network the crawler may not reach.
    #[error("seed {seed}: {refusal}")]
    SeedRefused {
        /// The seed.
        seed: String,
        /// Why, with the option that allows it.
        refusal: webcoop_netguard::Refusal,
    },
    /// The HTTP client or runtime could not start.
    #[error("cannot start {what}: {source}")]
    Start {
        /// What could not start.
        what: String,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
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

fn start_error(
    what: impl Into<String>,
) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> CrawlError {
    let what = what.into();
    move |source| CrawlError::Start { what, source }
}

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
}

/// The crawl: everything the loop decides with, owned by one thread.
struct Engine {
    settings: Settings,
    ctx: Arc<Context>,
    rt: tokio::runtime::Runtime,
    store: Store,
    frontier: Frontier,
    warc: WarcWriter,
    tx: Outbox,
    rx: Inbox,
    /// Each host's page requests on the fetching side, while it has any.
    lanes: lanes::Lanes,
    unsaved: Unsaved,
    /// Where each content digest was first met, to find duplicates.
    originals: originals::Originals,
    in_flight: InFlight,
    fetched_total: u64,
    run: RunCounters,
    log: CrawlLog,
    metrics: Arc<CrawlMetrics>,
    token: String,
    last_commit: Instant,
    schedule: Option<Schedule>,
    coop: CoopState,
    /// This process's part of a fleet, when it is one.
    fleet: Option<fleet::Fleet>,
    /// This process's shard of a fleet split by owner, when it is one.
    shard: Option<shards::Shard>,
    /// The console, when one is served.
    console: Option<console::Console>,
}

/// Runs a crawl until its queue is empty, its page budget spent, or `stop` is set.
pub fn run(mut s: Settings, stop: Arc<AtomicBool>) -> Result<Report, CrawlError> {
    let started = Instant::now();
    let (_lock, shared) = match s.fleet.clone() {
        None => (lock(&s.out)?, None),
        Some(mut f) if f.shard.is_some() => {
            let (i, n) = f.shard.unwrap_or_default();
            f.process.get_or_insert_with(|| format!("shard-{i}"));
            let (lock, name, dir) =
                fleet::shard_dir(&s.out, f.process.as_deref().unwrap_or_default())?;
            s.out = dir;
            tracing::info!(
                "shard {i} of {n} ({name}) of crawl {:?} on {}: state and WARC files in {}",
                f.crawl,
                crate::frontier::fleet::shown(&f.frontier),
                s.out.display()
            );
            (lock, None)
        }
        Some(f) => {
            let (lock, name, dir) = fleet::take_name(&s.out, &f, &stop)?;
            s.out = dir;
            let name_shown = name.name().to_string();
            let process = fleet::connect(&s, &f, name, stop.clone())?;
            tracing::info!(
                "process {name_shown} of crawl {:?} on {}: state and WARC files in {}",
                f.crawl,
                crate::frontier::fleet::shown(&f.frontier),
                s.out.display()
            );
            (lock, Some(process))
        }
    };
    for seed in console::logged_seeds(&s.out) {
        if !s.seeds.contains(&seed) {
            s.seeds.push(seed);
        }
    }
    let sharded = s.fleet.clone().and_then(|f| Some((f.shard?, f)));
    let (mut e, seeds) = Engine::open(s)?;
    if let Some((shard, f)) = sharded {
        let consumed = e
            .store
            .meta(shards::CONSUMED)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let joined = crate::frontier::fleet::shards::Shards::join(
            &f.frontier,
            &f.crawl,
            shard,
            f.lease,
            consumed,
        )?;
        e.shard = Some(shards::Shard::new(joined));
    }
    if let Some(process) = shared {
        e.frontier.share();
        e.fleet = Some(process);
        e.fleet_beat("running")?;
    }
    e.start_console()?;
    e.apply_logged_actions()?;
    let _checkpointer = e.store.checkpoint_in_background()?;
    e.replay()?;
    e.seed(&seeds);
    e.commit()?;
    let complete = e.crawl(&stop);
    e.shard_leave();
    let complete = complete?;
    let figures = e.store.figures()?;
    if complete && figures.queued == 0 && e.store.refresh_pass_open()? {
        e.store.set_refresh_pass_open(false)?;
    }
    let skipped = e.store.skipped_hosts()?;
    // Requests still under way after the grace period are dropped with the runtime.
    e.rt.shutdown_timeout(Duration::from_millis(100));
    Ok(Report {
        figures,
        skipped,
        run: RunFigures {
            fetched: e.run.counts().fetched,
            bytes: e.run.counts().bytes,
            elapsed: started.elapsed(),
            replayed: e.run.counts().replayed,
            complete,
        },
    })
}

impl Engine {
    /// Queues the seeds (those seen already stay where they are) and gives a new crawl's
    /// seeds the system's cash.
    fn seed(&mut self, seeds: &[Url]) {
        let mut fps = Vec::new();
        for seed in seeds {
            let link = crate::analyze::Link::to(seed);
            fps.push(link.fp);
            self.push(&link, 0, 0);
            // The operator named this site: its cooperation is worth two blind requests.
            if let Some(host) = self.frontier.id_of(link.origin()) {
                self.frontier.probe_from_the_start(host);
            }
            // Another shard's seed: its share of the cash goes there.
            self.shard_paid(&link);
        }
        self.frontier.endow_seeds(&fps);
    }
}
