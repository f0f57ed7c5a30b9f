//! A generated site served for a run: its server (the bench's own or nginx) behind a counting
//! proxy, dated on the run's clock, and webcoop's agent beside it where the mode has one; and
//! the small process helpers every run and preset shares.

use super::config::BenchConfig;
use super::proxy::CountingProxy;
use super::site::GeneratedSite;
use super::site_server;
use crate::servers::Killed;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_protocol::clock::ScaledClock;

pub(crate) fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

pub(crate) fn wait_until(
    what: &str,
    limit: Duration,
    mut ok: impl FnMut() -> bool,
) -> Result<(), String> {
    let start = Instant::now();
    while !ok() {
        if start.elapsed() > limit {
            return Err(format!("{what}: not within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A generated site served over loopback with the agent beside it, each behind a counting
/// proxy: what every mode and preset starts from.
pub struct ServedSite {
    /// The pages.
    pub site: GeneratedSite,
    /// `http://127.0.0.1:PORT/` of the site, through its proxy.
    pub base: String,
    /// In front of the site (and, through it, the agent's service).
    pub site_proxy: CountingProxy,
    /// Between the site and the agent.
    pub agent_proxy: CountingProxy,
    /// The site's server itself, behind its proxy.
    pub direct: SocketAddr,
    agent: Option<Killed>,
    _nginx: Option<crate::servers::Nginx>,
}

impl ServedSite {
    /// Generates the site in `dir/www` (dated back from `anchor` as `cfg.history` says),
    /// publishes robots.txt with the agent's lines, and starts the agent (its clock as
    /// `clock_args` say) and the servers.
    pub async fn start(
        cfg: &BenchConfig,
        dir: &Path,
        clock_args: &[String],
        anchor: DateTime<Utc>,
    ) -> Result<ServedSite, String> {
        let docroot = dir.join("www");
        let site = GeneratedSite::generate(&docroot, cfg.pages, cfg.seed).map_err(io("site"))?;
        ServedSite::serve(cfg, dir, site, clock_args, anchor).await
    }

    /// Serves `site`'s docroot as [`ServedSite::start`] does.
    pub async fn serve(
        cfg: &BenchConfig,
        dir: &Path,
        site: GeneratedSite,
        clock_args: &[String],
        anchor: DateTime<Utc>,
    ) -> Result<ServedSite, String> {
        let serving = Serving {
            clock_args: clock_args.to_vec(),
            anchor,
            clock: None,
            agent: true,
        };
        ServedSite::serve_as(cfg, dir, site, serving).await
    }

    /// Serves `site`'s docroot as `serving` says: with the agent or without it (a site of
    /// the web as it is), its answers dated on the run's clock or the real one.
    pub async fn serve_as(
        cfg: &BenchConfig,
        dir: &Path,
        site: GeneratedSite,
        serving: Serving,
    ) -> Result<ServedSite, String> {
        let Serving {
            clock_args,
            anchor,
            clock,
            agent: with_agent,
        } = serving;
        let docroot = site.root.clone();
        let agent_port = free_port()?;
        let agent_addr = SocketAddr::from(([127, 0, 0, 1], agent_port));
        let agent_proxy = CountingProxy::start(agent_addr)
            .await
            .map_err(io("agent proxy"))?;
        let upstream = with_agent.then_some(agent_proxy.addr);
        let nginx = cfg.nginx.as_ref().map(|bin| {
            crate::servers::Nginx::start_proxying(
                bin,
                &crate::servers::example_nginx_conf(),
                &docroot,
                upstream,
            )
        });
        let site_addr = match &nginx {
            Some(n) => n.addr,
            None => site_server::start_dated(&docroot, upstream, clock)
                .await
                .map_err(io("site server"))?,
        };
        let site_proxy = CountingProxy::start(site_addr)
            .await
            .map_err(io("site proxy"))?;
        let base = format!("http://127.0.0.1:{}/", site_proxy.addr.port());
        if !with_agent {
            date_history(&docroot, &site.paths, &cfg.history, anchor).map_err(io("file dates"))?;
            return Ok(ServedSite {
                site,
                base,
                site_proxy,
                agent_proxy,
                direct: site_addr,
                agent: None,
                _nginx: nginx,
            });
        }
        let lines = Command::new(&cfg.agent)
            .args(["--print-robots-lines", "--base-url", &base])
            .output()
            .map_err(io("webcoop-agent"))?;
        let mut robots = b"User-agent: *\nDisallow:\n".to_vec();
        robots.extend_from_slice(&lines.stdout);
        std::fs::write(docroot.join("robots.txt"), robots).map_err(io("robots.txt"))?;
        let waited = Duration::from_millis(100) * site.paths.len() as u32;
        date_history(&docroot, &site.paths, &cfg.history, anchor).map_err(io("file dates"))?;
        let agent = Killed(
            Command::new(&cfg.agent)
                .arg("--docroot")
                .arg(&docroot)
                .arg("--state")
                .arg(dir.join("agent-state"))
                .args(["--base-url", &base, "--listen", &agent_addr.to_string()])
                // The agent asks the site about each file directly, not through the proxy
                // that counts the crawler's requests.
                .args(["--server-url", &format!("http://{site_addr}")])
                .args(["--allow-callback-net", "127.0.0.0/8"])
                .args(["--hub-window-ms", "20", "--debounce-ms", "20"])
                // A docroot of static files, served by nginx or the bench's file server: the
                // listing names every page there is.
                .arg("--complete-listing")
                .args(popularity_args(cfg))
                .args(&clock_args)
                .stdout(Stdio::null())
                .stderr(
                    std::fs::File::create(dir.join("agent.err")).map_or(Stdio::null(), Stdio::from),
                )
                .spawn()
                .map_err(io("webcoop-agent"))?,
        );
        // Its first scan digests and keeps every page; modes side by side share the cores.
        let limit = Duration::from_secs(30) + waited;
        wait_until("the agent", limit, || {
            crate::servers::http_get(agent_addr, "/.well-known/webcoop/healthz", &[])
                .is_ok_and(|r| r.status == 200)
        })
        .map_err(|e| {
            let said = std::fs::read_to_string(dir.join("agent.err")).unwrap_or_default();
            let last = said.lines().last().unwrap_or("(nothing)");
            format!("{e}; its last words: {last}")
        })?;
        if cfg.access_log.is_some() {
            // The log is counted at the agent's start and its figures published at the next
            // publication: a crawler arriving earlier would read a listing without them.
            let rdf = docroot.join("robots.rdf");
            wait_until("the agent's popularity", limit, || {
                std::fs::read_to_string(&rdf).is_ok_and(|t| t.contains("<wc:popularity>"))
            })?;
        }
        Ok(ServedSite {
            site,
            base,
            site_proxy,
            agent_proxy,
            direct: site_addr,
            agent: Some(agent),
            _nginx: nginx,
        })
    }

    /// The agent's process, for the caller to stop when it pleases (none without an agent).
    pub(crate) fn take_agent(&mut self) -> Option<Killed> {
        self.agent.take()
    }

    /// The agent's process id (0 when the site runs without it).
    pub fn agent_pid(&self) -> u32 {
        self.agent.as_ref().map_or(0, |a| a.0.id())
    }

    /// The docroot.
    pub fn docroot(&self) -> &Path {
        &self.site.root
    }
}

/// How a site is served.
pub struct Serving {
    /// The agent's clock arguments (`--clock-speed`, `--clock-anchor`).
    pub clock_args: Vec<String>,
    /// The run's start, which the site's history is dated back from.
    pub anchor: DateTime<Utc>,
    /// The clock the site's answers are dated by (`Date`); none: the real one.
    pub clock: Option<ScaledClock>,
    /// Whether webcoop's agent runs beside the site.
    pub agent: bool,
}

/// The agent's arguments for counting and publishing `cfg`'s access log.
fn popularity_args(cfg: &BenchConfig) -> Vec<std::ffi::OsString> {
    match &cfg.access_log {
        Some(log) => vec![
            "--access-log".into(),
            log.into(),
            "--publish-popularity".into(),
        ],
        None => Vec::new(),
    }
}

/// Dates each page `history[i]` simulated seconds before `anchor`, and the other files
/// (index, robots.txt) as old as the oldest page, as a site with a past would be.
fn date_history(
    docroot: &Path,
    paths: &[String],
    history: &[f64],
    anchor: DateTime<Utc>,
) -> std::io::Result<()> {
    if history.is_empty() {
        return Ok(());
    }
    let back = |secs: f64| anchor - chrono::Duration::milliseconds((secs * 1000.0) as i64);
    let oldest = back(history.iter().copied().fold(0.0, f64::max));
    let age: HashMap<&str, f64> = paths
        .iter()
        .map(String::as_str)
        .zip(history.iter().copied())
        .collect();
    for entry in walkdir::WalkDir::new(docroot) {
        let entry = entry?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(docroot)
            .map(|p| format!("/{}", p.to_string_lossy()))
            .unwrap_or_default();
        let date = age.get(rel.as_str()).map_or(oldest, |secs| back(*secs));
        std::fs::File::options()
            .write(true)
            .open(entry.path())?
            .set_modified(date.into())?;
    }
    Ok(())
}

pub(crate) fn io(what: &str) -> impl FnOnce(std::io::Error) -> String {
    let what = what.to_string();
    move |e| format!("{what}: {e}")
}

/// A port for the crawler's WebSub callback and a counting proxy in front of it (the hub
/// posts to the proxy).
pub(crate) async fn callback_proxy() -> Result<(u16, CountingProxy), String> {
    let port = free_port()?;
    let proxy = CountingProxy::start(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .map_err(io("callback proxy"))?;
    Ok((port, proxy))
}
