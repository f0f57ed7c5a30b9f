//! Reads counted from the access logs, kept across restarts: each page's decayed count, the
//! current day's counted (page, visitor) pairs under that day's key (never an address or an
//! agent), and where each log was read up to.

use super::{Store, StoreError};
use rusqlite::params;
use std::collections::{HashMap, HashSet};

/// One page's decayed count of visitors, as of `at`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PageReads {
    /// Distinct visitors, decayed to `at`.
    pub(crate) visitors: f64,
    /// Distinct visitors counted, not decayed: what the publication threshold asks of a page.
    pub(crate) readers: u64,
    /// Seconds since the epoch.
    pub(crate) at: i64,
}

/// What changed in the reads since the last save.
pub(crate) struct Unsaved {
    /// Pages counted anew, with their counts.
    pub(crate) pages: Vec<(String, PageReads)>,
    /// Pages forgotten.
    pub(crate) forgotten: Vec<String>,
    /// (page, visitor) pairs counted.
    pub(crate) pairs: Vec<u64>,
    /// Whether the day turned (the older pairs go).
    pub(crate) fresh_day: bool,
}

/// What was saved: every page's count, and the current day with its key and pairs.
pub(crate) type SavedReads = (
    HashMap<String, PageReads>,
    Option<(i64, [u64; 2], HashSet<u64>)>,
);

impl Store {
    /// The reads counted so far.
    pub(crate) fn load_reads(&self) -> Result<SavedReads, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, visitors, at, readers FROM popularity")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                let visitors: f64 = r.get(1)?;
                let readers: Option<i64> = r.get(3)?;
                Ok((
                    r.get::<_, String>(0)?,
                    PageReads {
                        visitors,
                        at: r.get(2)?,
                        readers: readers
                            .map_or(visitors.max(0.0).ceil() as u64, |n| n.max(0) as u64),
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        let pages = rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?;
        let day = self.meta("popularity_day")?.and_then(|v| {
            let mut it = v.split(':').map(|p| p.parse::<u64>().ok());
            let (d, k0, k1) = (it.next()??, it.next()??, it.next()??);
            Some((d as i64, [k0, k1]))
        });
        let day = match day {
            Some((d, key)) => {
                let mut stmt = self
                    .conn
                    .prepare("SELECT h FROM popularity_pairs")
                    .map_err(|e| self.err(e))?;
                let pairs: HashSet<u64> = stmt
                    .query_map([], |r| r.get::<_, i64>(0))
                    .map_err(|e| self.err(e))?
                    .filter_map(Result::ok)
                    .map(|h| h as u64)
                    .collect();
                Some((d, key, pairs))
            }
            None => None,
        };
        Ok((pages, day))
    }

    /// Saves what changed in the reads in one transaction: the pages counted anew and those
    /// forgotten, the day with its key, the pairs counted (all of the day's older ones dropped
    /// when the day turned), and each log's position, so that a restart reads on exactly
    /// where the counts stop.
    pub(crate) fn save_reads(
        &mut self,
        unsaved: &Unsaved,
        (day, key): (i64, [u64; 2]),
        positions: &[(String, String)],
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |err| super::store_error(&path, err);
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut put = tx
                .prepare("INSERT INTO popularity (path, visitors, at, readers) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (path) DO UPDATE SET visitors = excluded.visitors, at = excluded.at, readers = excluded.readers")
                .map_err(e)?;
            for (p, r) in &unsaved.pages {
                let readers = i64::try_from(r.readers).unwrap_or(i64::MAX);
                put.execute(params![p, r.visitors, r.at, readers])
                    .map_err(e)?;
            }
            let mut drop = tx
                .prepare("DELETE FROM popularity WHERE path = ?1")
                .map_err(e)?;
            for p in &unsaved.forgotten {
                drop.execute([p]).map_err(e)?;
            }
            if unsaved.fresh_day {
                tx.execute("DELETE FROM popularity_pairs", []).map_err(e)?;
            }
            let mut pair = tx
                .prepare("INSERT OR IGNORE INTO popularity_pairs (h) VALUES (?1)")
                .map_err(e)?;
            for h in &unsaved.pairs {
                pair.execute([*h as i64]).map_err(e)?;
            }
            let mut meta = tx
                .prepare("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
                .map_err(e)?;
            meta.execute(params![
                "popularity_day",
                format!("{}:{}:{}", day.max(0), key[0], key[1])
            ])
            .map_err(e)?;
            for (k, v) in positions {
                meta.execute(params![k, v]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }
}
