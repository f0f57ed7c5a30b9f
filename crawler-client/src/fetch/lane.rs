//! A host's page requests on the fetching side. A host whose politeness allows back-to-back
//! requests may be handed more requests than it has connections; the surplus waits here in
//! the order it was given and starts as soon as a request under way ends, with no round trip
//! through the scheduler thread, which can then sleep through several pages instead of waking
//! for each (a wake-up costs more CPU than a page's bookkeeping: docs/ARCHITECTURE.md).
//!
//! A request that waited checks, when its turn comes, that the lane was not halted since it
//! was handed over. The scheduler halts it when the host's delay is no longer zero or it is
//! blocked, paused or stopping. A response asking the crawler to slow down (429, 503, a
//! failed request) stops it from the fetching side, until the scheduler has read that
//! response and halted it in turn: a request the scheduler hands over meanwhile does not
//! start either. What did not start goes back to the scheduler unfetched.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use tokio::sync::{Semaphore, SemaphorePermit};

/// A host's requests on the fetching side.
#[derive(Debug)]
pub(crate) struct Lane {
    /// One per connection the host allows.
    permits: Semaphore,
    /// Raised by every halt: a request handed over before it does not start.
    epoch: AtomicU64,
    /// Stopped from the fetching side, and not yet halted by the scheduler.
    stopped: AtomicBool,
    /// Requests handed over and not yet reported.
    outstanding: AtomicUsize,
    /// While at least this many remain after one ends, its outcome need not wake the
    /// scheduler: the host's next request is already waiting here.
    quiet_from: usize,
}

/// A request's place in a lane: the lane's epoch when it was handed over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket(u64);

impl Lane {
    /// A lane for a host with this many connections, that may be handed `ahead` more
    /// requests than that.
    pub(crate) fn new(connections: usize, ahead: usize) -> Lane {
        let connections = connections.max(1);
        Lane {
            permits: Semaphore::new(connections),
            epoch: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            outstanding: AtomicUsize::new(0),
            quiet_from: connections + ahead.div_ceil(2).max(1),
        }
    }

    /// A request is handed to the lane.
    pub(crate) fn enter(&self) -> Ticket {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        Ticket(self.epoch.load(Ordering::SeqCst))
    }

    /// Waits for a connection of the host; `None` when the lane was halted since the ticket
    /// was given, or is stopped (the request must go back unfetched).
    pub(crate) async fn turn(&self, ticket: Ticket) -> Option<SemaphorePermit<'_>> {
        let permit = self.permits.acquire().await.ok()?;
        let go =
            self.epoch.load(Ordering::SeqCst) == ticket.0 && !self.stopped.load(Ordering::SeqCst);
        go.then_some(permit)
    }

    /// The scheduler halts the lane: nothing handed over so far starts, it comes back
    /// unfetched; what it hands over from now on goes (it has read why the lane stopped).
    pub(crate) fn halt(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.stopped.store(false, Ordering::SeqCst);
    }

    /// A response asked to slow down: nothing starts until the scheduler halts the lane.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// A request handed over has ended (or come back); returns whether its outcome should
    /// wake the scheduler.
    pub(crate) fn leave(&self) -> bool {
        let before = self.outstanding.fetch_sub(1, Ordering::SeqCst);
        before.saturating_sub(1) < self.quiet_from
    }

    /// Requests handed over and not yet reported.
    #[cfg(test)]
    pub(crate) fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::SeqCst)
    }
}

/// Whether a response asks the crawler to slow down: the requests waiting behind it must
/// wait for the scheduler's decision.
pub(crate) fn slows_down(status: Option<u16>) -> bool {
    status.is_none_or(|s| matches!(s, 429 | 503))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn no_more_under_way_than_connections_and_in_the_order_handed_over() {
        let lane = Arc::new(Lane::new(2, 4));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..6 {
            let ticket = lane.enter();
            let (lane, running, most, order) =
                (lane.clone(), running.clone(), most.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let permit = lane.turn(ticket).await;
                assert!(permit.is_some(), "request {i} was not halted");
                order.lock().map(|mut o| o.push(i)).ok();
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                drop(permit);
                lane.leave()
            }));
        }
        let mut wakes = Vec::new();
        for t in tasks {
            wakes.push(t.await.ok());
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
        let order = order.lock().map(|o| o.clone()).unwrap_or_default();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5]);
        // Six handed over, quiet while four or more remain: the first two end quietly.
        assert_eq!(
            wakes,
            [false, false, true, true, true, true].map(Some).to_vec()
        );
        assert_eq!(lane.outstanding(), 0);
    }

    #[tokio::test]
    async fn a_stop_holds_everything_until_the_scheduler_halts() {
        let lane = Lane::new(1, 2);
        let first = lane.turn(lane.enter()).await;
        let waiting = lane.enter();
        lane.stop();
        // Handed over by a scheduler that has not yet read the response that stopped it.
        let unaware = lane.enter();
        drop(first);
        assert!(lane.turn(waiting).await.is_none());
        assert!(lane.turn(unaware).await.is_none());
        lane.halt();
        assert!(
            lane.turn(lane.enter()).await.is_some(),
            "after the scheduler's halt"
        );
    }

    #[tokio::test]
    async fn a_halt_sends_back_what_waited_and_not_what_came_after() {
        let lane = Lane::new(1, 2);
        let first = lane.turn(lane.enter()).await;
        assert!(first.is_some());
        let waiting = lane.enter();
        lane.halt();
        let after = lane.enter();
        drop(first);
        assert!(
            lane.turn(waiting).await.is_none(),
            "handed over before the halt"
        );
        assert!(
            lane.turn(after).await.is_some(),
            "handed over after the halt"
        );
    }

    #[test]
    fn slowing_down_is_429_503_and_failure() {
        assert!(slows_down(None));
        assert!(slows_down(Some(429)));
        assert!(slows_down(Some(503)));
        assert!(!slows_down(Some(200)));
        assert!(!slows_down(Some(404)));
        assert!(!slows_down(Some(500)));
    }
}
