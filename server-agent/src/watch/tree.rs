//! The inotify watches of a directory tree: which directory (or single file) each watch
//! descriptor stands for, so an event's name can be made a path, and which watches to drop
//! when a directory is moved away or removed.

use inotify::{WatchDescriptor, WatchMask, Watches};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// What a publisher needs to know of a directory's entries: created, written, closed after
/// writing, renamed, removed, their permissions changed. Not `IN_OPEN` (which `notify`
/// asks for): every page the web server serves and every file the agent reads would be an
/// event to read, and on a busy site a queue overflow, then a rescan of everything.
const MASK: WatchMask = WatchMask::ATTRIB
    .union(WatchMask::CREATE)
    .union(WatchMask::DELETE)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF);

/// Why a watch could not be added.
#[derive(Debug)]
pub(crate) enum AddError {
    /// The kernel's limit of watches (`fs.inotify.max_user_watches`) is reached.
    Limit,
    /// Anything else, in words.
    Other(String),
}

impl From<io::Error> for AddError {
    fn from(e: io::Error) -> AddError {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            AddError::Limit
        } else {
            AddError::Other(e.to_string())
        }
    }
}

/// The watches, by descriptor and by path.
pub(crate) struct Tree {
    watches: Watches,
    paths: HashMap<WatchDescriptor, PathBuf>,
    by_path: HashMap<PathBuf, WatchDescriptor>,
}

impl Tree {
    /// No watches yet, on the inotify instance `watches` belongs to.
    pub(crate) fn new(watches: Watches) -> Tree {
        Tree {
            watches,
            paths: HashMap::new(),
            by_path: HashMap::new(),
        }
    }

    /// Watches `root` and every directory under it (symlinks followed, as the scan follows
    /// them); the directories that vanish meanwhile are skipped.
    pub(crate) fn add_recursive(&mut self, root: &Path) -> Result<(), AddError> {
        let mut first = true;
        for entry in walkdir::WalkDir::new(root).follow_links(true) {
            let entry = match entry {
                Ok(e) => e,
                Err(e) if first => return Err(AddError::Other(e.to_string())),
                // Gone, unreadable or a loop: nothing there to watch.
                Err(_) => continue,
            };
            first = false;
            if entry.file_type().is_dir() {
                match self.add(entry.path()) {
                    Err(AddError::Other(_)) if entry.depth() > 0 => {}
                    other => other?,
                }
            }
        }
        Ok(())
    }

    /// Watches one path itself (a directory's entries, or a single file's own changes).
    pub(crate) fn add(&mut self, path: &Path) -> Result<(), AddError> {
        let wd = self.watches.add(path, MASK)?;
        // The same inode through another path (a symlinked directory) keeps one descriptor:
        // its events are named by the path watched last.
        if let Some(old) = self.paths.insert(wd.clone(), path.to_path_buf()) {
            self.by_path.remove(&old);
        }
        self.by_path.insert(path.to_path_buf(), wd);
        Ok(())
    }

    /// The path a descriptor stands for.
    pub(crate) fn path_of(&self, wd: &WatchDescriptor) -> Option<&Path> {
        self.paths.get(wd).map(PathBuf::as_path)
    }

    /// Drops the watches of `path` and everything under it: moved away or removed, what is
    /// there now is watched again under its new name, if it is still in the docroot.
    pub(crate) fn drop_under(&mut self, path: &Path) {
        let gone: Vec<WatchDescriptor> = self
            .paths
            .iter()
            .filter(|(_, p)| p.starts_with(path))
            .map(|(wd, _)| wd.clone())
            .collect();
        for wd in gone {
            // An error means the kernel dropped it already (the directory was removed).
            let _ = self.watches.remove(wd.clone());
            self.forget(&wd);
        }
    }

    /// Forgets a descriptor the kernel has dropped (`IN_IGNORED`).
    pub(crate) fn forget(&mut self, wd: &WatchDescriptor) {
        if let Some(p) = self.paths.remove(wd)
            && self.by_path.get(&p) == Some(wd)
        {
            self.by_path.remove(&p);
        }
    }

    /// Whether `path` is watched.
    #[cfg(test)]
    pub(crate) fn watches(&self, path: &Path) -> bool {
        self.by_path.contains_key(path)
    }

    /// How many watches there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.paths.len()
    }
}
