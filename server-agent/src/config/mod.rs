//! The agent's settings: the command line, then `WEBCOOP_*` variables, then a TOML file
//! (`--config`), then the defaults, checked before anything runs so a mistake is one clear line.
//!
//! `options` holds every setting once (option, variable, file key, default); this module turns
//! them into the checked [`Config`] the agent runs with; `checks` tests each path, URL and
//! network; `error` names what was wrong.

mod checks;
mod error;
pub(crate) mod identity;
mod options;
mod origin;

pub use error::ConfigError;
pub use options::{AgentOptions, ByteSize};
pub use origin::{NotifySettings, OriginSettings, read_secret as read_notify_secret};

use checks::{
    check_base_url, check_docroot, check_server_url, cidrs, default_state_dir, prepare_dir,
};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;
use webcoop_daemon::layered::overlay;

/// Watches a docroot and publishes what changed: robots.rdf, sitemaps and a changes feed.
#[derive(Debug, Parser, Default)]
#[command(name = "webcoop-agent", version, about, long_about = None)]
pub struct Cli {
    /// Every setting of the agent: a flag, a `WEBCOOP_*` variable and a key of the file.
    #[command(flatten)]
    pub(crate) options: AgentOptions,
    /// A TOML file with any of these settings (keys as the long options, with `_`; relative
    /// paths in it are relative to the file).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Print the robots.txt lines that point crawlers at what the agent publishes, and exit.
    #[arg(long)]
    pub print_robots_lines: bool,
    /// Run time this many times faster (dates in what the agent publishes), for webcoop-bench.
    #[arg(long, value_name = "X")]
    pub clock_speed: Option<f64>,
    /// With --clock-speed: the moment (ms since the epoch) at which the scaled time equals the
    /// real time, so several processes agree [default: the start].
    #[arg(long, value_name = "MS", requires = "clock_speed")]
    pub clock_anchor: Option<i64>,
    /// Drop every kept version of these docroot paths (a secret published by mistake), then
    /// exit: no delta can reveal them afterwards.
    #[arg(long = "forget-versions", value_name = "PATH")]
    pub forget_versions: Vec<String>,
    /// What to do instead of publishing and watching.
    #[command(subcommand)]
    pub command: Option<AgentCommand>,
}

/// The agent's command line with each setting's default at the end of its help, as
/// [`AgentOptions::defaults`] has it.
pub fn help_with_defaults(cmd: clap::Command) -> clap::Command {
    webcoop_daemon::layered::help_with_defaults(cmd, &AgentOptions::defaults())
}

pub(crate) use crate::popularity::PopularitySettings;

/// The agent's one-off commands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum AgentCommand {
    /// Publish, then build a snapshot of the whole site (one .warc.zst and its CDXJ index
    /// under .well-known/webcoop/snapshot/), advertise it in robots.rdf, and exit.
    Snapshot,
    /// Check the agent's settings and the web server as the agent sees it: says what is right
    /// and what to change; exit status 0 only when a crawler can use everything the agent
    /// publishes.
    Check {
        /// Print the verdict on every file of the docroot (published, hidden, refused), as
        /// the agent would publish with, instead of judging a sample.
        #[arg(long)]
        files: bool,
    },
    /// Tell the running agent (at --listen) that pages changed, as a deploy hook or a cron job
    /// would: a WebSub publish to its ping endpoint, with the --notify-secret-file secret.
    Notify {
        /// URLs of the site's pages that changed.
        #[arg(required = true)]
        urls: Vec<String>,
    },
    /// Drop every kept version of these docroot paths (a secret published by mistake), so no
    /// delta can reveal them; the same as --forget-versions.
    Forget {
        /// Docroot-relative paths, as listed (`private/config.html`).
        #[arg(required = true)]
        paths: Vec<String>,
    },
}
/// Validated settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Origin mode: the site read from its web server, when set.
    pub origin: Option<OriginSettings>,
    /// The web server's access logs, followed to count what visitors read.
    pub(crate) access_logs: Vec<PathBuf>,
    /// Whether and how reads are published.
    pub(crate) popularity: PopularitySettings,
    /// Who may tell the agent of changes.
    pub notify: NotifySettings,
    /// The docroot, canonical.
    pub docroot: PathBuf,
    /// The docroot as given (a symlink not resolved), absolute.
    pub(crate) docroot_given: PathBuf,
    /// The docroot's public URL, ending with `/`.
    pub base_url: Url,
    /// The state directory (exists and is writable).
    pub state: PathBuf,
    /// The output directory (exists and is writable).
    pub(crate) out: PathBuf,
    /// Include globs (empty: everything).
    pub(crate) include: Vec<String>,
    /// Exclude globs.
    pub(crate) exclude: Vec<String>,
    /// Extensions published although web servers run or hide them.
    pub(crate) publish_ext: Vec<String>,
    /// Web server configuration files read besides what the server says of itself.
    pub(crate) server_config: Vec<PathBuf>,
    /// `--server-config none`: no configuration is read, as the operator said.
    pub(crate) server_config_none: bool,
    /// How the web server is asked about each file.
    pub judge: crate::judge::JudgeSettings,
    /// Time within which every file is judged again.
    pub(crate) judge_every: Duration,
    /// Most requests per second when judging again.
    pub(crate) judge_rate: f64,
    /// Server directives declared to serve every client alike.
    pub(crate) trust_directives: Vec<String>,
    /// Publish once and exit.
    pub once: bool,
    /// Whether the site's robots.txt is ignored for the listing.
    pub(crate) ignore_robots_txt: bool,
    /// Replace documents the agent did not write.
    pub(crate) replace_existing: bool,
    /// Versions kept per text resource.
    pub(crate) versions: usize,
    /// Disk budget of the versions.
    pub(crate) versions_budget: u64,
    /// Quiet time before publishing.
    pub(crate) debounce: Duration,
    /// Time between safety rescans.
    pub(crate) rescan_interval: Duration,
    /// Entries of the static changes feed.
    pub(crate) feed_entries: usize,
    /// Changes kept in the log.
    pub(crate) retain_changes: usize,
    /// URLs per sitemap part.
    pub(crate) sitemap_part_urls: usize,
    /// The service, when it runs.
    pub service: Option<ServiceConfig>,
    /// IndexNow pings, when configured.
    pub indexnow: Option<IndexNowConfig>,
    /// The console, when it is served.
    pub console: Option<ConsoleSettings>,
    /// Snapshots of the whole site, when they are published.
    pub(crate) snapshots: Option<SnapshotSettings>,
    /// Whether the ResourceSync documents are published.
    pub(crate) resourcesync: bool,
    /// What the site's content may be used for, as the webmaster states it.
    pub(crate) content_usage: Option<webcoop_protocol::usage::Prefs>,
    /// Whether robots.rdf states that it lists every page the site serves.
    pub(crate) complete_listing: bool,
}

/// When snapshots of the whole site are rebuilt, and how hard they are compressed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SnapshotSettings {
    /// Share of the site's bytes changed since the last snapshot that calls for a new one.
    pub(crate) share: f64,
    /// Longest time a snapshot stays when anything changed.
    pub(crate) every: Duration,
    /// zstd level.
    pub(crate) level: i32,
    /// Whether a ResourceSync Resource Dump (a ZIP package) is built beside each snapshot.
    pub(crate) resource_dump: bool,
}

/// Where the console listens and the token that guards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSettings {
    /// The address.
    pub(crate) addr: std::net::SocketAddr,
    /// The token every request must carry (required off loopback).
    pub(crate) token: Option<String>,
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
    pub(crate) allow_callback_nets: Vec<ipnet::IpNet>,
    /// How long the hub gathers changes into one delivery.
    pub(crate) hub_window: Duration,
    /// How long a subscriber may keep failing before it is dropped.
    pub(crate) hub_drop_after: Duration,
    /// Time limit of a delivery or verification of intent.
    pub delivery_timeout: Duration,
    /// Most subscriptions the hub holds.
    pub(crate) max_subscriptions: usize,
    /// Proxies whose `X-Forwarded-For` the hub believes.
    pub(crate) trusted_proxies: Vec<ipnet::IpNet>,
    /// The policy on who is asking (Web Bot Auth).
    pub identity: identity::IdentityPolicy,
}

/// The webmaster's usage preferences: every term known, or none taken.
fn content_usage(
    text: Option<&str>,
) -> Result<Option<webcoop_protocol::usage::Prefs>, ConfigError> {
    let Some(text) = text else { return Ok(None) };
    let mut unknown = Vec::new();
    let prefs = webcoop_protocol::usage::Prefs::parse_aipref(text, &mut unknown)
        .map_err(|e| ConfigError::Value(format!("--content-usage {text:?}: {e}")))?;
    if let Some(term) = unknown.first() {
        return Err(ConfigError::Value(format!(
            "--content-usage {text:?}: unknown term {term:?} (search, ai-use, train-ai, train-genai, bots)"
        )));
    }
    Ok(Some(prefs))
}

/// The identity policy from its options: signers must be origins, rates above zero.
fn identity_policy(
    subscribers: Option<identity::Subscribers>,
    signers: Vec<String>,
    rate_verified: Option<u32>,
    rate_unverified: Option<u32>,
) -> Result<identity::IdentityPolicy, ConfigError> {
    let signers = signers
        .iter()
        .map(|s| {
            let url = Url::parse(s)
                .map_err(|e| ConfigError::Value(format!("--hub-signer {s:?}: {e}")))?;
            if !matches!(url.scheme(), "https" | "http")
                || !matches!(url.path(), "" | "/")
                || url.query().is_some()
            {
                return Err(ConfigError::Value(format!(
                    "--hub-signer {s:?} is not an origin (https://HOST[:PORT])"
                )));
            }
            Ok(url)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rate = |name: &str, v: Option<u32>| match v {
        None => Ok(None),
        Some(n) => std::num::NonZeroU32::new(n).map(Some).ok_or_else(|| {
            ConfigError::Value(format!(
                "--{name} 0: a rate is at least 1 a minute (leave it unset for none)"
            ))
        }),
    };
    Ok(identity::IdentityPolicy {
        subscribers: subscribers.unwrap_or_default(),
        signers,
        rate_verified: rate("rate-verified", rate_verified)?,
        rate_unverified: rate("rate-unverified", rate_unverified)?,
    })
}

/// Settings of IndexNow pings.
#[derive(Debug, Clone)]
pub struct IndexNowConfig {
    /// Where to post.
    pub endpoint: Url,
    /// The site's key.
    pub(crate) key: String,
    /// Networks the endpoint may be in although not public (`--allow-callback-net`).
    pub(crate) allow_nets: Vec<ipnet::IpNet>,
}

/// The public URL prefix of the service for a site at `base_url`.
pub(crate) fn default_public_url(base_url: &Url) -> Url {
    base_url
        .join(".well-known/webcoop/")
        .unwrap_or_else(|_| base_url.clone())
}

/// The value of a setting that [`AgentOptions::defaults`] gives, or an error naming it.
fn given<T>(value: Option<T>, key: &str) -> Result<T, ConfigError> {
    value.ok_or_else(|| ConfigError::Value(format!("{key} has no value and no default")))
}

impl Cli {
    /// The settings of the command line and the environment over the `--config` file's.
    pub fn merged(&self) -> Result<AgentOptions, ConfigError> {
        let file = match &self.config {
            Some(path) => options::read_file(path)?,
            None => AgentOptions::default(),
        };
        layered(&self.options, &file)
    }
}

/// `over`'s settings, each unset one taken from `under`.
fn layered(over: &AgentOptions, under: &AgentOptions) -> Result<AgentOptions, ConfigError> {
    overlay(over, under).map_err(|e| ConfigError::Value(format!("the settings: {e}")))
}

impl Config {
    /// Checks the settings of a command line with its `--config` file under it.
    pub fn from_cli(cli: Cli) -> Result<Config, ConfigError> {
        Config::from_options(cli.merged()?)
    }

    /// Checks every path, URL, network and number of `o`, each unset one taken from
    /// [`AgentOptions::defaults`].
    pub fn from_options(o: AgentOptions) -> Result<Config, ConfigError> {
        let o = layered(&o, &AgentOptions::defaults())?;
        if o.origin.is_none() && o.docroot.is_none() {
            return Err(ConfigError::Missing(
                "the docroot",
                "docroot",
                "DOCROOT",
                "docroot",
            ));
        }
        let base_url = o.base_url.clone().ok_or(ConfigError::Missing(
            "the base URL",
            "base-url",
            "BASE_URL",
            "base_url",
        ))?;
        let base_url = check_base_url(&base_url)?;
        let origin = origin::settings(&o, &base_url)?;
        let notify = origin::notify_settings(&o)?;
        let given_docroot = o.docroot.clone();
        let (docroot, state) = match (&origin, o.docroot) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Value(
                    "--origin reads the site from its web server, --docroot from its files: choose one".into(),
                ));
            }
            (Some(_), None) => {
                let state = o.state.ok_or(ConfigError::Missing(
                    "the state directory (origin mode has no docroot to put it beside)",
                    "state",
                    "STATE",
                    "state",
                ))?;
                let state = prepare_dir("state", &state, true)?;
                // The service reads kept versions; a private empty directory stands in for
                // the docroot it would otherwise read files from.
                let empty = prepare_dir("origin", &state.join("origin-docroot"), true)?;
                (check_docroot(&empty)?, state)
            }
            (None, docroot) => {
                let docroot = docroot.ok_or(ConfigError::Missing(
                    "the docroot",
                    "docroot",
                    "DOCROOT",
                    "docroot",
                ))?;
                let docroot = check_docroot(&docroot)?;
                let state = match o.state {
                    Some(s) => s,
                    None => default_state_dir(&docroot)?,
                };
                (docroot, prepare_dir("state", &state, true)?)
            }
        };
        if origin.is_some() && o.out.is_none() {
            return Err(ConfigError::Missing(
                "the output directory (origin mode: a directory the web server serves at the base URL)",
                "out",
                "OUT",
                "out",
            ));
        }
        if state.starts_with(&docroot) && origin.is_none() {
            return Err(ConfigError::Directory {
                what: "state",
                path: state,
                reason: "is inside the docroot, where the web server would publish it".into(),
            });
        }
        let out = prepare_dir("output", &o.out.unwrap_or_else(|| docroot.clone()), false)?;

        let versions_budget = given(o.versions_budget, "versions_budget")?.0;
        let debounce_ms = given(o.debounce_ms, "debounce_ms")?;
        if debounce_ms > 60_000 {
            return Err(ConfigError::Value(format!(
                "debounce of {debounce_ms} ms is over a minute; changes must publish within a second or so"
            )));
        }
        let feed_entries = given(o.feed_entries, "feed_entries")?;
        let retain_changes = given(o.retain_changes, "retain_changes")?;
        if feed_entries == 0 || retain_changes < feed_entries {
            return Err(ConfigError::Value(format!(
                "feed entries ({feed_entries}) must be at least 1 and at most the retained changes ({retain_changes})"
            )));
        }
        let sitemap_part_urls = given(o.sitemap_part_urls, "sitemap_part_urls")?;
        if !(1..=50_000).contains(&sitemap_part_urls) {
            return Err(ConfigError::Value(format!(
                "sitemap parts hold 1 to 50,000 URLs (the protocol's limit), not {sitemap_part_urls}"
            )));
        }
        // Whom the agent may call in private networks: hub subscribers, and the IndexNow
        // endpoint, which posts with or without --listen.
        let allow_callback_nets = cidrs(
            "--allow-callback-net",
            &o.allow_callback_net.unwrap_or_default(),
        )?;
        let service = match o.listen {
            None => None,
            Some(listen) => {
                let listen = listen.parse().map_err(|e| {
                    ConfigError::Value(format!(
                        "--listen {listen:?}: {e} (expected an address such as 127.0.0.1:8081)"
                    ))
                })?;
                let public_url = match o.public_url {
                    Some(u) => check_base_url(&u)?,
                    None => default_public_url(&base_url),
                };
                let allow_callback_nets = allow_callback_nets.clone();
                let trusted_proxies =
                    cidrs("--trusted-proxy", &o.trusted_proxy.unwrap_or_default())?;
                Some(ServiceConfig {
                    listen,
                    public_url,
                    allow_callback_nets,
                    hub_window: Duration::from_millis(given(o.hub_window_ms, "hub_window_ms")?),
                    hub_drop_after: Duration::from_secs(given(o.hub_drop_after, "hub_drop_after")?),
                    delivery_timeout: Duration::from_secs(10),
                    max_subscriptions: given(o.hub_max_subscriptions, "hub_max_subscriptions")?,
                    trusted_proxies,
                    identity: identity_policy(
                        o.hub_subscribers,
                        o.hub_signer.unwrap_or_default(),
                        o.rate_verified,
                        o.rate_unverified,
                    )?,
                })
            }
        };
        let indexnow = match (o.indexnow_endpoint, o.indexnow_key) {
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
                Some(IndexNowConfig {
                    endpoint,
                    key,
                    allow_nets: allow_callback_nets,
                })
            }
            (None, None) => None,
            _ => {
                return Err(ConfigError::Value(
                    "IndexNow needs both --indexnow-endpoint and --indexnow-key".into(),
                ));
            }
        };
        let console = match o.console {
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
                let token = match o.console_token_file {
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
        let popularity = PopularitySettings {
            publish: given(o.publish_popularity, "publish_popularity")?,
            half_life: Duration::from_secs(
                given(o.popularity_half_life, "popularity_half_life")?.clamp(3600, 365 * 86_400),
            ),
            min_visitors: given(o.popularity_min_visitors, "popularity_min_visitors")?.max(1),
        };
        if popularity.publish && o.access_log.as_ref().is_none_or(Vec::is_empty) {
            return Err(ConfigError::Value(
                "--publish-popularity publishes what the access log shows: give --access-log FILE"
                    .into(),
            ));
        }
        let server_url_given = o.server_url.is_some();
        let server_url = match o.server_url {
            Some(u) => check_server_url(&u)?,
            None => Url::parse(&base_url.origin().ascii_serialization()).map_err(|e| {
                ConfigError::Value(format!("the base URL's origin is not a URL: {e}"))
            })?,
        };
        let judge_source = match o.judge_source {
            None => None,
            Some(a) => Some(a.trim().parse::<std::net::IpAddr>().map_err(|e| {
                ConfigError::Value(format!(
                    "--judge-source {a:?}: {e} (expected an address of this machine such as 127.41.7.9)"
                ))
            })?),
        };
        let mut server_config = o.server_config.unwrap_or_default();
        let server_config_none = server_config.iter().any(|p| p.as_os_str() == "none");
        if server_config_none && server_config.len() > 1 {
            return Err(ConfigError::Value(
                "--server-config none reads no configuration: it cannot be given with files".into(),
            ));
        }
        if server_config_none {
            server_config.clear();
        }
        let docroot_given = match &given_docroot {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => std::env::current_dir()
                .map(|c| c.join(d))
                .unwrap_or_else(|_| docroot.clone()),
            None => docroot.clone(),
        };
        let connections = given(o.judge_connections, "judge_connections")?;
        if !(1..=64).contains(&connections) {
            return Err(ConfigError::Value(format!(
                "--judge-connections {connections}: between 1 and 64"
            )));
        }
        let judge_every = given(o.judge_every, "judge_every")?;
        if !(60..=30 * 86_400).contains(&judge_every) {
            return Err(ConfigError::Value(format!(
                "--judge-every {judge_every}: between 60 s and 30 days"
            )));
        }
        let judge_rate = given(o.judge_rate, "judge_rate")?;
        if !(judge_rate.is_finite() && (0.1..=100_000.0).contains(&judge_rate)) {
            return Err(ConfigError::Value(format!(
                "--judge-rate {judge_rate}: between 0.1 and 100000 requests per second"
            )));
        }
        let trust_directives: Vec<String> = o
            .trust_directive
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.trim().to_ascii_lowercase())
            .filter(|d| !d.is_empty())
            .collect();
        let snapshots = if given(o.snapshots, "snapshots")? {
            let share = given(o.snapshot_share, "snapshot_share")?;
            if !(share.is_finite() && (0.0..=1.0).contains(&share)) {
                return Err(ConfigError::Value(format!(
                    "--snapshot-share {share}: a share between 0 and 1"
                )));
            }
            let every = given(o.snapshot_every, "snapshot_every")?;
            if !(60..=365 * 86_400).contains(&every) {
                return Err(ConfigError::Value(format!(
                    "--snapshot-every {every}: between 60 s and a year"
                )));
            }
            let level = given(o.snapshot_level, "snapshot_level")?;
            if !(1..=19).contains(&level) {
                return Err(ConfigError::Value(format!(
                    "--snapshot-level {level}: between 1 and 19"
                )));
            }
            Some(SnapshotSettings {
                share,
                every: Duration::from_secs(every),
                level,
                resource_dump: given(o.resource_dump, "resource_dump")?,
            })
        } else {
            None
        };
        let once = given(o.once, "once")?;
        if (service.is_some() || console.is_some()) && once {
            return Err(ConfigError::Value(
                "--once publishes and exits, --listen and --console serve: choose one".into(),
            ));
        }
        Ok(Config {
            origin,
            notify,
            docroot,
            docroot_given,
            base_url,
            state,
            out,
            include: o.include.unwrap_or_default(),
            exclude: o.exclude.unwrap_or_default(),
            publish_ext: o.publish_ext.unwrap_or_default(),
            access_logs: o.access_log.clone().unwrap_or_default(),
            popularity,
            server_config,
            server_config_none,
            judge: crate::judge::JudgeSettings {
                server_url,
                server_url_given,
                source: judge_source,
                connections,
                timeout: Duration::from_secs(10),
            },
            judge_every: Duration::from_secs(judge_every),
            judge_rate,
            trust_directives,
            once,
            ignore_robots_txt: given(o.ignore_robots_txt, "ignore_robots_txt")?,
            replace_existing: given(o.replace_existing, "replace_existing")?,
            versions: given(o.versions, "versions")?,
            versions_budget,
            debounce: Duration::from_millis(debounce_ms),
            rescan_interval: Duration::from_secs(
                given(o.rescan_interval, "rescan_interval")?.max(1),
            ),
            feed_entries,
            retain_changes,
            sitemap_part_urls,
            service,
            indexnow,
            console,
            snapshots,
            resourcesync: given(o.resourcesync, "resourcesync")?,
            content_usage: content_usage(o.content_usage.as_deref())?,
            complete_listing: given(o.complete_listing, "complete_listing")?,
        })
    }
}

#[cfg(test)]
mod tests;
