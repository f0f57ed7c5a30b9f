//! What a running crawl shows its console: the loop writes a [`View`] once a second (the host
//! table and a host's schedule only while someone looks), the console reads it, and actions go
//! the other way through a channel the loop drains.

use super::actions::{Action, ActionLog, Logged};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};

/// Seconds of history kept for the charts (an hour at one sample a second).
pub(crate) const HISTORY: usize = 3600;

/// How long after the last request the console counts as watched, ms.
const WATCH_MS: i64 = 30_000;

/// One second of the crawl, cumulative counters and gauges.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Sample {
    /// ms since the epoch.
    pub(crate) t: i64,
    /// Pages fetched by this run.
    pub(crate) fetched: u64,
    /// Body bytes received by this run.
    pub(crate) bytes: u64,
    /// Errors of this run.
    pub(crate) errors: u64,
    /// URLs waiting.
    pub(crate) queued: u64,
    /// Requests under way.
    pub(crate) in_flight: usize,
    /// Hosts with work.
    pub(crate) hosts_active: usize,
}

/// The crawl now.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Overview {
    /// `running`, `paused`, `stopping` or `finished`.
    pub(crate) state: &'static str,
    /// The crawl directory.
    pub(crate) out: String,
    /// When this run started, ms since the epoch.
    pub(crate) started_at: i64,
    /// Pages fetched over all runs.
    pub(crate) pages_total: u64,
    /// Pages fetched by this run.
    pub(crate) fetched: u64,
    /// Revisits queued by the refresh schedule in this run.
    pub(crate) revisits: u64,
    /// URLs waiting.
    pub(crate) queued: u64,
    /// URLs ever queued.
    pub(crate) seen: u64,
    /// Hosts known.
    pub(crate) hosts: usize,
    /// Hosts with work.
    pub(crate) hosts_active: usize,
    /// Requests under way.
    pub(crate) in_flight: usize,
    /// Errors by kind (`4xx`, `5xx`, `failed`, `disallowed`, `retries`, `refused`) and pages
    /// the site's usage preferences refuse for the crawl's purposes (`usage`).
    pub(crate) errors: BTreeMap<&'static str, u64>,
    /// Requests signed (Web Bot Auth) by this run.
    #[serde(default)]
    pub(crate) signed: u64,
    /// The latest connections refused because they led inside a network, and why.
    pub(crate) refusals: Vec<String>,
    /// Body bytes received by this run.
    pub(crate) bytes: u64,
    /// Bytes appended to WARC files by this run.
    pub(crate) warc_bytes: u64,
    /// Free space where the crawl writes, bytes.
    pub(crate) disk_free: Option<u64>,
    /// Seconds until the queue or the page budget runs out at the last minute's rate.
    pub(crate) eta_secs: Option<f64>,
    /// The page budget.
    pub(crate) max_pages: Option<u64>,
    /// Pushes received by this run.
    pub(crate) pushes: u64,
    /// Cooperation requests of this run.
    pub(crate) coop_requests: u64,
    /// Paused from the console.
    pub(crate) paused: bool,
    /// Hosts blocked from the console.
    pub(crate) blocked: Vec<String>,
    /// Delays set from the console, seconds by origin.
    pub(crate) delays: BTreeMap<String, f64>,
}

/// A host as the loop sees it.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct HostLive {
    /// Database id.
    pub(crate) id: i64,
    /// URLs waiting.
    pub(crate) waiting: u64,
    /// Requests under way.
    pub(crate) in_flight: usize,
    /// The delay after its last request, seconds.
    pub(crate) delay_secs: f64,
    /// Which rule set it.
    pub(crate) delay_why: &'static str,
    /// Seconds until it may be contacted again (0: now).
    pub(crate) next_in_secs: f64,
    /// robots.txt: `unknown`, `fetching`, `known` or `expired`.
    pub(crate) robots: &'static str,
    /// `crawling`, `idle`, `waiting`, `parked`, `blocked` or `skipped: why`.
    pub(crate) state: Cow<'static, str>,
    /// Failures in a row.
    pub(crate) failures: u32,
    /// Cooperation level: `none`, `meta`, `delta` or `push`.
    pub(crate) coop: &'static str,
    /// Trust in its announcements, 0 to 1.
    pub(crate) trust: Option<f64>,
    /// Requests cooperation spared: pushes applied without a request, and polls avoided for
    /// pages its announcements cover.
    pub(crate) saved: u64,
}

/// A page of a host's refresh schedule.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Due {
    /// The URL.
    pub(crate) url: String,
    /// When due, ms since the epoch.
    pub(crate) due: i64,
    /// Last visit, ms since the epoch.
    pub(crate) last: i64,
    /// Estimated changes per day.
    pub(crate) rate_per_day: f64,
    /// Left to the site's announcements.
    pub(crate) covered: bool,
}

/// What the loop adds to one host's page.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct HostDetail {
    /// Database id.
    pub(crate) id: i64,
    /// Its next due pages.
    pub(crate) schedule: Vec<Due>,
    /// Its cooperation figures.
    pub(crate) coop: Option<serde_json::Value>,
}

/// One second of the refresh policy (with `--keep-fresh`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct FreshSample {
    /// ms since the epoch.
    pub(crate) t: i64,
    /// Expected share of pages whose copy is current.
    pub(crate) estimate: Option<f64>,
    /// Pages polled.
    pub(crate) polled: usize,
    /// Of those, due now.
    pub(crate) due: usize,
    /// Pages left to their sites' announcements.
    pub(crate) covered: usize,
    /// Visits of known pages so far (this run).
    pub(crate) visits: u64,
    /// Changes those visits found.
    pub(crate) changes: u64,
    /// Changes sites announced (this run).
    pub(crate) announced: u64,
    /// Pushes received (this run).
    pub(crate) pushes: u64,
}

/// Everything the loop publishes.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct View {
    /// The figures now.
    pub(crate) overview: Overview,
    /// The last hour, a sample a second.
    pub(crate) samples: VecDeque<Sample>,
    /// The hosts the console's table showed lately (refreshed only while watched).
    pub(crate) hosts: Vec<HostLive>,
    /// The host whose page is open.
    pub(crate) host: Option<HostDetail>,
    /// The refresh policy's last hour, with `--keep-fresh`.
    pub(crate) freshness: Option<VecDeque<FreshSample>>,
}

/// The meeting point of the loop and the console.
pub(crate) struct Live {
    view: Mutex<View>,
    tick: tokio::sync::watch::Sender<u64>,
    actions: Mutex<Sender<Action>>,
    watched_at: AtomicI64,
    watched_host: AtomicI64,
    /// Hosts the table showed, and when (ms): only their rows are published.
    shown: Mutex<HashMap<i64, i64>>,
    log: ActionLog,
}

impl Live {
    /// A meeting point for the crawl in `dir`; the loop keeps the receiver.
    pub(crate) fn new(dir: &std::path::Path) -> (Arc<Live>, Receiver<Action>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let live = Live {
            view: Mutex::new(View::default()),
            tick: tokio::sync::watch::Sender::new(0),
            actions: Mutex::new(tx),
            watched_at: AtomicI64::new(i64::MIN / 2),
            watched_host: AtomicI64::new(-1),
            shown: Mutex::default(),
            log: ActionLog::new(dir),
        };
        (Arc::new(live), rx)
    }

    /// The view, to read or change.
    pub(crate) fn view(&self) -> MutexGuard<'_, View> {
        // A panic elsewhere while holding the lock leaves a view that is still whole.
        self.view.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells the event streams that the view changed.
    pub(crate) fn published(&self) {
        self.tick.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver woken at each publication.
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.tick.subscribe()
    }

    /// Someone looked (at `host`'s page, when given).
    pub(crate) fn touch(&self, now_ms: i64, host: Option<i64>) {
        self.watched_at.store(now_ms, Ordering::Relaxed);
        if let Some(h) = host {
            self.watched_host.store(h, Ordering::Relaxed);
        }
    }

    /// Whether someone looked lately.
    pub(crate) fn watched(&self, now_ms: i64) -> bool {
        now_ms - self.watched_at.load(Ordering::Relaxed) < WATCH_MS
    }

    /// The host whose page was opened last, if any.
    pub(crate) fn watched_host(&self) -> Option<i64> {
        let h = self.watched_host.load(Ordering::Relaxed);
        (h >= 0).then_some(h)
    }

    /// The table showed these hosts: the loop publishes their rows from its next turn on.
    pub(crate) fn show(&self, now_ms: i64, ids: impl IntoIterator<Item = i64>) {
        let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        shown.retain(|_, at| now_ms - *at < WATCH_MS);
        shown.extend(ids.into_iter().map(|id| (id, now_ms)));
    }

    /// The hosts whose rows to publish: those a table showed in the last half minute (a
    /// page of at most 500 a request) and the one whose page is open. Ten thousand rows a
    /// second, for a table that shows a hundred, cost the loop 3-6 us a page at the web's
    /// shape, most of it a cache miss a host.
    pub(crate) fn shown(&self, now_ms: i64) -> Vec<i64> {
        let shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        let mut ids: Vec<i64> = shown
            .iter()
            .filter(|(_, at)| now_ms - **at < WATCH_MS)
            .map(|(id, _)| *id)
            .collect();
        ids.extend(self.watched_host().filter(|h| !shown.contains_key(h)));
        ids
    }

    /// Logs an action (synced) and hands it to the loop.
    pub(crate) fn act(&self, logged: Logged) -> std::io::Result<()> {
        self.log.append(&logged)?;
        let tx = self.actions.lock().unwrap_or_else(|p| p.into_inner());
        // The loop gone means the crawl is ending; the log applies it at the next start.
        let _ = tx.send(logged.action);
        Ok(())
    }
}

/// Appends to a bounded history.
pub(crate) fn push_bounded<T>(q: &mut VecDeque<T>, item: T) {
    if q.len() >= HISTORY {
        q.pop_front();
    }
    q.push_back(item);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rows_published_are_the_hosts_shown_lately_and_the_one_open() {
        let dir = tempfile::tempdir().unwrap();
        let (live, _rx) = Live::new(dir.path());
        assert!(live.shown(0).is_empty(), "nothing shown, nothing built");
        live.show(1_000, [3, 4]);
        live.show(20_000, [4, 5]);
        let sorted = |mut v: Vec<i64>| {
            v.sort_unstable();
            v
        };
        assert_eq!(sorted(live.shown(20_000)), [3, 4, 5]);
        live.touch(20_000, Some(9));
        assert_eq!(sorted(live.shown(20_000)), [3, 4, 5, 9]);
        // Half a minute after it was shown, a host's row is no longer kept current.
        assert_eq!(sorted(live.shown(31_000)), [4, 5, 9]);
        live.show(60_000, [7]);
        assert_eq!(sorted(live.shown(60_000)), [7, 9]);
    }
}
