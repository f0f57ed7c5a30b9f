//! Saving a batch: every row of a stretch of the crawl in one transaction.

use super::{Batch, Store, StoreError};
use crate::ids::HostId;
use rusqlite::{Transaction, params};
use std::collections::HashMap;

impl Store {
    /// Saves a batch in one transaction.
    pub(crate) fn commit(&mut self, batch: &Batch) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| super::store_error(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        save_new_hosts(&tx, &self.new_hosts.borrow()).map_err(e)?;
        save_queue(&tx, batch).map_err(e)?;
        save_pages(&tx, batch).map_err(e)?;
        save_settled(&tx, batch).map_err(e)?;
        save_hosts(&tx, batch).map_err(e)?;
        save_give_ups(&tx, batch).map_err(e)?;
        save_bookkeeping(&tx, batch).map_err(e)?;
        tx.commit().map_err(e)?;
        // Kept until saved: a failed save writes them with the next.
        self.new_hosts.borrow_mut().clear();
        self.size_cache().map_err(e)
    }
}

/// The hosts given an id since the last batch, before any row that names them.
fn save_new_hosts(tx: &Transaction<'_>, new: &HashMap<String, HostId>) -> rusqlite::Result<()> {
    let mut host = tx.prepare_cached("INSERT INTO hosts (id, origin) VALUES (?1, ?2)")?;
    for (origin, id) in new {
        host.execute(params![id, origin])?;
    }
    Ok(())
}

/// The URLs found since the last batch.
fn save_queue(tx: &Transaction<'_>, batch: &Batch) -> rusqlite::Result<()> {
    let mut queue = tx
            .prepare_cached(
                "INSERT INTO queue (seq, host, priority, url, fp, depth, hops, revisit) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
    for u in &batch.new_urls {
        queue.execute(params![
            u.seq, u.host, u.priority, u.url, u.fp, u.depth, u.hops, u.revisit
        ])?;
    }
    Ok(())
}

/// What visits taught: a page row is created at its first visit and updated after.
fn save_pages(tx: &Transaction<'_>, batch: &Batch) -> rusqlite::Result<()> {
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
                    etag = CASE WHEN ?26 THEN NULL ELSE COALESCE(excluded.etag, pages.etag) END,
                    last_modified = CASE WHEN ?26 THEN NULL
                        ELSE COALESCE(excluded.last_modified, pages.last_modified) END,
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
                    validator = CASE WHEN ?25 OR ?26 THEN NULL ELSE COALESCE(?22, pages.validator) END,
                    content_file = CASE WHEN ?25 OR ?26 THEN NULL ELSE COALESCE(?23, pages.content_file) END,
                    content_offset = CASE WHEN ?25 OR ?26 THEN NULL ELSE COALESCE(?24, pages.content_offset) END",
            )?;
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
            p.warc.as_ref().map(|w| &*w.0),
            p.warc.as_ref().map(|w| w.1 as i64),
            i64::from(p.changed),
            p.fp,
            p.importance.map(|i| i.0),
            p.importance.map(|i| i.1),
            p.changes_seen.as_ref().map(|c| c.0.as_str()),
            p.changes_seen.as_ref().map(|c| c.1),
            p.validator,
            p.content.as_ref().map(|c| &*c.0),
            p.content.as_ref().map(|c| c.1 as i64),
            p.gone || matches!(p.status, Some(404 | 410)),
            p.disowned
        ])?;
    }
    Ok(())
}

/// Queue rows finished (removed) or retried (their attempts counted).
fn save_settled(tx: &Transaction<'_>, batch: &Batch) -> rusqlite::Result<()> {
    let mut done = tx.prepare_cached("DELETE FROM queue WHERE seq = ?1")?;
    for seq in &batch.done {
        done.execute([seq])?;
    }
    let mut retry = tx.prepare_cached("UPDATE queue SET attempts = ?2 WHERE seq = ?1")?;
    for (seq, attempts) in &batch.retry {
        retry.execute(params![seq, attempts])?;
    }
    Ok(())
}

/// Hosts' robots.txt, skip reasons, parking and failures.
fn save_hosts(tx: &Transaction<'_>, batch: &Batch) -> rusqlite::Result<()> {
    let mut robots = tx.prepare_cached(
        "UPDATE hosts SET robots_status = ?2, robots_body = ?3, robots_fetched = ?4 WHERE id = ?1",
    )?;
    let mut host = tx.prepare_cached(
        "UPDATE hosts SET skipped = ?2, parked_until = ?3, failures = ?4 WHERE id = ?1",
    )?;
    for h in &batch.hosts {
        if let Some((status, body, at)) = &h.robots {
            robots.execute(params![h.id, status.map(i64::from), body, at])?;
        }
        host.execute(params![h.id, h.skipped, h.parked_until, h.failures])?;
    }
    Ok(())
}

/// Hosts given up on: their queued URLs become failed pages.
fn save_give_ups(tx: &Transaction<'_>, batch: &Batch) -> rusqlite::Result<()> {
    for g in &batch.give_up {
        tx.execute(
                "INSERT INTO pages (url, fp, host, depth, error, fetched_at, first_fetched, last_changed)
                 SELECT url, fp, host, depth, ?2, ?3, ?3, ?3 FROM queue WHERE host = ?1 ORDER BY seq
                 ON CONFLICT (fp) DO NOTHING",
                params![g.host, g.reason, g.at],
            )?;
        tx.execute("DELETE FROM queue WHERE host = ?1", [g.host])?;
    }
    Ok(())
}

/// How much of each WARC file is accounted for, remembered values, and the sites' cooperation state.
fn save_bookkeeping(tx: &Transaction<'_>, batch: &Batch) -> rusqlite::Result<()> {
    let mut warc = tx.prepare_cached(
        "INSERT INTO warc (file, committed) VALUES (?1, ?2)
                 ON CONFLICT (file) DO UPDATE SET committed = excluded.committed",
    )?;
    for (file, len) in &batch.warc {
        warc.execute(params![file, *len as i64])?;
    }
    let mut meta = tx.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?;
    for (k, v) in &batch.meta {
        meta.execute(params![k, v])?;
    }
    let mut coop = tx.prepare_cached("UPDATE hosts SET coop = ?2 WHERE id = ?1")?;
    for (id, json) in &batch.coop {
        coop.execute(params![id, json])?;
    }
    Ok(())
}
