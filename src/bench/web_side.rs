//! What a run of the web's modes starts beside a site without the agent: its signal documents,
//! the third-party hub it pings, or the counting proxy in front of the crawler's IndexNow
//! endpoint that its submissions cross.

use super::hub::{self, RunningHub};
use super::mode::Mode;
use super::proxy::{CountingProxy, WireCount};
use super::served::{ServedSite, io, wait_until};
use super::web_signals::{Receivers, Signal, SignalSite};
use chrono::{DateTime, Utc};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The signal side of one run.
pub(crate) struct WebSide {
    signals: SignalSite,
    hub: Option<RunningHub>,
    /// The proxy in front of the crawler's IndexNow endpoint, which submissions cross.
    indexnow: Option<CountingProxy>,
    failures: u64,
    first_failure: Option<String>,
}

impl WebSide {
    /// Starts what `mode` needs beside `served`; none for the agent's modes and the baselines.
    pub(crate) async fn start(mode: Mode, served: &ServedSite) -> Result<Option<WebSide>, String> {
        let Some(signal) = mode.signal() else {
            return Ok(None);
        };
        let origin = served.base.trim_end_matches('/').to_string();
        let hub = match signal {
            Signal::Websub => Some(
                hub::start(Some((origin, format!("http://{}", served.direct))))
                    .await
                    .map_err(io("hub"))?,
            ),
            _ => None,
        };
        let receivers = Receivers {
            hub: hub.as_ref().map(|h| h.url.clone()),
            indexnow: None,
        };
        let signals = SignalSite::start(
            signal,
            served.docroot(),
            &served.base,
            &served.site.paths,
            receivers,
        )
        .map_err(io("the site's signals"))?;
        Ok(Some(WebSide {
            signals,
            hub,
            indexnow: None,
            failures: 0,
            first_failure: None,
        }))
    }

    /// The crawler's arguments this side needs (its IndexNow endpoint, on a port of its
    /// choosing: one picked here could be taken by a side-by-side run before it binds).
    pub(crate) fn crawler_args(&self) -> Vec<String> {
        match self.signals.signal() {
            Signal::Indexnow => vec!["--indexnow-listen".into(), "127.0.0.1:0".into()],
            _ => Vec::new(),
        }
    }

    /// Once the crawler runs: finds its IndexNow endpoint in its log `err` and puts a
    /// counting proxy in front of it, where the site's submissions go.
    pub(crate) async fn crawler_started(&mut self, err: &Path) -> Result<(), String> {
        if self.signals.signal() != Signal::Indexnow {
            return Ok(());
        }
        let mut found = None;
        wait_until(
            "the crawler's IndexNow endpoint",
            Duration::from_secs(30),
            || {
                found = std::fs::read_to_string(err)
                    .ok()
                    .and_then(|t| endpoint_in(&t));
                found.is_some()
            },
        )?;
        let addr = found.ok_or("the crawler's IndexNow endpoint: not in its log")?;
        let proxy = CountingProxy::start(addr)
            .await
            .map_err(io("IndexNow proxy"))?;
        self.signals
            .set_indexnow(format!("http://{}/indexnow", proxy.addr));
        self.indexnow = Some(proxy);
        Ok(())
    }

    /// Whether the crawler is subscribed to the hub, where there is one.
    pub(crate) fn subscribed(&self) -> bool {
        self.hub.as_ref().is_none_or(|h| h.counts().verified > 0)
    }

    /// An edit, published as the site publishes it; a ping or submission that fails is
    /// counted and its first reason kept.
    pub(crate) async fn changed(&mut self, path: &str, at: DateTime<Utc>, gone: bool) {
        if let Err(e) = self.signals.changed(path, at, gone).await {
            self.failures += 1;
            self.first_failure.get_or_insert(e);
        }
    }

    /// The submissions' wire so far (nothing for the other signals).
    pub(crate) fn submitted(&self) -> WireCount {
        self.indexnow
            .as_ref()
            .map(CountingProxy::count)
            .unwrap_or_default()
    }

    /// Pings and submissions that failed, and why the first did.
    pub(crate) fn failures(&self) -> (u64, Option<String>) {
        (self.failures, self.first_failure.clone())
    }
}

/// The address in the crawler's `IndexNow endpoint at http://ADDR/indexnow` line.
fn endpoint_in(log: &str) -> Option<SocketAddr> {
    let (_, rest) = log.split_once("IndexNow endpoint at http://")?;
    rest.split_once("/indexnow")?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_endpoint_is_read_from_the_crawlers_log() {
        let log = "x INFO webcoop_crawler::engine::open: IndexNow endpoint at http://127.0.0.1:4555/indexnow\n";
        assert_eq!(
            super::endpoint_in(log),
            Some("127.0.0.1:4555".parse().unwrap())
        );
        assert_eq!(super::endpoint_in("nothing"), None);
    }
}
