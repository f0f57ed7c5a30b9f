//! The agent's settings: command line, environment variables (`WEBCOOP_*`) and a TOML file,
//! in that order of precedence, checked before anything runs so a mistake is one clear line.

use clap::Parser;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use url::Url;

/// Watches a docroot and publishes what changed: robots.rdf, sitemaps and a changes feed.
#[derive(Debug, Parser, Default)]
#[command(name = "webcoop-agent", version, about, long_about = None)]
pub struct Cli {
    /// The directory the web server serves.
    #[arg(long)]
    pub docroot: Option<PathBuf>,
    /// The public URL of the docroot, e.g. https://www.example.org/.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Where the agent keeps its inventory, change log and versions (default: DOCROOT.webcoop
    /// beside the docroot, never inside it).
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Where the published documents go (default: the docroot).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Publish only paths matching one of these globs (relative to the docroot, `**` allowed).
    #[arg(long = "include", value_delimiter = ',')]
    pub include: Vec<String>,
    /// Never publish paths matching these globs.
    #[arg(long = "exclude", value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// A TOML file with any of these settings (keys as the long options, with `_`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Publish once and exit (for cron) instead of watching.
    #[arg(long)]
    pub once: bool,
    /// List paths the site's own robots.txt disallows (by default they are left out).
    #[arg(long)]
    pub ignore_robots_txt: bool,
    /// Replace a robots.rdf or sitemap.xml in the output directory that the agent did not write.
    #[arg(long)]
    pub replace_existing: bool,
    /// Versions kept per text resource, for deltas [default: 5].
    #[arg(long)]
    pub versions: Option<usize>,
    /// Disk budget of the kept versions, e.g. 512MiB or 2G [default: 1GiB].
    #[arg(long, value_parser = parse_bytes)]
    pub versions_budget: Option<u64>,
    /// Quiet time after a change before publishing, in milliseconds [default: 100].
    #[arg(long)]
    pub debounce_ms: Option<u64>,
    /// Seconds between full rescans that catch what the watcher missed [default: 3600].
    #[arg(long)]
    pub rescan_interval: Option<u64>,
    /// Changes listed in the static changes feed [default: 500].
    #[arg(long)]
    pub feed_entries: Option<usize>,
    /// Changes kept in the change log [default: 100000].
    #[arg(long)]
    pub retain_changes: Option<usize>,
    /// URLs per sitemap part once the site outgrows one sitemap file [default: 10000, at most
    /// 50000].
    #[arg(long)]
    pub sitemap_part_urls: Option<usize>,
    /// Serve the changes, delta, hub and metrics endpoints on this address (e.g.
    /// 127.0.0.1:8081), for the web server to proxy under /.well-known/webcoop/.
    #[arg(long)]
    pub listen: Option<String>,
    /// Serve the webmaster's console on this address (never the public listener; loopback
    /// unless a token guards it), e.g. 127.0.0.1:8082.
    #[arg(long)]
    pub console: Option<String>,
    /// File whose first line is the console's token (required off loopback).
    #[arg(long)]
    pub console_token_file: Option<PathBuf>,
    /// The public URL of those endpoints [default: BASE_URL/.well-known/webcoop/].
    #[arg(long)]
    pub public_url: Option<String>,
    /// Let the hub call back subscribers in this network although it is loopback, private or
    /// link-local (repeatable; e.g. 10.0.0.0/8).
    #[arg(long = "allow-callback-net", value_delimiter = ',')]
    pub allow_callback_net: Vec<String>,
    /// How long the hub gathers changes into one delivery, in milliseconds [default: 1000].
    #[arg(long)]
    pub hub_window_ms: Option<u64>,
    /// Run time this many times faster (dates in what the agent publishes), for webcoop-bench.
    #[arg(long, value_name = "X")]
    pub clock_speed: Option<f64>,
    /// With --clock-speed: the moment (ms since the epoch) at which the scaled time equals the
    /// real time, so several processes agree [default: the start].
    #[arg(long, value_name = "MS", requires = "clock_speed")]
    pub clock_anchor: Option<i64>,
    /// Seconds a subscriber may keep failing before its subscription is dropped [default: 86400].
    #[arg(long)]
    pub hub_drop_after: Option<u64>,
    /// Post changed URLs to this IndexNow endpoint (e.g. https://api.indexnow.org/indexnow).
    #[arg(long, requires = "indexnow_key")]
    pub indexnow_endpoint: Option<String>,
    /// The site's IndexNow key (8 to 128 letters, digits or dashes); the agent publishes it as
    /// KEY.txt.
    #[arg(long, requires = "indexnow_endpoint")]
    pub indexnow_key: Option<String>,
    /// Print the robots.txt lines that point crawlers at what the agent publishes, and exit.
    #[arg(long)]
    pub print_robots_lines: bool,
    /// Most subscriptions the hub holds [default: 10000].
    #[arg(long)]
    pub hub_max_subscriptions: Option<usize>,
    /// Publish files with this extension although web servers run or hide it by default
    /// (`py`, `zip`, `log`...; repeat or separate with commas).
    #[arg(long = "publish-ext", value_delimiter = ',')]
    pub publish_ext: Vec<String>,
    /// The web server's configuration (nginx or Apache): its protected locations
    /// (`auth_basic`, `deny all`, `internal`, `Require`) are never published. Repeatable.
    #[arg(long = "server-config", value_delimiter = ',')]
    pub server_config: Vec<PathBuf>,
    /// Where the agent asks the web server for each file before publishing it, as an
    /// anonymous client would (default: the base URL's origin; in production typically a
    /// loopback address such as http://127.0.0.1:80, asked with the site's Host).
    #[arg(long)]
    pub server_url: Option<String>,
    /// Requests to the web server at once while judging files [default: 4].
    #[arg(long)]
    pub judge_connections: Option<usize>,
    /// Seconds within which every file is judged again [default: 86400].
    #[arg(long)]
    pub judge_every: Option<u64>,
    /// Most requests per second when judging files again (after a change of the server's
    /// configuration, or on the rolling schedule) [default: 200].
    #[arg(long)]
    pub judge_rate: Option<f64>,
    /// A web server directive the agent does not know, declared to serve every client alike
    /// (repeatable); without it, a location using one is not published.
    #[arg(long = "trust-directive", value_delimiter = ',')]
    pub trust_directive: Vec<String>,
    /// A reverse proxy whose X-Forwarded-For the hub believes for its rate limits (repeatable;
    /// e.g. 127.0.0.1/32 when nginx on this machine proxies the agent).
    #[arg(long = "trusted-proxy", value_delimiter = ',')]
    pub trusted_proxy: Vec<String>,
    /// Drop every kept version of these docroot paths (a secret published by mistake), then
    /// exit: no delta can reveal them afterwards.
    #[arg(long = "forget-versions", value_name = "PATH")]
    pub forget_versions: Vec<String>,
    /// What to do instead of publishing and watching.
    #[command(subcommand)]
    pub command: Option<AgentCommand>,
}

/// The agent's one-off commands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum AgentCommand {
    /// Check the agent's settings and the web server's configuration (--server-config): says
    /// what is right and what to change; exit status 0 only when a crawler can use everything
    /// the agent publishes.
    Check,
    /// Drop every kept version of these docroot paths (a secret published by mistake), so no
    /// delta can reveal them; the same as --forget-versions.
    Forget {
        /// Docroot-relative paths, as listed (`private/config.html`).
        #[arg(required = true)]
        paths: Vec<String>,
    },
}

/// The same settings in a TOML file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    docroot: Option<PathBuf>,
    base_url: Option<String>,
    state: Option<PathBuf>,
    out: Option<PathBuf>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    once: Option<bool>,
    ignore_robots_txt: Option<bool>,
    replace_existing: Option<bool>,
    versions: Option<usize>,
    versions_budget: Option<ByteSize>,
    debounce_ms: Option<u64>,
    rescan_interval: Option<u64>,
    feed_entries: Option<usize>,
    retain_changes: Option<usize>,
    sitemap_part_urls: Option<usize>,
    listen: Option<String>,
    console: Option<String>,
    console_token_file: Option<PathBuf>,
    public_url: Option<String>,
    #[serde(default)]
    allow_callback_net: Vec<String>,
    hub_window_ms: Option<u64>,
    hub_drop_after: Option<u64>,
    indexnow_endpoint: Option<String>,
    indexnow_key: Option<String>,
    hub_max_subscriptions: Option<usize>,
    #[serde(default)]
    publish_ext: Vec<String>,
    #[serde(default)]
    server_config: Vec<PathBuf>,
    server_url: Option<String>,
    judge_connections: Option<usize>,
    judge_every: Option<u64>,
    judge_rate: Option<f64>,
    #[serde(default)]
    trust_directive: Vec<String>,
    #[serde(default)]
    trusted_proxy: Vec<String>,
}

/// A byte count written as a number or with a unit (`512MiB`, `2G`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ByteSize {
    Number(u64),
    Text(String),
}

/// Parses `1048576`, `512K`, `512KiB`, `20MB`, `2G`, `1TiB` (K/M/G/T are binary, as `du -h`).
pub(crate) fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 512MiB"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(format!("unknown size unit {other:?} in {text:?}")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Validated settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The docroot, canonical.
    pub docroot: PathBuf,
    /// The docroot's public URL, ending with `/`.
    pub base_url: Url,
    /// The state directory (exists and is writable).
    pub state: PathBuf,
    /// The output directory (exists and is writable).
    pub out: PathBuf,
    /// Include globs (empty: everything).
    pub include: Vec<String>,
    /// Exclude globs.
    pub exclude: Vec<String>,
    /// Extensions published although web servers run or hide them.
    pub publish_ext: Vec<String>,
    /// Web server configurations whose protected locations are never published.
    pub server_config: Vec<PathBuf>,
    /// How the web server is asked about each file.
    pub judge: crate::judge::JudgeSettings,
    /// Time within which every file is judged again.
    pub judge_every: Duration,
    /// Most requests per second when judging again.
    pub judge_rate: f64,
    /// Server directives declared to serve every client alike.
    pub trust_directives: Vec<String>,
    /// Publish once and exit.
    pub once: bool,
    /// Whether the site's robots.txt is ignored for the listing.
    pub ignore_robots_txt: bool,
    /// Replace documents the agent did not write.
    pub replace_existing: bool,
    /// Versions kept per text resource.
    pub versions: usize,
    /// Disk budget of the versions.
    pub versions_budget: u64,
    /// Quiet time before publishing.
    pub debounce: Duration,
    /// Time between safety rescans.
    pub rescan_interval: Duration,
    /// Entries of the static changes feed.
    pub feed_entries: usize,
    /// Changes kept in the log.
    pub retain_changes: usize,
    /// URLs per sitemap part.
    pub sitemap_part_urls: usize,
    /// The service, when it runs.
    pub service: Option<ServiceConfig>,
    /// IndexNow pings, when configured.
    pub indexnow: Option<IndexNowConfig>,
    /// The console, when it is served.
    pub console: Option<ConsoleSettings>,
}

/// Where the console listens and the token that guards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSettings {
    /// The address.
    pub addr: std::net::SocketAddr,
    /// The token every request must carry (required off loopback).
    pub token: Option<String>,
}

/// Subscriptions the hub holds at most, unless told otherwise.
pub(crate) const DEFAULT_MAX_SUBSCRIPTIONS: usize = 10_000;

/// Settings of the HTTP service (changes, deltas, hub, metrics).
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Where it listens.
    pub listen: std::net::SocketAddr,
    /// Its public URL prefix (ends with `/`), e.g. `https://www.example.org/.well-known/webcoop/`.
    pub public_url: Url,
    /// Networks the hub may call back although they are not public.
    pub allow_callback_nets: Vec<ipnet::IpNet>,
    /// How long the hub gathers changes into one delivery.
    pub hub_window: Duration,
    /// How long a subscriber may keep failing before it is dropped.
    pub hub_drop_after: Duration,
    /// Time limit of a delivery or verification of intent.
    pub delivery_timeout: Duration,
    /// Most subscriptions the hub holds.
    pub max_subscriptions: usize,
    /// Proxies whose `X-Forwarded-For` the hub believes.
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// Settings of IndexNow pings.
#[derive(Debug, Clone)]
pub struct IndexNowConfig {
    /// Where to post.
    pub endpoint: Url,
    /// The site's key.
    pub key: String,
}

impl Config {
    /// The site as the web server's configuration sees it.
    pub fn server_site(&self) -> crate::server_config::Site<'_> {
        crate::server_config::Site {
            docroot: &self.docroot,
            base_path: self.base_url.path(),
            host: self.base_url.host_str().unwrap_or_default(),
            trusted: &self.trust_directives,
        }
    }
}

/// The public URL prefix of the service for a site at `base_url`.
pub(crate) fn default_public_url(base_url: &Url) -> Url {
    base_url
        .join(".well-known/webcoop/")
        .unwrap_or_else(|_| base_url.clone())
}

/// A setting that cannot work, in words a webmaster can act on.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required setting is missing.
    #[error("{0} is required (give --{1}, set WEBCOOP_{2}, or put {3} in the --config file)")]
    Missing(&'static str, &'static str, &'static str, &'static str),
    /// The config file cannot be read or parsed.
    #[error("config file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The docroot is unusable.
    #[error("docroot {path}: {reason}")]
    Docroot {
        /// The path given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The base URL is unusable.
    #[error(
        "base URL {url:?} {reason} (expected an absolute URL such as https://www.example.org/)"
    )]
    BaseUrl {
        /// The text given.
        url: String,
        /// Why.
        reason: String,
    },
    /// A directory the agent writes to is unusable.
    #[error("{what} directory {path}: {reason}")]
    Directory {
        /// `state` or `output`.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A number out of range.
    #[error("{0}")]
    Value(String),
}

impl Config {
    /// Merges the command line (and environment, which clap already applied) with the config
    /// file and defaults, and checks every path and URL.
    pub fn from_cli(cli: Cli) -> Result<Config, ConfigError> {
        let (file, file_dir) = match &cli.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                let parsed: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::File {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                (parsed, dir)
            }
            None => (FileConfig::default(), PathBuf::new()),
        };
        // Relative paths in the file are relative to the file.
        let from_file =
            |p: Option<PathBuf>| p.map(|p| if p.is_absolute() { p } else { file_dir.join(p) });

        let docroot = cli
            .docroot
            .or(from_file(file.docroot))
            .ok_or(ConfigError::Missing(
                "the docroot",
                "docroot",
                "DOCROOT",
                "docroot",
            ))?;
        let docroot = check_docroot(&docroot)?;
        let base_url = cli.base_url.or(file.base_url).ok_or(ConfigError::Missing(
            "the base URL",
            "base-url",
            "BASE_URL",
            "base_url",
        ))?;
        let base_url = check_base_url(&base_url)?;

        let state = match cli.state.or(from_file(file.state)) {
            Some(s) => s,
            None => default_state_dir(&docroot)?,
        };
        let state = prepare_dir("state", &state, true)?;
        if state.starts_with(&docroot) {
            return Err(ConfigError::Directory {
                what: "state",
                path: state,
                reason: "is inside the docroot, where the web server would publish it".into(),
            });
        }
        let out = prepare_dir(
            "output",
            &cli.out
                .or(from_file(file.out))
                .unwrap_or_else(|| docroot.clone()),
            false,
        )?;

        let versions_budget = match cli.versions_budget {
            Some(b) => b,
            None => match file.versions_budget {
                Some(ByteSize::Number(n)) => n,
                Some(ByteSize::Text(t)) => parse_bytes(&t).map_err(ConfigError::Value)?,
                None => 1 << 30,
            },
        };
        let debounce_ms = cli.debounce_ms.or(file.debounce_ms).unwrap_or(100);
        if debounce_ms > 60_000 {
            return Err(ConfigError::Value(format!(
                "debounce of {debounce_ms} ms is over a minute; changes must publish within a second or so"
            )));
        }
        let feed_entries = cli.feed_entries.or(file.feed_entries).unwrap_or(500);
        let retain_changes = cli
            .retain_changes
            .or(file.retain_changes)
            .unwrap_or(100_000);
        if feed_entries == 0 || retain_changes < feed_entries {
            return Err(ConfigError::Value(format!(
                "feed entries ({feed_entries}) must be at least 1 and at most the retained changes ({retain_changes})"
            )));
        }
        let sitemap_part_urls = cli
            .sitemap_part_urls
            .or(file.sitemap_part_urls)
            .unwrap_or(crate::publish::sitemaps::DEFAULT_PART_URLS);
        if !(1..=50_000).contains(&sitemap_part_urls) {
            return Err(ConfigError::Value(format!(
                "sitemap parts hold 1 to 50,000 URLs (the protocol's limit), not {sitemap_part_urls}"
            )));
        }
        let service = match cli.listen.or(file.listen) {
            None => None,
            Some(listen) => {
                let listen = listen.parse().map_err(|e| {
                    ConfigError::Value(format!(
                        "--listen {listen:?}: {e} (expected an address such as 127.0.0.1:8081)"
                    ))
                })?;
                let public_url = match cli.public_url.or(file.public_url) {
                    Some(u) => {
                        let mut url = check_base_url(&u)?;
                        if !url.path().ends_with('/') {
                            url.set_path(&format!("{}/", url.path()));
                        }
                        url
                    }
                    None => default_public_url(&base_url),
                };
                let nets = if cli.allow_callback_net.is_empty() {
                    file.allow_callback_net
                } else {
                    cli.allow_callback_net
                };
                let allow_callback_nets = cidrs("--allow-callback-net", &nets)?;
                let proxies = if cli.trusted_proxy.is_empty() {
                    file.trusted_proxy
                } else {
                    cli.trusted_proxy
                };
                let trusted_proxies = cidrs("--trusted-proxy", &proxies)?;
                Some(ServiceConfig {
                    listen,
                    public_url,
                    allow_callback_nets,
                    hub_window: Duration::from_millis(
                        cli.hub_window_ms.or(file.hub_window_ms).unwrap_or(1000),
                    ),
                    hub_drop_after: Duration::from_secs(
                        cli.hub_drop_after.or(file.hub_drop_after).unwrap_or(86_400),
                    ),
                    delivery_timeout: Duration::from_secs(10),
                    max_subscriptions: cli
                        .hub_max_subscriptions
                        .or(file.hub_max_subscriptions)
                        .unwrap_or(DEFAULT_MAX_SUBSCRIPTIONS),
                    trusted_proxies,
                })
            }
        };
        let indexnow = match (
            cli.indexnow_endpoint.or(file.indexnow_endpoint),
            cli.indexnow_key.or(file.indexnow_key),
        ) {
            (Some(endpoint), Some(key)) => {
                let endpoint = Url::parse(&endpoint).map_err(|e| {
                    ConfigError::Value(format!("--indexnow-endpoint {endpoint:?}: {e}"))
                })?;
                if !(8..=128).contains(&key.len())
                    || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                {
                    return Err(ConfigError::Value(format!(
                        "--indexnow-key {key:?}: IndexNow keys are 8 to 128 letters, digits or dashes"
                    )));
                }
                Some(IndexNowConfig { endpoint, key })
            }
            (None, None) => None,
            _ => {
                return Err(ConfigError::Value(
                    "IndexNow needs both --indexnow-endpoint and --indexnow-key".into(),
                ));
            }
        };
        let console = match cli.console.or(file.console) {
            None => None,
            Some(addr) => {
                let addr: std::net::SocketAddr = addr.parse().map_err(|e| {
                    ConfigError::Value(format!(
                        "--console {addr:?}: {e} (expected an address such as 127.0.0.1:8082)"
                    ))
                })?;
                if service.as_ref().is_some_and(|s| s.listen == addr) {
                    return Err(ConfigError::Value(
                        "--console must not be the public --listen address".into(),
                    ));
                }
                let token = match cli.console_token_file.or(file.console_token_file) {
                    None => None,
                    Some(path) => {
                        let text = std::fs::read_to_string(&path).map_err(|e| {
                            ConfigError::Value(format!(
                                "--console-token-file {}: {e}",
                                path.display()
                            ))
                        })?;
                        Some(text.lines().next().unwrap_or("").trim().to_string())
                    }
                };
                webcoop_daemon::console::access::check_bind(addr.ip(), token.as_deref())
                    .map_err(|e| ConfigError::Value(e.to_string()))?;
                Some(ConsoleSettings { addr, token })
            }
        };
        let server_url = match cli.server_url.or(file.server_url) {
            Some(u) => check_server_url(&u)?,
            None => Url::parse(&base_url.origin().ascii_serialization()).map_err(|e| {
                ConfigError::Value(format!("the base URL's origin is not a URL: {e}"))
            })?,
        };
        let connections = cli
            .judge_connections
            .or(file.judge_connections)
            .unwrap_or(4);
        if !(1..=64).contains(&connections) {
            return Err(ConfigError::Value(format!(
                "--judge-connections {connections}: between 1 and 64"
            )));
        }
        let judge_every = cli.judge_every.or(file.judge_every).unwrap_or(86_400);
        if !(60..=30 * 86_400).contains(&judge_every) {
            return Err(ConfigError::Value(format!(
                "--judge-every {judge_every}: between 60 s and 30 days"
            )));
        }
        let judge_rate = cli.judge_rate.or(file.judge_rate).unwrap_or(200.0);
        if !(judge_rate.is_finite() && (0.1..=100_000.0).contains(&judge_rate)) {
            return Err(ConfigError::Value(format!(
                "--judge-rate {judge_rate}: between 0.1 and 100000 requests per second"
            )));
        }
        let trust_directives: Vec<String> = if cli.trust_directive.is_empty() {
            file.trust_directive
        } else {
            cli.trust_directive
        }
        .into_iter()
        .map(|d| d.trim().to_ascii_lowercase())
        .filter(|d| !d.is_empty())
        .collect();
        if (service.is_some() || console.is_some()) && (cli.once || file.once.unwrap_or(false)) {
            return Err(ConfigError::Value(
                "--once publishes and exits, --listen and --console serve: choose one".into(),
            ));
        }
        Ok(Config {
            docroot,
            base_url,
            state,
            out,
            include: if cli.include.is_empty() {
                file.include
            } else {
                cli.include
            },
            exclude: if cli.exclude.is_empty() {
                file.exclude
            } else {
                cli.exclude
            },
            publish_ext: if cli.publish_ext.is_empty() {
                file.publish_ext
            } else {
                cli.publish_ext
            },
            server_config: if cli.server_config.is_empty() {
                file.server_config
                    .into_iter()
                    .map(|p| from_file(Some(p)).unwrap_or_default())
                    .collect()
            } else {
                cli.server_config
            },
            judge: crate::judge::JudgeSettings {
                server_url,
                connections,
                timeout: Duration::from_secs(10),
            },
            judge_every: Duration::from_secs(judge_every),
            judge_rate,
            trust_directives,
            once: cli.once || file.once.unwrap_or(false),
            ignore_robots_txt: cli.ignore_robots_txt || file.ignore_robots_txt.unwrap_or(false),
            replace_existing: cli.replace_existing || file.replace_existing.unwrap_or(false),
            versions: cli.versions.or(file.versions).unwrap_or(5),
            versions_budget,
            debounce: Duration::from_millis(debounce_ms),
            rescan_interval: Duration::from_secs(
                cli.rescan_interval
                    .or(file.rescan_interval)
                    .unwrap_or(3600)
                    .max(1),
            ),
            feed_entries,
            retain_changes,
            sitemap_part_urls,
            service,
            indexnow,
            console,
        })
    }
}

fn check_docroot(path: &Path) -> Result<PathBuf, ConfigError> {
    let err = |reason: String| ConfigError::Docroot {
        path: path.to_path_buf(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => err("does not exist".into()),
        std::io::ErrorKind::PermissionDenied => err("cannot be read: permission denied".into()),
        _ => err(e.to_string()),
    })?;
    if !meta.is_dir() {
        return Err(err("is not a directory".into()));
    }
    std::fs::read_dir(path).map_err(|e| err(format!("cannot be read: {e}")))?;
    path.canonicalize().map_err(|e| err(e.to_string()))
}

/// Parses a list of networks given to `flag`.
fn cidrs(flag: &str, nets: &[String]) -> Result<Vec<ipnet::IpNet>, ConfigError> {
    nets.iter()
        .map(|n| {
            n.trim().parse::<ipnet::IpNet>().map_err(|e| {
                ConfigError::Value(format!(
                    "{flag} {n:?}: {e} (expected a CIDR such as 10.0.0.0/8 or 127.0.0.1/32)"
                ))
            })
        })
        .collect()
}

/// The web server's origin: an http(s) URL with a host and nothing after it.
fn check_server_url(text: &str) -> Result<Url, ConfigError> {
    let bad = |why: &str| {
        ConfigError::Value(format!(
            "--server-url {text:?} {why} (expected an origin such as http://127.0.0.1:80)"
        ))
    };
    let url = Url::parse(text.trim()).map_err(|e| bad(&format!("does not parse: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(bad("is not an http or https URL with a host"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            "must be an origin only: the base URL's path is added to every request",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "must not carry credentials: the judge asks as anyone would",
        ));
    }
    Ok(url)
}

fn check_base_url(text: &str) -> Result<Url, ConfigError> {
    let err = |reason: &str| ConfigError::BaseUrl {
        url: text.to_string(),
        reason: reason.to_string(),
    };
    let mut url = Url::parse(text.trim()).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => err("is not absolute"),
        other => err(&format!("does not parse: {other}")),
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(err("is not an http or https URL with a host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(err("must not have a query or fragment"));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

fn default_state_dir(docroot: &Path) -> Result<PathBuf, ConfigError> {
    let name = docroot
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into());
    let parent = docroot.parent().ok_or_else(|| ConfigError::Directory {
        what: "state",
        path: docroot.to_path_buf(),
        reason:
            "the docroot is the filesystem root, so there is no directory beside it; give --state"
                .into(),
    })?;
    Ok(parent.join(format!("{name}.webcoop")))
}

/// Creates the directory if needed (mode 0700 when `private`, 0755 for what the web server
/// must read) and proves it writable with a probe file.
fn prepare_dir(what: &'static str, path: &Path, private: bool) -> Result<PathBuf, ConfigError> {
    let err = |reason: String| ConfigError::Directory {
        what,
        path: path.to_path_buf(),
        reason,
    };
    let created = if private {
        webcoop_daemon::private::create_private_dir(path)
    } else {
        webcoop_daemon::private::create_public_dir(path)
    };
    created.map_err(|e| err(format!("cannot be created: {e}")))?;
    let probe = path.join(format!(".webcoop-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| err(format!("is not writable: {e}")))?;
    let _ = std::fs::remove_file(&probe);
    path.canonicalize().map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(docroot: &Path, base: &str) -> Cli {
        Cli {
            docroot: Some(docroot.to_path_buf()),
            base_url: Some(base.into()),
            ..Cli::default()
        }
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes(" 3 kb "), Ok(3 << 10));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("5 parsecs").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }

    #[test]
    fn startup_errors_name_the_problem() {
        let tmp = tempfile::tempdir().unwrap();
        let site = tmp.path().join("site");
        std::fs::create_dir(&site).unwrap();

        let e = Config::from_cli(cli(&tmp.path().join("missing"), "https://e.org/")).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let e = Config::from_cli(cli(&file, "https://e.org/")).unwrap_err();
        assert!(e.to_string().contains("is not a directory"), "{e}");
        let e = Config::from_cli(cli(&site, "/relative/")).unwrap_err();
        assert!(e.to_string().contains("is not absolute"), "{e}");
        let e = Config::from_cli(cli(&site, "ftp://e.org/")).unwrap_err();
        assert!(e.to_string().contains("http or https"), "{e}");
        let e = Config::from_cli(Cli::default()).unwrap_err();
        assert!(e.to_string().contains("--docroot"), "{e}");

        let mut inside = cli(&site, "https://e.org/");
        inside.state = Some(site.join("state"));
        let e = Config::from_cli(inside).unwrap_err();
        assert!(e.to_string().contains("inside the docroot"), "{e}");

        let ok = Config::from_cli(cli(&site, "https://e.org/docs")).unwrap();
        assert_eq!(ok.base_url.as_str(), "https://e.org/docs/");
        assert_eq!(
            ok.state,
            tmp.path().canonicalize().unwrap().join("site.webcoop")
        );
        assert_eq!(ok.out, ok.docroot);
        assert_eq!(ok.versions, 5);
    }

    #[test]
    fn unwritable_state_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let site = tmp.path().join("site");
        std::fs::create_dir(&site).unwrap();
        let blocker = tmp.path().join("blocker");
        std::fs::write(&blocker, "a file where a directory should be").unwrap();
        let mut c = cli(&site, "https://e.org/");
        c.state = Some(blocker.join("state"));
        let e = Config::from_cli(c).unwrap_err();
        assert!(e.to_string().starts_with("state directory"), "{e}");
    }

    #[test]
    fn config_file_fills_what_the_command_line_leaves_out() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("www")).unwrap();
        let path = tmp.path().join("agent.toml");
        std::fs::write(
            &path,
            "docroot = \"www\"\nbase_url = \"https://file.example/\"\nexclude = [\"drafts/**\"]\nversions_budget = \"64MiB\"\nversions = 3\n",
        )
        .unwrap();
        let c = Config::from_cli(Cli {
            config: Some(path.clone()),
            versions: Some(7),
            ..Cli::default()
        })
        .unwrap();
        assert_eq!(c.docroot, tmp.path().join("www").canonicalize().unwrap());
        assert_eq!(c.base_url.as_str(), "https://file.example/");
        assert_eq!(c.exclude, ["drafts/**"]);
        assert_eq!(c.versions_budget, 64 << 20);
        assert_eq!(c.versions, 7, "the command line wins over the file");

        std::fs::write(
            &path,
            "docroot = \"www\"\nbase_url = \"https://e/\"\nbogus = 1\n",
        )
        .unwrap();
        let e = Config::from_cli(Cli {
            config: Some(path),
            ..Cli::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }
}
