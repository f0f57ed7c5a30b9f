//! Every setting of a crawl, stated once: [`CrawlOptions`], flattened into the command line
//! ([`CrawlArgs`]) and read from the `--config` file, with the defaults `--help` shows.

use super::error::ConfigError;
use super::{default_fetch_threads, out_of_range};
use crate::analyze::scope::Limits;
use crate::fetch::FetchLimits;
use crate::frontier::politeness::Politeness;
use crate::progress::ProgressMode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
pub(super) use webcoop_daemon::layered::as_map;
use webcoop_daemon::layered::overlay;

use crate::fetch::DEFAULT_USER_AGENT;

/// `webcoop-crawl crawl`: what is this run's own (the directory, the configuration file, a
/// refresh pass, a fleet to join...) and, flattened in, every setting of the crawl.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CrawlArgs {
    /// Every setting of the crawl: a flag, a `WEBCOOP_CRAWL_*` variable and a key of the file.
    #[command(flatten)]
    pub(crate) options: CrawlOptions,
    /// Directory of the crawl: state (crawl.sqlite), WARC files (warc/), crawl.log.
    /// Running again on the same directory resumes.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// TOML file with the crawl's settings, keys as the options with `_` (docs/CRAWLER.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Send requests for HOST to ADDR instead of resolving it (repeatable), like curl's
    /// --resolve; the file's `[resolve]` table adds to these.
    #[arg(long, value_name = "HOST=ADDR")]
    pub(crate) resolve: Vec<String>,
    /// The console's token itself (prefer --console-token-file: a command line is visible to
    /// every user of the machine).
    #[arg(long, value_name = "TOKEN")]
    pub(crate) console_token: Option<String>,
    /// Revisit every page fetched before, with conditional requests (once per pass: a pass
    /// under way is resumed, not restarted).
    #[arg(long)]
    pub(crate) refresh: bool,
    /// Stop after this many seconds (the crawl resumes on the next run).
    #[arg(long, value_name = "SECS")]
    pub(crate) run_for: Option<f64>,
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
    pub(crate) frontier: Option<String>,
    /// The name of the shared crawl (with --frontier); its settings are stored with it.
    #[arg(long, value_name = "NAME", requires = "frontier")]
    pub(crate) crawl: Option<String>,
    /// This process's name in the fleet, unique in the crawl (refused while a live process
    /// holds it), and its directory under --out [default: HOSTNAME-N, the first N no live
    /// process holds, the directories of earlier runs first].
    #[arg(long, value_name = "NAME", requires = "frontier")]
    pub(crate) process: Option<String>,
    /// In a fleet: own the hosts whose name hashes to I of N (`I/N`, from 0) instead of
    /// leasing hosts from a shared queue; links to other hosts go to their owner through Redis
    /// [default process name: shard-I].
    #[arg(long, value_name = "I/N", requires = "frontier")]
    pub(crate) shard: Option<String>,
    /// Progress display: a bar on a terminal, log lines otherwise.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub(crate) progress: ProgressMode,
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
    pub(crate) seeds: Option<Vec<String>>,
    /// Stop after this many pages fetched (over all runs on this directory).
    #[arg(long, value_name = "N")]
    pub(crate) max_pages: Option<u64>,
    /// Deepest static page, in links from a seed.
    #[arg(long, value_name = "N")]
    pub(crate) max_depth: Option<u32>,
    /// Deepest dynamic page (a URL with a query), in links from a seed.
    #[arg(long, value_name = "N")]
    pub(crate) max_dynamic_depth: Option<u32>,
    /// Which links to follow: host (the seeds' hosts), domain (and their subdomains), any,
    /// or a regular expression URLs must match.
    #[arg(long, value_name = "host|domain|any|REGEX")]
    pub(crate) scope: Option<String>,
    /// Longest URL followed, bytes.
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_url_length: Option<usize>,
    /// Shortest delay between two requests to one host, in seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) delay_min: Option<f64>,
    /// Delay as a multiple of the host's last response time.
    #[arg(long, value_name = "X")]
    pub(crate) delay_factor: Option<f64>,
    /// Longest delay the response-time rule sets, seconds (robots.txt may ask for more).
    #[arg(long, value_name = "SECS")]
    pub(crate) delay_max: Option<f64>,
    /// Longest robots.txt `Crawl-delay` honoured, seconds; hosts asking more are skipped.
    #[arg(long, value_name = "SECS")]
    pub(crate) crawl_delay_cap: Option<f64>,
    /// What politeness is keyed by: host (each host name), or ip (host names on one server
    /// address share its delay and connection limit).
    #[arg(long, value_enum, value_name = "host|ip")]
    pub(crate) politeness_key: Option<crate::frontier::servers::PolitenessKey>,
    /// Connections per host: raise only for sites you own or have permission for.
    #[arg(long, value_name = "N")]
    pub(crate) per_host_connections: Option<usize>,
    /// Connections over all hosts.
    #[arg(long, value_name = "N")]
    pub(crate) concurrency: Option<usize>,
    /// Hosts crawled at once: others with work wait until one is done (0: no limit). Each
    /// holds a connection and its buffered URLs between requests.
    #[arg(long, value_name = "N")]
    pub(crate) hosts_at_once: Option<usize>,
    /// The User-Agent sent, whose first word is matched against robots.txt groups.
    #[arg(long, value_name = "UA")]
    pub(crate) user_agent: Option<String>,
    /// Sign requests (Web Bot Auth) with the Ed25519 keys of this key file, made by
    /// `webcoop-crawl keys new`; read again when it changes, so keys rotate during a crawl.
    #[arg(long, value_name = "FILE", requires = "signature_agent")]
    pub(crate) signing_key: Option<PathBuf>,
    /// The origin (https://HOST) whose /.well-known/http-message-signatures-directory
    /// publishes the signing keys (`webcoop-crawl keys directory` writes it).
    #[arg(long, value_name = "URL")]
    pub(crate) signature_agent: Option<String>,
    /// Which requests are signed: always, or only to sites that asked (Accept-Signature).
    #[arg(long, value_enum, value_name = "always|asked")]
    pub(crate) sign_requests: Option<crate::signing::SignWhen>,
    /// What the crawl is for (repeatable): search, ai-input, ai-train. Pages whose site says
    /// (robots.txt Content-Usage or Content-Signal, the Content-Usage header, its agent) that
    /// they may not be used so are skipped. Unset: nothing is skipped, preferences recorded.
    #[arg(long, value_name = "PURPOSE")]
    pub(crate) purpose: Option<Vec<String>>,
    /// Per-request time limit in seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) timeout: Option<f64>,
    /// Time allowed to connect, seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) connect_timeout: Option<f64>,
    /// Slowest transfer accepted, bytes per second after the first five seconds.
    #[arg(long, value_name = "BYTES")]
    pub(crate) min_speed: Option<u64>,
    /// Largest body kept, bytes; a longer one is cut and marked truncated.
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_body: Option<usize>,
    /// Redirects followed from one URL.
    #[arg(long, value_name = "N")]
    pub(crate) max_redirects: Option<u32>,
    /// Attempts per URL before it is given up.
    #[arg(long, value_name = "N")]
    pub(crate) max_attempts: Option<u32>,
    /// First parking time of a failing host, seconds; it doubles with each further failure.
    #[arg(long, value_name = "SECS")]
    pub(crate) park_base: Option<f64>,
    /// Longest parking time, seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) park_max: Option<f64>,
    /// Consecutive failures after which a host is given up on.
    #[arg(long, value_name = "N")]
    pub(crate) host_give_up: Option<u32>,
    /// In a one-pass crawl, consecutive failures after which a host that never answered
    /// (connection refused, no name, nothing received) is given up on.
    #[arg(long, value_name = "N")]
    pub(crate) dead_host_give_up: Option<u32>,
    /// In a one-pass crawl, the longest wait for parked hosts, seconds: the crawl ends when
    /// every host with URLs left waits longer than this.
    #[arg(long, value_name = "SECS")]
    pub(crate) end_wait: Option<f64>,
    /// How long robots.txt is kept, seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) robots_ttl: Option<f64>,
    /// Size at which WARC files rotate, bytes.
    #[arg(long, value_name = "BYTES")]
    pub(crate) warc_max_size: Option<u64>,
    /// WARC file name prefix.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) warc_prefix: Option<String>,
    /// gzip level of WARC records, 0 to 9 (1 for speed).
    #[arg(long, value_name = "0-9")]
    pub(crate) warc_gzip_level: Option<u32>,
    /// Longest time between two saves of the state, seconds (by default 1, or 5 with more
    /// than 1,000 hosts crawled at once or after 300,000 pages fetched).
    #[arg(long, value_name = "SECS")]
    pub(crate) commit_interval: Option<f64>,
    /// Results per save of the state at most (by default 2,000, or 10,000 with more than
    /// 1,000 hosts crawled at once or after 300,000 pages fetched).
    #[arg(long, value_name = "N")]
    pub(crate) commit_results: Option<usize>,
    /// How long a host's idle connection is kept for its next request, seconds (by default
    /// twice `--delay-min` and a second, at most 15).
    #[arg(long, value_name = "SECS")]
    pub(crate) connection_idle: Option<f64>,
    /// Pages of a host fetched in a run before the well-known places its robots.txt does not
    /// name (`/robots.rdf`, `/sitemap.xml`) are probed, after its pages (default 100; 0
    /// probes every host; a seed's host is probed however few): two blind requests are a
    /// large share of a small site's.
    #[arg(long, value_name = "N")]
    pub(crate) probe_after: Option<u64>,
    /// Revisits ask "changed since?" (`If-None-Match`, `If-Modified-Since`); false refetches
    /// every page whole, as the bench's plain polling does.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub(crate) conditional: Option<bool>,
    /// Threads that fetch and analyse pages (by default one fewer than the cores, at least one).
    #[arg(long, value_name = "N")]
    pub(crate) fetch_threads: Option<usize>,
    /// Host name to address overrides (the file's `[resolve]` table; on the command line,
    /// `--resolve HOST=ADDR`).
    #[arg(skip)]
    pub(crate) resolve: Option<BTreeMap<String, String>>,
    /// Let the crawler connect to this network although it is loopback, private, link-local
    /// or otherwise not public (repeatable; e.g. 10.0.0.0/8). Without it, every connection
    /// to such an address (pages, redirects, robots.txt, sitemaps, hubs) is refused.
    #[arg(long, value_name = "CIDR")]
    pub(crate) allow_net: Option<Vec<String>>,
    /// Ask this DNS server (IP:PORT, UDP then TCP) for every name, keeping each answer for its
    /// TTL, instead of the system's resolver (which asks again for every connection).
    #[arg(long, value_name = "ADDR")]
    pub(crate) nameserver: Option<SocketAddr>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<SocketAddr>,
    /// Serve the live console at http://ADDR/ (loopback unless a token guards it).
    #[arg(long, value_name = "ADDR")]
    pub(crate) console: Option<SocketAddr>,
    /// File whose first line is the console's token (required off loopback).
    #[arg(long, value_name = "FILE")]
    pub(crate) console_token_file: Option<PathBuf>,
    /// Keep running after discovery and revisit known pages when the refresh policy says they
    /// are due (until stopped, or --run-for).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub(crate) keep_fresh: Option<bool>,
    /// How the refresh budget is shared among pages (with --keep-fresh).
    #[arg(long, value_enum)]
    pub(crate) refresh_policy: Option<crate::refresh::allocation::Policy>,
    /// Refresh budget, visits per hour (unset: every page once per --refresh-cycle).
    #[arg(long, value_name = "PER_HOUR")]
    pub(crate) refresh_budget: Option<f64>,
    /// Average time between visits of a page when no budget is given, seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) refresh_cycle: Option<f64>,
    /// Largest share of requests spent on refreshes while new URLs wait, 0 to 1.
    #[arg(long, value_name = "SHARE")]
    pub(crate) refresh_share: Option<f64>,
    /// Shortest time between two visits of a page, seconds (unset: a hundredth of the
    /// cycle, at most 60).
    #[arg(long, value_name = "SECS")]
    pub(crate) refresh_min_interval: Option<f64>,
    /// OPIC: share of a page's cash that goes to the virtual page (PageRank damping 1 - eps).
    #[arg(long, value_name = "EPS")]
    pub(crate) opic_eps: Option<f64>,
    /// Adaptive OPIC: the interpolation window, in units of the clock G.
    #[arg(long, value_name = "G")]
    pub(crate) opic_window: Option<f64>,
    /// The most cooperation used where a site offers it: off (poll everything), meta
    /// (robots.rdf, sitemaps, the changes feed), delta (and fetch changed pages as deltas),
    /// push (and subscribe to the site's WebSub hub).
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) coop: Option<crate::coop::CoopMode>,
    /// Largest acceptable probability that the picture of a site is outdated.
    #[arg(long, value_name = "P")]
    pub(crate) coop_max_outdated: Option<f64>,
    /// Shortest time between metadata polls of a site, seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) coop_poll_min: Option<f64>,
    /// Longest time between metadata polls of a site, seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) coop_poll_max: Option<f64>,
    /// Time between backup polls of a pushed changes feed, seconds, doubled after each one
    /// that finds nothing the hub missed.
    #[arg(long, value_name = "SECS")]
    pub(crate) coop_backup_poll: Option<f64>,
    /// The longest that time grows to, seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) coop_backup_poll_max: Option<f64>,
    /// Trust below which a site's claims are ignored.
    #[arg(long, value_name = "T")]
    pub(crate) coop_trust_min: Option<f64>,
    /// Share of pages announced unchanged that are fetched to check the claim.
    #[arg(long, value_name = "SHARE")]
    pub(crate) coop_check_share: Option<f64>,
    /// Weight of a site's stated popularity (its pages' shares of reads) against OPIC cash in
    /// the order of its pages and in the refresh schedule's weights; 0 ignores it.
    #[arg(long, value_name = "W")]
    pub(crate) coop_popularity_weight: Option<f64>,
    /// Fetch changed pages as deltas where a site offers them (delta and push modes).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub(crate) coop_deltas: Option<bool>,
    /// On a first visit, fetch the snapshot of the whole site a listing names (one request
    /// instead of one per page; every page checked against the listing).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub(crate) coop_snapshots: Option<bool>,
    /// Ask a believed site's changes with the changed pages' content, in one response per
    /// page of changes (batches), instead of fetching each changed page.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub(crate) coop_batches: Option<bool>,
    /// Lease asked of WebSub hubs, seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) hub_lease: Option<u64>,
    /// Subscribe only to WebSub hubs on these hosts (repeatable; `.example.com` also allows
    /// its subdomains) [default: any hub a site's feed or page names, wherever it runs].
    #[arg(long, value_name = "HOST")]
    pub(crate) hub_allow: Option<Vec<String>>,
    /// Address of the WebSub callback server (push mode), e.g. 0.0.0.0:8090 or
    /// 127.0.0.1:0; without it no hub is subscribed to and changes are polled.
    #[arg(long, value_name = "ADDR")]
    pub(crate) callback_listen: Option<SocketAddr>,
    /// Serve the IndexNow API here (e.g. 0.0.0.0:8095): `POST /indexnow` and
    /// `GET /indexnow?url=&key=`, as search engines do; a submission's URLs become due once
    /// its key file, fetched from the site, proves the key.
    #[arg(long, value_name = "ADDR")]
    pub(crate) indexnow_listen: Option<SocketAddr>,
    /// The callback server's base URL as the sites see it, behind NAT or a proxy (unset:
    /// http://ADDR/websub with the address listened on).
    #[arg(long, value_name = "URL")]
    pub(crate) callback_url: Option<String>,
    /// In a fleet: how long a host lease lasts unrenewed, seconds (what a dead process costs
    /// its hosts).
    #[arg(long, value_name = "SECS")]
    pub(crate) fleet_lease: Option<f64>,
}

impl CrawlOptions {
    /// Every setting's default, each taken from the component it belongs to (politeness,
    /// fetching, scope, cooperation...) or stated here when the setting is the crawl's own:
    /// the one place a default is written, which `--help` shows.
    pub(crate) fn defaults() -> CrawlOptions {
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
            probe_after: Some(super::PROBE_AFTER),
            delay_factor: Some(p.factor),
            delay_max: Some(p.max_delay.as_secs_f64()),
            crawl_delay_cap: Some(p.crawl_delay_cap.as_secs_f64()),
            park_base: Some(p.park_base.as_secs_f64()),
            park_max: Some(p.max_park.as_secs_f64()),
            politeness_key: Some(crate::frontier::servers::PolitenessKey::default()),
            per_host_connections: Some(1),
            concurrency: Some(128),
            hosts_at_once: Some(crate::frontier::DEFAULT_HOSTS_AT_ONCE),
            user_agent: Some(DEFAULT_USER_AGENT.into()),
            sign_requests: Some(crate::signing::SignWhen::default()),
            timeout: Some(f.timeout.as_secs_f64()),
            connect_timeout: Some(f.connect_timeout.as_secs_f64()),
            min_speed: Some(f.min_speed),
            max_body: Some(f.max_body),
            max_redirects: Some(5),
            max_attempts: Some(3),
            host_give_up: Some(10),
            dead_host_give_up: Some(3),
            end_wait: Some(180.0),
            robots_ttl: Some(86_400.0),
            warc_max_size: Some(1 << 30),
            warc_prefix: Some("webcoop".into()),
            warc_gzip_level: Some(crate::archive::warc::DEFAULT_LEVEL),
            // By the hosts crawled at once and the pages fetched (`SavePace`) unless set.
            commit_interval: None,
            commit_results: None,
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
            coop_popularity_weight: Some(c.popularity_weight),
            coop_deltas: Some(c.deltas),
            coop_snapshots: Some(c.snapshots),
            coop_batches: Some(c.batches),
            hub_lease: Some(c.lease_secs),
            fleet_lease: Some(30.0),
            ..CrawlOptions::default()
        }
    }

    /// These settings, each unset one taken from `under`.
    pub(super) fn over(&self, under: &CrawlOptions) -> Result<CrawlOptions, ConfigError> {
        overlay(self, under).map_err(|e| out_of_range(format!("the settings: {e}")))
    }
}

/// `cmd` (the crawler's command line) with each setting's default at the end of its help, as
/// [`CrawlOptions::defaults`] has it.
pub fn help_with_defaults(cmd: clap::Command) -> clap::Command {
    cmd.mut_subcommand("crawl", |crawl| {
        webcoop_daemon::layered::help_with_defaults(crawl, &CrawlOptions::defaults())
    })
}

/// The settings of the config file that are this process's own in a fleet; every other one
/// is the crawl's, stored with it.
pub(super) const PER_PROCESS: &[&str] = &[
    "seeds",
    "max_pages",
    "concurrency",
    "hosts_at_once",
    "timeout",
    "connect_timeout",
    "min_speed",
    "warc_max_size",
    "warc_prefix",
    "warc_gzip_level",
    "commit_interval",
    "commit_results",
    "connection_idle",
    "fetch_threads",
    "resolve",
    "nameserver",
    "allow_net",
    "metrics",
    "console",
    "console_token_file",
    "signing_key",
    "callback_listen",
    "callback_url",
    "indexnow_listen",
];

/// The file's settings with the command line's (and the environment's) over them: one
/// document of what the crawl runs with. Seeds add up: the file's follow the command line's.
pub(super) fn overlaid(args: &CrawlArgs) -> Result<(CrawlArgs, CrawlOptions), ConfigError> {
    let file = match &args.config {
        Some(p) => read_file(p)?,
        None => CrawlOptions::default(),
    };
    let mut a = args.clone();
    a.config = None;
    let given = std::mem::take(&mut a.options);
    let mut seeds = given.seeds.clone().unwrap_or_default();
    seeds.extend(file.seeds.clone().unwrap_or_default());
    let mut options = given.over(&file)?;
    options.seeds = (!seeds.is_empty()).then_some(seeds);
    Ok((a, options))
}

/// Reads a TOML config file.
pub(super) fn read_file(path: &Path) -> Result<CrawlOptions, ConfigError> {
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
    if let Some(p) = file.signing_key.as_mut() {
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
