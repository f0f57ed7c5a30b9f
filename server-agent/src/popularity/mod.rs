//! What people read, from the web server's access logs (Castillo's "accesses to the page";
//! Buzzi's cooperation scheme served what the access logs say): each published page's
//! distinct visitors, decayed over time ([`count`]), visitors told from crawlers
//! ([`visitors`]). The counts survive restarts and log rotation (positions and counts in the
//! state); the webmaster chooses to publish them (`--publish-popularity`), as each page's share
//! of reads rounded to a power of two, and only for pages read by enough distinct visitors.

pub(crate) mod count;
pub(crate) mod visitors;

use crate::access_log::AccessLog;
use crate::access_log::line::LogLine;
use crate::store::{Store, StoreError};
use count::Counts;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use visitors::Visitors;

/// Whether and how the reads counted from the access logs are published.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PopularitySettings {
    /// `--publish-popularity`.
    pub(crate) publish: bool,
    /// Half-life of a read.
    pub(crate) half_life: Duration,
    /// Distinct visitors a page needs before its figure is published.
    pub(crate) min_visitors: u32,
}

/// Readings of the logs at one call at most (each of at most 4 MiB per log): a log far
/// behind is caught up over several calls, the agent doing its other work in between.
const MAX_READINGS: usize = 64;

/// The state key of a log's position.
fn position_key(path: &std::path::Path) -> String {
    format!("access_log:{}", path.display())
}

/// Reads counted from the access logs.
pub(crate) struct Popularity {
    settings: PopularitySettings,
    counts: Counts,
    visitors: Visitors,
    logs: Vec<AccessLog>,
    /// Reads counted since the start, and lines that were not reads.
    pub(crate) reads: u64,
    pub(crate) others: u64,
}

impl Popularity {
    /// Counting from `logs`, followed from where the state says the last reading stopped,
    /// restored from `store`.
    pub(crate) fn open(
        settings: PopularitySettings,
        logs: &[PathBuf],
        store: &Store,
    ) -> Result<Popularity, StoreError> {
        let mut counts = Counts::new(settings.half_life.as_secs_f64());
        let (pages, day) = store.load_reads()?;
        counts.restore(pages, day);
        let mut followed = Vec::new();
        for path in logs {
            let mut log = AccessLog::new(path.clone());
            if let Some(v) = store.meta(&position_key(path))? {
                let mut it = v.split(':');
                let inode = it.next().and_then(|i| i.parse().ok());
                let offset = it.next().and_then(|o| o.parse().ok()).unwrap_or(0);
                log.resume(inode, offset);
            }
            followed.push(log);
        }
        Ok(Popularity {
            settings,
            counts,
            visitors: Visitors::default(),
            logs: followed,
            reads: 0,
            others: 0,
        })
    }

    /// Counts `line` if it is a visitor reading the published page `resolve` maps its target
    /// to; `verified` tells the clients the service saw sign.
    pub(crate) fn observe(
        &mut self,
        line: &LogLine,
        now: i64,
        resolve: &impl Fn(&str) -> Option<String>,
        verified: &impl Fn(&str) -> bool,
    ) {
        if !self.visitors.is_read(line, now, verified) {
            self.others += 1;
            return;
        }
        let Some(page) = resolve(&line.target) else {
            self.others += 1;
            return;
        };
        self.reads += 1;
        // A time from the future (a forged or skewed line) is taken as now: it would otherwise
        // move the counting day ahead and leave every true read behind it.
        let at = line.time.min(now);
        self.counts
            .read(&page, &line.client, &visitors::client_of(line), at);
    }

    /// The lines the followed logs gained since the last reading (their positions are saved
    /// with the counts, so a restart reads on from there).
    pub(crate) fn read_lines(&mut self) -> Vec<LogLine> {
        let mut lines = Vec::new();
        for log in &mut self.logs {
            match log.read_new() {
                Ok(l) => lines.extend(l),
                Err(e) => tracing::warn!("{}: {e}", log.path().display()),
            }
        }
        lines
    }

    /// Reads what the followed logs gained since the last reading, and counts it: a bounded
    /// amount at a time, up to their ends or [`MAX_READINGS`] readings.
    pub(crate) fn read_logs(
        &mut self,
        now: i64,
        resolve: &impl Fn(&str) -> Option<String>,
        verified: &impl Fn(&str) -> bool,
    ) {
        for _ in 0..MAX_READINGS {
            let before: Vec<_> = self.logs.iter().map(AccessLog::position).collect();
            for line in &self.read_lines() {
                self.observe(line, now, resolve, verified);
            }
            if self.logs.iter().map(AccessLog::position).eq(before) {
                break;
            }
        }
    }

    /// Saves what changed in the counts, and the logs' positions.
    pub(crate) fn save(&mut self, store: &mut Store) -> Result<(), StoreError> {
        let unsaved = self.counts.take_unsaved();
        let positions: Vec<(String, String)> = self
            .logs
            .iter()
            .map(|l| {
                let (inode, offset) = l.position();
                (
                    position_key(l.path()),
                    format!("{}:{offset}", inode.unwrap_or(0)),
                )
            })
            .collect();
        store.save_reads(&unsaved, self.counts.day(), &positions)
    }

    /// Forgets pages no longer published.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.counts.retain(keep);
    }

    /// Each page's published share of reads at `now` (unpublished: none at all).
    pub(crate) fn published(&self, now: i64) -> Option<HashMap<String, f64>> {
        if !self.settings.publish {
            return None;
        }
        Some(count::published_shares(
            self.counts
                .readers(now)
                .map(|(p, v, n)| (p.to_string(), v, n)),
            u64::from(self.settings.min_visitors),
        ))
    }

    /// Each page's decayed visitors at `now`, for the console and tests.
    pub(crate) fn visitors(&self, now: i64) -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = self
            .counts
            .visitors(now)
            .map(|(p, v)| (p.to_string(), v))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}
