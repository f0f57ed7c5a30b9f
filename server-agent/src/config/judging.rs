//! How the agent asks its web server, checked: the judge (where, from which address, how
//! many at once, how often again) and the server's configuration files; and when snapshots
//! of the whole site are built.

use super::checks::{check_server_url, given, within};
use super::error::ConfigError;
use super::options::AgentOptions;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

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

/// The judge's settings, the time within which every file is judged again and the rate of
/// that judging.
pub(super) fn judge(
    o: &AgentOptions,
    base_url: &Url,
) -> Result<(crate::judge::JudgeSettings, Duration, f64), ConfigError> {
    let server_url = match &o.server_url {
        Some(u) => check_server_url(u)?,
        None => Url::parse(&base_url.origin().ascii_serialization())
            .map_err(|e| ConfigError::Value(format!("the base URL's origin is not a URL: {e}")))?,
    };
    let source = match &o.judge_source {
        None => None,
        Some(a) => Some(a.trim().parse::<std::net::IpAddr>().map_err(|e| {
            ConfigError::Value(format!(
                "--judge-source {a:?}: {e} (expected an address of this machine such as 127.41.7.9)"
            ))
        })?),
    };
    let connections = within(
        "--judge-connections",
        given(o.judge_connections, "judge_connections")?,
        1..=64,
        "between 1 and 64",
    )?;
    let every = within(
        "--judge-every",
        given(o.judge_every, "judge_every")?,
        60..=30 * 86_400,
        "between 60 s and 30 days",
    )?;
    let rate = within(
        "--judge-rate",
        given(o.judge_rate, "judge_rate")?,
        0.1..=100_000.0,
        "between 0.1 and 100000 requests per second",
    )?;
    let judge = crate::judge::JudgeSettings {
        server_url,
        server_url_given: o.server_url.is_some(),
        source,
        connections,
        timeout: Duration::from_secs(10),
    };
    Ok((judge, Duration::from_secs(every), rate))
}

/// The configuration files given (`--server-config`), and whether the operator said `none`.
pub(super) fn server_config(o: &AgentOptions) -> Result<(Vec<PathBuf>, bool), ConfigError> {
    let files = o.server_config.clone().unwrap_or_default();
    let none = files.iter().any(|p| p.as_os_str() == "none");
    if none && files.len() > 1 {
        return Err(ConfigError::Value(
            "--server-config none reads no configuration: it cannot be given with files".into(),
        ));
    }
    Ok(if none {
        (Vec::new(), true)
    } else {
        (files, false)
    })
}

/// The snapshots' settings, when snapshots are built.
pub(super) fn snapshots(o: &AgentOptions) -> Result<Option<SnapshotSettings>, ConfigError> {
    if !given(o.snapshots, "snapshots")? {
        return Ok(None);
    }
    let share = within(
        "--snapshot-share",
        given(o.snapshot_share, "snapshot_share")?,
        0.0..=1.0,
        "a share between 0 and 1",
    )?;
    let every = within(
        "--snapshot-every",
        given(o.snapshot_every, "snapshot_every")?,
        60..=365 * 86_400,
        "between 60 s and a year",
    )?;
    let level = within(
        "--snapshot-level",
        given(o.snapshot_level, "snapshot_level")?,
        1..=19,
        "between 1 and 19",
    )?;
    Ok(Some(SnapshotSettings {
        share,
        every: Duration::from_secs(every),
        level,
        resource_dump: given(o.resource_dump, "resource_dump")?,
    }))
}
