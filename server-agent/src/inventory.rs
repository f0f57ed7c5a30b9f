//! The agent's exact picture of the public files: kept in memory for publishing, persisted by
//! the store. 80 bytes per file plus the path; what only the store needs (first seen, change
//! count, history of change times) stays there, and the media type follows from the path.

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use webcoop_protocol::validator::Sha256Digest;

/// What the agent knows of one public file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileEntry {
    /// Bytes.
    pub(crate) size: u64,
    /// Modification time of the file (nanoseconds since the epoch), for the quick "unchanged"
    /// check; the content decides whether it really changed.
    pub(crate) mtime_ns: i64,
    /// Status change time (nanoseconds since the epoch): a change of permissions, owner or
    /// links, after which the web server must judge the file again.
    pub(crate) ctime_ns: i64,
    /// SHA-256 of the content: the strong validator.
    pub(crate) sha256: Sha256Digest,
    /// XXH3-64 of the content: the cheap "did it change" check.
    pub(crate) fast: u64,
    /// When its content last changed.
    pub(crate) modified: DateTime<Utc>,
    /// Found by the scan under way (deletions are what a scan did not find).
    pub(crate) seen: bool,
}

/// Every public file, by path relative to the docroot (`/`-separated), in path order.
#[derive(Debug, Default)]
pub struct Inventory {
    files: BTreeMap<Box<str>, FileEntry>,
    total_bytes: u64,
}

impl Inventory {
    /// An inventory built in one go from entries (in any order): the map's nodes are filled
    /// completely, where one-by-one sorted inserts leave them half empty.
    pub(crate) fn from_entries(entries: Vec<(Box<str>, FileEntry)>) -> Inventory {
        let total_bytes = entries.iter().map(|(_, e)| e.size).sum();
        Inventory {
            files: entries.into_iter().collect(),
            total_bytes,
        }
    }

    /// The entry of `path`.
    pub(crate) fn get(&self, path: &str) -> Option<&FileEntry> {
        self.files.get(path)
    }

    /// The entry of `path`, to change in place (only what does not affect the totals).
    pub(crate) fn mark_seen(&mut self, path: &str) -> Option<&FileEntry> {
        let e = self.files.get_mut(path)?;
        e.seen = true;
        Some(e)
    }

    /// Clears the seen marks of every entry (before a full scan).
    pub(crate) fn clear_seen(&mut self) {
        for e in self.files.values_mut() {
            e.seen = false;
        }
    }

    /// Clears the seen mark of one entry.
    pub(crate) fn clear_seen_of(&mut self, path: &str) {
        if let Some(e) = self.files.get_mut(path) {
            e.seen = false;
        }
    }

    /// Adds or replaces an entry.
    pub(crate) fn insert(&mut self, path: &str, entry: FileEntry) {
        self.total_bytes += entry.size;
        if let Some(old) = self.files.insert(path.into(), entry) {
            self.total_bytes -= old.size;
        }
    }

    /// Removes an entry.
    pub(crate) fn remove(&mut self, path: &str) -> Option<FileEntry> {
        let old = self.files.remove(path)?;
        self.total_bytes -= old.size;
        Some(old)
    }

    /// Entries in path order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &FileEntry)> {
        self.files.iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// Paths at or below directory `dir` (`""` for all).
    pub(crate) fn paths_under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        self.files
            .range::<str, _>((
                std::ops::Bound::Included(prefix.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .map(|(k, _)| k.as_ref())
            .take_while(move |k| k.starts_with(&prefix))
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// Entries from `from` (included) up to `end` (excluded; none: to the last), in path order.
    pub(crate) fn range<'a>(
        &'a self,
        from: &'a str,
        end: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a str, &'a FileEntry)> + 'a {
        let end = end.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        self.files
            .range::<str, _>((std::ops::Bound::Included(from), end))
            .map(|(k, v)| (k.as_ref(), v))
    }

    /// Paths from `from` up to `end`, as [`Inventory::range`].
    pub(crate) fn paths_from<'a>(
        &'a self,
        from: &'a str,
        end: Option<&'a str>,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.range(from, end).map(|(k, _)| k)
    }

    /// How many entries [`Inventory::range`] holds.
    pub(crate) fn count_range(&self, from: &str, end: Option<&str>) -> usize {
        self.range(from, end).count()
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Bytes of all files.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(size: u64) -> FileEntry {
        FileEntry {
            size,
            mtime_ns: 0,
            ctime_ns: 0,
            sha256: Sha256Digest::of(&size.to_le_bytes()),
            fast: size,
            modified: DateTime::UNIX_EPOCH,
            seen: false,
        }
    }

    #[test]
    fn an_entry_stays_small() {
        assert!(
            std::mem::size_of::<FileEntry>() <= 80,
            "{}",
            std::mem::size_of::<FileEntry>()
        );
    }

    #[test]
    fn totals_and_prefix_queries() {
        let mut inv = Inventory::default();
        inv.insert("a/x.html", entry(10));
        inv.insert("a/y.html", entry(20));
        inv.insert("ab.html", entry(5));
        inv.insert("a/x.html", entry(15));
        assert_eq!(inv.total_bytes(), 40);
        assert_eq!(
            inv.paths_under("a").collect::<Vec<_>>(),
            ["a/x.html", "a/y.html"]
        );
        assert_eq!(inv.paths_under("").count(), 3);
        inv.remove("a/y.html");
        assert_eq!(inv.total_bytes(), 20);
        assert_eq!(inv.len(), 2);
    }
}
