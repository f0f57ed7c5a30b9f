//! Saving a batch: one transaction, the change log, the versions kept within their budget.

use super::{
    Batch, LoggedChange, NewVersion, Retention, Store, StoreError, history_push, kind_code,
    store_error, to_ms,
};
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Transaction, params};

impl Store {
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
        save_files(&tx, &batch, now).map_err(e)?;
        versions_bytes -= delete_files(&tx, &batch.deletions).map_err(e)?;
        save_refusals(&tx, &batch, now).map_err(e)?;
        log_changes(&tx, &mut batch.changes).map_err(e)?;
        versions_bytes += keep_versions(&tx, &batch.versions, now, retention).map_err(e)?;
        versions_bytes = keep_to_budget(&tx, versions_bytes, retention).map_err(e)?;
        tx.execute(
            "DELETE FROM changes WHERE seq <= (SELECT MAX(seq) FROM changes) - ?1",
            [retention.changes as i64],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        self.versions_bytes = versions_bytes.max(0) as u64;
        Ok(batch)
    }
}

/// The files added or changed, each with its history of changes, and those judged again.
fn save_files(tx: &Transaction, batch: &Batch, now: DateTime<Utc>) -> rusqlite::Result<()> {
    let mut get_history = tx.prepare_cached("SELECT history FROM files WHERE path = ?1")?;
    let mut upsert = tx.prepare_cached(
        "INSERT INTO files (path, size, mtime_ns, sha256, fast, first_seen, modified, change_count, history, ctime_ns, judged)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?9, ?10, ?6)
         ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,
           sha256 = excluded.sha256, fast = excluded.fast, modified = excluded.modified,
           change_count = files.change_count + ?8, history = excluded.history,
           ctime_ns = excluded.ctime_ns, judged = excluded.judged",
    )?;
    for (p, entry, changed_at) in &batch.upserts {
        let old: Option<Vec<u8>> = get_history.query_row([p], |r| r.get(0)).optional()?;
        let history = match changed_at {
            Some(t) => history_push(old, *t),
            None => old.unwrap_or_default(),
        };
        upsert.execute(params![
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
        ])?;
    }
    let mut judged = tx.prepare_cached("UPDATE files SET judged = ?2 WHERE path = ?1")?;
    for p in &batch.rejudged {
        judged.execute(params![p, to_ms(now)])?;
    }
    Ok(())
}

/// The files deleted and their versions; the bytes of versions freed.
fn delete_files(tx: &Transaction, deletions: &[String]) -> rusqlite::Result<i64> {
    let mut delete_file = tx.prepare_cached("DELETE FROM files WHERE path = ?1")?;
    let mut version_sizes =
        tx.prepare_cached("SELECT COALESCE(SUM(length(data)), 0) FROM versions WHERE path = ?1")?;
    let mut delete_versions = tx.prepare_cached("DELETE FROM versions WHERE path = ?1")?;
    let mut freed = 0;
    for p in deletions {
        delete_file.execute([p])?;
        freed += version_sizes.query_row([p], |r| r.get::<_, i64>(0))?;
        delete_versions.execute([p])?;
    }
    Ok(freed)
}

/// The files refused (with why), and those no longer refused.
fn save_refusals(tx: &Transaction, batch: &Batch, now: DateTime<Utc>) -> rusqlite::Result<()> {
    let mut refuse = tx.prepare_cached(
        "INSERT INTO refused (path, size, mtime_ns, ctime_ns, sha256, reason, judged)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,
           ctime_ns = excluded.ctime_ns, sha256 = excluded.sha256, reason = excluded.reason,
           judged = excluded.judged",
    )?;
    for (p, r) in &batch.refusals {
        refuse.execute(params![
            p,
            r.size as i64,
            r.mtime_ns,
            r.ctime_ns,
            &r.sha256.0[..],
            r.reason,
            to_ms(now)
        ])?;
    }
    let mut unrefuse = tx.prepare_cached("DELETE FROM refused WHERE path = ?1")?;
    for p in &batch.unrefused {
        unrefuse.execute([p])?;
    }
    Ok(())
}

/// The changes logged, each given its sequence number.
fn log_changes(tx: &Transaction, changes: &mut [LoggedChange]) -> rusqlite::Result<()> {
    let mut log = tx.prepare_cached(
        "INSERT INTO changes (path, kind, time, sha256, prev_sha256, size, content_type, changed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for c in changes {
        log.execute(params![
            c.path,
            kind_code(c.kind),
            to_ms(c.time),
            c.sha256.map(|d| d.0.to_vec()),
            c.prev_sha256.map(|d| d.0.to_vec()),
            c.size.map(|s| s as i64),
            c.content_type,
            c.changed
        ])?;
        c.seq = tx.last_insert_rowid() as u64;
    }
    Ok(())
}

/// The new versions kept, and each file's beyond the number kept per file dropped; the change
/// in the bytes of versions.
fn keep_versions(
    tx: &Transaction,
    versions: &[NewVersion],
    now: DateTime<Utc>,
    retention: &Retention,
) -> rusqlite::Result<i64> {
    let mut old_size =
        tx.prepare_cached("SELECT length(data) FROM versions WHERE path = ?1 AND sha256 = ?2")?;
    let mut put_version = tx.prepare_cached(
        "INSERT INTO versions (path, sha256, stored, size, data) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (path, sha256) DO UPDATE SET stored = excluded.stored",
    )?;
    let mut surplus = tx.prepare_cached("SELECT sha256, length(data) FROM versions WHERE path = ?1 ORDER BY stored DESC, sha256 LIMIT -1 OFFSET ?2")?;
    let mut drop_version =
        tx.prepare_cached("DELETE FROM versions WHERE path = ?1 AND sha256 = ?2")?;
    let mut bytes = 0;
    for v in versions {
        let (p, sha) = (&v.path, &v.sha256);
        let existing: Option<i64> = old_size
            .query_row(params![p, &sha.0[..]], |r| r.get(0))
            .optional()?;
        put_version.execute(params![
            p,
            &sha.0[..],
            to_ms(now),
            v.size as i64,
            &v.compressed
        ])?;
        if existing.is_none() {
            bytes += v.compressed.len() as i64;
        }
        let extra: Vec<(Vec<u8>, i64)> = surplus
            .query_map(params![p, retention.versions_per_file as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<Result<_, _>>()?;
        for (old_sha, len) in extra {
            drop_version.execute(params![p, old_sha])?;
            bytes -= len;
        }
    }
    Ok(bytes)
}

/// Over budget, the oldest versions go first, whatever file they belong to; the bytes of
/// versions left.
fn keep_to_budget(
    tx: &Transaction,
    mut versions_bytes: i64,
    retention: &Retention,
) -> rusqlite::Result<i64> {
    let budget = retention.versions_budget as i64;
    let mut oldest = tx.prepare_cached(
        "SELECT path, sha256, length(data) FROM versions ORDER BY stored, path LIMIT 256",
    )?;
    let mut drop_version =
        tx.prepare_cached("DELETE FROM versions WHERE path = ?1 AND sha256 = ?2")?;
    while versions_bytes > budget {
        let victims: Vec<(String, Vec<u8>, i64)> = oldest
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        if victims.is_empty() {
            break;
        }
        for (p, sha, len) in victims {
            if versions_bytes <= budget {
                break;
            }
            drop_version.execute(params![p, sha])?;
            versions_bytes -= len;
        }
    }
    Ok(versions_bytes)
}
