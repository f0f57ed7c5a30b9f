//! The database layout, and the columns added to it since the first crawl directories.

use rusqlite::Connection;
use std::collections::HashSet;

pub(super) const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY,
    origin TEXT NOT NULL UNIQUE,
    robots_status INTEGER,
    robots_body BLOB,
    robots_fetched INTEGER,
    skipped TEXT,
    parked_until INTEGER,
    failures INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS queue (
    seq INTEGER PRIMARY KEY,
    host INTEGER NOT NULL,
    priority REAL NOT NULL DEFAULT 0,
    url TEXT NOT NULL,
    fp INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    hops INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    revisit INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queue_by_host ON queue (host, priority DESC, seq);
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL,
    url TEXT NOT NULL,
    host INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    status INTEGER,
    error TEXT,
    fetched_at INTEGER NOT NULL,
    first_fetched INTEGER NOT NULL,
    last_changed INTEGER NOT NULL,
    etag TEXT,
    last_modified TEXT,
    content_type TEXT,
    size INTEGER,
    digest INTEGER,
    duplicate_of TEXT,
    redirect_to TEXT,
    warc_file TEXT,
    warc_offset INTEGER,
    visits INTEGER NOT NULL DEFAULT 1,
    changes INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS pages_by_fp ON pages (fp);
CREATE INDEX IF NOT EXISTS pages_by_host ON pages (host, fetched_at);
CREATE TABLE IF NOT EXISTS warc (file TEXT PRIMARY KEY, committed INTEGER NOT NULL) WITHOUT ROWID;
";

/// Columns added since the first layout (table, column, declaration), for crawl directories
/// made before them.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("pages", "history", "REAL NOT NULL DEFAULT 0"),
    ("pages", "history_g", "REAL NOT NULL DEFAULT 0"),
    ("pages", "changes_seen", "TEXT"),
    ("pages", "rate", "REAL"),
    ("pages", "validator", "TEXT"),
    ("pages", "content_file", "TEXT"),
    ("pages", "content_offset", "INTEGER"),
    ("hosts", "coop", "TEXT"),
];

pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let mut have = HashSet::new();
    for table in ["pages", "hosts"] {
        let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            have.insert((table, r.get::<_, String>(0)?));
        }
    }
    for (table, name, decl) in ADDED_COLUMNS {
        if !have.contains(&(*table, name.to_string())) {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {name} {decl};"))?;
        }
    }
    // Duplicates are found through the fingerprint index since 2026-12-02 (the crawl holds
    // where each digest was first met): the digest index only cost each save its leaves.
    conn.execute_batch("DROP INDEX IF EXISTS pages_by_digest;")?;
    Ok(())
}

/// Page cache of the crawl's connection at most: the queue index and the pages table's upper
/// levels stay in memory (a 2 MiB cache spilled and re-read pages on every batch of a
/// million-page crawl).
pub(super) const CACHE_MAX_KIB: i64 = 64 << 10;

/// Page cache of the crawl's connection at least.
pub(super) const CACHE_MIN_KIB: i64 = 4 << 10;

/// The page cache a database of `bytes` is given: an eighth of it while the database is
/// under [`CACHE_QUARTER_FROM`], a quarter from there, between the bounds. A crawl of 100,000
/// pages on 2,000 hosts peaked at 134 MiB with a quarter against 161 with 64 MiB, for the same
/// CPU per page; once the kept connections no longer held hyper's buffers, an eighth took 4
/// MiB more off, for the same CPU again (docs/ARCHITECTURE.md, "Memory by the page"). A
/// million-page crawl's database, past 256 MB, keeps the 64 MiB it was measured with.
pub(super) fn cache_kib(bytes: u64) -> i64 {
    let share = if bytes < CACHE_QUARTER_FROM {
        bytes / 8
    } else {
        bytes / 4
    };
    (share >> 10).clamp(CACHE_MIN_KIB as u64, CACHE_MAX_KIB as u64) as i64
}

/// Page cache of a read-only connection (the console's, `status`). Each read transaction that
/// finds the database changed since its last one drops the whole cache (WAL mode), and the
/// running crawl saves every few seconds, so SQLite's default of 2 MiB bought a few reads
/// between saves and held 2 MiB for the crawl's life.
pub(super) const READ_ONLY_CACHE_KIB: i64 = 512;

/// The database size from which its page cache is a quarter of it.
pub(super) const CACHE_QUARTER_FROM: u64 = 128 << 20;

/// Size of the write-ahead log past which a checkpoint makes it start over.
pub(super) const WAL_BOUND: u64 = 64 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_cache_grows_with_the_database_between_its_bounds() {
        assert_eq!(cache_kib(0), CACHE_MIN_KIB);
        assert_eq!(cache_kib(20 << 20), CACHE_MIN_KIB);
        assert_eq!(cache_kib(40 << 20), 5 << 10);
        assert_eq!(cache_kib(100 << 20), 12_800);
        assert_eq!(cache_kib(CACHE_QUARTER_FROM), 32 << 10);
        assert_eq!(cache_kib(256 << 20), CACHE_MAX_KIB);
        assert_eq!(cache_kib(u64::MAX), CACHE_MAX_KIB);
    }
}
