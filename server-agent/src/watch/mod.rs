//! File-system events from the docroot (inotify, on a thread of its own), reduced to what the
//! agent needs: which paths to look at again, or that it must rescan everything.
//!
//! The agent used `notify`, whose inotify watches ask for `IN_OPEN` too: every file the web
//! server served and every file the agent read was an event for its thread to read and
//! throw away (a tenth of a first run's CPU at a million files; on a busy site, an event per
//! page view and a queue that overflows into rescans). [`tree`] asks for what changes files.

mod events;
mod fingerprints;
mod tree;

pub(crate) use fingerprints::FileFingerprints;

use inotify::Inotify;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tree::{AddError, Tree};

/// What the watcher reports.
#[derive(Debug, PartialEq, Eq)]
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
    tree: Arc<Mutex<Tree>>,
    signals: Receiver<(Instant, Signal)>,
    stop: Arc<AtomicBool>,
    wake: Arc<OwnedFd>,
    #[cfg(test)]
    read: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
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

impl From<AddError> for WatchError {
    fn from(e: AddError) -> WatchError {
        match e {
            AddError::Limit => WatchError::WatchLimit,
            AddError::Other(s) => WatchError::Other(s),
        }
    }
}

impl Watcher {
    /// Starts watching `root` recursively.
    pub(crate) fn start(root: &Path) -> Result<Watcher, WatchError> {
        let inotify = Inotify::init().map_err(|e| WatchError::Other(e.to_string()))?;
        let mut tree = Tree::new(inotify.watches());
        tree.add_recursive(root)?;
        // SAFETY: eventfd takes no pointers; its result is checked before it is owned.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(WatchError::Other(format!(
                "eventfd: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: a descriptor just opened, owned by nothing else.
        let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        let tree = Arc::new(Mutex::new(tree));
        let stop = Arc::new(AtomicBool::new(false));
        let read = Arc::new(AtomicU64::new(0));
        let (tx, rx) = channel();
        let thread = {
            let (tree, wake) = (tree.clone(), wake.clone());
            let queue = Queue {
                stop: stop.clone(),
                read: read.clone(),
            };
            std::thread::Builder::new()
                .name("webcoop-watch".into())
                .spawn(move || read_events(inotify, &tree, &tx, &wake, &queue))
                .map_err(|e| WatchError::Other(e.to_string()))?
        };
        Ok(Watcher {
            tree,
            signals: rx,
            stop,
            wake,
            #[cfg(test)]
            read,
            thread: Some(thread),
        })
    }

    /// The stream of signals.
    pub(crate) fn signals(&self) -> &Receiver<(Instant, Signal)> {
        &self.signals
    }

    /// How many events the thread has read from the kernel's queue.
    #[cfg(test)]
    pub(crate) fn events_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Watches one file itself, whatever path it is written through: a file with several
    /// hard links changes without any event in the docroot's directories when written, or
    /// made unreadable, through a link elsewhere.
    pub(crate) fn watch_file(&mut self, path: &Path) -> Result<(), String> {
        let mut tree = self.tree.lock().unwrap_or_else(PoisonError::into_inner);
        tree.add(path).map_err(|e| match e {
            AddError::Limit => WatchError::WatchLimit.to_string(),
            AddError::Other(s) => s,
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let one: u64 = 1;
        // SAFETY: writes eight bytes from a live u64 to a descriptor this watcher owns.
        unsafe {
            libc::write(
                self.wake.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Size of one read of the event queue: a few hundred events.
const READ_BUFFER: usize = 64 * 1024;

/// What the watcher's thread shares with its owner besides the tree.
struct Queue {
    /// Set when the watcher is dropped.
    stop: Arc<AtomicBool>,
    /// Events read so far.
    read: Arc<AtomicU64>,
}

/// The watcher's thread: waits for events (or the wake-up of [`Watcher::drop`]), reads them
/// all and sends their signals, each batch with the time it was read.
fn read_events(
    mut inotify: Inotify,
    tree: &Mutex<Tree>,
    tx: &Sender<(Instant, Signal)>,
    wake: &OwnedFd,
    queue: &Queue,
) {
    let mut buffer = vec![0u8; READ_BUFFER];
    while !queue.stop.load(Ordering::Relaxed) {
        let mut fds = [
            libc::pollfd {
                fd: inotify.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two pollfd structures that live across the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                failed(tx, &e);
            }
            continue;
        }
        loop {
            match inotify.read_events(&mut buffer) {
                Ok(events) => {
                    let at = Instant::now();
                    let signals = {
                        let mut tree = tree.lock().unwrap_or_else(PoisonError::into_inner);
                        events::signals_of(&mut tree, events, &queue.read)
                    };
                    for s in signals {
                        if tx.send((at, s)).is_err() {
                            return;
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failed(tx, &e);
                    break;
                }
            }
        }
    }
}

/// The queue could not be read: changes may be missed, so the agent rescans, and the thread
/// waits a second before trying again rather than spinning on the same error.
fn failed(tx: &Sender<(Instant, Signal)>, e: &std::io::Error) {
    let _ = tx.send((
        Instant::now(),
        Signal::Rescan(format!("watcher error: {e}")),
    ));
    std::thread::sleep(Duration::from_secs(1));
}

#[cfg(test)]
mod tests;
