//! The settings of origin mode (a site read from its web server) and of who may tell the agent
//! of changes.

use super::checks::{check_server_url, cidrs, within};
use super::error::ConfigError;
use super::options::AgentOptions;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

/// How a site without a docroot is read from its web server.
#[derive(Debug, Clone)]
pub struct OriginSettings {
    /// The web server, asked with the base URL's Host.
    pub server: Url,
    /// Pages published besides those the sitemaps name, as site paths.
    pub(crate) seeds: Vec<String>,
    /// Query parameters that may name a page (`--allow-query`); none: no page has a query.
    pub(crate) queries: Vec<String>,
    /// Access logs whose anonymous 200 GETs name pages.
    pub(crate) access_logs: Vec<PathBuf>,
    /// Most requests per second.
    pub(crate) rate: f64,
    /// Shortest and longest time between two checks of one page.
    pub(crate) revalidate_min: Duration,
    pub(crate) revalidate_max: Duration,
    /// Time between readings of the sitemaps.
    pub(crate) discover_every: Duration,
    /// Most pages tracked.
    pub(crate) max_urls: usize,
}

/// Who may tell the agent that something changed.
#[derive(Debug, Clone, Default)]
pub struct NotifySettings {
    /// Addresses let in without a secret.
    pub(crate) from: Vec<ipnet::IpNet>,
    /// The secret that lets a ping in from anywhere.
    pub(crate) secret: Option<String>,
}

/// The origin settings of `o`, if origin mode is asked for.
pub(super) fn settings(
    o: &AgentOptions,
    base: &Url,
) -> Result<Option<OriginSettings>, ConfigError> {
    let Some(origin) = &o.origin else {
        let stray = [
            ("--seed", o.seed.is_some()),
            ("--allow-query", o.allow_query.is_some()),
        ];
        if let Some((flag, _)) = stray.iter().find(|(_, set)| *set) {
            return Err(ConfigError::Value(format!(
                "{flag} is for origin mode (--origin); a docroot's files are found by watching it"
            )));
        }
        return Ok(None);
    };
    if o.complete_listing == Some(true) {
        return Err(ConfigError::Value(
            "--complete-listing states that a docroot's files are all the site serves; origin mode lists the pages it finds, never all of them".into(),
        ));
    }
    let server = check_server_url(origin)
        .map_err(|e| ConfigError::Value(e.to_string().replace("--server-url", "--origin")))?;
    let queries: Vec<String> = o
        .allow_query
        .iter()
        .flatten()
        .map(|q| q.trim().to_string())
        .collect();
    if let Some(bad) = queries.iter().find(|q| {
        q.is_empty()
            || q.len() > 64
            || !q
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.[]".contains(&b))
    }) {
        return Err(ConfigError::Value(format!(
            "--allow-query {bad:?}: a query parameter's name (letters, digits, _ - . [ ], at most 64)"
        )));
    }
    let mut seeds = Vec::new();
    for s in o.seed.iter().flatten() {
        let url = base.join(s.trim()).map_err(|e| {
            ConfigError::Value(format!("--seed {s:?}: {e} (expected a URL of the site)"))
        })?;
        let path = crate::urls::site_path(base, &url, &queries)
            .map_err(|why| ConfigError::Value(format!("--seed {s:?}: {why}")))?;
        seeds.push(path);
    }
    let rate = within(
        "--origin-rate",
        o.origin_rate.unwrap_or(2.0),
        0.01..=1000.0,
        "between 0.01 and 1000 requests per second",
    )?;
    let min = o.revalidate_min.unwrap_or(300);
    let max = o.revalidate_max.unwrap_or(86_400);
    if min == 0 || max < min || max > 365 * 86_400 {
        return Err(ConfigError::Value(format!(
            "--revalidate-min {min} and --revalidate-max {max}: at least 1 s, the minimum at most the maximum, the maximum at most a year"
        )));
    }
    let discover_every = o.discover_every.unwrap_or(600);
    if discover_every == 0 {
        return Err(ConfigError::Value("--discover-every: at least 1 s".into()));
    }
    let max_urls = within(
        "--origin-max-urls",
        o.origin_max_urls.unwrap_or(100_000),
        1..=10_000_000,
        "between 1 and 10,000,000",
    )?;
    Ok(Some(OriginSettings {
        server,
        seeds,
        queries,
        access_logs: o.access_log.clone().unwrap_or_default(),
        rate,
        revalidate_min: Duration::from_secs(min),
        revalidate_max: Duration::from_secs(max),
        discover_every: Duration::from_secs(discover_every),
        max_urls,
    }))
}

/// Who may ping, from `o`.
pub(super) fn notify_settings(o: &AgentOptions) -> Result<NotifySettings, ConfigError> {
    let from = cidrs(
        "--notify-from",
        o.notify_from.as_deref().unwrap_or_default(),
    )?;
    let secret = match &o.notify_secret_file {
        None => None,
        Some(path) => Some(read_secret(path)?),
    };
    Ok(NotifySettings { from, secret })
}

/// The first line of a secret file, which must hold at least 16 characters.
pub fn read_secret(path: &std::path::Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Value(format!("--notify-secret-file {}: {e}", path.display())))?;
    let secret = text.lines().next().unwrap_or("").trim().to_string();
    if secret.len() < 16 || !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError::Value(format!(
            "--notify-secret-file {}: the secret is its first line, at least 16 printable characters without spaces",
            path.display()
        )));
    }
    Ok(secret)
}
