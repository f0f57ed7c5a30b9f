//! The pages' figures kept in a row of their own (`page_figures`) by triggers on `pages`, so
//! that the figures a running crawl's console asks for every few seconds are one row read,
//! not a pass over every page: that pass was 28% of the crawler's CPU at 3,000 hosts with the
//! console watched, and grows with the crawl (300 ms at a million pages). The triggers write
//! in the transaction of the rows they count, so the row is as consistent as the pages after
//! `kill -9`; the same expressions count every page when the row is made (a crawl directory
//! from before it, or triggers of another layout) and in tests, which compare both.

use super::{DISALLOWED, HELD, USAGE_NOT_KEPT, USAGE_SKIPPED};
use rusqlite::{Connection, OptionalExtension};

/// The counted columns: name and what one page row (`{r}`: `NEW`, `OLD` or `pages`) adds.
fn columns() -> Vec<(&'static str, String)> {
    let text = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let starts = |s: &str| format!("substr({{r}}.error, 1, {}) = {}", s.len(), text(s));
    vec![
        ("pages", "1".into()),
        ("ok", "{r}.status BETWEEN 200 AND 299".into()),
        ("not_modified", "{r}.status = 304".into()),
        (
            "redirects",
            "{r}.status BETWEEN 300 AND 399 AND {r}.status != 304".into(),
        ),
        ("client_errors", "{r}.status BETWEEN 400 AND 499".into()),
        ("server_errors", "{r}.status >= 500".into()),
        (
            "failures",
            format!(
                "{{r}}.status IS NULL AND {{r}}.error != {}",
                text(DISALLOWED)
            ),
        ),
        ("disallowed", format!("{{r}}.error = {}", text(DISALLOWED))),
        ("duplicates", "{r}.duplicate_of IS NOT NULL".into()),
        ("changes", "{r}.changes".into()),
        ("bytes", "{r}.size".into()),
        ("usage_skipped", starts(USAGE_SKIPPED)),
        ("usage_not_kept", starts(USAGE_NOT_KEPT)),
        ("held", starts(HELD)),
    ]
}

/// The earliest first fetch and the latest fetch, kept as a row is written (pages are never
/// deleted, so neither moves back).
const FIRST_LAST: &str = "first_fetch = min(IFNULL(first_fetch, NEW.first_fetched), \
     NEW.first_fetched), last_fetch = max(IFNULL(last_fetch, NEW.fetched_at), NEW.fetched_at)";

/// One row's share of a column (never NULL: a comparison with NULL counts nothing).
fn share(expr: &str, row: &str) -> String {
    format!("IFNULL(({}), 0)", expr.replace("{r}", row))
}

/// The three triggers, as `sqlite_master` keeps their text.
fn triggers() -> [(&'static str, String); 3] {
    let cols = columns();
    // A column named twice in one SET keeps only the last, so an update's old and new row go
    // in one expression.
    let set = |change: &dyn Fn(&str) -> String, with_pages: bool| -> String {
        cols.iter()
            .filter(|(c, _)| with_pages || *c != "pages")
            .map(|(c, e)| format!("{c} = {c} {}", change(e)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let insert = set(&|e| format!("+ {}", share(e, "NEW")), true);
    let update = set(
        &|e| format!("+ {} - {}", share(e, "NEW"), share(e, "OLD")),
        false,
    );
    let delete = set(&|e| format!("- {}", share(e, "OLD")), true);
    [
        (
            "page_figures_insert",
            format!(
                "CREATE TRIGGER page_figures_insert AFTER INSERT ON pages BEGIN \
                 UPDATE page_figures SET {insert}, {FIRST_LAST} WHERE id = 1; END"
            ),
        ),
        (
            "page_figures_update",
            format!(
                "CREATE TRIGGER page_figures_update AFTER UPDATE ON pages BEGIN \
                 UPDATE page_figures SET {update}, {FIRST_LAST} WHERE id = 1; END"
            ),
        ),
        (
            "page_figures_delete",
            format!(
                "CREATE TRIGGER page_figures_delete AFTER DELETE ON pages BEGIN \
                 UPDATE page_figures SET {delete} WHERE id = 1; END"
            ),
        ),
    ]
}

/// The names of the figures, in the order they are read.
fn names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = columns().into_iter().map(|(c, _)| c).collect();
    names.extend(["first_fetch", "last_fetch"]);
    names
}

/// Reads one row of the figures, named.
fn named(r: &rusqlite::Row<'_>) -> rusqlite::Result<Vec<(&'static str, i64)>> {
    names()
        .into_iter()
        .enumerate()
        .map(|(i, c)| Ok((c, r.get::<_, i64>(i)?)))
        .collect()
}

/// Makes the kept row and its triggers, counting every page, unless they are there as this
/// build writes them.
pub(super) fn keep(conn: &Connection) -> rusqlite::Result<()> {
    let wanted = triggers();
    if triggers_current(conn, &wanted)? {
        return Ok(());
    }
    let cols = columns();
    let names: Vec<&str> = cols.iter().map(|(c, _)| *c).collect();
    let declared: Vec<String> = names
        .iter()
        .map(|c| format!("{c} INTEGER NOT NULL"))
        .collect();
    let counted: Vec<String> = cols
        .iter()
        .map(|(_, e)| format!("COALESCE(SUM({}), 0)", share(e, "pages")))
        .collect();
    let table = format!(
        "DROP TABLE IF EXISTS page_figures;
         CREATE TABLE page_figures (id INTEGER PRIMARY KEY, {}, first_fetch INTEGER,
             last_fetch INTEGER);
         INSERT INTO page_figures SELECT 1, {}, MIN(first_fetched), MAX(fetched_at) FROM pages;",
        declared.join(", "),
        counted.join(", ")
    );
    remake(conn, &wanted, &table)
}

/// In one transaction: drops the triggers, runs `table` (which makes and counts the kept
/// table), and makes the triggers as this build writes them.
pub(super) fn remake(
    conn: &Connection,
    wanted: &[(&'static str, String)],
    table: &str,
) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    for (name, _) in wanted {
        tx.execute_batch(&format!("DROP TRIGGER IF EXISTS {name};"))?;
    }
    tx.execute_batch(table)?;
    for (_, sql) in wanted {
        tx.execute_batch(&format!("{sql};"))?;
    }
    tx.commit()
}

/// Whether every trigger is in `sqlite_master` with exactly this build's text.
pub(super) fn triggers_current(
    conn: &Connection,
    wanted: &[(&'static str, String)],
) -> rusqlite::Result<bool> {
    for (name, sql) in wanted {
        let have: Option<String> = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()?;
        if have.as_deref() != Some(sql.as_str()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the database has a table of that name (a crawl directory from an older build,
/// opened read-only, may not).
pub(super) fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .is_some())
}

/// The kept figures, by column name, if this database keeps them (a read-only view of a crawl
/// directory made before them does not).
pub(super) fn read(conn: &Connection) -> rusqlite::Result<Option<Vec<(&'static str, i64)>>> {
    if !has_table(conn, "page_figures")? {
        return Ok(None);
    }
    let sql = format!(
        "SELECT {} FROM page_figures WHERE id = 1",
        names()
            .iter()
            .map(|c| format!("IFNULL({c}, 0)"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    conn.query_row(&sql, [], named).optional()
}

/// The same figures counted over every page (what the kept row must always equal).
pub(super) fn count(conn: &Connection) -> rusqlite::Result<Vec<(&'static str, i64)>> {
    let cols = columns();
    let sql = format!(
        "SELECT {}, IFNULL(MIN(first_fetched), 0), IFNULL(MAX(fetched_at), 0) FROM pages",
        cols.iter()
            .map(|(_, e)| format!("COALESCE(SUM({}), 0)", share(e, "pages")))
            .collect::<Vec<_>>()
            .join(", ")
    );
    conn.query_row(&sql, [], named)
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::Store;
    use super::{count, keep, read};
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    /// Writes pages as every writer of the table could: first visits, revisits whose answer
    /// changes class, rows of every kind of record, at times that go forward; and deletions if
    /// `deletes` (none are made, but the counts must follow them: the first and last fetch
    /// need not).
    pub(in crate::state) fn churn(s: &Store, rng: &mut StdRng, steps: usize, deletes: bool) {
        let statuses = [
            None,
            Some(200),
            Some(204),
            Some(301),
            Some(304),
            Some(404),
            Some(503),
        ];
        let errors = [
            None,
            Some(super::DISALLOWED.to_string()),
            Some(super::HELD.to_string()),
            Some(format!("{}training", super::USAGE_SKIPPED)),
            Some(format!("{}search", super::USAGE_NOT_KEPT)),
            Some("timed out".to_string()),
            Some("it's a 'quoted' error".to_string()),
        ];
        for _ in 0..steps {
            let fp = rng.random_range(0..40i64);
            // A page's host follows from its fingerprint, as a URL's does.
            let host = fp % 4 + 1;
            let status = statuses[rng.random_range(0..statuses.len())];
            let error = errors[rng.random_range(0..errors.len())].clone();
            let at = s
                .conn
                .query_row("SELECT IFNULL(MAX(fetched_at), 1000) FROM pages", [], |r| {
                    r.get::<_, i64>(0)
                })
                .unwrap()
                + rng.random_range(0..3i64);
            let size = rng.random_bool(0.8).then(|| rng.random_range(0..5_000i64));
            let dup = rng.random_bool(0.2).then(|| "http://e.com/x".to_string());
            if deletes && rng.random_bool(0.05) {
                s.conn
                    .execute("DELETE FROM pages WHERE fp = ?1", [fp])
                    .unwrap();
                continue;
            }
            s.conn
                .execute(
                    "INSERT INTO pages (fp, url, host, depth, status, error, fetched_at,
                        first_fetched, last_changed, size, duplicate_of)
                     VALUES (?1, 'http://e.com/' || ?1, ?8, 0, ?2, ?3, ?4, ?4, ?4, ?5, ?6)
                     ON CONFLICT (fp) DO UPDATE SET status = excluded.status,
                        error = excluded.error, fetched_at = excluded.fetched_at,
                        size = excluded.size, duplicate_of = excluded.duplicate_of,
                        changes = pages.changes + ?7",
                    rusqlite::params![
                        fp,
                        status,
                        error,
                        at,
                        size,
                        dup,
                        rng.random_range(0..2),
                        host
                    ],
                )
                .unwrap();
        }
    }

    #[test]
    fn the_kept_row_equals_a_count_of_every_page_whatever_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..30 {
            churn(&s, &mut rng, 20, false);
            let counted = count(&s.conn).unwrap();
            assert_eq!(read(&s.conn).unwrap().as_ref(), Some(&counted));
        }
        for _ in 0..10 {
            churn(&s, &mut rng, 20, true);
            let counts = |mut v: Vec<(&'static str, i64)>| {
                v.retain(|(n, _)| !n.ends_with("_fetch"));
                v
            };
            let kept = read(&s.conn).unwrap().map(counts);
            assert_eq!(kept, Some(counts(count(&s.conn).unwrap())));
        }
        let counted = count(&s.conn).unwrap();
        let of = |name| counted.iter().find(|(n, _)| *n == name).unwrap().1;
        // Every kind of row was counted (the churn exercised each column).
        for name in [
            "ok",
            "failures",
            "disallowed",
            "held",
            "usage_skipped",
            "duplicates",
        ] {
            assert!(of(name) > 0, "{name}: {counted:?}");
        }
    }

    #[test]
    fn a_database_without_the_row_or_with_stale_triggers_is_counted_again_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = StdRng::seed_from_u64(11);
        {
            let s = Store::open(dir.path()).unwrap();
            // As a crawl directory from before the row, then written to without it.
            s.conn
                .execute_batch(
                    "DROP TRIGGER page_figures_insert; DROP TRIGGER page_figures_update;
                     DROP TRIGGER page_figures_delete;",
                )
                .unwrap();
            churn(&s, &mut rng, 200, false);
            // The twin: the row no longer follows the pages.
            assert_ne!(read(&s.conn).unwrap(), Some(count(&s.conn).unwrap()));
            s.conn.execute_batch("DROP TABLE page_figures;").unwrap();
            assert_eq!(read(&s.conn).unwrap(), None);
            // What the store reads then is a count.
            let f = s.figures().unwrap();
            assert!(f.pages > 0);
        }
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(read(&s.conn).unwrap(), Some(count(&s.conn).unwrap()));
        // Triggers of another layout are replaced, and the row counted again.
        s.conn
            .execute_batch(
                "DROP TRIGGER page_figures_update;
                 CREATE TRIGGER page_figures_update AFTER UPDATE ON pages BEGIN SELECT 1; END;
                 UPDATE page_figures SET ok = 999999;",
            )
            .unwrap();
        keep(&s.conn).unwrap();
        churn(&s, &mut rng, 100, false);
        assert_eq!(read(&s.conn).unwrap(), Some(count(&s.conn).unwrap()));
    }
}
