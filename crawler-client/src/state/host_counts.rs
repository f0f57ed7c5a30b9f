//! Each host's pages and errors kept in a row of their own (`host_counts`) by triggers on
//! `pages`, so that the console's host table in its default order (most pages first) reads
//! one small row per host instead of counting every page of every host at each request: that
//! count was 6% of the crawler's CPU at 2,000 hosts with the console watched, and grows with
//! the crawl. Kept like `page_figures`: written in the transaction of the pages they count, and
//! counted again from the pages when the table is missing or its triggers are not this
//! build's.

use super::DISALLOWED;
use super::page_figures::{has_table, remake, triggers_current};
use rusqlite::Connection;

/// The table's name.
const TABLE: &str = "host_counts";

/// Whether a page row (`{r}`: `NEW`, `OLD` or `pages`) is an error as the host table counts
/// them: 4xx, 5xx, or a failure other than robots.txt's refusal. Never NULL.
fn error_of(row: &str) -> String {
    format!(
        "IFNULL(({row}.status >= 400 OR ({row}.status IS NULL AND {row}.error != '{}')), 0)",
        DISALLOWED.replace('\'', "''")
    )
}

/// Adds `row`'s page to its host's counts.
fn add(row: &str) -> String {
    format!(
        "INSERT INTO {TABLE} (host, fetched, errors) VALUES ({row}.host, 1, {}) \
         ON CONFLICT (host) DO UPDATE SET fetched = fetched + 1, \
         errors = errors + excluded.errors;",
        error_of(row)
    )
}

/// Takes `row`'s page from its host's counts.
fn take(row: &str) -> String {
    format!(
        "UPDATE {TABLE} SET fetched = fetched - 1, errors = errors - {} WHERE host = {row}.host;",
        error_of(row)
    )
}

/// The three triggers, as `sqlite_master` keeps their text.
fn triggers() -> [(&'static str, String); 3] {
    [
        (
            "host_counts_insert",
            format!(
                "CREATE TRIGGER host_counts_insert AFTER INSERT ON pages BEGIN {} END",
                add("NEW")
            ),
        ),
        (
            // Fired only by updates that set what the counts read (host, status or error).
            "host_counts_update",
            format!(
                "CREATE TRIGGER host_counts_update AFTER UPDATE OF host, status, error ON pages \
                 BEGIN {} {} END",
                take("OLD"),
                add("NEW")
            ),
        ),
        (
            "host_counts_delete",
            format!(
                "CREATE TRIGGER host_counts_delete AFTER DELETE ON pages BEGIN {} END",
                take("OLD")
            ),
        ),
    ]
}

/// Makes the table and its triggers, counting every page, unless they are there as this build
/// writes them.
pub(super) fn keep(conn: &Connection) -> rusqlite::Result<()> {
    let wanted = triggers();
    if triggers_current(conn, &wanted)? {
        return Ok(());
    }
    let table = format!(
        "DROP TABLE IF EXISTS {TABLE};
         CREATE TABLE {TABLE} (host INTEGER PRIMARY KEY, fetched INTEGER NOT NULL,
             errors INTEGER NOT NULL);
         INSERT INTO {TABLE} SELECT host, COUNT(*), SUM({}) FROM pages GROUP BY host;",
        error_of("pages")
    );
    remake(conn, &wanted, &table)
}

/// Whether this database keeps the counts (a read-only view of an older crawl may not).
pub(super) fn kept(conn: &Connection) -> rusqlite::Result<bool> {
    has_table(conn, TABLE)
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::super::page_figures::tests::churn;
    use super::{keep, kept};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    type Counts = Vec<(i64, i64, i64)>;

    /// Hosts with pages, as kept.
    fn read(s: &Store) -> Counts {
        s.rows(
            "SELECT host, fetched, errors FROM host_counts WHERE fetched != 0 ORDER BY host",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
    }

    /// The same counted from every page.
    fn count(s: &Store) -> Counts {
        s.rows(
            &format!(
                "SELECT host, COUNT(*), SUM({}) FROM pages GROUP BY host ORDER BY host",
                super::error_of("pages")
            ),
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
    }

    #[test]
    fn the_kept_counts_equal_a_count_of_every_page_whatever_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        for round in 0..40 {
            churn(&s, &mut rng, 20, round >= 30);
            assert_eq!(read(&s), count(&s), "round {round}");
        }
        // Pages moved between hosts are counted where they are now.
        s.conn
            .execute("UPDATE pages SET host = 9 WHERE host = 1", [])
            .unwrap();
        assert_eq!(read(&s), count(&s));
        let counted = count(&s);
        assert!(counted.len() >= 4, "{counted:?}");
        assert!(counted.iter().any(|c| c.2 > 0), "no errors: {counted:?}");
        assert!(
            counted.iter().any(|c| c.2 < c.1),
            "only errors: {counted:?}"
        );
    }

    #[test]
    fn a_database_without_the_counts_or_with_stale_triggers_is_counted_again_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = StdRng::seed_from_u64(13);
        {
            let s = Store::open(dir.path()).unwrap();
            s.conn
                .execute_batch(
                    "DROP TRIGGER host_counts_insert; DROP TRIGGER host_counts_update;
                     DROP TRIGGER host_counts_delete;",
                )
                .unwrap();
            churn(&s, &mut rng, 200, false);
            // The twin: without the triggers the counts do not follow the pages.
            assert_ne!(read(&s), count(&s));
            s.conn.execute_batch("DROP TABLE host_counts;").unwrap();
            assert!(!kept(&s.conn).unwrap());
        }
        let s = Store::open(dir.path()).unwrap();
        assert!(kept(&s.conn).unwrap());
        assert_eq!(read(&s), count(&s));
        s.conn
            .execute_batch(
                "DROP TRIGGER host_counts_update;
                 CREATE TRIGGER host_counts_update AFTER UPDATE ON pages BEGIN SELECT 1; END;
                 UPDATE host_counts SET fetched = 999999;",
            )
            .unwrap();
        keep(&s.conn).unwrap();
        churn(&s, &mut rng, 100, false);
        assert_eq!(read(&s), count(&s));
    }
}
