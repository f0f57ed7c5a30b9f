//! The state database's tables, and what an older state gains when opened.

use rusqlite::{Connection, params};

// `synchronous = FULL` in WAL mode syncs the log at every commit: a sequence number handed to
// the hub (and so to subscribers) is on disk before anyone sees it, so a power loss can never
// issue it again for another change. NORMAL only survives a crash of the process.
pub(super) const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    fast INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    modified INTEGER NOT NULL,
    change_count INTEGER NOT NULL,
    history BLOB NOT NULL,
    ctime_ns INTEGER NOT NULL DEFAULT 0,
    judged INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refused (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    reason TEXT NOT NULL,
    judged INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refused_by_judged ON refused (judged);
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    kind INTEGER NOT NULL,
    time INTEGER NOT NULL,
    sha256 BLOB,
    prev_sha256 BLOB,
    size INTEGER,
    content_type TEXT,
    changed REAL
);
CREATE TABLE IF NOT EXISTS versions (
    path TEXT NOT NULL,
    sha256 BLOB NOT NULL,
    stored INTEGER NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (path, sha256)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS versions_by_age ON versions (stored);
CREATE TABLE IF NOT EXISTS popularity (
    path TEXT PRIMARY KEY,
    visitors REAL NOT NULL,
    at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS popularity_pairs (h INTEGER PRIMARY KEY);
";

/// Columns added since the first release, with their definitions: a state written by an
/// older agent gains them when opened (its files then count as never judged).
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("files", "ctime_ns", "INTEGER NOT NULL DEFAULT 0"),
    ("files", "judged", "INTEGER NOT NULL DEFAULT 0"),
    // Distinct visitors counted, not decayed (the threshold's figure); an older state's pages
    // take their decayed count, rounded up, which is never more than they had.
    ("popularity", "readers", "INTEGER"),
];

/// Indexes on added columns, created once the columns exist.
const LATE_INDEXES: &str = "CREATE INDEX IF NOT EXISTS files_by_judged ON files (judged);";

/// Adds the columns an older state lacks, then the indexes on them.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    for (table, column, definition) in ADDED_COLUMNS {
        let present: bool = conn.query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
            params![table, column],
            |r| r.get(0),
        )?;
        if !present {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))?;
        }
    }
    conn.execute_batch(LATE_INDEXES)
}
