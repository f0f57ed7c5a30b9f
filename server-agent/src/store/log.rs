//! The change log read back: sequence numbers, changes since a point, and each file's
//! history of changes.

use super::{LoggedChange, Store, StoreError, digest_of, from_ms, kind_of};
use chrono::{DateTime, Utc};
use rusqlite::OptionalExtension;

/// The newest changes, `?1` of them, newest first.
const RECENT_CHANGES: &str = "SELECT seq, path, kind, time, sha256, prev_sha256, size, content_type, changed FROM changes ORDER BY seq DESC LIMIT ?1";

/// A page of the changes feed: `?2` changes after sequence number `?1`.
pub(super) const CHANGES_SINCE: &str = "SELECT seq, path, kind, time, sha256, prev_sha256, size, content_type, changed FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2";

impl Store {
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
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
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
        let mut changes = self.changes_where(RECENT_CHANGES, &[limit as i64])?;
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
            CHANGES_SINCE,
            &[since.min(i64::MAX as u64) as i64, limit as i64],
        )
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
