//! The frontier's side of a fleet: a process serves only the hosts it holds a lease on, with
//! the URLs the shared queue gives it, and gives back what it held when a lease ends.

use super::{Frontier, RobotsState};
use crate::ids::HostId;
use crate::state::Queued;
use std::time::Instant;

impl Frontier {
    /// Makes this the frontier of one process of a fleet: what it finds is only saved (to be
    /// offered to the shared queue), and it serves only the hosts it is given with
    /// [`Frontier::lease`], with the rows the store's `next_for_host` takes for it.
    pub(crate) fn share(&mut self) {
        self.shared = true;
    }

    /// Whether this is the frontier of one process of a fleet.
    pub(crate) fn is_shared(&self) -> bool {
        self.shared
    }

    /// A host whose lease this process took, with `queued` URLs waiting in the shared queue,
    /// its robots.txt as known, and when it may first be contacted.
    pub(crate) fn lease(
        &mut self,
        id: HostId,
        origin: &str,
        queued: u64,
        robots: RobotsState,
        next_allowed: Instant,
    ) {
        self.known(id, origin);
        if let Some(h) = self.hosts.get_mut(&id) {
            h.leased = true;
            h.queued = queued;
            h.robots = robots;
            h.next_allowed = next_allowed;
            h.skipped = None;
        }
        self.schedule(id);
    }

    /// The lease of a host ended: it is no longer served; returns the URLs it held in memory
    /// (to give back).
    pub(crate) fn unlease(&mut self, id: HostId) -> Vec<Queued> {
        let Some(h) = self.hosts.get_mut(&id) else {
            return Vec::new();
        };
        h.leased = false;
        h.queued = 0;
        h.coop.clear();
        h.robots = RobotsState::Unknown;
        let held = h.buffer.drain(..).collect();
        if self.bench.release_if_done(h) {
            self.admit_waiting();
        }
        held
    }

    /// More URLs arrived in the shared queue of a host held.
    pub(crate) fn add_queued(&mut self, id: HostId, n: u64) {
        if let Some(h) = self.hosts.get_mut(&id)
            && h.leased
        {
            h.queued += n;
        }
        self.schedule(id);
    }

    /// The hosts leased, each with whether it is idle: nothing under way, nothing waiting
    /// (or given up), and its next allowed time.
    pub(crate) fn leased(&self) -> Vec<(HostId, bool, Instant)> {
        self.hosts
            .values()
            .filter(|h| h.leased)
            .map(|h| {
                let idle = h.in_flight == 0 && (h.skipped.is_some() || !h.has_queue());
                (h.id, idle, h.next_allowed)
            })
            .collect()
    }

    /// The origins of up to `n` hosts this process holds the lease of, in order.
    pub(crate) fn leased_origins(&self, n: usize) -> Vec<String> {
        let mut out: Vec<&str> = self
            .hosts
            .values()
            .filter(|h| h.leased)
            .map(|h| h.origin.as_str())
            .collect();
        out.sort_unstable();
        out.into_iter().take(n).map(str::to_string).collect()
    }
}
