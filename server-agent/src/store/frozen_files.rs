//! The listed files as of one commit, read by a connection of its own inside one read
//! transaction: SQLite's write-ahead log keeps that view while the agent commits on. A
//! snapshot built on another thread reads them so instead of a copy of the inventory, which
//! was 69 MB at a million files, held for the whole build.
//!
//! The price: while the view lives, the log cannot be checkpointed past it, so commits made
//! during a build (a deploy of many files, say) grow the log until the build ends, and the
//! next checkpoint takes it back.

use super::{Store, StoreError, digest_of, store_error};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OpenFlags};
use std::io;
use webcoop_protocol::validator::Sha256Digest;

/// The listed files at one sequence number, in path order.
pub(crate) struct FrozenFiles {
    conn: Connection,
    sequence: u64,
    count: usize,
}

impl Store {
    /// The listed files as they are now, for as long as the value lives.
    pub(crate) fn freeze_files(&self) -> Result<FrozenFiles, StoreError> {
        let e = |e| store_error(&self.path, e);
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(e)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(e)?;
        // The view is taken at the transaction's first read; both reads see the same commit.
        conn.execute_batch("BEGIN").map_err(e)?;
        let sequence: Option<i64> = conn
            .query_row(
                "SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'changes')",
                [],
                |r| r.get(0),
            )
            .map_err(e)?;
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM files", [], |r| r.get(0))
            .map_err(e)?;
        Ok(FrozenFiles {
            conn,
            sequence: sequence.unwrap_or(0).max(0) as u64,
            count: count.max(0) as usize,
        })
    }
}

impl FrozenFiles {
    /// The change-log sequence number the files are at.
    pub(crate) fn sequence(&self) -> u64 {
        self.sequence
    }

    /// How many files.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Each file in path order (path, digest, size, when it last changed) until `f` answers
    /// `false`.
    pub(crate) fn for_each(
        &self,
        mut f: impl FnMut(&str, &Sha256Digest, u64, DateTime<Utc>) -> io::Result<bool>,
    ) -> io::Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, sha256, size, modified FROM files ORDER BY path")
            .map_err(io::Error::other)?;
        let mut rows = stmt.query([]).map_err(io::Error::other)?;
        while let Some(row) = rows.next().map_err(io::Error::other)? {
            let path: String = row.get(0).map_err(io::Error::other)?;
            let Some(sha256) = digest_of(row.get(1).map_err(io::Error::other)?) else {
                continue;
            };
            let size: i64 = row.get(2).map_err(io::Error::other)?;
            let modified: i64 = row.get(3).map_err(io::Error::other)?;
            let modified =
                DateTime::from_timestamp_millis(modified).unwrap_or(DateTime::UNIX_EPOCH);
            if !f(&path, &sha256, size.max(0) as u64, modified)? {
                break;
            }
        }
        Ok(())
    }
}
