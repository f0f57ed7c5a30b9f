//! File-system events from the docroot (inotify through `notify`), reduced to what the agent
//! needs: which paths to look at again, or that it must rescan everything.

use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
use notify::{Event, EventKind, RecursiveMode, Watcher as _};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, channel};
use std::time::Instant;

/// What the watcher reports.
#[derive(Debug)]
pub(crate) enum Signal {
    /// These paths (absolute) may have changed.
    Paths(Vec<PathBuf>),
    /// These files were written to and may still be open for writing.
    Written(Vec<PathBuf>),
    /// A writer closed these files: what they hold now is what it meant to write.
    Closed(Vec<PathBuf>),
    /// Events were lost (queue overflow) or the watcher failed: only a full rescan is safe.
    Rescan(String),
}

/// A running watcher; events arrive on [`Watcher::signals`], each with the time the watcher
/// thread received it (so a busy consumer still debounces from when things happened).
pub(crate) struct Watcher {
    _inner: notify::RecommendedWatcher,
    signals: Receiver<(Instant, Signal)>,
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WatchError {
    /// The inotify watch limit is reached.
    #[error(
        "the kernel's inotify watch limit is reached (fs.inotify.max_user_watches); raise it, e.g. `sysctl fs.inotify.max_user_watches=1048576`"
    )]
    WatchLimit,
    /// Anything else.
    #[error("cannot watch the docroot: {0}")]
    Other(String),
}

fn classify(result: notify::Result<Event>) -> Option<Signal> {
    match result {
        Ok(event) if event.need_rescan() => Some(Signal::Rescan(
            "the watcher lost events (queue overflow)".into(),
        )),
        Ok(event) if event.paths.is_empty() => Some(Signal::Rescan(format!(
            "an event without paths: {:?}",
            event.kind
        ))),
        Ok(event) => match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
                Some(Signal::Closed(event.paths))
            }
            // Opening and reading change nothing.
            EventKind::Access(_) => None,
            // inotify reports a new symlink as a created file, but no writer will close it:
            // waiting for one would hold the change back for the whole open-write limit.
            EventKind::Create(CreateKind::File)
                if event
                    .paths
                    .iter()
                    .all(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink())) =>
            {
                Some(Signal::Paths(event.paths))
            }
            EventKind::Create(CreateKind::File) | EventKind::Modify(ModifyKind::Data(_)) => {
                Some(Signal::Written(event.paths))
            }
            _ => Some(Signal::Paths(event.paths)),
        },
        Err(e) => Some(Signal::Rescan(format!("watcher error: {e}"))),
    }
}

impl Watcher {
    /// Starts watching `root` recursively.
    pub(crate) fn start(root: &Path) -> Result<Watcher, WatchError> {
        let (tx, rx) = channel();
        let mut inner = notify::recommended_watcher(move |result| {
            if let Some(signal) = classify(result) {
                let _ = tx.send((Instant::now(), signal));
            }
        })
        .map_err(|e| WatchError::Other(e.to_string()))?;
        inner
            .watch(root, RecursiveMode::Recursive)
            .map_err(|e| match e.kind {
                notify::ErrorKind::MaxFilesWatch => WatchError::WatchLimit,
                _ => WatchError::Other(e.to_string()),
            })?;
        Ok(Watcher {
            _inner: inner,
            signals: rx,
        })
    }

    /// The stream of signals.
    pub(crate) fn signals(&self) -> &Receiver<(Instant, Signal)> {
        &self.signals
    }

    /// Watches one file itself, whatever path it is written through: a file with several
    /// hard links changes without any event in the docroot's directories when written, or
    /// made unreadable, through a link elsewhere.
    pub(crate) fn watch_file(&mut self, path: &Path) -> Result<(), String> {
        self._inner
            .watch(path, RecursiveMode::NonRecursive)
            .map_err(|e| e.to_string())
    }
}

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
