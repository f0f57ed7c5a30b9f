//! The crawl's settings: the command line, then `WEBCOOP_CRAWL_*` variables, then a TOML file
//! (`--config`), then the defaults.
//!
//! `options` holds every setting once (option, variable, file key, default); this module turns
//! them into the checked [`Settings`] a crawl runs with; `shared` is what a fleet stores and
//! compares; `inputs` reads seeds, tokens and address overrides; `error` names what was wrong.

mod error;
mod inputs;
mod options;
mod save_pace;
mod shared;

pub(crate) use crate::progress::ProgressMode;
pub use error::ConfigError;
pub use inputs::read_token_file;
pub(crate) use inputs::{parse_resolve, read_seeds};
use options::overlaid;
pub use options::{CrawlArgs, CrawlOptions, help_with_defaults};
pub(crate) use save_pace::SavePace;
pub(crate) use shared::{settings_joining, shared_settings};

use crate::analyze::scope::{Limits, Scope};
use crate::fetch::FetchLimits;
use crate::frontier::fleet::shards::MAX_SHARDS;
use crate::frontier::politeness::Politeness;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

/// Everything a crawl runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The crawl directory.
    pub(crate) out: PathBuf,
    /// Seeds given this run.
    pub(crate) seeds: Vec<Url>,
    /// Page budget over all runs.
    pub(crate) max_pages: Option<u64>,
    /// Scope.
    pub(crate) scope: Scope,
    /// Depth and length limits.
    pub(crate) limits: Limits,
    /// Delays.
    pub(crate) politeness: Politeness,
    /// What politeness is keyed by.
    pub(crate) politeness_key: crate::frontier::servers::PolitenessKey,
    /// Connections per host (per server address when keyed by address).
    pub(crate) per_host: usize,
    /// Connections overall.
    pub(crate) concurrency: usize,
    /// Hosts crawled at once (0: no limit).
    pub(crate) hosts_at_once: usize,
    /// User-Agent.
    pub(crate) user_agent: String,
    /// Fetch limits.
    pub(crate) fetch: FetchLimits,
    /// Redirects followed from one URL.
    pub(crate) max_redirects: u32,
    /// Attempts per URL.
    pub(crate) max_attempts: u32,
    /// Consecutive failures before a host is given up.
    pub(crate) host_give_up: u32,
    /// In a one-pass crawl, consecutive failures before a host that never answered is given up.
    pub(crate) dead_host_give_up: u32,
    /// In a one-pass crawl, the longest wait for parked hosts before the crawl ends.
    pub(crate) end_wait: Duration,
    /// robots.txt lifetime.
    pub(crate) robots_ttl: Duration,
    /// WARC rotation size.
    pub(crate) warc_max_size: u64,
    /// WARC prefix.
    pub(crate) warc_prefix: String,
    /// gzip level of WARC records.
    pub(crate) warc_level: u32,
    /// When the state is saved.
    pub(crate) save_pace: SavePace,
    /// Revisits are conditional requests.
    pub(crate) conditional: bool,
    /// How long an idle connection is kept, where the operator said.
    pub(crate) connection_idle: Option<Duration>,
    /// Pages of a host fetched in a run before its probes are asked.
    pub(crate) probe_after: u64,
    /// Threads that fetch and analyse pages.
    pub(crate) fetch_threads: usize,
    /// Address overrides.
    pub(crate) resolve: Vec<(String, SocketAddr)>,
    /// The DNS server asked instead of the system's resolver.
    pub(crate) nameserver: Option<SocketAddr>,
    /// Networks the crawler may reach although they are not public.
    pub(crate) allow_net: Vec<ipnet::IpNet>,
    /// The hosts of the WebSub hubs subscribed to (empty: any).
    pub(crate) hub_allow: Vec<String>,
    /// Metrics address.
    pub(crate) metrics: Option<SocketAddr>,
    /// The console's address and token.
    pub(crate) console: Option<ConsoleSettings>,
    /// Start (or resume) a refresh pass.
    pub(crate) refresh: bool,
    /// Keep pages fresh with this schedule after discovery.
    pub(crate) keep_fresh: Option<crate::refresh::schedule::ScheduleConfig>,
    /// Largest share of requests for refreshes while new URLs wait.
    pub(crate) refresh_share: f64,
    /// Stop after this long.
    pub(crate) run_for: Option<Duration>,
    /// OPIC virtual-page share.
    pub(crate) opic_eps: f64,
    /// Adaptive OPIC window (clock units).
    pub(crate) opic_window: f64,
    /// Progress display.
    pub(crate) progress: ProgressMode,
    /// Cooperation.
    pub(crate) coop: crate::coop::site::CoopConfig,
    /// The WebSub callback server's address and public base URL.
    pub(crate) callback: Option<(SocketAddr, Option<Url>)>,
    /// Where the IndexNow endpoint listens, when it is served.
    pub(crate) indexnow_listen: Option<SocketAddr>,
    /// The shared frontier this process works on, when it is one of a fleet.
    pub(crate) fleet: Option<FleetSettings>,
    /// How requests are signed (Web Bot Auth), when they are.
    pub(crate) signing: Option<crate::signing::SigningSettings>,
    /// What the crawl is for: pages the site's usage preferences refuse for these are skipped.
    pub(crate) purposes: Vec<webcoop_protocol::usage::Purpose>,
}

/// Where a fleet's frontier is and who this process is in it.
#[derive(Debug, Clone)]
pub(crate) struct FleetSettings {
    /// `redis://...` or `redis+cluster://...`.
    pub(crate) frontier: String,
    /// The crawl's name.
    pub(crate) crawl: String,
    /// This process's name (its directory under `--out`), when given.
    pub(crate) process: Option<String>,
    /// How long a host lease lasts unrenewed.
    pub(crate) lease: Duration,
    /// This process's shard, `(i, n)`, when the fleet splits hosts by owner.
    pub(crate) shard: Option<(u32, u32)>,
}

/// `--shard I/N`, checked: `I < N <= MAX_SHARDS`, and politeness by host name (the hosts
/// of one address may belong to different shards, which could not share a delay).
fn shard(given: Option<&str>, file: &CrawlOptions) -> Result<Option<(u32, u32)>, ConfigError> {
    let Some(given) = given else {
        return Ok(None);
    };
    let parsed = given
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?)));
    let (i, n) = match parsed {
        Some((i, n)) if i < n && n <= MAX_SHARDS => (i, n),
        _ => {
            return Err(out_of_range(format!(
                "--shard {given:?}: expected I/N with 0 <= I < N <= {MAX_SHARDS}"
            )));
        }
    };
    if file.politeness_key == Some(crate::frontier::servers::PolitenessKey::Ip) {
        return Err(out_of_range(
            "--shard needs politeness by host name: the hosts of one address may belong to \
             different shards, which cannot share its delay (use the leased fleet, without \
             --shard, for --politeness-key ip)",
        ));
    }
    Ok(Some((i, n)))
}

/// Where the console listens and the token that guards it.
#[derive(Debug, Clone)]
pub struct ConsoleSettings {
    /// The address.
    pub addr: SocketAddr,
    /// The token every request must carry (required off loopback).
    pub token: Option<String>,
}

/// The most fetching threads a crawl may ask for.
const MAX_FETCH_THREADS: usize = 256;

/// One fetching thread per core but one: the scheduler thread and, on a crawl of a local
/// site, the web server need the rest. On 2 cores a second fetching thread cost 12% more CPU
/// per page and no speed (docs/ARCHITECTURE.md).
fn default_fetch_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

fn secs(name: &'static str, value: f64) -> Result<Duration, ConfigError> {
    Duration::try_from_secs_f64(value).map_err(|_| ConfigError::Seconds { name, value })
}

/// Pages of a host fetched before its probes, by default: 100, so that the two blind
/// requests are at most 2% of a host's in a run.
pub(crate) const PROBE_AFTER: u64 = 100;

/// An idle connection is kept from not at all up to an hour: past that a host's next request
/// is a new visit, and the pool's timer would hold a socket for nothing.
fn connection_idle(value: f64) -> Result<Duration, ConfigError> {
    if !(0.0..=3600.0).contains(&value) {
        return Err(out_of_range(format!(
            "connection_idle must be 0 to 3600 seconds, not {value:?}"
        )));
    }
    secs("connection_idle", value)
}

fn out_of_range(why: impl Into<String>) -> ConfigError {
    ConfigError::OutOfRange(why.into())
}

/// The settings from the command line and the config file.
pub fn settings(args: &CrawlArgs) -> Result<Settings, ConfigError> {
    let (args, file) = overlaid(args)?;
    settings_from(&args, file)
}

fn settings_from(args: &CrawlArgs, given: CrawlOptions) -> Result<Settings, ConfigError> {
    let file = given.over(&CrawlOptions::defaults())?;
    let seeds = read_seeds(file.seeds.as_deref().unwrap_or_default())?;
    let scope: Scope = file.scope.as_deref().unwrap_or_default().parse()?;
    let per_host = file.per_host_connections.unwrap_or_default();
    let concurrency = file.concurrency.unwrap_or_default();
    if per_host == 0 || concurrency == 0 {
        return Err(out_of_range(
            "--per-host-connections and --concurrency must be at least 1",
        ));
    }
    let fetch_threads = file.fetch_threads.unwrap_or_default();
    if !(1..=MAX_FETCH_THREADS).contains(&fetch_threads) {
        return Err(out_of_range(format!(
            "fetch_threads must be 1 to {MAX_FETCH_THREADS}, not {fetch_threads}"
        )));
    }
    if args.refresh && args.frontier.is_some() {
        return Err(out_of_range(
            "--refresh (one pass over a crawl directory's pages) is not for a fleet: use \
             --keep-fresh, whose schedule the fleet shares",
        ));
    }
    let refresh_share = file.refresh_share.unwrap_or_default();
    if !(0.0..=1.0).contains(&refresh_share) {
        return Err(out_of_range(format!(
            "--refresh-share {refresh_share} is not between 0 and 1"
        )));
    }
    let opic_eps = file.opic_eps.unwrap_or_default();
    let opic_window = file.opic_window.unwrap_or_default();
    if !(0.0 < opic_eps && opic_eps < 1.0) || opic_window <= 0.0 {
        return Err(out_of_range(
            "opic_eps must be in (0, 1) and opic_window positive",
        ));
    }
    Ok(Settings {
        coop: coop_config(&file)?,
        callback: callback(&file)?,
        indexnow_listen: file.indexnow_listen,
        out: args.out.clone(),
        seeds,
        max_pages: file.max_pages,
        scope,
        limits: limits(&file),
        politeness: politeness(&file)?,
        politeness_key: file.politeness_key.unwrap_or_default(),
        per_host,
        concurrency,
        hosts_at_once: file.hosts_at_once.unwrap_or_default(),
        user_agent: file.user_agent.clone().unwrap_or_default(),
        fetch: fetch_limits(&file)?,
        max_redirects: file.max_redirects.unwrap_or_default(),
        max_attempts: file.max_attempts.unwrap_or_default().max(1),
        host_give_up: file.host_give_up.unwrap_or_default().max(1),
        dead_host_give_up: file.dead_host_give_up.unwrap_or_default().max(1),
        end_wait: secs("end_wait", file.end_wait.unwrap_or_default())?,
        robots_ttl: secs("robots_ttl", file.robots_ttl.unwrap_or_default())?,
        warc_max_size: file.warc_max_size.unwrap_or_default(),
        warc_prefix: file.warc_prefix.clone().unwrap_or_default(),
        warc_level: file.warc_gzip_level.unwrap_or_default().min(9),
        save_pace: SavePace {
            interval: file
                .commit_interval
                .map(|v| secs("commit_interval", v))
                .transpose()?,
            results: file.commit_results,
        },
        conditional: file.conditional.unwrap_or_default(),
        connection_idle: file.connection_idle.map(connection_idle).transpose()?,
        probe_after: file.probe_after.unwrap_or(PROBE_AFTER),
        fetch_threads,
        resolve: resolve(args, &file)?,
        nameserver: file.nameserver,
        allow_net: allow_net(&file)?,
        hub_allow: hub_allow(&file)?,
        metrics: file.metrics,
        console: console(args, &file)?,
        refresh: args.refresh,
        keep_fresh: keep_fresh(&file)?,
        refresh_share,
        run_for: args.run_for.map(|s| secs("--run-for", s)).transpose()?,
        opic_eps,
        opic_window,
        progress: args.progress,
        signing: signing(&file)?,
        purposes: purposes(&file)?,
        fleet: match &args.frontier {
            None => None,
            Some(frontier) => Some(FleetSettings {
                frontier: frontier.clone(),
                crawl: args.crawl.clone().unwrap_or_default(),
                process: args.process.clone(),
                lease: secs("fleet_lease", file.fleet_lease.unwrap_or_default().max(1.0))?,
                shard: shard(args.shard.as_deref(), &file)?,
            }),
        },
    })
}

/// The signer's settings: a key file and the origin that publishes its keys.
fn signing(file: &CrawlOptions) -> Result<Option<crate::signing::SigningSettings>, ConfigError> {
    let Some(key_file) = file.signing_key.clone() else {
        return Ok(None);
    };
    let agent = file.signature_agent.as_deref().ok_or_else(|| {
        out_of_range("--signing-key needs --signature-agent (where the keys are published)")
    })?;
    Ok(Some(crate::signing::SigningSettings {
        key_file,
        agent: crate::signing::check_agent(agent).map_err(out_of_range)?,
        when: file.sign_requests.unwrap_or_default(),
    }))
}

/// The crawl's purposes, each named once.
fn purposes(file: &CrawlOptions) -> Result<Vec<webcoop_protocol::usage::Purpose>, ConfigError> {
    let mut out = Vec::new();
    for p in file.purpose.iter().flatten() {
        let purpose: webcoop_protocol::usage::Purpose = p
            .parse()
            .map_err(|e| out_of_range(format!("--purpose: {e}")))?;
        if !out.contains(&purpose) {
            out.push(purpose);
        }
    }
    Ok(out)
}

/// The console's settings: its address, and its token from the flag, the environment or a
/// file (checked, with the address, before anything else starts).
fn console(args: &CrawlArgs, file: &CrawlOptions) -> Result<Option<ConsoleSettings>, ConfigError> {
    let Some(addr) = file.console else {
        return Ok(None);
    };
    let file_token = file.console_token_file.as_ref();
    let token = match (&args.console_token, file_token) {
        (Some(t), _) => Some(t.trim().to_string()),
        (None, Some(path)) => Some(read_token_file(path)?),
        (None, None) => None,
    };
    webcoop_daemon::console::access::check_bind(addr.ip(), token.as_deref())?;
    Ok(Some(ConsoleSettings { addr, token }))
}

fn limits(file: &CrawlOptions) -> Limits {
    Limits {
        max_url_len: file.max_url_length.unwrap_or_default(),
        max_depth: file.max_depth.unwrap_or_default(),
        max_dynamic_depth: file.max_dynamic_depth.unwrap_or_default(),
    }
}

fn politeness(file: &CrawlOptions) -> Result<Politeness, ConfigError> {
    let p = Politeness::default();
    Ok(Politeness {
        min_delay: secs("delay_min", file.delay_min.unwrap_or_default())?,
        factor: file.delay_factor.unwrap_or_default().max(0.0),
        max_delay: secs("delay_max", file.delay_max.unwrap_or_default())?,
        crawl_delay_cap: secs("crawl_delay_cap", file.crawl_delay_cap.unwrap_or_default())?,
        park_base: secs("park_base", file.park_base.unwrap_or_default())?,
        max_park: secs("park_max", file.park_max.unwrap_or_default())?,
        max_retry_after: p.max_retry_after,
    })
}

fn fetch_limits(file: &CrawlOptions) -> Result<FetchLimits, ConfigError> {
    let f = FetchLimits::default();
    Ok(FetchLimits {
        max_body: file.max_body.unwrap_or_default().max(1),
        timeout: secs("timeout", file.timeout.unwrap_or_default())?,
        connect_timeout: secs("connect_timeout", file.connect_timeout.unwrap_or_default())?,
        min_speed: file.min_speed.unwrap_or_default(),
        grace: f.grace,
    })
}

fn resolve(
    args: &CrawlArgs,
    file: &CrawlOptions,
) -> Result<Vec<(String, SocketAddr)>, ConfigError> {
    let mut resolve = Vec::new();
    for r in &args.resolve {
        let (host, addr) = r.split_once('=').ok_or_else(|| ConfigError::Resolve {
            entry: r.clone(),
            why: "expected HOST=ADDR",
        })?;
        resolve.push(parse_resolve(host, addr)?);
    }
    for (host, addr) in file.resolve.iter().flatten() {
        resolve.push(parse_resolve(host, addr)?);
    }
    Ok(resolve)
}

/// The hub hosts of `--hub-allow`: host names, lowercase, `.` first for a domain and its
/// subdomains.
fn hub_allow(file: &CrawlOptions) -> Result<Vec<String>, ConfigError> {
    file.hub_allow
        .iter()
        .flatten()
        .map(|h| {
            let h = h.trim().trim_start_matches('*').to_ascii_lowercase();
            let name = h.trim_start_matches('.');
            let ok = !name.is_empty()
                && name.len() <= 253
                && name
                    .split('.')
                    .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
            if ok {
                Ok(h)
            } else {
                Err(out_of_range(format!(
                    "--hub-allow {h:?}: expected a host name such as hub.example.com, or .example.com for a domain"
                )))
            }
        })
        .collect()
}

/// The networks of `--allow-net` (already moved into the file's settings by [`overlaid`]).
fn allow_net(file: &CrawlOptions) -> Result<Vec<ipnet::IpNet>, ConfigError> {
    file.allow_net
        .iter()
        .flatten()
        .map(|n| {
            n.trim().parse::<ipnet::IpNet>().map_err(|e| {
                out_of_range(format!(
                    "--allow-net {n:?}: {e} (expected a network such as 10.0.0.0/8 or ::1/128)"
                ))
            })
        })
        .collect()
}

fn keep_fresh(
    file: &CrawlOptions,
) -> Result<Option<crate::refresh::schedule::ScheduleConfig>, ConfigError> {
    let cycle = file.refresh_cycle.unwrap_or_default();
    let budget = file.refresh_budget;
    if cycle <= 0.0 || budget.is_some_and(|b| b <= 0.0) {
        return Err(out_of_range(
            "--refresh-cycle and --refresh-budget must be positive",
        ));
    }
    Ok(
        (file.keep_fresh == Some(true)).then(|| crate::refresh::schedule::ScheduleConfig {
            policy: file.refresh_policy.unwrap_or_default(),
            budget: budget.map(|b| b / 3600.0),
            cycle_secs: cycle,
            min_interval_secs: file
                .refresh_min_interval
                .unwrap_or((cycle / 100.0).min(60.0)),
            max_interval_secs: cycle * 30.0,
            prior_rate: 1.0 / cycle,
        }),
    )
}

fn coop_config(file: &CrawlOptions) -> Result<crate::coop::site::CoopConfig, ConfigError> {
    let d = crate::coop::site::CoopConfig::default();
    let coop = crate::coop::site::CoopConfig {
        mode: file.coop.unwrap_or_default(),
        max_outdated: file.coop_max_outdated.unwrap_or_default(),
        poll_min: file.coop_poll_min.unwrap_or_default(),
        poll_max: file.coop_poll_max.unwrap_or_default(),
        backup_poll: file.coop_backup_poll.unwrap_or_default(),
        backup_poll_max: file.coop_backup_poll_max.unwrap_or_default(),
        trust_min: file.coop_trust_min.unwrap_or_default(),
        check_share: file.coop_check_share.unwrap_or_default(),
        popularity_weight: file.coop_popularity_weight.unwrap_or_default().max(0.0),
        lease_secs: file.hub_lease.unwrap_or_default(),
        failures_to_degrade: d.failures_to_degrade,
        deltas: file.coop_deltas.unwrap_or_default(),
        snapshots: file.coop_snapshots.unwrap_or_default(),
        batches: file.coop_batches.unwrap_or_default(),
    };
    if !(0.0 < coop.max_outdated && coop.max_outdated < 1.0) {
        return Err(out_of_range(format!(
            "coop_max_outdated {} must be between 0 and 1",
            coop.max_outdated
        )));
    }
    if !(coop.poll_min > 0.0 && coop.poll_max >= coop.poll_min && coop.backup_poll > 0.0) {
        return Err(out_of_range(
            "coop_poll_min, coop_poll_max and coop_backup_poll must be positive, min <= max",
        ));
    }
    if coop.backup_poll_max < coop.backup_poll || !coop.backup_poll_max.is_finite() {
        return Err(out_of_range(format!(
            "coop_backup_poll_max {} must be at least coop_backup_poll {}",
            coop.backup_poll_max, coop.backup_poll
        )));
    }
    if !(0.0..=1.0).contains(&coop.trust_min) || !(0.0..=1.0).contains(&coop.check_share) {
        return Err(out_of_range(
            "coop_trust_min and coop_check_share must be between 0 and 1",
        ));
    }
    if !(300..=30 * 86_400).contains(&coop.lease_secs) {
        return Err(out_of_range(format!(
            "hub_lease {} must be between 300 s and 30 days (what hubs grant)",
            coop.lease_secs
        )));
    }
    Ok(coop)
}

fn callback(file: &CrawlOptions) -> Result<Option<(SocketAddr, Option<Url>)>, ConfigError> {
    let callback_url = match &file.callback_url {
        Some(u) => Some(Url::parse(u).map_err(|e| out_of_range(format!("callback_url {u}: {e}")))?),
        None => None,
    };
    if let Some(u) = &callback_url
        && !matches!(u.scheme(), "http" | "https")
    {
        return Err(out_of_range(format!(
            "--callback-url {u}: must be an http(s) URL"
        )));
    }
    let callback = file.callback_listen.map(|a| (a, callback_url.clone()));
    if callback.is_none() && callback_url.is_some() {
        return Err(out_of_range(
            "--callback-url needs --callback-listen (where the callback server listens)",
        ));
    }
    Ok(callback)
}

#[cfg(test)]
mod tests {
    use super::options::{PER_PROCESS, as_map, read_file};
    use super::*;

    #[test]
    fn command_line_over_file_over_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let seeds = dir.path().join("seeds.txt");
        std::fs::write(
            &seeds,
            "# seeds\nhttp://a.test/\n\nHTTP://B.test:80/x#frag  # trailing\n",
        )
        .unwrap();
        let cfg = dir.path().join("crawl.toml");
        std::fs::write(
            &cfg,
            "delay_min = 2.5\nconcurrency = 7\nmax_dynamic_depth = 3\n[resolve]\n\"a.test\" = \"127.0.0.1\"\n",
        )
        .unwrap();
        let args = CrawlArgs {
            options: CrawlOptions {
                seeds: Some(vec![
                    seeds.to_string_lossy().into_owned(),
                    "https://c.test/".into(),
                ]),
                concurrency: Some(3),
                ..Default::default()
            },
            out: dir.path().join("out"),
            config: Some(cfg),
            resolve: vec!["b.test=127.0.0.2:8080".into()],
            ..Default::default()
        };
        let s = settings(&args).unwrap();
        let seeds: Vec<&str> = s.seeds.iter().map(Url::as_str).collect();
        assert_eq!(
            seeds,
            ["http://a.test/", "http://b.test/x", "https://c.test/"]
        );
        assert_eq!(s.politeness.min_delay, Duration::from_millis(2500));
        assert_eq!(s.concurrency, 3, "the command line wins");
        assert_eq!(s.limits.max_dynamic_depth, 3);
        assert_eq!(s.limits.max_depth, 15);
        assert_eq!(s.per_host, 1);
        assert_eq!(
            s.resolve,
            [
                ("b.test".to_string(), "127.0.0.2:8080".parse().unwrap()),
                ("a.test".to_string(), "127.0.0.1:0".parse().unwrap())
            ]
        );
    }

    #[test]
    fn relative_paths_in_the_file_are_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path().join("etc");
        std::fs::create_dir(&etc).unwrap();
        std::fs::write(etc.join("seeds.txt"), "http://a.test/\n").unwrap();
        std::fs::write(etc.join("token"), "0123456789abcdef0123456789abcdef\n").unwrap();
        let cfg = etc.join("crawl.toml");
        std::fs::write(
            &cfg,
            "seeds = [\"seeds.txt\", \"https://b.test/\"]\nconsole_token_file = \"token\"\n",
        )
        .unwrap();
        let file = read_file(&cfg).unwrap();
        assert_eq!(
            file.seeds.as_deref().unwrap(),
            [
                etc.join("seeds.txt").to_string_lossy().into_owned(),
                "https://b.test/".to_string()
            ]
        );
        assert_eq!(file.console_token_file, Some(etc.join("token")));
        let args = CrawlArgs {
            out: dir.path().join("out"),
            config: Some(cfg),
            ..Default::default()
        };
        let s = settings(&args).unwrap();
        let seeds: Vec<&str> = s.seeds.iter().map(Url::as_str).collect();
        assert_eq!(seeds, ["http://a.test/", "https://b.test/"]);
    }

    #[test]
    fn every_setting_is_a_flag_a_file_key_and_a_variable_and_per_process_names_settings() {
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            options: CrawlOptions,
        }
        let cmd = Cli::command();
        let flags: Vec<String> = cmd
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
        let keys: Vec<String> = as_map(&CrawlOptions::default()).keys().cloned().collect();
        for key in &keys {
            assert!(
                flags.contains(key) || key == "resolve",
                "{key} is a key of the file but no option"
            );
        }
        for p in PER_PROCESS {
            assert!(
                keys.iter().any(|k| k == p),
                "PER_PROCESS names {p}, not a setting"
            );
        }
        // A flag given as a boolean option reads as the file does.
        let m = cmd.try_get_matches_from(["t", "--keep-fresh", "--conditional", "false"]);
        let o = <Cli as clap::FromArgMatches>::from_arg_matches(&m.unwrap())
            .unwrap()
            .options;
        assert_eq!((o.keep_fresh, o.conditional), (Some(true), Some(false)));
    }

    #[test]
    fn bad_settings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let base = CrawlArgs {
            out: dir.path().to_path_buf(),
            ..Default::default()
        };
        let with = |f: &dyn Fn(&mut CrawlArgs)| {
            let mut a = base.clone();
            f(&mut a);
            settings(&a).unwrap_err().to_string()
        };
        assert!(
            with(&|a| a.options.seeds = Some(vec!["ftp://x/".into()])).contains("seed ftp://x/")
        );
        assert!(
            with(&|a| a.options.seeds = Some(vec!["/no/such/file".into()]))
                .contains("seed file /no/such/file")
        );
        assert!(with(&|a| a.options.delay_min = Some(-1.0)).contains("delay_min"));
        assert!(with(&|a| a.resolve = vec!["x.test".into()]).contains("HOST=ADDR"));
        assert!(
            with(&|a| a.resolve = vec!["x.test=localhost".into()]).contains("not an IP address")
        );
        assert!(with(&|a| a.options.scope = Some("(".into())).contains("regular expression"));
        for bad in ["", "hub .example", "http://hub.example/", "a..b", "*"] {
            let said = with(&|a| a.options.hub_allow = Some(vec![bad.into()]));
            assert!(said.contains("--hub-allow"), "{bad:?}: {said}");
        }
        let mut a = base.clone();
        a.options.hub_allow = Some(vec!["*.Hubs.Example".into(), "hub.example".into()]);
        assert_eq!(
            settings(&a).unwrap().hub_allow,
            [".hubs.example".to_string(), "hub.example".to_string()]
        );
        let cfg = dir.path().join("bad.toml");
        std::fs::write(&cfg, "delay_minimum = 3\n").unwrap();
        assert!(with(&|a| a.config = Some(cfg.clone())).contains("unknown field `delay_minimum`"));
        for (bad, says) in [
            (
                "fetch_threads = 0\n",
                "fetch_threads must be 1 to 256, not 0",
            ),
            ("fetch_threads = 100000\n", "not 100000"),
            ("fetch_threads = -1\n", "fetch_threads"),
            ("fetch_threads = \"many\"\n", "fetch_threads"),
            ("fetch_threads = 99999999999999999999999\n", "fetch_threads"),
            (
                "connection_idle = -1\n",
                "connection_idle must be 0 to 3600 seconds, not -1.0",
            ),
            ("connection_idle = 1e300\n", "not 1e300"),
            (
                "connection_idle = nan\n",
                "connection_idle = nan: not a finite number",
            ),
            ("delay_min = inf\n", "delay_min = inf: not a finite number"),
            ("connection_idle = \"long\"\n", "connection_idle"),
            ("probe_after = -1\n", "probe_after"),
            ("probe_after = \"many\"\n", "probe_after"),
            ("probe_after = 1.5\n", "probe_after"),
            ("probe_after = 99999999999999999999999\n", "probe_after"),
        ] {
            std::fs::write(&cfg, bad).unwrap();
            let e = with(&|a| a.config = Some(cfg.clone()));
            assert!(e.contains(says), "{bad}: {e}");
        }
        std::fs::write(
            &cfg,
            "fetch_threads = 3\nconnection_idle = 7.5\nprobe_after = 0\n",
        )
        .unwrap();
        let mut a = base.clone();
        a.config = Some(cfg.clone());
        let s = settings(&a).unwrap();
        assert_eq!(s.fetch_threads, 3);
        assert_eq!(s.probe_after, 0);
        assert_eq!(settings(&base).unwrap().probe_after, PROBE_AFTER);
        assert_eq!(s.connection_idle, Some(Duration::from_millis(7500)));
        assert_eq!(
            settings(&base).unwrap().connection_idle,
            None,
            "computed at start"
        );
    }
}
