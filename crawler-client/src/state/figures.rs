//! The figures `status` and the final summary print.

use super::{DISALLOWED, Store, StoreError, USAGE_NOT_KEPT, USAGE_SKIPPED};

/// The `meta` key of the count of connections refused by the network guard, over all runs.
pub(crate) const NET_REFUSED: &str = "net_refused";

impl Store {
    /// The figures `status` and the final summary print.
    pub fn figures(&self) -> Result<Figures, StoreError> {
        let mut f = Figures::default();
        self.conn
            .query_row(
                "SELECT COUNT(*),
                    COALESCE(SUM(status BETWEEN 200 AND 299), 0),
                    COALESCE(SUM(status = 304), 0),
                    COALESCE(SUM(status BETWEEN 300 AND 399 AND status != 304), 0),
                    COALESCE(SUM(status BETWEEN 400 AND 499), 0),
                    COALESCE(SUM(status >= 500), 0),
                    COALESCE(SUM(status IS NULL AND error != ?1), 0),
                    COALESCE(SUM(error = ?1), 0),
                    COALESCE(SUM(duplicate_of IS NOT NULL), 0),
                    COALESCE(SUM(changes), 0),
                    COALESCE(SUM(size), 0),
                    COALESCE(MIN(first_fetched), 0),
                    COALESCE(MAX(fetched_at), 0)
                 FROM pages",
                [DISALLOWED],
                |r| {
                    let g = |i| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
                    f.pages = g(0)?;
                    f.ok = g(1)?;
                    f.not_modified = g(2)?;
                    f.redirects = g(3)?;
                    f.client_errors = g(4)?;
                    f.server_errors = g(5)?;
                    f.failures = g(6)?;
                    f.disallowed = g(7)?;
                    f.duplicates = g(8)?;
                    f.changes = g(9)?;
                    f.bytes = g(10)?;
                    f.first_fetch = g(11)?;
                    f.last_fetch = g(12)?;
                    Ok(())
                },
            )
            .map_err(|e| self.err(e))?;
        let count = |sql: &str| -> Result<u64, StoreError> {
            self.conn
                .query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|v| v.max(0) as u64)
                .map_err(|e| self.err(e))
        };
        f.queued = count("SELECT COUNT(*) FROM queue")?;
        f.hosts = count("SELECT COUNT(*) FROM hosts")?;
        f.hosts_skipped = count("SELECT COUNT(*) FROM hosts WHERE skipped IS NOT NULL")?;
        f.warc_bytes = count("SELECT COALESCE(SUM(committed), 0) FROM warc")?;
        let prefixed = |prefix: &str| -> Result<u64, StoreError> {
            self.conn
                .query_row(
                    "SELECT COUNT(*) FROM pages WHERE substr(error, 1, length(?1)) = ?1",
                    [prefix],
                    |r| r.get::<_, i64>(0),
                )
                .map(|v| v.max(0) as u64)
                .map_err(|e| self.err(e))
        };
        f.usage_skipped = prefixed(USAGE_SKIPPED)?;
        f.usage_not_kept = prefixed(USAGE_NOT_KEPT)?;
        f.held = prefixed(super::HELD)?;
        // None is a failure: the site answered, or said beforehand, what it allows or serves.
        f.failures = f
            .failures
            .saturating_sub(f.usage_skipped + f.usage_not_kept + f.held);
        f.net_refused = self
            .meta(NET_REFUSED)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(f)
    }

    /// Hosts not crawled, and why.
    pub fn skipped_hosts(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.rows(
            "SELECT origin, skipped FROM hosts WHERE skipped IS NOT NULL ORDER BY origin",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }
}

/// The figures `status` and the final summary print.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Figures {
    /// URLs with a record (fetched, failed or forbidden).
    pub(crate) pages: u64,
    /// 2xx.
    pub(crate) ok: u64,
    /// 304 Not Modified.
    pub(crate) not_modified: u64,
    /// Other 3xx.
    pub(crate) redirects: u64,
    /// 4xx.
    pub(crate) client_errors: u64,
    /// 5xx.
    pub(crate) server_errors: u64,
    /// No response (timeouts, refused connections, hosts given up on).
    pub(crate) failures: u64,
    /// Forbidden by robots.txt.
    pub(crate) disallowed: u64,
    /// Skipped, unfetched, because the site's usage preferences refuse the crawl's purpose.
    pub(crate) usage_skipped: u64,
    /// Fetched and not kept: the response's `Content-Usage` header refuses the purpose.
    pub(crate) usage_not_kept: u64,
    /// Links held unfetched: the site's complete listing says nothing is there.
    pub(crate) held: u64,
    /// Exact duplicates of another page.
    pub(crate) duplicates: u64,
    /// Changes seen on revisits.
    pub(crate) changes: u64,
    /// URLs waiting.
    pub(crate) queued: u64,
    /// Hosts known.
    pub(crate) hosts: u64,
    /// Hosts not crawled (for example Crawl-delay over the cap).
    pub(crate) hosts_skipped: u64,
    /// Body bytes received.
    pub(crate) bytes: u64,
    /// Bytes of WARC written.
    pub(crate) warc_bytes: u64,
    /// Connections refused because they led inside a network the operator did not allow.
    pub(crate) net_refused: u64,
    /// First fetch (ms).
    pub(crate) first_fetch: u64,
    /// Last fetch (ms).
    pub(crate) last_fetch: u64,
}

impl Figures {
    /// Requests that got a response or failed (not those robots.txt or usage preferences
    /// forbade, nor links held).
    pub fn fetched(&self) -> u64 {
        self.pages
            .saturating_sub(self.disallowed + self.usage_skipped + self.held)
    }

    /// Responses that are errors or no response at all.
    pub fn errors(&self) -> u64 {
        self.client_errors + self.server_errors + self.failures
    }
}
