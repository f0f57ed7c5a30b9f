//! What the web server refused, and what is due to be judged again.

use super::{Due, RefusedFile, Store, StoreError, digest_of};
use rusqlite::params;
use std::collections::HashMap;

/// A round of judging: the `?1` files judged longest ago, listed ones after `(?2, ?3)`.
pub(super) const DUE_FOR_JUDGING: &str =
    "SELECT path, 1, judged FROM (SELECT path, judged FROM files
   WHERE (judged, path) > (?2, ?3) ORDER BY judged, path LIMIT ?1)
 UNION ALL
 SELECT path, 0, judged FROM (SELECT path, judged FROM refused ORDER BY judged LIMIT ?1)
 ORDER BY 3, 1 LIMIT ?1";

impl Store {
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

    /// The `limit` files judged longest ago (listed or refused), oldest first; listed files
    /// only past `after` (`(judged, path)` in the index's order), where a round left off.
    pub(crate) fn due_for_judging(
        &self,
        limit: usize,
        after: Option<(i64, &str)>,
    ) -> Result<Vec<Due>, StoreError> {
        let (judged, path) = after.unwrap_or((i64::MIN, ""));
        let mut stmt = self
            .conn
            .prepare_cached(DUE_FOR_JUDGING)
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![limit as i64, judged, path], |r| {
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
}
