//! The figures `status` and the final summary print.

use super::{Store, StoreError};

/// The `meta` key of the count of connections refused by the network guard, over all runs.
pub(crate) const NET_REFUSED: &str = "net_refused";

impl Store {
    /// The figures `status` and the final summary print.
    pub fn figures(&self) -> Result<Figures, StoreError> {
        let mut f = Figures::default();
        let pages = match super::page_figures::read(&self.conn).map_err(|e| self.err(e))? {
            Some(kept) => kept,
            None => self.counted_page_figures()?,
        };
        for (name, v) in pages {
            let v = v.max(0) as u64;
            match name {
                "pages" => f.pages = v,
                "ok" => f.ok = v,
                "not_modified" => f.not_modified = v,
                "redirects" => f.redirects = v,
                "client_errors" => f.client_errors = v,
                "server_errors" => f.server_errors = v,
                "failures" => f.failures = v,
                "disallowed" => f.disallowed = v,
                "duplicates" => f.duplicates = v,
                "changes" => f.changes = v,
                "bytes" => f.bytes = v,
                "usage_skipped" => f.usage_skipped = v,
                "usage_not_kept" => f.usage_not_kept = v,
                "held" => f.held = v,
                "first_fetch" => f.first_fetch = v,
                "last_fetch" => f.last_fetch = v,
                _ => {}
            }
        }
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

    /// The pages' figures counted over every page, as the kept row must always have them.
    pub(crate) fn counted_page_figures(&self) -> Result<Vec<(&'static str, i64)>, StoreError> {
        super::page_figures::count(&self.conn).map_err(|e| self.err(e))
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
