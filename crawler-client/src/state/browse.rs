//! What the console reads from a crawl's database: per-host figures and a host's recent
//! fetches. Read on the console's own read-only connection, beside a running crawl.

use super::{DISALLOWED, Store, StoreError};
use serde::Serialize;

/// A host's saved figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HostFigures {
    /// Database id.
    pub id: i64,
    /// `scheme://host[:port]`.
    pub origin: String,
    /// URLs waiting in the saved queue.
    pub queued: u64,
    /// URLs with a record.
    pub fetched: u64,
    /// Records that are errors (4xx, 5xx, failures).
    pub errors: u64,
    /// robots.txt status, when fetched.
    pub robots_status: Option<i64>,
    /// When robots.txt was fetched, ms since the epoch.
    pub robots_fetched: Option<i64>,
    /// Why it is not crawled.
    pub skipped: Option<String>,
    /// Parked until, ms since the epoch.
    pub parked_until: Option<i64>,
    /// Failures in a row.
    pub failures: u64,
    /// Its cooperation as saved (JSON), when it has any.
    pub coop: Option<serde_json::Value>,
}

/// One page's last visit.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageVisit {
    /// The URL.
    pub url: String,
    /// HTTP status, when a response came.
    pub status: Option<i64>,
    /// Why there was none.
    pub error: Option<String>,
    /// Body bytes.
    pub size: Option<i64>,
    /// When, ms since the epoch.
    pub fetched_at: i64,
    /// Visits so far.
    pub visits: i64,
    /// Changes found.
    pub changes: i64,
    /// Estimated changes per day, when the refresh policy has one.
    pub rate_per_day: Option<f64>,
}

impl Store {
    /// Every host with its saved figures (one pass over pages and queue).
    pub fn host_figures(&self) -> Result<Vec<HostFigures>, StoreError> {
        self.rows(
            "SELECT h.id, h.origin, COALESCE(q.n, 0), COALESCE(p.n, 0), COALESCE(p.bad, 0),
                    h.robots_status, h.robots_fetched, h.skipped, h.parked_until, h.failures, h.coop
             FROM hosts h
             LEFT JOIN (SELECT host, COUNT(*) AS n FROM queue GROUP BY host) q ON q.host = h.id
             LEFT JOIN (SELECT host, COUNT(*) AS n,
                               SUM(status >= 400 OR (status IS NULL AND error != ?1)) AS bad
                        FROM pages GROUP BY host) p ON p.host = h.id
             ORDER BY h.id",
            [DISALLOWED],
            |r| {
                let coop: Option<String> = r.get(10)?;
                Ok(HostFigures {
                    id: r.get(0)?,
                    origin: r.get(1)?,
                    queued: r.get::<_, i64>(2)?.max(0) as u64,
                    fetched: r.get::<_, i64>(3)?.max(0) as u64,
                    errors: r.get::<_, i64>(4)?.max(0) as u64,
                    robots_status: r.get(5)?,
                    robots_fetched: r.get(6)?,
                    skipped: r.get(7)?,
                    parked_until: r.get(8)?,
                    failures: r.get::<_, i64>(9)?.max(0) as u64,
                    coop: coop.and_then(|c| serde_json::from_str(&c).ok()),
                })
            },
        )
    }

    /// A host's most recent visits, newest first.
    pub fn recent_visits(&self, host: i64, limit: usize) -> Result<Vec<PageVisit>, StoreError> {
        self.rows(
            "SELECT url, status, error, size, fetched_at, visits, changes, rate
             FROM pages WHERE host = ?1 ORDER BY fetched_at DESC, id DESC LIMIT ?2",
            rusqlite::params![host, limit as i64],
            |r| {
                Ok(PageVisit {
                    url: r.get(0)?,
                    status: r.get(1)?,
                    error: r.get(2)?,
                    size: r.get(3)?,
                    fetched_at: r.get(4)?,
                    visits: r.get(5)?,
                    changes: r.get(6)?,
                    rate_per_day: r.get::<_, Option<f64>>(7)?.map(|x| x * 86_400.0),
                })
            },
        )
    }
}
