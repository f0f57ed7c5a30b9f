//! Which hosts may be handed requests ahead of their connections, and the lanes those wait
//! in on the fetching side (see `fetch::lane`). Only a host whose delay is zero qualifies:
//! one in a fleet or paced by server address never does (its lease or its server's turn is
//! checked before each request), and a host stops qualifying the moment a response, a
//! failure or the operator gives it a delay; what waited then comes back unfetched.

use super::Engine;
use crate::fetch::lane::{Lane, Ticket};
use crate::ids::HostId;
use crate::state::Queued;
use std::sync::Arc;
use std::time::Instant;

/// Requests a host with no delay may be handed, per connection it allows, beyond those.
const AHEAD_PER_CONNECTION: usize = 2;

impl Engine {
    /// A place in the host's lane for a page request, the lane made if it has none.
    pub(super) fn lane(&mut self, host: HostId) -> (Arc<Lane>, Ticket) {
        let per_host = self.settings.per_host;
        let lane = self
            .lanes
            .entry(host)
            .or_insert_with(|| Arc::new(Lane::new(per_host, per_host * AHEAD_PER_CONNECTION)))
            .clone();
        let ticket = lane.enter();
        (lane, ticket)
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
            self.frontier
                .set_lookahead(host, self.settings.per_host * AHEAD_PER_CONNECTION);
        } else {
            self.slow_lane(host);
        }
        self.drop_idle_lane(host);
    }

    /// A host with nothing under way needs no lane (the next request makes a new one).
    fn drop_idle_lane(&mut self, host: HostId) {
        if self.frontier.host(host).is_none_or(|h| h.in_flight == 0) {
            self.lanes.remove(&host);
        }
    }

    /// The host gets no more requests ahead, and those waiting come back.
    pub(super) fn slow_lane(&mut self, host: HostId) {
        self.frontier.set_lookahead(host, 0);
        if let Some(lane) = self.lanes.get(&host) {
            lane.halt();
        }
    }

    /// Every host's waiting requests come back (the crawl pauses or stops).
    pub(super) fn halt_lanes(&mut self) {
        let hosts: Vec<HostId> = self.lanes.keys().copied().collect();
        for host in hosts {
            self.slow_lane(host);
        }
    }

    /// A page request came back unfetched: it is queued again as it was.
    pub(super) fn page_returned(&mut self, job: Queued) {
        self.in_flight.page_ended();
        self.run.started = self.run.started.saturating_sub(1);
        if job.revisit {
            self.in_flight.revisit_queued();
        }
        let host = job.host;
        self.frontier.returned(job);
        self.drop_idle_lane(host);
    }
}
