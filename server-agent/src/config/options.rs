//! Every setting of the agent, stated once: [`AgentOptions`], flattened into the command line
//! and read from the `--config` file, with the defaults `--help` shows.

use super::checks::parse_bytes;
use super::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Subscriptions the hub holds at most, unless told otherwise.
const DEFAULT_MAX_SUBSCRIPTIONS: usize = 10_000;

/// Every setting of the agent, each stated once: the field is the option (`--base-url`), the
/// key of the `--config` file (`base_url`) and, by the rule of both binaries, the variable
/// `WEBCOOP_BASE_URL`; its doc comment is the help of all three. Unset is `None`: the command
/// line, then the environment, then the file, then [`AgentOptions::defaults`], the one place a
/// default is written, which `--help` shows.
#[derive(Debug, Clone, Default, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct AgentOptions {
    /// The directory the web server serves.
    #[arg(long, value_name = "DIR")]
    pub docroot: Option<PathBuf>,
    /// The public URL of the docroot, e.g. https://www.example.org/.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Where the agent keeps its inventory, change log and versions (unset: DOCROOT.webcoop
    /// beside the docroot, never inside it).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Where the published documents go (unset: the docroot).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Publish only paths matching one of these globs (relative to the docroot, `**` allowed).
    #[arg(long, value_delimiter = ',', value_name = "GLOB")]
    pub include: Option<Vec<String>>,
    /// Never publish paths matching these globs.
    #[arg(long, value_delimiter = ',', value_name = "GLOB")]
    pub exclude: Option<Vec<String>>,
    /// Publish once and exit (for cron) instead of watching.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub once: Option<bool>,
    /// List paths the site's own robots.txt disallows (by default they are left out).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub ignore_robots_txt: Option<bool>,
    /// Replace a robots.rdf or sitemap.xml in the output directory that the agent did not write.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub replace_existing: Option<bool>,
    /// Versions kept per text resource, for deltas.
    #[arg(long, value_name = "N")]
    pub versions: Option<usize>,
    /// Disk budget of the kept versions, e.g. 512MiB or 2G.
    #[arg(long, value_name = "SIZE")]
    pub versions_budget: Option<ByteSize>,
    /// Quiet time after a change before publishing, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub debounce_ms: Option<u64>,
    /// Seconds between full rescans that catch what the watcher missed.
    #[arg(long, value_name = "SECS")]
    pub rescan_interval: Option<u64>,
    /// Changes listed in the static changes feed.
    #[arg(long, value_name = "N")]
    pub feed_entries: Option<usize>,
    /// Changes kept in the change log.
    #[arg(long, value_name = "N")]
    pub retain_changes: Option<usize>,
    /// Entries per part, on average, of robots.rdf, the sitemaps and the resource list once the
    /// site holds more than five parts' worth (at most 50000).
    #[arg(long, value_name = "N")]
    pub sitemap_part_urls: Option<usize>,
    /// Serve the changes, delta, hub and metrics endpoints on this address (e.g.
    /// 127.0.0.1:8081), for the web server to proxy under /.well-known/webcoop/.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Serve the webmaster's console on this address (never the public listener; loopback
    /// unless a token guards it), e.g. 127.0.0.1:8082.
    #[arg(long, value_name = "ADDR")]
    pub console: Option<String>,
    /// File whose first line is the console's token (required off loopback).
    #[arg(long, value_name = "FILE")]
    pub console_token_file: Option<PathBuf>,
    /// The public URL of those endpoints (unset: BASE_URL/.well-known/webcoop/).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Let the hub call back subscribers, and IndexNow pings reach their endpoint, in this
    /// network although it is loopback, private or link-local (repeatable; e.g. 10.0.0.0/8).
    #[arg(long, value_delimiter = ',', value_name = "CIDR")]
    pub allow_callback_net: Option<Vec<String>>,
    /// How long the hub gathers changes into one delivery, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub hub_window_ms: Option<u64>,
    /// Seconds a subscriber may keep failing before its subscription is dropped.
    #[arg(long, value_name = "SECS")]
    pub hub_drop_after: Option<u64>,
    /// Most subscriptions the hub holds.
    #[arg(long, value_name = "N")]
    pub hub_max_subscriptions: Option<usize>,
    /// Post changed URLs to this IndexNow endpoint (e.g. https://api.indexnow.org/indexnow).
    #[arg(long, value_name = "URL")]
    pub indexnow_endpoint: Option<String>,
    /// The site's IndexNow key (8 to 128 letters, digits or dashes); the agent publishes it as
    /// KEY.txt.
    #[arg(long, value_name = "KEY")]
    pub indexnow_key: Option<String>,
    /// Publish files with this extension although web servers run or hide it by default
    /// (`py`, `zip`, `log`...; repeat or separate with commas).
    #[arg(long, value_delimiter = ',', value_name = "EXT")]
    pub publish_ext: Option<Vec<String>>,
    /// More web server configuration files to read (nginx or Apache, includes followed),
    /// for set-ups where the server cannot be asked for its own (by default the agent reads
    /// what the server says: `nginx -T`, Apache's DUMP_INCLUDES); `none` to read none, which
    /// the agent then says at every start. Repeatable.
    #[arg(long, value_delimiter = ',', value_name = "FILE")]
    pub server_config: Option<Vec<PathBuf>>,
    /// Where the agent asks the web server for each file before publishing it, for a server
    /// whose configuration the agent cannot read (unset: where a stranger's request for the
    /// base URL lands, found from the server's configuration, or the base URL's origin).
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,
    /// The address the judge asks from (unset: one of 127.0.0.0/8 picked at random for this
    /// installation and kept in the state directory; never 127.0.0.1, which servers trust).
    #[arg(long, value_name = "ADDR")]
    pub judge_source: Option<String>,
    /// Requests to the web server at once while judging files.
    #[arg(long, value_name = "N")]
    pub judge_connections: Option<usize>,
    /// Seconds within which every file is judged again.
    #[arg(long, value_name = "SECS")]
    pub judge_every: Option<u64>,
    /// Most requests per second when judging files again (after a change of the server's
    /// configuration, or on the rolling schedule).
    #[arg(long, value_name = "PER_SEC")]
    pub judge_rate: Option<f64>,
    /// A web server directive the agent does not know, declared to serve every client alike
    /// (repeatable); without it, a location using one is not published.
    #[arg(long, value_delimiter = ',', value_name = "DIRECTIVE")]
    pub trust_directive: Option<Vec<String>>,
    /// Publish a snapshot of the whole site (one .warc.zst a crawler fetches in one request
    /// on its first visit) under .well-known/webcoop/snapshot/.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub snapshots: Option<bool>,
    /// Publish the ResourceSync documents (ANSI/NISO Z39.99): a Source Description at
    /// /.well-known/resourcesync naming a Capability List, a Resource List and a Change List.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub resourcesync: Option<bool>,
    /// With snapshots and ResourceSync: build a Resource Dump beside each snapshot (the same
    /// files in a ZIP package with its manifest, for ResourceSync clients; doubles the disk
    /// the snapshots take).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub resource_dump: Option<bool>,
    /// Build a new snapshot once the files changed since the last one hold this share of the
    /// site's bytes (0 to 1).
    #[arg(long, value_name = "SHARE")]
    pub snapshot_share: Option<f64>,
    /// Build a new snapshot at least this often when anything changed, seconds.
    #[arg(long, value_name = "SECS")]
    pub snapshot_every: Option<u64>,
    /// zstd level of snapshots (1 to 19; higher is smaller and slower to build).
    #[arg(long, value_name = "N")]
    pub snapshot_level: Option<i32>,
    /// Who may subscribe to the hub: any (WebSub as specified) or verified (crawlers whose
    /// request carries a Web Bot Auth signature that verifies against their key directory).
    #[arg(long, value_enum, value_name = "any|verified")]
    pub hub_subscribers: Option<super::identity::Subscribers>,
    /// Only this crawler may subscribe (repeatable): the origin publishing its key directory,
    /// as its Signature-Agent names it (e.g. https://crawler.example).
    #[arg(long, value_delimiter = ',', value_name = "URL")]
    pub hub_signer: Option<Vec<String>>,
    /// Requests per minute each verified crawler may make to changes, deltas and (through
    /// the web server's auth_request) snapshots [default: no limit].
    #[arg(long, value_name = "PER_MIN")]
    pub rate_verified: Option<u32>,
    /// Requests per minute each address without a verified signature may make there
    /// [default: no limit].
    #[arg(long, value_name = "PER_MIN")]
    pub rate_unverified: Option<u32>,
    /// What the site's content may be used for, in the aipref vocabulary (e.g.
    /// "search=y, train-ai=n"): carried in robots.rdf, the changes feed and snapshots, and
    /// compared with robots.txt by `check`.
    #[arg(long, value_name = "PREFS")]
    pub content_usage: Option<String>,
    /// State in robots.rdf that the listing names every page the site serves (`wc:complete`):
    /// for a docroot of static files whose web server runs nothing else there (no scripts,
    /// rewrites or proxies). A crawler may then take a link to an unlisted URL as a claim that
    /// nothing is there, checking a few. Not with --origin.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub complete_listing: Option<bool>,
    /// Read the site from this web server instead of watching a docroot (origin mode, for a
    /// generated site such as WordPress): e.g. http://127.0.0.1:80, asked with the base URL's
    /// Host. Needs --state and --out, and no --docroot.
    #[arg(long, value_name = "URL")]
    pub origin: Option<String>,
    /// In origin mode: pages to publish besides those the site's sitemaps name (repeatable).
    #[arg(long, value_delimiter = ',', value_name = "URL")]
    pub seed: Option<Vec<String>>,
    /// The web server's access log (combined or common format, repeatable): what visitors
    /// read is counted from it (each page's distinct visitors, crawlers left out), and in
    /// origin mode its pages served with 200 to anonymous GETs are taken as the site's.
    #[arg(long, value_delimiter = ',', value_name = "FILE")]
    pub access_log: Option<Vec<PathBuf>>,
    /// Publish each page's share of reads (`wc:popularity` in robots.rdf and the changes feed,
    /// and the sitemap's `priority`), rounded to a power of two, for pages read by at least
    /// --popularity-min-visitors distinct visitors; needs --access-log.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub publish_popularity: Option<bool>,
    /// Half-life of a read, seconds: older reads count for less.
    #[arg(long, value_name = "SECS")]
    pub popularity_half_life: Option<u64>,
    /// Distinct visitors a page needs before its figure is published.
    #[arg(long, value_name = "N")]
    pub popularity_min_visitors: Option<u32>,
    /// In origin mode: a query parameter that may name a page (repeatable; e.g. `page` for
    /// `/news/?page=2`); a URL with any other parameter (a session, a tracker) is never
    /// published [default: none, no page has a query].
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub allow_query: Option<Vec<String>>,
    /// In origin mode: most requests per second to the origin (one at a time).
    #[arg(long, value_name = "PER_SEC")]
    pub origin_rate: Option<f64>,
    /// In origin mode: shortest time between two checks of one page, seconds.
    #[arg(long, value_name = "SECS")]
    pub revalidate_min: Option<u64>,
    /// In origin mode: longest time between two checks of one page, seconds.
    #[arg(long, value_name = "SECS")]
    pub revalidate_max: Option<u64>,
    /// In origin mode: seconds between two readings of the site's sitemaps (a ping reads them
    /// at once).
    #[arg(long, value_name = "SECS")]
    pub discover_every: Option<u64>,
    /// In origin mode: most pages the agent keeps track of.
    #[arg(long, value_name = "N")]
    pub origin_max_urls: Option<usize>,
    /// Who may tell the agent of changes (XML-RPC weblogUpdates pings, WebSub publish) by
    /// address (repeatable CIDR, e.g. 127.0.0.1/32) [default: nobody by address].
    #[arg(long, value_delimiter = ',', value_name = "CIDR")]
    pub notify_from: Option<Vec<String>>,
    /// File whose first line is the secret that lets a ping in from anywhere (as
    /// `Authorization: Bearer SECRET` or `?key=SECRET`); `notify` sends it.
    #[arg(long, value_name = "FILE")]
    pub notify_secret_file: Option<PathBuf>,
    /// A reverse proxy whose X-Forwarded-For the hub believes for its rate limits (repeatable;
    /// e.g. 127.0.0.1/32 when nginx on this machine proxies the agent).
    #[arg(long, value_delimiter = ',', value_name = "CIDR")]
    pub trusted_proxy: Option<Vec<String>>,
}

impl AgentOptions {
    /// Every setting's default, taken from the component it belongs to where it has one: the
    /// one place a default is written, which `--help` shows. Settings whose default follows
    /// from another (the state beside the docroot, the public URL under the base URL) stay
    /// unset here and say so in their help.
    pub(crate) fn defaults() -> AgentOptions {
        AgentOptions {
            once: Some(false),
            ignore_robots_txt: Some(false),
            publish_popularity: Some(false),
            popularity_half_life: Some(7 * 86_400),
            popularity_min_visitors: Some(10),
            replace_existing: Some(false),
            versions: Some(5),
            versions_budget: Some(ByteSize(1 << 30)),
            debounce_ms: Some(100),
            rescan_interval: Some(3600),
            feed_entries: Some(500),
            retain_changes: Some(100_000),
            sitemap_part_urls: Some(crate::publish::sitemaps::DEFAULT_PART_URLS),
            hub_window_ms: Some(1000),
            hub_drop_after: Some(86_400),
            hub_max_subscriptions: Some(DEFAULT_MAX_SUBSCRIPTIONS),
            judge_connections: Some(4),
            judge_every: Some(86_400),
            judge_rate: Some(200.0),
            snapshots: Some(true),
            resourcesync: Some(true),
            complete_listing: Some(false),
            resource_dump: Some(false),
            snapshot_share: Some(0.1),
            snapshot_every: Some(86_400),
            snapshot_level: Some(crate::snapshot::DEFAULT_LEVEL),
            origin_rate: Some(2.0),
            revalidate_min: Some(300),
            revalidate_max: Some(86_400),
            discover_every: Some(600),
            origin_max_urls: Some(100_000),
            ..AgentOptions::default()
        }
    }
}

/// A byte count written as a number or with a unit (`512MiB`, `2G`), shown with the largest
/// unit that divides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl std::str::FromStr for ByteSize {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        parse_bytes(text).map(ByteSize)
    }
}

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if self.0 != 0 && self.0.is_multiple_of(1u64 << shift) {
                return write!(f, "{}{unit}", self.0 >> shift);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(u64),
            Text(String),
        }
        match Written::deserialize(d)? {
            Written::Number(n) => Ok(ByteSize(n)),
            Written::Text(t) => parse_bytes(&t)
                .map(ByteSize)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// Reads a TOML config file; relative paths in it are relative to the file, as in the
/// crawler's, so a file read from /etc means the same wherever the agent is started.
pub(super) fn read_file(path: &Path) -> Result<AgentOptions, ConfigError> {
    let err = |reason: String| ConfigError::File {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let mut file: AgentOptions = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let beside = |p: &mut PathBuf| {
        if p.is_relative() {
            *p = dir.join(&*p);
        }
    };
    for p in [
        &mut file.docroot,
        &mut file.state,
        &mut file.out,
        &mut file.console_token_file,
        &mut file.notify_secret_file,
    ]
    .into_iter()
    .flatten()
    {
        beside(p);
    }
    file.server_config
        .iter_mut()
        .flatten()
        .filter(|p| p.as_os_str() != "none")
        .for_each(beside);
    file.access_log.iter_mut().flatten().for_each(beside);
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_show_with_units() {
        assert_eq!("512MiB".parse(), Ok(ByteSize(512 << 20)));
        assert_eq!(ByteSize(1 << 30).to_string(), "1GiB");
        assert_eq!(ByteSize(1536).to_string(), "1536");
        assert_eq!(ByteSize(3 << 20).to_string(), "3MiB");
        let o: AgentOptions = toml::from_str("versions_budget = 1024").unwrap();
        assert_eq!(o.versions_budget, Some(ByteSize(1024)));
        let o: AgentOptions = toml::from_str("versions_budget = \"2G\"").unwrap();
        assert_eq!(o.versions_budget, Some(ByteSize(2 << 30)));
        let e = toml::from_str::<AgentOptions>("versions_budget = \"2 parsecs\"").unwrap_err();
        assert!(e.to_string().contains("parsecs"), "{e}");
    }

    #[test]
    fn every_setting_is_a_flag_and_a_file_key() {
        let cmd = <super::super::Cli as clap::CommandFactory>::command();
        let flags: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| l.replace('-', "_")))
            .collect();
        let keys = webcoop_daemon::layered::as_map(&AgentOptions::default());
        for key in keys.keys() {
            assert!(flags.contains(key), "{key} has no option");
        }
    }
}
