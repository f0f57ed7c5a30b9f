//! Coalescing watcher events into batches: paths wait until the docroot has been quiet for the
//! debounce window (or a second has passed since the first), and files a writer still holds
//! open wait until it closes them.
//!
//! Times are those at which the watcher thread received the events, not when the agent got to
//! them, so a busy agent does not stretch the window.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// How long a file may stay open for writing before it is published anyway (writers that
/// never close, such as logs).
pub(crate) const OPEN_WRITE_LIMIT: Duration = Duration::from_secs(10);

/// Paths waiting to be looked at.
pub(crate) struct EventQueue {
    debounce: Duration,
    max_delay: Duration,
    pending: BTreeSet<String>,
    first: Option<Instant>,
    last: Option<Instant>,
    /// Files written to and not yet closed, with the time of the last write.
    writing: BTreeMap<String, Instant>,
    /// Files to look at again at a given time (still being written, or unreadable for now).
    retry: BTreeMap<String, Instant>,
}

impl EventQueue {
    /// A queue with this quiet window; batches never wait more than a second (or the window,
    /// if longer) after their first event.
    pub(crate) fn new(debounce: Duration) -> Self {
        EventQueue {
            debounce,
            max_delay: Duration::from_secs(1).max(debounce),
            pending: BTreeSet::new(),
            first: None,
            last: None,
            writing: BTreeMap::new(),
            retry: BTreeMap::new(),
        }
    }

    /// Paths that changed at `at`; `written` when their content was written (the writer may
    /// still hold them open).
    pub(crate) fn touched(&mut self, paths: Vec<String>, written: bool, at: Instant) {
        for p in paths.into_iter().filter(|p| !p.is_empty()) {
            if written {
                self.writing.insert(p.clone(), at);
            }
            self.pending.insert(p);
        }
        self.first = Some(self.first.map_or(at, |f| f.min(at)));
        self.last = Some(self.last.map_or(at, |l| l.max(at)));
    }

    /// A writer closed these files at `at`.
    pub(crate) fn closed(&mut self, paths: Vec<String>, at: Instant) {
        for p in &paths {
            self.writing.remove(p);
            self.retry.remove(p);
        }
        self.touched(paths, false, at);
    }

    /// Looks at these paths again a little later.
    pub(crate) fn retry(&mut self, paths: Vec<String>) {
        let due = Instant::now() + self.debounce.max(Duration::from_millis(50));
        for p in paths {
            self.retry.insert(p, due);
        }
    }

    /// Drops everything pending (a full rescan covers it).
    pub(crate) fn clear(&mut self) {
        self.pending.clear();
        self.retry.clear();
        self.first = None;
        self.last = None;
    }

    /// Whether the coalescing window is over.
    pub(crate) fn ready(&self, now: Instant) -> bool {
        match (self.first, self.last) {
            (Some(first), Some(last)) => {
                now >= last + self.debounce || now >= first + self.max_delay
            }
            _ => false,
        }
    }

    /// When something next needs doing.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let window = match (self.first, self.last) {
            (Some(first), Some(last)) => Some((last + self.debounce).min(first + self.max_delay)),
            _ => None,
        };
        let retry = self.retry.values().min().copied();
        match (window, retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The paths to look at now; files still open for writing wait (as retries).
    pub(crate) fn take_ready(&mut self, now: Instant) -> BTreeSet<String> {
        let due: Vec<String> = self
            .retry
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(p, _)| p.clone())
            .collect();
        for p in due {
            self.retry.remove(&p);
            self.pending.insert(p);
        }
        if self.first.is_some() && !self.ready(now) {
            return BTreeSet::new();
        }
        self.first = None;
        self.last = None;
        let mut ready = std::mem::take(&mut self.pending);
        let held: Vec<String> = ready
            .iter()
            .filter(|p| {
                self.writing
                    .get(*p)
                    .is_some_and(|t| now.duration_since(*t) < OPEN_WRITE_LIMIT)
            })
            .cloned()
            .collect();
        for p in held {
            ready.remove(&p);
            let last_write = self.writing[&p];
            self.retry
                .insert(p, (last_write + OPEN_WRITE_LIMIT).max(now + self.debounce));
        }
        // A writer that never closed (or whose close was lost in an overflow) is published like
        // any other after the limit; its entry would otherwise stay for good.
        self.writing
            .retain(|_, t| now.duration_since(*t) < OPEN_WRITE_LIMIT);
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(ps: &[&str]) -> Vec<String> {
        ps.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn waits_for_quiet_from_when_events_happened() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut q = EventQueue::new(ms(100));
        q.touched(paths(&["a"]), false, t0);
        q.touched(paths(&["b"]), false, t0 + ms(50));
        assert!(
            !q.ready(t0 + ms(120)),
            "the window restarts at the last event"
        );
        assert_eq!(q.deadline(), Some(t0 + ms(150)));
        assert!(q.take_ready(t0 + ms(120)).is_empty());
        assert_eq!(
            q.take_ready(t0 + ms(150)),
            paths(&["a", "b"]).into_iter().collect()
        );
        assert!(q.deadline().is_none());
    }

    #[test]
    fn a_steady_stream_is_cut_into_batches_of_at_most_a_second() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut q = EventQueue::new(ms(100));
        for i in 0..20 {
            q.touched(vec![format!("f{i}")], false, t0 + ms(i * 60));
        }
        assert!(q.ready(t0 + ms(1000)));
        assert_eq!(q.take_ready(t0 + ms(1000)).len(), 20);
    }

    #[test]
    fn open_files_wait_for_their_writer_to_close_them() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut q = EventQueue::new(ms(100));
        q.touched(paths(&["big", "small"]), true, t0);
        q.closed(paths(&["small"]), t0 + ms(1));
        let ready = q.take_ready(t0 + ms(200));
        assert_eq!(
            ready,
            paths(&["small"]).into_iter().collect(),
            "big is still open"
        );
        assert!(q.deadline().is_some(), "big is retried later");
        q.closed(paths(&["big"]), t0 + ms(300));
        assert_eq!(
            q.take_ready(t0 + ms(400)),
            paths(&["big"]).into_iter().collect()
        );
        // A writer that never closes is published after the limit.
        q.touched(paths(&["log"]), true, t0);
        assert!(q.take_ready(t0 + ms(200)).is_empty());
        assert_eq!(
            q.take_ready(t0 + OPEN_WRITE_LIMIT + ms(200)),
            paths(&["log"]).into_iter().collect()
        );
        assert!(q.writing.is_empty(), "{:?}", q.writing);
        // Written again, it waits for its writer again.
        q.touched(paths(&["log"]), true, t0 + OPEN_WRITE_LIMIT + ms(300));
        assert!(q.take_ready(t0 + OPEN_WRITE_LIMIT + ms(500)).is_empty());
    }
}
