//! The crawl state in one SQLite database (`OUT/crawl.sqlite`): hosts (robots.txt, parking),
//! the queue (per host, ordered by priority then arrival), pages (status, validators, content
//! digest, change observations, where the capture is), and how much of each WARC file is
//! accounted for. Every URL is identified by its 64-bit fingerprint; the seen-set is the
//! fingerprints of the queue and of the pages, read back at start.
//!
//! Rows are laid out for appends: the queue by arrival, pages by first visit, with small
//! integer indexes. (Tables keyed by URL or fingerprint made every insert dirty a random page:
//! 12 KB of write-ahead log per page fetched.)
//!
//! Results are saved in batches, one transaction each, only after the WARC bytes they point
//! to are on disk: after `kill -9` the state is that of the last batch, and the records
//! written after it are replayed from the archive rather than fetched again.

mod browse;
mod checkpoint;
mod commit;
mod directory;
mod figures;
mod host_counts;
mod page_figures;
mod pages;
mod rows;
mod schema;

pub(crate) use browse::{HostFigures, HostQuery, HostSort};
// The crate's surface (re-exported at its root) apart from what only the crate uses.
pub use directory::{COOP_CONFIG_META, is_running};
pub use figures::Figures;
pub use rows::NewUrl;

pub(crate) use directory::{LockError, lock};
pub(crate) use figures::NET_REFUSED;
/// Meta key: when the state was last saved (ms since the epoch), for the politeness of a
/// restart soon after.
pub(crate) const SAVED_AT: &str = "saved_at_ms";
pub(crate) use rows::{
    Batch, CopyRow, GiveUp, HostRecord, HostUpdate, KnownPage, PageRecord, Queued, RefreshablePage,
};

use crate::ids::{Fp, HostId};
use rows::{QUEUED_COLUMNS, queued, queued_columns};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use schema::{SCHEMA, cache_kib, migrate};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use webcoop_daemon::sqlite_error::{Hints, SqliteError};
use webcoop_daemon::sqlite_plans::keep_plans;

/// The `error` of a page robots.txt forbids.
pub(crate) const DISALLOWED: &str = "disallowed by robots.txt";
/// The `error` of a link held unfetched: the site's complete listing says nothing is there
/// (`coop::absences`).
pub(crate) const HELD: &str = "held: the site's complete listing does not name it";
/// How the record of a page skipped for the site's usage preferences begins.
pub(crate) const USAGE_SKIPPED: &str = "skipped: the site's usage preferences refuse ";
/// How the record of a page fetched and not kept for its `Content-Usage` header begins.
pub(crate) const USAGE_NOT_KEPT: &str = "not kept: its Content-Usage header refuses ";

/// The record of a page skipped because the site refuses `purpose`.
pub(crate) fn usage_skipped(purpose: &str) -> String {
    format!("{USAGE_SKIPPED}{purpose}")
}

/// A failure of the crawl database.
pub(crate) type StoreError = SqliteError;

/// What a failure of the crawl database tells the operator.
// A host's queued URLs, best first: from the top; the rest of one priority after a row; below
// a priority (?2 the rows to read).
const QUEUE_FROM_TOP: &str = concat!(
    "SELECT ",
    queued_columns!(),
    " FROM queue WHERE host = ?1 ORDER BY priority DESC, seq LIMIT ?2"
);
const QUEUE_REST_OF_PRIORITY: &str = concat!(
    "SELECT ",
    queued_columns!(),
    " FROM queue WHERE host = ?1 AND priority = ?3 AND seq > ?4 ORDER BY seq LIMIT ?2"
);
const QUEUE_BELOW_PRIORITY: &str = concat!(
    "SELECT ",
    queued_columns!(),
    " FROM queue WHERE host = ?1 AND priority < ?3 ORDER BY priority DESC, seq LIMIT ?2"
);

const HINTS: Hints = Hints {
    what: "crawl state",
    disk_full: "disk full: the crawl stopped at its last saved batch and resumes from there",
    cannot_open: "is the --out directory readable?",
    read_only: "is the --out directory writable?",
};

/// `source`, which happened on the crawl database at `path`.
fn store_error(path: &Path, source: rusqlite::Error) -> StoreError {
    SqliteError::new(path, source, &HINTS)
}

/// The crawl database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Hosts given an id since the last save, by origin: their rows are written in the next
    /// batch's transaction (`commit`), not one transaction each.
    new_hosts: RefCell<HashMap<String, HostId>>,
    /// The last id given this run: ids past it are free though not saved yet.
    last_host: Cell<i64>,
    /// The connection's page cache, KiB: it grows with the database (`schema::cache_kib`).
    cache_kib: i64,
}

impl Store {
    /// Opens (or creates) the state in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join("crawl.sqlite");
        let e = |source| store_error(&path, source);
        // It holds the crawler's hub subscription secrets.
        if let Err(err) = webcoop_daemon::private::private_database(&path) {
            tracing::warn!(
                "{}: cannot make it private to this user: {err}",
                path.display()
            );
        }
        let conn = Connection::open(&path).map_err(e)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(e)?;
        // Each refill of a host's queue binds a new limit and key: 1.2% of the crawl's CPU on
        // one host went to compiling its read again.
        keep_plans(&conn).map_err(e)?;
        conn.execute_batch(SCHEMA).map_err(e)?;
        migrate(&conn).map_err(e)?;
        page_figures::keep(&conn).map_err(e)?;
        host_counts::keep(&conn).map_err(e)?;
        let mut store = Store {
            conn,
            path: path.clone(),
            new_hosts: RefCell::default(),
            last_host: Cell::new(0),
            cache_kib: 0,
        };
        store.size_cache().map_err(e)?;
        Ok(store)
    }

    /// Gives the connection the page cache its database's size calls for, when it changed.
    fn size_cache(&mut self) -> rusqlite::Result<()> {
        let bytes = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        let kib = cache_kib(bytes);
        if kib != self.cache_kib {
            self.conn
                .execute_batch(&format!("PRAGMA cache_size = -{kib};"))?;
            self.cache_kib = kib;
        }
        Ok(())
    }

    /// Opens an existing state for reading only (`status` while a crawl runs).
    pub fn open_read_only(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join("crawl.sqlite");
        let e = |source| store_error(&path, source);
        let conn =
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(e)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(e)?;
        keep_plans(&conn).map_err(e)?;
        conn.execute_batch(&format!(
            "PRAGMA cache_size = -{};",
            schema::READ_ONLY_CACHE_KIB
        ))
        .map_err(e)?;
        Ok(Store {
            conn,
            path,
            new_hosts: RefCell::default(),
            last_host: Cell::new(0),
            cache_kib: 0,
        })
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        store_error(&self.path, source)
    }

    /// Every row of a query, mapped.
    fn rows<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params, map).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// A remembered value.
    pub fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Remembers a value.
    pub(crate) fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// The id of the host with this origin; a new one is numbered past every id saved or
    /// given since, and its row is written with the next batch. Ten thousand hosts found in
    /// a crawl's first minutes were ten thousand transactions of their own, each writing its
    /// leaves to the log: about 3 us a page at 10,000 x 20. A `kill -9` before the save
    /// loses the row with the queued URLs that name it, so no saved row points at a lost id.
    pub(crate) fn host_id(&self, origin: &str) -> Result<HostId, StoreError> {
        if let Some(id) = self.new_hosts.borrow().get(origin) {
            return Ok(*id);
        }
        let found = self
            .conn
            .query_row("SELECT id FROM hosts WHERE origin = ?1", [origin], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        if let Some(id) = found {
            return Ok(HostId(id));
        }
        let saved: i64 = self
            .conn
            .query_row("SELECT COALESCE(MAX(id), 0) FROM hosts", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        let id = HostId(saved.max(self.last_host.get()) + 1);
        self.last_host.set(id.0);
        self.new_hosts.borrow_mut().insert(origin.to_string(), id);
        Ok(id)
    }

    /// Records a host under an id given elsewhere (a fleet's), unless it is already.
    pub(crate) fn ensure_host(&self, id: HostId, origin: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO hosts (id, origin) VALUES (?1, ?2)",
                rusqlite::params![id, origin],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Every host.
    pub(crate) fn hosts(&self) -> Result<Vec<HostRecord>, StoreError> {
        self.rows(
            "SELECT id, origin, robots_status, robots_body, robots_fetched, skipped,
                    parked_until, failures, coop FROM hosts",
            [],
            |r| {
                Ok(HostRecord {
                    id: r.get(0)?,
                    origin: r.get(1)?,
                    robots_status: r.get::<_, Option<i64>>(2)?.map(|s| s as u16),
                    robots_body: r.get(3)?,
                    robots_fetched: r.get(4)?,
                    skipped: r.get(5)?,
                    parked_until: r.get(6)?,
                    failures: r.get::<_, i64>(7)?.max(0) as u32,
                    coop: r.get(8)?,
                })
            },
        )
    }

    /// Queued URLs per host.
    pub(crate) fn queued_per_host(&self) -> Result<Vec<(HostId, u64)>, StoreError> {
        self.rows("SELECT host, COUNT(*) FROM queue GROUP BY host", [], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64))
        })
    }

    /// The highest queue row in use (new rows are numbered after it).
    pub(crate) fn max_queue_seq(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM queue", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// The next queued URLs of a host, best first, after `after` (a priority and row read
    /// before) when given, skipping the rows in `exclude`.
    pub(crate) fn next_for_host(
        &self,
        host: HostId,
        after: Option<(f64, i64)>,
        limit: usize,
        exclude: &HashSet<i64>,
    ) -> Result<Vec<Queued>, StoreError> {
        let mut out = Vec::with_capacity(limit);
        let Some((p, s)) = after else {
            self.queued_into(
                &mut out,
                QUEUE_FROM_TOP,
                params![host, (limit + exclude.len()) as i64],
                limit,
                exclude,
            )?;
            return Ok(out);
        };
        // Two seeks rather than one range with an OR: many URLs share a priority (the links
        // of one page share its cash), and the OR walked all the rows of the cursor's priority
        // before it, at every refill.
        self.queued_into(
            &mut out,
            QUEUE_REST_OF_PRIORITY,
            params![host, (limit + exclude.len()) as i64, p, s],
            limit,
            exclude,
        )?;
        if out.len() < limit {
            self.queued_into(
                &mut out,
                QUEUE_BELOW_PRIORITY,
                params![host, (limit + exclude.len()) as i64, p],
                limit,
                exclude,
            )?;
        }
        Ok(out)
    }

    /// Appends the rows `sql` selects to `out`, skipping those in `exclude`, until it holds
    /// `limit`.
    fn queued_into(
        &self,
        out: &mut Vec<Queued>,
        sql: &str,
        params: impl rusqlite::Params,
        limit: usize,
        exclude: &HashSet<i64>,
    ) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params, queued).map_err(|e| self.err(e))?;
        for row in rows {
            if out.len() >= limit {
                break;
            }
            let q = row.map_err(|e| self.err(e))?;
            if !exclude.contains(&q.seq) {
                out.push(q);
            }
        }
        Ok(())
    }

    /// Every queued row of a host (to match archived records to their rows after a crash).
    pub(crate) fn queued_of_host(&self, host: HostId) -> Result<Vec<Queued>, StoreError> {
        self.rows(
            &format!("SELECT {QUEUED_COLUMNS} FROM queue WHERE host = ?1"),
            [host],
            queued,
        )
    }

    /// Adds the fingerprint of every URL queued or visited (the seen-set) to `into`.
    pub(crate) fn load_seen(
        &self,
        into: &mut HashMap<Fp, f64>,
        fetched: f64,
    ) -> Result<(), StoreError> {
        for sql in [
            "SELECT fp, ?1 FROM pages",
            "SELECT fp, priority FROM queue WHERE revisit = 0 AND ?1 IS NOT NULL",
        ] {
            let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
            let mut rows = stmt.query([fetched]).map_err(|e| self.err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.err(e))? {
                let fp = r.get::<_, Fp>(0).map_err(|e| self.err(e))?;
                let key = r.get::<_, f64>(1).map_err(|e| self.err(e))?;
                into.insert(fp, key);
            }
        }
        Ok(())
    }

    /// Every host's cooperation state: id, origin, JSON.
    pub fn coop_sites(&self) -> Result<Vec<(HostId, String, String)>, StoreError> {
        self.rows(
            "SELECT id, origin, coop FROM hosts WHERE coop IS NOT NULL ORDER BY origin",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    }

    /// Every WARC file with its accounted length.
    pub(crate) fn warc_files(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.rows("SELECT file, committed FROM warc ORDER BY file", [], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webcoop_daemon::sqlite_plans::times_prepared_again;

    fn fp(url: &str) -> Fp {
        Fp(xxhash_rust::xxh3::xxh3_64(url.as_bytes()))
    }

    fn new_url(seq: i64, host: HostId, url: &str) -> NewUrl {
        NewUrl {
            seq,
            host,
            url: url.to_string(),
            fp: fp(url),
            depth: 1,
            hops: 0,
            priority: 0.0,
            revisit: false,
        }
    }

    #[test]
    fn reads_after_a_cursor_continue_the_order_of_one_read_from_the_top() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path()).unwrap();
        let h = s.host_id("http://e.com").unwrap();
        let other = s.host_id("http://o.com").unwrap();
        // Runs of equal priority, as the links of one page have, and another host between.
        let mut new_urls = Vec::new();
        for seq in 1..=60i64 {
            let (host, origin) = if seq % 7 == 0 {
                (other, "http://o.com")
            } else {
                (h, "http://e.com")
            };
            let mut u = new_url(seq, host, &format!("{origin}/{seq}"));
            u.priority = [0.5, 0.25, 0.25, 0.125, 0.25][seq as usize % 5];
            new_urls.push(u);
        }
        s.commit(&Batch {
            new_urls,
            ..Default::default()
        })
        .unwrap();
        let none = HashSet::new();
        let all = s.next_for_host(h, None, 100, &none).unwrap();
        assert_eq!(all.len(), 52);
        assert!(all.iter().all(|q| q.host == h));
        let mut walked = Vec::new();
        let mut after = None;
        loop {
            let part = s.next_for_host(h, after, 5, &none).unwrap();
            let Some(last) = part.last() else { break };
            after = Some((last.priority, last.seq));
            walked.extend(part);
        }
        assert_eq!(
            walked, all,
            "five at a time from a cursor, the same rows in the same order"
        );
        let skip: HashSet<i64> = all.iter().skip(3).take(4).map(|q| q.seq).collect();
        let from = Some((all[2].priority, all[2].seq));
        let next = s.next_for_host(h, from, 2, &skip).unwrap();
        assert_eq!(next, all[7..9], "rows excluded are passed over");
        // Reads of other sizes and exclusions reuse each compiled read as it is.
        for (limit, from) in all.iter().enumerate().take(7).skip(1) {
            let after = Some((from.priority, from.seq));
            s.next_for_host(h, after, limit, &skip).unwrap();
            s.next_for_host(h, None, limit, &skip).unwrap();
        }
        let reprepared = |sql: &str| times_prepared_again(&s.conn, sql).unwrap();
        for sql in [QUEUE_FROM_TOP, QUEUE_REST_OF_PRIORITY, QUEUE_BELOW_PRIORITY] {
            assert_eq!(reprepared(sql), 0, "{sql}");
        }
        // The twin: without the guarantee, a read with a bound limit is prepared again at
        // each new value.
        s.conn
            .set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
                false,
            )
            .unwrap();
        let bound = "SELECT seq FROM queue WHERE host = ?1 ORDER BY seq LIMIT ?2";
        for limit in 1..=6 {
            let mut stmt = s.conn.prepare_cached(bound).unwrap();
            let rows = stmt.query_map(params![h, limit as i64], |_| Ok(()));
            assert_eq!(rows.unwrap().count(), limit);
        }
        assert!(reprepared(bound) >= 5, "{}", reprepared(bound));
    }

    #[test]
    fn a_new_hosts_row_is_written_with_the_next_batch_and_lost_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let rows = |s: &Store| -> Vec<(i64, String)> {
            s.rows("SELECT id, origin FROM hosts ORDER BY id", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap()
        };
        let mut s = Store::open(dir.path()).unwrap();
        let a = s.host_id("http://a.test").unwrap();
        let b = s.host_id("http://b.test").unwrap();
        assert_eq!((a, b), (HostId(1), HostId(2)));
        assert_eq!(s.host_id("http://a.test").unwrap(), a, "one id an origin");
        assert!(rows(&s).is_empty(), "no transaction of its own");
        s.commit(&Batch {
            new_urls: vec![new_url(1, b, "http://b.test/")],
            ..Default::default()
        })
        .unwrap();
        let saved = vec![(1, "http://a.test".into()), (2, "http://b.test".into())];
        assert_eq!(rows(&s), saved);
        assert_eq!(s.host_id("http://b.test").unwrap(), b, "found saved");
        // Killed before the next save: the host and its URL go together.
        let c = s.host_id("http://c.test").unwrap();
        assert_eq!(c, HostId(3));
        drop(s);
        let mut s = Store::open(dir.path()).unwrap();
        assert_eq!(rows(&s), saved);
        let d = s.host_id("http://d.test").unwrap();
        assert_eq!(d, HostId(3), "numbered past what was saved");
        s.commit(&Batch::default()).unwrap();
        assert_eq!(rows(&s)[2], (3, "http://d.test".into()));
        // An id given elsewhere (a fleet's) is passed too.
        s.ensure_host(HostId(40), "http://fleet.test").unwrap();
        assert_eq!(s.host_id("http://e.test").unwrap(), HostId(41));
    }

    #[test]
    fn a_url_queued_and_done_in_one_batch_leaves_no_row() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path()).unwrap();
        let h = s.host_id("http://e.com").unwrap();
        assert_eq!(s.host_id("http://e.com").unwrap(), h);
        let a = new_url(1, h, "http://e.com/a");
        let b = new_url(2, h, "http://e.com/b");
        let batch = Batch {
            new_urls: vec![a.clone(), b.clone()],
            done: vec![1],
            pages: vec![Box::new(PageRecord {
                url: a.url.clone(),
                fp: a.fp,
                host: h,
                status: Some(200),
                fetched_at: 1000,
                digest: Some(7),
                validator: Some("\"sha256-a\"".into()),
                ..Default::default()
            })],
            ..Default::default()
        };
        s.commit(&batch).unwrap();
        let rows = s.next_for_host(h, None, 10, &HashSet::new()).unwrap();
        assert_eq!(rows.len(), 1, "a is done");
        assert_eq!((rows[0].url.as_str(), rows[0].fp), ("http://e.com/b", b.fp));
        assert_eq!(s.queued_of_host(h).unwrap(), rows);
        assert_eq!(s.max_queue_seq().unwrap(), 2);
        let mut seen = HashMap::new();
        s.load_seen(&mut seen, -1.0).unwrap();
        let mut fps: Vec<Fp> = seen.keys().copied().collect();
        fps.sort_unstable();
        let mut expected = vec![a.fp, b.fp];
        expected.sort_unstable();
        assert_eq!(fps, expected, "queued and visited");
        assert_eq!(
            s.page_with_digest(7, a.fp.prefix(), "\"sha256-a\"")
                .unwrap()
                .as_deref(),
            Some("http://e.com/a")
        );
        // The twins: another digest, the right one under another page's prefix, or with
        // other content (a digest made to collide).
        let ask = |d, prefix, v| s.page_with_digest(d, prefix, v).unwrap();
        assert_eq!(ask(8, a.fp.prefix(), "\"sha256-a\""), None);
        assert_eq!(ask(7, a.fp.prefix().wrapping_add(1), "\"sha256-a\""), None);
        assert_eq!(ask(7, a.fp.prefix(), "\"sha256-b\""), None);
        assert_eq!(s.page(a.fp).unwrap().unwrap().digest, Some(7));
        let f = s.figures().unwrap();
        assert_eq!((f.pages, f.ok, f.queued, f.hosts), (1, 1, 1, 1));
    }

    #[test]
    fn revisits_count_changes_and_giving_up_records_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path()).unwrap();
        let h = s.host_id("http://e.com").unwrap();
        let page = |at, digest, changed| PageRecord {
            url: "http://e.com/a".into(),
            fp: fp("http://e.com/a"),
            host: h,
            status: Some(200),
            fetched_at: at,
            digest: Some(digest),
            etag: Some("\"v1\"".into()),
            changed,
            ..Default::default()
        };
        for (at, digest, changed) in [(1, 1, false), (2, 1, false), (3, 2, true)] {
            s.commit(&Batch {
                pages: vec![Box::new(page(at, digest, changed))],
                ..Default::default()
            })
            .unwrap();
        }
        let known = s.page(fp("http://e.com/a")).unwrap().unwrap();
        assert_eq!(
            (known.digest, known.fetched_at, known.etag.as_deref()),
            (Some(2), 3, Some("\"v1\""))
        );
        assert_eq!(s.figures().unwrap().changes, 1);
        assert_eq!(s.figures().unwrap().pages, 1, "three visits, one page");
        let n = s.requeue_pages(10).unwrap();
        assert_eq!(n, 1);
        let row = &s.queued_of_host(h).unwrap()[0];
        assert_eq!((row.seq, row.fp), (10, fp("http://e.com/a")));
        s.commit(&Batch {
            new_urls: vec![new_url(11, h, "http://e.com/b")],
            give_up: vec![GiveUp {
                host: h,
                reason: "unreachable".into(),
                at: 5,
            }],
            ..Default::default()
        })
        .unwrap();
        let f = s.figures().unwrap();
        assert_eq!(
            (f.queued, f.failures, f.pages),
            (0, 1, 2),
            "a keeps its record, b is given up"
        );
    }

    #[test]
    fn a_crawl_directory_of_an_older_layout_loses_its_digest_index_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let digest_indexes = |s: &Store| -> i64 {
            s.conn
                .query_row(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND sql LIKE '%digest%'",
                    [],
                    |r| r.get(0),
                )
                .unwrap()
        };
        {
            let s = Store::open(dir.path()).unwrap();
            assert_eq!(digest_indexes(&s), 0, "a new layout has none");
            s.conn
                .execute_batch(
                    "CREATE INDEX pages_by_digest ON pages (digest) WHERE digest IS NOT NULL",
                )
                .unwrap();
            // The twin: the older layout's index is there before the open.
            assert_eq!(digest_indexes(&s), 1);
        }
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(digest_indexes(&s), 0);
    }

    #[test]
    fn a_read_only_connection_keeps_a_small_page_cache_and_the_crawl_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let cache = |s: &Store| -> i64 {
            s.conn
                .query_row("PRAGMA cache_size", [], |r| r.get(0))
                .unwrap()
        };
        let crawl = Store::open(dir.path()).unwrap();
        let reader = Store::open_read_only(dir.path()).unwrap();
        assert_eq!(cache(&reader), -schema::READ_ONLY_CACHE_KIB);
        // The twin: the crawl's connection has the cache its database calls for.
        assert_eq!(cache(&crawl), -schema::CACHE_MIN_KIB);
        assert_ne!(cache(&crawl), cache(&reader));
    }
}
