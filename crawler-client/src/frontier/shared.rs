//! What the crawl loop asks of a frontier shared by the processes of a fleet, in the shape of
//! URLFrontier's API (crawler-commons' gRPC definition): queues are hosts (`key`), URLs are
//! handed out per queue and locked until acknowledged, discovered URLs are put once, known ones
//! are put back done or with a time from which they may be fetched again, and a queue is
//! blocked for a delay. The Redis frontier (`fleet::process`) implements it; a URLFrontier
//! client could, without a change to the loop. Where ours differs, and why, is in
//! docs/ARCHITECTURE.md.

use super::fleet::FleetError;
pub(crate) use super::fleet::leases::Grant;
use super::fleet::members::Heartbeat;
use super::queue_store::QueueStore;
use crate::ids::{Fp, HostId};
use crate::state::{HostRecord, NewUrl, Queued};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// A queue (host) this process now works on: what the frontier needs to start on it.
#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    /// Its id.
    pub(crate) host: HostId,
    /// `scheme://host[:port]`.
    pub(crate) origin: String,
    /// URLs waiting in it.
    pub(crate) queued: u64,
    /// Its robots.txt as another process read it, if still fresh: status, body, when (ms).
    pub(crate) robots: Option<(u16, Vec<u8>, i64)>,
    /// Its pages kept fresh, as their last holder left them (a crawl kept fresh).
    pub(crate) tracked: Vec<TrackedPage>,
}

/// A page of the refresh schedule as the fleet shares it, so that a host's next holder
/// revisits what its last one kept fresh.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrackedPage {
    /// Its fingerprint.
    pub(crate) fp: Fp,
    /// Its URL.
    pub(crate) url: String,
    /// Links from a seed.
    pub(crate) depth: u32,
    /// Its estimated change rate per second, once observed.
    pub(crate) rate: Option<f64>,
    /// Its last visit (ms).
    pub(crate) visited: i64,
}

/// What a saved batch owes a fleet's frontier.
#[derive(Debug, Default)]
pub(crate) struct Saved {
    /// URLs found (`PutURLs` of discovered items).
    pub(crate) discovered: Vec<NewUrl>,
    /// OPIC cash owed to URLs queued before this batch, per host (URLFrontier has no
    /// priorities: this is ours).
    pub(crate) cash: HashMap<HostId, Vec<(Fp, f64)>>,
    /// URLs recorded when found (their host's robots.txt forbids them): seen here, never
    /// queued by this process.
    pub(crate) forbidden: Vec<Fp>,
    /// Visits of pages kept fresh, per host, for the host's next holder.
    pub(crate) tracked: HashMap<HostId, Vec<TrackedPage>>,
    /// Rows handed out and now done with (`PutURLs` of known items without a refetch date).
    pub(crate) done: Vec<(HostId, i64)>,
}

/// A frontier shared by a fleet, as one process uses it.
pub(crate) trait SharedFrontier {
    /// The queue of a host, the same in every process (URLFrontier: a URL's `key`).
    fn queue_key(&mut self, origin: &str) -> Result<HostId, FleetError>;
    /// Takes queues with work, best first, up to this process's share of them, at most `cap`
    /// (URLFrontier: `GetURLs` with `max_queues`; here a queue is held, not only its URLs).
    fn get_queues(&mut self, cap: usize, now: Instant) -> Result<Vec<Claimed>, FleetError>;
    /// Up to `n` URLs of a queue held, best first, locked until put back (`GetURLs` with `key`
    /// and `max_urls_per_queue`).
    fn get_urls(&mut self, host: HostId, n: usize) -> Result<Vec<Queued>, FleetError>;
    /// What a saved batch owes the fleet, sent together (`PutURLs`, with our cash and refresh
    /// schedule beside it): its new URLs queued once whoever finds them, the cash its pages
    /// gave URLs queued anywhere, its visits of pages kept fresh, its rows done with. They
    /// are written while the crawl goes on; returns how many URLs were new per queue in the
    /// batches written since the last call (see [`SharedFrontier::written`]).
    fn put_saved(&mut self, saved: Saved) -> Result<Vec<(HostId, usize)>, FleetError>;
    /// How many URLs were new per queue in the batches written since the last call; with
    /// `wait`, once every batch handed over is written.
    fn written(&mut self, wait: bool) -> Result<Vec<(HostId, usize)>, FleetError>;
    /// Whether URLs offered to a queue are still being written (its count of URLs waiting
    /// is not complete yet).
    fn awaiting(&self, host: HostId) -> bool;
    /// Whether this process still holds a queue, before a request to its host.
    fn keep(&mut self, host: HostId, now: Instant) -> Result<bool, FleetError>;
    /// Renews what is held; returns the queues lost.
    fn renew_all(&mut self, now: Instant) -> Result<Vec<HostId>, FleetError>;
    /// How many queues this process holds beyond its share.
    fn excess(&self) -> usize;
    /// Gives a queue back with the URLs `unsent`, not to be handed out again before `delay`
    /// (`SetDelay` and `BlockQueueUntil`), once the batches put before are written.
    fn release(
        &mut self,
        host: HostId,
        unsent: Vec<Queued>,
        delay: Duration,
    ) -> Result<(), FleetError>;
    /// Gives a queue back for another process to take (this one holds too many).
    fn hand_over(
        &mut self,
        host: HostId,
        unsent: Vec<Queued>,
        delay: Duration,
        now: Instant,
    ) -> Result<(), FleetError>;
    /// Drops a queue for the whole crawl, for `reason` (`DeleteQueue`).
    fn delete_queue(&mut self, host: HostId, reason: &str) -> Result<(), FleetError>;
    /// Shares a robots.txt read: status, body, when (ms).
    fn share_robots(
        &mut self,
        host: HostId,
        status: u16,
        body: &[u8],
        at: i64,
    ) -> Result<(), FleetError>;
    /// Whether work may still come from elsewhere in the fleet (`GetStats`).
    fn work_elsewhere(&mut self, now: Instant) -> Result<bool, FleetError>;
    /// Tells the fleet how this process is, after the batches put before.
    fn beat(&mut self, beat: &Heartbeat) -> Result<(), FleetError>;
    /// Asks for one request's lease on a server address (politeness keyed by address: hosts
    /// of one server held by different processes share it), at most `limit` at once, for
    /// `lease`.
    fn server_lease(
        &mut self,
        ip: IpAddr,
        limit: usize,
        lease: Duration,
    ) -> Result<Grant, FleetError>;
    /// A request under a server lease ended: the server may be contacted again after `delay`.
    fn server_release(
        &mut self,
        ip: IpAddr,
        token: &str,
        delay: Duration,
    ) -> Result<(), FleetError>;
}

/// The shared frontier as the in-process frontier reads it: the URLs of a queue held are
/// taken as they are read. Only what a refill and a new host's id need is served; the rest
/// of a crawl's state stays in the process's own store.
pub(crate) struct Taking<'a>(RefCell<&'a mut dyn SharedFrontier>);

impl<'a> Taking<'a> {
    /// The queue of `shared`, for one call of the frontier.
    pub(crate) fn new(shared: &'a mut dyn SharedFrontier) -> Taking<'a> {
        Taking(RefCell::new(shared))
    }
}

impl QueueStore for Taking<'_> {
    type Error = FleetError;
    fn cash_totals(&self) -> Result<Option<String>, FleetError> {
        Ok(None)
    }
    fn load_seen(&self, _: &mut HashMap<Fp, f64>, _: f64) -> Result<(), FleetError> {
        Ok(())
    }
    fn queued_per_host(&self) -> Result<Vec<(HostId, u64)>, FleetError> {
        Ok(Vec::new())
    }
    fn max_queue_seq(&self) -> Result<i64, FleetError> {
        Ok(0)
    }
    fn hosts(&self) -> Result<Vec<HostRecord>, FleetError> {
        Ok(Vec::new())
    }
    fn host_id(&self, origin: &str) -> Result<HostId, FleetError> {
        self.0.borrow_mut().queue_key(origin)
    }
    fn next_for_host(
        &self,
        host: HostId,
        _: Option<(f64, i64)>,
        limit: usize,
        _: &HashSet<i64>,
    ) -> Result<Vec<Queued>, FleetError> {
        self.0.borrow_mut().get_urls(host, limit)
    }
}
