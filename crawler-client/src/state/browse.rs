//! What the console reads from a crawl's database: per-host figures and a host's recent
//! fetches. Read on the console's own read-only connection, beside a running crawl.

use super::{DISALLOWED, Store, StoreError};
use serde::Serialize;

/// What the database sorts hosts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostSort {
    /// Order of discovery.
    Id,
    /// The origin's text.
    Origin,
    /// URLs waiting.
    Queued,
    /// URLs recorded.
    Fetched,
    /// Errors.
    Errors,
}

impl HostSort {
    /// The sort a console column names; `None` for columns only the running crawl knows.
    pub(crate) fn of(column: &str) -> Option<HostSort> {
        match column {
            "id" => Some(HostSort::Id),
            "origin" => Some(HostSort::Origin),
            "queued" => Some(HostSort::Queued),
            "fetched" => Some(HostSort::Fetched),
            "errors" => Some(HostSort::Errors),
            _ => None,
        }
    }

    /// The column's name.
    pub(crate) fn column(self) -> &'static str {
        match self {
            HostSort::Id => "id",
            HostSort::Origin => "origin",
            HostSort::Queued => "queued",
            HostSort::Fetched => "fetched",
            HostSort::Errors => "errors",
        }
    }
}

/// A page of the host table.
#[derive(Debug, Clone)]
pub(crate) struct HostQuery {
    /// The order.
    pub(crate) sort: HostSort,
    /// Largest first.
    pub(crate) descending: bool,
    /// A piece of the origin, any case (empty: all).
    pub(crate) filter: String,
    /// Rows skipped.
    pub(crate) offset: u64,
    /// Rows given.
    pub(crate) limit: u64,
}

/// A host's saved figures.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct HostFigures {
    /// Database id.
    pub(crate) id: i64,
    /// `scheme://host[:port]`.
    pub(crate) origin: String,
    /// URLs waiting in the saved queue.
    pub(crate) queued: u64,
    /// URLs with a record.
    pub(crate) fetched: u64,
    /// Records that are errors (4xx, 5xx, failures).
    pub(crate) errors: u64,
    /// robots.txt status, when fetched.
    pub(crate) robots_status: Option<i64>,
    /// When robots.txt was fetched, ms since the epoch.
    pub(crate) robots_fetched: Option<i64>,
    /// Why it is not crawled.
    pub(crate) skipped: Option<String>,
    /// Parked until, ms since the epoch.
    pub(crate) parked_until: Option<i64>,
    /// Failures in a row.
    pub(crate) failures: u64,
    /// Its cooperation as saved (JSON), when it has any.
    pub(crate) coop: Option<serde_json::Value>,
}

/// One page's last visit.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct PageVisit {
    /// The URL.
    pub(crate) url: String,
    /// HTTP status, when a response came.
    pub(crate) status: Option<i64>,
    /// Why there was none.
    pub(crate) error: Option<String>,
    /// Body bytes.
    pub(crate) size: Option<i64>,
    /// When, ms since the epoch.
    pub(crate) fetched_at: i64,
    /// Visits so far.
    pub(crate) visits: i64,
    /// Changes found.
    pub(crate) changes: i64,
    /// Estimated changes per day, when the refresh policy has one.
    pub(crate) rate_per_day: Option<f64>,
}

/// The host table's query, in `order` and `dir` (columns and words of a fixed set). Each
/// host's pages and errors are read from its row of `host_counts` when the database keeps
/// them (`counts_kept`), otherwise counted from its own index entries; the queue is counted
/// from its index entries. So a page in the default order (most pages first) costs a row per
/// host, and in the order of the id or the origin only the hosts shown are counted: at a
/// million pages counting every host's pages took the table 380 ms a request during a crawl.
fn host_page_sql(order: &str, dir: &str, counts_kept: bool) -> String {
    let (pages, from) = if counts_kept {
        (
            "IFNULL(c.fetched, 0) AS fetched, IFNULL(c.errors, 0) AS errors",
            "hosts h LEFT JOIN host_counts c ON c.host = h.id",
        )
    } else {
        (
            "(SELECT COUNT(*) FROM pages WHERE host = h.id) AS fetched,
                (SELECT COALESCE(SUM(status >= 400 OR (status IS NULL AND error != ?1)), 0)
                   FROM pages WHERE host = h.id) AS errors",
            "hosts h",
        )
    };
    format!(
        "SELECT h.id, h.origin,
                (SELECT COUNT(*) FROM queue WHERE host = h.id) AS queued,
                {pages},
                h.robots_status, h.robots_fetched, h.skipped, h.parked_until, h.failures, h.coop
         FROM {from}
         WHERE ?2 = '' OR instr(lower(h.origin), ?2) > 0
         ORDER BY {order} {dir}, h.id
         LIMIT ?3 OFFSET ?4"
    )
}

impl Store {
    /// Every host with its saved figures.
    pub(crate) fn host_figures(&self) -> Result<Vec<HostFigures>, StoreError> {
        Ok(self
            .host_page(&HostQuery {
                sort: HostSort::Id,
                descending: false,
                filter: String::new(),
                offset: 0,
                limit: i64::MAX as u64,
            })?
            .0)
    }

    /// One page of hosts as the console asks it: those whose origin contains the filter,
    /// sorted and cut by the database, with how many match in all.
    pub(crate) fn host_page(&self, q: &HostQuery) -> Result<(Vec<HostFigures>, u64), StoreError> {
        // The order is one of a fixed set of columns, never text from the request.
        let order = match q.sort {
            HostSort::Id => "h.id",
            HostSort::Origin => "h.origin",
            HostSort::Queued => "queued",
            HostSort::Fetched => "fetched",
            HostSort::Errors => "errors",
        };
        let dir = if q.descending { "DESC" } else { "ASC" };
        let filter = q.filter.to_ascii_lowercase();
        let total = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM hosts WHERE ?1 = '' OR instr(lower(origin), ?1) > 0",
                [&filter],
                |r| r.get::<_, i64>(0),
            )
            .map_err(|e| self.err(e))?
            .max(0) as u64;
        let kept = super::host_counts::kept(&self.conn).map_err(|e| self.err(e))?;
        let sql = host_page_sql(order, dir, kept);
        let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(q.offset).unwrap_or(i64::MAX);
        let rows = self.rows(
            &sql,
            rusqlite::params![DISALLOWED, filter, limit, offset],
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
        )?;
        Ok((rows, total))
    }

    /// A host's most recent visits, newest first.
    pub(crate) fn recent_visits(
        &self,
        host: i64,
        limit: usize,
    ) -> Result<Vec<PageVisit>, StoreError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A crawl that knows 100,000 hosts: host `i` has `i % 7` queued URLs and `i % 5` pages,
    /// one of them an error when `i % 5 == 4`.
    fn store_of_many_hosts(dir: &std::path::Path) -> Store {
        let s = Store::open(dir).unwrap();
        s.conn.execute_batch("BEGIN").unwrap();
        {
            let mut host = s
                .conn
                .prepare("INSERT INTO hosts (id, origin) VALUES (?1, ?2)")
                .unwrap();
            let mut queue = s
                .conn
                .prepare("INSERT INTO queue (host, url, fp, depth) VALUES (?1, ?2, ?3, 1)")
                .unwrap();
            let mut page = s
                .conn
                .prepare(
                    "INSERT INTO pages (fp, url, host, depth, status, fetched_at, first_fetched, last_changed)
                     VALUES (?1, ?2, ?3, 1, ?4, 0, 0, 0)",
                )
                .unwrap();
            for i in 1..=100_000i64 {
                host.execute(rusqlite::params![i, format!("http://h{i:06}.test")])
                    .unwrap();
                for k in 0..(i % 7) {
                    queue
                        .execute(rusqlite::params![i, format!("q{k}"), i * 10 + k])
                        .unwrap();
                }
                for k in 0..(i % 5) {
                    let status = if k == 3 { 500 } else { 200 };
                    page.execute(rusqlite::params![i * 10 + k, format!("p{k}"), i, status])
                        .unwrap();
                }
            }
        }
        s.conn.execute_batch("COMMIT").unwrap();
        s
    }

    #[test]
    fn the_host_table_is_sorted_filtered_and_paged_by_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_of_many_hosts(dir.path());
        let page = |sort, descending, filter: &str, offset, limit| {
            s.host_page(&HostQuery {
                sort,
                descending,
                filter: filter.into(),
                offset,
                limit,
            })
            .unwrap()
        };
        let (rows, total) = page(HostSort::Origin, false, "", 0, 100);
        assert_eq!((rows.len(), total), (100, 100_000));
        assert_eq!(rows[0].origin, "http://h000001.test");
        let (rows, _) = page(HostSort::Origin, true, "", 100, 3);
        assert_eq!(
            rows.iter().map(|r| r.origin.as_str()).collect::<Vec<_>>(),
            [
                "http://h099900.test",
                "http://h099899.test",
                "http://h099898.test"
            ]
        );
        // By a figure the database counts: the most queued first, ties by id.
        let (rows, _) = page(HostSort::Queued, true, "", 0, 2);
        assert_eq!((rows[0].id, rows[0].queued), (6, 6));
        assert_eq!((rows[1].id, rows[1].queued), (13, 6));
        let (rows, _) = page(HostSort::Errors, true, "", 0, 1);
        assert_eq!((rows[0].id, rows[0].fetched, rows[0].errors), (4, 4, 1));
        // A filter, in any case, counted as a whole.
        let (rows, total) = page(HostSort::Fetched, true, "H0999", 0, 500);
        assert_eq!(total, 100);
        assert!(rows.iter().all(|r| r.origin.contains("h0999")));
        assert_eq!(rows[0].fetched, 4);
        // Past the end, and a filter that is SQL: nothing, never an error.
        assert!(page(HostSort::Id, false, "", 200_000, 10).0.is_empty());
        assert_eq!(
            page(HostSort::Id, false, "'; DROP TABLE hosts; --", 0, 10).1,
            0
        );
        assert_eq!(page(HostSort::Id, false, "%", 0, 10).1, 0);
        assert_eq!(HostSort::of("state"), None);
        assert_eq!(HostSort::of("errors").map(HostSort::column), Some("errors"));
    }

    /// A page of the table in the console's default order reads the hosts it shows through
    /// the host indexes, and no table whole: its cost follows the hosts shown, not the pages
    /// crawled.
    #[test]
    fn the_default_host_table_reads_only_the_hosts_it_shows() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        let plan = |s: &Store, kept: bool| -> Vec<String> {
            s.rows(
                &format!("EXPLAIN QUERY PLAN {}", host_page_sql("h.id", "ASC", kept)),
                rusqlite::params![DISALLOWED, "", 50, 0],
                |r| r.get::<_, String>(3),
            )
            .unwrap()
        };
        // The twin: without the index, a database that does not keep the counts reads every
        // pages row for every host shown.
        s.conn.execute_batch("DROP INDEX pages_by_host").unwrap();
        assert!(
            plan(&s, false).iter().any(|d| d.starts_with("SCAN pages")),
            "{:?}",
            plan(&s, false)
        );
        drop(s);
        let s = Store::open(dir.path()).unwrap();
        for kept in [true, false] {
            let plan = plan(&s, kept);
            let scans: Vec<&String> = plan
                .iter()
                .filter(|d| d.starts_with("SCAN") && !d.contains(" h"))
                .collect();
            assert!(scans.is_empty(), "{plan:?}");
            assert!(plan.iter().any(|d| d.contains("queue_by_host")), "{plan:?}");
            let by_host = plan.iter().any(|d| d.contains("pages_by_host"));
            assert_eq!(by_host, !kept, "{plan:?}");
        }
    }

    /// Most pages first, the console's default, reads each host's kept counts and no page;
    /// the twin, a database without them (an older crawl read by a newer console), counts
    /// every host's pages and gives the same table.
    #[test]
    fn the_table_by_pages_reads_kept_counts_not_pages() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_of_many_hosts(dir.path());
        let plan = |kept: bool| -> Vec<String> {
            s.rows(
                &format!(
                    "EXPLAIN QUERY PLAN {}",
                    host_page_sql("fetched", "DESC", kept)
                ),
                rusqlite::params![DISALLOWED, "", 100, 0],
                |r| r.get::<_, String>(3),
            )
            .unwrap()
        };
        let reads_pages = |plan: &[String]| plan.iter().any(|d| d.contains(" pages "));
        assert!(!reads_pages(&plan(true)), "{:?}", plan(true));
        assert!(reads_pages(&plan(false)), "{:?}", plan(false));
        let q = |sort| HostQuery {
            sort,
            descending: true,
            filter: String::new(),
            offset: 0,
            limit: 50,
        };
        let table = |s: &Store, sort| -> Vec<(i64, u64, u64, u64)> {
            let (rows, _) = s.host_page(&q(sort)).unwrap();
            rows.iter()
                .map(|r| (r.id, r.queued, r.fetched, r.errors))
                .collect()
        };
        let kept = (table(&s, HostSort::Fetched), table(&s, HostSort::Errors));
        assert_eq!((kept.0[0].2, kept.1[0].3), (4, 1), "{kept:?}");
        s.conn.execute_batch("DROP TABLE host_counts").unwrap();
        assert_eq!(
            (table(&s, HostSort::Fetched), table(&s, HostSort::Errors)),
            kept
        );
    }
}
