//! A few files outside the docroot watched by their metadata.

use std::path::{Path, PathBuf};

/// What identifies a file's version without reading it: device, inode, size, modification
/// and status change times (an editor's rename-into-place changes the inode).
type Fingerprint = (u64, u64, u64, i64, i64, i64, i64);

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

/// A few files outside the docroot (the web server's configuration and what it includes),
/// watched by looking at their metadata: cheap for a handful of files, and it sees every way
/// they change (in place, renamed over, removed, made unreadable).
#[derive(Debug, Clone)]
pub(crate) struct FileFingerprints {
    files: Vec<(PathBuf, Option<Fingerprint>)>,
}

impl FileFingerprints {
    /// The fingerprints of `paths` now.
    pub(crate) fn of(paths: &[PathBuf]) -> FileFingerprints {
        FileFingerprints {
            files: paths.iter().map(|p| (p.clone(), fingerprint(p))).collect(),
        }
    }

    /// Whether any of them changed since they were taken (or since the last call that said so).
    pub(crate) fn changed(&mut self) -> bool {
        let mut changed = false;
        for (path, print) in &mut self.files {
            let now = fingerprint(path);
            if now != *print {
                *print = now;
                changed = true;
            }
        }
        changed
    }
}
