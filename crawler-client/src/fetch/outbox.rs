//! The channel outcomes travel on to the scheduler thread. A send wakes the scheduler unless
//! the sender knows there is nothing for it to do yet (the host's next request already waits
//! in its [`Lane`](super::lane::Lane)); such an outcome is read at the next wake-up, which
//! one of the host's later outcomes brings.

use super::outcome::Outcome;
use std::cell::Cell;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The sending side, one clone per task.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: Sender<Outcome>,
    scheduler: Arc<OnceLock<Thread>>,
}

/// The scheduler's side.
pub(crate) struct Inbox {
    rx: Receiver<Outcome>,
    scheduler: Arc<OnceLock<Thread>>,
    /// The shortest time between two of the scheduler's turns (see [`Inbox::gather`]).
    gap: Duration,
    /// When the last turn began.
    turn: Cell<Option<Instant>>,
}

/// The longest gap between the scheduler's turns: a page's request starts at most this much
/// after its host's time came.
pub(crate) const MAX_GAP: Duration = Duration::from_millis(5);

/// The channel's two sides.
pub(crate) fn channel() -> (Outbox, Inbox) {
    let (tx, rx) = mpsc::channel();
    let scheduler = Arc::new(OnceLock::new());
    (
        Outbox {
            tx,
            scheduler: scheduler.clone(),
        },
        Inbox {
            rx,
            scheduler,
            gap: Duration::ZERO,
            turn: Cell::new(None),
        },
    )
}

impl Outbox {
    /// Sends an outcome and wakes the scheduler. A closed channel means the loop has ended:
    /// nothing is left to tell.
    pub(crate) fn send(&self, outcome: Outcome) {
        let _ = self.tx.send(outcome);
        if let Some(t) = self.scheduler.get() {
            t.unpark();
        }
    }

    /// Sends an outcome without waking the scheduler.
    pub(crate) fn send_quietly(&self, outcome: Outcome) {
        let _ = self.tx.send(outcome);
    }
}

impl Inbox {
    /// Waits up to `timeout` for an outcome that wakes the scheduler, then takes everything
    /// that arrived into `into`; returns false when every sender is gone.
    /// A turn begins no sooner than the gap set here after the one before.
    pub(crate) fn wait(&self, timeout: Duration, into: &mut Vec<Outcome>) -> bool {
        let me = self.scheduler.get_or_init(std::thread::current);
        debug_assert_eq!(me.id(), std::thread::current().id());
        let mut timeout = timeout;
        if let Some(turn) = self.turn.get() {
            let wait = (turn + self.gap).saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait);
                timeout = timeout.saturating_sub(wait);
            }
        }
        let open = self.drain(into);
        if open && into.is_empty() {
            // A wake sent between the drain and here is kept by the thread's token.
            std::thread::park_timeout(timeout);
            self.turn.set(Some(Instant::now()));
            return self.drain(into);
        }
        self.turn.set(Some(Instant::now()));
        open
    }

    /// Gathers what arrives into turns at least `gap` apart (at most [`MAX_GAP`]): when
    /// hosts wait a second between requests, ten thousand of them send and answer one at a
    /// time, and a turn per answer costs a wake-up of this thread and of the fetching
    /// threads per page; a few milliseconds gather them by the dozen. A crawl without
    /// delays (one host, politeness off) keeps a turn per answer: its next request is due at
    /// once.
    pub(crate) fn gather(&mut self, gap: Duration) {
        self.gap = gap.min(MAX_GAP);
    }

    /// Takes what has arrived; false when every sender is gone.
    fn drain(&self, into: &mut Vec<Outcome>) -> bool {
        loop {
            match self.rx.try_recv() {
                Ok(o) => into.push(o),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return !into.is_empty(),
            }
        }
    }

    /// Waits up to `timeout` for the next outcome, quiet or not.
    pub(crate) fn recv_timeout(&self, timeout: Duration) -> Result<Outcome, RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::HostId;
    use std::time::Instant;

    fn resolved(n: i64) -> Outcome {
        Outcome::Resolved {
            host: HostId(n),
            ip: None,
        }
    }

    #[test]
    fn a_quiet_outcome_waits_for_a_loud_one_or_the_timeout() {
        let (out, inbox) = channel();
        let mut got = Vec::new();
        // Registers this thread as the scheduler.
        assert!(inbox.wait(Duration::from_millis(1), &mut got));
        assert!(got.is_empty());
        let sender = out.clone();
        let t = std::thread::spawn(move || {
            sender.send_quietly(resolved(1));
            std::thread::sleep(Duration::from_millis(50));
            sender.send(resolved(2));
        });
        let start = Instant::now();
        // The quiet one is already there when the wait begins or arrives while parked:
        // either way both come together, once the loud one woke the wait.
        while got.len() < 2 && start.elapsed() < Duration::from_secs(5) {
            assert!(inbox.wait(Duration::from_secs(5), &mut got));
            if got.len() == 1 {
                // The quiet one was there before the wait: take the loud one next.
                continue;
            }
        }
        assert_eq!(got.len(), 2);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "woken by the send"
        );
        let _ = t.join();
        drop(out);
        got.clear();
        assert!(
            !inbox.wait(Duration::from_secs(5), &mut got),
            "senders gone"
        );
    }

    /// Two outcomes sent 100 ms apart, the first at once, taken by the turn after a first
    /// one with `gap`; returns what that turn took and how long after the first it began.
    fn turn_after(gap: Duration) -> (usize, Duration) {
        let (out, mut inbox) = channel();
        inbox.gap = gap;
        let mut got = Vec::new();
        assert!(inbox.wait(Duration::ZERO, &mut got));
        let first = Instant::now();
        let t = std::thread::spawn(move || {
            out.send(resolved(1));
            std::thread::sleep(Duration::from_millis(100));
            out.send(resolved(2));
        });
        assert!(inbox.wait(Duration::from_secs(5), &mut got));
        let began = first.elapsed();
        let _ = t.join();
        (got.len(), began)
    }

    #[test]
    fn a_turn_begins_a_gap_after_the_last_and_takes_what_arrived_meanwhile() {
        let (took, began) = turn_after(Duration::from_millis(400));
        assert_eq!(took, 2, "both outcomes, in one turn");
        assert!(began >= Duration::from_millis(350), "{began:?}");
        // The twin: without a gap the first outcome wakes a turn of its own.
        let (took, began) = turn_after(Duration::ZERO);
        assert_eq!(took, 1, "the first outcome alone");
        assert!(began < Duration::from_millis(100), "{began:?}");
    }

    #[test]
    fn a_quiet_outcome_alone_is_read_when_the_timeout_ends() {
        let (out, inbox) = channel();
        let mut got = Vec::new();
        assert!(inbox.wait(Duration::from_millis(1), &mut got));
        let sender = out.clone();
        let t = std::thread::spawn(move || sender.send_quietly(resolved(1)));
        let _ = t.join();
        // Already there: read without waiting.
        assert!(inbox.wait(Duration::from_secs(30), &mut got));
        assert_eq!(got.len(), 1);
    }
}
