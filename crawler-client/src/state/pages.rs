//! What the state holds of pages: the copy and validators of one (for a revisit or a delta),
//! the digests that find duplicates, the pages worth refreshing, and the listing of copies.

use super::{CopyRow, KnownPage, RefreshablePage, Store, StoreError};
use crate::ids::Fp;
use rusqlite::OptionalExtension;
use std::sync::Arc;

impl Store {
    /// Every page worth refreshing (fetched successfully, not a duplicate).
    pub(crate) fn refreshable_pages(&self) -> Result<Vec<RefreshablePage>, StoreError> {
        self.rows(
            "SELECT fp, host, url, depth, fetched_at, rate, history, history_g FROM pages
                 WHERE (status BETWEEN 200 AND 299 OR status = 304) AND duplicate_of IS NULL",
            [],
            |r| {
                Ok(RefreshablePage {
                    fp: r.get(0)?,
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

    /// Each original (not duplicate) page's content digest and fingerprint, in the order the
    /// pages were first saved: those whose content's SHA-256 is held, which alone can confirm.
    pub(crate) fn load_digests(&self, mut each: impl FnMut(u64, Fp)) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT digest, fp FROM pages WHERE digest IS NOT NULL AND duplicate_of IS NULL
                    AND validator IS NOT NULL
                 ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let digest = r.get::<_, i64>(0).map_err(|e| self.err(e))? as u64;
            each(digest, r.get(1).map_err(|e| self.err(e))?);
        }
        Ok(())
    }

    /// The first page fetched with this content digest and content validator (SHA-256)
    /// among those whose fingerprint begins with `prefix` (read through the fingerprint
    /// index: the state keeps none on digests).
    pub(crate) fn page_with_digest(
        &self,
        digest: u64,
        prefix: u32,
        validator: &str,
    ) -> Result<Option<String>, StoreError> {
        let low = ((prefix as u64) << 32) as i64;
        self.conn
            .prepare_cached(
                "SELECT url FROM pages WHERE fp BETWEEN ?1 AND ?2 AND digest = ?3
                    AND validator = ?4 AND duplicate_of IS NULL
                 ORDER BY first_fetched LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(
                    rusqlite::params![low, low | 0xFFFF_FFFF, digest as i64, validator],
                    |r| r.get(0),
                )
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// What was known of the page with fingerprint `fp`, for a conditional GET and change
    /// detection.
    pub(crate) fn page(&self, fp: Fp) -> Result<Option<KnownPage>, StoreError> {
        let Some((mut known, duplicate_of)) = self.page_row(fp)? else {
            return Ok(None);
        };
        // A duplicate holds its content in the page it repeats: a delta of it applies there.
        if known.content.is_none()
            && let Some(original) = duplicate_of.and_then(|u| url::Url::parse(&u).ok())
            && let Some((o, _)) = self.page_row(crate::analyze::url_norm::fingerprint(&original))?
        {
            known.content = o.content;
        }
        Ok(Some(known))
    }

    /// A page's row as [`Store::page`] reads it, with the page it duplicates.
    fn page_row(&self, fp: Fp) -> Result<Option<(KnownPage, Option<String>)>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT etag, last_modified, digest, fetched_at, history, history_g, changes_seen,
                    validator, content_file, content_offset, duplicate_of
                 FROM pages WHERE fp = ?1",
            )
            .and_then(|mut s| {
                s.query_row([fp], |r| {
                    let known = KnownPage {
                        etag: r.get(0)?,
                        last_modified: r.get(1)?,
                        digest: r.get::<_, Option<i64>>(2)?.map(|d| d as u64),
                        fetched_at: r.get(3)?,
                        importance: (r.get(4)?, r.get(5)?),
                        changes_seen: r.get(6)?,
                        validator: r.get(7)?,
                        content: match (r.get::<_, Option<String>>(8)?, r.get::<_, Option<i64>>(9)?)
                        {
                            (Some(f), Some(o)) => Some((Arc::from(f), o.max(0) as u64)),
                            _ => None,
                        },
                    };
                    Ok((known, r.get::<_, Option<String>>(10)?))
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
    pub(crate) fn content_of(
        &self,
        url: &str,
    ) -> Result<Option<(String, u64, String)>, StoreError> {
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

    /// Queues every page fetched successfully again (a refresh pass), rows numbered from
    /// `first_seq` in order of last visit; returns how many.
    pub(crate) fn requeue_pages(&mut self, first_seq: i64) -> Result<u64, StoreError> {
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
}
