//! One bench run: for each mode, a fresh generated site served over loopback, the agent beside
//! it, the crawler in that mode, and the same edits on a scaled clock shared by all three
//! (`--clock-speed`, `--clock-anchor`); counting proxies in front of the site, the agent and
//! the crawler's callback measure the wire. Afterwards the crawler's archive tells when its
//! copy of each page caught up with which version, and the bench, which made every version,
//! scores it.

use super::changes::{Edit, EditKind};
pub use super::config::BenchConfig;
use super::freshness::{PageTimeline, Score, mean_score, quantile, weighted_score};
pub use super::mode::Mode;
use super::proxy::WireCount;
use super::reads::Reads;
pub use super::served::{ServedSite, Serving};
pub(crate) use super::served::{callback_proxy, io, wait_until};
use super::site::GeneratedSite;
use super::web_side::WebSide;
use crate::servers::Killed;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_protocol::clock::{Clock, ScaledClock};
use webcoop_protocol::validator::Sha256Digest;

/// What one mode measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModeResult {
    /// The mode.
    pub mode: Mode,
    /// Edits made.
    pub changes: usize,
    /// Edits whose version (or a later one) the crawler held by the end.
    pub detected: usize,
    /// Crawler to site and agent, as the proxy counted.
    pub site: WireCount,
    /// Hub to the crawler's callback, as the proxy counted.
    pub pushed: WireCount,
    /// Requests to the site the crawler logged over its whole run, first crawl and stop
    /// included (pushed pages it updated without a request left out).
    pub crawler_requests: u64,
    /// Requests to the site the proxy saw over the crawler's whole run, to set beside
    /// `crawler_requests`: counted from its start to its exit, no request is cut in two.
    pub proxied_requests: u64,
    /// Deliveries (POSTs) the proxy passed to the crawler's callback over the whole run.
    pub deliveries: u64,
    /// Deliveries the crawler says it accepted over the whole run, from its saved state.
    pub crawler_pushes: u64,
    /// Time-averaged freshness and age (seconds) of the copy.
    pub score: Score,
    /// The same, each page weighted by its share of reads ([`super::reads`]).
    pub read_score: Score,
    /// Detection latency, median and 99th percentile, simulated seconds.
    pub latency_p50: Option<f64>,
    /// See `latency_p50`.
    pub latency_p99: Option<f64>,
    /// The site's pings to its hub and IndexNow submissions that failed (the web's modes),
    /// and why the first did.
    pub signal_failures: (u64, Option<String>),
    /// CPU seconds of the crawler and of the agent.
    pub cpu_crawler: f64,
    /// See `cpu_crawler`.
    pub cpu_agent: f64,
}

impl ModeResult {
    /// Where the crawler's own counts differ from the proxy's, in words; none when they agree.
    pub fn disagreement(&self) -> Option<String> {
        let mut what = Vec::new();
        if self.crawler_requests != self.proxied_requests {
            what.push(format!(
                "the proxy saw {} requests to the site, the crawler logged {}",
                self.proxied_requests, self.crawler_requests
            ));
        }
        if self.crawler_pushes != self.deliveries {
            what.push(format!(
                "the proxy passed {} deliveries to the callback, the crawler accepted {}",
                self.deliveries, self.crawler_pushes
            ));
        }
        (!what.is_empty()).then(|| what.join("; "))
    }

    /// Bytes both ways on every wire, per edit detected.
    pub fn bytes_per_change(&self) -> Option<f64> {
        (self.detected > 0)
            .then(|| (self.site.bytes() + self.pushed.bytes()) as f64 / self.detected as f64)
    }
}

/// CPU seconds a process used so far (user and system, from /proc).
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// The crawler of `mode` for the site at `base`, its files in `dir` (its settings written to
/// `crawl.toml` there): on the run's clock, keeping fresh on the cycle, with the signal side's
/// arguments and, for push, its callback (`(listen port, proxy port)`).
fn crawl_command(
    cfg: &BenchConfig,
    mode: Mode,
    (base, dir): (&str, &Path),
    clock_args: &[String],
    web: Option<&WebSide>,
    (callback_port, proxy_port): (u16, u16),
) -> Result<Command, String> {
    let out = dir.join("crawl");
    let config = dir.join("crawl.toml");
    // Metadata polls keep the outdated probability under 5% within the bounds; the backup
    // poll of a pushing site is the design's ten minutes.
    std::fs::write(
        &config,
        format!(
            "coop_poll_min = 30.0\ncoop_poll_max = {}\ncoop_backup_poll = 600.0\ncommit_interval = 0.2\nconditional = {}\ncoop_deltas = {}\n",
            cfg.cycle,
            mode != Mode::Poll,
            mode != Mode::Push,
        ),
    )
    .map_err(io("crawl.toml"))?;
    let mut crawl = Command::new(&cfg.crawler);
    crawl
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .args(["--seeds", base])
        .arg("--out")
        .arg(&out)
        .arg("--config")
        .arg(&config)
        .args([
            "--delay-min",
            "0",
            "--delay-factor",
            "0",
            "--progress",
            "quiet",
        ])
        .args(["--coop", mode.coop()])
        .args(clock_args);
    if mode != Mode::Once {
        crawl
            .args(["--keep-fresh", "--refresh-cycle", &cfg.cycle.to_string()])
            .args(["--refresh-policy", mode.policy()]);
    }
    if let Some(w) = web {
        crawl.args(w.crawler_args());
    }
    if mode.pushed() {
        crawl.args([
            "--callback-listen",
            &format!("127.0.0.1:{callback_port}"),
            "--callback-url",
            &format!("http://127.0.0.1:{proxy_port}/"),
        ]);
    }
    Ok(crawl)
}

/// Every version of every page, by validator, and when each change appeared (simulated
/// seconds from the measurement's start): the truth the copy is scored against.
#[derive(Default)]
struct Truth {
    versions: HashMap<String, Vec<String>>,
    changed: HashMap<String, Vec<f64>>,
}

impl Truth {
    /// The copy's catching up, from the crawler's archive, as each page's timeline.
    fn timelines(
        mut self,
        out: &Path,
        (base, paths): (&str, &[String]),
        sim: impl Fn(DateTime<Utc>) -> f64,
    ) -> Vec<PageTimeline> {
        let mut synced: HashMap<String, Vec<(f64, usize)>> = HashMap::new();
        for (url, at, validator) in archived(&out.join("warc")) {
            let Some(path) = url.strip_prefix(base.trim_end_matches('/')) else {
                continue;
            };
            let Some(k) = self
                .versions
                .get(path)
                .and_then(|vs| vs.iter().rposition(|v| *v == validator))
            else {
                continue;
            };
            synced
                .entry(path.to_string())
                .or_default()
                .push((sim(at), k));
        }
        paths
            .iter()
            .map(|p| {
                let mut s = synced.remove(p).unwrap_or_default();
                s.sort_by(|a, b| a.0.total_cmp(&b.0));
                PageTimeline {
                    changes: self.changed.remove(p).unwrap_or_default(),
                    synced: s,
                }
            })
            .collect()
    }
}

/// Applies `edits` to `site` at their simulated times (each file dated on the clock, the
/// signal side told), recording the truth.
async fn make_edits(
    cfg: &BenchConfig,
    edits: &[Edit],
    site: &mut GeneratedSite,
    clock: &ScaledClock,
    sim: &impl Fn(DateTime<Utc>) -> f64,
    mut web: Option<&mut WebSide>,
    truth: &mut Truth,
) -> Result<(), String> {
    let docroot = site.root.clone();
    for edit in edits.iter().filter(|e| e.at < cfg.duration) {
        let wait = edit.at - sim(clock.now());
        if wait > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(wait / cfg.speed)).await;
        }
        site.apply(edit).map_err(io(&edit.path))?;
        let file = docroot.join(&edit.path[1..]);
        // The file's date on the simulated clock, as a server's Last-Modified and ETag report
        // it: in real time, edits a fraction of a second apart (minutes simulated) would share
        // one second and look unchanged to a conditional GET.
        let now = clock.now();
        if let Ok(f) = std::fs::File::options().write(true).open(&file) {
            let _ = f.set_modified(now.into());
        }
        if let Some(w) = web.as_deref_mut() {
            w.changed(&edit.path, now, edit.kind == EditKind::Delete)
                .await;
        }
        if let Ok(body) = std::fs::read(&file) {
            truth
                .versions
                .entry(edit.path.clone())
                .or_default()
                .push(Sha256Digest::of(&body).etag().to_string());
            truth
                .changed
                .entry(edit.path.clone())
                .or_default()
                .push(sim(now));
        }
    }
    let left = cfg.duration - sim(clock.now());
    if left > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(left / cfg.speed)).await;
    }
    Ok(())
}

/// Waits until the crawler's first crawl holds every page of `site` as it is (and, for push,
/// until it is subscribed); returns each page's validator.
fn first_crawl_held(
    cfg: &BenchConfig,
    site: &GeneratedSite,
    (base, out): (&str, &Path),
    web: Option<&WebSide>,
    mode: Mode,
) -> Result<HashMap<String, String>, String> {
    let validators: HashMap<String, String> = site
        .paths
        .iter()
        .filter_map(|p| {
            let body = std::fs::read(site.root.join(&p[1..])).ok()?;
            Some((p.clone(), Sha256Digest::of(&body).etag().to_string()))
        })
        .collect();
    let site_url = |p: &str| format!("{}{}", base.trim_end_matches('/'), p);
    let limit = Duration::from_secs(60) + Duration::from_millis(150) * cfg.pages as u32;
    wait_until("the first crawl", limit, || {
        let held = held(out);
        validators
            .iter()
            .all(|(p, v)| held.get(&site_url(p)) == Some(v))
    })?;
    if let Some(w) = web {
        wait_until("the hub's subscription", Duration::from_secs(30), || {
            w.subscribed()
        })?;
    } else if mode.pushed() {
        wait_until("the subscription", Duration::from_secs(30), || {
            std::fs::read_to_string(out.join("crawl.log")).is_ok_and(|l| l.contains(" 202 "))
        })?;
    }
    Ok(validators)
}

/// A fresh generated site for `mode` in `dir`, served on a scaled clock anchored now (the
/// agent beside it where the mode has one): the clock, the clock's arguments for the other
/// processes, and the served site.
async fn serve_mode(
    cfg: &BenchConfig,
    mode: Mode,
    dir: &Path,
) -> Result<(ScaledClock, Vec<String>, ServedSite), String> {
    let _ = std::fs::remove_dir_all(dir);
    let anchor = Utc::now();
    let clock = ScaledClock::anchored(anchor, cfg.speed);
    let clock_args = vec![
        "--clock-speed".to_string(),
        cfg.speed.to_string(),
        "--clock-anchor".to_string(),
        anchor.timestamp_millis().to_string(),
    ];
    let generated =
        GeneratedSite::generate(&dir.join("www"), cfg.pages, cfg.seed).map_err(io("site"))?;
    let serving = Serving {
        clock_args: clock_args.clone(),
        anchor,
        clock: Some(clock.clone()),
        agent: mode.agent(),
    };
    let served = ServedSite::serve_as(cfg, dir, generated, serving).await?;
    Ok((clock, clock_args, served))
}

/// The edits made, and the detection latencies of those the copy caught up with.
fn detected(timelines: &[PageTimeline]) -> (usize, Vec<f64>) {
    let latencies: Vec<Option<f64>> = timelines
        .iter()
        .flat_map(PageTimeline::detection_latencies)
        .collect();
    let found = latencies.iter().flatten().copied().collect();
    (latencies.len(), found)
}

/// Runs one mode with `edits` (simulated seconds from the start of the measurement).
pub async fn run_mode(cfg: &BenchConfig, mode: Mode, edits: &[Edit]) -> Result<ModeResult, String> {
    let dir = cfg.work.join(mode.name());
    let (clock, clock_args, mut served) = serve_mode(cfg, mode, &dir).await?;
    let mut web = WebSide::start(mode, &served).await?;
    let agent = served.take_agent();
    let ServedSite {
        mut site,
        base,
        site_proxy,
        ..
    } = served;
    let docroot = site.root.clone();
    let reads = Reads::of_site(&docroot, &site.paths, cfg.seed);
    let (callback_port, callback_proxy) = callback_proxy().await?;
    let out = dir.join("crawl");
    let mut crawl = crawl_command(
        cfg,
        mode,
        (&base, &dir),
        &clock_args,
        web.as_ref(),
        (callback_port, callback_proxy.addr.port()),
    )?;
    let site_start = site_proxy.count();
    let crawler = Killed(
        crawl
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("crawl.err")).map_or(Stdio::null(), Stdio::from))
            .spawn()
            .map_err(io("webcoop-crawl"))?,
    );

    if let Some(w) = web.as_mut() {
        w.crawler_started(&dir.join("crawl.err")).await?;
    }
    // The first crawl, and for push the subscription, before the clock of the measurement.
    let validators = first_crawl_held(cfg, &site, (&base, &out), web.as_ref(), mode)?;
    let t0 = clock.now();
    let sim = |t: DateTime<Utc>| (t - t0).num_microseconds().unwrap_or(0) as f64 / 1e6;
    let submitted = |w: &Option<WebSide>| w.as_ref().map(WebSide::submitted).unwrap_or_default();
    let (site0, pushed0) = (
        site_proxy.count(),
        callback_proxy.count().plus(&submitted(&web)),
    );
    let mut truth = Truth {
        versions: validators
            .iter()
            .map(|(p, v)| (p.clone(), vec![v.clone()]))
            .collect(),
        ..Truth::default()
    };
    make_edits(
        cfg,
        edits,
        &mut site,
        &clock,
        &sim,
        web.as_mut(),
        &mut truth,
    )
    .await?;
    let (site1, pushed1) = (
        site_proxy.count(),
        callback_proxy.count().plus(&submitted(&web)),
    );
    let cpu_crawler = cpu_seconds(crawler.0.id());
    let cpu_agent = agent.as_ref().map_or(0.0, |a| cpu_seconds(a.0.id()));
    stop(crawler);
    let site_end = site_proxy.count_when_closed(Duration::from_secs(5)).await;
    drop(agent);
    let logged = requests_logged(&out, &base);
    let deliveries = callback_proxy.count().posts;
    let crawler_pushes = pushes_accepted(&out);

    let read_weights = reads.weights(&site.paths);
    let timelines = truth.timelines(&out, (&base, &site.paths), sim);
    let (changes, found) = detected(&timelines);
    Ok(ModeResult {
        mode,
        changes,
        detected: found.len(),
        site: site1.since(&site0),
        pushed: pushed1.since(&pushed0),
        crawler_requests: logged,
        proxied_requests: site_end.since(&site_start).requests,
        deliveries,
        crawler_pushes,
        score: mean_score(&timelines, 0.0, cfg.duration),
        read_score: weighted_score(&timelines, &read_weights, 0.0, cfg.duration),
        latency_p50: quantile(&found, 0.5),
        latency_p99: quantile(&found, 0.99),
        signal_failures: web.as_ref().map(WebSide::failures).unwrap_or_default(),
        cpu_crawler,
        cpu_agent,
    })
}

/// The crawler crawling `base` from nothing into `out`, politeness off, quiet, its log to
/// `err`: the first visits the presets compare (the caller adds what it varies).
pub(crate) fn first_visit(crawler: &Path, base: &str, out: &Path, err: &Path) -> Command {
    let mut crawl = Command::new(crawler);
    crawl
        .arg("crawl")
        .args(["--seeds", base, "--allow-net", "127.0.0.0/8"])
        .arg("--out")
        .arg(out)
        .args([
            "--progress",
            "quiet",
            "--delay-min",
            "0",
            "--delay-factor",
            "0",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(err).map_or(Stdio::null(), Stdio::from));
    crawl
}

/// Asks the crawler to stop (it unsubscribes and saves), then makes sure it has.
pub(crate) fn stop(mut crawler: Killed) {
    let pid = crawler.0.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = crawler.0.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = crawler.0.kill();
}

/// Requests to the site at `base` the crawler's log shows, over its whole run (its requests to
/// a hub on another origin are not the site's).
fn requests_logged(out: &Path, base: &str) -> u64 {
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default();
    let origin = format!(" {}/", base.trim_end_matches('/'));
    log.lines()
        .filter(|l| webcoop_crawler::crawl_log::is_request(l) && l.contains(&origin))
        .count() as u64
}

/// Deliveries the crawler accepted, summed over its sites, as its state saved them.
pub(crate) fn pushes_accepted(out: &Path) -> u64 {
    let Ok(store) = webcoop_crawler::Store::open_read_only(out) else {
        return 0;
    };
    store
        .coop_sites()
        .unwrap_or_default()
        .iter()
        .filter_map(|(_, _, json)| serde_json::from_str::<webcoop_crawler::SiteCoop>(json).ok())
        .map(|site| site.stats.pushes)
        .sum()
}

/// The crawler's copies: URL to validator.
pub(crate) fn held(out: &Path) -> HashMap<String, String> {
    webcoop_crawler::archives::copies::list(out)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| match c.held {
            webcoop_crawler::archives::copies::CopyState::Copy { validator, .. } => {
                Some((c.url, validator))
            }
            _ => None,
        })
        .collect()
}

/// Every page held in the archive (whole 2xx responses and pages rebuilt from deltas): URL,
/// when, and the validator of its content.
fn archived(warc_dir: &Path) -> Vec<(String, DateTime<Utc>, String)> {
    use webcoop_crawler::archives::warc;
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(warc_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    files.sort();
    for file in files {
        let Ok(records) = warc::read_records(&file, 0) else {
            continue;
        };
        for rec in records {
            let (Some(url), Some(date)) = (rec.header("WARC-Target-URI"), rec.header("WARC-Date"))
            else {
                continue;
            };
            let Ok(at) = DateTime::parse_from_rfc3339(date) else {
                continue;
            };
            let Some(body) = warc::content_of(&rec, usize::MAX) else {
                continue;
            };
            out.push((
                url.to_string(),
                at.with_timezone(&Utc),
                Sha256Digest::of(&body).etag().to_string(),
            ));
        }
    }
    out
}
