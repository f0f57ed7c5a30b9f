//! Kept versions of text resources: read back, listed, and forgotten.

use super::{Store, StoreError, digest_of};
use rusqlite::{OptionalExtension, params};
use webcoop_protocol::validator::Sha256Digest;

impl Store {
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

    /// Drops every kept version of `path` but `keep` (the older ones showed something
    /// withdrawn); returns how many were dropped.
    pub(crate) fn forget_versions_except(
        &mut self,
        path: &str,
        keep: &Sha256Digest,
    ) -> Result<usize, StoreError> {
        let freed: i64 = self
            .conn
            .query_row(
                "SELECT COALESCE(SUM(length(data)), 0) FROM versions WHERE path = ?1 AND sha256 != ?2",
                params![path, &keep.0[..]],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        let n = self
            .conn
            .execute(
                "DELETE FROM versions WHERE path = ?1 AND sha256 != ?2",
                params![path, &keep.0[..]],
            )
            .map_err(|e| self.err(e))?;
        self.versions_bytes = self.versions_bytes.saturating_sub(freed.max(0) as u64);
        Ok(n)
    }
}
