//! The agent's settings: the command line, then `WEBCOOP_*` variables, then a TOML file
//! (`--config`), then the defaults, checked before anything runs so a mistake is one clear line.
//!
//! `options` holds every setting once (option, variable, file key, default); this module turns
//! them into the checked [`Config`] the agent runs with; `checks` tests each path, URL and
//! network; `error` names what was wrong.

mod checks;
mod error;
pub(crate) mod identity;
mod judging;
mod options;
mod origin;
mod places;
mod served;

pub use error::ConfigError;
pub use options::{AgentOptions, ByteSize};
pub use origin::{NotifySettings, OriginSettings, read_secret as read_notify_secret};

pub(crate) use judging::SnapshotSettings;
pub(crate) use served::{ConsoleSettings, IndexNowConfig, ServiceConfig};

use checks::{check_base_url, cidrs, given};
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
        let places = places::places(&o, origin.is_some())?;
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
        let nets = o.allow_callback_net.clone().unwrap_or_default();
        let allow_callback_nets = cidrs("--allow-callback-net", &nets)?;
        let service = served::service(&o, &base_url, &allow_callback_nets)?;
        let console = served::console(&o, service.as_ref())?;
        let popularity = popularity(&o)?;
        let (judge, judge_every, judge_rate) = judging::judge(&o, &base_url)?;
        let (server_config, server_config_none) = judging::server_config(&o)?;
        let indexnow = served::indexnow(&o, allow_callback_nets)?;
        let snapshots = judging::snapshots(&o)?;
        let once = given(o.once, "once")?;
        if (service.is_some() || console.is_some()) && once {
            return Err(ConfigError::Value(
                "--once publishes and exits, --listen and --console serve: choose one".into(),
            ));
        }
        Ok(Config {
            notify: origin::notify_settings(&o)?,
            origin,
            docroot: places.docroot,
            docroot_given: places.docroot_given,
            base_url,
            state: places.state,
            out: places.out,
            include: o.include.unwrap_or_default(),
            exclude: o.exclude.unwrap_or_default(),
            publish_ext: o.publish_ext.unwrap_or_default(),
            access_logs: o.access_log.clone().unwrap_or_default(),
            popularity,
            server_config,
            server_config_none,
            judge,
            judge_every,
            judge_rate,
            trust_directives: o
                .trust_directive
                .unwrap_or_default()
                .into_iter()
                .map(|d| d.trim().to_ascii_lowercase())
                .filter(|d| !d.is_empty())
                .collect(),
            once,
            ignore_robots_txt: given(o.ignore_robots_txt, "ignore_robots_txt")?,
            replace_existing: given(o.replace_existing, "replace_existing")?,
            versions: given(o.versions, "versions")?,
            versions_budget: given(o.versions_budget, "versions_budget")?.0,
            debounce: Duration::from_millis(debounce_ms),
            rescan_interval: Duration::from_secs(
                given(o.rescan_interval, "rescan_interval")?.max(1),
            ),
            feed_entries,
            retain_changes,
            sitemap_part_urls,
            indexnow,
            service,
            console,
            snapshots,
            resourcesync: given(o.resourcesync, "resourcesync")?,
            content_usage: content_usage(o.content_usage.as_deref())?,
            complete_listing: given(o.complete_listing, "complete_listing")?,
        })
    }
}

/// How reads are counted and published: with an access log to count them from.
fn popularity(o: &AgentOptions) -> Result<PopularitySettings, ConfigError> {
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
    Ok(popularity)
}

#[cfg(test)]
mod tests;
