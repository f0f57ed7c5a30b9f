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

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The `error` of a page robots.txt forbids.
pub const DISALLOWED: &str = "disallowed by robots.txt";

/// A failure of the crawl database.
#[derive(Debug, thiserror::Error)]
#[error("crawl state {path}: {source}{hint}")]
pub struct StoreError {
    path: PathBuf,
    source: rusqlite::Error,
    hint: &'static str,
}

impl StoreError {
    fn new(path: &Path, source: rusqlite::Error) -> Self {
        let hint = match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => {
                " (disk full: the crawl stopped at its last saved batch and resumes from there)"
            }
            Some(rusqlite::ErrorCode::CannotOpen) => " (is the --out directory readable?)",
            Some(rusqlite::ErrorCode::ReadOnly) => " (is the --out directory writable?)",
            _ => "",
        };
        StoreError {
            path: path.to_path_buf(),
            source,
            hint,
        }
    }
}

/// A queued URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    /// Queue row: arrival order.
    pub seq: i64,
    /// Host id.
    pub host: i64,
    /// The URL.
    pub url: String,
    /// Its fingerprint.
    pub fp: u64,
    /// Links from a seed.
    pub depth: u32,
    /// Redirects followed to get here.
    pub hops: u32,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Priority (higher first); 0 in FIFO order.
    pub priority: f64,
    /// A page visited before (a refresh): look up its validators.
    pub revisit: bool,
}

fn queued(r: &Row<'_>) -> rusqlite::Result<Queued> {
    Ok(Queued {
        seq: r.get(0)?,
        host: r.get(1)?,
        url: r.get(2)?,
        fp: r.get::<_, i64>(3)? as u64,
        depth: r.get::<_, i64>(4)?.max(0) as u32,
        hops: r.get::<_, i64>(5)?.max(0) as u32,
        attempts: r.get::<_, i64>(6)?.max(0) as u32,
        priority: r.get(7)?,
        revisit: r.get(8)?,
    })
}

const QUEUED_COLUMNS: &str = "seq, host, url, fp, depth, hops, attempts, priority, revisit";

/// A URL to add to the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewUrl {
    /// Its queue row, allocated by the frontier.
    pub seq: i64,
    /// Host id.
    pub host: i64,
    /// The URL.
    pub url: String,
    /// Its fingerprint.
    pub fp: u64,
    /// Links from a seed.
    pub depth: u32,
    /// Redirects followed.
    pub hops: u32,
    /// Priority.
    pub priority: f64,
    /// A page visited before, queued again to refresh it.
    pub revisit: bool,
}

/// What a fetch taught about a page.
#[derive(Debug, Clone, Default)]
pub struct PageRecord {
    /// The URL.
    pub url: String,
    /// Its fingerprint.
    pub fp: u64,
    /// Host id.
    pub host: i64,
    /// Links from a seed.
    pub depth: u32,
    /// Status code (none for a failure).
    pub status: Option<u16>,
    /// Why it failed or was not fetched.
    pub error: Option<String>,
    /// When (ms since the epoch).
    pub fetched_at: i64,
    /// `ETag`.
    pub etag: Option<String>,
    /// `Last-Modified`.
    pub last_modified: Option<String>,
    /// Media type.
    pub content_type: Option<String>,
    /// Body bytes as received.
    pub size: Option<u64>,
    /// Digest of the decoded content.
    pub digest: Option<u64>,
    /// The earlier page with the same content.
    pub duplicate_of: Option<String>,
    /// Where a redirect pointed.
    pub redirect_to: Option<String>,
    /// The capture: WARC file and offset.
    pub warc: Option<(String, u64)>,
    /// Whether the content differs from the previous visit.
    pub changed: bool,
    /// OPIC: the page's (interpolated) history and the clock when it was read.
    pub importance: Option<(f64, f64)>,
    /// What visits showed of its changes (JSON of `ChangeHistory`) and the rate they give.
    pub changes_seen: Option<(String, f64)>,
    /// The SHA-256 entity tag of the content (2xx).
    pub validator: Option<String>,
    /// The `response` record holding the content (a revisit keeps the earlier one).
    pub content: Option<(String, u64)>,
    /// The site announced the page deleted: no copy is held any more.
    pub gone: bool,
}

/// What was known of a page before this visit.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownPage {
    /// `ETag` last seen.
    pub etag: Option<String>,
    /// `Last-Modified` last seen.
    pub last_modified: Option<String>,
    /// Content digest last seen.
    pub digest: Option<u64>,
    /// When it was last fetched (ms).
    pub fetched_at: i64,
    /// OPIC history and the clock when it was last read.
    pub importance: (f64, f64),
    /// What visits showed of its changes (JSON of `ChangeHistory`).
    pub changes_seen: Option<String>,
    /// The SHA-256 entity tag of the content held.
    pub validator: Option<String>,
    /// The `response` record holding the content: WARC file and offset.
    pub content: Option<(String, u64)>,
}

/// A page the refresh schedule keeps track of.
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshablePage {
    /// Fingerprint.
    pub fp: u64,
    /// Host id.
    pub host: i64,
    /// The URL.
    pub url: String,
    /// Links from a seed.
    pub depth: u32,
    /// Last fetched (ms).
    pub fetched_at: i64,
    /// Estimated change rate (per second), if visited twice.
    pub rate: Option<f64>,
    /// OPIC history and clock at the last read.
    pub importance: (f64, f64),
}

/// A page as `copies` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyRow {
    /// The URL.
    pub url: String,
    /// Last status.
    pub status: Option<u16>,
    /// Last error.
    pub error: Option<String>,
    /// Last fetched or confirmed (ms).
    pub fetched_at: i64,
    /// Validator of the content held (its original's for a duplicate).
    pub validator: Option<String>,
    /// Announced deleted.
    pub gone: bool,
}

/// A host's persistent state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostRecord {
    /// Id.
    pub id: i64,
    /// `scheme://host[:port]`.
    pub origin: String,
    /// robots.txt status (none: no answer), if fetched.
    pub robots_status: Option<u16>,
    /// robots.txt body (at most the parse limit).
    pub robots_body: Option<Vec<u8>>,
    /// When robots.txt was fetched (ms).
    pub robots_fetched: Option<i64>,
    /// Why the host is not crawled.
    pub skipped: Option<String>,
    /// Parked until (ms).
    pub parked_until: Option<i64>,
    /// Consecutive failures.
    pub failures: u32,
    /// Its cooperation (JSON of `SiteCoop`).
    pub coop: Option<String>,
}

/// A host's state to save; robots.txt only when it was fetched again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostUpdate {
    /// Id.
    pub id: i64,
    /// robots.txt as fetched: status (none: no answer), body, when (ms).
    pub robots: Option<(Option<u16>, Vec<u8>, i64)>,
    /// Why the host is not crawled.
    pub skipped: Option<String>,
    /// Parked until (ms).
    pub parked_until: Option<i64>,
    /// Consecutive failures.
    pub failures: u32,
}

/// A host given up on: its queued URLs are recorded as failed with the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct GiveUp {
    /// Host id.
    pub host: i64,
    /// Why.
    pub reason: String,
    /// When (ms).
    pub at: i64,
}

/// One batch of results, saved in one transaction.
#[derive(Debug, Default)]
pub struct Batch {
    /// New URLs (saved first: a URL may be queued and done in the same batch).
    pub new_urls: Vec<NewUrl>,
    /// Pages fetched (or given up on).
    pub pages: Vec<PageRecord>,
    /// Queue rows done.
    pub done: Vec<i64>,
    /// Queue rows to try again: seq, attempts so far.
    pub retry: Vec<(i64, u32)>,
    /// Hosts whose state changed.
    pub hosts: Vec<HostUpdate>,
    /// Hosts given up on.
    pub give_up: Vec<GiveUp>,
    /// WARC files written to and their length on disk.
    pub warc: Vec<(String, u64)>,
    /// Remembered values.
    pub meta: Vec<(String, String)>,
    /// Hosts' cooperation state (JSON of `SiteCoop`).
    pub coop: Vec<(i64, String)>,
}

impl Batch {
    /// Whether there is nothing to save.
    pub fn is_empty(&self) -> bool {
        self.new_urls.is_empty()
            && self.pages.is_empty()
            && self.done.is_empty()
            && self.retry.is_empty()
            && self.hosts.is_empty()
            && self.give_up.is_empty()
            && self.warc.is_empty()
            && self.meta.is_empty()
            && self.coop.is_empty()
    }

    /// How many results it holds (to decide when to save).
    pub fn results(&self) -> usize {
        self.done.len() + self.retry.len()
    }
}

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY,
    origin TEXT NOT NULL UNIQUE,
    robots_status INTEGER,
    robots_body BLOB,
    robots_fetched INTEGER,
    skipped TEXT,
    parked_until INTEGER,
    failures INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS queue (
    seq INTEGER PRIMARY KEY,
    host INTEGER NOT NULL,
    priority REAL NOT NULL DEFAULT 0,
    url TEXT NOT NULL,
    fp INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    hops INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    revisit INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queue_by_host ON queue (host, priority DESC, seq);
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL,
    url TEXT NOT NULL,
    host INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    status INTEGER,
    error TEXT,
    fetched_at INTEGER NOT NULL,
    first_fetched INTEGER NOT NULL,
    last_changed INTEGER NOT NULL,
    etag TEXT,
    last_modified TEXT,
    content_type TEXT,
    size INTEGER,
    digest INTEGER,
    duplicate_of TEXT,
    redirect_to TEXT,
    warc_file TEXT,
    warc_offset INTEGER,
    visits INTEGER NOT NULL DEFAULT 1,
    changes INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS pages_by_fp ON pages (fp);
CREATE INDEX IF NOT EXISTS pages_by_digest ON pages (digest) WHERE digest IS NOT NULL;
CREATE TABLE IF NOT EXISTS warc (file TEXT PRIMARY KEY, committed INTEGER NOT NULL) WITHOUT ROWID;
";

/// Columns added since the first layout (table, column, declaration), for crawl directories
/// made before them.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("pages", "history", "REAL NOT NULL DEFAULT 0"),
    ("pages", "history_g", "REAL NOT NULL DEFAULT 0"),
    ("pages", "changes_seen", "TEXT"),
    ("pages", "rate", "REAL"),
    ("pages", "validator", "TEXT"),
    ("pages", "content_file", "TEXT"),
    ("pages", "content_offset", "INTEGER"),
    ("hosts", "coop", "TEXT"),
];

fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let mut have = HashSet::new();
    for table in ["pages", "hosts"] {
        let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            have.insert((table, r.get::<_, String>(0)?));
        }
    }
    for (table, name, decl) in ADDED_COLUMNS {
        if !have.contains(&(*table, name.to_string())) {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {name} {decl};"))?;
        }
    }
    Ok(())
}

/// Page cache of the crawl's connection: the queue index and the pages table's upper levels
/// stay in memory (a 2 MiB cache spilled and re-read pages on every batch).
const CACHE_KIB: i64 = 64 << 10;

/// Size of the write-ahead log past which a checkpoint makes it start over.
const WAL_BOUND: u64 = 64 << 20;

/// The crawl database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// Copies the write-ahead log into the database from a thread of its own, so the crawl loop
/// never waits for a checkpoint's writes and fsync; stops when dropped.
pub struct Checkpointer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Store {
    /// Opens (or creates) the state in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join("crawl.sqlite");
        let e = |source| StoreError::new(&path, source);
        let conn = Connection::open(&path).map_err(e)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(e)?;
        conn.execute_batch(SCHEMA).map_err(e)?;
        migrate(&conn).map_err(e)?;
        conn.execute_batch(&format!("PRAGMA cache_size = -{CACHE_KIB};"))
            .map_err(e)?;
        Ok(Store { conn, path })
    }

    /// Hands checkpoints to a thread of its own (see [`Checkpointer`]); until it is dropped,
    /// this connection does none itself.
    pub fn checkpoint_in_background(&self) -> Result<Checkpointer, StoreError> {
        let e = |source| StoreError::new(&self.path, source);
        let other = Connection::open(&self.path).map_err(e)?;
        other
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(e)?;
        self.conn
            .execute_batch("PRAGMA wal_autocheckpoint = 0;")
            .map_err(e)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let path = self.path.clone();
        let thread = std::thread::Builder::new()
            .name("checkpoint".into())
            .spawn(move || {
                let wal = path.with_extension("sqlite-wal");
                while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::park_timeout(std::time::Duration::from_millis(500));
                    // PASSIVE never waits, but under a steady stream of commits it never
                    // finishes either, and the log grows without end; past the bound, RESTART
                    // holds the writer briefly so the log starts over.
                    let big = std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_BOUND);
                    let mode = if big { "RESTART" } else { "PASSIVE" };
                    if let Err(err) =
                        other.execute_batch(&format!("PRAGMA wal_checkpoint({mode});"))
                    {
                        tracing::warn!("checkpoint of {}: {err}", path.display());
                    }
                }
                let _ = other.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
            })
            .map_err(|err| {
                StoreError::new(
                    &self.path,
                    rusqlite::Error::ToSqlConversionFailure(Box::new(err)),
                )
            })?;
        Ok(Checkpointer {
            stop,
            thread: Some(thread),
        })
    }

    /// Opens an existing state for reading only (`status` while a crawl runs).
    pub fn open_read_only(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join("crawl.sqlite");
        let e = |source| StoreError::new(&path, source);
        let conn =
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(e)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(e)?;
        Ok(Store { conn, path })
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::new(&self.path, source)
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
    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// The id of the host with this origin, created if new.
    pub fn host_id(&self, origin: &str) -> Result<i64, StoreError> {
        let found = self
            .conn
            .query_row("SELECT id FROM hosts WHERE origin = ?1", [origin], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        if let Some(id) = found {
            return Ok(id);
        }
        self.conn
            .execute("INSERT INTO hosts (origin) VALUES (?1)", [origin])
            .map_err(|e| self.err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Every host.
    pub fn hosts(&self) -> Result<Vec<HostRecord>, StoreError> {
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
    pub fn queued_per_host(&self) -> Result<Vec<(i64, u64)>, StoreError> {
        self.rows("SELECT host, COUNT(*) FROM queue GROUP BY host", [], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64))
        })
    }

    /// The highest queue row in use (new rows are numbered after it).
    pub fn max_queue_seq(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM queue", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// The next queued URLs of a host, best first, skipping the rows in `exclude`.
    pub fn next_for_host(
        &self,
        host: i64,
        limit: usize,
        exclude: &HashSet<i64>,
    ) -> Result<Vec<Queued>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {QUEUED_COLUMNS} FROM queue WHERE host = ?1 ORDER BY priority DESC, seq LIMIT ?2"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![host, (limit + exclude.len()) as i64], queued)
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(limit);
        for row in rows {
            let q = row.map_err(|e| self.err(e))?;
            if !exclude.contains(&q.seq) {
                out.push(q);
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Every queued row of a host (to match archived records to their rows after a crash).
    pub fn queued_of_host(&self, host: i64) -> Result<Vec<Queued>, StoreError> {
        self.rows(
            &format!("SELECT {QUEUED_COLUMNS} FROM queue WHERE host = ?1"),
            [host],
            queued,
        )
    }

    /// Adds the fingerprint of every URL queued or visited (the seen-set) to `into`.
    pub fn load_seen(&self, into: &mut HashMap<u64, f64>, fetched: f64) -> Result<(), StoreError> {
        for sql in [
            "SELECT fp, ?1 FROM pages",
            "SELECT fp, priority FROM queue WHERE revisit = 0 AND ?1 IS NOT NULL",
        ] {
            let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
            let mut rows = stmt.query([fetched]).map_err(|e| self.err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.err(e))? {
                let fp = r.get::<_, i64>(0).map_err(|e| self.err(e))? as u64;
                let key = r.get::<_, f64>(1).map_err(|e| self.err(e))?;
                into.insert(fp, key);
            }
        }
        Ok(())
    }

    /// Every page worth refreshing (fetched successfully, not a duplicate).
    pub fn refreshable_pages(&self) -> Result<Vec<RefreshablePage>, StoreError> {
        self.rows(
            "SELECT fp, host, url, depth, fetched_at, rate, history, history_g FROM pages
                 WHERE (status BETWEEN 200 AND 299 OR status = 304) AND duplicate_of IS NULL",
            [],
            |r| {
                Ok(RefreshablePage {
                    fp: r.get::<_, i64>(0)? as u64,
                    host: r.get(1)?,
                    url: r.get(2)?,
                    depth: r.get(3)?,
                    fetched_at: r.get(4)?,
                    rate: r.get(5)?,
                    importance: (r.get(6)?, r.get(7)?),
                })
            },
        )
    }

    /// Adds the content digest of every original (not duplicate) page to `into`.
    pub fn load_digests(&self, into: &mut HashSet<u64>) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT digest FROM pages WHERE digest IS NOT NULL AND duplicate_of IS NULL")
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            into.insert(r.get::<_, i64>(0).map_err(|e| self.err(e))? as u64);
        }
        Ok(())
    }

    /// The first page fetched with this content digest.
    pub fn page_with_digest(&self, digest: u64) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT url FROM pages WHERE digest = ?1 AND duplicate_of IS NULL
                 ORDER BY first_fetched LIMIT 1",
                [digest as i64],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// What was known of the page with fingerprint `fp`, for a conditional GET and change
    /// detection.
    pub fn page(&self, fp: u64) -> Result<Option<KnownPage>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT etag, last_modified, digest, fetched_at, history, history_g, changes_seen,
                    validator, content_file, content_offset
                 FROM pages WHERE fp = ?1",
            )
            .and_then(|mut s| {
                s.query_row([fp as i64], |r| {
                    Ok(KnownPage {
                        etag: r.get(0)?,
                        last_modified: r.get(1)?,
                        digest: r.get::<_, Option<i64>>(2)?.map(|d| d as u64),
                        fetched_at: r.get(3)?,
                        importance: (r.get(4)?, r.get(5)?),
                        changes_seen: r.get(6)?,
                        validator: r.get(7)?,
                        content: match (r.get::<_, Option<String>>(8)?, r.get::<_, Option<i64>>(9)?)
                        {
                            (Some(f), Some(o)) => Some((f, o.max(0) as u64)),
                            _ => None,
                        },
                    })
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Every page with what is held of it, for `copies`.
    pub fn copies(&self) -> Result<Vec<CopyRow>, StoreError> {
        self.rows(
            "SELECT p.url, p.status, p.error, p.fetched_at,
                    COALESCE(p.validator, o.validator), p.error LIKE 'deleted:%'
                 FROM pages p LEFT JOIN pages o ON o.url = p.duplicate_of
                 ORDER BY p.url",
            [],
            |r| {
                Ok(CopyRow {
                    url: r.get(0)?,
                    status: r.get::<_, Option<i64>>(1)?.map(|s| s as u16),
                    error: r.get(2)?,
                    fetched_at: r.get(3)?,
                    validator: r.get(4)?,
                    gone: r.get::<_, Option<bool>>(5)?.unwrap_or(false),
                })
            },
        )
    }

    /// Where the content held of `url` is archived, with its validator (following a
    /// duplicate to its original).
    pub fn content_of(&self, url: &str) -> Result<Option<(String, u64, String)>, StoreError> {
        self.conn
            .query_row(
                "SELECT COALESCE(o.content_file, p.content_file),
                    COALESCE(o.content_offset, p.content_offset),
                    COALESCE(o.validator, p.validator)
                 FROM pages p LEFT JOIN pages o ON o.url = p.duplicate_of
                 WHERE p.url = ?1 AND (p.status BETWEEN 200 AND 299 OR p.status = 304)",
                [url],
                |r| {
                    Ok(
                        match (
                            r.get::<_, Option<String>>(0)?,
                            r.get::<_, Option<i64>>(1)?,
                            r.get::<_, Option<String>>(2)?,
                        ) {
                            (Some(f), Some(o), Some(v)) => Some((f, o.max(0) as u64, v)),
                            _ => None,
                        },
                    )
                },
            )
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.err(e))
    }

    /// Every host's cooperation state: id, origin, JSON.
    pub fn coop_sites(&self) -> Result<Vec<(i64, String, String)>, StoreError> {
        self.rows(
            "SELECT id, origin, coop FROM hosts WHERE coop IS NOT NULL ORDER BY origin",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    }

    /// Every WARC file with its accounted length.
    pub fn warc_files(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.rows("SELECT file, committed FROM warc ORDER BY file", [], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64))
        })
    }

    /// Queues every page fetched successfully again (a refresh pass), rows numbered from
    /// `first_seq` in order of last visit; returns how many.
    pub fn requeue_pages(&mut self, first_seq: i64) -> Result<u64, StoreError> {
        let n = self
            .conn
            .execute(
                "INSERT INTO queue (seq, host, url, fp, depth, revisit)
                 SELECT ?1 + ROW_NUMBER() OVER (ORDER BY fetched_at, id) - 1, host, url, fp, depth, 1 FROM pages
                 WHERE (status BETWEEN 200 AND 299 OR status = 304) AND duplicate_of IS NULL",
                [first_seq],
            )
            .map_err(|e| self.err(e))?;
        Ok(n as u64)
    }

    /// Saves a batch in one transaction.
    pub fn commit(&mut self, batch: &Batch) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| StoreError::new(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut queue = tx
                .prepare_cached(
                    "INSERT INTO queue (seq, host, priority, url, fp, depth, hops, revisit) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(e)?;
            for u in &batch.new_urls {
                queue
                    .execute(params![
                        u.seq,
                        u.host,
                        u.priority,
                        u.url,
                        u.fp as i64,
                        u.depth,
                        u.hops,
                        u.revisit
                    ])
                    .map_err(e)?;
            }
            let mut page = tx
                .prepare_cached(
                    "INSERT INTO pages (url, host, depth, status, error, fetched_at, first_fetched,
                        last_changed, etag, last_modified, content_type, size, digest, duplicate_of,
                        redirect_to, warc_file, warc_offset, visits, changes, fp,
                        history, history_g, changes_seen, rate, validator, content_file, content_offset)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, 1, 0, ?17,
                        COALESCE(?18, 0), COALESCE(?19, 0), ?20, ?21, ?22, ?23, ?24)
                     ON CONFLICT (fp) DO UPDATE SET status = excluded.status, error = excluded.error,
                        fetched_at = excluded.fetched_at,
                        last_changed = CASE WHEN ?16 THEN excluded.fetched_at ELSE pages.last_changed END,
                        etag = COALESCE(excluded.etag, pages.etag),
                        last_modified = COALESCE(excluded.last_modified, pages.last_modified),
                        content_type = COALESCE(excluded.content_type, pages.content_type),
                        size = COALESCE(excluded.size, pages.size),
                        digest = COALESCE(excluded.digest, pages.digest),
                        duplicate_of = excluded.duplicate_of, redirect_to = excluded.redirect_to,
                        warc_file = COALESCE(excluded.warc_file, pages.warc_file),
                        warc_offset = COALESCE(excluded.warc_offset, pages.warc_offset),
                        visits = pages.visits + 1, changes = pages.changes + ?16,
                        history = COALESCE(?18, pages.history),
                        history_g = COALESCE(?19, pages.history_g),
                        changes_seen = COALESCE(?20, pages.changes_seen),
                        rate = COALESCE(?21, pages.rate),
                        validator = CASE WHEN ?25 THEN NULL ELSE COALESCE(?22, pages.validator) END,
                        content_file = CASE WHEN ?25 THEN NULL ELSE COALESCE(?23, pages.content_file) END,
                        content_offset = CASE WHEN ?25 THEN NULL ELSE COALESCE(?24, pages.content_offset) END",
                )
                .map_err(e)?;
            for p in &batch.pages {
                page.execute(params![
                    p.url,
                    p.host,
                    p.depth,
                    p.status.map(i64::from),
                    p.error,
                    p.fetched_at,
                    p.etag,
                    p.last_modified,
                    p.content_type,
                    p.size.map(|s| s as i64),
                    p.digest.map(|d| d as i64),
                    p.duplicate_of,
                    p.redirect_to,
                    p.warc.as_ref().map(|w| w.0.as_str()),
                    p.warc.as_ref().map(|w| w.1 as i64),
                    i64::from(p.changed),
                    p.fp as i64,
                    p.importance.map(|i| i.0),
                    p.importance.map(|i| i.1),
                    p.changes_seen.as_ref().map(|c| c.0.as_str()),
                    p.changes_seen.as_ref().map(|c| c.1),
                    p.validator,
                    p.content.as_ref().map(|c| c.0.as_str()),
                    p.content.as_ref().map(|c| c.1 as i64),
                    p.gone || matches!(p.status, Some(404 | 410))
                ])
                .map_err(e)?;
            }
            let mut done = tx
                .prepare_cached("DELETE FROM queue WHERE seq = ?1")
                .map_err(e)?;
            for seq in &batch.done {
                done.execute([seq]).map_err(e)?;
            }
            let mut retry = tx
                .prepare_cached("UPDATE queue SET attempts = ?2 WHERE seq = ?1")
                .map_err(e)?;
            for (seq, attempts) in &batch.retry {
                retry.execute(params![seq, attempts]).map_err(e)?;
            }
            let mut robots = tx
                .prepare_cached(
                    "UPDATE hosts SET robots_status = ?2, robots_body = ?3, robots_fetched = ?4 WHERE id = ?1",
                )
                .map_err(e)?;
            let mut host = tx
                .prepare_cached(
                    "UPDATE hosts SET skipped = ?2, parked_until = ?3, failures = ?4 WHERE id = ?1",
                )
                .map_err(e)?;
            for h in &batch.hosts {
                if let Some((status, body, at)) = &h.robots {
                    robots
                        .execute(params![h.id, status.map(i64::from), body, at])
                        .map_err(e)?;
                }
                host.execute(params![h.id, h.skipped, h.parked_until, h.failures])
                    .map_err(e)?;
            }
            for g in &batch.give_up {
                tx.execute(
                    "INSERT INTO pages (url, fp, host, depth, error, fetched_at, first_fetched, last_changed)
                     SELECT url, fp, host, depth, ?2, ?3, ?3, ?3 FROM queue WHERE host = ?1 ORDER BY seq
                     ON CONFLICT (fp) DO NOTHING",
                    params![g.host, g.reason, g.at],
                )
                .map_err(e)?;
                tx.execute("DELETE FROM queue WHERE host = ?1", [g.host])
                    .map_err(e)?;
            }
            let mut warc = tx
                .prepare_cached(
                    "INSERT INTO warc (file, committed) VALUES (?1, ?2)
                     ON CONFLICT (file) DO UPDATE SET committed = excluded.committed",
                )
                .map_err(e)?;
            for (file, len) in &batch.warc {
                warc.execute(params![file, *len as i64]).map_err(e)?;
            }
            let mut meta = tx
                .prepare_cached(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )
                .map_err(e)?;
            for (k, v) in &batch.meta {
                meta.execute(params![k, v]).map_err(e)?;
            }
            let mut coop = tx
                .prepare_cached("UPDATE hosts SET coop = ?2 WHERE id = ?1")
                .map_err(e)?;
            for (id, json) in &batch.coop {
                coop.execute(params![id, json]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

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
    pub pages: u64,
    /// 2xx.
    pub ok: u64,
    /// 304 Not Modified.
    pub not_modified: u64,
    /// Other 3xx.
    pub redirects: u64,
    /// 4xx.
    pub client_errors: u64,
    /// 5xx.
    pub server_errors: u64,
    /// No response (timeouts, refused connections, hosts given up on).
    pub failures: u64,
    /// Forbidden by robots.txt.
    pub disallowed: u64,
    /// Exact duplicates of another page.
    pub duplicates: u64,
    /// Changes seen on revisits.
    pub changes: u64,
    /// URLs waiting.
    pub queued: u64,
    /// Hosts known.
    pub hosts: u64,
    /// Hosts not crawled (for example Crawl-delay over the cap).
    pub hosts_skipped: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Bytes of WARC written.
    pub warc_bytes: u64,
    /// First fetch (ms).
    pub first_fetch: u64,
    /// Last fetch (ms).
    pub last_fetch: u64,
}

impl Figures {
    /// Requests that got a response or failed (not those robots.txt forbade).
    pub fn fetched(&self) -> u64 {
        self.pages - self.disallowed
    }

    /// Responses that are errors or no response at all.
    pub fn errors(&self) -> u64 {
        self.client_errors + self.server_errors + self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(url: &str) -> u64 {
        xxhash_rust::xxh3::xxh3_64(url.as_bytes())
    }

    fn new_url(seq: i64, host: i64, url: &str) -> NewUrl {
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
            pages: vec![PageRecord {
                url: a.url.clone(),
                fp: a.fp,
                host: h,
                status: Some(200),
                fetched_at: 1000,
                digest: Some(7),
                ..Default::default()
            }],
            ..Default::default()
        };
        s.commit(&batch).unwrap();
        let rows = s.next_for_host(h, 10, &HashSet::new()).unwrap();
        assert_eq!(rows.len(), 1, "a is done");
        assert_eq!((rows[0].url.as_str(), rows[0].fp), ("http://e.com/b", b.fp));
        assert_eq!(s.queued_of_host(h).unwrap(), rows);
        assert_eq!(s.max_queue_seq().unwrap(), 2);
        let mut seen = HashMap::new();
        s.load_seen(&mut seen, -1.0).unwrap();
        let mut fps: Vec<u64> = seen.keys().copied().collect();
        fps.sort_unstable();
        let mut expected = vec![a.fp, b.fp];
        expected.sort_unstable();
        assert_eq!(fps, expected, "queued and visited");
        assert_eq!(
            s.page_with_digest(7).unwrap().as_deref(),
            Some("http://e.com/a")
        );
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
                pages: vec![page(at, digest, changed)],
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
}
