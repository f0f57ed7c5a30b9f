//! The channel outcomes travel on to the scheduler thread. A send wakes the scheduler unless
//! the sender knows there is nothing for it to do yet (the host's next request already waits
//! in its [`Lane`](super::lane::Lane)); such an outcome is read at the next wake-up, which
//! one of the host's later outcomes brings.

use super::outcome::Outcome;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::Duration;

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
}

/// The channel's two sides.
pub(crate) fn channel() -> (Outbox, Inbox) {
    let (tx, rx) = mpsc::channel();
    let scheduler = Arc::new(OnceLock::new());
    (
        Outbox {
            tx,
            scheduler: scheduler.clone(),
        },
        Inbox { rx, scheduler },
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
    pub(crate) fn wait(&self, timeout: Duration, into: &mut Vec<Outcome>) -> bool {
        let me = self.scheduler.get_or_init(std::thread::current);
        debug_assert_eq!(me.id(), std::thread::current().id());
        if !self.drain(into) {
            return false;
        }
        if into.is_empty() {
            // A wake sent between the drain and here is kept by the thread's token.
            std::thread::park_timeout(timeout);
            return self.drain(into);
        }
        true
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
