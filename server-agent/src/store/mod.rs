//! The agent's persistent state in one SQLite database (`STATE/agent.sqlite`): the inventory,
//! the change log with its sequence numbers, and the kept versions of text resources.
//!
//! Every batch of changes is one transaction, so `kill -9` at any moment leaves either the
//! state before the batch or after it. The in-memory inventory is updated only after a commit;
//! a batch that fails (a full disk) changes nothing and is found again by the next scan.

mod batch;
mod commit;
mod frozen_files;
mod judging;
mod log;
mod popularity;
mod schema;
mod versions;

pub(crate) use batch::{Batch, ChangeObserver, Due, LoggedChange, NewVersion, RefusedFile};
pub(crate) use frozen_files::FrozenFiles;
pub(crate) use popularity::{PageReads, Unsaved};

use crate::inventory::{FileEntry, Inventory};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use webcoop_daemon::sqlite_error::{Hints, SqliteError};
use webcoop_daemon::sqlite_plans::keep_plans;
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
        // The changes feed and judging read in pages, a new bound key and limit each time.
        keep_plans(&conn).map_err(|e| store_error(&path, e))?;
        conn.execute_batch(schema::SCHEMA)
            .map_err(|e| store_error(&path, e))?;
        schema::migrate(&conn).map_err(|e| store_error(&path, e))?;
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
        keep_plans(&conn).map_err(|e| store_error(&path, e))?;
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
}

#[cfg(test)]
mod tests;
