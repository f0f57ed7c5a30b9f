//! inotify's events made signals: a path for each, named through the watch it came from, the
//! watches of directories that appear added and of those that go dropped, and runs of the
//! same kind of signal sent as one.

use super::Signal;
use super::tree::{AddError, Tree};
use inotify::{EventMask, Events};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The signals of one read of the queue, in the order of their events.
pub(super) fn signals_of(tree: &mut Tree, events: Events<'_>, read: &AtomicU64) -> Vec<Signal> {
    let mut out: Vec<Signal> = Vec::new();
    for e in events {
        read.fetch_add(1, Ordering::Relaxed);
        if e.mask.contains(EventMask::Q_OVERFLOW) {
            out.push(Signal::Rescan(
                "the watcher lost events (queue overflow)".into(),
            ));
            continue;
        }
        if e.mask.contains(EventMask::IGNORED) {
            tree.forget(&e.wd);
            continue;
        }
        // A watch dropped a moment ago (its directory moved away): nothing to name.
        let Some(watched) = tree.path_of(&e.wd) else {
            continue;
        };
        let path = match e.name {
            Some(name) => watched.join(name),
            None => watched.to_path_buf(),
        };
        let is_dir = e.mask.contains(EventMask::ISDIR);
        if is_dir && e.mask.intersects(EventMask::MOVED_FROM | EventMask::DELETE) {
            tree.drop_under(&path);
        }
        if is_dir && e.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
            // Watched before it is named, so that what is written in it from now on is an
            // event, and what was written before is found when the agent looks under it.
            match tree.add_recursive(&path) {
                Ok(()) | Err(AddError::Other(_)) => {}
                Err(AddError::Limit) => out.push(Signal::Rescan(format!(
                    "the kernel's inotify watch limit (fs.inotify.max_user_watches) is reached: {} cannot be watched",
                    path.display()
                ))),
            }
        }
        push(&mut out, kind_of(e.mask, &path), path);
    }
    out
}

/// The kinds of path signal.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Paths,
    Written,
    Closed,
}

fn kind_of(mask: EventMask, path: &std::path::Path) -> Kind {
    if mask.contains(EventMask::CLOSE_WRITE) {
        Kind::Closed
    } else if mask.contains(EventMask::MODIFY) {
        Kind::Written
    } else if mask.contains(EventMask::CREATE) && !mask.contains(EventMask::ISDIR) {
        // inotify reports a new symlink as a created file, but no writer will close it:
        // waiting for one would hold the change back for the whole open-write limit.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
            Kind::Paths
        } else {
            Kind::Written
        }
    } else {
        Kind::Paths
    }
}

/// Adds `path` to the last signal when it is of the same kind, else as a new one.
fn push(out: &mut Vec<Signal>, kind: Kind, path: PathBuf) {
    let last = match (out.last_mut(), kind) {
        (Some(Signal::Paths(v)), Kind::Paths)
        | (Some(Signal::Written(v)), Kind::Written)
        | (Some(Signal::Closed(v)), Kind::Closed) => Some(v),
        _ => None,
    };
    match last {
        Some(v) => v.push(path),
        None => out.push(match kind {
            Kind::Paths => Signal::Paths(vec![path]),
            Kind::Written => Signal::Written(vec![path]),
            Kind::Closed => Signal::Closed(vec![path]),
        }),
    }
}
