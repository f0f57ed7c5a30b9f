//! The crawl's settings: the command line for what an operator changes per run, a TOML file
//! (`--config`) for the rest, defaults for everything. The command line wins over the file.

use crate::analyze::scope::{Limits, Scope};
use crate::fetch::FetchLimits;
use crate::frontier::politeness::Politeness;
pub(crate) use crate::progress::ProgressMode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;
use url::Url;

/// The default `User-Agent`.
pub(crate) const DEFAULT_USER_AGENT: &str = concat!(
    "webcoop-crawl/",
    env!("CARGO_PKG_VERSION"),
    " (+https://github.com/webcoop/webcoop)"
);

/// `webcoop-crawl crawl`: what is this run's own (the directory, the configuration file, a
/// refresh pass, a fleet to join...) and, flattened in, every setting of the crawl.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CrawlArgs {
    /// Every setting of the crawl: a flag, a `WEBCOOP_CRAWL_*` variable and a key of the file.
    #[command(flatten)]
    pub options: CrawlOptions,
    /// Directory of the crawl: state (crawl.sqlite), WARC files (warc/), crawl.log.
    /// Running again on the same directory resumes.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// TOML file with the crawl's settings, keys as the options with `_` (docs/CRAWLER.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Send requests for HOST to ADDR instead of resolving it (repeatable), like curl's
    /// --resolve; the file's `[resolve]` table adds to these.
    #[arg(long, value_name = "HOST=ADDR")]
    pub resolve: Vec<String>,
    /// The console's token itself (prefer --console-token-file: a command line is visible to
    /// every user of the machine).
    #[arg(long, value_name = "TOKEN")]
    pub console_token: Option<String>,
    /// Revisit every page fetched before, with conditional requests (once per pass: a pass
    /// under way is resumed, not restarted).
    #[arg(long)]
    pub refresh: bool,
    /// Stop after this many seconds (the crawl resumes on the next run).
    #[arg(long, value_name = "SECS")]
    pub run_for: Option<f64>,
    /// Run the crawler's time this many times faster (visit times, refresh schedule,
    /// metadata polls, leases), for webcoop-bench; politeness stays in real time.
    #[arg(long, value_name = "X")]
    pub clock_speed: Option<f64>,
    /// With --clock-speed: the moment (ms since the epoch) at which the scaled time equals the
    /// real time, so the crawler and the agent agree [default: the start].
    #[arg(long, value_name = "MS", requires = "clock_speed")]
    pub clock_anchor: Option<i64>,
    /// Join (or start) a crawl that several processes share, its frontier in Redis:
    /// redis://HOST:PORT/DB, or redis+cluster://H1:P1,H2:P2,... for a Redis Cluster.
    #[arg(long, value_name = "URL", requires = "crawl")]
    pub frontier: Option<String>,
    /// The name of the shared crawl (with --frontier); its settings are stored with it.
    #[arg(long, value_name = "NAME", requires = "frontier")]
    pub crawl: Option<String>,
    /// This process's name in the fleet, and its directory under --out
    /// [default: HOSTNAME-N, the first N whose directory is free].
    #[arg(long, value_name = "NAME", requires = "frontier")]
    pub process: Option<String>,
    /// Progress display: a bar on a terminal, log lines otherwise.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

/// Every setting of a crawl, each stated once: the field is the option (`--max-depth`), the
/// key of the `--config` file (`max_depth`) and, by the rule of both binaries, the variable
/// `WEBCOOP_CRAWL_MAX_DEPTH`; its doc comment is the help of all three. Unset is `None`: the
/// command line, then the environment, then the file, then [`CrawlOptions::defaults`], which
/// takes each from the component the setting belongs to and which `--help` shows. Durations
/// are in seconds. Whether a
/// fleet shares a setting is said by [`PER_PROCESS`], checked against these fields by a test.
#[derive(Debug, Clone, Default, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct CrawlOptions {
    /// Seed URLs, or files with one URL per line (`#` starts a comment). May be left out when
    /// resuming: the seeds of the first run are remembered. The file's are added to these.
    #[arg(long, num_args = 1.., value_name = "FILE|URL")]
    pub seeds: Option<Vec<String>>,
    /// Stop after this many pages fetched (over all runs on this directory).
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Deepest static page, in links from a seed.
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Deepest dynamic page (a URL with a query), in links from a seed.
    #[arg(long, value_name = "N")]
    pub max_dynamic_depth: Option<u32>,
    /// Which links to follow: host (the seeds' hosts), domain (and their subdomains), any,
    /// or a regular expression URLs must match.
    #[arg(long, value_name = "host|domain|any|REGEX")]
    pub scope: Option<String>,
    /// Longest URL followed, bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_url_length: Option<usize>,
    /// Shortest delay between two requests to one host, in seconds.
    #[arg(long, value_name = "SECS")]
    pub delay_min: Option<f64>,
    /// Delay as a multiple of the host's last response time.
    #[arg(long, value_name = "X")]
    pub delay_factor: Option<f64>,
    /// Longest delay the response-time rule sets, seconds (robots.txt may ask for more).
    #[arg(long, value_name = "SECS")]
    pub delay_max: Option<f64>,
    /// Longest robots.txt `Crawl-delay` honoured, seconds; hosts asking more are skipped.
    #[arg(long, value_name = "SECS")]
    pub crawl_delay_cap: Option<f64>,
    /// What politeness is keyed by: host (each host name), or ip (host names on one server
    /// address share its delay and connection limit).
    #[arg(long, value_enum, value_name = "host|ip")]
    pub politeness_key: Option<crate::frontier::servers::PolitenessKey>,
    /// Connections per host: raise only for sites you own or have permission for.
    #[arg(long, value_name = "N")]
    pub per_host_connections: Option<usize>,
    /// Connections over all hosts.
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// The User-Agent sent, whose first word is matched against robots.txt groups.
    #[arg(long, value_name = "UA")]
    pub user_agent: Option<String>,
    /// Per-request time limit in seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Time allowed to connect, seconds.
    #[arg(long, value_name = "SECS")]
    pub connect_timeout: Option<f64>,
    /// Slowest transfer accepted, bytes per second after the first five seconds.
    #[arg(long, value_name = "BYTES")]
    pub min_speed: Option<u64>,
    /// Largest body kept, bytes; a longer one is cut and marked truncated.
    #[arg(long, value_name = "BYTES")]
    pub max_body: Option<usize>,
    /// Redirects followed from one URL.
    #[arg(long, value_name = "N")]
    pub max_redirects: Option<u32>,
    /// Attempts per URL before it is given up.
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u32>,
    /// First parking time of a failing host, seconds; it doubles with each further failure.
    #[arg(long, value_name = "SECS")]
    pub park_base: Option<f64>,
    /// Longest parking time, seconds.
    #[arg(long, value_name = "SECS")]
    pub park_max: Option<f64>,
    /// Consecutive failures after which a host is given up on.
    #[arg(long, value_name = "N")]
    pub host_give_up: Option<u32>,
    /// How long robots.txt is kept, seconds.
    #[arg(long, value_name = "SECS")]
    pub robots_ttl: Option<f64>,
    /// Size at which WARC files rotate, bytes.
    #[arg(long, value_name = "BYTES")]
    pub warc_max_size: Option<u64>,
    /// WARC file name prefix.
    #[arg(long, value_name = "PREFIX")]
    pub warc_prefix: Option<String>,
    /// gzip level of WARC records, 0 to 9 (1 for speed).
    #[arg(long, value_name = "0-9")]
    pub warc_gzip_level: Option<u32>,
    /// Longest time between two saves of the state, seconds.
    #[arg(long, value_name = "SECS")]
    pub commit_interval: Option<f64>,
    /// Results per save of the state at most.
    #[arg(long, value_name = "N")]
    pub commit_results: Option<usize>,
    /// Revisits ask "changed since?" (`If-None-Match`, `If-Modified-Since`); false refetches
    /// every page whole, as the bench's plain polling does.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub conditional: Option<bool>,
    /// Threads that fetch and analyse pages (by default one fewer than the cores, at least one).
    #[arg(long, value_name = "N")]
    pub fetch_threads: Option<usize>,
    /// Host name to address overrides (the file's `[resolve]` table; on the command line,
    /// `--resolve HOST=ADDR`).
    #[arg(skip)]
    pub resolve: Option<BTreeMap<String, String>>,
    /// Let the crawler connect to this network although it is loopback, private, link-local
    /// or otherwise not public (repeatable; e.g. 10.0.0.0/8). Without it, every connection
    /// to such an address (pages, redirects, robots.txt, sitemaps, hubs) is refused.
    #[arg(long, value_name = "CIDR")]
    pub allow_net: Option<Vec<String>>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Serve the live console at http://ADDR/ (loopback unless a token guards it).
    #[arg(long, value_name = "ADDR")]
    pub console: Option<SocketAddr>,
    /// File whose first line is the console's token (required off loopback).
    #[arg(long, value_name = "FILE")]
    pub console_token_file: Option<PathBuf>,
    /// Keep running after discovery and revisit known pages when the refresh policy says they
    /// are due (until stopped, or --run-for).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub keep_fresh: Option<bool>,
    /// How the refresh budget is shared among pages (with --keep-fresh).
    #[arg(long, value_enum)]
    pub refresh_policy: Option<crate::refresh::allocation::Policy>,
    /// Refresh budget, visits per hour (unset: every page once per --refresh-cycle).
    #[arg(long, value_name = "PER_HOUR")]
    pub refresh_budget: Option<f64>,
    /// Average time between visits of a page when no budget is given, seconds.
    #[arg(long, value_name = "SECS")]
    pub refresh_cycle: Option<f64>,
    /// Largest share of requests spent on refreshes while new URLs wait, 0 to 1.
    #[arg(long, value_name = "SHARE")]
    pub refresh_share: Option<f64>,
    /// Shortest time between two visits of a page, seconds (unset: a hundredth of the
    /// cycle, at most 60).
    #[arg(long, value_name = "SECS")]
    pub refresh_min_interval: Option<f64>,
    /// OPIC: share of a page's cash that goes to the virtual page (PageRank damping 1 - eps).
    #[arg(long, value_name = "EPS")]
    pub opic_eps: Option<f64>,
    /// Adaptive OPIC: the interpolation window, in units of the clock G.
    #[arg(long, value_name = "G")]
    pub opic_window: Option<f64>,
    /// The most cooperation used where a site offers it: off (poll everything), meta
    /// (robots.rdf, sitemaps, the changes feed), delta (and fetch changed pages as deltas),
    /// push (and subscribe to the site's WebSub hub).
    #[arg(long, value_enum, value_name = "MODE")]
    pub coop: Option<crate::coop::CoopMode>,
    /// Largest acceptable probability that the picture of a site is outdated.
    #[arg(long, value_name = "P")]
    pub coop_max_outdated: Option<f64>,
    /// Shortest time between metadata polls of a site, seconds.
    #[arg(long, value_name = "SECS")]
    pub coop_poll_min: Option<f64>,
    /// Longest time between metadata polls of a site, seconds.
    #[arg(long, value_name = "SECS")]
    pub coop_poll_max: Option<f64>,
    /// Time between backup polls of a pushed changes feed, seconds, doubled after each one
    /// that finds nothing the hub missed.
    #[arg(long, value_name = "SECS")]
    pub coop_backup_poll: Option<f64>,
    /// The longest that time grows to, seconds.
    #[arg(long, value_name = "SECS")]
    pub coop_backup_poll_max: Option<f64>,
    /// Trust below which a site's claims are ignored.
    #[arg(long, value_name = "T")]
    pub coop_trust_min: Option<f64>,
    /// Share of pages announced unchanged that are fetched to check the claim.
    #[arg(long, value_name = "SHARE")]
    pub coop_check_share: Option<f64>,
    /// Fetch changed pages as deltas where a site offers them (delta and push modes).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub coop_deltas: Option<bool>,
    /// Lease asked of WebSub hubs, seconds.
    #[arg(long, value_name = "SECS")]
    pub hub_lease: Option<u64>,
    /// Address of the WebSub callback server (push mode), e.g. 0.0.0.0:8090 or
    /// 127.0.0.1:0; without it no hub is subscribed to and changes are polled.
    #[arg(long, value_name = "ADDR")]
    pub callback_listen: Option<SocketAddr>,
    /// The callback server's base URL as the sites see it, behind NAT or a proxy (unset:
    /// http://ADDR/websub with the address listened on).
    #[arg(long, value_name = "URL")]
    pub callback_url: Option<String>,
    /// In a fleet: how long a host lease lasts unrenewed, seconds (what a dead process costs
    /// its hosts).
    #[arg(long, value_name = "SECS")]
    pub fleet_lease: Option<f64>,
}

impl CrawlOptions {
    /// Every setting's default, each taken from the component it belongs to (politeness,
    /// fetching, scope, cooperation...) or stated here when the setting is the crawl's own:
    /// the one place a default is written, which `--help` shows.
    pub fn defaults() -> CrawlOptions {
        let limits = Limits::default();
        let p = Politeness::default();
        let f = FetchLimits::default();
        let c = crate::coop::site::CoopConfig::default();
        CrawlOptions {
            max_depth: Some(limits.max_depth),
            max_dynamic_depth: Some(limits.max_dynamic_depth),
            max_url_length: Some(limits.max_url_len),
            scope: Some("host".into()),
            delay_min: Some(p.min_delay.as_secs_f64()),
            delay_factor: Some(p.factor),
            delay_max: Some(p.max_delay.as_secs_f64()),
            crawl_delay_cap: Some(p.crawl_delay_cap.as_secs_f64()),
            park_base: Some(p.park_base.as_secs_f64()),
            park_max: Some(p.max_park.as_secs_f64()),
            politeness_key: Some(crate::frontier::servers::PolitenessKey::default()),
            per_host_connections: Some(1),
            concurrency: Some(128),
            user_agent: Some(DEFAULT_USER_AGENT.into()),
            timeout: Some(f.timeout.as_secs_f64()),
            connect_timeout: Some(f.connect_timeout.as_secs_f64()),
            min_speed: Some(f.min_speed),
            max_body: Some(f.max_body),
            max_redirects: Some(5),
            max_attempts: Some(3),
            host_give_up: Some(10),
            robots_ttl: Some(86_400.0),
            warc_max_size: Some(1 << 30),
            warc_prefix: Some("webcoop".into()),
            warc_gzip_level: Some(crate::archive::warc::DEFAULT_LEVEL),
            commit_interval: Some(1.0),
            commit_results: Some(2000),
            conditional: Some(true),
            fetch_threads: Some(default_fetch_threads()),
            keep_fresh: Some(false),
            refresh_policy: Some(crate::refresh::allocation::Policy::default()),
            refresh_cycle: Some(86_400.0),
            refresh_share: Some(0.5),
            opic_eps: Some(0.15),
            opic_window: Some(3.0),
            coop: Some(c.mode),
            coop_max_outdated: Some(c.max_outdated),
            coop_poll_min: Some(c.poll_min),
            coop_poll_max: Some(c.poll_max),
            coop_backup_poll: Some(c.backup_poll),
            coop_backup_poll_max: Some(c.backup_poll_max),
            coop_trust_min: Some(c.trust_min),
            coop_check_share: Some(c.check_share),
            coop_deltas: Some(c.deltas),
            hub_lease: Some(c.lease_secs),
            fleet_lease: Some(30.0),
            ..CrawlOptions::default()
        }
    }

    /// These settings, each unset one taken from `under`.
    fn over(&self, under: &CrawlOptions) -> Result<CrawlOptions, ConfigError> {
        let mut merged = as_map(under);
        merged.extend(as_map(self).into_iter().filter(|(_, v)| !v.is_null()));
        serde_json::from_value(serde_json::Value::Object(merged))
            .map_err(|e| out_of_range(format!("the settings: {e}")))
    }
}

/// `cmd` (the crawler's command line) with each setting's default at the end of its help, as
/// [`CrawlOptions::defaults`] has it.
pub fn help_with_defaults(cmd: clap::Command) -> clap::Command {
    let defaults = as_map(&CrawlOptions::defaults());
    cmd.mut_subcommand("crawl", |crawl| {
        crawl.mut_args(|arg| {
            let shown = match defaults.get(arg.get_id().as_str()) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(serde_json::Value::Null) | None => return arg,
                Some(v) => v.to_string(),
            };
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            let help = format!("{} [default: {shown}]", help.trim_end_matches('.'));
            arg.help(help)
        })
    })
}

/// Everything a crawl runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The crawl directory.
    pub out: PathBuf,
    /// Seeds given this run.
    pub seeds: Vec<Url>,
    /// Page budget over all runs.
    pub max_pages: Option<u64>,
    /// Scope.
    pub scope: Scope,
    /// Depth and length limits.
    pub limits: Limits,
    /// Delays.
    pub politeness: Politeness,
    /// What politeness is keyed by.
    pub politeness_key: crate::frontier::servers::PolitenessKey,
    /// Connections per host (per server address when keyed by address).
    pub per_host: usize,
    /// Connections overall.
    pub concurrency: usize,
    /// User-Agent.
    pub user_agent: String,
    /// Fetch limits.
    pub fetch: FetchLimits,
    /// Redirects followed from one URL.
    pub max_redirects: u32,
    /// Attempts per URL.
    pub max_attempts: u32,
    /// Consecutive failures before a host is given up.
    pub host_give_up: u32,
    /// robots.txt lifetime.
    pub robots_ttl: Duration,
    /// WARC rotation size.
    pub warc_max_size: u64,
    /// WARC prefix.
    pub warc_prefix: String,
    /// gzip level of WARC records.
    pub warc_level: u32,
    /// Longest time between saves.
    pub commit_interval: Duration,
    /// Revisits are conditional requests.
    pub conditional: bool,
    /// Results per save.
    pub commit_results: usize,
    /// Threads that fetch and analyse pages.
    pub fetch_threads: usize,
    /// Address overrides.
    pub resolve: Vec<(String, SocketAddr)>,
    /// Networks the crawler may reach although they are not public.
    pub allow_net: Vec<ipnet::IpNet>,
    /// Metrics address.
    pub metrics: Option<SocketAddr>,
    /// The console's address and token.
    pub console: Option<ConsoleSettings>,
    /// Start (or resume) a refresh pass.
    pub refresh: bool,
    /// Keep pages fresh with this schedule after discovery.
    pub keep_fresh: Option<crate::refresh::schedule::ScheduleConfig>,
    /// Largest share of requests for refreshes while new URLs wait.
    pub refresh_share: f64,
    /// Stop after this long.
    pub run_for: Option<Duration>,
    /// OPIC virtual-page share.
    pub opic_eps: f64,
    /// Adaptive OPIC window (clock units).
    pub opic_window: f64,
    /// Progress display.
    pub progress: ProgressMode,
    /// Cooperation.
    pub coop: crate::coop::site::CoopConfig,
    /// The WebSub callback server's address and public base URL.
    pub callback: Option<(SocketAddr, Option<Url>)>,
    /// The shared frontier this process works on, when it is one of a fleet.
    pub fleet: Option<FleetSettings>,
}

/// Where a fleet's frontier is and who this process is in it.
#[derive(Debug, Clone)]
pub struct FleetSettings {
    /// `redis://...` or `redis+cluster://...`.
    pub frontier: String,
    /// The crawl's name.
    pub crawl: String,
    /// This process's name (its directory under `--out`), when given.
    pub process: Option<String>,
    /// How long a host lease lasts unrenewed.
    pub lease: Duration,
}

/// The settings of the config file that are this process's own in a fleet; every other one
/// is the crawl's, stored with it.
const PER_PROCESS: &[&str] = &[
    "seeds",
    "max_pages",
    "concurrency",
    "timeout",
    "connect_timeout",
    "min_speed",
    "warc_max_size",
    "warc_prefix",
    "warc_gzip_level",
    "commit_interval",
    "commit_results",
    "fetch_threads",
    "resolve",
    "allow_net",
    "metrics",
    "console",
    "console_token_file",
    "callback_listen",
    "callback_url",
];

/// The file's settings with the command line's (and the environment's) over them: one
/// document of what the crawl runs with. Seeds add up: the file's follow the command line's.
fn overlaid(args: &CrawlArgs) -> Result<(CrawlArgs, CrawlOptions), ConfigError> {
    let file = match &args.config {
        Some(p) => read_file(p)?,
        None => CrawlOptions::default(),
    };
    let mut a = args.clone();
    a.config = None;
    let given = std::mem::take(&mut a.options);
    let mut seeds = given.seeds.clone().unwrap_or_default();
    seeds.extend(file.seeds.clone().unwrap_or_default());
    let mut merged = as_map(&file);
    merged.extend(as_map(&given).into_iter().filter(|(_, v)| !v.is_null()));
    let mut options: CrawlOptions = serde_json::from_value(serde_json::Value::Object(merged))
        .map_err(|e| out_of_range(format!("the settings: {e}")))?;
    options.seeds = (!seeds.is_empty()).then_some(seeds);
    Ok((a, options))
}

/// The options as a JSON object, by key.
fn as_map(options: &CrawlOptions) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(options) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// The settings every process of a fleet shares, as this one was given them (from the config
/// file and the flags): what a new crawl stores.
pub(crate) fn shared_settings(
    args: &CrawlArgs,
) -> Result<serde_json::Map<String, serde_json::Value>, ConfigError> {
    let (_, file) = overlaid(args)?;
    let mut map = as_map(&file);
    map.retain(|k, v| !PER_PROCESS.contains(&k.as_str()) && !v.is_null());
    Ok(map)
}

/// The settings of a process joining crawl `crawl`, whose stored shared settings are
/// `stored`: a shared setting given here with another value is an error that names it.
pub(crate) fn settings_joining(
    args: &CrawlArgs,
    crawl: &str,
    stored: &serde_json::Map<String, serde_json::Value>,
) -> Result<Settings, ConfigError> {
    let mine = shared_settings(args)?;
    for (key, value) in &mine {
        let theirs = stored.get(key);
        if theirs != Some(value) {
            let runs = theirs.map_or("the default".to_string(), |v| v.to_string());
            return Err(out_of_range(format!(
                "{key} is {value} here but crawl {crawl:?} runs with {runs}: leave it out to \
                 join the crawl as it is, or start a crawl of another name"
            )));
        }
    }
    let (a, file) = overlaid(args)?;
    let mut merged = as_map(&file);
    merged.retain(|k, _| PER_PROCESS.contains(&k.as_str()));
    merged.extend(stored.clone());
    let file: CrawlOptions = serde_json::from_value(serde_json::Value::Object(merged))
        .map_err(|e| out_of_range(format!("the settings stored with crawl {crawl:?}: {e}")))?;
    settings_from(&a, file)
}

/// Why the crawl's settings are refused: each names the setting and what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A duration that is not a non-negative number of seconds.
    #[error("{name} must be a non-negative number of seconds, not {value}")]
    Seconds {
        /// The setting.
        name: &'static str,
        /// As given.
        value: f64,
    },
    /// A `--resolve HOST=ADDR` that is not one.
    #[error("--resolve {entry}: {why}")]
    Resolve {
        /// As given.
        entry: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A seed file that cannot be read.
    #[error("seed file {path}: {source}")]
    SeedFile {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A seed that is not an http(s) URL.
    #[error("seed {at}: {value:?} is not {why}")]
    Seed {
        /// Where it was given (the argument, or file:line).
        at: String,
        /// As given.
        value: String,
        /// What it is not.
        why: String,
    },
    /// The config file cannot be read.
    #[error("config {}: {source}", path.display())]
    FileUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is not valid TOML of the known settings.
    #[error("config {}: {source}", path.display())]
    FileInvalid {
        /// The file.
        path: PathBuf,
        /// Why.
        source: toml::de::Error,
    },
    /// `--scope` is not a scope.
    #[error(transparent)]
    Scope(#[from] crate::analyze::scope::ScopeError),
    /// A value outside its range; the message names the setting and the range.
    #[error("{0}")]
    OutOfRange(String),
    /// The console's address or token is refused.
    #[error(transparent)]
    ConsoleBind(#[from] webcoop_daemon::console::access::BindError),
    /// The console's token file could not be read.
    #[error("console token file {path}: {source}")]
    ConsoleTokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Where the console listens and the token that guards it.
#[derive(Debug, Clone)]
pub struct ConsoleSettings {
    /// The address.
    pub addr: SocketAddr,
    /// The token every request must carry (required off loopback).
    pub token: Option<String>,
}

/// Reads a token file: its first line, without surrounding blanks.
pub fn read_token_file(path: &Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ConsoleTokenFile {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text.lines().next().unwrap_or("").trim().to_string())
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

fn out_of_range(why: impl Into<String>) -> ConfigError {
    ConfigError::OutOfRange(why.into())
}

/// Parses `HOST=ADDR` (ADDR an IP address, with or without a port).
pub(crate) fn parse_resolve(host: &str, addr: &str) -> Result<(String, SocketAddr), ConfigError> {
    let bad = |why| ConfigError::Resolve {
        entry: format!("{host}={addr}"),
        why,
    };
    let sock = addr
        .parse::<SocketAddr>()
        .or_else(|_| addr.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| bad("not an IP address"))?;
    if host.is_empty() {
        return Err(bad("the host name is empty"));
    }
    Ok((host.to_ascii_lowercase(), sock))
}

/// Reads seeds: each argument is a URL, or a file of URLs.
pub(crate) fn read_seeds(args: &[String]) -> Result<Vec<Url>, ConfigError> {
    let mut out = Vec::new();
    for arg in args {
        if arg.contains("://") {
            out.push(seed_url(arg, arg)?);
            continue;
        }
        let text = std::fs::read_to_string(arg).map_err(|source| ConfigError::SeedFile {
            path: arg.clone(),
            source,
        })?;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if !line.is_empty() {
                out.push(seed_url(line, &format!("{arg}:{}", n + 1))?);
            }
        }
    }
    Ok(out)
}

fn seed_url(s: &str, at: &str) -> Result<Url, ConfigError> {
    let bad = |why: String| ConfigError::Seed {
        at: at.to_string(),
        value: s.to_string(),
        why,
    };
    let mut url = Url::parse(s).map_err(|e| bad(format!("a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(bad("an http(s) URL".into()));
    }
    crate::analyze::url_norm::normalize(&mut url);
    Ok(url)
}

/// Reads a TOML config file.
pub(crate) fn read_file(path: &Path) -> Result<CrawlOptions, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::FileUnreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let mut file: CrawlOptions =
        toml::from_str(&text).map_err(|source| ConfigError::FileInvalid {
            path: path.to_path_buf(),
            source,
        })?;
    // Relative paths in the file are relative to the file, as in the agent's: a file read from
    // /etc means the same wherever the crawl is started.
    let dir = path.parent().unwrap_or(Path::new(""));
    let beside = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        }
    };
    if let Some(p) = file.console_token_file.as_mut() {
        *p = beside(p);
    }
    for seed in file.seeds.iter_mut().flatten() {
        if !seed.contains("://") {
            *seed = beside(Path::new(seed.as_str()))
                .to_string_lossy()
                .into_owned();
        }
    }
    Ok(file)
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
        out: args.out.clone(),
        seeds,
        max_pages: file.max_pages,
        scope,
        limits: limits(&file),
        politeness: politeness(&file)?,
        politeness_key: file.politeness_key.unwrap_or_default(),
        per_host,
        concurrency,
        user_agent: file.user_agent.clone().unwrap_or_default(),
        fetch: fetch_limits(&file)?,
        max_redirects: file.max_redirects.unwrap_or_default(),
        max_attempts: file.max_attempts.unwrap_or_default().max(1),
        host_give_up: file.host_give_up.unwrap_or_default().max(1),
        robots_ttl: secs("robots_ttl", file.robots_ttl.unwrap_or_default())?,
        warc_max_size: file.warc_max_size.unwrap_or_default(),
        warc_prefix: file.warc_prefix.clone().unwrap_or_default(),
        warc_level: file.warc_gzip_level.unwrap_or_default().min(9),
        commit_interval: secs("commit_interval", file.commit_interval.unwrap_or_default())?,
        conditional: file.conditional.unwrap_or_default(),
        commit_results: file.commit_results.unwrap_or_default().max(1),
        fetch_threads,
        resolve: resolve(args, &file)?,
        allow_net: allow_net(&file)?,
        metrics: file.metrics,
        console: console(args, &file)?,
        refresh: args.refresh,
        keep_fresh: keep_fresh(&file)?,
        refresh_share,
        run_for: args.run_for.map(|s| secs("--run-for", s)).transpose()?,
        opic_eps,
        opic_window,
        progress: args.progress,
        fleet: match &args.frontier {
            None => None,
            Some(frontier) => Some(FleetSettings {
                frontier: frontier.clone(),
                crawl: args.crawl.clone().unwrap_or_default(),
                process: args.process.clone(),
                lease: secs("fleet_lease", file.fleet_lease.unwrap_or_default().max(1.0))?,
            }),
        },
    })
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
        lease_secs: file.hub_lease.unwrap_or_default(),
        failures_to_degrade: d.failures_to_degrade,
        deltas: file.coop_deltas.unwrap_or_default(),
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
        ] {
            std::fs::write(&cfg, bad).unwrap();
            let e = with(&|a| a.config = Some(cfg.clone()));
            assert!(e.contains(says), "{bad}: {e}");
        }
        std::fs::write(&cfg, "fetch_threads = 3\n").unwrap();
        let mut a = base.clone();
        a.config = Some(cfg.clone());
        assert_eq!(settings(&a).unwrap().fetch_threads, 3);
    }
}
