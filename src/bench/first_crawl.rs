//! The `first-crawl` preset: a crawler's first visit to a cooperating site, one request per
//! page against one request for the site's snapshot, interleaved over rounds. Requests and
//! bytes each way are counted on the wire by the proxy in front of the site; wall time from
//! the crawler's start to its exit; CPU of the crawler (its own, once reaped) and of the
//! agent (serving it) over each crawl; every page each crawl holds is checked against the
//! docroot.

use super::proxy::WireCount;
use super::run::{BenchConfig, ServedSite, cpu_seconds, first_visit, held, io, wait_until};
use super::site::GeneratedSite;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use webcoop_protocol::validator::Sha256Digest;

/// What a first-crawl run is given.
#[derive(Debug, Clone)]
pub struct FirstCrawlConfig {
    /// A docroot to serve (copied), or none for a generated site of `pages` pages.
    pub site: Option<PathBuf>,
    /// Pages of the generated site.
    pub pages: usize,
    /// Seed of the generated site.
    pub seed: u64,
    /// Rounds, each crawling page by page and then by the snapshot.
    pub rounds: usize,
    /// The crawlers' page limit (`--max-body`), if not the default.
    pub max_body: Option<usize>,
    /// Where the run keeps its files.
    pub work: PathBuf,
    /// The agent's binary.
    pub agent: PathBuf,
    /// The crawler's binary.
    pub crawler: PathBuf,
    /// nginx, to serve the site with the shipped server block instead of the built-in server.
    pub nginx: Option<PathBuf>,
}

/// One crawl measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Crawl {
    /// `per-page` or `snapshot`.
    pub how: &'static str,
    /// Which round.
    pub round: usize,
    /// The crawler's traffic with the site.
    pub wire: WireCount,
    /// Seconds from the crawler's start to its exit.
    pub wall: f64,
    /// CPU seconds of the crawler.
    pub cpu_crawler: f64,
    /// CPU seconds of the agent over the crawl.
    pub cpu_agent: f64,
    /// Files of the site the crawl holds exactly, holds otherwise, and lacks.
    pub exact: usize,
    /// See `exact`.
    pub wrong: usize,
    /// See `exact`.
    pub missing: usize,
    /// The first few files held otherwise, then the first few lacking (URL and why).
    pub not_exact: Vec<String>,
}

/// What a first-crawl run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FirstCrawlResult {
    /// Files the site publishes.
    pub files: usize,
    /// The agent's own report of the snapshot it built.
    pub snapshot: String,
    /// Every crawl, in the order run.
    pub crawls: Vec<Crawl>,
}

/// Every file of the docroot a crawler should hold (not the agent's documents, nor
/// robots.txt), by URL, with its validator.
fn truth(docroot: &Path, base: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(docroot) {
        let entry = entry.map_err(|e| format!("{}: {e}", docroot.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(docroot)
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        let ours = rel == "robots.txt"
            || rel == "robots.rdf"
            || rel.starts_with("sitemap")
            || rel.split('/').any(|part| part.starts_with('.'));
        if ours {
            continue;
        }
        let body = std::fs::read(entry.path()).map_err(io(&rel))?;
        out.insert(
            format!("{base}{rel}"),
            Sha256Digest::of(&body).etag().to_string(),
        );
    }
    Ok(out)
}

/// CPU seconds of this process's children reaped so far.
fn children_cpu() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Copies `from` into `to` (a docroot the agent may write into).
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    for entry in walkdir::WalkDir::new(from).follow_links(true) {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let rel = entry.path().strip_prefix(from).map_err(|e| e.to_string())?;
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(io("docroot"))?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest).map_err(io("docroot"))?;
        }
    }
    Ok(())
}

/// Waits for the agent (logging to `agent_log`) to publish its snapshot; what it said of it.
fn wait_for_snapshot(agent_log: &Path) -> Result<String, String> {
    let built = || {
        std::fs::read_to_string(agent_log).ok().and_then(|l| {
            l.lines()
                .rfind(|l| l.contains("snapshot published"))
                .map(str::to_string)
        })
    };
    wait_until("the site's snapshot", Duration::from_secs(600), || {
        built().is_some()
    })?;
    Ok(built()
        .and_then(|l| {
            l.split_once("snapshot published")
                .map(|(_, r)| r.trim().to_string())
        })
        .unwrap_or_default())
}

/// How a crawl's copies compare with the site: exact, missing, and the first few that are not
/// exact, said.
fn compared(
    want: &BTreeMap<String, String>,
    held: &std::collections::HashMap<String, String>,
) -> (usize, usize, Vec<String>) {
    let exact = want
        .iter()
        .filter(|(u, v)| held.get(*u) == Some(*v))
        .count();
    let missing = want.keys().filter(|u| !held.contains_key(*u)).count();
    let not_exact: Vec<String> = want
        .iter()
        .filter(|(u, v)| held.get(*u) != Some(*v))
        .take(8)
        .map(|(u, _)| match held.get(u) {
            Some(h) => format!("{u} held as {h}"),
            None => format!("{u} missing"),
        })
        .collect();
    (exact, missing, not_exact)
}

/// Serves the site, waits for its snapshot, and crawls it both ways, `rounds` times.
pub async fn run(cfg: &FirstCrawlConfig) -> Result<FirstCrawlResult, String> {
    let dir = cfg.work.join("first-crawl");
    let _ = std::fs::remove_dir_all(&dir);
    let docroot = dir.join("www");
    std::fs::create_dir_all(&docroot).map_err(io("docroot"))?;
    let bench = BenchConfig {
        pages: cfg.pages,
        duration: 0.0,
        speed: 1.0,
        cycle: 0.0,
        seed: cfg.seed,
        work: cfg.work.clone(),
        agent: cfg.agent.clone(),
        crawler: cfg.crawler.clone(),
        nginx: cfg.nginx.clone(),
        history: Vec::new(),
        access_log: None,
    };
    let site = match &cfg.site {
        Some(from) => {
            copy_tree(from, &docroot)?;
            GeneratedSite::given(&docroot, Vec::new())
        }
        None => GeneratedSite::generate(&docroot, cfg.pages, cfg.seed).map_err(io("site"))?,
    };
    let served = ServedSite::serve(&bench, &dir, site, &[], chrono::Utc::now()).await?;
    let base = served.base.clone();
    let snapshot = wait_for_snapshot(&dir.join("agent.err"))?;
    let want = truth(&docroot, &base)?;
    let mut crawls = Vec::new();
    for round in 1..=cfg.rounds {
        for (how, extra) in [
            ("per-page", &["--coop-snapshots", "false"][..]),
            ("snapshot", &[][..]),
        ] {
            let out = dir.join(format!("crawl-{how}-{round}"));
            let (wire0, agent0, cpu0) = (
                served.site_proxy.count(),
                cpu_seconds(served.agent_pid()),
                children_cpu(),
            );
            let started = Instant::now();
            let err = dir.join(format!("crawl-{how}-{round}.err"));
            let status = first_visit(&cfg.crawler, &base, &out, &err)
                .args(["--per-host-connections", "4"])
                .args(
                    cfg.max_body
                        .map(|b| vec!["--max-body".to_string(), b.to_string()])
                        .unwrap_or_default(),
                )
                .args(extra)
                .status()
                .map_err(io("webcoop-crawl"))?;
            let wall = started.elapsed().as_secs_f64();
            if !status.success() {
                return Err(format!(
                    "webcoop-crawl ({how}, round {round}) ended {status}"
                ));
            }
            let (exact, missing, not_exact) = compared(&want, &held(&out));
            crawls.push(Crawl {
                how,
                round,
                wire: served.site_proxy.count().since(&wire0),
                wall,
                cpu_crawler: children_cpu() - cpu0,
                cpu_agent: cpu_seconds(served.agent_pid()) - agent0,
                exact,
                wrong: want.len() - exact - missing,
                missing,
                not_exact,
            });
            // Kept for a look at what was asked (its crawl.log) when asked to.
            if std::env::var_os("WEBCOOP_BENCH_KEEP_CRAWLS").is_none() {
                let _ = std::fs::remove_dir_all(&out);
            }
        }
    }
    Ok(FirstCrawlResult {
        files: want.len(),
        snapshot,
        crawls,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The result as a markdown table: every crawl, then the medians and their ratio.
pub fn table(r: &FirstCrawlResult) -> String {
    let mut t = format!(
        "First visit of a site of {} files. The agent's snapshot: {}\n\n\
         | crawl | round | requests | bytes down | bytes up | wall s | CPU crawler s | CPU agent s | files exact |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---|\n",
        r.files, r.snapshot
    );
    for c in &r.crawls {
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {} of {} ({} wrong, {} missing) |\n",
            c.how,
            c.round,
            c.wire.requests,
            c.wire.down,
            c.wire.up,
            c.wall,
            c.cpu_crawler,
            c.cpu_agent,
            c.exact,
            r.files,
            c.wrong,
            c.missing
        ));
    }
    let of = |how: &str, f: fn(&Crawl) -> f64| {
        median(r.crawls.iter().filter(|c| c.how == how).map(f).collect())
    };
    let row = |name: &str, f: fn(&Crawl) -> f64| {
        let (p, s) = (of("per-page", f), of("snapshot", f));
        format!(
            "| {name} | {p:.2} | {s:.2} | {:.2}x |\n",
            if p > 0.0 { s / p } else { 0.0 }
        )
    };
    t.push_str("\n| median | per page | snapshot | snapshot / per page |\n|---|---:|---:|---:|\n");
    t.push_str(&row("requests", |c| c.wire.requests as f64));
    t.push_str(&row("MB down", |c| c.wire.down as f64 / 1e6));
    t.push_str(&row("MB up", |c| c.wire.up as f64 / 1e6));
    t.push_str(&row("wall s", |c| c.wall));
    t.push_str(&row("CPU crawler s", |c| c.cpu_crawler));
    t.push_str(&row("CPU agent s", |c| c.cpu_agent));
    t
}
