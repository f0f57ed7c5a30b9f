//! One query plan for each prepared statement. SQLite (3.54) compiles some bound values into a
//! statement's plan: a `LIMIT ?`, and with an `ORDER BY` the key of a read in index order. When
//! such a value changes, a cached statement is prepared again at its next step. The binaries'
//! paged reads (the crawler's queue, the agent's changes feed and judging) bind a new limit or
//! key at nearly every call, so without the guarantee each call compiled its statement again.

use rusqlite::Connection;
use rusqlite::config::DbConfig;

/// Turns on SQLite's query planner stability guarantee for `conn`, so a cached statement keeps
/// the plan it was prepared with whatever is bound to it.
pub fn keep_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map(|_| ())
}

/// How many times the cached statement `sql` of `conn` was prepared again since it was first
/// prepared (what the guarantee keeps at zero).
pub fn times_prepared_again(conn: &Connection, sql: &str) -> rusqlite::Result<i32> {
    Ok(conn
        .prepare_cached(sql)?
        .get_status(rusqlite::StatementStatus::RePrepare))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_pages(conn: &Connection, sql: &str) {
        for (limit, after) in (1..=6).zip([0, 3, 1, 5, 2, 4]) {
            let mut stmt = conn.prepare_cached(sql).unwrap();
            let rows = stmt.query_map([after, limit], |_| Ok(())).unwrap();
            assert_eq!(rows.count(), limit as usize);
        }
    }

    fn table() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE log (seq INTEGER PRIMARY KEY, what TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
             INSERT INTO log SELECT i, 'x' FROM n;",
        )
        .unwrap();
        conn
    }

    const PAGE: &str = "SELECT seq FROM log WHERE seq > ?1 ORDER BY seq LIMIT ?2";

    #[test]
    fn a_paged_read_keeps_its_plan_whatever_is_bound() {
        let conn = table();
        keep_plans(&conn).unwrap();
        read_pages(&conn, PAGE);
        assert_eq!(times_prepared_again(&conn, PAGE).unwrap(), 0);
    }

    #[test]
    fn without_the_guarantee_each_new_limit_compiles_the_read_again() {
        let conn = table();
        read_pages(&conn, PAGE);
        let again = times_prepared_again(&conn, PAGE).unwrap();
        assert!(again >= 5, "{again}");
    }
}
