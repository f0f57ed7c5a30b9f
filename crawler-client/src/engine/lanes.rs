//! Which hosts may be handed requests ahead of their connections, and the lanes those wait
//! in on the fetching side (see `fetch::lane`). Only a host whose delay is zero qualifies:
//! one in a fleet or paced by server address never does (its lease or its server's turn is
//! checked before each request), and a host stops qualifying the moment a response, a
//! failure or the operator gives it a delay; what waited then comes back unfetched.

use super::Engine;
use crate::fetch::lane::{Lane, Ticket};
use crate::ids::HostId;
use crate::state::Queued;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Requests a host with no delay may be handed, per connection it allows, beyond those.
const AHEAD_PER_CONNECTION: usize = 2;

/// Each host's lane on the fetching side, while it has requests under way: a lane is made
/// with the connections a host allows and the requests that may wait beyond them, and only
/// halted or dropped here.
pub(super) struct Lanes {
    by_host: HashMap<HostId, Arc<Lane>>,
    per_host: usize,
}

impl Lanes {
    /// No lanes, each made for `per_host` connections when a host needs one.
    pub(super) fn new(per_host: usize) -> Lanes {
        Lanes {
            by_host: HashMap::new(),
            per_host,
        }
    }

    /// Requests a host may have waiting ahead of its connections when it qualifies.
    pub(super) fn ahead(&self) -> usize {
        self.per_host * AHEAD_PER_CONNECTION
    }

    /// A place in the host's lane, the lane made if it has none.
    fn enter(&mut self, host: HostId) -> (Arc<Lane>, Ticket) {
        let (per_host, ahead) = (self.per_host, self.ahead());
        let lane = self
            .by_host
            .entry(host)
            .or_insert_with(|| Arc::new(Lane::new(per_host, ahead)))
            .clone();
        let ticket = lane.enter();
        (lane, ticket)
    }

    /// The requests waiting in the host's lane come back.
    fn halt(&self, host: HostId) {
        if let Some(lane) = self.by_host.get(&host) {
            lane.halt();
        }
    }

    /// The host's lane is forgotten (nothing of it is under way).
    fn drop(&mut self, host: HostId) {
        self.by_host.remove(&host);
    }

    /// The hosts that have a lane.
    fn hosts(&self) -> Vec<HostId> {
        self.by_host.keys().copied().collect()
    }
}

impl Engine {
    /// A place in the host's lane for a page request, the lane made if it has none.
    pub(super) fn lane(&mut self, host: HostId) -> (Arc<Lane>, Ticket) {
        self.lanes.enter(host)
    }

    /// After a request to `host` ended with its next allowed at `not_before`: whether
    /// requests may wait ahead for it, and its lane dropped once nothing is under way. The
    /// host's delay is the one its last response set (a URL that ends without a request,
    /// robots.txt forbidding it, sets none).
    pub(super) fn pace_lane(&mut self, host: HostId, not_before: Instant) {
        let back_to_back = self.fleet.is_none()
            && !self.frontier.keyed_by_address()
            && not_before <= Instant::now()
            && self.frontier.host(host).is_some_and(|h| {
                h.delay.0.is_zero()
                    && h.failures == 0
                    && !h.blocked
                    && h.skipped.is_none()
                    && h.delay_set.is_none()
            });
        if back_to_back {
            self.frontier.set_lookahead(host, self.lanes.ahead());
        } else {
            self.slow_lane(host);
        }
        self.drop_idle_lane(host);
    }

    /// A host with nothing under way needs no lane (the next request makes a new one).
    fn drop_idle_lane(&mut self, host: HostId) {
        if self.frontier.host(host).is_none_or(|h| h.in_flight == 0) {
            self.lanes.drop(host);
        }
    }

    /// The host gets no more requests ahead, and those waiting come back.
    pub(super) fn slow_lane(&mut self, host: HostId) {
        self.frontier.set_lookahead(host, 0);
        self.lanes.halt(host);
    }

    /// Every host's waiting requests come back (the crawl pauses or stops).
    pub(super) fn halt_lanes(&mut self) {
        for host in self.lanes.hosts() {
            self.slow_lane(host);
        }
    }

    /// A page request came back unfetched: it is queued again as it was.
    pub(super) fn page_returned(&mut self, job: Queued) {
        self.in_flight.page_ended();
        self.run.page_returned();
        if job.revisit {
            self.in_flight.revisit_queued();
        }
        let host = job.host;
        self.frontier.returned(job);
        self.drop_idle_lane(host);
    }
}
