//! The agent's persistent state in one SQLite database (`STATE/agent.sqlite`): the inventory,
//! the change log with its sequence numbers, and the kept versions of text resources.
//!
//! Every batch of changes is one transaction, so `kill -9` at any moment leaves either the
//! state before the batch or after it. The in-memory inventory is updated only after a commit;
//! a batch that fails (a full disk) changes nothing and is found again by the next scan.

use crate::inventory::{FileEntry, Inventory};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use webcoop_daemon::sqlite_error::{Hints, SqliteError};
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::validator::Sha256Digest;

/// Change times kept per file.
pub(crate) const HISTORY_LEN: usize = 64;

/// A state operation that failed.
pub(crate) type StoreError = SqliteError;

/// What a failure of the state database tells the operator.
const HINTS: Hints = Hints {
    what: "state database",
    disk_full: "disk full: nothing was saved, the changes will be picked up again",
    cannot_open: "check the state directory's permissions",
    read_only: "check the state directory's permissions",
};

/// `source`, which happened on the state database at `path`.
fn store_error(path: &Path, source: rusqlite::Error) -> StoreError {
    SqliteError::new(path, source, &HINTS)
}

/// Milliseconds since the epoch, the resolution of every stored time.
pub(crate) fn to_ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// The inverse of [`to_ms`].
pub(crate) fn from_ms(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or(DateTime::UNIX_EPOCH)
}

/// Truncates a time to the stored resolution, so memory and disk always agree.
pub(crate) fn truncate_ms(t: DateTime<Utc>) -> DateTime<Utc> {
    from_ms(to_ms(t))
}

/// A change as logged.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedChange {
    /// Its sequence number.
    pub(crate) seq: u64,
    /// What happened.
    pub kind: ChangeKind,
    /// The docroot path.
    pub path: String,
    /// When it was seen.
    pub(crate) time: DateTime<Utc>,
    /// The new version.
    pub(crate) sha256: Option<Sha256Digest>,
    /// The version replaced.
    pub(crate) prev_sha256: Option<Sha256Digest>,
    /// Bytes of the new version.
    pub(crate) size: Option<u64>,
    /// Media type of the new version.
    pub(crate) content_type: Option<String>,
    /// Fraction of the text changed.
    pub(crate) changed: Option<f64>,
}

/// Told of every batch of changes once it is saved (the service's hub and IndexNow listen).
pub(crate) type ChangeObserver = Box<dyn FnMut(&[LoggedChange], &Inventory) + Send>;

/// A text version to keep, compressed by the caller (in parallel, off the transaction).
#[derive(Debug)]
pub(crate) struct NewVersion {
    /// The file.
    pub path: String,
    /// The version's digest.
    pub(crate) sha256: Sha256Digest,
    /// Its size uncompressed.
    pub(crate) size: u64,
    /// Its content, zstd-compressed.
    pub(crate) compressed: Vec<u8>,
}

thread_local! {
    // One compression context per reading thread: creating one per file (its tables zeroed
    // each time) was 9% of the agent's CPU on a first run over 100,000 pages.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `content` compressed at zstd level 3, with this thread's context.
fn compress_version(content: &[u8]) -> Vec<u8> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = zstd::bulk::Compressor::new(3).ok();
        }
        match c.as_mut() {
            Some(z) => z.compress(content).unwrap_or_default(),
            None => zstd::bulk::compress(content, 3).unwrap_or_default(),
        }
    })
}

impl NewVersion {
    /// Compresses `content` for keeping.
    pub(crate) fn of(path: &str, sha256: Sha256Digest, content: &[u8]) -> NewVersion {
        NewVersion {
            path: path.to_string(),
            sha256,
            size: content.len() as u64,
            compressed: compress_version(content),
        }
    }
}

/// Everything one reconciliation found, to be saved at once.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Files to add or update, with the change time to append to their history and count as a
    /// change (none for a touch or a baseline entry).
    pub(crate) upserts: Vec<(String, FileEntry, Option<DateTime<Utc>>)>,
    /// Files gone.
    pub(crate) deletions: Vec<String>,
    /// Changes to log (their `seq` is assigned on commit).
    pub(crate) changes: Vec<LoggedChange>,
    /// Text versions to keep.
    pub(crate) versions: Vec<NewVersion>,
    /// Files the web server refused, with what was judged.
    pub(crate) refusals: Vec<(String, RefusedFile)>,
    /// Files no longer refused (public now, or gone).
    pub(crate) unrefused: Vec<String>,
    /// Public files judged again, and public still.
    pub(crate) rejudged: Vec<String>,
}

impl Batch {
    /// Records that `path`, listed with `old`, left the listing at `now` (gone, or no longer
    /// public): a deletion logged and the file dropped.
    pub(crate) fn delete(&mut self, path: &str, old: Sha256Digest, now: DateTime<Utc>) {
        self.changes.push(LoggedChange {
            seq: 0,
            kind: ChangeKind::Deleted,
            path: path.to_string(),
            time: now,
            sha256: None,
            prev_sha256: Some(old),
            size: None,
            content_type: None,
            changed: None,
        });
        self.deletions.push(path.to_string());
    }

    /// Whether there is nothing to save.
    pub(crate) fn is_empty(&self) -> bool {
        self.upserts.is_empty()
            && self.deletions.is_empty()
            && self.changes.is_empty()
            && self.versions.is_empty()
            && self.refusals.is_empty()
            && self.unrefused.is_empty()
            && self.rejudged.is_empty()
    }
}

/// How many versions to keep, within what disk budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    /// Versions kept per text resource.
    pub(crate) versions_per_file: usize,
    /// Total bytes of compressed versions.
    pub(crate) versions_budget: u64,
    /// Changes kept in the log.
    pub(crate) changes: usize,
}

/// The state database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    versions_bytes: u64,
}

fn kind_code(k: ChangeKind) -> i64 {
    match k {
        ChangeKind::Created => 0,
        ChangeKind::Modified => 1,
        ChangeKind::Deleted => 2,
    }
}

fn kind_of(code: i64) -> ChangeKind {
    match code {
        0 => ChangeKind::Created,
        1 => ChangeKind::Modified,
        _ => ChangeKind::Deleted,
    }
}

fn digest_of(blob: Option<Vec<u8>>) -> Option<Sha256Digest> {
    blob.and_then(|b| b.try_into().ok()).map(Sha256Digest)
}

fn history_push(blob: Option<Vec<u8>>, t: DateTime<Utc>) -> Vec<u8> {
    let mut times: Vec<i64> = blob
        .unwrap_or_default()
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    times.push(to_ms(t));
    let skip = times.len().saturating_sub(HISTORY_LEN);
    times[skip..].iter().flat_map(|t| t.to_le_bytes()).collect()
}

// `synchronous = FULL` in WAL mode syncs the log at every commit: a sequence number handed to
// the hub (and so to subscribers) is on disk before anyone sees it, so a power loss can never
// issue it again for another change. NORMAL only survives a crash of the process.
const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    fast INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    modified INTEGER NOT NULL,
    change_count INTEGER NOT NULL,
    history BLOB NOT NULL,
    ctime_ns INTEGER NOT NULL DEFAULT 0,
    judged INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refused (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    reason TEXT NOT NULL,
    judged INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refused_by_judged ON refused (judged);
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    kind INTEGER NOT NULL,
    time INTEGER NOT NULL,
    sha256 BLOB,
    prev_sha256 BLOB,
    size INTEGER,
    content_type TEXT,
    changed REAL
);
CREATE TABLE IF NOT EXISTS versions (
    path TEXT NOT NULL,
    sha256 BLOB NOT NULL,
    stored INTEGER NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (path, sha256)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS versions_by_age ON versions (stored);
";

/// Columns added since the first release, with their definitions: a state written by an
/// older agent gains them when opened (its files then count as never judged).
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("files", "ctime_ns", "INTEGER NOT NULL DEFAULT 0"),
    ("files", "judged", "INTEGER NOT NULL DEFAULT 0"),
];

/// Indexes on added columns, created once the columns exist.
const LATE_INDEXES: &str = "CREATE INDEX IF NOT EXISTS files_by_judged ON files (judged);";

/// A file the web server refused, as judged: what was asked about, and the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefusedFile {
    /// Bytes, when judged.
    pub(crate) size: u64,
    /// Modification time, when judged.
    pub(crate) mtime_ns: i64,
    /// Status change time, when judged (permissions, owner, links).
    pub(crate) ctime_ns: i64,
    /// SHA-256 of the bytes judged.
    pub(crate) sha256: Sha256Digest,
    /// Why it is not published, as the log and the console say it.
    pub(crate) reason: String,
}

/// A file due to be judged again, and whether it is public now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Due {
    /// The docroot path.
    pub path: String,
    /// Listed (public) now, or refused now.
    pub(crate) public: bool,
    /// When it was last judged (ms; 0: never, or asked again by a change of the rules).
    pub(crate) judged: i64,
}

/// Adds the columns an older state lacks, then the indexes on them.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    for (table, column, definition) in ADDED_COLUMNS {
        let present: bool = conn.query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
            params![table, column],
            |r| r.get(0),
        )?;
        if !present {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))?;
        }
    }
    conn.execute_batch(LATE_INDEXES)
}

impl Store {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join("agent.sqlite");
        if let Err(e) = webcoop_daemon::private::private_database(&path) {
            tracing::warn!(
                "{}: cannot make it private to this user: {e}",
                path.display()
            );
        }
        let conn = Connection::open(&path).map_err(|e| store_error(&path, e))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| store_error(&path, e))?;
        migrate(&conn).map_err(|e| store_error(&path, e))?;
        let versions_bytes: i64 = conn
            .query_row(
                "SELECT COALESCE(SUM(length(data)), 0) FROM versions",
                [],
                |r| r.get(0),
            )
            .map_err(|e| store_error(&path, e))?;
        Ok(Store {
            conn,
            path,
            versions_bytes: versions_bytes.max(0) as u64,
        })
    }

    /// Opens the database of `dir` for reading only, beside a running agent (WAL lets readers
    /// and the writer work at the same time).
    pub(crate) fn open_read_only(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join("agent.sqlite");
        let conn = Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| store_error(&path, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| store_error(&path, e))?;
        Ok(Store {
            conn,
            path,
            versions_bytes: 0,
        })
    }

    /// What the state says of `path` now: validator, size and last modification.
    pub(crate) fn file(
        &self,
        path: &str,
    ) -> Result<Option<(Sha256Digest, u64, DateTime<Utc>)>, StoreError> {
        let row: Option<(Vec<u8>, i64, i64)> = self
            .conn
            .query_row(
                "SELECT sha256, size, modified FROM files WHERE path = ?1",
                [path],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.and_then(|(sha, size, modified)| {
            digest_of(Some(sha)).map(|d| (d, size.max(0) as u64, from_ms(modified)))
        }))
    }

    /// Number of public files.
    pub(crate) fn file_count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM files", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        Ok(n.max(0) as u64)
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        store_error(&self.path, e)
    }

    /// A setting remembered across runs.
    pub(crate) fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Remembers a setting.
    pub(crate) fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// The inventory as last committed.
    pub(crate) fn load_inventory(&self) -> Result<Inventory, StoreError> {
        // Sized exactly: the vector becomes the map's input, and doubling would leave a third
        // of it as slack at the memory peak of the start.
        let count: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM files", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        let mut entries = Vec::with_capacity(count.max(0) as usize);
        let mut stmt = self
            .conn
            .prepare("SELECT path, size, mtime_ns, sha256, fast, modified, ctime_ns FROM files")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                let path: String = r.get(0)?;
                let sha: Vec<u8> = r.get(3)?;
                Ok((
                    path,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    sha,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (path, size, mtime_ns, sha, fast, modified, ctime_ns) =
                row.map_err(|e| self.err(e))?;
            let Some(sha256) = digest_of(Some(sha)) else {
                continue;
            };
            entries.push((
                path.into_boxed_str(),
                FileEntry {
                    size: size.max(0) as u64,
                    mtime_ns,
                    ctime_ns,
                    sha256,
                    fast: fast as u64,
                    modified: from_ms(modified),
                    seen: false,
                },
            ));
        }
        Ok(Inventory::from_entries(entries))
    }

    /// Saves a batch in one transaction; returns it with sequence numbers assigned.
    pub(crate) fn commit(
        &mut self,
        mut batch: Batch,
        now: DateTime<Utc>,
        retention: &Retention,
    ) -> Result<Batch, StoreError> {
        let path = self.path.clone();
        let e = |err| store_error(&path, err);
        let tx = self.conn.transaction().map_err(e)?;
        let mut versions_bytes = self.versions_bytes as i64;
        {
            let mut get_history = tx
                .prepare_cached("SELECT history FROM files WHERE path = ?1")
                .map_err(e)?;
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO files (path, size, mtime_ns, sha256, fast, first_seen, modified, change_count, history, ctime_ns, judged)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?9, ?10, ?6)
                     ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,
                       sha256 = excluded.sha256, fast = excluded.fast, modified = excluded.modified,
                       change_count = files.change_count + ?8, history = excluded.history,
                       ctime_ns = excluded.ctime_ns, judged = excluded.judged",
                )
                .map_err(e)?;
            for (p, entry, changed_at) in &batch.upserts {
                let old: Option<Vec<u8>> = get_history
                    .query_row([p], |r| r.get(0))
                    .optional()
                    .map_err(e)?;
                let history = match changed_at {
                    Some(t) => history_push(old, *t),
                    None => old.unwrap_or_default(),
                };
                upsert
                    .execute(params![
                        p,
                        entry.size as i64,
                        entry.mtime_ns,
                        &entry.sha256.0[..],
                        entry.fast as i64,
                        to_ms(now),
                        to_ms(entry.modified),
                        i64::from(changed_at.is_some()),
                        history,
                        entry.ctime_ns
                    ])
                    .map_err(e)?;
            }
            let mut delete_file = tx
                .prepare_cached("DELETE FROM files WHERE path = ?1")
                .map_err(e)?;
            let mut version_sizes = tx
                .prepare_cached(
                    "SELECT COALESCE(SUM(length(data)), 0) FROM versions WHERE path = ?1",
                )
                .map_err(e)?;
            let mut delete_versions = tx
                .prepare_cached("DELETE FROM versions WHERE path = ?1")
                .map_err(e)?;
            for p in &batch.deletions {
                delete_file.execute([p]).map_err(e)?;
                let freed: i64 = version_sizes.query_row([p], |r| r.get(0)).map_err(e)?;
                delete_versions.execute([p]).map_err(e)?;
                versions_bytes -= freed;
            }
            let mut refuse = tx
                .prepare_cached(
                    "INSERT INTO refused (path, size, mtime_ns, ctime_ns, sha256, reason, judged)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,
                       ctime_ns = excluded.ctime_ns, sha256 = excluded.sha256, reason = excluded.reason,
                       judged = excluded.judged",
                )
                .map_err(e)?;
            for (p, r) in &batch.refusals {
                refuse
                    .execute(params![
                        p,
                        r.size as i64,
                        r.mtime_ns,
                        r.ctime_ns,
                        &r.sha256.0[..],
                        r.reason,
                        to_ms(now)
                    ])
                    .map_err(e)?;
            }
            let mut unrefuse = tx
                .prepare_cached("DELETE FROM refused WHERE path = ?1")
                .map_err(e)?;
            for p in &batch.unrefused {
                unrefuse.execute([p]).map_err(e)?;
            }
            let mut judged = tx
                .prepare_cached("UPDATE files SET judged = ?2 WHERE path = ?1")
                .map_err(e)?;
            for p in &batch.rejudged {
                judged.execute(params![p, to_ms(now)]).map_err(e)?;
            }
            let mut log = tx
                .prepare_cached(
                    "INSERT INTO changes (path, kind, time, sha256, prev_sha256, size, content_type, changed)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(e)?;
            for c in &mut batch.changes {
                log.execute(params![
                    c.path,
                    kind_code(c.kind),
                    to_ms(c.time),
                    c.sha256.map(|d| d.0.to_vec()),
                    c.prev_sha256.map(|d| d.0.to_vec()),
                    c.size.map(|s| s as i64),
                    c.content_type,
                    c.changed
                ])
                .map_err(e)?;
                c.seq = tx.last_insert_rowid() as u64;
            }
            let mut old_size = tx
                .prepare_cached("SELECT length(data) FROM versions WHERE path = ?1 AND sha256 = ?2")
                .map_err(e)?;
            let mut put_version = tx
                .prepare_cached(
                    "INSERT INTO versions (path, sha256, stored, size, data) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (path, sha256) DO UPDATE SET stored = excluded.stored",
                )
                .map_err(e)?;
            let mut surplus = tx
                .prepare_cached("SELECT sha256, length(data) FROM versions WHERE path = ?1 ORDER BY stored DESC, sha256 LIMIT -1 OFFSET ?2")
                .map_err(e)?;
            let mut drop_version = tx
                .prepare_cached("DELETE FROM versions WHERE path = ?1 AND sha256 = ?2")
                .map_err(e)?;
            for v in &batch.versions {
                let (p, sha) = (&v.path, &v.sha256);
                let existing: Option<i64> = old_size
                    .query_row(params![p, &sha.0[..]], |r| r.get(0))
                    .optional()
                    .map_err(e)?;
                put_version
                    .execute(params![
                        p,
                        &sha.0[..],
                        to_ms(now),
                        v.size as i64,
                        &v.compressed
                    ])
                    .map_err(e)?;
                if existing.is_none() {
                    versions_bytes += v.compressed.len() as i64;
                }
                let extra: Vec<(Vec<u8>, i64)> = surplus
                    .query_map(params![p, retention.versions_per_file as i64], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .map_err(e)?
                    .collect::<Result<_, _>>()
                    .map_err(e)?;
                for (old_sha, len) in extra {
                    drop_version.execute(params![p, old_sha]).map_err(e)?;
                    versions_bytes -= len;
                }
            }
            // Over budget: the oldest versions go first, whatever file they belong to.
            let mut oldest = tx
                .prepare_cached("SELECT path, sha256, length(data) FROM versions ORDER BY stored, path LIMIT 256")
                .map_err(e)?;
            while versions_bytes > retention.versions_budget as i64 {
                let victims: Vec<(String, Vec<u8>, i64)> = oldest
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .map_err(e)?
                    .collect::<Result<_, _>>()
                    .map_err(e)?;
                if victims.is_empty() {
                    break;
                }
                for (p, sha, len) in victims {
                    if versions_bytes <= retention.versions_budget as i64 {
                        break;
                    }
                    drop_version.execute(params![p, sha]).map_err(e)?;
                    versions_bytes -= len;
                }
            }
            tx.execute(
                "DELETE FROM changes WHERE seq <= (SELECT MAX(seq) FROM changes) - ?1",
                [retention.changes as i64],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        self.versions_bytes = versions_bytes.max(0) as u64;
        Ok(batch)
    }

    /// The newest sequence number ever assigned (0 before the first change).
    pub fn head_seq(&self) -> Result<u64, StoreError> {
        let seq: Option<i64> = self
            .conn
            .query_row(
                "SELECT seq FROM sqlite_sequence WHERE name = 'changes'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(seq.unwrap_or(0).max(0) as u64)
    }

    /// The oldest sequence number still in the log.
    pub(crate) fn oldest_seq(&self) -> Result<Option<u64>, StoreError> {
        let seq: Option<i64> = self
            .conn
            .query_row("SELECT MIN(seq) FROM changes", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        Ok(seq.map(|s| s.max(0) as u64))
    }

    fn changes_where(&self, sql: &str, args: &[i64]) -> Result<Vec<LoggedChange>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), |r| {
                Ok(LoggedChange {
                    seq: r.get::<_, i64>(0)?.max(0) as u64,
                    path: r.get(1)?,
                    kind: kind_of(r.get(2)?),
                    time: from_ms(r.get(3)?),
                    sha256: digest_of(r.get(4)?),
                    prev_sha256: digest_of(r.get(5)?),
                    size: r.get::<_, Option<i64>>(6)?.map(|s| s.max(0) as u64),
                    content_type: r.get(7)?,
                    changed: r.get(8)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The newest `limit` changes, oldest first.
    pub(crate) fn recent_changes(&self, limit: usize) -> Result<Vec<LoggedChange>, StoreError> {
        let mut changes = self.changes_where(
            "SELECT seq, path, kind, time, sha256, prev_sha256, size, content_type, changed FROM changes ORDER BY seq DESC LIMIT ?1",
            &[limit as i64],
        )?;
        changes.reverse();
        Ok(changes)
    }

    /// Up to `limit` changes after `since`, oldest first.
    pub(crate) fn changes_since(
        &self,
        since: u64,
        limit: usize,
    ) -> Result<Vec<LoggedChange>, StoreError> {
        self.changes_where(
            "SELECT seq, path, kind, time, sha256, prev_sha256, size, content_type, changed FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            &[since.min(i64::MAX as u64) as i64, limit as i64],
        )
    }

    /// A kept version of `path`, decompressed.
    pub fn version(&self, path: &str, sha: &Sha256Digest) -> Result<Option<Vec<u8>>, StoreError> {
        let data: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT data FROM versions WHERE path = ?1 AND sha256 = ?2",
                params![path, &sha.0[..]],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(data.and_then(|d| zstd::stream::decode_all(&d[..]).ok()))
    }

    /// Whether a version of `path` is kept.
    pub(crate) fn has_version(&self, path: &str, sha: &Sha256Digest) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT 1 FROM versions WHERE path = ?1 AND sha256 = ?2",
                params![path, &sha.0[..]],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.err(e))
    }

    /// Drops every kept version of `path` (a secret published by mistake), so no delta can
    /// show what it held; returns how many were dropped.
    pub fn forget_versions(&mut self, path: &str) -> Result<usize, StoreError> {
        let freed: i64 = self
            .conn
            .query_row(
                "SELECT COALESCE(SUM(length(data)), 0) FROM versions WHERE path = ?1",
                [path],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        let n = self
            .conn
            .execute("DELETE FROM versions WHERE path = ?1", [path])
            .map_err(|e| self.err(e))?;
        self.versions_bytes = self.versions_bytes.saturating_sub(freed.max(0) as u64);
        Ok(n)
    }

    /// Digests of the kept versions of `path`, newest first.
    pub fn versions_of(&self, path: &str) -> Result<Vec<Sha256Digest>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT sha256 FROM versions WHERE path = ?1 ORDER BY stored DESC, sha256")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([path], |r| r.get::<_, Vec<u8>>(0))
            .map_err(|e| self.err(e))?;
        let blobs: Vec<Vec<u8>> = rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?;
        Ok(blobs
            .into_iter()
            .filter_map(|b| digest_of(Some(b)))
            .collect())
    }

    /// Compressed bytes of all kept versions.
    pub(crate) fn versions_bytes(&self) -> u64 {
        self.versions_bytes
    }

    /// The files the web server refused, as last judged.
    pub(crate) fn load_refused(&self) -> Result<HashMap<Box<str>, RefusedFile>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, size, mtime_ns, ctime_ns, sha256, reason FROM refused")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Vec<u8>>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        for row in rows {
            let (path, size, mtime_ns, ctime_ns, sha, reason) = row.map_err(|e| self.err(e))?;
            if let Some(sha256) = digest_of(Some(sha)) {
                out.insert(
                    path.into_boxed_str(),
                    RefusedFile {
                        size: size.max(0) as u64,
                        mtime_ns,
                        ctime_ns,
                        sha256,
                        reason,
                    },
                );
            }
        }
        Ok(out)
    }

    /// Listed files the web server never judged (a state written before the judge).
    pub(crate) fn unjudged(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT path FROM files WHERE judged = 0")
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The `limit` files judged longest ago (listed or refused), oldest first.
    pub(crate) fn due_for_judging(&self, limit: usize) -> Result<Vec<Due>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path, 1, judged FROM (SELECT path, judged FROM files ORDER BY judged LIMIT ?1)
                 UNION ALL
                 SELECT path, 0, judged FROM (SELECT path, judged FROM refused ORDER BY judged LIMIT ?1)
                 ORDER BY 3 LIMIT ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([limit as i64], |r| {
                Ok(Due {
                    path: r.get(0)?,
                    public: r.get::<_, i64>(1)? == 1,
                    judged: r.get(2)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Asks for every file at or under `dir` (`""` for all) to be judged again first: the
    /// rules that govern them changed.
    pub(crate) fn judge_again_under(&self, dir: &str) -> Result<usize, StoreError> {
        let prefix = format!("{dir}/");
        let mut n = 0;
        for table in ["files", "refused"] {
            n += self
                .conn
                .execute(
                    &format!(
                        "UPDATE {table} SET judged = 0
                         WHERE ?1 = '' OR path = ?1 OR substr(path, 1, length(?2)) = ?2"
                    ),
                    params![dir, prefix],
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(n)
    }

    /// When `path` was first seen and how many times its content changed since.
    pub fn file_facts(&self, path: &str) -> Result<Option<(DateTime<Utc>, u32)>, StoreError> {
        self.conn
            .query_row(
                "SELECT first_seen, change_count FROM files WHERE path = ?1",
                [path],
                |r| Ok((from_ms(r.get(0)?), r.get::<_, i64>(1)?.max(0) as u32)),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The change times recorded for `path`, oldest first.
    pub fn history(&self, path: &str) -> Result<Vec<DateTime<Utc>>, StoreError> {
        let blob: Option<Vec<u8>> = self
            .conn
            .query_row("SELECT history FROM files WHERE path = ?1", [path], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(blob
            .unwrap_or_default()
            .chunks_exact(8)
            .map(|c| from_ms(i64::from_le_bytes(c.try_into().unwrap_or_default())))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn every_commit_is_durable_so_no_sequence_number_is_issued_twice() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (mode, sync): (String, i64) = store
            .conn
            .query_row(
                "SELECT * FROM pragma_journal_mode, pragma_synchronous",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        // WAL with synchronous = FULL (2): the log is synced at each commit.
        assert_eq!((mode.as_str(), sync), ("wal", 2));
    }

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
    }

    fn entry(content: &[u8], at: DateTime<Utc>) -> FileEntry {
        FileEntry {
            size: content.len() as u64,
            mtime_ns: 1,
            ctime_ns: 2,
            sha256: Sha256Digest::of(content),
            fast: xxhash_rust::xxh3::xxh3_64(content),
            modified: at,
            seen: false,
        }
    }

    fn version(path: &str, content: &[u8]) -> NewVersion {
        NewVersion::of(path, Sha256Digest::of(content), content)
    }

    fn change(kind: ChangeKind, path: &str, at: DateTime<Utc>) -> LoggedChange {
        LoggedChange {
            seq: 0,
            kind,
            path: path.into(),
            time: at,
            sha256: None,
            prev_sha256: None,
            size: None,
            content_type: None,
            changed: None,
        }
    }

    const KEEP: Retention = Retention {
        versions_per_file: 2,
        versions_budget: 1 << 30,
        changes: 1000,
    };

    #[test]
    fn inventory_changes_and_history_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let batch = Batch {
            upserts: vec![
                ("a.html".into(), entry(b"v1", t(0)), Some(t(0))),
                ("b.css".into(), entry(b"x", t(0)), None),
            ],
            changes: vec![change(ChangeKind::Created, "a.html", t(0))],
            ..Batch::default()
        };
        let saved = store.commit(batch, t(0), &KEEP).unwrap();
        assert_eq!(saved.changes[0].seq, 1);
        let batch = Batch {
            upserts: vec![("a.html".into(), entry(b"v2", t(5)), Some(t(5)))],
            deletions: vec!["b.css".into()],
            changes: vec![
                change(ChangeKind::Modified, "a.html", t(5)),
                change(ChangeKind::Deleted, "b.css", t(5)),
            ],
            ..Batch::default()
        };
        store.commit(batch, t(5), &KEEP).unwrap();
        drop(store);

        let store = Store::open(dir.path()).unwrap();
        let inv = store.load_inventory().unwrap();
        assert_eq!(inv.len(), 1);
        assert_eq!(inv.get("a.html").unwrap(), &entry(b"v2", t(5)));
        assert_eq!(store.file_facts("a.html").unwrap(), Some((t(0), 1)));
        assert_eq!(store.head_seq().unwrap(), 3);
        assert_eq!(store.history("a.html").unwrap(), [t(0), t(5)]);
        let since = store.changes_since(1, 10).unwrap();
        assert_eq!(
            since.iter().map(|c| (c.seq, c.kind)).collect::<Vec<_>>(),
            [(2, ChangeKind::Modified), (3, ChangeKind::Deleted)]
        );
        assert_eq!(store.recent_changes(1).unwrap()[0].seq, 3);
    }

    #[test]
    fn versions_are_kept_per_file_and_within_budget() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        for i in 0..4i64 {
            let content = format!("version {i} {}", "lorem ipsum ".repeat(50)).into_bytes();
            let batch = Batch {
                versions: vec![version("p.html", &content)],
                ..Batch::default()
            };
            store.commit(batch, t(i), &KEEP).unwrap();
        }
        let kept = store.versions_of("p.html").unwrap();
        assert_eq!(kept.len(), 2, "two versions per file");
        let newest = format!("version 3 {}", "lorem ipsum ".repeat(50)).into_bytes();
        assert_eq!(kept[0], Sha256Digest::of(&newest));
        assert_eq!(store.version("p.html", &kept[0]).unwrap().unwrap(), newest);
        assert!(store.versions_bytes() > 0);

        // A budget smaller than what is kept evicts the oldest first.
        let other = b"another file's only version, stored last".to_vec();
        // Room for the new version only if one old version goes.
        let added = zstd::bulk::compress(&other, 3).unwrap().len() as u64;
        let tight = Retention {
            versions_budget: store.versions_bytes() + added - 1,
            ..KEEP
        };
        store
            .commit(
                Batch {
                    versions: vec![version("q.html", &other)],
                    ..Batch::default()
                },
                t(10),
                &tight,
            )
            .unwrap();
        assert!(store.versions_bytes() <= tight.versions_budget);
        assert_eq!(
            store.versions_of("q.html").unwrap().len(),
            1,
            "the newest survives"
        );
        assert_eq!(
            store.versions_of("p.html").unwrap().len(),
            1,
            "the oldest went"
        );
        drop(store);
        let reopened = Store::open(dir.path()).unwrap();
        assert!(reopened.versions_bytes() <= tight.versions_budget);
    }

    #[test]
    fn the_change_log_is_pruned_but_sequence_numbers_never_repeat() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let keep3 = Retention { changes: 3, ..KEEP };
        for i in 0..10 {
            let batch = Batch {
                changes: vec![change(ChangeKind::Modified, "x", t(i))],
                ..Batch::default()
            };
            store.commit(batch, t(i), &keep3).unwrap();
        }
        assert_eq!(store.head_seq().unwrap(), 10);
        assert_eq!(store.oldest_seq().unwrap(), Some(8));
        assert_eq!(store.changes_since(0, 100).unwrap().len(), 3);
    }
}
