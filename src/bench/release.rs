//! The `release` preset: a real site's release replayed through the whole loop. The old tree
//! is served (agent beside the server) and crawled in push mode with deltas; then the new tree
//! replaces it at once, as an upgrade does, and every byte on every wire until the crawler's
//! copy is the new tree is set beside what the change needs at least: the dcz deltas of the
//! changed pages (zstd level 6, 40-byte header each) plus the new pages gzip'd.

use super::proxy::WireCount;
use super::run::{
    BenchConfig, ServedSite, callback_proxy, cpu_seconds, held, io, pushes_accepted, stop,
    wait_until,
};
use super::site::{GeneratedSite, write_whole};
use crate::servers::Killed;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_protocol::compression::gzip;
use webcoop_protocol::delta::dcz;
use webcoop_protocol::validator::Sha256Digest;

/// The zstd level of the deltas the floor counts (the agent's own).
const DELTA_LEVEL: i32 = 6;

/// What a release run is given.
#[derive(Debug, Clone)]
pub struct ReleaseConfig {
    /// The site before the release.
    pub old: PathBuf,
    /// The site after it.
    pub new: PathBuf,
    /// Where the run keeps its files.
    pub work: PathBuf,
    /// The agent's binary.
    pub agent: PathBuf,
    /// The crawler's binary.
    pub crawler: PathBuf,
    /// nginx, to serve the site with the shipped server block instead of the built-in server.
    pub nginx: Option<PathBuf>,
}

/// What the release changes, and what that needs at least.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReleaseSize {
    /// Files in both trees whose content differs.
    pub changed: usize,
    /// Files only in the new tree.
    pub added: usize,
    /// Files only in the old tree.
    pub removed: usize,
    /// The changed files' dcz deltas (level 6, with their 40-byte headers), summed.
    pub deltas: u64,
    /// The added files gzip'd (level 6), summed.
    pub added_gzip: u64,
    /// The changed and added files gzip'd: what a crawler refetching them downloads.
    pub refetch_gzip: u64,
}

impl ReleaseSize {
    /// The floor: the deltas plus the new pages gzip'd.
    pub fn floor(&self) -> u64 {
        self.deltas + self.added_gzip
    }
}

/// What a release run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReleaseResult {
    /// The release.
    pub size: ReleaseSize,
    /// Hub to the crawler's callback (deliveries and their answers).
    pub pushed: WireCount,
    /// Crawler to the site and the agent (requests and their answers).
    pub site: WireCount,
    /// Deliveries the crawler accepted.
    pub crawler_pushes: u64,
    /// Seconds from the release to the copy equal to the new tree.
    pub seconds: f64,
    /// CPU seconds of the crawler and the agent over the run.
    pub cpu_crawler: f64,
    /// See `cpu_crawler`.
    pub cpu_agent: f64,
}

impl ReleaseResult {
    /// Every byte on every wire, both directions.
    pub fn wire(&self) -> u64 {
        self.pushed.bytes() + self.site.bytes()
    }

    /// The wire against the floor.
    pub fn ratio(&self) -> f64 {
        self.wire() as f64 / self.size.floor().max(1) as f64
    }
}

/// Every file of `root`, by path from `/`.
fn tree(root: &Path) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = entry.map_err(|e| format!("{}: {e}", root.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(root)
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        out.insert(format!("/{rel}"), entry.path().to_path_buf());
    }
    Ok(out)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// What turning `old` into `new` changes, and its floor.
pub fn measure(old: &Path, new: &Path) -> Result<ReleaseSize, String> {
    let (before, after) = (tree(old)?, tree(new)?);
    let mut size = ReleaseSize {
        removed: before.keys().filter(|p| !after.contains_key(*p)).count(),
        ..ReleaseSize::default()
    };
    for (path, file) in &after {
        let body = read(file)?;
        match before.get(path) {
            Some(was) => {
                let was = read(was)?;
                if was == body {
                    continue;
                }
                size.changed += 1;
                let delta = dcz::encode(&was, &body, DELTA_LEVEL)
                    .map_err(|e| format!("{path}: delta: {e}"))?;
                size.deltas += delta.len() as u64;
            }
            None => {
                size.added += 1;
                size.added_gzip += gzip(&body, 6).len() as u64;
            }
        }
        size.refetch_gzip += gzip(&body, 6).len() as u64;
    }
    Ok(size)
}

/// Makes `docroot` hold exactly the files of `from` (each written whole, then the files
/// `from` lacks removed), keeping `keep` (robots.txt with the agent's lines).
fn install(from: &Path, docroot: &Path, keep: &[&str]) -> Result<(), String> {
    let wanted = tree(from)?;
    for (path, file) in &wanted {
        if keep.contains(&path.as_str()) {
            continue;
        }
        let to = docroot.join(&path[1..]);
        let body = read(file)?;
        if std::fs::read(&to).ok().as_deref() == Some(&body[..]) {
            continue;
        }
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(io("docroot"))?;
        }
        write_whole(&to, &body).map_err(io(path))?;
    }
    for (path, file) in tree(docroot)? {
        if !wanted.contains_key(&path) && !keep.contains(&path.as_str()) {
            std::fs::remove_file(&file).map_err(io(&path))?;
        }
    }
    Ok(())
}

/// The validators the crawler must end with: every HTML page of `root`.
fn truth(root: &Path, base: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (path, file) in tree(root)? {
        if path.ends_with(".html") {
            let etag = Sha256Digest::of(&read(&file)?).etag().to_string();
            out.insert(format!("{}{path}", base.trim_end_matches('/')), etag);
        }
    }
    Ok(out)
}

/// Whether the crawler holds every page of `want` as it is there.
fn holds(out: &Path, want: &BTreeMap<String, String>) -> bool {
    let held = held(out);
    want.iter().all(|(u, v)| held.get(u) == Some(v))
}

/// Waits until the crawler's log has not grown for `quiet`: what it was doing is done.
fn settle(out: &Path, quiet: Duration, limit: Duration) -> Result<(), String> {
    let log = out.join("crawl.log");
    let size = || std::fs::metadata(&log).map_or(0, |m| m.len());
    let start = Instant::now();
    let (mut last, mut since) = (size(), Instant::now());
    while since.elapsed() < quiet {
        if start.elapsed() > limit {
            return Err(format!("the crawler did not settle within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(100));
        let now = size();
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    Ok(())
}

/// Serves the old tree, crawls it, releases the new one, and counts what bringing the copy up
/// to date costs.
pub async fn run(cfg: &ReleaseConfig) -> Result<ReleaseResult, String> {
    let size = measure(&cfg.old, &cfg.new)?;
    let dir = cfg.work.join("release");
    let _ = std::fs::remove_dir_all(&dir);
    let docroot = dir.join("www");
    std::fs::create_dir_all(&docroot).map_err(io("docroot"))?;
    install(&cfg.old, &docroot, &[])?;
    let pages: Vec<String> = tree(&docroot)?
        .into_keys()
        .filter(|p| p.ends_with(".html"))
        .collect();
    let bench = BenchConfig {
        pages: pages.len(),
        duration: 0.0,
        speed: 1.0,
        cycle: 0.0,
        seed: 0,
        work: cfg.work.clone(),
        agent: cfg.agent.clone(),
        crawler: cfg.crawler.clone(),
        nginx: cfg.nginx.clone(),
        history: Vec::new(),
        access_log: None,
    };
    let site = GeneratedSite::given(&docroot, pages);
    let served = ServedSite::serve(&bench, &dir, site, &[], chrono::Utc::now()).await?;
    let (callback_port, callback_proxy) = callback_proxy().await?;
    let out = dir.join("crawl");
    let config = dir.join("crawl.toml");
    // Push with inline deltas; the backup poll and the refresh cycle far beyond the run, so
    // what is counted is what the release needs.
    std::fs::write(
        &config,
        "coop_poll_min = 30.0\ncoop_poll_max = 3600.0\ncoop_backup_poll = 3600.0\ncommit_interval = 0.2\n",
    )
    .map_err(io("crawl.toml"))?;
    let mut crawler = Killed(
        Command::new(&cfg.crawler)
            .arg("crawl")
            .args(["--allow-net", "127.0.0.0/8"])
            .args(["--seeds", &served.base])
            .arg("--out")
            .arg(&out)
            .arg("--config")
            .arg(&config)
            .args(["--delay-min", "0", "--delay-factor", "0"])
            .args(["--progress", "quiet", "--coop", "push"])
            .args(["--keep-fresh", "--refresh-cycle", "2592000"])
            .args([
                "--callback-listen",
                &format!("127.0.0.1:{callback_port}"),
                "--callback-url",
                &format!("http://127.0.0.1:{}/", callback_proxy.addr.port()),
            ])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("crawl.err")).map_or(Stdio::null(), Stdio::from))
            .spawn()
            .map_err(io("webcoop-crawl"))?,
    );
    let before = truth(&docroot, &served.base)?;
    let limit = Duration::from_secs(60) + Duration::from_millis(100) * before.len() as u32;
    let mut exited = None;
    let first = wait_until("the first crawl", limit, || {
        exited = crawler.0.try_wait().ok().flatten();
        exited.is_some() || holds(&out, &before)
    });
    if let Some(status) = exited {
        let said = std::fs::read_to_string(dir.join("crawl.err")).unwrap_or_default();
        return Err(format!("webcoop-crawl ended ({status}): {}", said.trim()));
    }
    first?;
    wait_until("the subscription", Duration::from_secs(30), || {
        std::fs::read_to_string(dir.join("crawl.err"))
            .is_ok_and(|l| l.contains("subscribed to its hub"))
    })?;
    settle(&out, Duration::from_secs(2), limit)?;

    let (site0, pushed0) = (served.site_proxy.count(), callback_proxy.count());
    let released = Instant::now();
    install(&cfg.new, &docroot, &["/robots.txt"])?;
    let after = truth(&cfg.new, &served.base)?;
    wait_until("the copy of the release", limit, || holds(&out, &after))?;
    let seconds = released.elapsed().as_secs_f64();
    // Acknowledgements and anything the crawler still asks count too.
    settle(&out, Duration::from_secs(2), limit)?;
    let (site1, pushed1) = (served.site_proxy.count(), callback_proxy.count());
    let cpu_crawler = cpu_seconds(crawler.0.id());
    let cpu_agent = cpu_seconds(served.agent_pid());
    stop(crawler);
    Ok(ReleaseResult {
        size,
        pushed: pushed1.since(&pushed0),
        site: site1.since(&site0),
        crawler_pushes: pushes_accepted(&out),
        seconds,
        cpu_crawler,
        cpu_agent,
    })
}

/// The result as a markdown table.
pub fn table(r: &ReleaseResult) -> String {
    let s = &r.size;
    let floor = s.floor().max(1) as f64;
    let row = |what: &str, bytes: u64, extra: String| {
        format!(
            "| {what} | {bytes} | {:.2}x | {extra} |\n",
            bytes as f64 / floor
        )
    };
    let mut t = format!(
        "Release: {} pages changed, {} added, {} removed; the copy was the new tree {:.1} s after it.\n\n\
         | bytes on the wire (both ways) | bytes | vs the floor | |\n|---|---:|---:|---|\n",
        s.changed, s.added, s.removed, r.seconds
    );
    t.push_str(&row(
        "pushed (hub to callback)",
        r.pushed.bytes(),
        format!(
            "{} deliveries, {} accepted in all",
            r.pushed.posts, r.crawler_pushes
        ),
    ));
    t.push_str(&row(
        "requests to the site",
        r.site.bytes(),
        format!("{} requests", r.site.requests),
    ));
    t.push_str(&row("**all**", r.wire(), String::new()));
    t.push_str(&row(
        "floor: dcz deltas (zstd 6) + new pages gzip'd",
        s.floor(),
        format!("{} B of deltas, {} B of new pages", s.deltas, s.added_gzip),
    ));
    t.push_str(&row(
        "gzip refetch of the changed and new pages",
        s.refetch_gzip,
        String::new(),
    ));
    t.push_str(&format!(
        "\nCPU: crawler {:.2} s, agent {:.2} s (whole run).\n",
        r.cpu_crawler, r.cpu_agent
    ));
    t
}
