//! A failure of one of the binaries' SQLite databases, with the file it concerns and what the
//! operator can do about it.

use std::path::{Path, PathBuf};

/// What to tell the operator for the failures that have a remedy, per database.
#[derive(Debug, Clone, Copy)]
pub struct Hints {
    /// What the database is, as the message opens: "crawl state", "state database".
    pub what: &'static str,
    /// After a full disk: what was kept and what happens next.
    pub disk_full: &'static str,
    /// When the file cannot be opened.
    pub cannot_open: &'static str,
    /// When the file is read-only.
    pub read_only: &'static str,
}

/// A failed database operation.
#[derive(Debug)]
pub struct SqliteError {
    path: PathBuf,
    source: rusqlite::Error,
    hints: &'static Hints,
}

impl SqliteError {
    /// `source`, which happened on the database at `path`.
    pub fn new(path: &Path, source: rusqlite::Error, hints: &'static Hints) -> Self {
        SqliteError {
            path: path.to_path_buf(),
            source,
            hints,
        }
    }

    /// Whether the failure is the disk being full.
    pub fn is_disk_full(&self) -> bool {
        self.source.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
    }
}

impl std::fmt::Display for SqliteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let h = self.hints;
        write!(f, "{} {}: {}", h.what, self.path.display(), self.source)?;
        let hint = match self.source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => h.disk_full,
            Some(rusqlite::ErrorCode::CannotOpen) => h.cannot_open,
            Some(rusqlite::ErrorCode::ReadOnly) => h.read_only,
            _ => "",
        };
        if hint.is_empty() {
            Ok(())
        } else {
            write!(f, " ({hint})")
        }
    }
}

impl std::error::Error for SqliteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::{Hints, SqliteError};
    use std::path::Path;

    const HINTS: Hints = Hints {
        what: "test state",
        disk_full: "disk full: nothing lost",
        cannot_open: "readable?",
        read_only: "writable?",
    };

    #[test]
    fn names_the_file_and_the_remedy() {
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        let e = SqliteError::new(Path::new("/s/x.sqlite"), full, &HINTS);
        assert!(e.is_disk_full());
        let text = e.to_string();
        assert!(text.starts_with("test state /s/x.sqlite: "), "{text}");
        assert!(text.ends_with(" (disk full: nothing lost)"), "{text}");
        let other = SqliteError::new(
            Path::new("/s/x.sqlite"),
            rusqlite::Error::InvalidQuery,
            &HINTS,
        );
        assert!(!other.is_disk_full());
        assert!(!other.to_string().contains('('), "{other}");
    }
}
